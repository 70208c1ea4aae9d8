"""Delete-one replicates of AP~ht's *corrected* estimates (issue 9): the jackknife applied
on top of a bias correction, for its bias (``AP~ht(bias=taylor-jackknife)``) and for its
variance (``AP~ht(bias=jackknife)``'s ``var=jackknife``, a double jackknife).

Why: after the Taylor correction (:func:`~sampleval.estimators.horvitz_thompson._ratio`,
Cochran 1977, ch. 6: the ratio's bias to order 1/n, estimated from the sample) AP-hat keeps a
bias of the next order, which dominates the miss of the mean's intervals on small
stratified samples (docs/methods.md, "Residual bias after the Taylor correction").

- ``taylor-jackknife``: the Taylor-corrected estimate theta_T less the stratified jackknife's
  estimate of *its* bias (Quenouille 1956; Jones 1974; Wolter 2007, sec. 4.5),
  b = sum_h (1 - n_h/N_h) (n_h - 1) (mean_h theta_T(.) - theta_T), over the replicates that
  ``replicate_jackknife`` already computes for theta_T's variance (each recomputes AP-hat and
  its Taylor correction without one judged document, stratum h's design at n_h - 1). A
  jackknife bias estimate removes the O(1/n) term of a smooth estimator's bias; theta_T has
  none left in expectation, so b estimates what remains (the O(1/n) error of the estimated
  correction and the higher-order terms). Its variance is the replicates' jackknife
  variance of theta_T (the jackknife-corrected estimate has the same first-order variance,
  Efron & Tibshirani 1993, sec. 10.5). On designs with independent inclusions (Poisson,
  with-replacement rounds) the replicates are (1 - pi_k)-weighted, whose first-order part
  does not cancel as Quenouille's equal-weight one does; as for ``AP~ht(bias=jackknife)``
  there (:func:`~sampleval.estimators.horvitz_thompson.average_precision_jackknife`) it is
  taken out, b = sum_k (1 - pi_k) [theta_T(k) - theta_T + (c_k - AP-hat x_k)/R-hat] (the
  Taylor term is O(1/n), so AP-hat's first-order part is the estimate's).
- ``double``: the delete-one jackknife variance of the jackknife-corrected AP-hat
  (``stratified_average_precision(correct=True)``, ``average_precision_jackknife(
  correct=True)``), each replicate re-running the corrected estimator without one judged
  document (Efron & Tibshirani 1993, sec. 10.5 and 11.4, the jackknife-after-jackknife).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sampleval.core.inclusion import stratified_inclusion
from sampleval.estimators.horvitz_thompson import (
    HTEstimate,
    ap_terms,
    average_precision,
    average_precision_jackknife,
    stratified_average_precision,
)

# (documents deleted, -1 for one judged document with y = 0; n_h after the deletion) ->
# the replicate estimates ``[len(rows), n_runs]``
Replicates = Callable[[np.ndarray, np.ndarray], np.ndarray]


def stratified_replicates(stratum: np.ndarray, sizes: np.ndarray, n_sampled: np.ndarray,
                          replicates: Replicates, value: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The stratified delete-one jackknife's variance and bias estimate of an estimator with
    value ``value`` (``[n_runs]``) from its replicates: per stratum h (n_h >= 2, not a
    census), ``replicates(rows, less)`` re-estimates without each document of ``rows`` (the
    judged documents with y != 0 of h; -1 stands for the n_h - m_h judged with y = 0, which
    share one replicate), ``less`` n_sampled with h's count one fewer. Returns
    (sum_h (1 - f_h) (n_h - 1)/n_h sum_j (theta_(hj) - mean_h)^2,
     sum_h (1 - f_h) (n_h - 1) (mean_h - theta)), f_h = n_h/N_h (Wolter 2007, sec. 4.5)."""
    variance = np.zeros(len(value))
    bias = np.zeros(len(value))
    for h, (big_n, n_h) in enumerate(zip(sizes, n_sampled, strict=True)):
        if n_h < 2 or n_h >= big_n:
            continue
        members = np.flatnonzero(stratum == h)
        rest = int(n_h) - len(members)
        rows = np.r_[members, [-1] if rest else []].astype(np.int64)
        less = n_sampled.astype(np.float64)
        less[h] -= 1
        reps = replicates(rows, less)
        weight = np.r_[np.ones(len(members)), [rest] if rest else []]
        mean = weight @ reps / n_h
        fpc = 1.0 - n_h / big_n
        variance += fpc * (n_h - 1) / n_h * (weight @ (reps - mean) ** 2)
        bias += fpc * (n_h - 1) * (mean - value)
    return variance, bias


