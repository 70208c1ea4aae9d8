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
def appendix_variance(s: float, m: float, big_d: float) -> float:
    """Yilmaz, Kanoulas & Aslam (SIGIR 2008, Appendix): the variance of a proportion s/m of
    m documents drawn without replacement from big_d, p(1 - p)/m (1 - (m - 1)/(big_d - 1)),
    with p = s/m unsmoothed (0 when p is 0 or 1). Undefined for m = 0 (nothing drawn): there
    it is 1/4, the largest variance a proportion can have. 0 once m reaches big_d."""
    if big_d <= 0 or m >= big_d:
        return 0.0
    if m == 0:
        return 0.25
    p = s / m
    return p * (1.0 - p) / m * (1.0 - (m - 1.0) / (big_d - 1.0))


VAR_NONE, VAR_LINEAR, VAR_APPENDIX = 0, 1, 2


@numba.njit(cache=True)
def nist_pass(frame_at_rank: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
              sampled_index: np.ndarray, level: float, n_strata: int, log2_rank: np.ndarray,
              var_kind: int, coef: np.ndarray, with_rel_ret: bool
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                         np.ndarray, np.ndarray, np.ndarray]:
    """sample_eval's per-rank pass for every run of one topic (Yilmaz, Kanoulas & Aslam,
    SIGIR 2008, sec. 3-4; inferred.py's module docstring).

    ``frame_at_rank``: ``[n_runs, width]`` int64 frame index per rank (-1: ignored), width
    already cut to the script's 1000; ``stratum``/``labels``/``sampled_index``: per frame
    document (NaN label / index -1: not sampled; the index counts the sampled documents in
    frame order); ``log2_rank[k]``: log2(k + 2), the discount of 0-based rank k.

    Returns ``sap`` and ``gain`` (``[n_runs, n_strata]``: the sum of the precisions above the
    relevant sampled documents of each stratum, and their discounted gain), ``docs`` and
    ``smp`` (``[n_runs, n_strata]`` int64: retrieved and retrieved-sampled counts over the
    whole list); with a variance (``var_kind`` VAR_LINEAR or VAR_APPENDIX) ``y`` and ``own``
    (``[n_runs, n_sampled]``: each relevant document's precision and its variance, 0 for the
    other sampled documents; the variance of the in-stratum rates is the unbiased
    hypergeometric estimate at sample_eval's smoothed rate for VAR_LINEAR,
    :func:`appendix_variance` for VAR_APPENDIX) and, for VAR_APPENDIX, ``cov``
    (``[n_runs]``: sum over pairs of relevant documents at ranks k < m of c_k c_m (k/m)
    Var(prec_k), the Appendix's covariance, c = ``coef`` of the document's stratum); with
    ``with_rel_ret`` ``rel_ret`` (``[n_runs, width]``: inum_rel_ret at each rank);
    unrequested ones are empty.
    """
    n_runs, width = frame_at_rank.shape
    n_sampled = int(sampled_index.max()) + 1 if len(sampled_index) else 0
    with_variance = var_kind != VAR_NONE
    sap = np.zeros((n_runs, n_strata))
    gain = np.zeros((n_runs, n_strata))
    docs = np.zeros((n_runs, n_strata), dtype=np.int64)
    smp = np.zeros((n_runs, n_strata), dtype=np.int64)
    rels = np.zeros(n_strata, dtype=np.int64)
    y = np.zeros((n_runs, n_sampled) if with_variance else (0, 0))
    own = np.zeros((n_runs, n_sampled) if with_variance else (0, 0))
    cov = np.zeros(n_runs)
    rel_ret = np.zeros((n_runs, width) if with_rel_ret else (0, 0))
    terms = np.empty(n_strata)
    var_terms = np.empty(n_strata)
    for r in range(n_runs):
        rels[:] = 0
        d, s = docs[r], smp[r]  # this run's counts above the current rank
        above = 0.0  # VAR_APPENDIX: sum of c_k k Var(prec_k) over the relevant above
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
                        if var_kind == VAR_LINEAR:
                            var_terms[g] = d[g] ** 2 * srs_variance(
                                min(max(rate, 0.0), 1.0), s[g], d[g])
                        elif var_kind == VAR_APPENDIX:
                            var_terms[g] = d[g] ** 2 * appendix_variance(rels[g], s[g], d[g])
                    prec = (1.0 + pairwise_sum(terms)) / (k + 1)
                    sap[r, h] += prec
                    if with_variance:
                        y[r, sampled_index[f]] = prec
                        var_prec = pairwise_sum(var_terms) / (k + 1) ** 2
                        own[r, sampled_index[f]] = var_prec
                        if var_kind == VAR_APPENDIX:
                            cov[r] += coef[h] / (k + 1) * above
                            above += coef[h] * (k + 1) * var_prec
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
    return sap, gain, docs, smp, y, own, cov, rel_ret


