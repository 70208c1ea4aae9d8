"""``strata``: stratified random sampling of the pool, strata by best rank across runs.

The design of NIST's sampled pools and of the extended inferred measures (Yilmaz, Kanoulas &
Aslam, "A simple and efficient sampling method for estimating AP and NDCG", SIGIR 2008,
sec. 3-4): each pooled document falls in the stratum of its best (smallest) rank over the runs
(``TopicPool.best_rank()``); within stratum h a simple random sample of exactly n_h of its N_h
documents is judged, so pi_i = n_h / N_h and pi_ij = n_h (n_h - 1) / (N_h (N_h - 1)) within a
stratum, pi_i pi_j across (Cochran, Sampling Techniques, ch. 5). Estimators: xinfAP, infNDCG,
iP@k, inum_rel (``nist``), Horvitz-Thompson (``ht``) and statAP (``stat``).

The strata come from ``--param strata=1-10:1,11-30:0.3,31-100:0.1`` (best-rank range ``LO-HI``
or open ``LO-``, then ``:RATE``; documents outside every range form a stratum ``other`` that is
never sampled) or from a named ``--param strategy=NAME`` (:data:`STRATEGIES`; default
``2strata``). The budget B of a topic (``--budget``/``--rate``) is spent exactly, as far as
the strata with a positive rate hold documents:

1. strata at rate 1 are *exhaustive*: judged completely first, in rank order; the one where
   the budget runs out is sampled with what is left, and later ones (and all others) get none;
2. the rest of the budget goes to the strata with rates in (0, 1), in proportion to
   rate_h * N_h (the rates scale by one common factor c, each capped at rate 1 by
   water-filling, so sum_h min(N_h, c rate_h N_h) = what is left);
3. n_h is rounded from these real numbers by largest remainder, which keeps their total.

So rates written for a budget of sum_h rate_h N_h are met as written (n_h = round(rate_h N_h));
another budget scales the non-exhaustive rates. A stratum with a positive rate that the
budget leaves without a single judgment (an exhaustive top stratum larger than the budget),
and any stratum at rate 0 (``other`` included), would count as outside the frame in every
estimate (``core.sample``): the selector warns (:class:`~sampleval.errors.SamplingWarning`)
with the share of the pool left unreachable, the budget that would reach it
(:meth:`StratifiedSelector.reach`) and the strata no budget reaches.

Named strategies, each budget-matched as above (the papers fix strata and rates per
collection, not per budget):

- Voorhees, "The effect of sampling strategy on inferred measures", SIGIR 2014 (its list of
  strategies is cut off in our copy; what survives and the paper's discussion give):
  ``pool``: a single exhaustively judged stratum, the depth-k pool for the deepest k that
  fits the budget (no random part; the rest of the budget is not spent); ``1stratum``: one
  uniform sample of the whole pool (infAP's design); ``2strata`` (the default, the strategy
  the paper recommends): the top-10 pool exhaustively, the rest of the budget uniformly over
  best ranks 11 and deeper; ``3strata``: the top-10 pool exhaustively, best ranks 11-30 at a
  moderate rate and a deep, very sparsely sampled third stratum, best ranks 31 and deeper at
  a tenth of that rate (the 1:10 ratio is ours; the paper shows such a stratum to be the
  worst choice: its few judgments weigh the most).
- Yilmaz, Kanoulas & Aslam, SIGIR 2008: ``depthk+equal`` (sec. 3.1): the depth-k pool, k the
  deepest depth whose pool holds at most half the budget, plus the rest of the budget (at
  least as many documents) drawn uniformly from the remainder of the pool; ``yilmaz4``
  (sec. 5): the same depth-k stratum, and the rest of the pool, by best rank, cut into three
  strata of equal size that share the rest of the budget 3 : 1.5 : 1 (55% / 27% / 18%).

This module also holds what every select-up-front method shares (:class:`PlannedSelector`,
:class:`StratifiedSelector`): at the first ``propose`` the whole design's sample is drawn for
every topic (in pool order), stored, and then handed out batch by batch, so the draws do not
depend on the batch size. A stratified sample is handed out in proportion across strata
(ordered by (j + 1/2) / n_h for the j-th draw of stratum h), so after any number of
judgments the judged set is itself a stratified simple random sample.
"""

from __future__ import annotations

