"""``depth-k``: the classic TREC pool, and fixed-budget pooling rank by rank.

Depth-k pooling (Voorhees & Harman (eds.), "TREC: Experiment and Evaluation in Information
Retrieval", MIT Press 2005, ch. 2, Harman's "The TREC test collections", on pooling): judge
every document that some run ranks in its top k. Without ``k``, fixed-budget pooling: take documents rank by rank (every
run's rank-1 document, then rank 2, ...; within a rank in docno order) until the topic's budget
is spent, so the judged set is the depth-k pool for the deepest k the budget covers plus part
of rank k+1. With ``k``, the depth-k pool in the same order, cut short only by a smaller budget
(``--rate 1`` judges it all).

The choice is deterministic (design ``pooled``): judged documents have inclusion 1, the others
0, and no sampling estimator applies (``estimators`` is empty). What applies are the exact
trec_eval measures on the judged documents: ``sampleval evaluate`` on the sample's qrels
(``Sample.to_qrels``), unjudged documents counting as not relevant; Bpref and the
condensed-list measures (``--judged-only``) are the ones meant for such incomplete pools.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sampleval.core.pool import Pool, TopicPool
from sampleval.errors import UsageError
from sampleval.selection.base import Budget, register
from sampleval.selection.strata import PlannedSelector


@register
class DepthKSelector(PlannedSelector):
    """Depth-k / fixed-budget pooling (see the module docstring)."""

    name: ClassVar[str] = "depth-k"
    design: ClassVar[str] = "pooled"
    estimators: ClassVar[tuple[str, ...]] = ()
    parameters: ClassVar[dict[str, str]] = {
        "k": "pool depth: judge the documents some run ranks in its top k (default: rank by "
             "rank until the budget is spent)",
    }

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        k = params.get("k")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
            raise UsageError(f"k must be a positive whole number of ranks, not {k!r}")
        self.k: int | None = k

    def _plan(self, tp: TopicPool, budget: int) -> np.ndarray:
        best = tp.best_rank()
        order = np.argsort(best, kind="stable")  # pool order is docno order
        if self.k is not None:
            order = order[best[order] <= self.k]
        return order[:budget]

    def _design_columns(self, tp: TopicPool, judged: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
        return np.full(tp.size, "", dtype=object), judged.astype(np.float64)
