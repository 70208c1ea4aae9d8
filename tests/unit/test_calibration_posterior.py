"""The completion model's own posterior variance of ``few=posterior``'s AP
(``studies.interval_parts.posterior_variance``, section 17 of docs/research/calibration.md):
against its closed form on a constructed topic and a brute-force Monte Carlo of the
posterior."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_unseen import FRAME_C
from test_unseen_posterior import _shared

from sampleval.core.pool import Pool
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.unseen import SampleStrata, posterior_ap
from sampleval.estimation.engine.views import topic_views
from studies.interval_parts import posterior_variance


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
    :func:`posterior_variance`'s variance (100,000 draws: relative Monte Carlo SE 0.45%;
    tolerance 2%), which tells it from the variance without the rates' spread; AP's own
    posterior variance is 0.80-0.93 of it (the ratio's second-order terms at E[R] about 4:
    the first-order variance errs wide)."""
    shared, rates, rankings, docs = _small_topic()
    c = 6.0
    rng = np.random.default_rng(29)
    n = 100_000
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
        assert 0.7 < _ap_of(u, order).var() / got[j] < 1.05  # 0.93 (X), 0.80 (Y)
        without[j] = posterior_variance(shared, spread=False, rates=rates, strength=c)[0, j]
        spread[j] = linear.var()
    # X's stratum-1 documents move its AP together: the spread adds 7% there, which the
    # Monte Carlo sees (Y: under 1%)
    assert spread[0] > 1.04 * without[0]


def test_the_error_correlation_on_constructed_rows() -> None:
    """:func:`studies.interval_parts.error_correlation` on one (trial, run) of two topics where
    the posterior stands (k = 1, variance V + Vmodel = v_t, errors e_t): the rows' mean squared
    error over their mean variance, the mean's squared error over sum v / T^2, and rho =
    (T^2 mse(mean) - sum v) / sum_{s != t} sd_s sd_t = ((e1 + e2)^2 - v1 - v2) / (2 sqrt(v1
    v2))."""
    from studies.interval_parts import error_correlation

    e, v = np.array([0.3, 0.1]), np.array([0.04, 0.01])
    rows = pd.DataFrame({"trial": 0, "run": "r", "topic": ["t1", "t2"], "k": 1,
                         "census": False, "widens": False, "use": True, "f": 0.1,
                         "V": v / 2, "U": 0.0, "Vmodel": v / 2, "Vfit": 0.0, "b": 0.0,
                         "gap": 0.0, "Rpost": 1.0, "value": 0.5, "posterior": 0.5 + e,
                         "few_posterior": 0.5 + e, "truth": 0.5})
    got = error_correlation(rows).iloc[0]
    np.testing.assert_allclose(got.iloc[0], (e**2).mean() / v.mean(), rtol=1e-12)
    np.testing.assert_allclose(got.iloc[1], e.mean() ** 2 / (v.sum() / 4), rtol=1e-12)
    np.testing.assert_allclose(got.iloc[2], (e.sum() ** 2 - v.sum()) / (2 * np.sqrt(v.prod())),
                               rtol=1e-12)
