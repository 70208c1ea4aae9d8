"""The variance of a difference of two runs' estimates from one sample (``ht`` family,
``EstimatorFamily.differences``) and the paired test's Satterthwaite degrees of freedom that
``sampleval compare`` builds from it (issue 14): each estimator's difference variance against
its definition recomputed by hand, the degrees of freedom against the closed form, and a
Monte Carlo check that they restore the test's level where t_{T-1} exceeds it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import jackknife_variance
from ht_reference import (
    average_precision,
    dcg,
    ndcg,
    num_rel,
    precision,
    r_precision,
    recall,
)
from sampleval.core.inclusion import stratified_inclusion
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.compare import compare, effective_df, paired_differences
from sampleval.estimation.engine.replicates import (
    average_precision_jackknife,
    stratified_average_precision,
)
from sampleval.estimation.estimates import MEAN_TOPIC, estimate, estimate_differences
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate

PAIRS = np.array([[0, 1], [2, 0], [1, 1], [3, 4]])  # run 4 retrieves nothing


def _ranks(rng: np.random.Generator, m: int, n_runs: int) -> np.ndarray:
    ranks = np.array([rng.permutation(40)[:m] + 1 for _ in range(n_runs)])
    ranks[ranks > 30] = 0  # some documents not retrieved
    return np.vstack([ranks, np.zeros(m, dtype=ranks.dtype)])


def _poisson(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    pi = rng.uniform(0.3, 0.9, m)
    pi_joint = np.outer(pi, pi)
    np.fill_diagonal(pi_joint, pi)
    return pi, pi_joint


def _ht_quadratic(z: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray) -> np.ndarray:
    """sum_kl (pi_kl - pi_k pi_l)/pi_kl (z_k/pi_k)(z_l/pi_l) per row of ``z``."""
    x = z / pi
    return np.einsum("pk,kl,pl->p", x, 1.0 - np.outer(pi, pi) / pi_joint, x)


def test_linear_and_ratio_differences_by_hand() -> None:
    """P@k: the HT variance of sum_S (w^a_i - w^b_i) y_i/pi_i; R@k: the linearised
    variance of the shared-denominator ratio, residuals (a^a_i - a^b_i - (Q_a - Q_b) y_i)/R."""
    rng = np.random.default_rng(11)
    m = 12
    y = (rng.random(m) < 0.6).astype(float)
    pi, pi_joint = _poisson(rng, m)
    ranks = _ranks(rng, m, 4)
    a, b = PAIRS[:, 0], PAIRS[:, 1]
    top = ((ranks > 0) & (ranks <= 10)).astype(float)
    got = precision(y, pi, pi_joint, ranks, 10, PAIRS)
    weights = (top[a] - top[b]) * y / 10
    np.testing.assert_allclose(got.value, (weights / pi).sum(axis=1), atol=1e-14)
    np.testing.assert_allclose(got.variance, _ht_quadratic(weights, pi, pi_joint), atol=1e-14)
    got = recall(y, pi, pi_joint, ranks, 10, PAIRS)
    r_hat = (y / pi).sum()
    q = (top * y / pi).sum(axis=1) / r_hat
    residual = (top[a] - top[b]) * y - (q[a] - q[b])[:, None] * y
    np.testing.assert_allclose(got.value, q[a] - q[b], atol=1e-14)
    np.testing.assert_allclose(got.variance, _ht_quadratic(residual, pi, pi_joint) / r_hat**2,
                               atol=1e-14)
    assert got.variance[0] > 0 and got.variance[2] == 0


@pytest.mark.parametrize("name", ["P", "DCG", "R", "Rprec", "nDCG", "AP", "AP-taylor",
                                  "AP-jackknife", "AP-jackknife-corrected", "NumRel"])
def test_a_pair_with_an_empty_run_is_the_run_alone(name: str) -> None:
    """Against a run that retrieves nothing (all its weights 0), the difference and its
    variance are the run's own; a run against itself is 0 with variance 0; every
    difference equals the difference of the two runs' estimates."""
    rng = np.random.default_rng(13)
    m = 14
    y = rng.integers(0, 3, m).astype(float)
    pi, pi_joint = _poisson(rng, m)
    ranks = _ranks(rng, m, 4)
    estimator = {
        "P": lambda **k: precision(y > 0, pi, pi_joint, ranks, 10, **k),
        "DCG": lambda **k: dcg(y, pi, pi_joint, ranks, 10, **k),
        "R": lambda **k: recall(y > 0, pi, pi_joint, ranks, 10, **k),
        "Rprec": lambda **k: r_precision(y > 0, pi, pi_joint, ranks, **k),
        "nDCG": lambda **k: ndcg(y, pi, pi_joint, ranks, 10, **k),
        "AP": lambda **k: average_precision(y > 0, pi, pi_joint, ranks, **k),
        "AP-taylor": lambda **k: average_precision(y > 0, pi, pi_joint, ranks, taylor=True,
                                                   **k),
        "AP-jackknife": lambda **k: average_precision_jackknife(y > 0, pi, pi_joint, ranks,
                                                                **k),
        "AP-jackknife-corrected": lambda **k: average_precision_jackknife(
            y > 0, pi, pi_joint, ranks, correct=True, **k),
        "NumRel": lambda **k: num_rel(y > 0, pi, pi_joint, ranks, **k),
    }[name]
    alone, pairs = estimator(), estimator(pairs=PAIRS)
    a, b = PAIRS[:, 0], PAIRS[:, 1]
    np.testing.assert_allclose(pairs.value, alone.value[a] - alone.value[b], atol=1e-14)
    assert pairs.value[2] == 0 and pairs.variance[2] == 0
    if name != "NumRel":  # R-hat is every run's: the difference is 0
        np.testing.assert_allclose(pairs.variance[3], alone.variance[3], rtol=1e-12)
        assert pairs.variance[0] > 0


