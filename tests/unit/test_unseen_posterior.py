"""``few=posterior``: AP completed by the completion model's posterior on the topics with few
relevant documents judged (issue 29 item 2; docs/research/calibration.md, section 15)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_unseen import FRAME_C, RANKINGS_C, _runs_c

import conftest
from sampleval.core.pool import Pool
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.unseen import (
    POSTERIOR_UP_TO,
    SampleStrata,
    posterior_ap,
    posterior_topics,
)
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.estimates import estimate


def _shared(frame: pd.DataFrame) -> SampleStrata:
    return SampleStrata(topic_views(Pool.from_runs(_runs_c()), Sample("stratified", frame)), 1.0)


def test_the_posterior_ap_on_hand_computed_strata() -> None:
    """p_d = (c r_d + x_h) / (c + n_h) for each unjudged document of a partly-sampled
    stratum (r_d the model's rate, c the pooled strength), the judged as judged; AP = E[S] /
    E[R], E[S] = sum_k p_k (1 + sum_{j<k} p_j) / k. Topic A: a1, a6 relevant in the census
    stratum, a3 judged 0 in stratum 1 (n = 1, x = 0), a4 and a5 unjudged; run X ranks a4, a1,
    a3, a5; run Y a2, a5, a1. Topic B: stratum 1 found b1, b5 in n = 3, b3 and b4 unjudged; X
    ranks b3, b2; Y b1, b4. Topic C found nothing: X ranks c3, c1; Y c4, c3, c2."""
    shared = _shared(FRAME_C)
    c = shared.prior.strength
    rates = np.split(shared.model[0], shared.offsets[1:-1])
    views = shared.views

    def p(t: int, docs: list[str], found: int, drawn: int) -> np.ndarray:
        r = rates[t][views[t].sample.locate(np.array(docs, dtype=object))]
        return (c * r + found) / (c + drawn)

    a4, a5 = p(0, ["a4", "a5"], 0, 1)
    b3, b4 = p(1, ["b3", "b4"], 2, 3)
    c3, c4 = p(2, ["c3", "c4"], 0, 1)
    assert min(a4, a5, b3, b4, c3, c4) > 0 and b3 > a4
    r_a, r_b = 2 + a4 + a5, 2 + b3 + b4
    expected = [[(a4 + (1 + a4) / 2 + a5 * (2 + a4) / 4) / r_a, (a5 / 2 + (1 + a5) / 3) / r_a],
                [b3 / r_b, (1 + b4 * 2 / 2) / r_b],
                [c3 / (c3 + c4), (c4 + c3 * (1 + c4) / 2) / (c3 + c4)]]
    np.testing.assert_allclose(posterior_ap(shared), expected, rtol=1e-12)
    # AP@1 (map_cut): S over rank 1 only, R over the frame; Y's first in A is a2, judged 0
    np.testing.assert_allclose(posterior_ap(shared, cutoff=1),
                               [[a4 / r_a, 0.0], [b3 / r_b, 1 / r_b],
                                [c3 / (c3 + c4), c4 / (c3 + c4)]], rtol=1e-12)
    assert posterior_topics(shared).tolist() == [True, True, True]  # k = 2, 2, 0 <= 2


def test_on_a_census_the_posterior_is_the_exact_ap_and_replaces_nothing() -> None:
    """Every stratum judged in full (a census): nothing to complete, so the posterior AP is the
    exact AP of the judgments (here the design-based value, which is exact on a census), and
    ``few=posterior`` reports ``few=pooled``'s rows unchanged."""
    full = FRAME_C.assign(relevance=FRAME_C["relevance"].fillna(0.0).where(
        ~FRAME_C["doc_id"].isin(["a4", "b3"]), 1.0), inclusion=1.0, stratum="0")
    shared = _shared(full)
    assert not posterior_topics(shared).any()
    sample = Sample("stratified", full)
    design = estimate(sample, _runs_c(), ["AP~ht(few=pooled)"]).set_index(["query_id", "run"])
    value = design["value"].drop(MEAN_TOPIC).unstack().loc[["A", "B", "C"], ["X", "Y"]]
    # exact AP by hand: topic A has a1, a4, a6 relevant; X ranks a4, a1 (a3, a5 not
    # relevant): (1 + 1) / 3; Y ranks a1 third: (1/3) / 3
    np.testing.assert_allclose(value.loc["A"], [2 / 3, 1 / 9], rtol=1e-12)
    np.testing.assert_allclose(posterior_ap(shared), value.to_numpy(), rtol=1e-12, atol=1e-15)
    posterior = estimate(sample, _runs_c(), ["AP~ht(few=posterior)"]).set_index(
        ["query_id", "run"])
    pd.testing.assert_frame_equal(posterior[["value", "lo", "hi"]], design[["value", "lo", "hi"]])


def test_estimate_reports_the_posterior_where_few_relevant_were_judged() -> None:
    """Through ``estimate``: ``few=posterior``'s value is :func:`posterior_ap`'s on the topics
    with at most :data:`POSTERIOR_UP_TO` relevant judged whose unjudged documents all lie in
    partly-sampled strata, and the design-based value elsewhere (topic D: three relevant
    judged); the interval's variance is ``few=pooled``'s, with no bias widening where the
    posterior stands."""
    frame = pd.concat([FRAME_C, pd.DataFrame({
        "query_id": ["D"] * 6, "doc_id": [f"d{i}" for i in range(1, 7)],
        "relevance": [1, 1, 1, 0, np.nan, np.nan], "stratum": ["1"] * 6,
        "inclusion": [4 / 6] * 6})], ignore_index=True)
    rankings = {"X": {**RANKINGS_C["X"], "D": ["d5", "d1", "d2", "d6"]},
                "Y": {**RANKINGS_C["Y"], "D": ["d3", "d6", "d4", "d2"]}}
    runs = [Run.from_frame(pd.DataFrame(
        [(t, d, 10.0 - r) for t, docs in topics.items() for r, d in enumerate(docs)],
        columns=["query_id", "doc_id", "score"]), name) for name, topics in rankings.items()]
    sample = Sample("stratified", frame)
    views = topic_views(Pool.from_runs(runs), sample)
    shared = SampleStrata(views, 1.0)
    assert POSTERIOR_UP_TO == 2 and posterior_topics(shared).tolist() == [True, True, True,
                                                                          False]
    old, new = (estimate(sample, runs, [f"AP~ht(few={f})"]).set_index(["query_id", "run"])
                for f in ("pooled", "posterior"))
    got = new["value"].drop(MEAN_TOPIC).unstack().loc[["A", "B", "C", "D"], ["X", "Y"]]
    before = old["value"].drop(MEAN_TOPIC).unstack().loc[["A", "B", "C", "D"], ["X", "Y"]]
    np.testing.assert_allclose(got.loc[["A", "B", "C"]], posterior_ap(shared)[:3], rtol=1e-12)
    np.testing.assert_allclose(got.loc["D"], before.loc["D"], rtol=1e-12)
    assert not np.allclose(got.loc[["A", "B", "C"]], before.loc[["A", "B", "C"]])
    np.testing.assert_allclose(new.loc[MEAN_TOPIC, "value"], got.mean().to_numpy(), rtol=1e-12)
    cut = estimate(sample, runs, ["AP@1~ht(few=posterior)"]).set_index(["query_id", "run"])
    np.testing.assert_allclose(  # AP@k's posterior is map_cut's: S over the top k only
        cut["value"].drop(MEAN_TOPIC).unstack().loc[["A", "B", "C"], ["X", "Y"]],
        posterior_ap(shared, cutoff=1)[:3], rtol=1e-12)


@pytest.mark.filterwarnings("ignore")
def test_the_posterior_removes_most_of_the_sparse_collection_s_bias() -> None:
    """Seeded Monte Carlo on section 12's small sparse collection C (30 topics, 0.5% of the
    pool relevant) at 5%, stratified, 8 trials: the default's mean AP runs low (section 15:
    -0.075 over 40 trials, Monte Carlo SE 0.002) and ``few=posterior``'s is within 0.025 of
    the truth (-0.009 over 40 trials; over 8 trials its SE is about 0.006, so 0.025 is four
    of them above the 40-trial bias)."""
    from studies.interval_parts import parts_rows, small_collection

    pool, qrels = small_collection("C")
    rows = parts_rows(pool, qrels, "stratified", 0.05, 8, 0)
    by = rows.groupby(["trial", "run"])
    truth = by["truth"].mean()
    default = (by["value"].mean() - truth).mean()
    posterior = (by["few_posterior"].mean() - truth).mean()
    assert default < -0.05
    assert abs(posterior) < 0.025



def test_explain_says_what_few_posterior_does(tmp_path: Path) -> None:
    """``estimate --explain`` with ``few=posterior`` given prints what the value means (from
    the options' vocabulary, which the options' help prints too; before, only where the value
    came from)."""
    (tmp_path / "sample.txt").write_text("1 0 a1 A 1\n1 0 a2 A 0\n1 0 b1 B 2\n")
    (tmp_path / "run.txt").write_text("1 Q0 a2 1 5 r\n1 Q0 b1 2 4 r\n")
    got = conftest.run_cli("estimate", tmp_path / "sample.txt", tmp_path / "run.txt", "-m",
                           "AP~ht(few=posterior)", "--explain")
    assert got.code == 0, got.stderr
    lines = got.stdout.splitlines()
    at = lines.index("  few=posterior: given")
    assert lines[at + 1].startswith("    posterior: pooled's variance; and on a topic whose "
                                    "sample holds at most two relevant documents")


def test_a_vote_share_below_the_level_is_not_a_relevant_judged() -> None:
    """k counts the judged documents with label >= level, as ``judged_relevant`` does: topic
    A's a2 at a vote share of 0.5 leaves A at k = 2, where the posterior stands (counting
    every label above 0 made it 3)."""
    frame = FRAME_C.assign(relevance=FRAME_C["relevance"].where(FRAME_C["doc_id"] != "a2", 0.5))
    assert posterior_topics(_shared(frame)).tolist() == [True, True, True]


def _rates_at(shared: SampleStrata, docs: dict[str, float]) -> np.ndarray:
    """A completion model's rates over the concatenated frame: ``docs`` (doc id -> r_d) where
    given, 0 elsewhere."""
    rates = np.zeros(int(shared.offsets[-1]))
    for t, view in enumerate(shared.views):
        ids = np.array(list(docs), dtype=object)
        at = view.sample.locate(ids)
        rates[at[at >= 0] + shared.offsets[t]] = np.array(list(docs.values()))[at >= 0]
    return rates


def test_the_posterior_variance_on_a_hand_computed_topic() -> None:
    """:func:`posterior_variance` on topic C (stratum 1: c2 judged 0, c3 and c4 unjudged, n_h
    = 1, x_h = 0) with rates r = 1/2, 1/4 and strength c = 4: p = c r / (c + 1) = 0.4, 0.2, R =
    0.6; s_d^2 = p_d (1 - p_d) / (c + 2). Run X ranks c3, c1: AP = p3 / R, dS_3 = 1, c4 not
    retrieved (dS = 0); run Y ranks c4, c3, c2: AP = (p4 + p3 (1 + p4) / 2) / R, dS_4 = 1 + p3
    / 2, dS_3 = (1 + p4) / 2. g_d = (dS_d - AP) / R; Var = sum g^2 (p (1 - p) - s^2) + (sum g
    s)^2 (one stratum); without the rates' spread, sum g^2 p (1 - p)."""
    from sampleval.estimation.engine.unseen import posterior_variance

    shared = _shared(FRAME_C)
    rates = _rates_at(shared, {"c3": 0.5, "c4": 0.25})
    c, p3, p4 = 4.0, 0.4, 0.2
    r = p3 + p4
    ap_x, ap_y = p3 / r, (p4 + p3 * (1 + p4) / 2) / r
    np.testing.assert_allclose(posterior_ap(shared, rates, c)[2], [ap_x, ap_y], rtol=1e-12)
    g = np.array([[(1 - ap_x) / r, -ap_x / r],
                  [((1 + p4) / 2 - ap_y) / r, (1 + p3 / 2 - ap_y) / r]])  # [run, (c3, c4)]
    p = np.array([p3, p4])
    s2 = p * (1 - p) / (c + 2)
    expected = (g**2 * (p * (1 - p) - s2)).sum(axis=1) + (g * np.sqrt(s2)).sum(axis=1) ** 2
    got = posterior_variance(shared, rates=rates, strength=c)
    np.testing.assert_allclose(got[2], expected, rtol=1e-12)
    np.testing.assert_allclose(posterior_variance(shared, spread=False, rates=rates,
                                                  strength=c)[2],
                               (g**2 * p * (1 - p)).sum(axis=1), rtol=1e-12)
    # g_3 and g_4 differ in sign for both runs (a relevant c3 or c4 moves R with S): the
    # rates' common spread lowers the variance here
    assert (got[2] < (g**2 * p * (1 - p)).sum(axis=1)).all()


def test_on_a_census_the_posterior_variance_is_zero() -> None:
    """Every stratum judged in full: nothing unjudged, nothing to vary."""
    from sampleval.estimation.engine.unseen import posterior_variance

    full = FRAME_C.assign(relevance=FRAME_C["relevance"].fillna(0.0), inclusion=1.0,
                          stratum="0")
    assert (posterior_variance(_shared(full)) == 0.0).all()


def _small_topic() -> tuple[SampleStrata, np.ndarray, dict[str, list[str]], list[str]]:
    """One topic of 30 documents: stratum 1 (t0-t9) judged t0 (relevant), t1, t2; stratum 2
    (t10-t29) judged t10, t11 (not relevant); two runs over 16 documents each; the model's
    rates equal within a stratum (0.3, 0.05), so the Beta posterior of each stratum's rate is
    exactly the rates' law."""
    docs = [f"t{i}" for i in range(30)]
    stratum = ["1"] * 10 + ["2"] * 20
    relevance = [1, 0, 0] + [np.nan] * 7 + [0, 0] + [np.nan] * 18
    frame = pd.DataFrame({"query_id": "T", "doc_id": docs, "relevance": relevance,
                          "stratum": stratum, "inclusion": [0.3] * 10 + [0.1] * 20})
    rankings = {"X": ["t3", "t0", "t12", "t4", "t1", "t13", "t5", "t14", "t15", "t6", "t10",
                      "t16", "t7", "t17", "t18", "t8"],
                "Y": ["t12", "t13", "t3", "t14", "t0", "t19", "t20", "t4", "t21", "t22", "t11",
                      "t5", "t23", "t24", "t25", "t26"]}
    runs = [Run.from_frame(pd.DataFrame(
        [("T", d, 100.0 - r) for r, d in enumerate(ranked)],
        columns=["query_id", "doc_id", "score"]), name) for name, ranked in rankings.items()]
    shared = SampleStrata(topic_views(Pool.from_runs(runs), Sample("stratified", frame)), 1.0)
    rates = _rates_at(shared, {d: (0.3 if s == "1" else 0.05) for d, s in zip(docs, stratum,
                                                                              strict=True)})
    return shared, rates, rankings, docs


def _ap_of(judged: np.ndarray, order: list[int]) -> np.ndarray:
    """AP = S / R of (each row of) ``judged`` relevance over the frame, for a run ranking the
    frame documents ``order``: S = sum_k y_k (1 + sum_{j<k} y_j) / k (y fractional: S's
    expectation's form)."""
    ranked = judged[..., order]
    before = np.cumsum(ranked, axis=-1) - ranked
    rank = np.arange(1, len(order) + 1)
    return (ranked * (1 + before) / rank).sum(axis=-1) / judged.sum(axis=-1)


def test_the_posterior_variance_against_a_monte_carlo_of_the_posterior() -> None:
    """Brute force on :func:`_small_topic` (strength c = 6): draw each stratum's rate from its
    Beta posterior Beta(c r + x_h, c (1 - r) + n_h - x_h), each unjudged document relevant
    with it, and compute each run's AP = S / R of the completed judgments. The linearised
    error sum_d g_d (u_d - p_d) (g_d from :func:`posterior_ap`'s ratio) has exactly
    :func:`posterior_variance`'s variance (200,000 draws: relative Monte Carlo SE 0.3%;
    tolerance 2%), which tells it from the variance without the rates' spread; AP's own
    posterior variance is 0.80-0.94 of it (the ratio's second-order terms at E[R] about 4:
    the first-order variance errs wide)."""
    from sampleval.estimation.engine.unseen import posterior_variance

    shared, rates, rankings, docs = _small_topic()
    c = 6.0
    rng = np.random.default_rng(29)
    n = 200_000
    view = shared.views[0]
    at = view.sample.locate(np.array(docs, dtype=object))
    y = shared.frame.y[at]
    unjudged = np.isnan(y)
    first = np.arange(30) < 10
    theta = np.where(first, rng.beta(c * 0.3 + 1, c * 0.7 + 2, n)[:, None],
                     rng.beta(c * 0.05, c * 0.95 + 2, n)[:, None])
    u = np.where(unjudged, rng.random((n, 30)) < theta, np.nan_to_num(y))
    p = np.where(unjudged, np.where(first, (c * 0.3 + 1) / (c + 3), c * 0.05 / (c + 2)),
                 np.nan_to_num(y))
    ap_mean = posterior_ap(shared, rates, c)[0]
    got = posterior_variance(shared, rates=rates, strength=c)[0]
    without, spread = np.zeros(2), np.zeros(2)
    for j, run in enumerate("XY"):
        order = [docs.index(d) for d in rankings[run]]
        rank = np.arange(1, len(order) + 1)

        r_bar = p.sum()
        ds = np.zeros(30)
        ranked = p[order]
        before = np.cumsum(ranked) - ranked
        after = np.cumsum((ranked / rank)[::-1])[::-1] - ranked / rank
        ds[order] = (1 + before) / rank + after
        g = np.where(unjudged, (ds - ap_mean[j]) / r_bar, 0.0)
        np.testing.assert_allclose(_ap_of(p, order), ap_mean[j], rtol=1e-12)
        linear = ((u - p) * g).sum(axis=1)
        assert abs(linear.var() / got[j] - 1) < 0.02
        assert 0.7 < _ap_of(u, order).var() / got[j] < 1.05  # 0.94 (X), 0.80 (Y)
        without[j] = posterior_variance(shared, spread=False, rates=rates, strength=c)[0, j]
        spread[j] = linear.var()
    # X's stratum-1 documents move its AP together: the spread adds 7% there, which the
    # Monte Carlo sees (Y: under 1%)
    assert spread[0] > 1.04 * without[0]
