"""The ``audit-neyman`` selection method (sampleval.selection.audit_neyman): pi_i follows each
document's influence on the runs' relative AP, from the machine's labels (issue 31, item 3)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import PAD, Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import UsageError
from sampleval.estimation.audit import audit
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.selection.audit_neyman import ap_influence
from sampleval.selection.strata import StratifiedSelector


def _pair_sum_ap(y: np.ndarray, ranking: np.ndarray) -> np.ndarray:
    """Each run's AP as the linear-diagonal pair sum over the count of relevant documents,
    for real-valued y (so that it can be differentiated): sum_i y_i (1 + sum_{j above i}
    y_j) / rank_i / sum_i y_i."""
    out = []
    for row in ranking:
        at = np.array([y[d] if d != PAD else 0.0 for d in row])
        above = np.cumsum(at) - at
        out.append((at * (1.0 + above) / np.arange(1, len(row) + 1)).sum() / y.sum())
    return np.array(out)


def test_influence_is_the_derivative_of_each_runs_ap() -> None:
    """On a constructed topic (6 documents, 3 runs, one of which misses documents):
    ap_influence equals a central finite difference of the pair-sum AP, and at 0/1 labels
    the pair sum is the AP trec_eval defines (precision at each relevant rank over R)."""
    ranking = np.array([[0, 1, 2, 3, 4, 5], [5, 3, 1, 0, PAD, PAD], [2, 0, 4, 1, 3, 5]])
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    influence = ap_influence(y, ranking)
    step = 1e-6
    for i in range(len(y)):
        up, down = y.copy(), y.copy()
        up[i] += step
        down[i] -= step
        numeric = (_pair_sum_ap(up, ranking) - _pair_sum_ap(down, ranking)) / (2 * step)
        np.testing.assert_allclose(influence[:, i], numeric, atol=1e-6)
    # run 1: relevant at ranks 1 (doc 5), 2 (doc 3), 4 (doc 0), doc 2 not retrieved: R = 4
    assert _pair_sum_ap(y, ranking)[1] == pytest.approx((1 + 1 + 3 / 4) / 4)
    assert (ap_influence(np.zeros(6), ranking) == 0).all()


def _setting(seed: int = 5, n_topics: int = 4) -> tuple[list[Run], Pool, Qrels, Predictions]:
    """A small collection judged in full, and a machine that calls relevant the true
    relevant documents plus the first run's top 3 of every topic."""
    data = make_collection(np.random.default_rng(seed), n_topics=n_topics, n_runs=8,
                           n_docs=400, depth=30, pool_depth=30, rel_rate=0.08)
    runs = [Run.from_frame(f, n) for n, f in data.runs.items()]
    qrels = Qrels.from_frame(data.qrels)
    pool = Pool.from_runs(runs, depth=30, qrels=qrels)
    rows = []
    for tp in pool:
        truth = np.nan_to_num(tp.labels) >= 1
        called = truth.copy()
        top = tp.ranking[0, :3]
        called[top[top != PAD]] = True
        rows.append(pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos_of(tp.topic),
                                  "prediction": called.astype(float)}))
    machine = Predictions.from_frame(pd.concat(rows, ignore_index=True))
    return runs, pool, qrels, machine


def _inclusion(selector: StratifiedSelector, topic: str) -> np.ndarray:
    """Every pooled document's pi_i under the selector's planned sample (pool order)."""
    return selector.proposal_design(topic, list(selector.pool.docnos_of(topic)))[1]


def test_inclusion_probabilities_spend_the_budget_and_reach_every_document() -> None:
    """sum_i pi_i = the budget exactly, every pooled document has pi_i > 0, and the
    favoured run's top documents (which the machine calls relevant) are judged more
    likely than under ``stratified``."""
    _, pool, _, machine = _setting()
    for budget in (12, 30, 80):
        ours: Any = METHODS["audit-neyman"](pool, Budget(count=budget), np.random.default_rng(0),
                                       predictions=machine)
        theirs: Any = METHODS["stratified"](pool, Budget(count=budget), np.random.default_rng(0))
        for tp in pool:
            pi = _inclusion(ours, tp.topic)
            assert pi.sum() == pytest.approx(budget)
            assert (pi > 0).all() and (pi <= 1).all()
            if budget == 30:
                top = tp.ranking[0, :3]
                assert pi[top].mean() > _inclusion(theirs, tp.topic)[top].mean()


def test_needs_the_machine_labels() -> None:
    _, pool, _, _ = _setting(n_topics=2)
    with pytest.raises(UsageError, match="predictions"):
        METHODS["audit-neyman"](pool, Budget(rate=0.1), np.random.default_rng(0))


