"""Compiled per-rank passes of the inferred measures (see ``inferred.py`` for the formulas).

Each kernel reproduces, operation for operation, what the numpy code it replaced computed:
sums run in numpy's order (:func:`pairwise_sum`), so results are bit-for-bit the same.
"""

from __future__ import annotations

import numba
import numpy as np

INFAP_EPSILON = 1e-5
"""trec_eval's infAP smoothing of the density of relevant documents above a rank."""
NIST_RELEVANT_EPSILON = 1e-5
NIST_SAMPLED_EPSILON = 3e-5
"""sample_eval.pl's smoothing of the relevant and sampled counts of a stratum."""
NIST_MAX_RESULTS = 1000
"""sample_eval.pl reads each run's top 1000 documents."""
_REL_EPS = NIST_RELEVANT_EPSILON
_SMP_EPS = NIST_SAMPLED_EPSILON


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
    SIGIR 2008, sec. 3-4; docs/guide/estimators.md#inferred-measures).

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
def nist_replicates(frame_at_rank: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
                    sampled_index: np.ndarray, level: float, scale: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The delete-one replicates of sample_eval's precision sums: with sampled document j
    (j counting the sampled documents in frame order) taken as not sampled, ``total[r, j]``
    = sum_h scale_h SAP_h of run r and ``own[r, j]`` = SAP_{h(j)}, the sum in j's own stratum
    (whose scale the replicate changes); a run that did not retrieve j keeps its own sums.

    Taking j (stratum g, rank k_j, delta = 1 if relevant else 0) out of the sample leaves
    every count above a rank unchanged but g's: at each later relevant sampled rank k the
    term d_g (s_g + eps) / (m_g + eps) of the precision above it becomes d_g (s_g - delta +
    eps) / (m_g - 1 + eps), a change c_g(delta) that depends only on g's counts above k, and
    j's own precision (if relevant) goes. c_g is constant between two documents of g, so one
    pass per run sums, for each (g, delta), c_g times the weight scale_h/k of the relevant
    ranks k of each such stretch (``total``; ``own``: only the ranks in g, weight 1/k), and
    each replicate is its run's sums plus that sum's part after k_j: O(runs x width) (plus
    the precisions' sums over strata), not a pass per sampled document (the pass per
    document is the tests' reference, ``tests/unit/test_replicates.py``)."""
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
    terms = np.zeros(n_strata)  # d_g (s_g + eps) / (m_g + eps), kept current
    change = np.zeros((n_strata, 2))  # c_g(delta), kept current
    after_total = np.zeros((n_strata, 2))  # sum of c_g(delta) scale_h / k up to here
    after_own = np.zeros((n_strata, 2))  # sum of c_g(delta) / k over g's ranks up to here
    weight_at = np.zeros(n_strata)  # the ranks' total weight at g's last document
    # per sampled document the run retrieved: the sums up to its rank, its precision
    unit = np.empty(n_sampled, dtype=np.int64)
    before_total = np.empty(n_sampled)
    before_own = np.empty(n_sampled)
    prec_of = np.empty(n_sampled)
    for r in range(n_runs):
        row = frame_at_rank[r]
        for a in (d, s, rels, sap, terms, weight_at):
            a[:] = 0.0
        for a2 in (change, after_total, after_own):
            a2[:] = 0.0
        weight = 0.0  # sum of scale_h / k over the relevant sampled ranks so far
        n_pos = 0
        for k in range(width):
            f = row[k]
            if f < 0 or stratum[f] < 0:
                continue
            h = stratum[f]
            sampled = sampled_index[f] >= 0
            delta = 1 if sampled and labels[f] >= level else 0
            prec = 0.0
            if delta:
                prec = (1.0 + pairwise_sum(terms)) / (k + 1)
                sap[h] += prec
                weight += scale[h] / (k + 1)
                for e in range(2):
                    after_own[h, e] += change[h, e] / (k + 1)
            for e in range(2):  # close h's stretch: c_h is about to change
                after_total[h, e] += change[h, e] * (weight - weight_at[h])
            weight_at[h] = weight
            if sampled:
                unit[n_pos] = f
                before_total[n_pos] = after_total[h, delta]
                before_own[n_pos] = after_own[h, delta]
                prec_of[n_pos] = prec
                n_pos += 1
                s[h] += 1.0
                rels[h] += delta
            d[h] += 1.0
            rate = (rels[h] + _REL_EPS) / (s[h] + _SMP_EPS)
            terms[h] = d[h] * rate
            for e in range(2):
                change[h, e] = 0.0
                if s[h] >= 1.0 and rels[h] >= e:
                    change[h, e] = d[h] * ((rels[h] - e + _REL_EPS) / (s[h] - 1.0 + _SMP_EPS)
                                           - rate)
        base_total = 0.0
        for g in range(n_strata):
            base_total += sap[g] * scale[g]
            for e in range(2):
                after_total[g, e] += change[g, e] * (weight - weight_at[g])
        total[r, :] = base_total
        for j in range(n_sampled):
            own[r, j] = sap[unit_stratum[j]]
        for p in range(n_pos):
            f = unit[p]
            j, g = sampled_index[f], stratum[f]
            delta = 1 if labels[f] >= level else 0
            total[r, j] += after_total[g, delta] - before_total[p] - delta * scale[g] * prec_of[p]
            own[r, j] += after_own[g, delta] - before_own[p] - delta * prec_of[p]
    return total, own


@numba.njit(cache=True)
def infap_replicates(frame_at_rank: np.ndarray, judged: np.ndarray, relevant: np.ndarray,
                     judged_index: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """trec_eval's infAP sums of precisions at the relevant judged documents of every run
    (``base``, ``[n_runs]``) and their delete-one replicates (``rep``, ``[n_runs,
    n_judged]``: judged document j taken as unjudged, j counting the judged documents in
    frame order). ``judged``/``relevant``: per frame document; ``frame_at_rank`` as in
    :func:`nist_pass` (-1: outside the frame).

    As in :func:`nist_replicates`: taking j (delta = 1 if relevant) out changes, at each later
    relevant judged rank k, only the density (r + eps)/(r + n + 2 eps) above it, into (r -
    delta + eps)/(r + n - 1 + 2 eps) (r + n + u is unchanged), and removes j's own precision;
    one forward pass records those changes, a backward pass sums them from the end."""
    n_runs, width = frame_at_rank.shape
    n_judged = int(judged_index.max()) + 1 if len(judged_index) else 0
    base = np.zeros(n_runs)
    rep = np.zeros((n_runs, n_judged))
    at_rank = np.empty(n_judged, dtype=np.int64)
    prec_at = np.empty(n_judged)
    step = np.empty((n_judged, 2))
    for r in range(n_runs):
        row = frame_at_rank[r]
        total, rel, non, unj = 0.0, 0.0, 0.0, 0.0
        n_pos = 0
        for k in range(width):
            g = row[k]
            if g < 0:
                continue
            if not judged[g]:
                unj += 1.0
                continue
            at_rank[n_pos] = k
            prec_at[n_pos] = 0.0
            if relevant[g]:
                density = (rel + epsilon) / (rel + non + 2.0 * epsilon)
                prec = (1.0 + (rel + non + unj) * density) / (k + 1)
                total += prec
                prec_at[n_pos] = prec
                for delta in range(2):
                    change = 0.0
                    if rel + non >= 1.0 and rel >= delta:
                        change = (rel + non + unj) * (
                            (rel - delta + epsilon) / (rel + non - 1.0 + 2.0 * epsilon)
                            - density) / (k + 1)
                    step[n_pos, delta] = change
                rel += 1.0
            else:
                non += 1.0
            n_pos += 1
        base[r] = total
        rep[r, :] = total
        after0, after1 = 0.0, 0.0
        for p in range(n_pos - 1, -1, -1):
            g = row[at_rank[p]]
            j = judged_index[g]
            if relevant[g]:
                rep[r, j] += after1 - prec_at[p]
                after0 += step[p, 0]
                after1 += step[p, 1]
            else:
                rep[r, j] += after0
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
    """The bracket of the stratified ratio variance (Cochran, Sampling Techniques, 1977,
    sec. 6.11; docs/guide/estimators.md#inferred-measures) per run: sum over strata h of
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
