"""The difference (model-assisted) estimate of every measure as a function of the predictions'
coefficient lam, with its linearised per-unit values (:class:`Parts`).

With predictions f_i of every frame document (Sarndal, Swensson & Wretman 1992, ch. 6;
"prediction-powered inference", Angelopoulos et al., Science 2023; for IR measures
Oosterhuis et al., KDD 2024)

    T-hat(lam) = lam sum_{i in U} w_i f_i + sum_{k in S} W_k w_k (y_k - lam f_k)

over the units S of :mod:`.units`. For any lam fixed before the sample E[T-hat(lam)] = T
whatever the predictions: they only move the variance; with predictions all 0 (or lam = 0)
it is the plain design-based estimate (``~ht`` in the ``ht`` form, ``~hh`` in the ``draws``
form: tests/contracts/test_equivalences.py). Ratio measures (AP, R@k, Rprec, nDCG) are
ratios of such estimates, linearised (Taylor; Sarndal et al. 1992, ch. 5) into per-unit
values u = u^y - lam u^f. A ratio whose denominator estimate is impossible (below what the
sample shows) is flagged undefined (:attr:`Parts.defined`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from sampleval.estimation.engine.estimands import ideal_dcg, rank_cut
from sampleval.estimation.engine.units import (
    TopicData,
    _frame_pairs,
    _linear,
    _pair_sums,
    is_graded,
    is_total,
)
from sampleval.estimation.engine.views import gain, rank_coefficients, relevance
from sampleval.estimation.spec import EstimateSpec


class Parts(NamedTuple):
    """One topic's estimate per run; the linearised per-unit values of the labels' part
    (``u_y``, ``[n_runs, m]``) and of the predictions' parts in the numerator and in the
    denominator (``u_f``, ``[2, n_runs, m]``; zero in the denominator for linear measures):
    the variance is form(u_y - lam_N u_f[0] - lam_R u_f[1]); and whether the estimate is
    defined (a ratio's denominator estimate is positive and not below what the sample
    already shows)."""

    value: np.ndarray
    u_y: np.ndarray
    u_f: np.ndarray
    defined: np.ndarray
    den: np.ndarray | None = None  # a ratio's R per-unit values over R: labels', predictions'


def _ratio(numerator: np.ndarray, denominator: np.ndarray, num_y: np.ndarray,
           num_f: np.ndarray, den_y: np.ndarray, den_f: np.ndarray,
           possible: np.ndarray) -> Parts:
    """Q = N/R per run (0 where R <= 0) and the linearised u_y = (iota^N_y - Q iota^R_y)/R,
    u_f = (iota^N_f, -Q iota^R_f)/R; defined where R is positive and not below its known
    lower bound (``possible``), whatever Q (module docstring: a Q outside [0, 1] is kept)."""
    ok = denominator > 0
    q = np.divide(numerator, denominator, out=np.zeros(numerator.shape), where=ok)
    scale = np.where(ok, 1.0 / np.where(ok, denominator, 1.0), 0.0)[:, None]
    u_f = np.stack(np.broadcast_arrays(num_f * scale, -q[:, None] * den_f * scale))
    return Parts(q, (num_y - q[:, None] * den_y) * scale, u_f, ok & possible,
                 np.stack(np.broadcast_arrays(den_y * scale, den_f * scale)))


Estimate = Callable[[np.ndarray], Parts]


def topic_estimate(spec: EstimateSpec, level: float, data: TopicData,
                   rounded: bool = True) -> Estimate:
    """The estimate of ``spec`` for every run of one topic as a function of lam
    (``[2, n_runs]``: the predictions' coefficients in the numerator and in the denominator
    of a ratio; a linear measure uses the first), with its linearised per-unit values
    (:class:`Parts`). The sums that do not depend on lam are made once, here. ``rounded``:
    nDCG's ideal DCG from the grade counts rounded as sample_eval rounds them, else from the
    estimated counts themselves (importance sampling's plug-in, Schnabel et al. 2016, sec. 3)."""
    graded = is_graded(spec.base)
    value: Callable[[np.ndarray], np.ndarray] = (
        gain if graded else (lambda v: relevance(v, level)))
    y, f, frame_f = value(data.labels), value(data.predicted), value(data.frame.predicted)
    units, ranks, frame_ranks, cut = data.units, data.ranks, data.frame.ranks, spec.cutoff
    n_runs = ranks.shape[0]

    def frame_total(name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """A total of the predictions over the frame, made once per frame and measure."""
        key = (name, spec.base, cut, level)
        if key not in data.frame.totals:
            data.frame.totals[key] = compute()
        return data.frame.totals[key]

    if is_total(spec.base):
        coef = rank_coefficients(spec.base, ranks, cut)
        total_y, share_y = _linear(coef, y, units)
        total_f, share_f = _linear(coef, f, units)
        frame_linear = frame_total("linear", lambda: (
            rank_coefficients(spec.base, frame_ranks, cut) * frame_f).sum(axis=-1))
        u_f = np.stack([share_f, np.zeros(share_f.shape)])
        defined = np.ones(n_runs, dtype=bool)
        return lambda lam: Parts(total_y - lam[0] * (total_f - frame_linear), share_y, u_f,
                                 defined)
    if spec.base == "nDCG":
        return _ndcg(y, f, frame_f, data, cut, rounded)
    r_y, den_y = _linear(1.0, y, units)  # R: the same for every run
    r_f, den_f = _linear(1.0, f, units)
    frame_r = frame_f.sum()
    found = y[data.distinct].sum()  # the relevant documents judged: R is at least that
    if spec.base == "AP":
        key = ("AP", cut, level)
        if key not in data.label_sums:  # the same for every predictor
            sums, shares = _pair_sums(y[None], (y * y)[None], ranks, units, cut, data.geometry)
            data.label_sums[key] = (sums[0], shares[0])
        n_y, num_y = data.label_sums[key]
        if f.any():
            (n_f,), (num_f,) = _pair_sums(f[None], f[None], ranks, units, cut, data.geometry)
        else:  # no predictions: their pair sums are 0
            n_f, num_f = np.zeros(n_runs), np.zeros(ranks.shape)
        frame_n = _frame_pairs(data, frame_f, cut, level)
    elif spec.base == "R":
        top = (ranks > 0) & (ranks <= cut)
        (n_y, num_y), (n_f, num_f) = _linear(top, y, units), _linear(top, f, units)
        frame_n = frame_total("top", lambda: (
            ((frame_ranks > 0) & (frame_ranks <= cut)) * frame_f).sum(axis=-1))

    def at(lam: np.ndarray) -> Parts:
        r_hat = r_y - lam[1] * (r_f - frame_r)
        if spec.base == "Rprec":  # the relevant retrieved within k = floor(R-hat [+ 0.5])
            k = rank_cut(r_hat + (0.5 if spec.option("cut") == "round" else 0.0))[:, None]
            top = (ranks > 0) & (ranks <= k)
            (n_y_, num_y_), (n_f_, num_f_) = _linear(top, y, units), _linear(top, f, units)
            frame_n_ = (((frame_ranks > 0) & (frame_ranks <= k)) * frame_f).sum(axis=-1)
        else:
            n_y_, num_y_, n_f_, num_f_, frame_n_ = n_y, num_y, n_f, num_f, frame_n
        return _ratio(n_y_ - lam[0] * (n_f_ - frame_n_), r_hat, num_y_, num_f_, den_y, den_f,
                      r_hat >= found - 1e-9)
    return at


def _ndcg(y: np.ndarray, f: np.ndarray, frame_f: np.ndarray, data: TopicData,
          cutoff: int | None, rounded: bool = True) -> Estimate:
    """nDCG = DCG-hat / IDCG(N-hat_g, rounded if ``rounded``): each grade's count a difference
    estimate, the predicted indicator of grade g linear in f between integer grades."""
    units = data.units
    coef = rank_coefficients("DCG", data.ranks, cutoff)
    d_y, num_y = _linear(coef, y, units)
    d_f, num_f = _linear(coef, f, units)
    frame_d = (rank_coefficients("DCG", data.frame.ranks, cutoff) * frame_f).sum(axis=-1)
    top = float(np.ceil(max(f.max(initial=0.0), frame_f.max(initial=0.0))))
    grades = np.union1d(y[y > 0], np.arange(1.0, top + 1.0))[::-1]  # decreasing
    is_grade = (y[None, :] == grades[:, None]).astype(np.float64)  # [G, m]
    share = _grade_shares(f, grades)
    count_y = (is_grade * units.weight).sum(axis=1)[:, None]
    count_f = ((share * units.weight).sum(axis=1) - _grade_shares(frame_f, grades).sum(axis=1)
               )[:, None]
    found = is_grade[:, data.distinct].sum(axis=1)[:, None]  # each grade judged so far
    n_runs = data.ranks.shape[0]

    def at(lam: np.ndarray) -> Parts:
        counts = count_y - lam[1][None, :] * count_f  # [G, n_runs]
        possible = (counts >= found - 1e-9).all(axis=0)
        if rounded:  # as sample_eval rounds
            counts = np.maximum(np.floor(counts + 0.5), 0.0)
        if len(grades):
            ideal, slope = ideal_dcg(grades, counts, cutoff)  # [n_runs], [G, n_runs]
        else:
            ideal, slope = np.zeros(n_runs), np.zeros((0, n_runs))
        den_y = (slope.T @ is_grade) * units.weight
        den_f = (slope.T @ share) * units.weight
        return _ratio(d_y - lam[0] * (d_f - frame_d), ideal, num_y, num_f, den_y, den_f,
                      possible)
    return at


def _grade_shares(values: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """``[G, n]``: how much of grade g each value predicts, linear between integer grades
    (1.3: 0.7 of grade 1, 0.3 of grade 2; a value below 1 that share of grade 1; above the
    top grade, all of it). Only integer grades receive shares."""
    top = grades.max(initial=0.0)
    clipped = np.minimum(values, top)
    low = np.floor(clipped)
    frac = clipped - low
    return ((grades[:, None] == low[None, :]) * (1.0 - frac)
            + (grades[:, None] == low[None, :] + 1.0) * frac)


def predictions_alone(spec: EstimateSpec, level: float, data: TopicData) -> np.ndarray:
    """The measure of the predictions alone, with no sample (every label replaced by its
    prediction; biased wherever they are): ``[n_runs]``, for contrast in experiments."""
    blind = replace(data, labels=data.predicted, label_sums={})
    return topic_estimate(spec, level, blind)(np.ones((2, data.ranks.shape[0]))).value
