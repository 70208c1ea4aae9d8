"""How per-topic values become one value per run: the one rule for exact measures and their
estimates alike.

- Counts (``NumRel``, ``NumRet``, ``NumRelRet``) are summed over topics, as trec_eval sums
  them; so are their estimates (``NumRel~ht``, ``NumRel~hh``, ``inum_rel``, ``inum_rel_ret``),
  as NIST's ``sample_eval`` sums them; the interval of a sum is the sum's (half-width
  z sqrt(sum of the topics' variances)).
- Every other measure and estimate is averaged over the topics (see ``evaluate`` and
  ``estimate`` for which topics count).

Sums over topics are exactly rounded (``math.fsum``). numpy adds the rows of an array in an
order that depends on its shape (pairwise along a contiguous axis, one row after another
along a strided one), so a plain ``.sum(axis=0)`` gives a run's mean a last digit that
depends on how many other runs or measures share the array: P@10 printed 0.946 alone and
0.9459999999999998 beside AP. An exactly rounded sum has one value whatever the layout.
"""

from __future__ import annotations

import math

import numpy as np

from sampleval.measures.names import aggregate_of

__all__ = ["aggregate_of", "over_topics", "topic_sums"]


def topic_sums(values: np.ndarray, included: np.ndarray) -> np.ndarray:
    """Exactly rounded sums over the first axis (topics) of ``values`` where ``included``
    (broadcast to ``values``) holds; shape ``values.shape[1:]``."""
    masked = np.where(included, values, 0.0).astype(np.float64, copy=False)
    columns = masked.reshape(masked.shape[0], -1).T
    return np.array([math.fsum(column) for column in columns],
                    dtype=np.float64).reshape(masked.shape[1:])


def over_topics(values: np.ndarray, included: np.ndarray, aggregate: str) -> np.ndarray:
    """Each column's sum (``aggregate="sum"``) or mean (``"mean"``) over the included topics
    (a column with none included: 0)."""
    sums = topic_sums(values, included)
    if aggregate == "sum":
        return sums
    counts = np.broadcast_to(included, np.shape(values)).sum(axis=0)
    return sums / np.maximum(counts, 1)
