"""Rank weights of the measures that are sums over documents, U(h) = sum_y lambda(rank_h(y))
rel(y) (Schnabel, Swaminathan, Frazier & Joachims, ICTIR 2016, sec. 3): what importance
sampling's distributions Q weigh (:mod:`sampleval.selection.priors`) and what its estimator
sums (``~is``)."""

from __future__ import annotations

import numpy as np

from sampleval.errors import UsageError


def rank_weights(base: str, cutoff: int | None, width: int) -> np.ndarray:
    """lambda(r), r = 1..width, of U(h) = sum_y lambda(rank_h(y)) rel(y) (Schnabel et al.
    sec. 3): 1/k for P@k, 1 for R@k's numerator, 1/log2(r+1) for DCG and nDCG; 0 past k."""
    ranks = np.arange(1, width + 1)
    if base == "P":
        if cutoff is None:
            raise UsageError("P~is needs a cutoff")
        weight = np.full(width, 1.0 / cutoff)
    elif base == "R":
        weight = np.ones(width)
    elif base in ("DCG", "nDCG"):
        weight = 1.0 / np.log2(ranks + 1.0)
    else:
        raise UsageError(f"importance sampling estimates P, R, DCG and nDCG, not {base}")
    return np.where(ranks <= (width if cutoff is None else cutoff), weight, 0.0)


def at_rank(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """values[r - 1] at each 1-based rank; 0 at rank 0 (not retrieved) and past the end."""
    padded = np.append(0.0, values)
    return padded[np.where(ranks <= len(values), ranks, 0)]
