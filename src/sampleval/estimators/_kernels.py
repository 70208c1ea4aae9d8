"""Compiled per-rank passes of the inferred measures (see ``inferred.py`` for the formulas).

Each kernel reproduces, operation for operation, what the numpy code it replaced computed:
sums run in numpy's order (:func:`pairwise_sum`), so results are bit-for-bit the same.
"""

from __future__ import annotations

import numba
import numpy as np

# sample_eval.pl's smoothing (inferred.py: NIST_RELEVANT_EPSILON, NIST_SAMPLED_EPSILON)
_REL_EPS = 1e-5
_SMP_EPS = 3e-5


@numba.njit(cache=True)
def pairwise_sum(a: np.ndarray) -> float:
    """Sum of a 1-D float64 array in the order numpy's ``add.reduce`` uses along a
    contiguous axis (pairwise summation, blocks of 8 accumulators up to 128 items)."""
    n = len(a)
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        acc = a[:8].copy()
        last = n - n % 8
        for i in range(8, last, 8):
            for j in range(8):
                acc[j] += a[i + j]
        res = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        for i in range(last, n):
            res += a[i]
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a[:half]) + pairwise_sum(a[half:])


@numba.vectorize(["float64(float64, int64, int64)"], cache=True)
def srs_variance(p: float, n: int, big_n: int) -> float:
    """Variance of a proportion p estimated from n of big_n documents drawn without
    replacement (hypergeometric: (1 - n/N) p (1 - p) / (n - 1)); 0 when n = N (N = 0 too)."""
    fpc = (big_n - n) / max(big_n, 1)
    return fpc * p * (1 - p) / max(n - 1, 1)


@numba.njit(cache=True)
def nist_pass(frame_at_rank: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
              sampled_index: np.ndarray, level: float, n_strata: int, log2_rank: np.ndarray,
              with_variance: bool, with_rel_ret: bool
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                         np.ndarray, np.ndarray]:
    """sample_eval's per-rank pass for every run of one topic (Yilmaz, Kanoulas & Aslam,
    SIGIR 2008, sec. 3-4; inferred.py's module docstring).

    ``frame_at_rank``: ``[n_runs, width]`` int64 frame index per rank (-1: ignored), width
    already cut to the script's 1000; ``stratum``/``labels``/``sampled_index``: per frame
    document (NaN label / index -1: not sampled; the index counts the sampled documents in
    frame order); ``log2_rank[k]``: log2(k + 2), the discount of 0-based rank k.

    Returns ``sap`` and ``gain`` (``[n_runs, n_strata]``: the sum of the precisions above the
    relevant sampled documents of each stratum, and their discounted gain), ``docs`` and
    ``smp`` (``[n_runs, n_strata]`` int64: retrieved and retrieved-sampled counts over the
    whole list), with ``with_variance`` ``y`` and ``own`` (``[n_runs, n_sampled]``: each
    relevant document's precision and its variance, 0 for the other sampled documents),
    with ``with_rel_ret`` ``rel_ret`` (``[n_runs, width]``: inum_rel_ret at each rank);
    unrequested ones are empty.
    """
    n_runs, width = frame_at_rank.shape
    n_sampled = int(sampled_index.max()) + 1 if len(sampled_index) else 0
    sap = np.zeros((n_runs, n_strata))
    gain = np.zeros((n_runs, n_strata))
    docs = np.zeros((n_runs, n_strata), dtype=np.int64)
    smp = np.zeros((n_runs, n_strata), dtype=np.int64)
    rels = np.zeros(n_strata, dtype=np.int64)
    y = np.zeros((n_runs, n_sampled) if with_variance else (0, 0))
    own = np.zeros((n_runs, n_sampled) if with_variance else (0, 0))
    rel_ret = np.zeros((n_runs, width) if with_rel_ret else (0, 0))
    terms = np.empty(n_strata)
    var_terms = np.empty(n_strata)
    for r in range(n_runs):
        rels[:] = 0
        d, s = docs[r], smp[r]  # this run's counts above the current rank
        for k in range(width):
            f = frame_at_rank[r, k]
            if f >= 0 and stratum[f] >= 0:
                h = stratum[f]
                label = labels[f]
                sampled = sampled_index[f] >= 0
                if sampled and label >= level:
                    for g in range(n_strata):
                        rate = (rels[g] + _REL_EPS) / (s[g] + _SMP_EPS)
                        terms[g] = d[g] * rate
                        if with_variance:
                            var_terms[g] = d[g] ** 2 * srs_variance(
                                min(max(rate, 0.0), 1.0), s[g], d[g])
                    prec = (1.0 + pairwise_sum(terms)) / (k + 1)
                    sap[r, h] += prec
                    if with_variance:
                        y[r, sampled_index[f]] = prec
                        own[r, sampled_index[f]] = pairwise_sum(var_terms) / (k + 1) ** 2
                    rels[h] += 1
                if sampled and label > 0:
                    gain[r, h] += label / log2_rank[k]
                d[h] += 1
                if sampled:
                    s[h] += 1
            if with_rel_ret:
                for g in range(n_strata):
                    terms[g] = d[g] * (rels[g] + _REL_EPS) / (s[g] + _SMP_EPS)
                rel_ret[r, k] = pairwise_sum(terms)
    return sap, gain, docs, smp, y, own, rel_ret


@numba.njit(cache=True)
def _sum_as_numpy(a: np.ndarray, pairwise: bool) -> float:
    """Sum of a 1-D float64 array, pairwise (numpy reducing a contiguous row) or left to
    right (numpy reducing a row of a Fortran-ordered matrix, as fancy indexing makes)."""
    if pairwise:
        return pairwise_sum(a)
    res = 0.0
    for i in range(len(a)):
        res += a[i]
    return res


@numba.njit(cache=True)
def ratio_variance_sums(y: np.ndarray, own: np.ndarray, x: np.ndarray, strata: np.ndarray,
                        estimate: np.ndarray, spread_coef: np.ndarray,
                        own_coef: np.ndarray) -> np.ndarray:
    """The bracket of the stratified ratio variance (inferred.py's module docstring; Cochran,
    Sampling Techniques, 1977, sec. 6.11) per run: sum over strata h of
    ``spread_coef[h] * s_h^2(y - estimate x) / n_h`` (skipped when ``spread_coef[h]`` is NaN,
    i.e. n_h < 2) plus ``own_coef[h] * sum_h own``. ``y``/``own``: ``[n_runs, n_docs]``;
    ``strata``: stratum per document (-1: not sampled). s_h^2 is ``var(ddof=1)`` and
    the sums run in the order numpy used on ``matrix[:, members]`` (Fortran-ordered, so left
    to right, unless there is a single run)."""
    n_runs = y.shape[0]
    pairwise = n_runs == 1
    total = np.zeros(n_runs)
    for h in range(len(spread_coef)):
        members = np.flatnonzero(strata == h)
        n = len(members)
        values = np.empty(n)
        for r in range(n_runs):
            if not np.isnan(spread_coef[h]):
                for j in range(n):
                    values[j] = y[r, members[j]] - estimate[r] * x[members[j]]
                mean = _sum_as_numpy(values, pairwise) / n
                for j in range(n):
                    values[j] = (values[j] - mean) * (values[j] - mean)
                total[r] += spread_coef[h] * (_sum_as_numpy(values, pairwise) / (n - 1)) / n
            for j in range(n):
                values[j] = own[r, members[j]]
            total[r] += own_coef[h] * _sum_as_numpy(values, pairwise)
    return total