STRATA = np.repeat([0, 1, 2], [3, 5, 6])  # the judged relevant documents' strata
SIZES, SAMPLED = np.array([5, 30, 90]), np.array([4, 9, 11])  # N_h, n_h (all judged)


def _jackknife_of_differences(without: Callable[[int | None, np.ndarray], np.ndarray]
                              ) -> np.ndarray:
    """The stratified delete-one jackknife variance of each pair's difference, every
    replicate recomputed from scratch by ``without(j, n)``: the per-run estimate with
    judged relevant document j left out (None: a judged document with y = 0, which changes
    only the design) under the stratum sizes ``n``."""
    a, b = PAIRS[:, 0], PAIRS[:, 1]
    variance = np.zeros(len(PAIRS))
    for h in range(len(SIZES)):
        less = SAMPLED.copy()
        less[h] -= 1
        members = np.flatnonzero(np.equal(STRATA, h))
        reps = [without(int(j), less) for j in members]
        reps += [without(None, less)] * int(SAMPLED[h] - len(members))
        diffs = np.array([r[a] - r[b] for r in reps])
        n_h = SAMPLED[h]
        variance += (1 - n_h / SIZES[h]) * (n_h - 1) / n_h * (
            (diffs - diffs.mean(axis=0)) ** 2).sum(axis=0)
    return variance


def test_stratified_jackknife_difference_by_brute_force() -> None:
    """The stratified delete-one jackknife variance of AP-hat_a - AP-hat_b, each
    replicate recomputed from scratch (one judged document left out, its stratum's weight
    N_h/(n_h - 1); the documents with y = 0 one replicate each)."""
    y = np.ones(len(STRATA))
    ranks = _ranks(np.random.default_rng(5), len(y), 4)

    def without(j: int | None, n: np.ndarray) -> np.ndarray:
        if j is None:
            return stratified_average_precision(y, STRATA, SIZES, n, ranks).value
        return stratified_average_precision(np.delete(y, j), np.delete(STRATA, j), SIZES, n,
                                            np.delete(ranks, j, axis=1)).value

    got = stratified_average_precision(y, STRATA, SIZES, SAMPLED, ranks, pairs=PAIRS)
    plain = stratified_average_precision(y, STRATA, SIZES, SAMPLED, ranks)
    a, b = PAIRS[:, 0], PAIRS[:, 1]
    np.testing.assert_allclose(got.value, plain.value[a] - plain.value[b], atol=1e-14)
    np.testing.assert_allclose(got.variance, _jackknife_of_differences(without), rtol=1e-10)
    # the difference's variance is not the sum of the runs' (they share the sample)
    assert not np.allclose(got.variance[:2], plain.variance[a[:2]] + plain.variance[b[:2]])


