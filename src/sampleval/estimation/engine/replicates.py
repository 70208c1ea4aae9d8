"""Every delete-one jackknife of AP-hat at the array level (Quenouille, Biometrika 1956;
Tukey 1958; for strata Jones, JASA 1974, and Wolter, *Introduction to Variance Estimation*,
2nd ed., 2007, sec. 4.5; with (1 - pi)-weights on designs with independent inclusions): its
variance and bias, of the estimate as reported (each replicate recomputing the Taylor
correction), of a corrected estimate's remaining bias (``taylor-jackknife``), and the double
jackknife (Efron & Tibshirani 1993, sec. 10.5 and 11.4). Replicates are computed by updating
the full sample's sums, not by recomputing them (``tests/unit/test_ap_kernels.py`` checks
them against the recomputation). :func:`strata_jackknife` is the one stratified combination
of replicates, every family's. The estimators: docs/guide/estimators.md#the-jackknives-of-ap."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sampleval.core.inclusion import stratified_inclusion
from sampleval.estimation.engine.estimands import (
    HTEstimate,
    _delta,
    _run_docs,
    ap_terms,
    average_precision,
)
from sampleval.estimation.engine.kernels import (
    deleted_pair_sums,
    stratum_design_sums,
    stratum_pair_sums,
)


class Corrected(NamedTuple):
    """A topic's estimate per run (or per pair) after its bias correction, its variance, the
    bias estimate that remains in it (a bias-aware interval's widening; taylor-jackknife's
    b: the Taylor-corrected estimate is ``value + remaining``; 0 where none), and whether
    every jackknife replicate behind it is possible (R-hat(lam) at or above the relevant
    documents it holds; True where no jackknife was taken, or none can fail)."""

    value: np.ndarray
    variance: np.ndarray
    remaining: np.ndarray
    possible: np.ndarray


def taylor_jackknife(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                     strata: tuple[np.ndarray, np.ndarray, np.ndarray],
                     pairs: np.ndarray | None = None) -> Corrected:
    """``AP~ht(bias=taylor-jackknife)`` on a stratified sample (module docstring): the
    Taylor-corrected AP-hat less the stratified jackknife's estimate of its remaining bias,
    with the jackknife variance of the Taylor-corrected estimate; ``[n_runs]`` each.
    ``strata`` = (each document's stratum, N_h, n_h); ``y`` the judged documents with
    y != 0, ``ranks`` ``[n_runs, m]``; ``pairs``: per pair (a, b) of runs, the difference
    and its variance, from the differences of the replicates (the replicates of :func:`stratified_replicates`)."""
    pi, joint = stratified_inclusion(*strata)
    value = _per(average_precision(y, pi, joint, ranks, cutoff, paper, True).value, pairs)
    if len(y) == 0:
        return Corrected(value, np.zeros_like(value), np.zeros_like(value),
                         np.ones(value.shape, dtype=bool))
    reps, rest = stratified_replicates(y, strata, ranks, cutoff, paper, True)
    stratum, sizes, n_sampled = strata
    variance, bias = strata_jackknife(_per(reps, pairs).T, _per(rest, pairs).T, value, stratum,
                                      sizes, n_sampled.astype(np.float64))
    return Corrected(value - bias, variance, bias, np.ones(value.shape, dtype=bool))


def taylor_jackknife_independent(y: np.ndarray, ranks: np.ndarray, cutoff: int | None,
                                 paper: bool, pi: np.ndarray, pi_joint: np.ndarray,
                                 pairs: np.ndarray | None = None) -> Corrected:
    """``AP~ht(bias=taylor-jackknife)`` on a design with independent inclusions (module
    docstring): theta_T less sum_k (1 - pi_k) [theta_T(k) - theta_T + (c_k - AP-hat x_k)/
    R-hat], c_k document k's share of AP-hat's numerator, x_k = y_k/pi_k; the variance
    sum_k (1 - pi_k) (theta_T(k) - theta_T)^2 (the jackknife of theta_T's replicates)."""
    value, variance, bias = _independent(y, pi, pi_joint, ranks, cutoff, paper, True, pairs)
    return Corrected(value - bias, variance, bias, np.ones(value.shape, dtype=bool))


def _independent(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                 cutoff: int | None, paper: bool, taylor: bool, pairs: np.ndarray | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (1 - pi_k)-weighted delete-one jackknife of AP-hat (``taylor``: of theta_T) from
    :func:`general_replicates`: the estimate, the variance sum_k (1 - pi_k) (theta(k) -
    theta)^2 and the bias estimate sum_k (1 - pi_k) [theta(k) - theta + (c_k - AP-hat x_k)/
    R-hat] (without ``taylor``, 0 for a k whose deletion leaves R-hat at 0); per run, or per
    pair's difference."""
    m = len(y)
    if m == 0:
        value = _per(average_precision(y, pi, pi_joint, ranks, cutoff, paper, taylor).value,
                     pairs)
        return value, np.zeros_like(value), np.zeros_like(value)
    value, reps = general_replicates(y, pi, pi_joint, ranks, cutoff, paper, taylor)
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
    step = moved + _per(linear, pairs)
    if not taylor:
        step = np.where((r_hat - x > 0)[:, None], step, 0.0)
    weight = (1.0 - pi)[:, None]
    return _per(value, pairs), (weight * moved**2).sum(axis=0), (weight * step).sum(axis=0)


def double_jackknife(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                     strata: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                     pi: np.ndarray, pi_joint: np.ndarray,
                     pairs: np.ndarray | None = None) -> HTEstimate:
    """``AP~ht(bias=jackknife)`` with the delete-one jackknife variance of the
    jackknife-corrected estimate itself (module docstring), ``[n_runs]`` each: stratified
    (``strata`` = (stratum, N_h, n_h)) or, without strata, (1 - pi_k)-weighted over the
    judged documents (deleting one with y = 0 changes nothing there); ``pairs`` as in
    :func:`taylor_jackknife`. With strata, ``ap=paper``'s only (``ap=ours``: the engine's,
    :func:`~sampleval.estimation.engine.corrections.ap_double_jackknife`)."""
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
    if not len(y):
        return HTEstimate(value, np.zeros_like(value))
    counts = n_sampled.astype(np.float64)
    units = np.bincount(stratum, minlength=len(sizes))
    enters = replicated(counts, sizes) & (units > 0)  # the others' replicates are not read
    everyone = np.arange(len(y))

    def replicate(keep: np.ndarray, h: int) -> np.ndarray:
        """The corrected estimate on the documents ``keep``, stratum h at n_h - 1."""
        less = n_sampled.astype(np.int64)
        less[h] -= 1
        return _per(stratified_average_precision(y[keep], stratum[keep], sizes, less,
                                                 ranks[:, keep], cutoff, paper, True).value,
                    pairs)

    reps = np.array([replicate(everyone != j, h) if enters[h] else value
                     for j, h in enumerate(stratum)]).T
    others = np.array([replicate(everyone >= 0, h) if enters[h] and counts[h] > units[h]
                       else value for h in range(len(sizes))]).T
    return HTEstimate(value, strata_jackknife(reps, others, value, stratum, sizes, counts)[0])


def _per(values: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """Per run (``[..., n_runs]``), or per pair (a, b) of runs their difference."""
    return values if pairs is None else values[..., pairs[:, 0]] - values[..., pairs[:, 1]]


def average_precision_jackknife(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray,
                                ranks: np.ndarray, cutoff: int | None = None,
                                paper: bool = False, correct: bool = False,
                                pairs: np.ndarray | None = None) -> HTEstimate:
    """AP-hat (:func:`average_precision`) with the delete-one jackknife variance of a design
    with (nearly) independent inclusions (Poisson, prels, with-replacement rounds),
    v = sum_{k in S} (1 - pi_k) (AP-hat_(k) - AP-hat)^2; ``correct``: less the jackknife's
    estimate of the ratio's bias (its second-order part; Cochran 1977, ch. 6); ``pairs``: per
    pair (a, b) of runs, the difference AP-hat_a - AP-hat_b and its jackknife variance, from the
    differences of their replicates. The derivation: docs/guide/estimators.md#the-jackknives-of-ap."""
    value, variance, bias = _independent(y, pi, pi_joint, ranks, cutoff, paper, False, pairs)
    return HTEstimate(value - bias if correct else value, variance)


def stratified_average_precision(y: np.ndarray, strata: np.ndarray, sizes: np.ndarray,
                                 n_sampled: np.ndarray, ranks: np.ndarray,
                                 cutoff: int | None = None, paper: bool = False,
                                 correct: bool = False,
                                 pairs: np.ndarray | None = None) -> HTEstimate:
    """AP-hat (:func:`average_precision`) on a stratified sample with the stratified
    delete-one jackknife variance (:func:`strata_jackknife`) of :func:`stratified_replicates`'
    replicates: ``y`` the judged documents with y != 0, their ``strata``, ``ranks`` ``[n_runs,
    m]``, ``sizes`` N_h, ``n_sampled`` n_h (every judged document). ``correct``: less the
    jackknife's bias estimate (Quenouille 1956; Jones 1974; Cochran 1977, ch. 6), which leaves
    a census exact; ``pairs``: of each pair's difference. ``ap=paper``'s (``ap=ours``:
    :func:`~sampleval.estimation.engine.corrections.ap_jackknife`, which adds the
    two-document rule)."""
    design = (strata, sizes, n_sampled)
    pi, joint = stratified_inclusion(*design)
    value = _per(average_precision(y, pi, joint, ranks, cutoff, paper).value, pairs)
    if len(y) == 0:
        return HTEstimate(value, np.zeros_like(value))
    reps, rest = stratified_replicates(y, design, ranks, cutoff, paper, False)
    variance, bias = strata_jackknife(_per(reps, pairs).T, _per(rest, pairs).T, value, strata,
                                      sizes, n_sampled.astype(np.float64))
    return HTEstimate(value - bias if correct else value, variance)


def replicated(counts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The strata whose delete-one replicates enter the stratified jackknife: 2 <= n_h < N_h
    (one judged document leaves no replicate; a census stratum's replicates do not differ)."""
    return (counts >= 2) & (counts < sizes)


def strata_jackknife(reps: np.ndarray, others: np.ndarray, value: np.ndarray,
                     stratum: np.ndarray, sizes: np.ndarray, counts: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The stratified delete-one jackknife (Wolter, *Introduction to Variance Estimation*,
    2nd ed., 2007, sec. 4.5; Jones 1974) from each unit's replicate ``reps`` ``[r, m]``
    (unit j left out, its stratum h at n_h - 1) and each stratum's one replicate for its
    n_h - m_h judged documents that are not units ``others`` ``[r, H]`` (only the weights
    change): per row of ``value`` ``[r]``, v = sum_h (1 - f_h) (n_h - 1)/n_h sum_{j in S_h}
    (theta_(hj) - mean_h)^2 and the bias estimate b = sum_h (1 - f_h) (n_h - 1)
    (mean_h - ``value``), f_h = n_h/N_h, every stratum at once. Strata with n_h < 2, a
    census of h, and strata without a unit (whose replicates all equal the estimate) add
    nothing."""
    member, rest, enters, n_h, mean, fpc = _strata_means(reps, others, stratum, sizes, counts)
    spread = ((reps - mean[:, stratum]) ** 2) @ member + rest * (others - mean) ** 2
    variance = np.where(enters, spread, 0.0) @ (fpc * (counts - 1.0) / n_h)
    bias = np.where(enters, mean - value[:, None], 0.0) @ (fpc * (counts - 1.0))
    return variance, bias


def strata_covariance(reps: np.ndarray, others: np.ndarray, stratum: np.ndarray,
                      sizes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``[r, r]``: :func:`strata_jackknife`'s variance in covariance form, the jackknife
    covariance of the ``r`` estimates whose replicates are the rows of ``reps`` and
    ``others``, sum_h (1 - f_h) (n_h - 1)/n_h sum_{j in S_h} (theta_(hj) - mean_h)
    (theta_(hj) - mean_h)'; its diagonal is that variance."""
    _, rest, enters, n_h, mean, fpc = _strata_means(reps, others, stratum, sizes, counts)
    scale = fpc * (counts - 1.0) / n_h
    spread = np.where(np.r_[enters[stratum], enters],
                      np.concatenate([reps - mean[:, stratum], others - mean], axis=1), 0.0)
    return (spread * np.r_[scale[stratum], rest * scale]) @ spread.T


def _strata_means(reps: np.ndarray, others: np.ndarray, stratum: np.ndarray,
                  sizes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`strata_jackknife`'s units by stratum ``[m, H]``, each stratum's judged
    documents that are not units, whether it enters, its n_h (1 where it does not), the
    replicates' mean ``[r, H]`` and 1 - f_h (0 where it does not enter)."""
    member = np.zeros((len(stratum), len(sizes)))
    member[np.arange(len(stratum)), stratum] = 1.0
    units = member.sum(axis=0)
    rest = counts - units
    enters = replicated(counts, sizes) & (units > 0)
    n_h = np.where(enters, counts, 1.0)
    mean = (reps @ member + rest * others) / n_h
    fpc = np.where(enters, 1.0 - counts / np.where(sizes > 0, sizes, 1.0), 0.0)
    return member, rest, enters, n_h, mean, fpc


def _corrected(num: np.ndarray, r_hat: np.ndarray, own: np.ndarray, cross: np.ndarray,
               taylor: bool) -> np.ndarray:
    """AP-hat = num/R-hat (0 where R-hat is 0), with ``taylor`` less (AP-hat V-hat(R-hat) -
    C-hat(N-hat, R-hat))/R-hat^2 (``own`` = V-hat(R-hat), ``cross`` = C-hat), as
    :func:`_ratio` computes it."""
    r_hat = np.broadcast_to(r_hat, num.shape)
    q = np.divide(num, r_hat, out=np.zeros(num.shape), where=r_hat > 0)
    if not taylor:
        return q
    return q - np.divide(q * own - cross, r_hat * r_hat, out=np.zeros(num.shape),
                         where=r_hat > 0)


def general_replicates(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                       cutoff: int | None, paper: bool, taylor: bool
                       ) -> tuple[np.ndarray, np.ndarray]:
    """AP-hat as :func:`average_precision` computes it (``[n_runs]``) and its delete-one
    replicates (``[m, n_runs]``, row j: y_j set to 0), each by updating the full sample's
    sums rather than recomputing them.

    AP-hat's numerator is sum_{k, l: rank_l <= rank_k} P_kl over each run's documents,
    P_kl = y_k y_l/(max(rank_k, rank_l) pi_kl) (P_kk = y_k^2/(rank_k pi_k); ``paper``:
    1/(pi_k pi_l), 1/pi_k^2 on the diagonal); document k's linearised contribution is its
    row sum c_k. Deleting j removes its row and column: num_(j) = num - c_j, c_k(j) =
    c_k - P_kj, x_(j) = x with x_j = y_j/pi_j at 0. The Taylor correction's HT (co)variances
    V-hat(R-hat) = x'Dx and C-hat = sum_k c_k (Dx)_k (D the HT weights, :func:`_delta`)
    change by the rank-one terms of x_j and the column P_.j: O(runs x K^2 + runs x m^2) for
    all replicates instead of O(runs x K^2 x m)."""
    docs = _run_docs(ranks, cutoff)
    m, (n_runs, width) = len(y), docs.doc.shape
    rank = docs.rank[..., 0]
    inside = rank > 0
    y_run = np.where(inside, y[docs.doc], 0.0)
    itself = 1.0 / (pi * pi) if paper else 1.0 / pi
    diag = np.divide(y_run * y_run * itself[docs.doc], rank, out=np.zeros(rank.shape),
                     where=inside)  # P_kk
    delta = _delta(pi, pi_joint)
    x = y / pi
    dx = x @ delta  # (x'D)_k
    c, p_dx, p_delta, c_delta = deleted_pair_sums(y_run, rank, docs.doc, pi, pi_joint,
                                                  paper, dx, delta)  # c_delta: sum_k c_k D_jk
    num = 0.5 * (c.sum(axis=1) + diag.sum(axis=1))
    xd = delta @ x  # (Dx)_k
    own = float(x @ dx)
    r_hat = float(x.sum())
    dx_run = np.where(inside, dx[docs.doc], 0.0)
    cross = (c * dx_run).sum(axis=1)
    value = _corrected(num, np.asarray(r_hat), np.asarray(own), cross, taylor)
    # per run and deleted document j (frame order); j outside the run: no pair term
    rows = np.repeat(np.arange(n_runs), width)[inside.ravel()]
    at = docs.doc[inside]
    own_j = own - x * (dx + xd) + x * x * np.diagonal(delta)
    pos_terms = p_dx - x[docs.doc] * p_delta + (c - diag) * (
        dx[docs.doc] - x[docs.doc] * np.diagonal(delta)[docs.doc])
    num_j = np.broadcast_to(num[:, None], (n_runs, m)).copy()
    num_j[rows, at] -= c[inside]
    cross_j = cross[:, None] - x[None, :] * c_delta
    cross_j[rows, at] -= pos_terms[inside]
    reps = _corrected(num_j, r_hat - x, own_j, cross_j, taylor)
    return value, reps.T


class _StratumDesign(NamedTuple):
    """Per stratum, under stratified SRS with n_h of N_h sampled (Sarndal, Swensson &
    Wretman 1992, ch. 3, stratified sampling): pi_i = n_h/N_h, pi_ij = n_h (n_h - 1)/(N_h
    (N_h - 1)) within h, pi_i pi_j across strata. ``a`` = 1/pi_i; ``within`` the pair
    weight 1/pi_ij of two documents of h (1/(pi_i pi_j) when n_h < 2, as
    :func:`stratified_inclusion`, and under ``paper``); ``itself`` a document's own weight
    (1/pi_i; ``paper``: 1/pi_i^2); the HT variance weights (pi_ij - pi_i pi_j)/pi_ij of a
    document with itself (``own``) and of two documents of h (``pair``; 0 across
    strata)."""

    a: np.ndarray
    within: np.ndarray
    itself: np.ndarray
    own: np.ndarray
    pair: np.ndarray


def _stratum_design(sizes: np.ndarray, n: np.ndarray, paper: bool) -> _StratumDesign:
    big_n, n = sizes.astype(np.float64), n.astype(np.float64)
    pi = np.divide(n, big_n, out=np.zeros(len(n)), where=big_n > 0)
    a = np.divide(1.0, pi, out=np.zeros(len(n)), where=pi > 0)
    joint = np.where(n > 1, np.divide(n * (n - 1), big_n * (big_n - 1), out=np.ones(len(n)),
                                      where=big_n > 1), pi * pi)
    within = a * a if paper else np.divide(1.0, joint, out=np.zeros(len(n)), where=joint > 0)
    own = 1.0 - np.divide(pi * pi, pi, out=np.zeros(len(n)), where=pi > 0)
    pair = 1.0 - np.divide(pi * pi, joint, out=np.ones(len(n)), where=joint > 0)
    return _StratumDesign(a, within, a * a if paper else a, own, pair)


def stratified_replicates(y: np.ndarray, strata: tuple[np.ndarray, np.ndarray, np.ndarray],
                          ranks: np.ndarray, cutoff: int | None, paper: bool, taylor: bool
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The delete-one replicates of AP-hat (``taylor``: Taylor-corrected) on a stratified sample: ``[m, n_runs]``,
    row j AP-hat (``taylor``: corrected) with y_j at 0 and j's stratum h at n_h - 1, and
    ``[strata, n_runs]``, row h with only h at n_h - 1 (a deleted document with y = 0).

    Under stratified SRS a pair's weight depends only on the two strata (:class:`_
    StratumDesign`), so with Q_kl = y_k y_l/max(rank_k, rank_l) and B_kg = sum_{l in g,
    l != k} Q_kl (one pass over each run's pairs, ``kernels.stratum_pair_sums``; no
    ``[K, K]`` matrix of pi_ij), document k's contribution is
    c_k = itself_g(k) y_k^2/rank_k + sum_g W(g(k), g) B_kg, and stratum h's design at
    n_h - 1 changes only the weights involving h: c_k, AP-hat's numerator, R-hat and the HT
    (co)variances of the Taylor correction (whose weights are block-diagonal by stratum)
    follow in O(runs x K x strata) for every h at once. Deleting j then updates them as in
    :func:`general_replicates`, its column of pairs summed by stratum."""
    stratum, sizes, n_sampled = strata
    docs = _run_docs(ranks, cutoff)
    n_runs, n_strata = docs.doc.shape[0], len(sizes)
    full = _stratum_design(sizes, n_sampled, paper)
    less = _stratum_design(sizes, n_sampled - 1, paper)  # row h: stratum h's replicate design
    rank = docs.rank[..., 0]
    inside = rank > 0
    y_run = np.where(inside, y[docs.doc], 0.0)
    g_run = np.where(inside, stratum[docs.doc], 0)
    # frame level: x = y/pi, (Dx)_j = own_g x_j + pair_g (T_g - x_j), full and h's design
    y_total = np.bincount(stratum, weights=y, minlength=n_strata)
    x, x_less = y * full.a[stratum], y * less.a[stratum]
    t_full, t_less = y_total * full.a, y_total * less.a
    dx = full.own[stratum] * x + full.pair[stratum] * (t_full[stratum] - x)
    dx_less = less.own[stratum] * x_less + less.pair[stratum] * (t_less[stratum] - x_less)
    r_hat = float(x.sum())
    own_total = float(x @ dx)
    r_h = r_hat + t_less - t_full  # [strata]: R-hat under h's design
    own_h = own_total + np.bincount(stratum, weights=x_less * dx_less - x * dx,
                                    minlength=n_strata)
    dx_run = np.where(inside, dx[docs.doc], 0.0)
    dx_less_run = np.where(inside, dx_less[docs.doc], 0.0)
    by_g, weighted, weighted_dx, mine, mine_dx, mine_dx_less = stratum_pair_sums(
        y_run, rank, g_run, full.a, dx_run, dx_less_run, n_strata)
    diag = np.divide(y_run * y_run, rank, out=np.zeros(rank.shape), where=inside)
    a_k, a_less_k = full.a[g_run], less.a[g_run]
    rest_a = weighted - a_k * mine
    c = full.itself[g_run] * diag + a_k * rest_a + full.within[g_run] * mine
    # under h's design: h != g(k) rescales k's pairs with h; h = g(k) all of k's weights
    c_mine = less.itself[g_run] * diag + a_less_k * rest_a + less.within[g_run] * mine
    c_total, cross_h, mine_total, diag_h = stratum_design_sums(
        c, c_mine, dx_run, dx_less_run, diag, g_run, rank, by_g, a_k, less.a - full.a)
    diag_sum = (full.itself[g_run] * diag).sum(axis=1)
    num_h = 0.5 * (c_total + diag_sum[:, None] + (less.itself - full.itself) * diag_h)
    rest = _corrected(num_h, r_h, own_h, cross_h, taylor).T
    # delete j (stratum h, h's design): at its position p in each run that retrieved it
    h = stratum
    xl = x_less
    num_j = num_h[:, h].copy()  # [r, m]
    cross_j = cross_h[:, h] - xl * less.pair[h] * mine_total[:, h]
    g_in = g_run[inside]
    xl_p = xl[docs.doc][inside]
    p_jj = less.itself[g_in] * diag[inside]
    c_p = c_mine[inside]
    others = weighted_dx[inside] - full.a[g_in] * mine_dx[inside]
    p_dx = (p_jj * dx_less[docs.doc][inside] + less.a[g_in] * others
            + less.within[g_in] * mine_dx_less[inside])
    p_d = p_jj * less.own[g_in] + less.pair[g_in] * less.within[g_in] * mine[inside]
    c_d = (less.own[g_in] - less.pair[g_in]) * c_p  # the k = j part of sum_k c_k D_jk
    at = (np.repeat(np.arange(n_runs), rank.shape[1])[inside.ravel()], docs.doc[inside])
    num_j[at] -= c_p
    cross_j[at] -= (xl_p * c_d + p_dx - xl_p * p_d
                    + (c_p - p_jj) * (dx_less[docs.doc][inside] - less.own[g_in] * xl_p))
    own_j = own_h[h] - 2.0 * xl * dx_less + xl * xl * less.own[h]
    # R-hat without j, exactly 0 when j was the only relevant document (as recomputed)
    r_others = np.where(np.eye(n_strata, dtype=bool), 0.0, t_full).sum(axis=1)
    r_j = r_others[h] + less.a[h] * (y_total[h] - y)
    reps = _corrected(num_j, r_j, own_j, cross_j, taylor).T
    return reps, rest
