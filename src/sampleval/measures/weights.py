"""The rank weights of the measures that are sums over documents: T = sum_d w(rank_d)
v(label_d) over the topic's documents (v the relevance, or the gain for a graded measure), w 0
at rank 0 (not retrieved) and past the cutoff; U(h) = sum_y lambda(rank_h(y)) rel(y) in
Schnabel, Swaminathan, Frazier & Joachims, ICTIR 2016, sec. 3.

Each total's weights (:attr:`~sampleval.measures.names.MeasureSpec.estimand` ``total``) are
registered beside its measure's kernel with :func:`rank_weight`; the design-based estimators
read them through :func:`weight_of` (Horvitz & Thompson 1952: a total is estimated by
sum_S w_i v_i / pi_i), importance sampling through :func:`rank_weights` (what its
distributions Q weigh, :mod:`sampleval.selection.priors`, and what ``~is`` sums).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sampleval.errors import UsageError
from sampleval.measures.names import estimand_of

RankWeight = Callable[[np.ndarray, "int | None"], np.ndarray]
"""(1-based ranks, 0: not retrieved; the cutoff k or None) -> the weight at each rank."""
WEIGHTS: dict[str, RankWeight] = {}


def rank_weight(*names: str) -> Callable[[RankWeight], RankWeight]:
    """Register the rank weights of the library measures ``names`` (totals)."""
    def register(function: RankWeight) -> RankWeight:
        for name in names:
            WEIGHTS[name] = function
        return function
    return register


def weight_of(base: str) -> RankWeight:
    """The rank weights of ``base`` (a library name, any case), whose declared estimand is a
    total; a UsageError for any other measure. The built-in measures' weights are registered
    with their kernels (:mod:`sampleval.measures.exact`, imported here)."""
    from sampleval.measures import exact  # noqa: F401  (registers the built-in weights)

    spec = estimand_of(base)
    if spec is None or spec.estimand != "total" or spec.key not in WEIGHTS:
        raise UsageError(f"{base} is not a total over documents with rank weights")
    return WEIGHTS[spec.key]


def rank_weights(base: str, cutoff: int | None, width: int) -> np.ndarray:
    """lambda(r), r = 1..width, of U(h) = sum_y lambda(rank_h(y)) rel(y) (Schnabel et al.
    sec. 3): the registered weights of P@k (1/k) and DCG (1/log2(r+1), also nDCG's
    numerator), 1 for R@k's numerator; 0 past k."""
    ranks = np.arange(1, width + 1)
    if base == "P" and cutoff is None:
        raise UsageError("P~is needs a cutoff")
    if base == "R":
        return np.where(ranks <= (width if cutoff is None else cutoff), 1.0, 0.0)
    if base not in ("P", "DCG", "nDCG"):
        raise UsageError(f"importance sampling estimates P, R, DCG and nDCG, not {base}")
    return weight_of("DCG" if base == "nDCG" else base)(ranks, cutoff)


def at_rank(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """values[r - 1] at each 1-based rank; 0 at rank 0 (not retrieved) and past the end."""
    padded = np.append(0.0, values)
    return padded[np.where(ranks <= len(values), ranks, 0)]
