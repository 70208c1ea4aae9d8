"""The predictions' coefficient lam (power tuning, PPI++: Angelopoulos, Duchi & Zrnic, arXiv
2311.01453, 2023): lam minimises the variance, lam = G^-1 c over the predictions' forms,
summed over the runs; cross-fitted over the other topics for the linear measures, plug-in
for the ratios (the option ``tuning``; :func:`tuned`), clipped to [0, 1]. The measurements
behind the default: docs/research/ppi.md.
"""

from __future__ import annotations

import numpy as np

from sampleval.estimation.engine.units import is_total

TUNINGS = ("by-measure", "cross-fit", "plug-in", "none")


def by_measure(base: str) -> str:
    """``tuning=by-measure``, the default: ``cross-fit`` for the linear measures (exactly
    unbiased), ``plug-in`` for the ratios (not exactly unbiased anyway; the module
    docstring, "Power tuning", says why with the figures)."""
    return "cross-fit" if is_total(base) else "plug-in"


def tuned(gram: np.ndarray, cross: np.ndarray, tuning: str) -> np.ndarray:
    """Each topic's lam (``[T, 2]``) from every topic's forms summed over the runs
    (``gram [T, 2, 2]``, ``cross [T, 2]``): cross-fitted (the other topics' sums) and shrunk
    by their uncertainty, or ``plug-in`` (every topic's, as is); clipped to [0, 1].

    The shrinkage: lam-hat_t = G^-1 C over the other topics s has, by the delta method over
    them (independent topics), Var = sum_s d_s d_s', d_s = G^-1 (c_s - g_s lam-hat_t); the
    excess variance of using k lam-hat instead of lam* is (k lam-hat - lam*)^2 V(u^f), whose
    expectation is smallest at k = lam*^2 / (lam*^2 + Var), estimated with lam-hat for lam*.
    A useless predictor's lam-hat is noise around 0 and is shrunk to about 0; a good one's
    is kept."""
    if tuning == "plug-in" or len(gram) == 1:
        return np.broadcast_to(np.clip(minimising(gram.sum(axis=0), cross.sum(axis=0)),
                                       0.0, 1.0), cross.shape).copy()
    others_gram, others_cross = gram.sum(axis=0) - gram, cross.sum(axis=0) - cross
    lam = minimising(others_gram, others_cross)  # [t, 2]
    residual = cross[None, :, :] - np.einsum("sjk,tk->tsj", gram, lam)  # [t, s, 2]
    residual[np.arange(len(gram)), np.arange(len(gram))] = 0.0  # topic t itself is left out
    influence = np.einsum("tjk,tsk->tsj", np.linalg.pinv(others_gram), residual)
    var = (influence**2).sum(axis=1)
    keep = np.divide(lam**2, lam**2 + var, out=np.ones(lam.shape), where=lam**2 + var > 0)
    return np.clip(lam * keep, 0.0, 1.0)


def minimising(gram: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """lam = G^-1 c (``gram [..., 2, 2]``, ``cross [..., 2]``), which minimises
    V - 2 c'lam + lam'G lam; a coefficient whose variance is not positive (nothing learnt)
    is 1 and the other is tuned given it, and nearly collinear parts share one coefficient."""
    lam = np.ones(cross.shape)
    var = np.diagonal(gram, axis1=-2, axis2=-1)
    usable = var > np.maximum(1e-9 * var.max(axis=-1, keepdims=True), 1e-15)  # not rounding
    det = var[..., 0] * var[..., 1] - gram[..., 0, 1] * gram[..., 1, 0]
    both = usable.all(axis=-1) & (det > 1e-9 * var[..., 0] * var[..., 1])
    if both.any():
        lam[both] = np.linalg.solve(gram[both], cross[both][..., None])[..., 0]
    shared = usable.all(axis=-1) & ~both
    total = gram[shared].sum(axis=(-2, -1))
    lam[shared] = np.divide(cross[shared].sum(axis=-1), total, out=np.ones(total.shape),
                            where=total > 0)[:, None]
    alone = usable & ~usable.all(axis=-1, keepdims=True)  # the other coefficient stays 1
    other = gram[..., 0, 1]
    lam[alone] = (cross[alone] - np.broadcast_to(other[..., None], cross.shape)[alone]
                  ) / var[alone]
    return lam
