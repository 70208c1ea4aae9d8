"""The ratio-bias corrections of the engine's ratio estimates, at a given lam.

``bias``, for AP, R@k, Rprec and nDCG (:func:`design_bias`): taylor (the
first-order term, Cochran 1977, ch. 6; :func:`taylor_bias`), jackknife (stratified,
(1 - pi)-weighted or over the draws; Quenouille 1956, Jones 1974; :func:`ap_jackknife`),
taylor-jackknife (stratified only: the Taylor-corrected estimate less the jackknife's estimate
of the bias it keeps; :func:`ap_taylor_jackknife`), by-design (AP's default: taylor-jackknife on
stratified samples, jackknife over draws, taylor elsewhere), none. With a bias-aware interval
over draws, the gap between the jackknife's and the Taylor correction is what widens it
(:func:`_corrections`, :mod:`.values`). The jackknives recompute the estimate in closed form for every
replicate at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sampleval.errors import UsageError
from sampleval.estimation.engine.difference import Parts
from sampleval.estimation.engine.estimands import TAKE_CORRECTION, _contrast, _run_docs
from sampleval.estimation.engine.kernels import stratum_pair_terms
from sampleval.estimation.engine.replicates import (
    Corrected,
    _corrected,
    replicated,
    strata_jackknife,
)
from sampleval.estimation.engine.units import TopicData, Units, _frame_pairs, _pair_sums
from sampleval.estimation.engine.views import relevance
from sampleval.estimation.spec import EstimateSpec

GAPS = ("jackknife", "taylor")  # the two first-order corrections a draws interval compares
CORRECTED = ("AP", *TAKE_CORRECTION)  # the ratios corrected (``bias``)


def _corrections(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                 parts: Parts, bias: str, gap: bool) -> Corrected:
    """:func:`~sampleval.estimation.engine.values.ppi_values` for one topic at ``lam`` (``[2, n_runs]``), from its ``parts``:
    the estimate less the ``bias`` correction, its variance, and what widens the interval
    (taylor-jackknife's b, or with ``gap`` the jackknife's estimate less the
    Taylor-corrected one)."""
    zero = np.zeros(parts.value.shape)
    if bias == "taylor-jackknife" and spec.base == "AP":  # with its own variance
        return ap_taylor_jackknife(spec, level, data, lam)
    u = parts.u_y - lam[0][:, None] * parts.u_f[0] - lam[1][:, None] * parts.u_f[1]
    variance = data.units.forms([u])[0, 0]
    by_taylor = parts.value
    if bias in GAPS and parts.den is not None:
        by_taylor = parts.value - taylor_bias(data.units, u, parts.den[0]
                                              - lam[1][:, None] * parts.den[1])
    if not (spec.base == "AP" and (bias == "jackknife" or gap)):
        return Corrected(by_taylor if bias == "taylor" else parts.value, variance, zero,
                         np.ones(zero.shape, dtype=bool))
    jack = ap_jackknife(spec, level, data, lam)
    if bias == "jackknife":
        value = jack.value
        variance = np.where(np.isfinite(jack.variance), jack.variance, variance)
    else:
        value = by_taylor
    # what the two estimates of the first-order bias disagree on
    return Corrected(value, variance, jack.value - by_taylor if gap else zero, jack.possible)


def design_bias(spec: EstimateSpec, units: Units) -> str:
    """The ratio's correction for a topic's ``units``: the ``bias`` option (R@k's, Rprec's
    and nDCG's taylor or none); AP's with ``by-design`` resolved,
    taylor-jackknife on stratified samples (the ``ht`` form with strata), jackknife over
    draws, taylor on the other designs (module docstring, "Ratio bias")."""
    if spec.base != "AP":
        return str(spec.option("bias"))
    bias = str(spec.option("bias"))
    if bias != "by-design":
        return bias
    if units.strata is not None:
        return "taylor-jackknife"
    return "jackknife" if units.kind == "draws" else "taylor"


def taylor_bias(units: Units, u: np.ndarray, den: np.ndarray) -> np.ndarray:
    """The first-order bias of a ratio Q-hat = N-hat/R-hat of two unbiased (difference)
    estimates, (Q V(R-hat) - C(N-hat, R-hat))/R^2 = -C(u, R-hat)/R with u its linearised
    per-unit values (Cochran, Sampling Techniques, 1977, ch. 6; Sarndal, Swensson &
    Wretman 1992, sec. 7.3), estimated by the design's form of u and ``den``, R-hat's
    per-unit values over R-hat (``[n_runs, m]``); as ``AP~ht(bias=taylor)``."""
    return -np.nan_to_num(units.forms([u, den])[0, 1])


class Jackknife(NamedTuple):
    """:func:`ap_jackknife` for one topic (``[n_runs]`` each): the corrected estimate, the
    jackknife variance, and whether every replicate that enters keeps R-hat(lam) at or
    above the relevant documents it holds."""

    value: np.ndarray
    variance: np.ndarray
    possible: np.ndarray


def _possible(r_reps: np.ndarray, found: np.ndarray | float, enters: np.ndarray
              ) -> np.ndarray:
    """Per run (``r_reps [n_runs, k]``, replicates' R-hat): every replicate that ``enters``
    (``[k]``) has R-hat at or above the relevant documents it holds (``found``, ``[k]``)."""
    return ((r_reps >= found - 1e-9) | ~enters).all(axis=1)


def ap_jackknife(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                 pairs: np.ndarray | None = None) -> Jackknife:
    """AP-hat(lam) (``lam [2, n_runs]``, as :func:`~.difference.topic_estimate`) less the delete-one
    jackknife estimate of its ratio bias, and the jackknife variance of the replicates
    (``[n_runs]`` each; NaN variance where the sample has too few units), with whether
    every replicate's R-hat(lam) is possible (:class:`Jackknife`). Each replicate leaves one
    unit out and recomputes N-hat(lam)/R-hat(lam) in closed form, lam and the predictions' frame
    totals fixed: stratified samples (Jones, JASA 1974; Wolter 2007, sec. 4.5), other designs
    with inclusion probabilities ((1 - pi)-weighted), draws (Quenouille, Biometrika 1956). The
    three forms: docs/guide/estimators.md#the-jackknives-of-ap."""
    y, f = relevance(data.labels, level), relevance(data.predicted, level)
    frame_f = relevance(data.frame.predicted, level)
    units, ranks, cut = data.units, data.ranks, spec.cutoff
    n_runs, m = ranks.shape
    lam_n, lam_r = lam[0], lam[1]
    fixed_n = lam_n * _frame_pairs(data, frame_f, cut, level)  # the frame's parts
    fixed_r = lam_r * frame_f.sum()
    t = units.weight * (y[None, :] - lam_r[:, None] * f[None, :])  # R-hat's shares [r, m]

    def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        return np.divide(num, den, out=np.zeros(np.broadcast_shapes(num.shape, den.shape)),
                         where=den > 0)

    if units.strata is not None:
        value, variance, bias, possible = _stratified(spec, level, data, lam, pairs, False)
        return Jackknife(value - bias, variance, possible)
    found = y[data.distinct].sum()
    sums, shares = _pair_sums(np.stack([y, f]), np.stack([y * y, f]), ranks, units, cut,
                              data.geometry)
    n_s = sums[0] - lam_n * sums[1]
    share = shares[0] - lam_n[:, None] * shares[1]  # [r, m]
    r_s = t.sum(axis=1)
    value = ratio(n_s + fixed_n, r_s + fixed_r)
    if units.kind == "draws":
        if m < 3:
            return Jackknife(value, np.full(len(_per(value, pairs)), np.nan),
                             np.ones(n_runs, dtype=bool))
        within = (ranks > 0) if cut is None else (ranks > 0) & (ranks <= cut)
        inverse = np.divide(1.0, ranks, out=np.zeros(ranks.shape), where=within)
        own = units.weight * (y * y - lam_n[:, None] * f) * inverse  # W_k x_kk
        diagonal = own.sum(axis=1)
        r_reps = m / (m - 1) * (r_s[:, None] - t) + fixed_r[:, None]
        reps = ratio(m / (m - 1) * (diagonal[:, None] - own)
                     + m / (m - 2) * (n_s - diagonal)[:, None] - m / (m - 2) * (share - own)
                     + fixed_n[:, None], r_reps)
        mean = reps.mean(axis=1)
        _, doc_of, draws = np.unique(units.index, return_inverse=True, return_counts=True)
        alone = draws[doc_of] == 1  # the draw's document leaves the replicate with it
        spread = _per(reps, pairs) - _per(mean, pairs)[:, None]
        return Jackknife(value - (m - 1) * (mean - value),
                         (m - 1) / m * (spread ** 2).sum(axis=1),
                         _possible(r_reps, found - np.where(alone, y, 0.0),
                                   np.ones(m, dtype=bool)))
    pi = 1.0 / units.weight
    den = r_s + fixed_r
    rest = den[:, None] - t
    reps = ratio(n_s[:, None] + fixed_n[:, None] - share, rest)
    moved = reps - value[:, None]
    step = np.where(rest > 0, moved + ratio(share - value[:, None] * t, den[:, None]), 0.0)
    return Jackknife(value - ((1.0 - pi) * step).sum(axis=1),
                     ((1.0 - pi) * _per(moved, pairs)**2).sum(axis=1), _possible(rest, found - y, pi < 1.0))


def ap_double_jackknife(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                        pairs: np.ndarray | None = None) -> np.ndarray:
    """The stratified delete-one jackknife variance of the jackknife-corrected AP-hat(lam)
    that :func:`ap_jackknife` reports (``bias=jackknife``), ``[n_runs]`` (with ``pairs``, of
    each pair's difference): the double jackknife (Efron & Tibshirani 1993, sec. 10.5 and
    11.4). Replicate j is that corrected estimator on the sample without judged document j,
    its stratum h at n_h - 1, the two-document rule of :func:`_taylor_replicates` included.
    A unit leaves with its label at 0 (its own replicates are then its stratum's others',
    so it counts as one of them), every replicate of one stratum in one batched call."""
    assert data.units.strata is not None
    stratum, sizes, n_sampled = data.units.strata
    counts = n_sampled.astype(np.float64)
    y = relevance(data.labels, level)
    n_runs, m = data.ranks.shape
    width = n_runs if pairs is None else len(pairs)  # the strata that do not enter stay 0
    reps, others = np.zeros((width, m)), np.zeros((width, len(sizes)))
    members = np.bincount(stratum, minlength=len(sizes))
    for h in np.flatnonzero(replicated(counts, sizes) & (members > 0)):
        units = np.flatnonzero(stratum == h)
        labels = np.repeat(y[None, :], len(units) + 1, axis=0)  # the last: h's others
        labels[np.arange(len(units)), units] = 0.0
        less = n_sampled.copy()
        less[h] -= 1
        batch = (np.tile(np.arange(n_runs), len(labels)), np.repeat(labels, n_runs, axis=0),
                 less)
        theta, first, rest, _ = _taylor_replicates(spec, level, data, lam, False, batch)
        bias = strata_jackknife(first, rest, theta, stratum, sizes, less.astype(np.float64))[1]
        corrected = _per((theta - bias).reshape(len(labels), n_runs).T, pairs)
        reps[:, units], others[:, h] = corrected[:, :-1], corrected[:, -1]
    return strata_jackknife(reps, others, np.zeros(width), stratum, sizes, counts)[0]


def _per(values: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """Per run (``[n_runs, ...]``), or with ``pairs`` (``[P, 2]`` run indices) each pair's
    difference ``values[a] - values[b]``."""
    return values if pairs is None else _contrast(values, pairs)


def ap_taylor_jackknife(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                        pairs: np.ndarray | None = None) -> Corrected:
    """The Taylor-corrected AP-hat(lam) theta_T (``bias=taylor``, :func:`taylor_bias`) less the
    stratified delete-one jackknife's estimate of its remaining bias, with the replicates'
    variance, as ``AP~ht(bias=taylor-jackknife)`` (Quenouille 1956, Jones 1974, Wolter 2007,
    sec. 4.5): each replicate recomputes AP-hat(lam) *and* its Taylor term, lam (``[2,
    n_runs]``) and the predictions' frame totals held; in closed form, all replicates at once
    (the per-stratum pair sums compiled, :mod:`sampleval.estimation.engine.kernels`).
    ``possible`` says per run whether every replicate that enters keeps R-hat' at or above the
    relevant documents it holds. Stratified samples only (the ``ht`` form on stratified SRS);
    other designs raise a UsageError. The estimator, its closed form and the rule for a stratum
    of two judged documents: docs/guide/estimators.md#the-jackknives-of-ap."""
    units = data.units
    if units.strata is None:
        raise UsageError("bias=taylor-jackknife needs a stratified sample (uniform, strata, "
                         f"stratified, a census), not units of the {units.kind} form "
                         "without strata")
    value, variance, remaining, possible = _stratified(spec, level, data, lam, pairs, True)
    return Corrected(value - remaining, variance, remaining, possible)


def _stratified(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                pairs: np.ndarray | None, taylor: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The stratified delete-one jackknife of AP-hat(lam) (``taylor``: of theta_T) on a
    topic whose units carry strata: the estimate, the jackknife variance (of the pairs'
    differences with ``pairs``), the jackknife's bias estimate b and ``possible``
    (:func:`_taylor_replicates`)."""
    assert data.units.strata is not None
    stratum, sizes, n_sampled = data.units.strata
    value, reps, others, possible = _taylor_replicates(spec, level, data, lam, taylor)
    counts = n_sampled.astype(np.float64)
    variance, bias = strata_jackknife(reps, others, value, stratum, sizes, counts)
    if pairs is not None:  # the jackknife of the pairs' differences, replicate by replicate
        variance = strata_jackknife(_per(reps, pairs), _per(others, pairs),
                                    _per(value, pairs), stratum, sizes, counts)[0]
    return value, variance, bias, possible


def _taylor_replicates(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                       taylor: bool = True,
                       batch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`ap_taylor_jackknife`'s theta_T (``[n_runs]``; without ``taylor`` AP-hat(lam),
    the ratio alone, as :func:`ap_jackknife` takes it), its replicates without each unit
    (``[n_runs, m]``) and without a judged document that is not a unit (``[n_runs, H]``, only
    stratum h's weights change), and per run whether every replicate that enters the
    jackknife keeps R-hat(lam) at or above the relevant documents it holds. ``batch`` =
    (rows, labels, n_h): the same on other samples of the topic's units, row b the run
    ``rows[b]`` with the relevance ``labels[b]`` (``[B, m]``) and n_h judged documents per
    stratum (what :func:`ap_double_jackknife` re-estimates)."""
    units = data.units
    assert units.strata is not None
    y, f = relevance(data.labels, level), relevance(data.predicted, level)
    frame_f = relevance(data.frame.predicted, level)
    cut, ranks = spec.cutoff, data.ranks
    stratum, sizes, n_sampled = units.strata
    fixed_n = lam[0] * _frame_pairs(data, frame_f, cut, level)
    y_rows = np.broadcast_to(y, ranks.shape)
    if batch is not None:
        rows, y_rows, n_sampled = batch
        ranks, lam, fixed_n = ranks[rows], lam[:, rows], fixed_n[rows]
    n_runs, m = ranks.shape
    n_strata = len(sizes)
    lam_n, lam_r = lam[0], lam[1]
    fixed_r = lam_r * frame_f.sum()
    r = y_rows - lam_r[:, None] * f[None, :]  # R's unit values [runs, m], weight a_g

    # each run's documents in rank order
    docs = _run_docs(ranks, cut)
    rank = docs.rank[..., 0].astype(np.float64)
    order = np.argsort(np.where(rank > 0, rank, np.inf), axis=1, kind="stable")
    doc = np.take_along_axis(docs.doc, order, axis=1)
    real = np.take_along_axis(rank > 0, order, axis=1)
    inverse = np.divide(1.0, np.take_along_axis(rank, order, axis=1),
                        out=np.zeros(real.shape), where=real)
    y_k = np.where(real, np.take_along_axis(y_rows, doc, axis=1), 0.0)
    f_k = np.where(real, f[doc], 0.0)
    r_k = np.where(real, np.take_along_axis(r, doc, axis=1), 0.0)

    groups = np.where(real, stratum[doc], 0)
    x_kk = (y_k * y_k - lam_n[:, None] * f_k) * inverse
    xd, xd_r = np.zeros((2, n_runs, n_strata))  # X_kk and r_k X_kk summed by stratum
    np.add.at(xd, (np.arange(n_runs)[:, None], groups), x_kk)
    np.add.at(xd_r, (np.arange(n_runs)[:, None], groups), r_k * x_kk)
    r_g, rr_g = np.zeros((2, n_runs, n_strata))  # R's sums of r and r^2 by stratum
    np.add.at(r_g.T, stratum, r.T)
    np.add.at(rr_g.T, stratum, (r * r).T)

    def design(counts: np.ndarray) -> tuple[np.ndarray, ...]:
        """a_g, N_g (N_g - 1)/(n_g (n_g - 1)) and the HT form's (1 - f_g) and 1/(n_g - 1)
        at ``counts`` (``[H]``)."""
        a = np.divide(sizes, counts, out=np.zeros(counts.shape), where=counts > 0)
        within = np.divide(sizes * (sizes - 1.0), counts * (counts - 1.0),
                           out=np.zeros(counts.shape), where=counts > 1)
        fpc = np.divide(sizes - counts, sizes, out=np.zeros(counts.shape), where=sizes > 0)
        inv = np.divide(1.0, counts - 1.0, out=np.zeros(counts.shape), where=counts > 1)
        return a, within, fpc, inv

    # the HT form per stratum, (1 - f_g)[sum_k a_k b_k - (A_g B_g - sum_k a_k b_k)/(n_g - 1)]:
    # C(iN, iR)'s term is kappa_g SNR_g - beta_g SN_g R_g, V(iR)'s fpc a^2 ((1 + inv) RR - inv R^2)
    counts = n_sampled.astype(np.float64)
    a, within, fpc, inv = design(counts)
    alpha, beta = fpc * a * (1.0 + inv), fpc * a * inv
    kappa = alpha * a  # the other strata's terms move by step_h (kappa_g T_gh - ...)
    weights = beta * a * r_g  # [r, H]
    pair = np.outer(a, a)  # W_gg'
    diagonal = np.arange(n_strata)
    pair[diagonal, diagonal] = within
    # U_gg' = sum_{k in g, l in g', l != k} Z_kl and T_gg' (weighted by r_k), contracted
    # (sum_g' W_gg' U_gg' = s_u, U a, a U, ...), and Z's and Zc's dot products per document
    # (compiled: :func:`.kernels.stratum_pair_terms`)
    by_group, by_doc = stratum_pair_terms(y_k, f_k, r_k, inverse, groups, lam_n, a, kappa,
                                          weights, pair)
    s_u, s_t, u_a, t_a, a_u, kappa_t, weights_u, u_own, t_own = by_group
    z_a, z_w, z_own, zc_kappa, zc_own = by_doc
    sn, snr = s_u + a * xd, s_t + a * xd_r  # SN_g, SNR_g [r, H]
    c_terms = alpha * snr - beta * sn * r_g  # [r, H]
    v_terms = fpc * a * a * ((1.0 + inv) * rr_g - inv * r_g * r_g)
    r_sample = (a * r_g).sum(axis=1)
    n_sample = (a * xd).sum(axis=1) + 0.5 * s_u.sum(axis=1)
    value = _corrected(n_sample + fixed_n, r_sample + fixed_r, v_terms.sum(axis=1),
                       c_terms.sum(axis=1), taylor)

    # stratum h at n_h - 1, no document left out ([r, h]). Only the weights involving h
    # change: a'_h, W'_gh = a_g a'_h (g != h) and W'_hh; so for g != h, SN'_g = SN_g + a_g
    # (a'_h - a_h) U_gh (SNR'_g with T), and for g = h, SN'_h = a'_h (sum_g' a_g' U_hg' -
    # a_h U_hh) + W'_hh U_hh + a'_h Xd_h
    a_less, within_less, fpc_less, inv_less = design(counts - 1.0)
    step = a_less - a
    sn_less = a_less * (u_a - a * u_own) + within_less * u_own + a_less * xd
    snr_less = a_less * (t_a - a * t_own) + within_less * t_own + a_less * xd_r
    moved = kappa_t - weights_u  # [r, h]
    moved -= kappa * t_own - weights * u_own  # g = h is not among them
    c_rest = c_terms.sum(axis=1)[:, None] - c_terms + step * moved  # sum over g != h
    v_rest = v_terms.sum(axis=1)[:, None] - v_terms
    r_rest = r_sample[:, None] - a * r_g
    n_less = (n_sample[:, None] + step * xd + 0.5 * (
        step * (a_u - a * u_own) - s_u + sn_less - a_less * xd))

    def own_terms(sn_h: np.ndarray, snr_h: np.ndarray, rg_h: np.ndarray, rrg_h: np.ndarray,
                  h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stratum h's terms of C(iN, iR) and V(iR) at n_h - 1."""
        a_h, fpc_h, inv_h = a_less[h], fpc_less[h], inv_less[h]
        return (fpc_h * a_h * ((1.0 + inv_h) * snr_h - inv_h * sn_h * rg_h),
                fpc_h * a_h * a_h * ((1.0 + inv_h) * rrg_h - inv_h * rg_h * rg_h))

    c_h, v_h = own_terms(sn_less, snr_less, r_g, rr_g, diagonal)
    # a stratum of two judged documents is at one in its replicates, which cannot estimate
    # the sum over its pairs: that is held at the full sample's estimate (its expectation does
    # not depend on n_h), not set to 0
    held_n = np.where((counts == 2) & (counts < sizes), 0.5 * within * u_own, 0.0)  # [r, H]
    others = _corrected(n_less + held_n + fixed_n[:, None],
                        r_rest + a_less * r_g + fixed_r[:, None], v_rest + v_h, c_rest + c_h,
                        taylor)

    # leaving out unit j of stratum h also takes its row and column of pairs: from stratum
    # g != h, W'_hg Z_jg in SN'_g and W'_hg sum_l r_l Z_lj in SNR'_g, W'_hg = a'_h a_g; so
    # the other strata's terms lose a'_h (sum_g kappa_g Zc_jg - beta_g a_g R_g Z_jg), dot
    # products taken where the run retrieved j ([r, K]; elsewhere 0)
    h_pos = groups  # [r, K]
    row_dot = a_less[h_pos] * (z_a - a[h_pos] * z_own) + within_less[h_pos] * z_own
    d_col = a_less[h_pos] * (zc_kappa - kappa[h_pos] * zc_own)
    d_row = a_less[h_pos] * (z_w - np.take_along_axis(weights, h_pos, axis=1) * z_own)

    def by_unit(values: np.ndarray) -> np.ndarray:  # [r, K] -> [r, m], 0 where not retrieved
        out = np.zeros((n_runs, m))
        out[np.nonzero(real)[0], doc[real]] = values[real]
        return out

    row_dot, d_col, d_row, z_own, zc_own, x_j = (by_unit(v) for v in (
        row_dot, d_col, d_row, z_own, zc_own, x_kk))
    h = stratum
    taken = row_dot + a_less[h] * x_j  # what j takes from N-hat and from SN'_h
    c_own, v_own = own_terms(sn_less[:, h] - taken - within_less[h] * z_own,
                             snr_less[:, h] - r * taken - within_less[h] * zc_own,
                             r_g[:, h] - r, rr_g[:, h] - r * r, h)
    r_reps = r_rest[:, h] + a_less[h] * (r_g[:, h] - r) + fixed_r[:, None]
    reps = _corrected(n_less[:, h] - taken + held_n[:, h] + fixed_n[:, None], r_reps,
                      v_rest[:, h] + v_own, c_rest[:, h] - d_col + d_row + c_own, taylor)
    # the ht form's units are distinct documents
    found = y_rows[:, data.distinct].sum(axis=1, keepdims=True)
    used = replicated(counts, sizes)
    possible = (_possible(r_reps, found - y_rows, used[h])
                & _possible(r_rest + a_less * r_g + fixed_r[:, None], found, used))
    return value, reps, others, possible
