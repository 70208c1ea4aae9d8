"""``depth-k``: the classic TREC pool, and fixed-budget pooling rank by rank.

Depth-k pooling (Voorhees & Harman (eds.), "TREC: Experiment and Evaluation in Information
Retrieval", MIT Press 2005, ch. 2, Harman's "The TREC test collections", on pooling): judge
every document that some run ranks in its top k. Without ``k``, fixed-budget pooling: take documents rank by rank (every
run's rank-1 document, then rank 2, ...; within a rank in docno order) until the topic's budget
is spent, so the judged set is the depth-k pool for the deepest k the budget covers plus part
of rank k+1. With ``k``, the depth-k pool in the same order, cut short only by a smaller budget
(``--rate 1`` judges it all).

The choice is deterministic (design ``pooled``): judged documents have inclusion 1, the others
0, and no sampling estimator applies (no family accepts a ``pooled`` design). What
applies are the exact
trec_eval measures on the judged documents: ``sampleval evaluate`` on the sample's qrels
(``Sample.to_qrels``), unjudged documents counting as not relevant; Bpref and the
condensed-list measures (``--judged-only``) are the ones meant for such incomplete pools.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sampleval.core.design import POOLED, Design
from sampleval.core.pool import Pool, TopicPool
from sampleval.declare import Param
from sampleval.selection.base import Budget, register
from sampleval.selection.strata import PlannedSelector


@register
class DepthKSelector(PlannedSelector):
    """Depth-k / fixed-budget pooling (see the module docstring)."""

    name: ClassVar[str] = "depth-k"
    design: ClassVar[Design] = POOLED
    summary: ClassVar[str] = "depth-k pooling, or rank by rank until the budget is spent"
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("k", int, None, "pool depth: judge the documents some run ranks in its top k "
              "(unset: rank by rank until the budget is spent)", check=lambda k: k >= 1,
              requirement="at least 1"),
    )

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self.k: int | None = self.params.get("k")

    def _plan(self, tp: TopicPool, budget: int) -> np.ndarray:
        best = tp.best_rank()
        order = np.argsort(best, kind="stable")  # pool order is docno order
        if self.k is not None:
            order = order[best[order] <= self.k]
        return order[:budget]

    def _design_columns(self, tp: TopicPool, judged: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
        return np.full(tp.size, "", dtype=object), judged.astype(np.float64)