import re
import warnings
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sampleval.core.design import STRATIFIED, Design
from sampleval.core.pool import Pool, TopicPool
from sampleval.core.sample import Sample
from sampleval.declare import Param
from sampleval.errors import SamplingWarning, UsageError
from sampleval.selection.base import Budget, Selector, register

UNREACHABLE_DOC = "docs/guide/estimating.md#unreachable-documents"
"""Where the docs say why unreachable documents bias estimates and how to avoid them."""

_FRAME_COLUMNS = ["query_id", "doc_id", "relevance", "stratum", "inclusion"]


class PlannedSelector(Selector):
    """A method that fixes its whole choice before any judgment and then hands it out in
    order (depth-k pooling, stratified and uniform sampling). Subclasses say what to judge
    (:meth:`_plan`) and what the frame records (:meth:`_design_columns`)."""

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self._order: dict[str, np.ndarray] | None = None
        self._given = dict.fromkeys(pool.topics, 0)
        self._labels = {t: np.full(pool[t].size, np.nan) for t in pool.topics}

    @abstractmethod
    def _plan(self, tp: TopicPool, budget: int) -> np.ndarray:
        """Indices into the topic's pool of every document to judge, in hand-out order."""

    @abstractmethod
    def _design_columns(self, tp: TopicPool, judged: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
        """The frame's ``stratum`` and ``inclusion`` columns, given which docs are judged."""

    def _plan_all(self) -> dict[str, np.ndarray]:
        """Every topic's plan (in pool order, so the draws do not depend on the topic asked
        first)."""
        return {t: self._plan(self.pool[t], self.budget_for(t)) for t in self.pool.topics}

    def batch_size(self, topic: str) -> int:
        return max(1, self.budget_for(topic))  # the plan is fixed: hand it out whole

    def propose(self, topic: str, n: int) -> list[str]:
        tp = self._of_topic(self.pool.topic_pools, topic)
        self._check_batch(n)
        if self._order is None:
            self._order = self._plan_all()
        start = self._given[topic]
        chosen = self._order[topic][start:start + n]
        self._given[topic] = start + len(chosen)
        return [str(d) for d in self.pool.docnos[tp.doc_ids[chosen]]]

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        self._of_topic(self.pool.topic_pools, topic)
        handed = (np.zeros(0, dtype=np.int64) if self._order is None
                  else self._order[topic][:self._given[topic]])
        where, labels = self._received(topic, judgments, handed)
        self._labels[topic][where] = labels

    def sample(self) -> Sample:
        parts = []
        for topic in self.pool.topics:
            tp, labels = self.pool[topic], self._labels[topic]
            stratum, inclusion = self._design_columns(tp, ~np.isnan(labels))
            parts.append(pd.DataFrame({
                "query_id": np.full(tp.size, topic, dtype=object),
                "doc_id": self.pool.docnos[tp.doc_ids], "relevance": labels,
                "stratum": stratum, "inclusion": inclusion}))
        frame = (pd.concat(parts, ignore_index=True) if parts
                 else pd.DataFrame(columns=_FRAME_COLUMNS))
        return Sample(self.design, frame, meta=self._sample_meta())

    def state(self) -> dict[str, Any]:
        judged = {t: np.flatnonzero(~np.isnan(v)) for t, v in self._labels.items()}
        return {
            **self._state_header(),
            "order": None if self._order is None else {
                t: o.tolist() for t, o in self._order.items()},
            "given": dict(self._given),
            "judged": {t: {"index": i.tolist(), "label": self._labels[t][i].tolist()}
                       for t, i in judged.items() if len(i)},
        }

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> PlannedSelector:
        selector = cls._from_header(pool, state)
        if state["order"] is not None:
            selector._order = {t: np.asarray(o, dtype=np.int64)
                               for t, o in state["order"].items()}
        selector._given.update(state["given"])
        for topic, saved in state["judged"].items():
            selector._labels[topic][saved["index"]] = saved["label"]
        return selector


@dataclass(frozen=True)
class Layout:
    """A topic's strata: each pooled document's stratum code, each stratum's label, its
    planned sample size n_h, and whether the design means to sample it (``wanted``; None:
    every stratum)."""

    codes: np.ndarray
    labels: np.ndarray
    counts: np.ndarray
    wanted: np.ndarray | None = None

    def unreached(self) -> np.ndarray:
        """Per pooled document: whether its stratum gets no judgment, so that its inclusion
        probability is 0 (a stratum the budget starves, or one the design never samples:
        rate 0, ``other``); False for documents outside the layout (code -1)."""
        return (self.codes >= 0) & (np.append(self.counts, 1)[self.codes] == 0)

    def starved(self) -> list[str]:
        """The labels of the strata the design means to sample that hold documents but get
        no judgment."""
        sizes = np.bincount(self.codes[self.codes >= 0], minlength=len(self.labels))  # -1: none
        wanted = np.ones(len(self.labels), bool) if self.wanted is None else self.wanted
        return [str(x) for x in self.labels[wanted & (sizes > 0) & (self.counts == 0)]]


class StratifiedSelector(PlannedSelector):
    """Simple random sampling without replacement within strata (design ``stratified``);
    subclasses give each topic's :class:`Layout`."""

    design: ClassVar[Design] = STRATIFIED

    @abstractmethod
    def _layout(self, tp: TopicPool, budget: int) -> Layout:
        """The topic's strata and planned sample sizes for a budget of ``budget`` docs."""

    def _plan(self, tp: TopicPool, budget: int) -> np.ndarray:
        layout = self._layout(tp, budget)
        return handout(layout.codes, layout.counts, self.rng.random(tp.size))

    def layout_within(self, topic: str, keep: np.ndarray, budget: int) -> Layout:
        """The design laid out afresh for ``budget`` judgments over only the documents
        ``keep`` marks (a boolean mask over the topic's pool), as if the pool held only
        them, ranked where the runs ranked them: the strata of a later phase that samples
        the documents not judged yet (:mod:`sampleval.judging.confident`). Documents outside
        ``keep`` get the code -1."""
        tp = self._of_topic(self.pool.topic_pools, topic)
        kept = np.flatnonzero(keep)
        local = np.full(tp.size + 1, -1, dtype=tp.ranking.dtype)  # the last slot: padding
        local[kept] = np.arange(len(kept))
        sub = TopicPool(topic, tp.doc_ids[kept], local[tp.ranking], tp.lengths,
                        tp.labels[kept])
        inner = self._layout(sub, budget)
        codes = np.full(tp.size, -1, dtype=np.int64)
        codes[kept] = inner.codes
        return Layout(codes, inner.labels, inner.counts, inner.wanted)

    def proposal_design(self, topic: str, docnos: list[str]) -> tuple[list[str], np.ndarray]:
        """Each proposed document's stratum and pi_i = n_h / N_h of the planned sample."""
        layout = self._layout(self.pool[topic], self.budget_for(topic))
        sizes = np.bincount(layout.codes, minlength=len(layout.labels))
        pi = np.divide(layout.counts, sizes, out=np.zeros(len(sizes)), where=sizes > 0)
        positions = self._pool_positions(topic)
        codes = layout.codes[[positions[d] for d in docnos]]
        return [str(label) for label in layout.labels[codes]], pi[codes]

    def _plan_all(self) -> dict[str, np.ndarray]:
        plans = super()._plan_all()
        self._warn_unreachable()
        return plans

    def _warn_unreachable(self) -> None:
        """One line when the design leaves pooled documents with inclusion probability 0
        (strata without a judgment: starved by the budget, or at rate 0), with their share
        of the pool, the budget that reaches every stratum some budget reaches, and the
        strata no budget reaches."""
        layouts = {t: self._layout(self.pool[t], self.budget_for(t)) for t in self.pool.topics}
        missed = {t: layout for t, layout in layouts.items() if layout.unreached().any()}
        if not missed:
            return
        pooled = sum(len(layout.codes) for layout in layouts.values())
        share = sum(int(layout.unreached().sum()) for layout in missed.values()) / pooled
        topic, first = next(iter(missed.items()))
        labels = ", ".join(str(x) for x in dict.fromkeys(first.labels[first.codes[
            first.unreached()]]))
        reach = {t: self.reach(t) for t in missed}
        need = max(budget for budget, _ in reach.values())
        never = sorted({label for _, labels in reach.values() for label in labels})
        fixes = []
        if any(budget > self.budget_for(t) for t, (budget, _) in reach.items()):
            fixes.append(f"Judge at least {need} documents per topic (--budget {need}) to "
                         f"reach every stratum{self._starved_hint()}")
        if never:
            fixes.append(f"no budget reaches {', '.join(never)} (rate 0): give "
                         f"{'it' if len(never) == 1 else 'them'} a positive rate")
        fix = "; ".join(fixes)
        warnings.warn(SamplingWarning(
            f"{self.name}: in {len(missed)} of {len(layouts)} topics the design leaves "
            f"strata without a single judgment (topic {topic}: {labels}): {share:.1%} of the "
            "pooled documents are unreachable (inclusion probability 0) and count as "
            f"outside the frame (not relevant) in every estimate. {fix[:1].upper()}{fix[1:]} "
            f"({UNREACHABLE_DOC})"), stacklevel=4)

    def reach(self, topic: str) -> tuple[int, list[str]]:
        """The smallest budget (the topic's budget at least) at which every pooled document
        of ``topic`` that some budget reaches has a positive inclusion probability, and the
        labels of the strata that no budget reaches (rate 0)."""
        tp = self._of_topic(self.pool.topic_pools, topic)
        full = self._layout(tp, tp.size)
        never = full.unreached()
        low, high = min(self.budget_for(topic), tp.size), tp.size
        while low < high:
            mid = (low + high) // 2
            if (self._layout(tp, mid).unreached() & ~never).any():
                low = mid + 1
            else:
                high = mid
        return low, [str(x) for x in dict.fromkeys(full.labels[full.codes[never]])]

    def judgments_to_cover(self, topic: str) -> int:
        """The position in the hand-out order at which the last stratum of the plan gets its
        first document (the plan is drawn now if it was not yet)."""
        tp = self._of_topic(self.pool.topic_pools, topic)
        if self._order is None:
            self._order = self._plan_all()
        codes = self._layout(tp, self.budget_for(topic)).codes[self._order[topic]]
        first = np.unique(codes, return_index=True)[1]
        return int(first.max()) + 1 if len(first) else 0

    def _starved_hint(self) -> str:
        """How else to avoid unjudged strata, for the warning (``, or ...``)."""
        return ""

    def _design_columns(self, tp: TopicPool, judged: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
        layout = self._layout(tp, self.budget_for(tp.topic))
        n_strata = len(layout.labels)
        sizes = np.bincount(layout.codes, minlength=n_strata)
        sampled = np.bincount(layout.codes[judged], minlength=n_strata)
        pi = np.divide(sampled, sizes, out=np.zeros(n_strata), where=sizes > 0)
        return layout.labels[layout.codes], pi[layout.codes]


def within_ranks(codes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Each document's 0-based rank by ``keys`` within its stratum. ``keys`` has shape
    ``(..., n_docs)`` (one row per replicate), and so has the result."""
    order = np.lexsort((keys, np.broadcast_to(codes, keys.shape)), axis=-1)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.broadcast_to(np.arange(keys.shape[-1]), keys.shape),
                      axis=-1)
    return position - np.searchsorted(np.sort(codes), codes)


def handout(codes: np.ndarray, counts: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The stratified sample that i.i.d. uniform ``keys`` give (in stratum h, the ``counts[h]``
    documents with the smallest keys: a simple random sample), in hand-out order: by the
    fraction (j + 1/2) / n_h of its stratum's sample that the j-th draw completes."""
    ranks = within_ranks(codes, keys)
    wanted = counts[codes]
    chosen = np.flatnonzero(ranks < wanted)
    progress = (ranks[chosen] + 0.5) / wanted[chosen]
    return chosen[np.lexsort((codes[chosen], progress))]


@dataclass(frozen=True)
class Stratum:
    """Documents whose best rank lies in ``lo..hi`` (``hi`` None: no bound), sampled at
    ``rate`` (1: exhaustive; see the module docstring)."""

    lo: int
    hi: int | None
    rate: float

    @property
    def label(self) -> str:
        return f"{self.lo}-{'' if self.hi is None else self.hi}"


def allocate(sizes: np.ndarray, rates: np.ndarray, budget: int) -> np.ndarray:
    """Sample sizes n_h for strata of ``sizes`` N_h at ``rates`` (in rank order) that spend
    ``budget`` exactly as far as the strata allow (steps 1-3 of the module docstring)."""
    counts = np.zeros(len(sizes), dtype=np.int64)
    full = np.flatnonzero(rates >= 1)
    before = np.cumsum(sizes[full]) - sizes[full]
    counts[full] = np.clip(budget - before, 0, sizes[full])
    left = budget - int(counts.sum())
    partial = (rates > 0) & (rates < 1) & (sizes > 0)
    if left > 0 and partial.any():
        caps = sizes[partial].astype(np.float64)
        counts[partial] = largest_remainder(water_fill(caps, caps * rates[partial], left))
    return counts


def water_fill(caps: np.ndarray, weights: np.ndarray, total: float) -> np.ndarray:
    """x_h = min(caps_h, c weights_h) with sum_h x_h = total (all caps when they do not
    reach it); a weight of 0 gets nothing (so less than total when the others' caps fall
    short)."""
    if caps.sum() <= total:
        return caps
    if (weights <= 0).any():
        out = np.zeros(len(caps))
        some = weights > 0
        out[some] = water_fill(caps[some], weights[some], total) if some.any() else []
        return out
    threshold = caps / weights
    order = np.argsort(threshold, kind="stable")
    capped = np.cumsum(caps[order]) - caps[order]
    free = np.cumsum(weights[order][::-1])[::-1]
    scale = (total - capped) / free
    c = scale[np.argmax(scale <= threshold[order])]
    return np.minimum(caps, c * weights)


def largest_remainder(real: np.ndarray) -> np.ndarray:
    """Integers within one of ``real`` with the same (rounded) total: the floors, plus one
    for the largest fractional parts."""
    floors = np.floor(real)
    extra = round(real.sum() - floors.sum())
    floors[np.argsort(floors - real, kind="stable")[:extra]] += 1
    return floors.astype(np.int64)


def _fitting_depth(best: np.ndarray, n: int) -> int:
    """The deepest k whose depth-k pool (documents of best rank <= k) has at most n docs."""
    pooled = np.cumsum(np.bincount(best, minlength=1))
    return int(np.searchsorted(pooled, n, side="right")) - 1


Strategy = Callable[[np.ndarray, int], "Layout"]


def _ranges(*strata: Stratum) -> Strategy:
    """A strategy of fixed best-rank ranges and rates."""
    return lambda best, budget: layout_of(best, list(strata), budget)


def _pool(best: np.ndarray, budget: int) -> Layout:
    return layout_of(best, [Stratum(1, _fitting_depth(best, budget), 1.0)], budget)


def _depthk_equal(best: np.ndarray, budget: int) -> Layout:
    k = _fitting_depth(best, budget // 2)
    return layout_of(best, [Stratum(1, k, 1.0), Stratum(k + 1, None, 0.5)], budget)


YILMAZ4_SHARES = (3.0, 1.5, 1.0)


def _yilmaz4(best: np.ndarray, budget: int) -> Layout:
    """The depth-k stratum of ``depthk+equal``, and the rest of the pool by best rank (ties
    in pool order) in three strata of equal size sharing the rest of the budget 3 : 1.5 : 1."""
    k = _fitting_depth(best, budget // 2)
    codes = np.zeros(len(best), dtype=np.int64)
    rest = np.flatnonzero(best > k)
    rest = rest[np.argsort(best[rest], kind="stable")]
    labels = [f"1-{k}"]
    for h, part in enumerate(np.array_split(rest, 3), start=1):
        codes[part] = h
        span = f"{best[part].min()}-{best[part].max()}" if len(part) else "none"
        labels.append(f"{span}#{h}")  # equal-size strata may share a best rank
    sizes = np.bincount(codes, minlength=4)
    shares = np.array(YILMAZ4_SHARES) / np.maximum(sizes[1:], 1)
    rates = np.concatenate([[1.0], 0.5 * shares / shares.max()])  # n_h in the share ratio
    return Layout(codes, np.array(labels, dtype=object), allocate(sizes, rates, budget))


STRATEGIES: dict[str, tuple[str, Strategy]] = {
    "pool": ("one exhaustive stratum, the deepest depth-k pool the budget covers "
             "(Voorhees 2014)", _pool),
    "1stratum": ("one uniform sample of the pool (Voorhees 2014)",
                 _ranges(Stratum(1, None, 1.0))),
    "2strata": ("top 10 exhaustive, the rest uniformly (Voorhees 2014, recommended)",
                _ranges(Stratum(1, 10, 1.0), Stratum(11, None, 0.1))),
    "3strata": ("top 10 exhaustive, 11-30, and 31- sampled at a tenth of 11-30's rate "
                "(Voorhees 2014)", _ranges(Stratum(1, 10, 1.0), Stratum(11, 30, 0.3),
                                           Stratum(31, None, 0.03))),
    "depthk+equal": ("depth-k pool of half the budget plus as many sampled from the rest "
                     "(Yilmaz et al. 2008, sec. 3.1)", _depthk_equal),
    "yilmaz4": ("depth-k pool of half the budget, the rest in three equal strata sampled "
                "3 : 1.5 : 1 (Yilmaz et al. 2008, sec. 5)", _yilmaz4),
}
_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d*)\s*:\s*([0-9.eE+-]+)\s*$")


def parse_strata(text: str) -> list[Stratum]:
    """``1-10:1,11-30:0.3,31-:0.1`` as strata in rank order; UsageError when malformed,
    overlapping or without a positive rate."""
    strata = []
    for part in text.split(","):
        match = _RANGE.match(part)
        if match is None:
            raise UsageError(f"cannot read the stratum {part.strip()!r} of {text!r} "
                             "(write LO-HI:RATE or LO-:RATE, e.g. 1-10:1,11-100:0.2)")
        lo, hi = int(match[1]), int(match[2]) if match[2] else None
        try:
            rate = float(match[3])
        except ValueError:
            raise UsageError(f"stratum {part.strip()!r}: {match[3]!r} is not a rate") from None
        if lo < 1 or (hi is not None and hi < lo) or not 0 <= rate <= 1:
            raise UsageError(f"stratum {part.strip()!r}: ranks must satisfy 1 <= LO <= HI "
                             "and the rate must lie in [0, 1]")
        strata.append(Stratum(lo, hi, rate))
    strata.sort(key=lambda s: s.lo)
    for a, b in pairwise(strata):
        if a.hi is None or b.lo <= a.hi:
            raise UsageError(f"strata {a.label} and {b.label} overlap in {text!r}")
    if not any(s.rate > 0 for s in strata):
        raise UsageError(f"no stratum of {text!r} has a positive rate")
    return strata


def layout_of(best: np.ndarray, strata: list[Stratum], budget: int) -> Layout:
    """Stratum codes of documents with best ranks ``best`` (those outside every range in a
    last stratum ``other``, never sampled) and the sample sizes that spend ``budget``."""
    strata = [s for s in strata if s.hi is None or s.hi >= s.lo]
    lows = np.array([s.lo for s in strata], dtype=np.int64)
    highs = np.array([np.iinfo(np.int64).max if s.hi is None else s.hi for s in strata],
                     dtype=np.int64)
    codes = np.searchsorted(lows, best, side="right") - 1
    inside = (codes >= 0) & (best <= highs[np.maximum(codes, 0)])
    codes = np.where(inside, codes, len(strata))
    sizes = np.bincount(codes, minlength=len(strata) + 1)
    rates = np.array([s.rate for s in strata] + [0.0])
    labels = np.array([s.label for s in strata] + ["other"], dtype=object)
    return Layout(codes, labels, allocate(sizes, rates, budget), wanted=rates > 0)


@register
class StrataSelector(StratifiedSelector):
    """Stratified random sampling by best rank (see the module docstring)."""

    name: ClassVar[str] = "strata"
    summary: ClassVar[str] = ("stratified random sampling by best rank (Voorhees 2014; "
                              "Yilmaz, Kanoulas & Aslam, SIGIR 2008)")
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("strategy", str, "2strata", "named strata", choices=tuple(STRATEGIES)),
        Param("strata", str, None, "custom strata by best rank and rate, e.g. "
              "1-10:1,11-30:0.3,31-:0.1 (instead of strategy)"),
    )

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        if "strategy" in params and "strata" in params:
            raise UsageError("give either strategy or strata, not both")
        if "strata" in self.params:
            self._strata = _ranges(*parse_strata(self.params["strata"]))
            del self.params["strategy"]
        else:
            self._strata = STRATEGIES[self.params["strategy"]][1]

    def _layout(self, tp: TopicPool, budget: int) -> Layout:
        return self._strata(tp.best_rank(), budget)

    def _starved_hint(self) -> str:
        return (", or strata whose exhaustive (rate 1) part fits the budget (fewer ranks at "
                "rate 1, or --param strategy=1stratum)")
