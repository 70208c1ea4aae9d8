"""The unseen relevant documents' variance term of stratified AP (``few=jeffreys``,
``few=pooled``; issue 29 item 1): its closed form on hand-computed strata, for both kinds of
zero-width rows, and its Monte Carlo coverage on a sparse synthetic collection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.unseen import TopicStrata, pooled_prior, unseen_variance
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.estimates import estimate

# topic A (kind b): its one relevant judged document a1 is in the census stratum 0; the
# partly-sampled stratum 1 (N = 3, n = 1, pi = 1/3) holds none judged.
# topic B (kind a for run X): stratum 1 (N = 4, n = 2, pi = 1/2) holds b1, relevant, which
# run X did not retrieve; run Y did, so Y's row gets no term.
FRAME = pd.DataFrame({
    "query_id": ["A"] * 5 + ["B"] * 4,
    "doc_id": ["a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3", "b4"],
    "relevance": [1, 0, 0, np.nan, np.nan, 1, 0, np.nan, np.nan],
    "stratum": ["0", "0", "1", "1", "1", "1", "1", "1", "1"],
    "inclusion": [1, 1, 1 / 3, 1 / 3, 1 / 3, 0.5, 0.5, 0.5, 0.5],
})
RANKINGS = {"X": {"A": ["a4", "a1", "a3", "a5"], "B": ["b3", "b2"]},
            "Y": {"A": ["a2", "a5", "a1"], "B": ["b1", "b4"]}}
VALUES = np.array([[0.5, 1 / 3], [0.0, 0.7]])  # AP-hat [topic, run] the term is taken at


def _views() -> list:
    runs = [Run.from_frame(pd.DataFrame(
        [(t, d, 10.0 - r) for t, docs in topics.items() for r, d in enumerate(docs)],
        columns=["query_id", "doc_id", "score"]), name) for name, topics in RANKINGS.items()]
    return topic_views(Pool.from_runs(runs), Sample("stratified", FRAME))


def _term(mean: float, square: float, g: list[float]) -> float:
    """E[E^2] = E[p] sum g^2 + E[p^2] ((sum g)^2 - sum g^2)."""
    s, s2 = sum(g), sum(x * x for x in g)
    return mean * s2 + square * (s * s - s2)


def test_the_unseen_term_under_jeffreys_prior_on_hand_computed_strata() -> None:
    """Topic A, kind b (R-hat = 1, a1 weighted 1; stratum 1 Beta(1/2, 3/2): E[p] = 1/4,
    E[p^2] = 1/8): run X ranks a4 first (g = (1 + 1/2 - 1/2) / 2 = 1/2) and a5 fourth,
    below a1 (g = ((1 + 1)/4 - 1/2) / 2 = 0); run Y ranks a5 second, above a1 at 3
    (g = (1/2 + 1/3 - 1/3) / 2 = 1/4) and not a4 (g = -(1/3) / 2). Topic B, kind a for X
    (AP-hat 0; b1 weighted 2, R-hat = 2; Beta(3/2, 3/2): E[p] = 1/2, E[p^2] = 5/16): b3 at
    rank 1, g = 1/3; b4 not retrieved, g = 0. Y found b1: no term."""
    views = _views()
    assert [v.pool.topic for v in views] == ["A", "B"]
    got = unseen_variance(VALUES, views, 1.0, "jeffreys")
    expected = np.array([[_term(1 / 4, 1 / 8, [1 / 2, 0.0]),
                          _term(1 / 4, 1 / 8, [-1 / 6, 1 / 4])],
                         [_term(1 / 2, 5 / 16, [1 / 3, 0.0]), 0.0]])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert expected[0, 0] == pytest.approx(1 / 16) and expected[0, 1] == pytest.approx(
        1.75 / 144) and expected[1, 0] == pytest.approx(1 / 18)


def test_the_pooled_prior_by_moments_on_hand_computed_strata() -> None:
    """Partly-sampled strata (x, n, pi): A's (0, 1, 1/3), B's (1, 2, 1/2): kappa = 1 / (1/3
    + 1) = 3/4, rates 1/4 and 3/8; sum (x - n p)^2 - sum n p (1 - p) = 1/8 - 21/32 < 0 (no
    spread beyond the binomial's), so the strength is the largest, 1000; A's stratum then
    has Beta(250, 750 + 1)."""
    views = _views()
    kappa, c = pooled_prior([TopicStrata(v, 1.0) for v in views])
    assert kappa == pytest.approx(0.75) and c == pytest.approx(1000.0)
    got = unseen_variance(VALUES, views, 1.0, "pooled")
    a, b = 250.0, 751.0
    mean, square = a / (a + b), a * (a + 1) / ((a + b) * (a + b + 1))
    a2, b2 = 1000 * 0.375 + 1, 1000 * 0.625 + 1
    mean2, square2 = a2 / (a2 + b2), a2 * (a2 + 1) / ((a2 + b2) * (a2 + b2 + 1))
    np.testing.assert_allclose(got, [[_term(mean, square, [1 / 2, 0.0]),
                                      _term(mean, square, [-1 / 6, 1 / 4])],
                                     [_term(mean2, square2, [1 / 3, 0.0]), 0.0]], rtol=1e-12)


def test_estimate_adds_the_term_to_the_zero_width_rows() -> None:
    """Through ``estimate``: ``few=jeffreys``'s per-topic variance is ``few=none``'s plus the
    term at the reported AP-hat; the rows of both kinds, zero-width without it, get width."""
    views = _views()
    runs = [Run.from_frame(pd.DataFrame(
        [(t, d, 10.0 - r) for t, docs in topics.items() for r, d in enumerate(docs)],
        columns=["query_id", "doc_id", "score"]), name) for name, topics in RANKINGS.items()]
    sample = Sample("stratified", FRAME)
    z = 1.959963984540054
    plain, new = (estimate(sample, runs, [f"AP~ht(interval=normal,few={f})"])
                  for f in ("none", "jeffreys"))
    plain, new = (x[x["query_id"] != MEAN_TOPIC].set_index(["query_id", "run"])
                  for x in (plain, new))
    value = plain["value"].unstack().loc[["A", "B"], ["X", "Y"]].to_numpy()
    var = (((plain["hi"] - plain["lo"]) / 2 / z) ** 2).unstack().loc[["A", "B"], ["X", "Y"]]
    half = ((new["hi"] - new["lo"]) / 2).unstack().loc[["A", "B"], ["X", "Y"]].to_numpy()
    expected = z * np.sqrt(var.to_numpy() + unseen_variance(value, views, 1.0, "jeffreys"))
    np.testing.assert_allclose(half, expected, rtol=1e-9)
    assert var.loc["B", "X"] == 0 and half[1, 0] > 0  # kind a
    assert var.loc["A", "X"] == 0 and half[0, 0] > 0  # kind b
