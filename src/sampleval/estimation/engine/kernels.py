"""The engine's compiled kernels: the pair sums of the Horvitz-Thompson AP estimator and of
its replicates (:mod:`.estimands` and :mod:`.replicates` have the formulas), and the
per-stratum pair terms of the prediction-powered taylor-jackknife
(:func:`stratum_pair_terms`).

AP-hat is a sum over pairs of a run's judged documents (Li & Kanoulas, CIKM 2017, sec. 3),
P_kl = y_k y_l / (max(rank_k, rank_l) pi_kl). The numpy form builds ``[n_runs, K, K]``
matrices of these and multiplies them; these kernels visit each pair once, per run, without
the matrices. They sum in another order than numpy's, so results agree with the numpy form to
rounding (about 1e-15 relative), not bit for bit.

Arguments are per run, compacted as ``estimands._run_docs`` does: ``doc`` ``[n_runs,
K]`` indexes the judged documents, ``rank`` ``[n_runs, K]`` their 1-based ranks (0: padding).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _pair_weight(pi: np.ndarray, pi_joint: np.ndarray, i: int, j: int, paper: bool) -> float:
    """1/pi_ij of two judged documents (``paper``: 1/(pi_i pi_j)); 1 where pi_ij <= 0."""
    pair = pi[i] * pi[j] if paper else pi_joint[i, j]
    return 1.0 / pair if pair > 0 else 1.0


@numba.njit(cache=True)
def _own_weight(pi: np.ndarray, i: int, paper: bool) -> float:
    """A document's weight with itself: 1/pi_i (``paper``: 1/pi_i^2)."""
    return 1.0 / (pi[i] * pi[i]) if paper else 1.0 / pi[i]


