"""The ratio-bias options (issues 9, 13, 14): ``AP~ht(bias=jackknife|taylor)``,
``infAP``/``xinfAP(bias=jackknife)``, ``AP~ppi(bias=taylor)``: exact on a census, the
jackknife's bias estimate equal to its definition recomputed by brute force, the Taylor
correction the same in ``~ppi`` (predictions 0) as in ``~ht``, and a Monte Carlo check that
the correction removes most of the bias where the plain estimator has it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import conftest
from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import UsageError
from sampleval.estimation.engine.estimands import average_precision
from sampleval.estimation.engine.replicates import (
    average_precision_jackknife,
    stratified_average_precision,
)
from sampleval.estimation.engine.views import MEAN_TOPIC
from sampleval.estimation.estimates import estimate
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.predictors import pool_truth, pure_noise
from studies.interval_coverage import fixed_rate_sample

DEPTH = 30
CORRECTED = ("AP~ht(bias=jackknife)", "AP~ht(bias=taylor)",
             "AP~ht(variance=linear,bias=jackknife)",
             "AP~ht(variance=linear,bias=taylor)", "infAP(bias=jackknife)",
             "xinfAP(bias=jackknife)", "xinfAP(variance=linear,bias=jackknife)")


def per_topic(table: pd.DataFrame) -> pd.DataFrame:
    table = table[table["query_id"] != MEAN_TOPIC]
    return table.pivot_table(index=["run", "query_id"], columns="measure", values="value")


def test_census_is_exact_with_every_bias_option(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """A census has no bias to remove: every corrected estimate is the exact AP."""
    runs, _, pool, truth = judged_collection
    census = Sample("census", truth[["query_id", "doc_id", "relevance"]].assign(
        stratum="1", inclusion=1.0))
    exact = evaluate(Qrels.from_frame(truth[["query_id", "doc_id", "relevance"]]), pool,
                     ["AP"])
    exact = exact[exact["query_id"] != MEAN_TOPIC].set_index(["run", "query_id"])["value"]
    got = per_topic(estimate(census, runs, list(CORRECTED), depth=DEPTH))
    for name in CORRECTED:  # xinfAP's smoothing constants (1e-5) move it slightly
        printed = parse_estimate(name).name  # a default option is not printed
        np.testing.assert_allclose(got[printed].loc[exact.index], exact, atol=1e-4,
                                   err_msg=name)
    noise = pure_noise(truth, np.random.default_rng(0))
    ppi = per_topic(estimate(census, runs, ["AP~ppi(bias=taylor)"], depth=DEPTH,
                             predictions=noise))
    np.testing.assert_allclose(ppi.iloc[:, 0].loc[exact.index], exact, atol=1e-12)


def test_stratified_jackknife_bias_by_brute_force() -> None:
    """``correct=True`` subtracts sum_h (1 - n_h/N_h)(n_h - 1)(mean_h - AP-hat), each
    replicate recomputed from scratch: one judged document left out, its stratum's weight
    N_h/(n_h - 1) (the documents with y = 0 are one replicate each)."""
    rng = np.random.default_rng(5)
    m, n_runs = 14, 4
    y = np.ones(m)  # the judged relevant documents
    strata = np.repeat([0, 1, 2], [3, 5, 6])
    sizes, n_sampled = np.array([5, 30, 90]), np.array([4, 9, 11])
    ranks = np.array([rng.permutation(40)[:m] + 1 for _ in range(n_runs)])
    ranks[ranks > 30] = 0  # some documents not retrieved
    plain = stratified_average_precision(y, strata, sizes, n_sampled, ranks)
    corrected = stratified_average_precision(y, strata, sizes, n_sampled, ranks, correct=True)
    bias = np.zeros(n_runs)
    for h in range(3):
        less = n_sampled.copy()
        less[h] -= 1
        reps = [stratified_average_precision(np.delete(y, j), np.delete(strata, j), sizes,
                                             less, np.delete(ranks, j, axis=1)).value
                for j in np.flatnonzero(strata == h)]
        reps += [stratified_average_precision(y, strata, sizes, less, ranks).value] * int(
            n_sampled[h] - np.count_nonzero(strata == h))
        bias += (1 - n_sampled[h] / sizes[h]) * (n_sampled[h] - 1) * (
            np.mean(reps, axis=0) - plain.value)
    np.testing.assert_allclose(corrected.value, plain.value - bias, rtol=1e-10)
    np.testing.assert_allclose(corrected.variance, plain.variance)
    assert np.abs(bias).max() > 1e-4  # the check is not vacuous


def test_poisson_jackknife_bias_by_brute_force() -> None:
    """Independent inclusions: the correction is sum_k (1 - pi_k) [AP_(k) - AP + (N - N_(k)
    - AP x_k)/R], the replicates recomputed with document k's label set to 0, and to first
    order it is the Taylor bias (AP V(R) - C(N, R))/R^2."""
    rng = np.random.default_rng(7)
    m, n_runs = 12, 3
    y = np.ones(m)
    pi = rng.uniform(0.3, 0.9, m)
    pi_joint = np.outer(pi, pi)
    np.fill_diagonal(pi_joint, pi)
    ranks = np.array([rng.permutation(20)[:m] + 1 for _ in range(n_runs)])
    plain = average_precision(y, pi, pi_joint, ranks)
    corrected = average_precision_jackknife(y, pi, pi_joint, ranks, correct=True)
    x = y / pi
    r_hat = x.sum()
    bias = np.zeros(n_runs)
    for k in range(m):
        rep = average_precision(np.where(np.arange(m) == k, 0.0, y), pi, pi_joint, ranks).value
        dropped = plain.value * r_hat - rep * (r_hat - x[k])  # N - N_(k)
        bias += (1 - pi[k]) * (rep - plain.value + (dropped - plain.value * x[k]) / r_hat)
    np.testing.assert_allclose(corrected.value, plain.value - bias, rtol=1e-10)
    taylor = average_precision(y, pi, pi_joint, ranks, taylor=True)
    np.testing.assert_allclose(plain.value - taylor.value, bias, rtol=0.25)
    assert np.abs(bias).max() > 1e-3


def test_ppi_taylor_with_zero_predictions_is_ht_taylor(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """Predictions all 0: AP~ppi(bias=taylor) is AP~ht(variance=linear,bias=taylor) (both apply
    the same ``few`` floor to topics with at most one relevant judged), value and interval,
    on a stratified and an active sample."""
    runs, qrels, pool, _ = judged_collection
    zero = pd.DataFrame({"query_id": ["1"], "doc_id": [pool.docnos_of("1")[0]],
                         "prediction": [0.0]})
    for method in ("stratified", "active"):
        selector = METHODS[method](pool, Budget(rate=0.3), np.random.default_rng(1))
        sample = simulate(selector, qrels_oracle(qrels)).sample()
        taylor = parse_estimate("AP~ht(variance=linear,bias=taylor,interval=normal)").name
        ht = estimate(sample, runs, [taylor, "AP~ht(variance=linear,bias=none)"], depth=DEPTH)
        ppi = estimate(sample, runs, ["AP~ppi(bias=taylor)"], depth=DEPTH,
                       predictions=Predictions.from_frame(zero))
        if method == "active":
            continue  # the per-draw form there is not ~ht's; the option must still run
        ht_t = ht[ht["measure"] == taylor].reset_index(drop=True)
        for column in ("value", "lo", "hi"):
            np.testing.assert_allclose(ppi[column], ht_t[column], rtol=1e-9, atol=1e-12)
        plain = ht[ht["measure"] == parse_estimate("AP~ht(variance=linear,bias=none)").name]
        moved = plain["value"].to_numpy() - ht_t["value"]
        assert np.abs(moved).max() > 1e-6  # the correction does something


@pytest.mark.slow  # Monte Carlo
def test_correction_reduces_the_bias_of_a_small_uniform_sample() -> None:
    """Monte Carlo (fixed seeds): a uniform 10% sample of a synthetic pool, where AP-hat's
    ratio bias is visible; the jackknife correction removes most of it, for AP~ht and for
    infAP (mean bias over topics and runs, against its Monte Carlo standard error)."""
    made = make_collection(np.random.default_rng(11), n_topics=6, n_runs=5, n_docs=1500,
                           depth=100, pool_depth=100, rel_rate=0.02)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    qrels = Qrels.from_frame(made.qrels)
    pool = Pool.from_runs(runs, depth=100, qrels=qrels)
    truth = pool_truth(pool, qrels)
    exact = evaluate(Qrels.from_frame(truth), pool, ["AP"])
    exact = exact[exact["query_id"] == MEAN_TOPIC].set_index("run")["value"]
    names = [parse_estimate(n).name for n in ("AP~ht(bias=none)", "AP~ht(bias=jackknife)",
                                               "infAP", "infAP(bias=jackknife)")]
    errors = []
    for trial in range(40):
        sample = fixed_rate_sample(pool, np.random.default_rng(trial), ((1, None, 0.1),))
        got = estimate(sample, runs, names, depth=100)
        got = got[got["query_id"] == MEAN_TOPIC].pivot(index="run", columns="measure",
                                                        values="value")
        errors.append((got[names].sub(exact, axis=0)).mean(axis=0).to_numpy())
    err = np.array(errors)
    bias, se = err.mean(axis=0), err.std(axis=0, ddof=1) / np.sqrt(len(err))
    for plain, fixed in ((0, 1), (2, 3)):  # seen: -0.029 (se 0.006) -> -0.006 (se 0.007)
        assert abs(bias[plain]) > 3 * se[plain], (names[plain], bias, se)  # biased before
        assert abs(bias[fixed]) < 3 * se[fixed], (names[fixed], bias, se)  # not after
        shift = err[:, plain] - err[:, fixed]  # paired: the correction's effect, precisely
        assert np.sign(shift.mean()) == np.sign(bias[plain])
        assert abs(shift.mean()) > abs(bias[plain]) / 2


def test_options_are_declared_and_named(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """The new options appear in ``sampleval methods`` (built from the declarations) and a
    wrong value is one clear error."""
    out = conftest.run_cli("methods")
    assert out.code == 0, out.stderr
    text = " ".join(out.stdout.split())
    for taker in ("bias (AP[@k]~ht)", "bias (infAP)", "bias (xinfAP)", "bias (AP[@k]~ppi)"):
        assert f"option {taker}" in text, taker
    runs, _, _, truth = judged_collection
    census = Sample("census", truth[["query_id", "doc_id", "relevance"]].assign(
        stratum="1", inclusion=1.0))
    with pytest.raises(UsageError, match="bias"):
        estimate(census, runs, ["AP~ht(bias=bootstrap)"], depth=DEPTH)
    with pytest.raises(UsageError):
        estimate(census, runs, ["P@10~ht(bias=jackknife)"], depth=DEPTH)