def taylor_jackknife(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                     strata: tuple[np.ndarray, np.ndarray, np.ndarray],
                     pairs: np.ndarray | None = None) -> HTEstimate:
    """``AP~ht(bias=taylor-jackknife)`` on a stratified sample (module docstring): the
    Taylor-corrected AP-hat less the stratified jackknife's estimate of its remaining bias,
    with the jackknife variance of the Taylor-corrected estimate; ``[n_runs]`` each.
    ``strata`` = (each document's stratum, N_h, n_h); ``y`` the judged documents with
    y != 0, ``ranks`` ``[n_runs, m]``; ``pairs``: per pair (a, b) of runs, the difference
    and its variance, from the differences of the replicates."""
    stratum, sizes, n_sampled = strata
    pi, joint = stratified_inclusion(stratum, sizes, n_sampled)
    value = _per(average_precision(y, pi, joint, ranks, cutoff, paper, True).value, pairs)
    if len(y) == 0:
        return HTEstimate(value, np.zeros_like(value))

    def replicates(rows: np.ndarray, less: np.ndarray) -> np.ndarray:
        batch = np.repeat(y[None, :], len(rows), axis=0)
        deleted = rows >= 0
        batch[np.flatnonzero(deleted), rows[deleted]] = 0.0
        p, pj = stratified_inclusion(stratum, sizes, less)
        return _per(average_precision(batch, p, pj, ranks, cutoff, paper, True).value, pairs)

    variance, bias = stratified_replicates(stratum, sizes, n_sampled, replicates, value)
    return HTEstimate(value - bias, variance)


def taylor_jackknife_independent(y: np.ndarray, ranks: np.ndarray, cutoff: int | None,
                                 paper: bool, pi: np.ndarray, pi_joint: np.ndarray,
                                 pairs: np.ndarray | None = None) -> HTEstimate:
    """``AP~ht(bias=taylor-jackknife)`` on a design with independent inclusions (module
    docstring): theta_T less sum_k (1 - pi_k) [theta_T(k) - theta_T + (c_k - AP-hat x_k)/
    R-hat], c_k document k's share of AP-hat's numerator, x_k = y_k/pi_k; the variance
    sum_k (1 - pi_k) (theta_T(k) - theta_T)^2 (``replicate_jackknife``'s)."""
    value = average_precision(y, pi, pi_joint, ranks, cutoff, paper, True).value
    m = len(y)
    if m == 0:
        return HTEstimate(_per(value, pairs), np.zeros_like(_per(value, pairs)))
    batch = np.repeat(y[None, :], m, axis=0)
    batch[np.arange(m), np.arange(m)] = 0.0
    reps = average_precision(batch, pi, pi_joint, ranks, cutoff, paper, True).value  # [m, runs]
    terms = ap_terms(y, pi, pi_joint, ranks, cutoff, paper)
    share = np.zeros((ranks.shape[0], m))  # c_k per run and document
    kept = terms.docs.rank[..., 0] > 0
    rows = np.nonzero(kept)[0]
    np.add.at(share, (rows, terms.docs.doc[kept]), terms.contribution[..., 0][kept])
    x = y / pi
    r_hat = float(x.sum())
    plain = terms.num[:, 0] / r_hat if r_hat > 0 else np.zeros(ranks.shape[0])
    linear = (share - plain[:, None] * x[None, :]).T / r_hat if r_hat > 0 else np.zeros(
        (m, ranks.shape[0]))  # [m, runs]
    moved = _per(reps, pairs) - _per(value, pairs)
    weight = (1.0 - pi)[:, None]
    bias = (weight * (moved + _per(linear, pairs))).sum(axis=0)
    return HTEstimate(_per(value, pairs) - bias, (weight * moved**2).sum(axis=0))


def double_jackknife(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                     strata: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                     pi: np.ndarray, pi_joint: np.ndarray,
                     pairs: np.ndarray | None = None) -> HTEstimate:
    """``AP~ht(bias=jackknife)`` with the delete-one jackknife variance of the
    jackknife-corrected estimate itself (module docstring), ``[n_runs]`` each: stratified
    (``strata`` = (stratum, N_h, n_h)) or, without strata, (1 - pi_k)-weighted over the
    judged documents (deleting one with y = 0 changes nothing there); ``pairs`` as in
    :func:`taylor_jackknife`."""
    if strata is None:
        value = _per(average_precision_jackknife(y, pi, pi_joint, ranks, cutoff, paper,
                                                 True).value, pairs)
        variance = np.zeros_like(value)
        for k in range(len(y)):
            keep = np.arange(len(y)) != k
            rep = average_precision_jackknife(y[keep], pi[keep], pi_joint[np.ix_(keep, keep)],
                                              ranks[:, keep], cutoff, paper, True).value
            variance += (1.0 - pi[k]) * (_per(rep, pairs) - value) ** 2
        return HTEstimate(value, variance)
    stratum, sizes, n_sampled = strata
    value = _per(stratified_average_precision(y, stratum, sizes, n_sampled, ranks, cutoff,
                                              paper, True).value, pairs)

    def replicates(rows: np.ndarray, less: np.ndarray) -> np.ndarray:
        out = np.empty((len(rows), len(value)))
        for i, j in enumerate(rows):
            keep = np.arange(len(y)) != j
            out[i] = _per(stratified_average_precision(
                y[keep], stratum[keep], sizes, less.astype(np.int64), ranks[:, keep], cutoff,
                paper, True).value, pairs)
        return out

    variance, _ = stratified_replicates(stratum, sizes, n_sampled, replicates, value)
    return HTEstimate(value, variance)


def _per(values: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """Per run (``[..., n_runs]``), or per pair (a, b) of runs their difference."""
    return values if pairs is None else values[..., pairs[:, 0]] - values[..., pairs[:, 1]]