@numba.njit(cache=True)
def ap_contributions(y_run: np.ndarray, rank: np.ndarray, doc: np.ndarray, pi: np.ndarray,
                     pi_joint: np.ndarray, paper: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per run and batch column b of ``y_run`` (``[n_runs, K, B]``, 0 at padding): each
    document's row sum c_k = sum_l P_kl (``[n_runs, K, B]``) and the numerator
    sum_{k, l: rank_l <= rank_k} P_kl (``[n_runs, B]``)."""
    n_runs, width, batch = y_run.shape
    contribution = np.zeros((n_runs, width, batch))
    num = np.zeros((n_runs, batch))
    for r in range(n_runs):
        for k in range(width):
            if rank[r, k] <= 0:
                continue
            dk = doc[r, k]
            own = _own_weight(pi, dk, paper) / rank[r, k]
            for b in range(batch):
                term = y_run[r, k, b] * y_run[r, k, b] * own
                contribution[r, k, b] += term
                num[r, b] += term
            for o in range(k + 1, width):
                if rank[r, o] <= 0:
                    continue
                scale = _pair_weight(pi, pi_joint, dk, doc[r, o], paper) / max(
                    rank[r, k], rank[r, o])
                for b in range(batch):
                    term = y_run[r, k, b] * y_run[r, o, b] * scale
                    contribution[r, k, b] += term
                    contribution[r, o, b] += term
                    num[r, b] += term
    return contribution, num


@numba.njit(cache=True)
def _used_units(values: np.ndarray, used: np.ndarray) -> int:
    """Write into ``used`` the units (rows of ``values`` ``[units, columns]``) where some
    value is not 0, in order; return how many there are."""
    n_used = 0
    for k in range(values.shape[0]):
        for b in range(values.shape[1]):
            if values[k, b] != 0.0:
                used[n_used] = k
                n_used += 1
                break
    return n_used


@numba.njit(cache=True)
def quadratic(x: np.ndarray, doc: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """sum_{k, l} x_k delta_kl x_l over each run's documents (``x`` ``[n_runs, K, B]``, 0 at
    padding): ``[n_runs, B]``. Documents whose x is 0 in every column are skipped."""
    n_runs, width, batch = x.shape
    out = np.zeros((n_runs, batch))
    row = np.zeros(batch)
    used = np.empty(width, dtype=np.int64)
    for r in range(n_runs):
        n_used = _used_units(x[r], used)
        for i in range(n_used):
            k = used[i]
            row[:] = 0.0
            for j in range(n_used):
                o = used[j]
                d = delta[doc[r, k], doc[r, o]]
                for b in range(batch):
                    row[b] += d * x[r, o, b]
            for b in range(batch):
                out[r, b] += x[r, k, b] * row[b]
    return out


@numba.njit(cache=True)
def deleted_pair_sums(y_run: np.ndarray, rank: np.ndarray, doc: np.ndarray, pi: np.ndarray,
                      pi_joint: np.ndarray, paper: bool, dx: np.ndarray, delta: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What deleting one document changes (:func:`.replicates.general_replicates`), per
    run and document k (``y_run`` ``[n_runs, K]``): its row sum c_k = sum_l P_kl, and
    sum_l P_lk dx_l and sum_l P_lk delta_kl over the run's documents (``dx``, ``delta``
    indexed by judged document); and per run and judged document j, sum_k c_k delta_jk
    (``[n_runs, m]``)."""
    n_runs, width = y_run.shape
    c = np.zeros((n_runs, width))
    p_dx = np.zeros((n_runs, width))
    p_delta = np.zeros((n_runs, width))
    for r in range(n_runs):
        for k in range(width):
            if rank[r, k] <= 0:
                continue
            dk = doc[r, k]
            term = y_run[r, k] * y_run[r, k] * _own_weight(pi, dk, paper) / rank[r, k]
            c[r, k] += term
            p_dx[r, k] += term * dx[dk]
            p_delta[r, k] += term * delta[dk, dk]
            for o in range(k + 1, width):
                if rank[r, o] <= 0:
                    continue
                do = doc[r, o]
                term = y_run[r, k] * y_run[r, o] * _pair_weight(pi, pi_joint, dk, do, paper) / max(
                    rank[r, k], rank[r, o])
                c[r, k] += term
                c[r, o] += term
                p_dx[r, k] += term * dx[do]
                p_dx[r, o] += term * dx[dk]
                p_delta[r, k] += term * delta[dk, do]
                p_delta[r, o] += term * delta[do, dk]
    m = len(dx)
    c_delta = np.zeros((n_runs, m))
    for r in range(n_runs):
        for k in range(width):
            if rank[r, k] <= 0:
                continue
            dk = doc[r, k]
            for j in range(m):
                c_delta[r, j] += c[r, k] * delta[j, dk]
    return c, p_dx, p_delta, c_delta


@numba.njit(cache=True)
def stratum_pair_sums(y_run: np.ndarray, rank: np.ndarray, g_run: np.ndarray, a: np.ndarray,
                      dx: np.ndarray, dx_own: np.ndarray, n_strata: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                 np.ndarray]:
    """Sums over the other documents l of each run's document k of Q_kl = y_k y_l /
    max(rank_k, rank_l) (:func:`.replicates.stratified_replicates`): B_kg, over the
    documents of stratum g (``[n_runs, K, strata]``); sum_l a_g(l) Q_kl and sum_l a_g(l)
    Q_kl dx_l; over k's own stratum, sum_l Q_kl, sum_l Q_kl dx_l and sum_l Q_kl dx_own_l
    (each ``[n_runs, K]``; ``dx``, ``dx_own`` per run and document like ``y_run``, ``a``
    per stratum)."""
    n_runs, width = y_run.shape
    by_g = np.zeros((n_runs, width, n_strata))
    weighted = np.zeros((n_runs, width))
    weighted_dx = np.zeros((n_runs, width))
    mine = np.zeros((n_runs, width))
    mine_dx = np.zeros((n_runs, width))
    mine_dx_own = np.zeros((n_runs, width))
    for r in range(n_runs):
        for k in range(width):
            if rank[r, k] <= 0 or y_run[r, k] == 0:
                continue
            gk = g_run[r, k]
            for o in range(k + 1, width):
                if rank[r, o] <= 0:
                    continue
                q = y_run[r, k] * y_run[r, o] / max(rank[r, k], rank[r, o])
                go = g_run[r, o]
                by_g[r, k, go] += q
                by_g[r, o, gk] += q
                weighted[r, k] += a[go] * q
                weighted[r, o] += a[gk] * q
                weighted_dx[r, k] += a[go] * q * dx[r, o]
                weighted_dx[r, o] += a[gk] * q * dx[r, k]
                if go == gk:
                    mine[r, k] += q
                    mine[r, o] += q
                    mine_dx[r, k] += q * dx[r, o]
                    mine_dx[r, o] += q * dx[r, k]
                    mine_dx_own[r, k] += q * dx_own[r, o]
                    mine_dx_own[r, o] += q * dx_own[r, k]
    return by_g, weighted, weighted_dx, mine, mine_dx, mine_dx_own


