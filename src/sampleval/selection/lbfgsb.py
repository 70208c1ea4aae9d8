"""scipy's L-BFGS-B, driven without ``scipy.optimize.minimize``'s per-call and per-evaluation
wrapping: the same compiled routine (``scipy.optimize._lbfgsb.setulb``), called with the
same arguments and defaults as ``minimize(fun, x0, jac=True, method="L-BFGS-B")`` (no
bounds), so it walks the same iterates and stops at the same point, bit for bit.

What it saves is Python: ``minimize`` builds a ``ScalarFunction`` per call and, per
evaluation, compares, copies and memoises the point and the gradient, which costs about as
much as a small objective itself (``dynamic``'s classifier fit: half of its time; the fit runs
in a campaign server's request, holding the interpreter lock: docs/research/campaign-load.md,
fourteenth round).

``setulb`` is scipy's private interface (its C port since scipy 1.15). :func:`minimize` checks
once per process that it gives ``scipy.optimize.minimize``'s result exactly on a small
problem, and uses ``minimize`` itself when it does not (another scipy version, another
interface), so the result never depends on which path ran.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from scipy import optimize

Objective = Callable[[np.ndarray], tuple[float, np.ndarray]]
"""The objective's value and gradient at a point (``minimize``'s ``jac=True``)."""

MAXCOR = 10
"""Corrections kept (``minimize``'s L-BFGS-B ``maxcor``); the other defaults below too."""
FTOL = 2.2204460492503131e-09
GTOL = 1e-5
MAXITER = 15000
MAXFUN = 15000
MAXLS = 20


def minimize(fun: Objective, x0: np.ndarray) -> np.ndarray:
    """The point where L-BFGS-B, from ``x0`` and with ``minimize``'s defaults, stops on the
    objective ``fun``: ``scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B").x``,
    exactly (module docstring)."""
    if _direct_agrees():
        return _direct(fun, x0)
    return np.asarray(optimize.minimize(fun, x0, jac=True, method="L-BFGS-B").x)


def _direct(fun: Objective, x0: np.ndarray) -> np.ndarray:
    """scipy's own loop of ``_minimize_lbfgsb`` without bounds, callback or ``ScalarFunction``:
    ``fun`` is evaluated where the routine asks (task 3: a copy of the point, as
    ``ScalarFunction`` passes), and the iteration and evaluation limits are applied as scipy
    applies them (task 5: stop)."""
    from scipy.optimize import _lbfgsb

    n, m = len(x0), MAXCOR
    x = np.array(x0, dtype=np.float64)
    f: float | np.ndarray = np.array(0.0, dtype=np.float64)
    g = np.zeros(n, dtype=np.float64)
    lower, upper, nbd = np.zeros(n), np.zeros(n), np.zeros(n, np.int32)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task, ln_task = np.zeros(2, dtype=np.int32), np.zeros(2, dtype=np.int32)
    lsave, isave, dsave = (np.zeros(4, dtype=np.int32), np.zeros(44, dtype=np.int32),
                           np.zeros(29))
    factr = FTOL / np.finfo(float).eps
    iterations = evaluations = 0
    while True:
        _lbfgsb.setulb(m, x, lower, upper, nbd, f, g, factr, GTOL, wa, iwa, task, lsave,
                       isave, dsave, MAXLS, ln_task)
        if task[0] == 3:
            f, gradient = fun(x.copy())
            g = np.asarray(gradient, dtype=np.float64)
            evaluations += 1
        elif task[0] == 1:
            iterations += 1
            if iterations >= MAXITER:
                task[0], task[1] = 5, 504
            elif evaluations > MAXFUN:
                task[0], task[1] = 5, 502
        else:
            return x


@functools.cache
def _direct_agrees() -> bool:
    """Whether :func:`_direct` gives ``scipy.optimize.minimize``'s point exactly on a small
    logistic problem (checked once per process; False if it fails in any way)."""
    rng = np.random.default_rng(0)
    x = rng.random((40, 3))
    y = np.where(rng.random(40) < 0.3, 1.0, -1.0)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = y * (x @ theta[:3] + theta[3])
        grad_z = -y * np.exp(-np.logaddexp(0.0, z))
        value = float(np.logaddexp(0.0, -z).sum() + 0.5 * theta[:3] @ theta[:3])
        return value, np.append(x.T @ grad_z + theta[:3], grad_z.sum())

    try:
        return bool(np.array_equal(_direct(loss, np.zeros(4)), optimize.minimize(
            loss, np.zeros(4), jac=True, method="L-BFGS-B").x))
    except Exception:  # another scipy's private interface
        return False
