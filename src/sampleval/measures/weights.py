"""The rank weights of the measures that are sums over documents: T = sum_d w(rank_d)
v(label_d) over the topic's documents (v the relevance, or the gain for a graded measure), w 0
at rank 0 (not retrieved) and past the cutoff; U(h) = sum_y lambda(rank_h(y)) rel(y) in
Schnabel, Swaminathan, Frazier & Joachims, ICTIR 2016, sec. 3.

Each total's weights (:attr:`~sampleval.measures.names.MeasureSpec.estimand` ``total``) are
registered beside its measure's kernel with :func:`rank_weight` into :data:`WEIGHTS`, as the
kernels are into ``KERNELS``; they are looked up, like the kernels, through
:mod:`sampleval.measures.exact`, whose import registers them all: the design-based
estimators through ``exact.weight_of`` (Horvitz & Thompson 1952: a total is estimated by
sum_S w_i v_i / pi_i), importance sampling through ``exact.rank_weights`` (what its
distributions Q weigh, :mod:`sampleval.selection.priors`, and what ``~is`` sums).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

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


def at_rank(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """values[r - 1] at each 1-based rank; 0 at rank 0 (not retrieved) and past the end."""
    padded = np.append(0.0, values)
    return padded[np.where(ranks <= len(values), ranks, 0)]