@numba.njit(cache=True)
def _nist_continue(row: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
                   sampled_index: np.ndarray, level: float, start: int, skip: int,
                   d: np.ndarray, s: np.ndarray, rels: np.ndarray, sap: np.ndarray) -> None:
    """sample_eval's pass over one run's ``row`` from rank ``start`` on, continuing from the
    counts ``d``, ``s``, ``rels`` and sums ``sap`` (updated in place), frame document
    ``skip`` taken as not sampled (-1: none)."""
    terms = np.empty(len(d))
    for k in range(start, len(row)):
        f = row[k]
        if f < 0 or stratum[f] < 0:
            continue
        h = stratum[f]
        sampled = sampled_index[f] >= 0 and f != skip
        if sampled and labels[f] >= level:
            for g in range(len(d)):
                terms[g] = d[g] * (rels[g] + _REL_EPS) / (s[g] + _SMP_EPS)
            sap[h] += (1.0 + pairwise_sum(terms)) / (k + 1)
            rels[h] += 1
        d[h] += 1
        if sampled:
            s[h] += 1


@numba.njit(cache=True)
def nist_replicates(frame_at_rank: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
                    sampled_index: np.ndarray, level: float, scale: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The delete-one replicates of sample_eval's precision sums: with sampled document j
    (j counting the sampled documents in frame order) taken as not sampled, ``total[r, j]``
    = sum_h scale_h SAP_h of run r and ``own[r, j]`` = SAP_{h(j)}, the sum in j's own stratum
    (whose scale the replicate changes). A run's pass is redone from the rank of each sampled
    document it retrieved; for the others it is the run's own pass."""
    n_runs, width = frame_at_rank.shape
    n_strata = len(scale)
    n_sampled = int(sampled_index.max()) + 1 if len(sampled_index) else 0
    unit_stratum = np.zeros(n_sampled, dtype=np.int64)
    for f in range(len(sampled_index)):
        if sampled_index[f] >= 0:
            unit_stratum[sampled_index[f]] = stratum[f]
    total = np.zeros((n_runs, n_sampled))
    own = np.zeros((n_runs, n_sampled))
    d = np.zeros(n_strata)
    s = np.zeros(n_strata)
    rels = np.zeros(n_strata)
    sap = np.zeros(n_strata)
    for r in range(n_runs):
        row = frame_at_rank[r]
        d[:] = 0.0
        s[:] = 0.0
        rels[:] = 0.0
        sap[:] = 0.0
        seen = np.zeros(n_sampled, dtype=np.bool_)
        for k in range(width):
            f = row[k]
            if f >= 0 and stratum[f] >= 0 and sampled_index[f] >= 0:
                j = sampled_index[f]
                seen[j] = True
                d2, s2, rels2, sap2 = d.copy(), s.copy(), rels.copy(), sap.copy()
                _nist_continue(row, stratum, labels, sampled_index, level, k, f,
                               d2, s2, rels2, sap2)
                total[r, j] = (sap2 * scale).sum()
                own[r, j] = sap2[unit_stratum[j]]
            _nist_continue(row[:k + 1], stratum, labels, sampled_index, level, k, -1,
                           d, s, rels, sap)
        base_total = (sap * scale).sum()
        for j in range(n_sampled):
            if not seen[j]:
                total[r, j] = base_total
                own[r, j] = sap[unit_stratum[j]]
    return total, own


@numba.njit(cache=True)
def infap_replicates(frame_at_rank: np.ndarray, judged: np.ndarray, relevant: np.ndarray,
                     judged_index: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """trec_eval's infAP sums of precisions at the relevant judged documents of every run
    (``base``, ``[n_runs]``) and their delete-one replicates (``rep``, ``[n_runs,
    n_judged]``: judged document j taken as unjudged, j counting the judged documents in
    frame order). ``judged``/``relevant``: per frame document; ``frame_at_rank`` as in
    :func:`nist_pass` (-1: outside the frame)."""
    n_runs, width = frame_at_rank.shape
    n_judged = int(judged_index.max()) + 1 if len(judged_index) else 0
    base = np.zeros(n_runs)
    rep = np.zeros((n_runs, n_judged))
    for r in range(n_runs):
        row = frame_at_rank[r]
        seen = np.zeros(n_judged, dtype=np.bool_)
        for skip_rank in range(-1, width):
            f = row[skip_rank] if skip_rank >= 0 else -1
            if skip_rank >= 0 and (f < 0 or not judged[f]):
                continue
            total, rel, non, unj = 0.0, 0.0, 0.0, 0.0
            for k in range(width):
                g = row[k]
                if g < 0:
                    continue
                is_judged = judged[g] and k != skip_rank
                if is_judged and relevant[g]:
                    density = (rel + epsilon) / (rel + non + 2.0 * epsilon)
                    total += (1.0 + (rel + non + unj) * density) / (k + 1)
                    rel += 1.0
                elif is_judged:
                    non += 1.0
                else:
                    unj += 1.0
            if skip_rank < 0:
                base[r] = total
            else:
                rep[r, judged_index[f]] = total
                seen[judged_index[f]] = True
        for j in range(n_judged):
            if not seen[j]:
                rep[r, j] = base[r]
    return base, rep


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
