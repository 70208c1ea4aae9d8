"""``few=assisted``: AP by the difference (model-assisted) estimator with the completion model
cross-fitted over the topics, its variance anticipated under that model (issue 29 item 1;
docs/research/calibration.md, section 18)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_unseen import FRAME_C, _runs_c

from sampleval.core.pool import Pool
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.units import topic_datas
from sampleval.estimation.engine.unseen import (
    SampleStrata,
    anticipated_ap_variance,
    cross_fitted_rates,
)
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.estimates import estimate
from sampleval.estimation.families.ht import _topic_ap, ht_topics
from sampleval.estimation.spec import parse_estimate

Z = 1.959963984540054


def _rows(sample: Sample, runs: list[Run], measure: str) -> pd.DataFrame:
    return estimate(sample, runs, [measure]).set_index(["query_id", "run"])


def _census() -> Sample:
    return Sample("stratified", FRAME_C.assign(
        relevance=FRAME_C["relevance"].fillna(0.0).where(
            ~FRAME_C["doc_id"].isin(["a4", "b3"]), 1.0), inclusion=1.0, stratum="0"))


def test_on_a_census_the_assisted_estimate_is_the_exact_ap_with_zero_variance() -> None:
    """Every document judged: whatever the predictions, sum_U p + sum_S (y - p) is the exact
    total, so AP is exact (topic A: a1, a4, a6 relevant; X ranks a4, a1: (1 + 1)/3; Y a1
    third: (1/3)/3), and the anticipated variance is 0 (every f_h = 1); through ``estimate``
    the rows have zero width."""
    sample = _census()
    views = topic_views(Pool.from_runs(_runs_c()), sample)
    spec = parse_estimate("AP~ht(few=assisted)")
    rng = np.random.default_rng(3)
    for view in views:
        predicted = rng.uniform(0.1, 0.9, len(view.sample.docnos))
        data = topic_datas(view, sample, "ht", [predicted])[0]
        assisted = _topic_ap(view, sample, spec, 1.0, data, assisted=True)
        plain = _topic_ap(view, sample, spec, 1.0, ht_topics([view], sample)[0])
        np.testing.assert_allclose(assisted.value, plain.value, rtol=1e-12, atol=1e-15)
    shared = SampleStrata(views, 1.0)
    rates = rng.uniform(0.1, 0.9, int(shared.offsets[-1]))
    assert not anticipated_ap_variance(shared, rates).any()
    assert not anticipated_ap_variance(shared, rates, residual=False).any()
    rows = _rows(sample, _runs_c(), "AP~ht(few=assisted)")
    np.testing.assert_allclose(rows.loc[("A", "X"), "value"], 2 / 3, rtol=1e-12)
    np.testing.assert_allclose(rows.loc[("A", "Y"), "value"], 1 / 9, rtol=1e-12)
    np.testing.assert_allclose(rows["hi"], rows["lo"], atol=1e-12)


def test_with_predictions_zero_it_is_the_plain_design_based_estimate() -> None:
    """lam = 1 on predictions all 0 is ``~ht``'s AP-hat, its Taylor-jackknife correction,
    variance and remaining bias alike (the difference form's contract, for the option's
    path through ``_topic_ap``)."""
    sample = Sample("stratified", FRAME_C)
    views = topic_views(Pool.from_runs(_runs_c()), sample)
    spec = parse_estimate("AP~ht(few=assisted)")
    for view, plain in zip(views, ht_topics(views, sample), strict=True):
        data = topic_datas(view, sample, "ht", [np.zeros(len(view.sample.docnos))])[0]
        got = _topic_ap(view, sample, spec, 1.0, data, assisted=True)
        want = _topic_ap(view, sample, spec, 1.0, plain)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def _two_strata() -> tuple[Sample, list[Run]]:
    """One topic T: d1 relevant in the census stratum 0; stratum 1 of N = 4 documents judged
    at n = 2 (d2 not relevant, d3 relevant; d4, d5 unjudged; pi = 1/2). Run X ranks d1, d4,
    d3, d2 (not d5)."""
    frame = pd.DataFrame({"query_id": "T", "doc_id": ["d1", "d2", "d3", "d4", "d5"],
                          "relevance": [1, 0, 1, np.nan, np.nan],
                          "stratum": ["0", "1", "1", "1", "1"],
                          "inclusion": [1.0, 0.5, 0.5, 0.5, 0.5]})
    run = Run.from_frame(pd.DataFrame({"query_id": "T", "doc_id": ["d1", "d4", "d3", "d2"],
                                       "score": [4.0, 3.0, 2.0, 1.0]}), "X")
    return Sample("stratified", frame), [run]


def test_the_anticipated_variance_on_a_constructed_two_stratum_topic() -> None:
    """By hand: rates r = (0.5, 0.3, 0.1, 0.2, 0.4) for d1..d5; the completed frame q = (1, 0,
    1, 0.2, 0.4) (judged as judged); X's ranks d1, d4, d3, d2 give R = 2.6, S = 1 + 0.2 (1 +
    1)/2 + (1 + 1.2)/3 = 1.2 + 2.2/3, AP = S/R; dS = 1 + 0.2/2 + 1/3 (d1), (1 + 1)/2 + 1/3
    (d4), 2.2/3 (d3), 3.2/4 (d2), 0 (d5, not retrieved); g = (dS - AP)/R. Stratum 1 (N = 4,
    n = 2): (1 - f)/f N/(N - 1) = 4/3, times (1 - 1/N) = 3/4: the residuals' variance is
    sum_{d2..d5} g^2 r (1 - r); the labels' adds 4/3 sum (g r - mean g r)^2. The census
    stratum adds nothing."""
    sample, runs = _two_strata()
    views = topic_views(Pool.from_runs(runs), sample)
    shared = SampleStrata(views, 1.0)
    order = views[0].sample.locate(np.array(["d1", "d2", "d3", "d4", "d5"], dtype=object))
    rates = np.zeros(5)
    rates[order] = [0.5, 0.3, 0.1, 0.2, 0.4]
    r_total, s = 2.6, 1.2 + 2.2 / 3
    ap = s / r_total
    ds = np.array([1 + 0.1 + 1 / 3, 3.2 / 4, 2.2 / 3, 1 + 1 / 3, 0.0])  # d1..d5
    g = (ds - ap) / r_total
    r = np.array([0.5, 0.3, 0.1, 0.2, 0.4])
    inner = slice(1, 5)
    residual = (g[inner] ** 2 * r[inner] * (1 - r[inner])).sum()
    m = g[inner] * r[inner]
    labels = residual + 4 / 3 * ((m - m.mean()) ** 2).sum()
    np.testing.assert_allclose(anticipated_ap_variance(shared, rates), [[residual]],
                               rtol=1e-12)
    np.testing.assert_allclose(anticipated_ap_variance(shared, rates, residual=False),
                               [[labels]], rtol=1e-12)
    # AP@2 (map_cut): S over ranks 1-2 = 1.2; d3, d2 beyond the cut move only R
    ap2 = 1.2 / r_total
    ds2 = np.array([1 + 0.1, 0.0, 0.0, 1.0, 0.0])
    g2 = (ds2 - ap2) / r_total
    np.testing.assert_allclose(anticipated_ap_variance(shared, rates, cutoff=2),
                               [[(g2[inner] ** 2 * r[inner] * (1 - r[inner])).sum()]],
                               rtol=1e-12)


def test_a_topic_s_rates_do_not_read_its_own_labels() -> None:
    """Cross-fitting: a topic's predictions are fitted on the other folds' topics only, so
    changing its own judged labels leaves them as they were (and moves the other topics',
    whose fits it enters); documents that cannot be judged (pi = 0) predict 0."""
    sample = Sample("stratified", FRAME_C)
    views = topic_views(Pool.from_runs(_runs_c()), sample)
    before = cross_fitted_rates(SampleStrata(views, 1.0))
    flipped = FRAME_C.assign(relevance=FRAME_C["relevance"].where(
        ~FRAME_C["doc_id"].isin(["b2"]), 1.0 - FRAME_C["relevance"]))
    shared = SampleStrata(topic_views(Pool.from_runs(_runs_c()), Sample("stratified", flipped)),
                          1.0)
    after = cross_fitted_rates(shared)
    b = shared.frame.topic == 1
    assert flipped.loc[flipped["doc_id"] == "b2", "relevance"].item() != FRAME_C.loc[
        FRAME_C["doc_id"] == "b2", "relevance"].item()
    np.testing.assert_array_equal(after[b], before[b])
    assert not np.array_equal(after[~b], before[~b])
    assert (before >= 0).all() and (before <= 1).all() and before.any()


def test_estimate_reports_the_difference_estimate_with_the_anticipated_variance() -> None:
    """Through ``estimate``: ``few=assisted``'s value is ``_topic_ap``'s at lam = 1 on the
    cross-fitted predictions (not the design-based value), each topic's half-width z
    sqrt(the residuals' anticipated variance) where the model predicts something, the mean's
    z sqrt(sum)/T."""
    sample = Sample("stratified", FRAME_C)
    runs = _runs_c()
    views = topic_views(Pool.from_runs(runs), sample)
    shared = SampleStrata(views, 1.0)
    rates = cross_fitted_rates(shared)
    spec = parse_estimate("AP~ht(few=assisted)")
    value = np.array([_topic_ap(view, sample, spec, 1.0, topic_datas(
        view, sample, "ht", [rates[shared.offsets[t]:shared.offsets[t + 1]]])[0],
        assisted=True).value for t, view in enumerate(views)])
    variance = anticipated_ap_variance(shared, rates)
    rows = _rows(sample, runs, "AP~ht(few=assisted)")
    plain = _rows(sample, runs, "AP~ht")
    got = rows["value"].drop(MEAN_TOPIC).unstack().loc[["A", "B", "C"], ["X", "Y"]]
    np.testing.assert_allclose(got, value, rtol=1e-12)
    assert not np.allclose(got, plain["value"].drop(MEAN_TOPIC).unstack().loc[
        ["A", "B", "C"], ["X", "Y"]])
    half = ((rows["hi"] - rows["lo"]) / 2).drop(MEAN_TOPIC).unstack().loc[
        ["A", "B", "C"], ["X", "Y"]]
    # topic B's fold (A and C) judged nothing relevant in a partly-sampled stratum: no model,
    # so B keeps the design-based estimate with pooled's variance
    modelled = np.bincount(shared.frame.topic, weights=rates, minlength=3) > 0
    assert modelled.tolist() == [True, False, True]
    np.testing.assert_allclose(half.loc[["A", "C"]], Z * np.sqrt(variance[[0, 2]]), rtol=1e-9)
    assert (half.loc["B"] > 0).all()
    variance[1] = (half.loc["B"].to_numpy() / Z) ** 2
    mean_half = ((rows["hi"] - rows["lo"]) / 2).loc[MEAN_TOPIC].loc[["X", "Y"]]
    np.testing.assert_allclose(mean_half, Z * np.sqrt(variance.sum(axis=0)) / 3, rtol=1e-9)


@pytest.mark.filterwarnings("ignore")
def test_assisted_bias_and_coverage_on_a_sparse_collection() -> None:
    """Seeded Monte Carlo on section 12's small sparse collection A (20 topics, about 1% of
    the pool relevant) at 10%, stratified, trials 0-9 (``studies.interval_assisted``'s rows;
    section 18 over 40 trials: the mean's bias +0.0135, SE 0.0024, the default's +0.0109;
    per-topic coverage 0.918 against the default's 0.813): the assisted mean's bias stays
    small (under 0.025, about two SEs of 10 trials above the 40-trial figure), and its
    per-topic intervals, on the variance anticipated under the cross-fitted model, cover
    0.88-0.97 where the default's cover under 0.85."""
    from studies.interval_assisted import assisted_rows, table
    from studies.interval_parts import small_collection

    pool, qrels = small_collection("A")
    rows = assisted_rows(pool, qrels, "stratified", 0.1, 10, 0)
    got = table(rows).set_index("estimate, interval")
    assisted, default = got.loc["assisted, anticipated"], got.loc["default (completed)"]
    assert abs(assisted["bias"]) < 0.025, got
    assert 0.88 <= assisted["topic covers"] <= 0.97, got
    assert default["topic covers"] < 0.85, got
