"""The rank weights of the measures whose estimand is a total
(:attr:`~sampleval.measures.names.MeasureSpec.estimand` ``total``): T = sum_d w(rank_d)
v(label_d) over the topic's documents (v the relevance, or the gain for a graded measure),
w 0 at rank 0 (not retrieved) and past the cutoff. Each is registered beside its measure's
kernel with :func:`rank_weight`; the design-based estimators read them through
:func:`weight_of` (Horvitz & Thompson 1952: a total is estimated by sum_S w_i v_i / pi_i).
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
    with their kernels, when :mod:`sampleval.measures.exact` is imported."""
    spec = estimand_of(base)
    if spec is None or spec.estimand != "total" or spec.key not in WEIGHTS:
        raise UsageError(f"{base} is not a total over documents with rank weights")
    return WEIGHTS[spec.key]