@numba.njit(cache=True)
def stratum_design_sums(c: np.ndarray, c_own: np.ndarray, dx: np.ndarray, dx_own: np.ndarray,
                        diag: np.ndarray, g_run: np.ndarray, rank: np.ndarray,
                        by_g: np.ndarray, a_k: np.ndarray, step: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per run and stratum h, sums over the run's documents k under h's replicate design
    (:func:`.replicates.stratified_replicates`): k's contribution there is ``c_own`` (and
    its (Dx)_k ``dx_own``) when k is in h, else ``c`` + a_g(k) ``step``_h B_kh (``by_g``
    ``[n_runs, K, strata]``) with ``dx``. Returns sum_k c_k, sum_k c_k (Dx)_k, and over the
    documents of h only, sum c_k and sum ``diag``_k, each ``[n_runs, strata]``."""
    n_runs, width, n_strata = by_g.shape
    total = np.zeros((n_runs, n_strata))
    cross = np.zeros((n_runs, n_strata))
    own_total = np.zeros((n_runs, n_strata))
    own_diag = np.zeros((n_runs, n_strata))
    for r in range(n_runs):
        for k in range(width):
            if rank[r, k] <= 0:
                continue
            gk = g_run[r, k]
            for h in range(n_strata):
                if h == gk:
                    value = c_own[r, k]
                    cross[r, h] += value * dx_own[r, k]
                    own_total[r, h] += value
                    own_diag[r, h] += diag[r, k]
                else:
                    value = c[r, k] + a_k[r, k] * step[h] * by_g[r, k, h]
                    cross[r, h] += value * dx[r, k]
                total[r, h] += value
    return total, cross, own_total, own_diag


@numba.njit(cache=True)
def bilinear_forms(x: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``[k, k, n_runs]``: sum_{i, j} x_a,i delta_ij x_b,j over each run's units for every
    pair (a, b) of the ``[k, n_runs, m]`` per-unit values ``x`` (:meth:`.units.Units.forms`),
    visiting only the units where some x is not 0 in that run (a run's units outside its
    cutoff add nothing), as :func:`quadratic` does per run."""
    count, n_runs, width = x.shape
    out = np.zeros((count, count, n_runs))
    row = np.zeros(count)
    used = np.empty(width, dtype=np.int64)
    for r in range(n_runs):
        n_used = _used_units(x[:, r, :].T, used)
        for p in range(n_used):
            i = used[p]
            row[:] = 0.0
            for q in range(n_used):
                j = used[q]
                d = delta[i, j]
                for b in range(count):
                    row[b] += d * x[b, r, j]
            for a in range(count):
                for b in range(count):
                    out[a, b, r] += x[a, r, i] * row[b]
    return out



