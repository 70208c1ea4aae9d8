"""Judge until confident: a stopping and allocation rule over topics for any selection method.

Yilmaz, Kanoulas & Aslam (SIGIR 2008, sec. 6) close by proposing to let the confidence
intervals decide the sampling and the number of judgments. Here the organiser sets a
:class:`Target`, e.g. ``AP:0.01``: the 95% half-width of each run's mean over topics (for
every run, or for the runs named), as ``sampleval estimate`` reports it, z sqrt(sum_t V_t) /
T with V_t the topic's estimated sampling variance. :class:`ConfidentJudging` then drives a
:class:`~sampleval.selection.base.Selector` through ``propose``/``observe``:

1. every topic's design first receives ``start`` judgments (so each has a variance), or
   more when its design needs more before every stratum it samples has a judgment
   (:meth:`~sampleval.selection.base.Selector.judgments_to_cover`: a stratum without one
   is outside the frame of every estimate, so stopping earlier would count its documents
   as not relevant);
2. from the current variances it projects, for every topic, how a topic's variance shrinks
   with more judgments under its design: V_t(m) = V_t(n_t) g_t(m) / g_t(n_t), with
   g_t(n) = 1/n - 1/N_t (simple random sampling's variance with the finite-population
   correction, N_t the topic's pool; a with-replacement design's 1/n is the same up to the
   correction). Greedily, batch by batch, it gives the next batch to the topic where it
   shrinks the widest targeted interval most, until every targeted half-width meets the
   target in projection or the ceiling is spent; the number of judgments this plan adds is
   the *projection of the judgments still needed* (:meth:`ConfidentJudging.status`). A
   topic where nothing relevant has been found has variance estimates of 0, which say
   nothing about what is unseen: the plan gives it the median variance (per unit of g) of
   the other topics instead;
3. it judges the first half of the plan, re-estimates the topics it touched, and plans
   again (a few phases, not a look after every batch; the whole plan would overshoot, as
   the projection is pessimistic where a design's census strata are handed out in
   proportion); it stops when every targeted
   half-width meets the target with no further judgment planned (the estimates'
   half-widths, with step 2's stand-in variance on a topic where nothing relevant was
   found), when ``ceiling`` judgments are spent, or when no topic's design has anything
   left to propose.

Why each topic's design stays valid. The rule never chooses documents: it decides only how
many documents each topic's own sequential design hands out, and the selector keeps its
design for its full per-topic budget (the ceiling). For methods that fix their sample in
advance and hand it out in proportion (``strata``, ``stratified``, ``uniform``: the judged set
after any number of judgments is itself a stratified simple random sample,
:mod:`sampleval.selection.strata`) and for sequential designs that record their draw
probabilities as they go (``active``, ``importance``), the inclusion probabilities of what was
judged are exactly those the sample reports, *given the number judged*.

What the rule does change is that this number now depends on the labels seen (optional
stopping): a topic that looked certain (a small variance estimate) stops early. For a
linear (Horvitz-Thompson) estimator the estimate given a fixed size is unbiased, but with
a label-dependent size E[theta-hat] can move by the covariance between the stopping size and
the estimate; for the ratio estimators (AP = numerator / R-hat, xinfAP) there is also their
usual O(1/n) bias, which stopping small samples early can enlarge. Both shrink as ``start``
grows (each topic's first ``start`` judgments are fixed in advance and the allocation
beyond them depends on the labels only through the variances), and the bias of a
topic's estimate enters the mean over T topics divided by T. The ``confident_judging``
experiment (``python -m sampleval.experiments.confident_judging``; ``docs/confident.md``)
measures it on TREC-COVID round 5: the mean estimate against the truth over repeated
adaptive campaigns, and the coverage of the final intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sampleval.errors import UsageError
from sampleval.estimators.base import MEAN_TOPIC, topic_views, z_value
from sampleval.estimators.family import FAMILIES
from sampleval.estimators.names import EstimateSpec, estimator_for, parse_estimate
from sampleval.selection.base import Oracle, Selector


@dataclass(frozen=True)
class Target:
    """The 95% half-width ``half_width`` of the mean over topics of ``measure`` (an
    estimator's name, ``AP~ht``, or a plain measure, ``AP``, estimated by the estimator the
    sample's design prefers), for ``runs`` (None: every run of the pool)."""

    measure: str
    half_width: float
    runs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.half_width > 0:
            raise UsageError(f"the target half-width must be positive, not {self.half_width}")

    @classmethod
    def parse(cls, text: str, runs: Sequence[str] | None = None) -> Target:
        """``MEASURE:HALF_WIDTH``, e.g. ``AP:0.01`` or ``P@10~ht:0.02``."""
        measure, sep, width = text.rpartition(":")
        try:
            value = float(width)
        except ValueError:
            value = math.nan
        if not sep or not measure.strip() or not value > 0:
            raise UsageError(f"cannot read the target {text!r}: write MEASURE:HALF_WIDTH, "
                             "e.g. AP:0.01 (the 95% half-width of each run's mean)")
        return cls(measure.strip(), value, None if runs is None else tuple(runs))

    def spec(self, design: str) -> EstimateSpec:
        """The estimator this target is measured with, on a sample of ``design``."""
        from sampleval.measures.names import parse_measure

        if "~" in self.measure:
            return parse_estimate(self.measure)
        try:
            return parse_estimate(self.measure)  # established names: xinfAP, infAP ...
        except UsageError:
            plain = parse_measure(self.measure)
        cutoff = None if plain.cutoff is None else int(plain.cutoff)
        spec = estimator_for(plain.name, cutoff, design)
        if spec is None:
            raise UsageError(f"no estimator of {self.measure} applies to a {design} sample")
        return spec


@dataclass
class Status:
    """Where judging stands: judgments made, each targeted run's current half-width, the
    widest, the projected judgments still needed to meet the target (None: the ceiling or
    the designs cannot reach it), and whether judging has stopped and why."""

    judged: int
    half_widths: dict[str, float]
    widest: float
    projected_needed: int | None
    done: bool
    reason: str = ""
    per_topic: dict[str, int] = field(default_factory=dict)


class ConfidentJudging:
    """Drive ``selector`` until ``target`` holds (module docstring).

    ``ceiling``: judgments in all (default: every topic's budget of the selector);
    ``start``: judgments each topic receives before the rule allocates (default: 10, at
    most the topic's budget); ``batch``: documents per allocation step (default 5);
    ``ci``: the intervals' level; ``level``: relevance level of binary measures.
    """

    def __init__(self, selector: Selector, target: Target, *, ceiling: int | None = None,
                 start: int = 10, batch: int = 5, ci: float = 0.95, level: float = 1) -> None:
        if start < 1 or batch < 1:
            raise UsageError("start and batch must be at least one judgment")
        self.selector = selector
        self.target = target
        pool = selector.pool
        self.topics = list(pool.topics)
        self.capacity = np.array([selector.budget_for(t) for t in self.topics])
        self.ceiling = int(self.capacity.sum()) if ceiling is None else int(ceiling)
        self.start = start
        self.batch = batch
        self.ci = ci
        self.level = level
        self.z = z_value(ci)
        self.spec = target.spec(selector.design)
        if selector.design not in FAMILIES[self.spec.family].designs:
            raise UsageError(f"{self.spec.name} does not apply to {selector.name}'s "
                             f"{selector.design} samples")
        names = list(pool.run_names)
        wanted = names if target.runs is None else list(target.runs)
        unknown = [r for r in wanted if r not in names]
        if unknown:
            raise UsageError(f"target run(s) not in the pool: {', '.join(unknown)}")
        self.runs = np.array([names.index(r) for r in wanted])
        self.pool_size = np.array([pool[t].size for t in self.topics], dtype=np.float64)
        self.present = np.array([pool[t].present for t in self.topics])  # [T, R]
        self.judged = np.zeros(len(self.topics), dtype=np.int64)
        self.exhausted = np.zeros(len(self.topics), dtype=bool)
        self.variance = np.full((len(self.topics), len(names)), np.nan)
        self.value = np.full_like(self.variance, np.nan)
        self.found = np.zeros(len(self.topics), dtype=bool)
        """Whether a relevant document (label >= level) has been judged, per topic."""
        self.first = np.minimum(self.capacity, np.maximum(
            start, [selector.judgments_to_cover(t) for t in self.topics]))
        """Each topic's judgments fixed in advance: ``start``, or more when its design needs
        more to reach every stratum (:meth:`Selector.judgments_to_cover`)."""
        self.reason = ""
        """Why judging is over ('' while it is not)."""
        self._pending: set[int] = set()
        self._queue: list[int] = []
        self._projection: int | None = None

    # -- estimation ------------------------------------------------------------------------

    def _estimate(self, topic_indices: Sequence[int]) -> None:
        """Re-estimate the given topics from the selector's current sample."""
        if not len(topic_indices):
            return
        sample = _restricted(self.selector.sample(), [self.topics[i] for i in topic_indices])
        family = FAMILIES[self.spec.family]
        pool = self.selector.pool
        rows = family.compute(pool.run_names, topic_views(pool, sample), sample, [self.spec],
                              self.level, self.ci)
        rows = rows[rows["query_id"] != MEAN_TOPIC]
        if rows["lo"].isna().any():
            raise UsageError(f"{self.spec.name} gives no interval: a target needs an "
                             "estimator with a variance")
        t_index = {t: i for i, t in enumerate(self.topics)}
        r_index = {r: i for i, r in enumerate(pool.run_names)}
        ti = rows["query_id"].map(t_index).to_numpy()
        ri = rows["run"].map(r_index).to_numpy()
        half = (rows["hi"] - rows["lo"]).to_numpy(dtype=np.float64) / 2.0
        for i in topic_indices:
            labels = sample.topic(self.topics[i]).labels
            self.found[i] = bool((labels[~np.isnan(labels)] >= self.level).any())
        self.value[ti, ri] = rows["value"].to_numpy(dtype=np.float64)
        self.variance[ti, ri] = (half / self.z) ** 2

    def half_widths(self, variance: np.ndarray | None = None) -> np.ndarray:
        """Each targeted run's half-width of its mean over the topics it retrieved for."""
        v = self.variance if variance is None else variance
        present = self.present[:, self.runs]
        total = np.where(present, np.nan_to_num(v[:, self.runs]), 0.0).sum(axis=0)
        return self.z * np.sqrt(total) / np.maximum(present.sum(axis=0), 1)

    # -- planning --------------------------------------------------------------------------

    def _shrink(self, n: np.ndarray, m: np.ndarray) -> np.ndarray:
        """V(m) / V(n) per topic under g(n) = 1/n - 1/N (0 once the pool is judged)."""
        g_n = 1.0 / np.maximum(n, 1) - 1.0 / self.pool_size
        g_m = 1.0 / np.maximum(m, 1) - 1.0 / self.pool_size
        return np.where(g_n > 0, np.maximum(g_m, 0.0) / np.where(g_n > 0, g_n, 1.0), 0.0)

    def _planning_variance(self, present: np.ndarray, open_: np.ndarray) -> np.ndarray:
        """The targeted runs' variances the plan starts from: the estimates, except on a
        topic where no relevant document has been found while its design has judgments left
        (its variance estimates are 0, which says nothing about what is unseen),
        where each run gets the median over the other topics of its variance per unit of
        g(n) = 1/n - 1/N, times the topic's own g(n_t)."""
        v = np.nan_to_num(self.variance[:, self.runs])
        g = 1.0 / np.maximum(self.judged, 1) - 1.0 / self.pool_size
        blank = ~self.found & open_ & (g > 0)
        if blank.any() and (~blank).any():
            unit = np.where(present & (g > 0)[:, None], v / np.where(g > 0, g, 1.0)[:, None],
                            np.nan)[~blank]
            typical = np.nan_to_num(np.nanmedian(np.where(unit > 0, unit, np.nan), axis=0))
            v[blank] = g[blank, None] * typical[None, :]
        return v

    def plan(self) -> np.ndarray:
        """Greedy allocation (module docstring, step 2): the topic index of each further
        batch, in order, until the target holds in projection or nothing is left."""
        room = np.where(self.exhausted, 0, self.capacity - self.judged)
        left = self.ceiling - int(self.judged.sum())
        present = self.present[:, self.runs]
        base = self._planning_variance(present, room > 0)  # [T, R']
        count = np.maximum(present.sum(axis=0), 1)
        extra = np.zeros(len(self.topics), dtype=np.int64)
        current = base.copy()
        total = np.where(present, current, 0.0).sum(axis=0)
        order: list[int] = []
        limit = (self.target.half_width * count / self.z) ** 2
        while left > 0:
            over = total > limit
            if not over.any():
                break
            widest = int(np.argmax(np.where(over, total / limit, -np.inf)))
            step = np.minimum(self.batch, room - extra)
            after = base[:, widest] * self._shrink(self.judged, self.judged + extra + step)
            gain = np.where((step > 0) & present[:, widest], current[:, widest] - after,
                            -np.inf)
            best = int(np.argmax(gain))
            if not np.isfinite(gain[best]) or gain[best] <= 0:
                break
            extra[best] += step[best]
            left -= int(step[best])
            shrink = self._shrink(self.judged, self.judged + extra)
            new = base[best] * shrink[best]
            total += np.where(present[best], new - current[best], 0.0)
            current[best] = new
            order.append(best)
        self._projection = (int(extra.sum()) if not (total > limit).any() else None)
        return np.array(order, dtype=np.int64)

    # -- judging ---------------------------------------------------------------------------

    def next_batch(self) -> tuple[str, list[str]] | None:
        """The next documents to judge, ``(topic, docnos)``, or None when judging is over
        (:attr:`reason` says why). Hand the labels back with :meth:`observe`; a simulation
        or a campaign calls the two in turn."""
        while True:
            topic = self._next_topic()
            if topic is None:
                return None
            want = self.first[topic] - self.judged[topic] if (
                self.judged[topic] < self.first[topic]) else self.batch
            n = min(int(want), int(self.capacity[topic] - self.judged[topic]),
                    self.ceiling - int(self.judged.sum()))
            proposed = self.selector.propose(self.topics[topic], n) if n > 0 else []
            if proposed:
                return self.topics[topic], proposed
            self.exhausted[topic] = True

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        """Record the labels of documents :meth:`next_batch` proposed."""
        self.selector.observe(topic, judgments)
        index = self.topics.index(topic)
        self.judged[index] += len(judgments)
        self._pending.add(index)

    def _next_topic(self) -> int | None:
        """Step 1 while a topic lacks its ``start`` judgments, then the queued half of the
        current plan, planning anew (after re-estimating) when it is empty."""
        if self.judged.sum() >= self.ceiling:
            self.reason = "ceiling spent"
            return None
        starting = np.flatnonzero((self.judged < self.first) & ~self.exhausted)
        if len(starting):
            return int(starting[0])
        if self._queue:
            return self._queue.pop(0)
        self._refresh()
        order = self.plan()
        if self._projection == 0:
            self.reason = "target met"
            return None
        if not len(order):
            self.reason = ("the target cannot be met: no topic's design has judgments left "
                           "that would narrow the widest interval")
            return None
        self._queue = order[:max(1, (len(order) + 1) // 2)].tolist()
        return self._queue.pop(0)

    def _refresh(self) -> None:
        """Re-estimate the topics judged since the last estimate."""
        self._estimate(sorted(self._pending))
        self._pending.clear()

    def status(self) -> Status:
        """The current :class:`Status`: estimates brought up to date, the projection planned
        anew."""
        self._refresh()
        self.plan()
        widths = self.half_widths()
        names = self.selector.pool.run_names
        return Status(int(self.judged.sum()),
                      {names[r]: float(w) for r, w in zip(self.runs, widths, strict=True)},
                      float(widths.max(initial=0.0)), self._projection, bool(self.reason),
                      self.reason,
                      {t: int(n) for t, n in zip(self.topics, self.judged, strict=True)})

    def run(self, oracle: Oracle) -> Status:
        """Judge with ``oracle`` until judging is over; the final :class:`Status`
        (``selector.sample()`` is the sample)."""
        while (batch := self.next_batch()) is not None:
            topic, docnos = batch
            self.observe(topic, oracle(topic, docnos))
        return self.status()


def _restricted(sample: Any, topics: Sequence[str]) -> Any:
    """``sample`` with only ``topics`` (every table filtered)."""
    from dataclasses import replace

    keep = set(topics)
    tables: Mapping[str, Any] = {
        name: getattr(sample, name)[getattr(sample, name)["query_id"].isin(keep)]
        for name in ("frame", "draws", "rounds", "round_probs")
        if getattr(sample, name) is not None}
    return replace(sample, **tables)