def test_poisson_jackknife_difference_by_brute_force() -> None:
    """sum_k (1 - pi_k) (D_(k) - D)^2, D_(k) the difference with document k's label 0."""
    rng = np.random.default_rng(7)
    m = 12
    y = np.ones(m)
    pi, pi_joint = _poisson(rng, m)
    ranks = _ranks(rng, m, 4)
    a, b = PAIRS[:, 0], PAIRS[:, 1]
    got = average_precision_jackknife(y, pi, pi_joint, ranks, pairs=PAIRS)
    base = average_precision(y, pi, pi_joint, ranks).value
    variance = np.zeros(len(PAIRS))
    for k in range(m):
        rep = average_precision(np.where(np.arange(m) == k, 0.0, y), pi, pi_joint, ranks).value
        variance += (1 - pi[k]) * ((rep[a] - rep[b]) - (base[a] - base[b])) ** 2
    np.testing.assert_allclose(got.variance, variance, rtol=1e-10)


def test_effective_df_closed_form() -> None:
    """Equal topic variances give T - 1; the formula matches its definition; one dominant
    topic drives it towards 1; no sampling variance leaves T - 1 (a census)."""
    n = np.array([50, 50, 50, 50])
    sd = np.array([1.0, 1.0, 1.0, 0.1])
    both = np.ones((50, 4), dtype=bool)
    v = np.zeros((50, 4))
    v[:, 0] = 1.0  # equal: all sampling, tau^2 = 0
    v[0, 1] = 50.0  # one topic carries it all
    v[:5, 2] = 10.0
    df = effective_df(sd, both, n, v)
    w = v[:, 2]  # tau-hat^2 = max(0, 1 - 1) = 0
    expected = ((49 / 50) * w.sum()) ** 2 / ((1 - 2 / 50) * (w**2).sum() + (w.sum() / 50) ** 2)
    assert df[0] == pytest.approx(49.0)
    assert df[1] == pytest.approx(1.0)
    assert df[2] == pytest.approx(expected) and 3 < df[2] < 6
    assert df[3] == pytest.approx(49.0)  # no sampling variance: T - 1


def test_satterthwaite_keeps_the_level_where_t_topics_does_not() -> None:
    """Null differences whose sampling errors are skewed (a rare large error, as when a
    heavily weighted document is drawn) with topic variances that differ by orders of
    magnitude, and unbiased noisy variance estimates: the t_{T-1} test rejects above
    alpha (as on TREC-COVID, docs/guide/compare.md); with the effective degrees of freedom it
    keeps the level. 10,000 seeded trials: the rates' standard errors are about 0.002."""
    rng = np.random.default_rng(2024)
    trials, topics, rare = 10_000, 50, 0.3
    scale = rng.lognormal(0.0, 1.0, topics)  # fixed topics, unequal variances
    errors = np.where(rng.random((trials, topics)) < rare, -1.0, rare / (1 - rare)) * scale
    sigma2 = scale**2 * rare / (1 - rare)
    estimated = sigma2 * rng.chisquare(8, (trials, topics)) / 8  # unbiased, noisy
    frame = pd.DataFrame(errors.T, columns=[str(c) for c in range(trials)])
    frame.insert(0, "zero", 0.0)  # each trial is one pair: its errors against 0
    pairs = [(str(c), "zero") for c in range(trials)]
    plain = paired_differences(frame, "P@10~ht", correction="none", pairs=pairs)
    fitted = paired_differences(frame, "P@10~ht", correction="none", pairs=pairs,
                                sampling_variance=estimated.T)
    assert plain["significant"].mean() > 0.056  # t_49: too many rejections
    assert 0.035 < fitted["significant"].mean() < 0.052
    assert (fitted["df"] < 49).all() and (plain["df"] == 49).all()
    # with normal errors of the same variances t_49 keeps its level and the fitted df is
    # conservative: the adjustment guards against skew concentrated in a few topics
    normal = pd.DataFrame(rng.normal(0.0, np.sqrt(sigma2), (trials, topics)).T,
                          columns=frame.columns[1:])
    normal.insert(0, "zero", 0.0)
    assert paired_differences(normal, "P@10~ht", correction="none", pairs=pairs)[
        "significant"].mean() < 0.056