@numba.njit(cache=True)
def stratum_pair_terms(y: np.ndarray, f: np.ndarray, r: np.ndarray, inverse: np.ndarray,
                       group: np.ndarray, lam: np.ndarray, a: np.ndarray, kappa: np.ndarray,
                       weight: np.ndarray, pair: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The prediction-powered taylor-jackknife's pair terms by stratum, for each run's
    documents in rank order (``y``, ``f``, ``r`` ``[n_runs, K]``: label, prediction and R's
    unit value; ``inverse`` 1/rank, 0 at padding; ``group`` the stratum; ``lam``
    ``[n_runs]``). With S(v)_kg = sum_{l in g, l != k} v_l / max(rank_k, rank_l), Z_kg =
    y_k S(y)_kg - lam f_k S(f)_kg, Zc_kg = y_k S(ry)_kg - lam f_k S(rf)_kg, U_hg = sum_{k in
    h} Z_kg and T_hg = sum_{k in h} r_k Z_kg, returns ``[9, n_runs, H]``: sum_g W_hg U_hg and
    sum_g W_hg T_hg (W = ``pair``), U a, T a, a U, kappa T, weight_run U, diag U, diag T; and
    ``[5, n_runs, K]``: per document Z_k . a, Z_k . weight_run, Z_k,g(k), Zc_k . kappa and
    Zc_k,g(k); without the ``[n_runs, K, H]`` matrices of S, Z and Zc or the ``[n_runs, H,
    H]`` ones of U and T."""
    n_runs, width = y.shape
    n_groups = len(a)
    by_group = np.zeros((9, n_runs, n_groups))
    by_doc = np.zeros((5, n_runs, width))
    values = np.empty((4, width))
    spread = np.zeros((4, width, n_groups))
    running = np.zeros((4, n_groups))
    u = np.zeros((n_groups, n_groups))
    t = np.zeros((n_groups, n_groups))
    for run in range(n_runs):
        values[0], values[1] = y[run], f[run]
        values[2], values[3] = r[run] * y[run], r[run] * f[run]
        spread[:] = 0.0
        running[:] = 0.0
        for k in range(width):
            if inverse[run, k] == 0.0:
                continue
            for i in range(4):
                for g in range(n_groups):
                    spread[i, k, g] = inverse[run, k] * running[i, g]
                running[i, group[run, k]] += values[i, k]
        running[:] = 0.0
        for k in range(width - 1, -1, -1):
            if inverse[run, k] == 0.0:
                continue
            for i in range(4):
                for g in range(n_groups):
                    spread[i, k, g] += running[i, g]
                running[i, group[run, k]] += values[i, k] * inverse[run, k]
        u[:] = 0.0
        t[:] = 0.0
        for k in range(width):
            if inverse[run, k] == 0.0:
                continue
            h = group[run, k]
            yk, fk = y[run, k] * 1.0, lam[run] * f[run, k]
            for g in range(n_groups):
                z = yk * spread[0, k, g] - fk * spread[1, k, g]
                zc = yk * spread[2, k, g] - fk * spread[3, k, g]
                u[h, g] += z
                t[h, g] += r[run, k] * z
                by_doc[0, run, k] += z * a[g]
                by_doc[1, run, k] += z * weight[run, g]
                by_doc[3, run, k] += zc * kappa[g]
                if g == h:
                    by_doc[2, run, k], by_doc[4, run, k] = z, zc
        for h in range(n_groups):
            for g in range(n_groups):
                by_group[0, run, h] += pair[h, g] * u[h, g]
                by_group[1, run, h] += pair[h, g] * t[h, g]
                by_group[2, run, h] += u[h, g] * a[g]
                by_group[3, run, h] += t[h, g] * a[g]
                by_group[4, run, g] += a[h] * u[h, g]
                by_group[5, run, g] += kappa[h] * t[h, g]
                by_group[6, run, g] += weight[run, h] * u[h, g]
            by_group[7, run, h], by_group[8, run, h] = u[h, h], t[h, h]
    return by_group, by_doc