@pytest.mark.slow  # Monte Carlo
def test_estimates_stay_unbiased_under_the_design() -> None:
    """Seeded Monte Carlo (160 samples of 25% of a small pool): the Horvitz-Thompson count
    of relevant documents per topic, from the sample's recorded inclusion probabilities,
    averages to the truth within 3 Monte Carlo standard errors, and so does the audit's
    relative bias (machine - estimate, less its mean over runs, AP~ht) for every run."""
    runs, pool, qrels, machine = _setting()
    oracle = qrels_oracle(qrels)
    machine_qrels = Qrels.from_frame(machine.frame.rename(columns={"prediction": "relevance"}))
    exact = {}
    for labels in (qrels, machine_qrels):
        rows = evaluate(labels, runs, ["AP"], depth=30)
        exact[id(labels)] = rows[rows["query_id"] == "all"].set_index("run")["value"]
    bias = exact[id(machine_qrels)] - exact[id(qrels)]
    true_relative = bias - bias.mean()
    true_count = {tp.topic: float((np.nan_to_num(tp.labels) >= 1).sum()) for tp in pool}
    counts, relatives = [], []
    for trial in range(160):
        selector = METHODS["audit-neyman"](pool, Budget(rate=0.25),
                                           np.random.default_rng(trial), predictions=machine)
        sample = simulate(selector, oracle).sample()
        frame = sample.frame[sample.frame["relevance"].notna()]
        hit = frame["relevance"] >= 1
        counts.append((hit / frame["inclusion"]).groupby(frame["query_id"]).sum()
                      .reindex(pool.topics, fill_value=0.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = audit(sample, runs, machine, ["AP~ht"], depth=30)
        relatives.append(table.set_index("run")["relative"])
    for values, truth in ((pd.DataFrame(counts), pd.Series(true_count)),
                          (pd.DataFrame(relatives), true_relative)):
        error = values.mean() - truth[values.columns]
        se = values.std(ddof=1) / np.sqrt(len(values))
        assert (error.abs() <= 3 * se + 1e-12).all(), (error / se).round(2).to_dict()


@pytest.mark.slow  # Monte Carlo
def test_relative_bias_intervals_are_as_wide_as_needed() -> None:
    """Seeded Monte Carlo (100 samples of 10% of a 25-topic pool, ``audit-neyman``): the
    audit's relative-bias variance, (K S K')_rr, averages to the spread of the estimated
    relative bias over the samples (ratio of their sums over the runs in [0.8, 1.25]), and
    its 95% intervals (t with T - 1 degrees of freedom, widened by the relative part of the
    jackknife's estimate of the Taylor correction's remaining bias, as ``audit`` prints
    them) cover at least 0.93 at a width (mean half-width / (1.96 rms error)) of at most
    1.15. The design's strata hold two judged documents each, mostly relevant ones, and
    their delete-one replicates, at one document, set the stratum's pair sum to 0: the
    bias estimate then carried minus that sum for every such stratum, and the intervals
    were 1.25 times as wide as needed (coverage 0.98)."""
    from scipy import stats

    from sampleval.estimation.audit import contrast_variance, human_estimates

    runs, pool, qrels, machine = _setting(n_topics=25)
    oracle = qrels_oracle(qrels)
    rows = evaluate(qrels, runs, ["AP"], depth=30)
    truth = rows[rows["query_id"] == "all"].set_index("run")["value"][list(pool.run_names)]
    true_contrast = (truth - truth.mean()).to_numpy()
    errors, variances, widen = [], [], []
    for trial in range(100):
        selector = METHODS["audit-neyman"](pool, Budget(rate=0.1),
                                           np.random.default_rng(trial), predictions=machine)
        sample = simulate(selector, oracle).sample()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            side = human_estimates(sample, runs, "AP~ht", depth=30)
        errors.append(side.estimate - side.estimate.mean() - true_contrast)
        variances.append(contrast_variance(side.covariance))
        widen.append(np.abs(side.relative_bias))
    error, variance = np.array(errors), np.array(variances)
    ratio = variance.mean(axis=0).sum() / error.var(axis=0, ddof=1).sum()
    assert 0.8 <= ratio <= 1.25, ratio
    half = stats.t(24).ppf(0.975) * np.sqrt(variance) + np.array(widen)
    coverage = float((np.abs(error) <= half).mean())
    width = float(half.mean() / (1.96 * np.sqrt((error ** 2).mean())))
    assert coverage >= 0.93 and width <= 1.15, (coverage, width)