def test_compare_uses_the_difference_variances(
        judged_collection: tuple[list[Run], object, Pool, pd.DataFrame]) -> None:
    """On a sample, compare's df comes from the ht family's difference variances (below
    T - 1 for some pair); on a census every df is T - 1 and the test is scipy's paired
    t-test; ``df="topics"`` is always T - 1."""
    runs, _, pool, truth = judged_collection
    census = Sample("census", truth[["query_id", "doc_id", "relevance"]].assign(
        stratum="1", inclusion=1.0))
    table = compare(census, runs, "AP~ht", correction="none", depth=30)
    np.testing.assert_allclose(table["df"], table["topics"] - 1)
    per_topic = estimate(census, runs, ["AP~ht"], depth=30)
    per_topic = per_topic[per_topic["query_id"] != MEAN_TOPIC].pivot(
        index="query_id", columns="run", values="value")
    row = table.iloc[0]
    assert row.p == pytest.approx(stats.ttest_rel(per_topic[row.run_a],
                                                  per_topic[row.run_b]).pvalue)
    sample = simulate(METHODS["stratified"](pool, Budget(rate=0.2), np.random.default_rng(1)),
                      qrels_oracle(Qrels.from_frame(truth[["query_id", "doc_id",
                                                          "relevance"]]))).sample()
    table = compare(sample, runs, "AP~ht", correction="none", depth=30)
    assert (table["df"] <= table["topics"] - 1).all() and (table["df"] < table["topics"] - 1
                                                          ).any()
    plain = compare(sample, runs, "AP~ht", correction="none", depth=30, df="topics")
    np.testing.assert_allclose(plain["diff"], table["diff"])
    np.testing.assert_allclose(plain["df"], plain["topics"] - 1)
    variances = estimate_differences(sample, runs, "AP~ht", [(runs[0].name, runs[1].name)],
                                     depth=30)
    assert variances is not None and (variances.to_numpy() >= 0).all()
    assert estimate_differences(sample, runs, "xinfAP", [(runs[0].name, runs[1].name)],
                                depth=30) is None


def test_taylor_jackknife_difference_by_brute_force() -> None:
    """AP~ht's default variance (the jackknife of the Taylor-corrected estimate, each
    replicate recomputing it) of a difference: the same jackknife of the differences of the
    two runs' recomputed estimates."""
    y = np.ones(len(STRATA))
    ranks = _ranks(np.random.default_rng(17), len(y), 4)

    def without(j: int | None, n: np.ndarray) -> np.ndarray:
        pi, joint = stratified_inclusion(STRATA, SIZES, n.astype(float))
        kept = y if j is None else np.where(np.arange(len(y)) == j, 0.0, y)
        return average_precision(kept, pi, joint, ranks, taylor=True).value

    design = stratified_inclusion(STRATA, SIZES, SAMPLED)
    strata = (STRATA, SIZES, SAMPLED)
    got = jackknife_variance(y, ranks, None, False, True, *design, strata, PAIRS)
    np.testing.assert_allclose(got, _jackknife_of_differences(without), rtol=1e-10)
    alone = jackknife_variance(y, ranks, None, False, True, *design, strata)
    np.testing.assert_allclose(got[3], alone[3], rtol=1e-12)
    assert got[2] == 0 and got[0] > 0
