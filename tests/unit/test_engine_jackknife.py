"""The jackknives on the engine's stratified replicates (issue 28): the double jackknife
(``AP~ht(bias=jackknife)``'s variance) is the jackknife of the estimate that family reports,
each replicate re-estimated by hand, through the family, on the sample without one judged
document; the audit's control-variate covariance is the array path's it replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.sample import Sample
from sampleval.estimation.engine.views import topic_views
from sampleval.estimation.families.ht import differences_ht, topic_parts
from sampleval.estimation.spec import parse_estimate
from sampleval.io.coerce import as_runs

SIZES = (8, 10, 12, 15)
JUDGED = (2, 4, 5, 6)  # stratum 0 holds two judged documents


def _case() -> tuple[pd.DataFrame, Pool]:
    """One topic, four strata; the runs rank every frame document, at random."""
    rng = np.random.default_rng(7)
    stratum = np.repeat(np.arange(len(SIZES)), SIZES)
    docs = np.array([f"d{i:02d}" for i in range(len(stratum))])
    labels = np.full(len(docs), np.nan)
    for h, n_h in enumerate(JUDGED):
        members = np.flatnonzero(stratum == h)
        labels[members[:n_h]] = (rng.random(n_h) < 0.6).astype(np.float64)
    labels[np.flatnonzero(stratum == 0)[:2]] = 1.0  # the two-document stratum's pair counts
    frame = pd.DataFrame({"query_id": "1", "doc_id": docs, "relevance": labels,
                          "stratum": [f"s{h}" for h in stratum], "inclusion": 0.0})
    runs = pd.DataFrame([{"run": f"r{r}", "query_id": "1", "doc_id": d, "score": s}
                         for r in range(4)
                         for d, s in zip(docs, rng.permutation(len(docs)), strict=True)])
    return frame, Pool.from_runs(as_runs(runs), depth=None)


PAIRS = np.array([[0, 1], [0, 3], [2, 1]])


def _parts(frame: pd.DataFrame, pool: Pool, measure: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reported estimate and variance per run (the family's parts, no ``few`` floor),
    and the variance of each of :data:`PAIRS`' differences."""
    groups = frame.groupby("stratum")["relevance"]
    sample = Sample("stratified", frame.assign(
        inclusion=groups.transform("count") / groups.transform("size")))
    spec = parse_estimate(measure)
    views = topic_views(pool, sample)
    parts = topic_parts(pool.run_names, views, sample, spec, 1.0)
    pair_variance = differences_ht(pool.run_names, views, sample, spec, 1.0, PAIRS)[1]
    return parts[0][0], parts[1][0], pair_variance[0]


def test_double_jackknife_is_the_jackknife_of_the_reported_estimate() -> None:
    """v = sum_h (1 - n_h/N_h) (n_h - 1)/n_h sum_{j in S_h} (theta_(j) - mean_h)^2 (Wolter,
    2007, sec. 4.5), theta_(j) the reported ``AP~ht(bias=jackknife)`` of the sample without
    judged document j; the same of the difference of two runs' estimates. Its replicates
    that leave the two-document stratum at two documents hold that stratum's pair sum by
    the reported estimate's rule (before, the variance's replicates left the rule out: it
    was the jackknife of another estimator)."""
    frame, pool = _case()
    measure = "AP~ht(bias=jackknife)"
    _, variance, pair_variance = _parts(frame, pool, measure)
    stratum = frame["stratum"].to_numpy()
    judged = frame["relevance"].notna().to_numpy()
    expected, pair_expected = np.zeros(len(pool.run_names)), np.zeros(len(PAIRS))
    for h, (big_n, n_h) in enumerate(zip(SIZES, JUDGED, strict=True)):
        if n_h < 2:
            continue
        reps = []
        for j in np.flatnonzero(judged & (stratum == f"s{h}")):
            less = frame.copy()
            less.loc[j, "relevance"] = np.nan
            reps.append(_parts(less, pool, measure)[0])
        factor = (1 - n_h / big_n) * (n_h - 1) / n_h
        spread = np.array(reps) - np.mean(reps, axis=0)
        expected += factor * (spread ** 2).sum(axis=0)
        pair_spread = spread[:, PAIRS[:, 0]] - spread[:, PAIRS[:, 1]]
        pair_expected += factor * (pair_spread ** 2).sum(axis=0)
    np.testing.assert_allclose(variance, expected, rtol=1e-10)
    np.testing.assert_allclose(pair_variance, pair_expected, rtol=1e-10)
    assert variance.min() > 0


def test_audit_difference_jackknife_is_the_array_paths() -> None:
    """The audit's control variates (``control='machine'``): the jackknife covariance of
    A(m) - A(y), now from the engine's replicates of both labellings at once, equals the
    array path's (``replicates.stratified_replicates`` of each; the engine holds a
    two-document stratum's pair sum in its replicates, which moves their mean but not their
    spread), on the sample above with a judge that errs on a third of the frame."""
    from sampleval.core.inclusion import judged_design
    from sampleval.estimation.audit import _difference_jackknife, machine_grades
    from sampleval.estimation.engine.estimands import average_precision
    from sampleval.estimation.engine.replicates import strata_covariance, stratified_replicates
    from sampleval.io.coerce import as_predictions

    frame, pool = _case()
    groups = frame.groupby("stratum")["relevance"]
    sample = Sample("stratified", frame.assign(
        inclusion=groups.transform("count") / groups.transform("size")))
    wrong = np.random.default_rng(3).random(len(frame)) < 1 / 3
    truth = frame["relevance"].fillna(0.0).to_numpy()
    judge = as_predictions(frame[["query_id", "doc_id"]].assign(
        prediction=np.where(wrong, 1.0 - truth, truth)), 1)
    (view,) = topic_views(pool, sample)
    for measure in ("AP~ht(bias=taylor)", "AP~ht(bias=none)"):
        spec = parse_estimate(measure)
        got = _difference_jackknife(view, sample, spec, judge, 1.0, False)
        judged = np.flatnonzero(view.sample.judged)
        y = view.sample.labels[judged]
        m = machine_grades(judge, "1", view.sample.docnos[judged], False)
        keep = (y != 0) | (m != 0)
        index, y, m = judged[keep], y[keep], m[keep]
        sizes, n_sampled = view.sample.strata()
        strata = (view.sample.stratum[index], sizes, n_sampled)
        design = judged_design(sample, view.sample, index)
        ranks, taylor = view.rank_of(index), measure.endswith("taylor)")
        value = (average_precision(m, design.pi, design.pi_joint, ranks, None, False,
                                   taylor).value
                 - average_precision(y, design.pi, design.pi_joint, ranks, None, False,
                                     taylor).value)
        reps_m, rest_m = stratified_replicates(m, strata, ranks, None, False, taylor)
        reps_y, rest_y = stratified_replicates(y, strata, ranks, None, False, taylor)
        covariance = strata_covariance((reps_m - reps_y).T, (rest_m - rest_y).T, strata[0],
                                       sizes, n_sampled.astype(np.float64))
        np.testing.assert_allclose(got[0], value, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got[1], covariance, rtol=1e-10, atol=1e-15)
        assert np.diagonal(covariance).min() > 0
