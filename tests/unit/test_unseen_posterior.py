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
