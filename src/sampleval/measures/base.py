"""What every exact measure kernel works on: one topic's rankings for all runs at once.

Kernels (one module per family: :mod:`.ranked`, :mod:`.interpolated`, :mod:`.judged`,
:mod:`.gain`, :mod:`.sets`) register under their library names with :func:`kernel` and
take ``(RankedGrades, Measure, level)``, returning one value per run. They follow trec_eval
10's ``m_*.c`` files and do the same floating-point operations in the same order (sums
accumulate rank by rank, divisions are not replaced by multiplications, logarithms come
from the C library through :mod:`math`), so values agree with trec_eval to the last bit,
not merely to 1e-15.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sampleval.core.relevance import judged_relevance as relevance
from sampleval.measures.names import Measure

UNJUDGED_IN_POOL = -2.0  # trec_eval's code for a qrels line with a negative grade
NOT_IN_POOL = -1.0  # ... and for a document missing from the qrels


@dataclass(frozen=True, eq=False)
class RankedGrades:
    """One topic as the exact measures see it.

    ``grades``: ``[n_runs, width]`` grade at each rank (``NaN``: unjudged, or past the end
    of a run); ``lengths``: documents retrieved per run; ``topic_grades``: the grades of
    every judged document of the topic in the qrels (retrieved or not); ``pooled``
    (optional, same shape as ``grades``): True where an unjudged document is in the qrels
    with a negative grade (trec_eval's "in the pool, not judged"), which infAP, relstring
    and gains given to negative levels tell apart from documents missing from the qrels.
    """

    grades: np.ndarray
    lengths: np.ndarray
    topic_grades: np.ndarray
    pooled: np.ndarray | None = None
    _memo: dict[Any, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def n_runs(self) -> int:
        return len(self.lengths)

    @property
    def width(self) -> int:
        return int(self.grades.shape[1])

    def judged_only(self) -> RankedGrades:
        """trec_eval's ``-J``: unjudged documents removed from every ranking, order kept."""
        judged = ~np.isnan(self.grades)
        order = np.argsort(~judged, axis=1, kind="stable")
        return RankedGrades(np.take_along_axis(self.grades, order, axis=1),
                            judged.sum(axis=1), self.topic_grades)

    def memo(self, key: Any, make: Callable[[], np.ndarray]) -> np.ndarray:
        """``make()``, computed once per topic for ``key`` (intermediates kernels share)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def retrieved(self) -> np.ndarray:
        """``[n_runs, width]`` True at the ranks each run filled."""
        return self.memo("retrieved", lambda: np.arange(self.width) < self.lengths[:, None])

    def codes(self, ranks: int | None = None) -> np.ndarray:
        """trec_eval's relevance codes at each rank: the grade, -1 (not in the qrels) or -2
        (in the qrels with a negative grade); ``NaN`` past a run's end. ``ranks``: the first
        ranks only (a cutoff measure need not code all of them)."""
        def make(width: int) -> np.ndarray:
            grades = self.grades[:, :width]
            unjudged = np.full(grades.shape, NOT_IN_POOL)
            if self.pooled is not None:
                unjudged[self.pooled[:, :width]] = UNJUDGED_IN_POOL
            codes = np.where(np.isnan(grades), unjudged, grades)
            return np.where(self.retrieved()[:, :width], codes, np.nan)
        if ranks is None or "codes" in self._memo:
            return self.memo("codes", lambda: make(self.width))[:, :ranks]
        return make(ranks)


Kernel = Callable[[RankedGrades, Measure, float], np.ndarray]
KERNELS: dict[str, Kernel] = {}


def kernel(*names: str) -> Callable[[Kernel], Kernel]:
    """Register a kernel under library measure names (:data:`.names.SPECS`)."""
    def register(function: Kernel) -> Kernel:
        for name in names:
            KERNELS[name] = function
        return function
    return register


def relevant(g: RankedGrades, level: float) -> np.ndarray:
    """``[n_runs, width]`` relevance (:func:`relevance`) at each rank."""
    return g.memo(("rel", level), lambda: relevance(g.grades, level))


def seen_relevant(g: RankedGrades, level: float) -> np.ndarray:
    """``[n_runs, width]`` relevant documents (grade >= level) up to each rank."""
    return g.memo(("seen", level), lambda: np.cumsum(is_relevant(g, level), axis=1))


def is_relevant(g: RankedGrades, level: float) -> np.ndarray:
    """``[n_runs, width]`` True where the grade is at least ``level`` (a yes or no, for the
    measures that need one: RR, Bpref, infAP, interpolated precision ...)."""
    return g.memo(("isrel", level), lambda: g.grades >= level)  # NaN >= level is False


def found(g: RankedGrades, level: float) -> np.ndarray:
    """``[n_runs, width + 1]`` relevant documents in the top i, i = 0..width."""
    def make() -> np.ndarray:
        counts = np.zeros((g.n_runs, g.width + 1))
        np.cumsum(relevant(g, level), axis=1, out=counts[:, 1:])
        return counts
    return g.memo(("found", level), make)


def num_rel(g: RankedGrades, level: float) -> float:
    """R: the relevance (:func:`relevance`) of the topic's judged documents, summed."""
    return float(g.memo(("R", level), lambda: np.array(
        relevance(g.topic_grades, level).sum())))


def num_rel_ret(g: RankedGrades, level: float) -> np.ndarray:
    """Relevant documents retrieved, per run."""
    return found(g, level)[:, -1]


def top(g: RankedGrades, level: float, k: int) -> np.ndarray:
    """Relevant documents in each run's top k."""
    return found(g, level)[:, min(max(k, 0), g.width)]


def seqsum(values: np.ndarray) -> np.ndarray:
    """Row sums accumulated left to right (as trec_eval's loops add), not pairwise.

    numpy sums pairwise only along the axis it reads contiguously; summed over the first
    axis of a ``[width, runs]`` copy, each run's sum takes its ranks one after another (in
    an eighth of the time of a cumulative sum). A single run would be that contiguous axis,
    so it is accumulated."""
    if values.shape[1] == 0:
        return np.zeros(values.shape[0])
    if values.shape[0] < 2:
        return np.cumsum(values, axis=1)[:, -1]
    return np.ascontiguousarray(values.T).sum(axis=0)


def ratio(numerator: np.ndarray, denominator: np.ndarray | float) -> np.ndarray:
    """numerator / denominator (per run), 0 where the denominator is 0 (trec_eval's
    convention)."""
    if np.isscalar(denominator):
        return numerator / denominator if denominator else np.zeros(len(numerator))
    den = np.asarray(denominator, dtype=np.float64)
    return np.divide(numerator, den, out=np.zeros(len(den)), where=den != 0)


_LOG2 = np.zeros(0)


def log2_of(n: int) -> np.ndarray:
    """log2(1), ..., log2(n) from the C library (``_LOG2[i] = log2(i + 1)``)."""
    global _LOG2
    table = _LOG2  # one reference: threads measuring other topics may grow the table
    if len(table) < n:
        table = np.array([math.log2(i + 1) for i in range(max(n, 2 * len(table)))])
        _LOG2 = table
    return table[:n]


def discount(width: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..width (DCG's discount divides by it)."""
    return log2_of(width + 1)[1:]


def c_map(function: Callable[[float], float], values: np.ndarray) -> np.ndarray:
    """``function`` (a :mod:`math` function) applied elementwise, as C computes it."""
    flat = [function(v) for v in values.ravel().tolist()]
    return np.array(flat, dtype=np.float64).reshape(values.shape)


def c_round(values: np.ndarray) -> np.ndarray:
    """C's ``lround``: to the nearest integer, halves away from zero."""
    whole = np.trunc(values)
    return whole + np.sign(values) * (np.abs(values - whole) >= 0.5)
