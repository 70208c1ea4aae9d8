"""``dynamic``'s classifier fit through :mod:`sampleval.selection.lbfgsb` (scipy's L-BFGS-B
routine without ``scipy.optimize.minimize``'s wrapper) gives exactly what ``minimize`` gave:
the same point, bit for bit, so the same scores, rankings and samples (docs/research/
campaign-load.md, fourteenth round)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, sparse

from sampleval.selection import lbfgsb
from sampleval.selection.dynamic import logistic_scores


def textbook_scores(x: np.ndarray | sparse.csr_matrix, y: np.ndarray, weight: np.ndarray,
                    score: np.ndarray | sparse.csr_matrix, lam: float = 1.0) -> np.ndarray:
    """The fit as it was written before (``scipy.optimize.minimize``, the loss in its
    textbook form): the reference."""
    dim = x.shape[1]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = y * (x @ theta[:dim] + theta[dim])
        grad_z = -weight * y * np.exp(-np.logaddexp(0.0, z))
        value = float(weight @ np.logaddexp(0.0, -z) + 0.5 * lam * theta[:dim] @ theta[:dim])
        grad = np.append(x.T @ grad_z + lam * theta[:dim], grad_z.sum())
        return value, grad

    theta = optimize.minimize(loss, np.zeros(dim + 1), jac=True, method="L-BFGS-B").x
    return np.asarray(score @ theta[:dim]).ravel() + theta[dim]


def problem(rng: np.random.Generator, rows: int, dim: int, sparse_rows: bool
            ) -> tuple[np.ndarray | sparse.csr_matrix, np.ndarray, np.ndarray]:
    """Features like ``dynamic``'s (rank fusion: 1/(k + rank) or 0; or sparse TF-IDF-like
    rows), labels with few relevant, and the unjudged documents' pseudo-negative weight."""
    x = np.where(rng.random((rows, dim)) < 0.4, 1.0 / (60 + rng.integers(1, 100, (rows, dim))),
                 0.0)
    y = np.where(rng.random(rows) < 0.1, 1.0, -1.0)
    judged = rng.random(rows) < 0.2
    weight = np.where(judged, 1.0, min(1.0, 100 / max(int((~judged).sum()), 1)))
    if sparse_rows:
        return sparse.csr_matrix(x * (rng.random((rows, dim)) < 0.3)), y, weight
    return x, y, weight


def test_the_direct_path_is_the_one_taken() -> None:
    """On the installed scipy the direct driver agrees with ``minimize`` (else the fit
    falls back to ``minimize`` and is as slow as before)."""
    assert lbfgsb._direct_agrees()


@pytest.mark.parametrize("sparse_rows", [False, True])
def test_the_fit_is_scipys_bit_for_bit(sparse_rows: bool) -> None:
    rng = np.random.default_rng(7)
    for rows, dim in [(30, 3), (200, 12), (800, 12), (400, 60)]:
        x, y, weight = problem(rng, rows, dim, sparse_rows)
        assert np.array_equal(logistic_scores(x, y, weight, x),
                              textbook_scores(x, y, weight, x)), (rows, dim)


def test_minimize_is_scipys_point_on_a_rosenbrock() -> None:
    """Another objective (many iterations, a curved valley): the same point exactly."""

    def rosen(p: np.ndarray) -> tuple[float, np.ndarray]:
        return float(optimize.rosen(p)), optimize.rosen_der(p)

    start = np.array([-1.2, 1.0, 0.5, -0.7])
    expected = optimize.minimize(rosen, start, jac=True, method="L-BFGS-B").x
    assert np.array_equal(lbfgsb.minimize(rosen, start), expected)
