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

from typing import NamedTuple

import numpy as np

from sampleval.core.inclusion import stratified_inclusion
from sampleval.estimators.horvitz_thompson import (
    HTEstimate,
    ap_terms,
    average_precision,
    average_precision_jackknife,
    general_replicates,
    stratified_average_precision,
    stratified_replicates,
    stratum_jackknife,
    stratum_rows,
)


class Corrected(NamedTuple):
    """The Taylor-corrected AP-hat less the jackknife's estimate of its remaining bias
    (``value``), the jackknife variance of the Taylor-corrected estimate (``variance``) and
    that bias estimate (``bias``: the Taylor-corrected estimate is ``value + bias``), each
    ``[n_runs]`` (or per pair)."""

    value: np.ndarray
    variance: np.ndarray
    bias: np.ndarray


def taylor_jackknife(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                     strata: tuple[np.ndarray, np.ndarray, np.ndarray],
                     pairs: np.ndarray | None = None) -> Corrected:
    """``AP~ht(bias=taylor-jackknife)`` on a stratified sample (module docstring): the
    Taylor-corrected AP-hat less the stratified jackknife's estimate of its remaining bias,
    with the jackknife variance of the Taylor-corrected estimate; ``[n_runs]`` each.
    ``strata`` = (each document's stratum, N_h, n_h); ``y`` the judged documents with
    y != 0, ``ranks`` ``[n_runs, m]``; ``pairs``: per pair (a, b) of runs, the difference
    and its variance, from the differences of the replicates (the same replicates as
    ``replicate_jackknife``'s, :func:`~sampleval.estimators.horvitz_thompson.
    stratified_replicates`)."""
    pi, joint = stratified_inclusion(*strata)
    value = _per(average_precision(y, pi, joint, ranks, cutoff, paper, True).value, pairs)
    if len(y) == 0:
        return Corrected(value, np.zeros_like(value), np.zeros_like(value))
    reps, rest = stratified_replicates(y, strata, ranks, cutoff, paper, True)
    variance, bias = stratum_jackknife(
        strata, lambda h, rows: _per(stratum_rows(reps, rest, h, rows), pairs), len(value),
        value)
    return Corrected(value - bias, variance, bias)


def taylor_jackknife_independent(y: np.ndarray, ranks: np.ndarray, cutoff: int | None,
                                 paper: bool, pi: np.ndarray, pi_joint: np.ndarray,
                                 pairs: np.ndarray | None = None) -> Corrected:
    """``AP~ht(bias=taylor-jackknife)`` on a design with independent inclusions (module
    docstring): theta_T less sum_k (1 - pi_k) [theta_T(k) - theta_T + (c_k - AP-hat x_k)/
    R-hat], c_k document k's share of AP-hat's numerator, x_k = y_k/pi_k; the variance
    sum_k (1 - pi_k) (theta_T(k) - theta_T)^2 (``replicate_jackknife``'s)."""
    m = len(y)
    if m == 0:
        value = _per(average_precision(y, pi, pi_joint, ranks, cutoff, paper, True).value,
                     pairs)
        return Corrected(value, np.zeros_like(value), np.zeros_like(value))
    value, reps = general_replicates(y, pi, pi_joint, ranks, cutoff, paper, True)  # [m, runs]
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
    return Corrected(_per(value, pairs) - bias, (weight * moved**2).sum(axis=0), bias)


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

    def replicates(h: int, rows: np.ndarray) -> np.ndarray:
        less = n_sampled.astype(np.int64)
        less[h] -= 1
        out = np.empty((len(rows), len(value)))
        for i, j in enumerate(rows):  # j = -1: a document with y = 0, only the design changes
            keep = np.arange(len(y)) != j
            out[i] = _per(stratified_average_precision(
                y[keep], stratum[keep], sizes, less, ranks[:, keep], cutoff, paper,
                True).value, pairs)
        return out

    variance, _ = stratum_jackknife(strata, replicates, len(value))
    return HTEstimate(value, variance)


def _per(values: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """Per run (``[..., n_runs]``), or per pair (a, b) of runs their difference."""
    return values if pairs is None else values[..., pairs[:, 0]] - values[..., pairs[:, 1]]
