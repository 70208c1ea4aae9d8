"""Compiled pair sums of the Horvitz-Thompson AP estimator (``horvitz_thompson.py`` has the
formulas).

AP-hat is a sum over pairs of a run's judged documents (Li & Kanoulas, CIKM 2017, sec. 3),
P_kl = y_k y_l / (max(rank_k, rank_l) pi_kl). The numpy form builds ``[n_runs, K, K]``
matrices of these and multiplies them; these kernels visit each pair once, per run, without
the matrices. They sum in another order than numpy's, so results agree with the numpy form to
rounding (about 1e-15 relative), not bit for bit.

Arguments are per run, compacted as ``horvitz_thompson._run_docs`` does: ``doc`` ``[n_runs,
K]`` indexes the judged documents, ``rank`` ``[n_runs, K]`` their 1-based ranks (0: padding).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _pair_weight(pi: np.ndarray, pi_joint: np.ndarray, i: int, j: int, paper: bool) -> float:
    """1/pi_ij of two judged documents (``paper``: 1/(pi_i pi_j)); 1 where pi_ij <= 0."""
    if paper:
        pair = pi[i] * pi[j]
    else:
        pair = pi_joint[i, j]
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
            for l in range(k + 1, width):
                if rank[r, l] <= 0:
                    continue
                scale = _pair_weight(pi, pi_joint, dk, doc[r, l], paper) / max(
                    rank[r, k], rank[r, l])
                for b in range(batch):
                    term = y_run[r, k, b] * y_run[r, l, b] * scale
                    contribution[r, k, b] += term
                    contribution[r, l, b] += term
                    num[r, b] += term
    return contribution, num


@numba.njit(cache=True)
def quadratic(x: np.ndarray, doc: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """sum_{k, l} x_k delta_kl x_l over each run's documents (``x`` ``[n_runs, K, B]``, 0 at
    padding): ``[n_runs, B]``."""
    n_runs, width, batch = x.shape
    out = np.zeros((n_runs, batch))
    row = np.zeros(batch)
    for r in range(n_runs):
        for k in range(width):
            row[:] = 0.0
            for l in range(width):
                d = delta[doc[r, k], doc[r, l]]
                for b in range(batch):
                    row[b] += d * x[r, l, b]
            for b in range(batch):
                out[r, b] += x[r, k, b] * row[b]
    return out


@numba.njit(cache=True)
def deleted_pair_sums(y_run: np.ndarray, rank: np.ndarray, doc: np.ndarray, pi: np.ndarray,
                      pi_joint: np.ndarray, paper: bool, dx: np.ndarray, delta: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What deleting one document changes (``horvitz_thompson._replicates_general``), per
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
            for l in range(k + 1, width):
                if rank[r, l] <= 0:
                    continue
                dl = doc[r, l]
                term = y_run[r, k] * y_run[r, l] * _pair_weight(pi, pi_joint, dk, dl, paper) / max(
                    rank[r, k], rank[r, l])
                c[r, k] += term
                c[r, l] += term
                p_dx[r, k] += term * dx[dl]
                p_dx[r, l] += term * dx[dk]
                p_delta[r, k] += term * delta[dk, dl]
                p_delta[r, l] += term * delta[dl, dk]
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
def stratum_pair_sums(y_run: np.ndarray, rank: np.ndarray, g_run: np.ndarray,
                      values: np.ndarray, n_strata: int) -> np.ndarray:
    """sum_{l != k, stratum g} Q_kl v_l with Q_kl = y_k y_l / max(rank_k, rank_l), per run,
    document k, value v (``values`` ``[n_runs, K, V]``) and stratum g: ``[n_runs, K, V,
    n_strata]``."""
    n_runs, width, n_values = values.shape
    out = np.zeros((n_runs, width, n_values, n_strata))
    for r in range(n_runs):
        for k in range(width):
            if rank[r, k] <= 0 or y_run[r, k] == 0:
                continue
            for l in range(k + 1, width):
                if rank[r, l] <= 0:
                    continue
                q = y_run[r, k] * y_run[r, l] / max(rank[r, k], rank[r, l])
                gk, gl = g_run[r, k], g_run[r, l]
                for v in range(n_values):
                    out[r, k, v, gl] += q * values[r, l, v]
                    out[r, l, v, gk] += q * values[r, k, v]
    return out
