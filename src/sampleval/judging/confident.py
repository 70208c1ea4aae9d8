"""Judge until confident: a stopping and allocation rule over topics for any selection method.

Yilmaz, Kanoulas & Aslam (SIGIR 2008, sec. 6) close by proposing to let the confidence
intervals decide the sampling and the number of judgments. Here the organiser sets a
:class:`Target`, e.g. ``AP:0.01``: the 95% half-width of each run's mean over topics (for
every run, or for the runs named), (hi - lo) / 2 of the interval ``sampleval estimate``
reports (:func:`~sampleval.estimation.result.mean_sides`, the one home of that interval):
z sqrt(sum_t V_t) / T with V_t the topic's estimated sampling variance, plus |sum_t b_t| / T
for a bias-aware interval, plus half of the upper side's allowance max(sum_t a_t, 0) / T
under AP's ``few=completed`` (:func:`~sampleval.estimation.result.upper_allowance`; a plan
projects b_t and a_t to shrink by the factor that shrinks the topic's variance). The
interval reported at stopping (:meth:`ConfidentJudging.intervals`) is ``estimate``'s.
:class:`ConfidentJudging` then decides how many documents each topic's design receives, in
one of two ways.

**The phase-committed design** (the default for methods that lay out stratified samples:
``strata``, ``stratified``, ``uniform``, without predictions). Judging goes in phases; every
phase of a topic is the method's own design laid out afresh
(:meth:`~sampleval.selection.strata.StratifiedSelector.layout_within`) for a size fixed
*before* any of its documents is judged, over the documents the topic has not judged yet:

1. the pilot: ``start`` judgments per topic (the method's layout for that budget over the
   whole pool);
2. from the estimates, a plan gives each topic the size of its next phase (below); every
   topic's pilot is followed by a final phase of at least ``start`` documents (more where
   its design needs more to reach every stratum), so that no topic's last phase is one
   whose being last was decided from its own labels;
   with ``interim`` > 0 (:data:`INTERIM`; off by default), the phase after the pilot is an
   *interim* one of that share of the pilot's plan (at least ``start``), and every topic is
   still owed its final phase, planned from the pilot and the interim phase together (issue
   29 item 4, ``docs/research/calibration.md`` section 4: a 40-document pilot misjudges
   which topics need judgments). It is off by default because it halves the last phase,
   which alone estimates the documents not judged before it: AP's ratio bias grows as that
   phase shrinks, and on a sparse collection (Cranfield) most topics' last phase then finds
   nothing relevant, where neither the Taylor correction nor the jackknife sees the bias,
   so the intervals at stopping under-cover (``docs/research/anytime.md``, "The committed
   rule's coverage on Cranfield");
3. the phases are judged in full, without looking; then, if every targeted half-width
   meets the target, judging stops; otherwise a new plan gives further phases to the
   topics where they help most (a *shortfall*), until the target holds, the ``ceiling``
   is spent, or no design has documents left.

The sample (:meth:`ConfidentJudging.sample`) is an ordinary stratified sample: each topic's
documents judged before its last phase form one stratum judged in full (``earlier``, pi =
1), and its last phase's strata hold the documents not judged before it, pi = n_h / N_h.

Why it is valid. Given everything judged before a topic's last phase (the history H), the
last phase's size and layout are fixed, and it is a stratified simple random sample of the
documents not judged yet (``handout`` of i.i.d. uniform keys). The Horvitz-Thompson estimate
of a total, sum_{earlier} y_i + sum_{last} y_i / pi_i, therefore has conditional mean the
true total whatever H was and however the sizes were chosen from it, hence unconditional mean
the true total; its variance estimate is that of a fixed-size stratified sample, so the
interval covers with its nominal level given H (to the normal approximation), hence overall.
Topics' last phases are independent given H, so the variances add over topics. The earlier
phases are not wasted (their documents count exactly); only their information about the
documents *not* judged is set aside. What the design does not control is a shortfall: when
a phase meant to be final falls short, the decision that it was not final depends on its
labels. With C the event that the interval of the phase meant to be final covers and S a
shortfall, the interval used covers unless (not C and not S) or (S and the next phase's
interval misses): P(miss) <= alpha + alpha P(S), and the bias is
-E[(theta-hat - theta) 1(S)], at most sd(theta-hat) sqrt(P(S)). Plans therefore aim at the
target times (1 - ``margin``) and are made from variances that err on the safe side.
``tests/unit/test_confident.py`` checks the conditional unbiasedness by Monte Carlo with the
history held fixed.

The plan. For topic t and each targeted run, the last phase's estimated variance V_t is
divided by that phase's *design factor* D = sum_j (1/pi_j - 1) q_j (over the documents the
phase could draw, pi_j their inclusion probabilities, q_j their AP-prior,
:func:`~sampleval.core.ap_prior.document_prior`): the variance of a Horvitz-Thompson
total whose documents' squared contributions are expected in proportion to their AP-prior
(a relevant document weighs about 1/R in AP wherever it lies, and relevance is likelier
where the prior is high). A next phase of m documents over what is left then has variance
V_t(m) = (V_t / D_last) D_t(m), D_t(m) computed from the layout the method would make
(exactly at about 12 sizes, linearly between them). For a uniform design D = (N/m - 1) Q,
simple random sampling's 1/m - 1/N; for AP-prior sampling it falls faster, as the top
documents become certain. Measured on TREC-COVID round 5 (``stratified``, ratio of the
widest half-widths squared between fixed rates 0.1 and 0.2, 0.2 and 0.4): 3.6 and 4.0
observed, 2.9 and 4.1 from D, 2.3 and 2.7 from 1/m - 1/N. V_t / D_last, estimated from a
small sample, is noisy, and a topic whose sample missed its rare relevant documents looks
certain, or one that found a relevant document at a small inclusion probability looks
wildly uncertain (an AP~ht estimate above 1 after a relevant document found at a small
inclusion probability): each topic's value is shrunk halfway to the *median* over the topics
(:data:`SHRINK`; a topic where nothing relevant has been found gets the median), a centre
that one topic's extreme estimate does not move. The median under-reads the sum over topics
the target is on: a small sample's variance estimate is right-skewed (large in the few
samples that found a relevant document at a small inclusion probability), so the pilot's
median is far below its mean (about a quarter on TREC-COVID), and the first plan falls short
of the target; a shortfall plan then judges further the topics whose phase revealed a large
variance. Centring on the pooled value instead (sum_t V_t / sum_t D_last,t) makes the first
plan land at the target but costs more judgments and covers less, since the pilot cannot tell
which topics hold the unseen variance (``docs/research/anytime.md``, "Stop 42"); the
forecast from a pilot simulates the shortfall plans instead
(:func:`sampleval.judging.pilot_plan.campaign_forecast`). The plan starts from the variances as
measured (the half-widths the target is checked against) and projects only the topics it
gives a new phase, so that no topic's estimate is moved onto the others as present
variance they must be judged down from. A shortfall plan (no topic owed a phase) starts
instead from the shrunk values scaled to the measured variance of each run's mean: which
topics get a further phase then rests on their own last phase's labels half as much (a
topic whose last phase looked most uncertain, on AP also one whose estimate is high, is
otherwise the one re-judged, and the topics kept are selected low; measured in
``docs/research/calibration.md`` section 4, "The runaway plans"). Greedily, batch by batch,
the next judgments go where they shrink the widest targeted interval most per judgment (a
topic without a phase in this plan first needs one large enough to beat its last phase);
the number of judgments planned is the *projection of the judgments still needed*
(:meth:`ConfidentJudging.status`).
Where even every topic judged to its room leaves the target out of reach in projection, the
plan aims at the target for the variance it can remove (:meth:`ConfidentJudging.
_out_of_reach`), not at the ceiling: the topics behind it get their rooms, the others what
the target asks of them, and a shortfall phase follows on the new estimates if needed
(``docs/research/calibration.md`` section 4, "The runaway plans").

**The adaptive rule** (``committed=False``; any method, e.g. ``active`` or ``importance``,
whose designs record their draw probabilities as they go): every topic first receives
``start`` judgments (or :meth:`~sampleval.selection.base.Selector.judgments_to_cover`), then
the rule plans as above with V_t(m) = V_t g(m) / g(n_t), g(n) = 1/n - 1/N_t, judges the first
half of the plan through the selector's own ``propose``/``observe``, re-estimates and plans
again. Each topic's design hands out its documents in its own order, so the inclusion
probabilities are those the sample reports *given the number judged*; but that number
depends on the labels (optional stopping: a topic that looks certain stops early), which
biases AP down and makes the intervals under-cover (``docs/guide/confident.md``: coverage 0.75 at
target 0.02 on TREC-COVID). It is kept for the designs the committed phases do not cover.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sampleval.core.ap_prior import document_prior
from sampleval.core.design import GUARANTEES, STRATIFIED, as_design
from sampleval.core.pool import Pool
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.anytime import RANGE
from sampleval.estimation.engine.views import MEAN_TOPIC, TopicView, topic_views, z_value
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.result import (
    UNFLOORED,
    TopicParts,
    corrected,
    mean_sides,
    upper_allowance,
)
from sampleval.estimation.setup import accepts, estimator_of
from sampleval.estimation.spec import EstimateSpec, names_an_estimator
from sampleval.selection.base import Oracle, Selector
from sampleval.selection.strata import Layout, StratifiedSelector, handout

INTERIM = 0.0
"""Committed design: the share of the pilot's plan judged as an interim phase (module
docstring, step 2). 0 by default: the pilot's plan is the final phase, whose size keeps AP's
ratio bias small against the interval (0.5, the default before, halved the last phase and
under-covered on Cranfield: docs/research/anytime.md, "The committed rule's coverage on
Cranfield")."""


def has_phases(selector: Selector) -> bool:
    """Whether judging until confident can commit ``selector``'s phases: a method that lays
    out stratified samples (``strata``, ``stratified``, ``uniform``) without predictions."""
    return isinstance(selector, StratifiedSelector) and selector.predicted is None


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

    def spec(self, design: str, reach_every_document: bool = False) -> EstimateSpec:
        """The estimator this target is measured with, on a sample of ``design``
        (``reach_every_document``: whose every draw could reach every document)."""
        from sampleval.measures.names import parse_measure

        if not names_an_estimator(self.measure):
            plain = parse_measure(self.measure)
            if plain.rel is not None or plain.params:
                cut = "" if plain.cutoff is None else f"@{int(plain.cutoff)}"
                raise UsageError(f"the target {self.measure}: judging counts a document "
                                 "relevant at one relevance level for every measure; name the "
                                 "measure without a relevance level or gains of its own, e.g. "
                                 f"{plain.name}{cut}")
        return estimator_of(self.measure, as_design(design), reach_every_document)


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


@dataclass
class Phase:
    """One committed phase of a topic (module docstring): a fresh layout of the method's
    design for ``budget`` judgments over the documents not judged before it, handed out in
    ``order`` (pool indices), ``given`` of them so far; ``codes`` (-1 outside the phase's
    frame) and ``labels``: its strata."""

    budget: int
    order: np.ndarray
    codes: np.ndarray
    labels: np.ndarray
    counts: np.ndarray
    given: int = 0

    @property
    def open(self) -> bool:
        return self.given < len(self.order)


class ConfidentJudging:
    """Drive ``selector`` until ``target`` holds (module docstring).

    ``ceiling``: judgments in all (default: every topic's budget of the selector, which is
    also each topic's cap); ``start``: each topic's pilot, and the least size of its final
    phase (committed design), or its first judgments (adaptive rule) (default 10, at most
    the topic's budget); ``batch``: documents per step of the plan and per hand-out
    (default 5); ``ci``: the intervals' level; ``level``: relevance level of binary
    measures; ``committed``: the phase-committed design (None: whenever the method allows
    it, i.e. a method that lays out stratified samples, without predictions; False: the
    adaptive rule, for any method, whose intervals under-cover); ``margin``: committed
    phases are planned to reach the target half-width times (1 - margin); ``interim``: the
    share of the pilot's plan judged as an interim phase before every topic's final one
    (committed design; 0: none, the pilot's plan is meant to be final).
    """

    def __init__(self, selector: Selector, target: Target, *, ceiling: int | None = None,
                 start: int = 10, batch: int = 5, ci: float = 0.95, level: float = 1,
                 committed: bool | None = None, margin: float = 0.05,
                 interim: float = INTERIM) -> None:
        if start < 1 or batch < 1:
            raise UsageError("start and batch must be at least one judgment")
        if not 0 <= margin < 1:
            raise UsageError(f"the margin must lie in [0, 1), not {margin}")
        if not 0 <= interim < 1:
            raise UsageError(f"the interim share must lie in [0, 1), not {interim}")
        phased = has_phases(selector)
        if committed and not phased:
            raise UsageError(f"{selector.name}: the phase-committed design needs a method "
                             "that lays out stratified samples (strata, stratified, uniform) "
                             "without predictions")
        self.committed = phased if committed is None else committed
        """Whether judging follows the phase-committed design (else the adaptive rule)."""
        self.margin = margin
        self.interim = interim
        """Committed design: the share of the pilot's plan judged as an interim phase
        (module docstring; 0: none, the pilot's plan is meant to be final)."""
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
        self.spec = target.spec(selector.design,
                                selector.draws_reach_every_document(selector.params))
        if not accepts(FAMILIES[self.spec.family], selector.design):
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
        self.bias = np.zeros_like(self.variance)
        """The estimated bias that widens each interval (AP~ht's ``interval=bias-aware``)."""
        self.upper = np.zeros_like(self.variance)
        """The one-sided allowance that widens the upper side of each interval (AP under
        ``few=completed``: :func:`~sampleval.estimation.result.upper_allowance`; 0 else)."""
        self.found = np.zeros(len(self.topics), dtype=bool)
        """Whether a relevant document (label >= level) has been judged, per topic."""
        self._unfloored = np.full_like(self.variance, np.nan)
        self._design = np.full_like(self.variance, np.nan)
        self._views: dict[int, TopicView] = {}
        """Each estimated topic's view, and its value and variance before AP's ``few``
        correction (the floor; ``few=posterior``'s estimate), where the family estimates each
        topic from its own sample (:meth:`_refresh`)."""
        self.first = np.minimum(self.capacity, start if self.committed else np.maximum(
            start, [selector.judgments_to_cover(t) for t in self.topics]))
        """Each topic's judgments fixed in advance: its pilot (committed design), or
        ``start`` or more when its design needs more to reach every stratum
        (:meth:`Selector.judgments_to_cover`; adaptive rule)."""
        self.labels = [np.full(pool[t].size, np.nan) for t in self.topics]
        """Committed design: each topic's labels (pool order; NaN: not judged)."""
        self.phase_of = [np.full(pool[t].size, -1, dtype=np.int64) for t in self.topics]
        """Committed design: the phase each judged document belongs to (-1: none)."""
        self.phases: list[list[Phase]] = [[] for _ in self.topics]
        """Committed design: each topic's phases, the pilot first."""
        self.owed = np.zeros(len(self.topics), dtype=bool)
        """Committed design: the topics owed a further phase (after the pilot, and after
        the interim phase), planned before any of its labels are seen."""
        self.reason = ""
        """Why judging is over ('' while it is not)."""
        self._pending: set[int] = set()
        self._queue: list[int] = []
        self._projection: int | None = None
        self._reach: dict[tuple[int, int], int] = {}
        self._priors: dict[int, np.ndarray] = {}
        self._factor_cache: dict[tuple[int, int, int], np.ndarray] = {}

    # -- estimation ------------------------------------------------------------------------

    def sample(self) -> Sample:
        """The judgments so far with their design: the selector's sample (adaptive rule),
        or (committed design) a stratified sample in which each topic's documents judged
        before its last phase form one stratum judged in full ("earlier", pi = 1) and
        the last phase's strata hold the documents not judged before it, pi = n_h / N_h of
        what the phase has judged so far."""
        if not self.committed:
            return self.selector.sample()
        return self._phase_sample(range(len(self.topics)))

    def _phase_sample(self, indices: Sequence[int]) -> Sample:
        """:meth:`sample` of the committed design, for the topics ``indices``."""
        import pandas as pd

        pool = self.selector.pool
        parts = []
        for i in indices:
            tp, labels = pool[self.topics[i]], self.labels[i]
            stratum = np.full(tp.size, "none", dtype=object)
            inclusion = np.zeros(tp.size)
            if self.phases[i]:
                last = len(self.phases[i]) - 1
                phase = self.phases[i][last]
                inside = phase.codes >= 0
                codes = phase.codes[inside]
                sizes = np.bincount(codes, minlength=len(phase.labels))
                sampled = np.bincount(codes[~np.isnan(labels[inside])],
                                      minlength=len(phase.labels))
                pi = np.divide(sampled, sizes, out=np.zeros(len(sizes)), where=sizes > 0)
                names = np.array([f"{last}:{label}" for label in phase.labels], dtype=object)
                stratum[inside] = names[codes]
                inclusion[inside] = pi[codes]
                before = (self.phase_of[i] >= 0) & (self.phase_of[i] < last)
                stratum[before] = "earlier"
                inclusion[before] = 1.0
            parts.append(pd.DataFrame({
                "query_id": np.full(tp.size, tp.topic, dtype=object),
                "doc_id": pool.docnos[tp.doc_ids], "relevance": labels, "stratum": stratum,
                "inclusion": inclusion}))
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            columns=["query_id", "doc_id", "relevance", "stratum", "inclusion"])
        meta = {**self.selector._sample_meta(), "confident": {
            "target": f"{self.target.measure}:{self.target.half_width}",
            "design": "phase-committed", "start": self.start, "margin": self.margin,
            "phases": {t: len(p) for t, p in zip(self.topics, self.phases, strict=True)}},
            # committed phases: not one simple random sample of the frame, whatever the method
            "guarantees": dict.fromkeys(GUARANTEES, False)}
        return Sample(STRATIFIED, frame, meta=meta)

    def _sample_of(self, topics: list[str]) -> Sample:
        """Adaptive rule: :meth:`sample` restricted to ``topics``."""
        return self.sample().restricted(topics)

    def _estimate(self, topic_indices: Sequence[int]) -> None:
        """Re-estimate the given topics from the current sample. Where the family estimates
        each topic from its own sample (:data:`~sampleval.estimation.result.UNFLOORED`), the
        topics' parts before AP's ``few`` floor are kept, and the floor, which pools the
        topics, is applied anew over every topic estimated so far."""
        if not len(topic_indices):
            return
        sample = (self._phase_sample(topic_indices) if self.committed else self._sample_of(
            [self.topics[i] for i in topic_indices]))
        family = FAMILIES[self.spec.family]
        pool = self.selector.pool
        views = topic_views(pool, sample)
        t_index = {t: i for i, t in enumerate(self.topics)}
        if family.parts is not None:
            separate = UNFLOORED.get(family.parts)
            values, variances, biases = (family.parts if separate is None else separate)(
                pool.run_names, views, sample, self.spec, self.level)
            ti = np.array([t_index[v.pool.topic] for v in views], dtype=np.int64)
            self.value[ti], self.variance[ti], self.bias[ti] = values, variances, biases
            if separate is not None:
                self._unfloored[ti], self._design[ti] = variances, values
                self._views.update(zip(ti.tolist(), views, strict=True))
                known = sorted(self._views)
                # the floor pools the topics; the bias rule is per topic (idempotent)
                fixed = corrected(self.spec, [self._views[i] for i in known], self.level,
                                  TopicParts(self._design[known], self._unfloored[known],
                                             self.bias[known]))
                self.value[known], self.variance[known], self.bias[known] = fixed
                ti, views = np.array(known, dtype=np.int64), [self._views[i] for i in known]
            # the allowance pools the topics too (its model of the unjudged documents)
            upper = upper_allowance(self.spec, views, self.level, self.value[ti])
            self.upper[ti] = 0.0 if upper is None else upper
        else:
            rows = family.compute(pool.run_names, views, sample, [self.spec], self.level,
                                  self.ci)
            rows = rows[rows["query_id"] != MEAN_TOPIC]
            if rows["lo"].isna().any():
                raise UsageError(f"{self.spec.name} gives no interval: a target needs an "
                                 "estimator with a variance")
            r_index = {r: i for i, r in enumerate(pool.run_names)}
            rt = rows["query_id"].map(t_index).to_numpy()
            ri = rows["run"].map(r_index).to_numpy()
            half = (rows["hi"] - rows["lo"]).to_numpy(dtype=np.float64) / 2.0
            self.value[rt, ri] = rows["value"].to_numpy(dtype=np.float64)
            self.variance[rt, ri] = (half / self.z) ** 2
        for i in topic_indices:
            labels = sample.topic(self.topics[i]).labels
            self.found[i] = bool((labels[~np.isnan(labels)] >= self.level).any())

    def _sides(self, variance: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each targeted run's lower and upper half-widths of its mean over the topics it
        retrieved for, as ``estimate`` reports them
        (:func:`~sampleval.estimation.result.mean_sides`: z standard errors, the estimated
        bias, and under ``few=completed`` the upper allowance), from ``variance`` (default:
        the estimates')."""
        from sampleval.measures.aggregation import topic_sums

        v = self.variance if variance is None else variance
        present = self.present[:, self.runs]
        total = topic_sums(np.maximum(np.nan_to_num(v[:, self.runs]), 0.0), present)
        count = np.maximum(present.sum(axis=0), 1)
        return mean_sides(total, self._multiplier(total, count),
                          topic_sums(self.bias[:, self.runs], present),
                          topic_sums(self.upper[:, self.runs], present), count)

    def half_widths(self, variance: np.ndarray | None = None) -> np.ndarray:
        """Each targeted run's half-width of its mean, (hi - lo) / 2 of the interval
        ``estimate`` reports (:meth:`_sides`), the half-width a target is checked
        against."""
        down, up = self._sides(variance)
        return (down + up) / 2.0

    def intervals(self) -> dict[str, tuple[float, float, float]]:
        """Each targeted run's ``(estimate, lo, hi)`` of its mean over the topics it
        retrieved for (:meth:`_sides`; the interval reported at stopping)."""
        self._refresh()
        present = self.present[:, self.runs]
        mean = np.where(present, np.nan_to_num(self.value[:, self.runs]), 0.0).sum(
            axis=0) / np.maximum(present.sum(axis=0), 1)
        down, up = self._sides()
        names = self.selector.pool.run_names
        return {names[r]: (float(m), float(m - d), float(m + u))
                for r, m, d, u in zip(self.runs, mean, down, up, strict=True)}

    def _multiplier(self, total: np.ndarray, count: np.ndarray) -> np.ndarray:
        """The half-width in standard errors of each targeted run's mean whose summed
        variance over its ``count`` topics is ``total``: z."""
        return np.full(np.shape(total), self.z)

    def _over(self, total: np.ndarray, bias: np.ndarray, upper: np.ndarray,
              share: float) -> np.ndarray:
        """Each targeted run's projected half-width over ``share`` of the target, from its
        projected summed variance ``total``, summed bias ``bias`` and summed upper
        allowance ``upper`` over the topics (:meth:`half_widths`' interval). A projection
        shrinks a topic's bias and allowance by the factor that shrinks its variance: the
        bias left after the Taylor correction is O(1/n) or smaller, and the allowance's
        expected relevant documents in the strata where nothing was found shrink with the
        draws there (:func:`~sampleval.estimation.engine.unseen.completion_gap`)."""
        count = np.maximum(self.present[:, self.runs].sum(axis=0), 1)
        down, up = mean_sides(total, self._multiplier(total, count), bias, upper, count)
        return (down + up) / 2.0 / (self.target.half_width * share)

    # -- planning --------------------------------------------------------------------------

    def _shrink(self, n: np.ndarray, m: np.ndarray) -> np.ndarray:
        """V(m) / V(n) per topic under g(n) = 1/n - 1/N (0 once the pool is judged)."""
        g_n = 1.0 / np.maximum(n, 1) - 1.0 / self.pool_size
        g_m = 1.0 / np.maximum(m, 1) - 1.0 / self.pool_size
        return np.where(g_n > 0, np.maximum(g_m, 0.0) / np.where(g_n > 0, g_n, 1.0), 0.0)

    def _planning_variance(self, present: np.ndarray, open_: np.ndarray,
                           g: np.ndarray, shrink: float = 1.0,
                           centre: np.ndarray | None = None) -> np.ndarray:
        """The targeted runs' variances the plan starts from: the estimates, except on a
        topic where no relevant document has been found while its design has judgments left
        (its variance estimates say little about what is unseen), where each run gets at
        least the median over the other topics of its variance per unit of ``g`` (1/n - 1/N
        of the sample that gave the estimate), times the topic's own g; at least, because
        AP's ``few=`` floor there is part of the half-width the target is checked against
        (a plan below it would leave the target unmet with nothing planned). With ``shrink``
        < 1, each topic with judgments left gets ``shrink`` of its own value per unit of g
        plus the rest of the median over the topics (committed design's projection), or of
        ``centre`` (per targeted run) where given (:meth:`forecast`)."""
        v = np.nan_to_num(self.variance[:, self.runs])
        blank = ~self.found & open_ & (g > 0)
        if not (~blank).any():
            return v
        unit = np.where(present & (g > 0)[:, None], v / np.where(g > 0, g, 1.0)[:, None],
                        np.nan)[~blank]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a run with no variance yet
            typical = np.nan_to_num(np.nanmedian(np.where(unit > 0, unit, np.nan), axis=0))
        reported = v[blank]  # AP's few= floor there
        v[blank] = g[blank, None] * typical[None, :]
        if shrink < 1:
            if centre is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    centre = np.nan_to_num(np.nanmedian(unit, axis=0))
            pooled = g[:, None] * centre[None, :]
            own = np.where(blank[:, None], pooled, v)
            v = np.where(open_[:, None] & (g > 0)[:, None], shrink * own + (1 - shrink) * pooled,
                         v)
        v[blank] = np.maximum(v[blank], reported)
        return v

    def plan(self) -> np.ndarray:
        """Adaptive rule: the greedy allocation (module docstring, step 2), the topic index
        of each further batch, in order, until the target holds in projection or nothing
        is left. Committed design: the size of each topic's next phase (0: none)."""
        if self.committed:
            return self._plan_phases()
        room = np.where(self.exhausted, 0, self.capacity - self.judged)
        left = self.ceiling - int(self.judged.sum())
        present = self.present[:, self.runs]
        counted = self._counted()
        g = 1.0 / np.maximum(counted, 1) - 1.0 / self.pool_size
        base = self._planning_variance(present, room > 0, g)  # [T, R']
        extra = np.zeros(len(self.topics), dtype=np.int64)
        current = base.copy()
        total = np.where(present, current, 0.0).sum(axis=0)
        bias = np.where(present, self.bias[:, self.runs], 0.0)  # projected, per topic
        upper = np.where(present, self.upper[:, self.runs], 0.0)
        order: list[int] = []
        while left > 0:
            ratio = self._over(total, bias.sum(axis=0), upper.sum(axis=0), 1.0)
            if not (ratio > 1).any():
                break
            widest = int(np.argmax(np.where(ratio > 1, ratio, -np.inf)))
            step = np.minimum(self.batch, room - extra)
            after = base[:, widest] * self._shrink(counted, counted + extra + step)
            gain = np.where((step > 0) & present[:, widest], current[:, widest] - after,
                            -np.inf)
            best = _first_best(gain)
            if not np.isfinite(gain[best]) or gain[best] <= 0:
                break
            extra[best] += step[best]
            left -= int(step[best])
            shrink = self._shrink(counted, counted + extra)
            new = base[best] * shrink[best]
            total += np.where(present[best], new - current[best], 0.0)
            current[best] = new
            bias[best] = np.where(present[best], self.bias[best, self.runs] * shrink[best], 0.0)
            upper[best] = np.where(present[best], self.upper[best, self.runs] * shrink[best],
                                   0.0)
            order.append(best)
        self._projection = (int(extra.sum()) if not (
            self._over(total, bias.sum(axis=0), upper.sum(axis=0), 1.0) > 1).any() else None)
        return np.array(order, dtype=np.int64)

    def _counted(self) -> np.ndarray:
        """Adaptive rule: each topic's judgments its estimate rests on (the plan's n)."""
        return self.judged

    def _plan_phases(self, level: np.ndarray | None = None) -> np.ndarray:
        """Committed design: each topic's next phase size, greedily (module docstring);
        ``level``: each targeted run's projected variances scaled by it (:meth:`forecast`)."""
        remaining = (self.pool_size - self.judged).astype(np.int64)
        room = np.where(self.exhausted, 0, np.minimum(self.capacity - self.judged,
                                                      remaining)).astype(np.int64)
        left = self.ceiling - self._handed()
        factor_last = self._factor_last()
        present = self.present[:, self.runs]
        base = self._planning_variance(present, room > 0, factor_last)  # as measured
        shrunk = self._planning_variance(present, room > 0, factor_last, SHRINK)
        if level is not None:
            shrunk = shrunk * level[None, :]
        if not self.owed.any():  # a shortfall: the shrunk values, at the measured level
            measured = np.where(present, base, 0.0).sum(axis=0)
            level = np.where(present, shrunk, 0.0).sum(axis=0)
            base = shrunk * np.divide(measured, level, out=np.ones_like(level),
                                      where=level > 0)[None, :]
        unit = np.divide(shrunk, factor_last[:, None], out=np.zeros_like(shrunk),
                         where=factor_last[:, None] > 0)  # what a next phase is projected from
        factors = self._factors(room)  # [T, max room + 1]
        topics = np.arange(len(self.topics))
        least = np.array([self._least(i) if room[i] else 0 for i in topics.tolist()])
        extra = np.zeros(len(self.topics), dtype=np.int64)
        current = base.copy()
        bias = np.where(present, self.bias[:, self.runs], 0.0)  # projected, per topic
        upper = np.where(present, self.upper[:, self.runs], 0.0)

        def project(i: int, size: int) -> None:  # topic i's next phase at ``size``
            current[i] = unit[i] * factors[i, size]
            ratio = factors[i, size] / factor_last[i] if factor_last[i] > 0 else 0.0
            bias[i] = np.where(present[i], self.bias[i, self.runs] * ratio, 0.0)
            upper[i] = np.where(present[i], self.upper[i, self.runs] * ratio, 0.0)

        for i in np.flatnonzero(self.owed & (room > 0)):
            # the phase every topic is owed: its least size, or its whole room if smaller
            owed = min(int(least[i]), int(room[i]))
            size = min(owed, left)
            if size < owed:
                break
            extra[i], left = size, left - size
            project(int(i), size)
        share = 1 - self.margin
        total = np.where(present, current, 0.0).sum(axis=0)
        excess = self._out_of_reach(unit, factors, factor_last, room, current, share)
        jumps: dict[int, np.ndarray] = {}
        while left > 0:
            ratio = self._over(np.maximum(total - excess, 0.0), bias.sum(axis=0),
                               upper.sum(axis=0), share)
            if not (ratio > 1).any():
                break
            w = int(np.argmax(np.where(ratio > 1, ratio, -np.inf)))
            if w not in jumps:  # a fresh phase must beat the last one: its least size
                with np.errstate(invalid="ignore"):  # 0 * inf where a topic has no room
                    beats = unit[:, w, None] * factors < base[:, w, None]
                beats[:, 0] = False
                first = np.where(beats.any(axis=1), beats.argmax(axis=1), room + 1)
                jumps[w] = np.maximum(least, first + self.batch)
            fresh = extra == 0
            step = np.minimum(np.where(fresh, jumps[w], self.batch), room - extra)
            step = np.minimum(step, left).astype(np.int64)
            valid = (step > 0) & present[:, w] & (unit[:, w] > 0) & ~(fresh & (step < least))
            with np.errstate(invalid="ignore"):
                after = unit[:, w] * factors[topics, np.where(valid, extra + step, 0)]
                gain = np.where(valid, (current[:, w] - after) / np.maximum(step, 1), -np.inf)
            best = int(np.argmax(gain))
            if not np.isfinite(gain[best]) or gain[best] <= 0:
                break
            extra[best] += step[best]
            left -= int(step[best])
            before = current[best].copy()
            project(best, int(extra[best]))
            total += np.where(present[best], current[best] - before, 0.0)
        open_rest = sum(len(p[-1].order) - p[-1].given for p in self.phases if p)
        self._projection = (open_rest + int(extra.sum()) if not (
            self._over(total, bias.sum(axis=0), upper.sum(axis=0), share) > 1).any() else None)
        return extra

    def _factor_last(self) -> np.ndarray:
        """Each topic's :meth:`_last_factor`."""
        return np.array([self._last_factor(i) for i in range(len(self.topics))])

    def forecast(self, rng: np.random.Generator, coverage: float = 0.9,
                 replicates: int = 200) -> tuple[int | None, int | None, int | None]:
        """Committed design: the judgments in all the rule is forecast to use (those made
        included), with a ``coverage`` interval: its plan from the current estimates with
        the projected variance of each run's mean at the level the topics' *pooled*
        variance per unit of design factor gives (sum_t V_t / sum_t D_last,t over the
        topics where something relevant was found) rather than their median, which the
        plan shrinks towards (module docstring: a small sample's variance estimates are
        right-skewed, so their median under-reads the sum over topics and a campaign goes
        on past its first plan). The interval re-plans at the pooled value's (1 -/+
        ``coverage``) / 2 quantiles over ``replicates`` resamples of those topics (a
        bootstrap over topics, from ``rng``): it reflects how well the pilot's topics fix
        the level, not the campaign's own draws. None: the plan cannot reach the target.
        ``spend="matched"`` reads it (:meth:`AnytimeJudging._forecast_plans`); ``sampleval
        plan`` simulates the campaigns instead (:func:`.pilot_plan.campaign_forecast`)."""
        if not self.committed:
            raise UsageError("a forecast from the plan needs the phase-committed design")
        self._refresh()
        remaining = (self.pool_size - self.judged).astype(np.int64)
        open_ = ~self.exhausted & (np.minimum(self.capacity - self.judged, remaining) > 0)
        g = self._factor_last()
        present = self.present[:, self.runs]
        v = np.nan_to_num(self.variance[:, self.runs])
        known = ((self.found | ~open_) & (g > 0))[:, None] & present
        weights = rng.poisson(1.0, (replicates, len(self.topics)))  # resamples of the topics

        def centre(w: np.ndarray) -> np.ndarray:
            return np.einsum("bt,tr->br", w, np.where(known, v, 0.0)) / np.maximum(
                np.einsum("bt,tr->br", w, np.where(known, g[:, None], 0.0)),
                np.finfo(float).tiny)

        tail = (1 - coverage) / 2
        point = centre(np.ones((1, len(self.topics))))[0]
        low, high = np.quantile(centre(weights), [tail, 1 - tail], axis=0)
        median = np.where(present, self._planning_variance(present, open_, g, SHRINK),
                          0.0).sum(axis=0)
        saved = self._projection
        made = []
        try:
            for c in (point, low, high):
                total = np.where(present, self._planning_variance(present, open_, g, SHRINK,
                                                                  c), 0.0).sum(axis=0)
                self._plan_phases(np.divide(total, median, out=np.ones_like(total),
                                            where=median > 0))
                made.append(None if self._projection is None
                            else int(self.judged.sum()) + self._projection)
        finally:
            self._projection = saved
        return made[0], made[1], made[2]

    def _out_of_reach(self, unit: np.ndarray, factors: np.ndarray, factor_last: np.ndarray,
                      room: np.ndarray, current: np.ndarray, share: float) -> np.ndarray:
        """Per targeted run, the projected variance of its mean (times the topic count
        squared) that no plan within the rooms removes, where it alone keeps the target out
        of reach, else 0: the plan then aims at the target for the variance it can remove
        (:meth:`_plan_phases`). A projection beyond what every topic judged to its room can
        reach rests on a topic whose variance per unit of design factor is extreme (on
        TREC-COVID, a relevant document found at a small inclusion probability: estimates
        of AP above 1); planning every topic to its room on its account commits the ceiling
        to one estimate, which that topic's next phase re-estimates (a shortfall phase
        follows if the target is still unmet). A topic whose phase at its room is projected
        no better than its variance now keeps the latter (the plan gives it no phase that
        does not beat its last one); counting the former made a shortfall plan declare the
        target out of reach, with less variance to remove than the target asked, and plan
        nothing (docs/research/calibration.md section 4, "Stop 40")."""
        present = self.present[:, self.runs]
        topics = np.arange(len(self.topics))
        with np.errstate(invalid="ignore"):  # 0 * inf where a topic has no room
            at_room = np.where((room > 0)[:, None] & (unit > 0), np.minimum(
                unit * factors[topics, room][:, None], current), current)
            scale = np.where((room > 0) & (factor_last > 0), factors[topics, room]
                             / np.where(factor_last > 0, factor_last, 1.0), 1.0)
        floor = np.where(present, at_room, 0.0).sum(axis=0)
        bias = np.where(present, self.bias[:, self.runs] * scale[:, None], 0.0).sum(axis=0)
        upper = np.where(present, self.upper[:, self.runs] * scale[:, None], 0.0).sum(axis=0)
        # the half-width's part that is not standard errors (mean_sides at no variance)
        fixed = self._over(np.zeros_like(floor), bias, upper, share)
        allowed = np.maximum(1.0 - fixed, 0.0) * self.target.half_width * share * np.maximum(
            present.sum(axis=0), 1) / self.z
        return np.where(floor > allowed ** 2, floor, 0.0)

    def _prior(self, i: int) -> np.ndarray:
        """Topic ``i``'s documents' AP-prior (pool order), the proxy of their variance."""
        if i not in self._priors:
            self._priors[i] = document_prior(self.selector.pool[self.topics[i]])
        return self._priors[i]

    def _design_factor(self, i: int, keep: np.ndarray, size: int,
                       layout: Layout | None = None) -> float:
        """sum_j (1/pi_j - 1) q_j over the documents ``keep`` marks, pi_j those of a phase
        of ``size`` laid out over them (``layout``, if given), q_j the AP-prior: the
        variance of a Horvitz-Thompson total whose documents' squared contributions are
        expected in proportion to their AP-prior (module docstring)."""
        selector = self.selector
        assert isinstance(selector, StratifiedSelector)
        if layout is None:
            layout = selector.layout_within(self.topics[i], keep, size)
        inside = layout.codes >= 0
        codes = layout.codes[inside]
        sizes = np.bincount(codes, minlength=len(layout.labels))
        pi = np.divide(layout.counts, sizes, out=np.zeros(len(sizes)), where=sizes > 0)[codes]
        q = self._prior(i)[inside]
        return float(np.sum(np.where(pi > 0, 1.0 / np.where(pi > 0, pi, 1.0) - 1.0, 0.0) * q))

    def _last_factor(self, i: int) -> float:
        """The design factor of topic ``i``'s last phase (0 without one)."""
        if not self.phases[i]:
            return 0.0
        phase = self.phases[i][-1]
        return self._design_factor(i, phase.codes >= 0, phase.budget,
                                   Layout(phase.codes, phase.labels, phase.counts))

    def _factors(self, room: np.ndarray) -> np.ndarray:
        """``[T, max(room) + 1]``: each topic's design factor of a next phase of m documents
        over those it has not judged, m = 0..its room (exact at about 12 sizes spaced
        geometrically, linear between them; inf at m = 0 and beyond the room)."""
        out = np.full((len(room), int(room.max(initial=0)) + 2), np.inf)
        for i in np.flatnonzero(room > 0).tolist():
            key = (i, int(self.judged[i]), int(room[i]))
            if key not in self._factor_cache:
                keep = np.isnan(self.labels[i])
                sizes = np.unique(np.round(np.geomspace(1, room[i], 12)).astype(np.int64))
                values = [self._design_factor(i, keep, int(m)) for m in sizes]
                self._factor_cache[key] = np.interp(np.arange(1, room[i] + 1), sizes, values)
            out[i, 1:room[i] + 1] = self._factor_cache[key]
        return out

    def _least(self, i: int) -> int:
        """The smallest phase topic ``i`` may receive now: ``start``, or more where its
        design needs more to reach every stratum of the documents not judged yet (all of
        them at most)."""
        remaining = int(self.pool_size[i] - self.judged[i])
        key = (i, remaining)
        if key not in self._reach:
            keep = np.isnan(self.labels[i])
            selector = self.selector
            assert isinstance(selector, StratifiedSelector)

            def starved(size: int) -> bool:
                return bool(selector.layout_within(self.topics[i], keep, size).starved())

            low = min(self.start, remaining)
            if starved(low):
                high = remaining
                while low < high:
                    middle = (low + high) // 2
                    if starved(middle):
                        low = middle + 1
                    else:
                        high = middle
            self._reach[key] = low
        return self._reach[key]

    def _handed(self) -> int:
        """Documents handed out so far (judged or waiting for labels)."""
        if not self.committed:
            return int(self.judged.sum())
        return sum(p.given for phases in self.phases for p in phases)

    def _commit(self, sizes: np.ndarray, owed: bool = False) -> None:
        """Lay out each topic's next phase of ``sizes[i]`` documents (none where 0) over
        the documents it has not judged, drawn with the selector's generator; ``owed``:
        each such topic is owed a further phase (the pilot, an interim phase)."""
        selector = self.selector
        assert isinstance(selector, StratifiedSelector)
        self.owed[sizes > 0] = owed
        for i in np.flatnonzero(sizes > 0):
            keep = np.isnan(self.labels[i])
            layout = selector.layout_within(self.topics[i], keep, int(sizes[i]))
            self.phases[i].append(_phase(layout, int(sizes[i]), keep, selector.rng))
            self._pending.add(int(i))  # its sample's strata have changed

    # -- judging ---------------------------------------------------------------------------

    def next_batch(self) -> tuple[str, list[str]] | None:
        """The next documents to judge, ``(topic, docnos)``, or None when judging is over
        (:attr:`reason` says why) or, with the committed design, when the phase's
        documents handed out are waiting for their labels (the next phase is planned from
        them; :attr:`reason` is then ''). Hand the labels back with :meth:`observe`; a
        simulation or a campaign calls the two in turn."""
        if self.committed:
            return self._next_phase_batch()
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

    def proposal_design(self, topic: str, docnos: list[str]) -> tuple[list[str], np.ndarray]:
        """For documents :meth:`next_batch` just proposed for ``topic``: the stratum each
        has in :meth:`sample` and its inclusion probability once its phase is judged
        (committed design: ``PHASE:STRATUM`` and n_h / N_h of the phase's plan; the
        selector's own otherwise)."""
        if not self.committed:
            return self.selector.proposal_design(topic, docnos)
        index = self.topics.index(topic)
        last = len(self.phases[index]) - 1
        phase = self.phases[index][last]
        inside = phase.codes >= 0
        sizes = np.bincount(phase.codes[inside], minlength=len(phase.labels))
        pi = np.divide(phase.counts, sizes, out=np.zeros(len(sizes)), where=sizes > 0)
        where = self.selector._pool_positions(topic)
        codes = phase.codes[[where[d] for d in docnos]]
        return [f"{last}:{phase.labels[c]}" for c in codes], pi[codes]

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        """Record the labels of documents :meth:`next_batch` proposed."""
        index = self.topics.index(topic)
        if not self.committed:
            self.selector.observe(topic, judgments)
            self.judged[index] += len(judgments)
            self._pending.add(index)
            return
        phases = self.phases[index]
        where, labels = self.selector._received(
            topic, judgments, phases[-1].order[:phases[-1].given] if phases else
            np.zeros(0, dtype=np.int64))
        self.labels[index][where] = labels
        self.phase_of[index][where] = len(phases) - 1
        self.judged[index] = int((~np.isnan(self.labels[index])).sum())
        self._pending.add(index)

    def _next_phase_batch(self) -> tuple[str, list[str]] | None:
        """Committed design: the next documents of an open phase; when every phase is
        handed out and judged, the next phases (the pilot first), or the end."""
        while True:
            left = self.ceiling - self._handed()
            opened = [i for i, p in enumerate(self.phases) if p and p[-1].open]
            if opened and left > 0:
                return self._hand_out(opened[0], left)
            step = self._without_open_phase(self._awaiting(), left)
            if step == "again":
                continue
            if step == "stop":
                return None
            final = all(not self.owed[i] or self.exhausted[i] or self.judged[i] >= min(
                self.capacity[i], self.pool_size[i]) for i in range(len(self.topics)))
            if final and (self.half_widths() <= self.target.half_width).all():
                self.reason = "target met"
                return None
            sizes = self._plan_phases()
            if not sizes.any():
                self.reason = ("the target cannot be met: no topic's design has judgments "
                               "left that would narrow the widest interval")
                return None
            interim = self.interim > 0 and all(len(p) <= 1 for p in self.phases)
            if interim:  # right after the pilot: a share of the plan, every topic still owed
                least = np.array([self._least(i) if n else 0 for i, n in enumerate(sizes)])
                sizes = np.where(sizes > 0, np.minimum(sizes, np.maximum(
                    np.ceil(self.interim * sizes).astype(np.int64), least)), 0)
            self._commit(sizes, owed=interim)

    def _without_open_phase(self, waiting: bool, left: int) -> str:
        """Committed design, no open phase to hand out from: ``"stop"`` (labels still owed,
        the ceiling spent, or no pilot to lay), ``"again"`` (the pilots just laid) or
        ``"plan"`` (every phase judged; the estimates refreshed for the next plan)."""
        if waiting:
            return "stop"
        if left <= 0:
            self.reason = "ceiling spent"
            return "stop"
        if not any(self.phases):
            return "again" if self._lay_pilots() else "stop"
        self._refresh()
        return "plan"

    def _hand_out(self, i: int, left: int) -> tuple[str, list[str]]:
        """Committed design: the next ``batch`` documents (at most ``left``) of topic
        ``i``'s open phase, in its hand-out order."""
        phase = self.phases[i][-1]
        chosen = phase.order[phase.given:phase.given + min(self.batch, left)]
        phase.given += len(chosen)
        tp = self.selector.pool[self.topics[i]]
        return self.topics[i], [str(d) for d in self.selector.pool.docnos[tp.doc_ids[chosen]]]

    def _awaiting(self) -> bool:
        """Committed design: whether documents handed out still await their labels."""
        return any(p and int((~np.isnan(self.labels[i][p[-1].order[:p[-1].given]])).sum())
                   < p[-1].given for i, p in enumerate(self.phases))

    def _lay_pilots(self) -> bool:
        """Committed design: lay out every topic's pilot (each owed a further phase); False
        (and the reason) when no topic has documents to judge."""
        self._commit(np.where(self.pool_size > 0, self.first, 0), owed=True)
        if not any(self.phases):
            self.reason = "no topic has documents to judge"
            return False
        return True

    def _next_topic(self) -> int | None:
        """Adaptive rule: step 1 while a topic lacks its ``start`` judgments, then the
        queued half of the current plan, planning anew (after re-estimating) when it is
        empty."""
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
        return self._take(order)

    def _take(self, order: np.ndarray) -> int | None:
        """Adaptive rule: queue the first half of the plan ``order`` and give its first
        topic; None (and the reason) when the plan is empty."""
        if not len(order):
            self.reason = ("the target cannot be met: no topic's design has judgments left "
                           "that would narrow the widest interval")
            return None
        self._queue = order[:max(1, (len(order) + 1) // 2)].tolist()
        return self._queue.pop(0)

    def _refresh(self) -> None:
        """Bring the estimates up to date once any topic has been judged since the last
        estimate, so that each is the one ``estimate`` gives, however judging was
        interrupted: where the family estimates each topic from its own sample
        (:data:`~sampleval.estimation.result.UNFLOORED`), the topics judged since (and any
        not estimated yet), with the floor that pools them applied anew over all
        (:meth:`_estimate`); else every topic, since a topic's variance may rest on the
        others' estimates. A look then costs in proportion to the topics it changed."""
        if self._pending:
            if FAMILIES[self.spec.family].parts in UNFLOORED:
                fresh = set(range(len(self.topics))) - set(self._views)
                self._estimate(sorted(self._pending | fresh))
            else:
                self._estimate(range(len(self.topics)))
        self._pending.clear()

    def status(self) -> Status:
        """The current :class:`Status`: estimates brought up to date, the projection planned
        anew."""
        self._refresh()
        self.plan()
        widths = self.half_widths()
        if self.reason == "target met":
            self._projection = 0
        names = self.selector.pool.run_names
        return Status(int(self.judged.sum()),
                      {names[r]: float(w) for r, w in zip(self.runs, widths, strict=True)},
                      float(widths.max(initial=0.0)), self._projection, bool(self.reason),
                      self.reason,
                      {t: int(n) for t, n in zip(self.topics, self.judged, strict=True)})

    def run(self, oracle: Oracle) -> Status:
        """Judge with ``oracle`` until judging is over; the final :class:`Status`
        (:meth:`sample` is the sample)."""
        while (batch := self.next_batch()) is not None:
            topic, docnos = batch
            self.observe(topic, oracle(topic, docnos))
        return self.status()

    # -- stopping and resuming -------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything needed to continue later, JSON-ready (the selector's state, its
        generator's included): :meth:`restore` it over the same pool and judging goes on
        as if never interrupted."""
        state: dict[str, Any] = {
            "format": STATE_FORMAT, "version": 1,
            "target": {"measure": self.target.measure, "half_width": self.target.half_width,
                       "runs": None if self.target.runs is None else list(self.target.runs)},
            "ceiling": self.ceiling, "start": self.start, "batch": self.batch, "ci": self.ci,
            "level": self.level, "committed": self.committed, "margin": self.margin,
            "interim": self.interim, "owed": self.owed.tolist(),
            "selector": self.selector.state(), "reason": self.reason,
            "judged": self.judged.tolist(), "exhausted": self.exhausted.tolist(),
            "queue": list(self._queue)}
        if self.committed:
            state["phases"] = {
                t: [{"budget": p.budget, "order": p.order.tolist(), "given": p.given}
                    for p in phases] for t, phases in zip(self.topics, self.phases, strict=True)
                if phases}
            state["labels"] = {}
            for t, labels, phase_of in zip(self.topics, self.labels, self.phase_of,
                                           strict=True):
                index = np.flatnonzero(~np.isnan(labels))
                if len(index):
                    state["labels"][t] = {"index": index.tolist(),
                                          "label": labels[index].tolist(),
                                          "phase": phase_of[index].tolist()}
        return state

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> ConfidentJudging:
        """The judging :meth:`state` described, over the same ``pool``."""
        from sampleval.selection import METHODS

        if state.get("format") != STATE_FORMAT or state.get("version") != 1:
            raise UsageError("not a saved state of judging until confident")
        saved = state["target"]
        target = Target(saved["measure"], saved["half_width"],
                        None if saved["runs"] is None else tuple(saved["runs"]))
        selector = METHODS[state["selector"]["method"]].restore(pool, state["selector"])
        judging = cls(selector, target, ceiling=state["ceiling"], start=state["start"],
                      batch=state["batch"], ci=state["ci"], level=state["level"],
                      committed=state["committed"], margin=state["margin"],
                      **({"interim": state.get("interim", 0.0)} if state["committed"]
                         else {}))  # committed states saved before it: none
        judging.reason = state["reason"]
        judging.judged[:] = state["judged"]
        judging.exhausted[:] = state["exhausted"]
        judging._queue = list(state["queue"])
        if judging.committed:
            index = {t: i for i, t in enumerate(judging.topics)}
            for t, saved_labels in state["labels"].items():
                i = index[t]
                judging.labels[i][saved_labels["index"]] = saved_labels["label"]
                judging.phase_of[i][saved_labels["index"]] = saved_labels["phase"]
            assert isinstance(selector, StratifiedSelector)
            for t, phases in state["phases"].items():
                i = index[t]
                for k, saved_phase in enumerate(phases):
                    phase_of = judging.phase_of[i]
                    keep = (phase_of < 0) | (phase_of >= k)
                    layout = selector.layout_within(t, keep, saved_phase["budget"])
                    judging.phases[i].append(Phase(
                        saved_phase["budget"], np.asarray(saved_phase["order"], dtype=np.int64),
                        layout.codes, layout.labels, layout.counts, saved_phase["given"]))
            judging.owed[:] = state["owed"] if "owed" in state else [
                len(p) == 1 for p in judging.phases]  # saved before it: owed after the pilot
        judging._pending = set(np.flatnonzero(judging.judged > 0).tolist())
        return judging


    @classmethod
    def from_pilot(cls, selector: Selector, target: Target, pilot: Sample,
                   **options: Any) -> ConfidentJudging:
        """The committed design with ``pilot`` as every topic's pilot phase (each owed its
        next phase): its :meth:`status` then projects what the rule's plan would judge after
        that pilot (``projected_needed``), as a campaign shows it once its pilots are judged.
        ``pilot`` is a stratified sample of ``selector``'s pool (its strata and labels are
        the pilot phase's: pi = n_h / N_h of the pool's documents in each stratum), e.g.
        ``sampleval sample stratified ... -n 20``; ``options``: the constructor's."""
        judging = cls(selector, target, committed=True, **options)
        frame = pilot.frame
        for i, topic in enumerate(judging.topics):
            rows = frame[frame["query_id"] == topic]
            where = selector._pool_positions(topic)
            inside = rows["doc_id"].isin(where.keys()).to_numpy()
            rows = rows[inside]
            if rows.empty:
                continue
            positions = np.array([where[d] for d in rows["doc_id"]], dtype=np.int64)
            names, index = np.unique(rows["stratum"].astype(str).to_numpy(), return_inverse=True)
            codes = np.full(len(judging.labels[i]), -1, dtype=np.int64)
            codes[positions] = index
            label = rows["relevance"].to_numpy(dtype=np.float64)
            seen = ~np.isnan(label)
            counts = np.bincount(index[seen], minlength=len(names))
            judging.labels[i][positions[seen]] = label[seen]
            judging.phase_of[i][positions[seen]] = 0
            judging.judged[i] = int(seen.sum())
            judging.phases[i].append(Phase(int(seen.sum()), positions[seen], codes, names,
                                           counts, int(seen.sum())))
            judging.owed[i] = True
            judging._pending.add(i)
        if not any(judging.phases):
            raise UsageError("the pilot judges no document of the runs' pool")
        return judging


def _first_best(gain: np.ndarray, tolerance: float = 1e-9) -> int:
    """The first index whose ``gain`` is within ``tolerance`` (relative) of the largest: the
    adaptive plan's choice of topic. Equal shares make exact ties (topics with the same
    judgments gain u (1/n - 1/(n + batch)) alike), which ``argmax`` would break by rounding,
    so that a change in the last bit of an estimate reordered the topics judged."""
    top = float(np.max(gain))
    if not np.isfinite(top) or top <= 0:
        return int(np.argmax(gain))
    return int(np.argmax(gain >= top * (1.0 - tolerance)))


STATE_FORMAT = "sampleval-confident"
SHRINK = 0.5
"""Committed design: the weight of a topic's own variance per unit of design factor in the
plan's projection, against the median over the topics (module docstring)."""


def _phase(layout: Layout, budget: int, keep: np.ndarray, rng: np.random.Generator) -> Phase:
    """A phase of ``layout``: a stratified simple random sample of its documents in
    hand-out order (:func:`~sampleval.selection.strata.handout`)."""
    inside = np.flatnonzero(keep)
    codes = layout.codes[inside]
    order = inside[handout(codes, layout.counts, rng.random(len(inside)))]
    return Phase(budget, order, layout.codes, layout.labels, layout.counts)



READY = 5
"""The anytime rule on committed phases: the draws of each stratum of a phase (as many as
the phase will make there, if fewer) before the look that may stop judging within it. With
2, the sequence covered 0.905-0.94 in the peeking Monte Carlo of
``tests/unit/test_anytime_phases.py`` (three seeds; its misses at the early looks, where a
stratum's variance rests on two labels), with 5 0.95-0.975 (assumption 3 of
``docs/guide/anytime.md``, the normal approximation)."""
SPENDS = (None, "plan-ends", "matched")
"""Where the anytime rule on committed phases may stop (:class:`AnytimeJudging`'s
``spend``): at any look, on the confidence sequence (None), or only at plan ends, on the
plan-end boundary with geometric spending (``plan-ends``) or spending matched to the plans
forecast from the pilot (``matched``)."""
MATCHED_PLANS = 2
"""The matched spending's plan ends forecast when the first plan's projection is within
:data:`FORECAST_WITHIN` of the planner's pooled forecast (the plan may end the campaign, or
one shortfall plan may follow); one more when it falls short of it
(:meth:`AnytimeJudging._forecast_plans`)."""
FORECAST_WITHIN = 0.10
"""How far the first plan's projected judgments may fall short of the planner's pooled
forecast before the matched spending expects a further shortfall plan (chosen between
TREC-COVID's pilots, 1.16-1.36 times, and Cranfield's, 0.93-1.03: docs/research/anytime.md,
Stop 43)."""
LIGHT_FIRST = 0.1
"""The share of alpha the matched spending puts on a first plan end forecast to fall short
(c = 2.807 at alpha = 0.05): the campaign is expected to stop at a later plan end, which
shares the rest (:meth:`AnytimeJudging._forecast_plans`)."""
ALLOCATIONS = ("pooled", "neyman", "own")
"""Which variances the anytime rule's plan reads (:class:`AnytimeJudging`)."""
STOP_MODES = ("committed", "anytime")
"""How judging until confident may stop: ``committed`` (:class:`ConfidentJudging`: committed
phases where the method allows, else the adaptive rule) or ``anytime``
(:class:`AnytimeJudging`: a look after every batch, anytime-valid intervals)."""
MIXTURE_STOP = "anytime-mixture"
"""The stop mode migration 0007 gives a campaign created with ``anytime`` before the range
boundary became the default: it keeps the normal-mixture boundary it began under (a boundary
changed between looks is no longer anytime-valid). Not offered for new campaigns."""


def is_anytime(stop: str | None) -> bool:
    """Whether the stop mode ``stop`` looks after every batch with anytime-valid intervals."""
    return stop in ("anytime", MIXTURE_STOP)


class AnytimeJudging(ConfidentJudging):
    """Judge until confident, looking after every batch (``stop=anytime``, issue 32).

    Each topic's design hands out its documents in its own order (the adaptive rule's
    ``propose``/``observe``; any method, with or without predictions): first ``start``
    judgments per topic (or more where the design needs more to reach every stratum), then
    batches of ``batch`` to the topics where the plan narrows the widest targeted interval
    most (:meth:`ConfidentJudging.plan`, with the half-widths below). After every batch whose
    labels are in (a *look*; or, with ``every``, the first such moment at least ``every``
    judgments after the last look), every targeted run's mean is re-estimated and judging
    stops at the first look where each one's half-width is at most the target.

    The half-widths are those of the anytime-valid confidence sequence
    (:mod:`sampleval.estimation.anytime`) placed by the target (plus the estimated bias
    that a bias-aware interval adds): with ``ratio`` (default
    :data:`~sampleval.estimation.anytime.RANGE`) the range boundary, c sqrt(V) for V in
    [V*/ratio, V*] and a tail sequence outside, V the variance of the run's mean and V* the
    variance at which c sqrt(V*) is the target; with ``ratio=None`` the normal mixture
    sqrt(V) m(x* V* / V) tuned at its V*. Because the sequence covers at every
    look at once, it covers at the look where judging stops, whatever the rule was
    (``docs/guide/anytime.md`` gives the argument and its assumptions, and the measured
    coverage). ``interval='fixed'`` uses the ordinary z intervals instead: the *naive
    rule*, which peeks after every batch with intervals valid at one fixed look, kept to
    measure what the sequence buys.

    ``allocation``: which variances the plan reads. ``pooled`` (the default): each topic's
    variance is the run's variance per unit of g(n) = 1/n - 1/N pooled over the topics
    (:meth:`_planning_variance`) times the topic's own g, so that no topic's share of the
    judgments depends on its own labels (the sequence's assumption that the topics judged
    next are not chosen from their estimates);
    ``own``: each topic's own estimated variance, which starves the topics whose rare
    relevant documents have not been drawn yet (estimate and variance both low) and biases
    the means down where relevant documents are sparse (``docs/guide/anytime.md``);
    ``neyman``: Neyman's shares fixed by the pilot. At the first look (every topic has its
    first judgments) each topic's weight w_t = max over the targeted runs r of u_tr / T_r^2
    is fixed, u_tr its variance per unit of g under active's with-replacement model
    (:func:`~sampleval.judging.planning.unit_variances`, as the planner's Neyman
    allocation), and the pilot's rounds are left out of every later estimate of the topics
    judged further (:meth:`sample`): each such topic then receives its first judgments
    again, and the plan gives topic t the variance w_t g_t c_r, g_t = 1/n_t - 1/N_t over
    its judgments after the pilot and c_r = sum_t V_tr / sum_t w_t g_t pooled over the
    open topics: the greedy plan gives n_t in proportion to sqrt(w_t), which the pilot
    alone chose, and the estimates it weighs, made from the rounds after the pilot, are
    a design chosen in advance given the pilot (the sequence holds given the pilot, so
    overall). The pilot's look is no stopping point and is not kept in :attr:`looks`.
    Needs ``active`` (rounds to leave out).

    ``committed=True`` (methods with committed phases: ``stratified``, ``strata``,
    ``uniform``, without predictions): the committed rule's design instead of the adaptive
    rule's. The pilot, then each topic's next phase as the committed rule plans it
    (:meth:`ConfidentJudging._plan_phases`, with the sequence's half-widths), handed out
    to the topic whose phase is least far through, a look after every batch once every
    phase has reached its strata (:meth:`_ready`), a further plan when a plan's phases are
    judged short of the target. Given the history before a plan its phases' sizes, layouts
    and hand-out order are fixed, so the sequence holds given it; a shortfall plan is
    decided from the labels and re-estimates its topics afresh, which the sequence's
    argument does not cover (``docs/guide/anytime.md``, "On the committed rule's stratified
    plan").
    """

    def __init__(self, selector: Selector, target: Target, *, ceiling: int | None = None,
                 start: int = 10, batch: int = 5, ci: float = 0.95, level: float = 1,
                 committed: bool | None = False, margin: float = 0.05,
                 interval: str = "anytime", every: int | None = None,
                 allocation: str = "pooled", ratio: float | None = RANGE,
                 interim: float = 0.0, spend: str | None = None,
                 plans: int | None = None) -> None:
        from sampleval.estimation.anytime import target_variance

        if spend not in SPENDS:
            raise UsageError(f"spend must be one of {', '.join(map(str, SPENDS))}, not "
                             f"{spend!r}")
        if spend and not committed:
            raise UsageError(f"spend={spend} stops only where a plan ends: it needs "
                             "committed phases")
        if plans is not None and (spend != "matched" or plans < 1):
            raise UsageError("plans= is the matched spending's forecast number of plan ends "
                             f"(at least 1, with spend=matched), not {plans}")
        if interim:
            raise UsageError("stop=anytime plans no interim phase: it may stop within any "
                             "phase")
        if committed and allocation != "pooled":
            raise UsageError("on committed phases the anytime rule's allocation is the "
                             f"phases' plan: allocation={allocation} applies to the "
                             "adaptive rule only")
        if interval not in ("anytime", "fixed"):
            raise UsageError(f"interval must be anytime or fixed, not {interval!r}")
        if allocation not in ALLOCATIONS:
            raise UsageError(f"allocation must be one of {', '.join(ALLOCATIONS)}, not "
                             f"{allocation!r}")
        if allocation == "neyman" and selector.name != "active":
            raise UsageError("allocation=neyman leaves the pilot's rounds out of the later "
                             f"estimates: it needs active's rounds, not {selector.name}")
        if not committed and selector.name == "active" and "batch" not in selector.params:
            raise UsageError("stop=anytime looks after every batch, and active's sample has "
                             "a topic's draws only once its round is judged: give it rounds "
                             f"of a batch, active:batch={batch}")
        super().__init__(selector, target, ceiling=ceiling, start=start, batch=batch, ci=ci,
                         level=level, committed=bool(committed), margin=margin)
        self.interval = interval
        self.allocation = allocation
        self.ratio = ratio
        """The range boundary's ratio of information (None: the normal mixture;
        :mod:`sampleval.estimation.anytime`)."""
        self.tuned = target_variance(target.half_width, ci, ratio)
        """V*: the variance of a run's mean at which its sequence's half-width is the
        target (the sequence's tuning, fixed before any judgment)."""
        self.boundary = "mixture" if ratio is None else "anytime"
        """The boundary as :mod:`sampleval.judging.planning` names it (a rule of
        :func:`~sampleval.judging.planning.widest_variance`), to read a look's half-width
        back to a variance."""
        self.handed = np.zeros(len(self.topics), dtype=np.int64)
        """Documents handed out per topic (judged or awaiting their label)."""
        self._out: list[set[str]] = [set() for _ in self.topics]
        """Each topic's documents handed out in this process and awaiting their label: a
        design drawing with replacement may propose one again before its label is in (two
        proposals without an observation between, as ``sampleval judge`` lists a step), and
        it is then handed out once."""
        self.looks: list[tuple[int, float]] = []
        """(judgments, widest targeted half-width) at each look, in order."""
        self.look_widths: list[np.ndarray] = []
        """Every targeted run's half-width at each look of :attr:`looks` (the planner's
        forecast from the looks pools the runs' decay; not saved with the state)."""
        if every is not None and every < 1:
            raise UsageError("looks must be at least one judgment apart")
        self.every = every
        """Judgments at least between looks (None: a look after every batch)."""
        self.spend = spend
        """``plan-ends`` or ``matched``: judging may stop only where a plan's phases are all
        judged, with the plan-end boundary (:func:`~sampleval.estimation.anytime.
        plan_end_multiplier`: geometric, or matched to the plans forecast from the pilot,
        :meth:`_forecast_plans`) instead of the sequence (None)."""
        self.plans = 0
        """Committed phases: the plans laid out after the pilot."""
        self.forecast_plans = plans
        """``matched``: the plan ends the spending is matched to (K; None until the first
        plan is laid out, when :meth:`_forecast_plans` fixes it)."""
        self.forecast_ratio: float | None = None
        """``matched``: the planner's pooled forecast over the first plan's projection
        (:meth:`_forecast_plans`; not saved with the state)."""
        self.first_share: float | None = None
        """``matched``: the share of alpha on the first plan end (:data:`LIGHT_FIRST` when
        the first plan is forecast to fall short; None: an equal share)."""
        self._sizing = False
        self.skip: dict[str, int] | None = None
        """``neyman``: the pilot's rounds left out of each topic's estimates (None until
        the pilot's look)."""
        self.weights = np.ones(len(self.topics))
        """The plan's per-topic weights w_t (``neyman``: fixed at the pilot's look)."""
        self.pilot = np.zeros(len(self.topics), dtype=np.int64)
        """``neyman``: the judgments of each topic's pilot left out of its estimates."""

    def sample(self) -> Sample:
        """The selector's sample, with ``neyman`` the pilot's rounds left out once the
        shares are fixed (class docstring): the sample every estimate is made from; on
        committed phases, the phases' (:meth:`ConfidentJudging.sample`)."""
        if self.committed:
            return super().sample()
        if self.skip is None:
            return self.selector.sample()
        selector: Any = self.selector
        return selector.sample(skip=self.skip)

    def _sample_of(self, topics: list[str]) -> Sample:
        """:meth:`sample` restricted to ``topics``; over ``active``, without building the
        other topics' tables (a look costs in proportion to the topics it changed)."""
        from sampleval.selection.active import ActiveSelector

        if isinstance(self.selector, ActiveSelector):
            return self.selector.sample(skip=self.skip, topics=topics)
        return self.sample().restricted(topics)

    def _counted(self) -> np.ndarray:
        return self.judged - self.pilot

    def _fix_shares(self) -> None:
        """``neyman``, at the pilot's look: fix the weights from the pilot's estimates and
        leave its rounds out of the later estimates of every topic with judgments left
        (class docstring); those topics receive their first judgments again."""
        from sampleval.judging.planning import FOUND, Shape, active_draws, unit_variances

        judged = self.sample().judged()
        relevant = judged[judged["relevance"] >= self.level].groupby("query_id").size()
        found = relevant.reindex(self.topics, fill_value=0).to_numpy() >= FOUND
        variance = np.where(self.present, self.variance, np.nan)[:, self.runs]
        shape = Shape(self.pool_size, active_draws(self.selector.pool, self.topics))
        unit = unit_variances(variance, self.judged.astype(np.float64), self.pool_size,
                              found, shape)
        count = np.maximum((~np.isnan(unit)).sum(axis=0), 1)
        self.weights = (np.nan_to_num(unit) / count[None, :] ** 2).max(axis=1, initial=0.0)
        selector: Any = self.selector
        more = ~self.exhausted & (self.handed < np.minimum(self.capacity, self.pool_size)) & [
            selector.can_draw_new(t) for t in self.topics]  # else no round would follow
        rounds = selector.rounds_of
        self.skip = {t: rounds(t) for t, m in zip(self.topics, more, strict=True) if m}
        self.pilot = np.where(more, self.judged, 0)
        self.first = np.where(more, np.minimum(self.capacity, self.handed + self.first),
                              self.first)
        self._views.clear()  # every topic estimated afresh at the next look
        self._unfloored[:] = np.nan
        self._design[:] = np.nan

    def _planning_variance(self, present: np.ndarray, open_: np.ndarray,
                           g: np.ndarray, shrink: float = 1.0,
                           centre: np.ndarray | None = None) -> np.ndarray:
        """The plan's variances (:attr:`allocation`). ``pooled``: each run's variance per
        unit of g over the topics whose designs have judgments left, u_r = sum_t V_tr /
        sum_t g_t (the run's estimated variances, as the look reads them), and each such
        topic's variance g_t u_r; the other topics keep their own. The plan then starts
        from the variance of the mean the look measured, and a topic's labels enter only
        u_r, a factor common to all topics."""
        if self.allocation == "own" or self.committed:
            return super()._planning_variance(present, open_, g, shrink, centre)
        v = np.nan_to_num(self.variance[:, self.runs])
        pooled = present & (open_ & (g > 0))[:, None]
        wg = (g * self.weights)[:, None]
        unit = np.where(pooled, v, 0.0).sum(axis=0) / np.maximum(
            np.where(pooled, wg, 0.0).sum(axis=0), np.finfo(float).tiny)
        return np.where(pooled, wg * unit[None, :], v)

    def _multiplier(self, total: np.ndarray, count: np.ndarray) -> np.ndarray:
        """The half-width in standard errors of each targeted run's mean whose summed
        variance over its ``count`` topics is ``total``: the anytime-valid sequence's
        (class docstring; ``interval='fixed'``: z). The reported interval and the target
        check are then :meth:`ConfidentJudging._sides`' with it (the estimated bias and
        the upper allowance added as ``estimate`` adds them)."""
        from sampleval.estimation.anytime import half_width, plan_end_multiplier

        if self.interval == "fixed":
            return np.full(np.shape(total), self.z)
        if self.spend:  # the plan laid out last, or the one being sized
            k = max(1, self.plans + self._sizing)
            if self.spend != "matched":
                return np.full(np.shape(total), plan_end_multiplier(k, self.ci))
            plans = self.forecast_plans or MATCHED_PLANS
            ends = range(k, max(k, plans) + 1) if self._sizing else [k]
            # a plan is sized for the narrowest boundary of its end and the forecast ends
            # after it (a light first end is not where the campaign is expected to stop)
            c = min(plan_end_multiplier(j, self.ci, plans=plans, first=self.first_share)
                    for j in ends)
            return np.full(np.shape(total), c)
        v = np.asarray(total, dtype=np.float64) / np.asarray(count, dtype=np.float64) ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(v > 0, half_width(v, self.tuned, self.ci, self.ratio) / np.sqrt(
                np.where(v > 0, v, 1.0)), 0.0)

    def next_batch(self) -> tuple[str, list[str]] | None:
        """The next documents to judge, ``(topic, docnos)``; None when judging is over
        (:attr:`reason` says why) or when what was handed out awaits its labels before the
        next look (:attr:`reason` is then '')."""
        if self.committed:
            return self._next_anytime_phase_batch()
        while True:
            topic = self._next_anytime_topic()
            if topic is None:
                return None
            want = (self.first[topic] - self.handed[topic]
                    if self.handed[topic] < self.first[topic] else self.batch)
            n = min(int(want), int(self.capacity[topic] - self.handed[topic]),
                    self.ceiling - int(self.handed.sum()))
            proposed = self.selector.propose(self.topics[topic], n) if n > 0 else []
            if proposed:
                fresh = set(proposed) - self._out[topic]
                if not fresh:  # every document proposed awaits its label already
                    return None
                self._out[topic] |= fresh
                self.handed[topic] += len(fresh)
                return self.topics[topic], proposed
            self.exhausted[topic] = True
            self._queue = [i for i in self._queue if i != topic]

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        self._out[self.topics.index(topic)].difference_update(judgments)
        super().observe(topic, judgments)

    def _next_anytime_topic(self) -> int | None:
        """The topic of the next batch: a topic short of its first judgments, else the
        queued half of the plan (planned anew when empty); before either, once every label
        handed out is in, a look (:meth:`look`) that may end judging."""
        starting = np.flatnonzero((self.handed < self.first) & ~self.exhausted)
        waiting = bool((self.handed > self.judged).any())
        due = (self.every is None or not self.looks
               or int(self.judged.sum()) - self.looks[-1][0] >= self.every
               or int(self.handed.sum()) >= self.ceiling)
        if not len(starting) and not waiting and due and self.look():
            self.reason = "target met"
            return None
        if int(self.handed.sum()) >= self.ceiling:
            if not waiting:
                self.reason = "target met" if self._last_look() else "ceiling spent"
            return None
        if len(starting):
            return int(starting[0])
        if self._queue:
            return self._queue.pop(0)
        if waiting:
            return None
        order = self.plan()
        if not len(order) and self._last_look():
            self.reason = "target met"
            return None
        return self._take(order)

    def _next_anytime_phase_batch(self) -> tuple[str, list[str]] | None:
        """Committed phases (class docstring): the next batch of the open phase least far
        through its order, so that every topic's phase of the plan progresses at the same
        fraction (:meth:`open_phases` looks and plans first)."""
        opened = self.open_phases()
        if not opened:
            return None
        progress = [self.phases[i][-1].given / len(self.phases[i][-1].order) for i in opened]
        return self._hand_out(opened[int(np.argmin(progress))], self.ceiling - self._handed())

    def open_phases(self) -> list[int]:
        """Committed phases: the topics whose phase of the current plan has documents to
        hand out, after what a step needs first: once every label handed out is in, a look
        where one is due and every open phase of the plan has reached each of its strata
        (:meth:`_ready`); when every phase is judged, the pilot's phases first, then (after
        the pilot, and after a plan's phases fall short) the next plan
        (:meth:`ConfidentJudging._plan_phases`, with the sequence's half-widths). Empty when
        judging is over (:attr:`reason` says why) or awaits labels before it can go on."""
        while True:
            left = self.ceiling - self._handed()
            waiting = self._awaiting()
            opened = [i for i, p in enumerate(self.phases) if p and p[-1].open]
            judged = int(self.judged.sum())
            due = (self.every is None or not self.looks
                   or judged - self.looks[-1][0] >= self.every or not opened or left <= 0)
            fresh = not self.looks or self.looks[-1][0] != judged
            if not waiting and due and fresh and self.may_stop() and self.look():
                self.reason = "target met"
                return []
            if opened and left > 0:
                return opened
            step = self._without_open_phase(waiting, left)
            if step == "again":
                continue
            if step == "stop":
                return []
            if self.spend == "matched" and self.forecast_plans is None:
                self.forecast_plans = self._forecast_plans()
                if self.forecast_plans > MATCHED_PLANS:
                    self.first_share = LIGHT_FIRST
            sizes = self._plan_phases()
            if not sizes.any():
                self.reason = ("the target cannot be met: no topic's design has judgments "
                               "left that would narrow the widest interval")
                return []
            self._commit(sizes)
            self.plans += 1

    def _plan_phases(self, level: np.ndarray | None = None) -> np.ndarray:
        """The next plan's sizes (:meth:`ConfidentJudging._plan_phases`), aimed with
        ``spend`` at the next plan end's boundary."""
        self._sizing = True
        try:
            return super()._plan_phases(level)
        finally:
            self._sizing = False

    def _forecast_plans(self) -> int:
        """``matched``, before the first plan: the plan ends the spending is matched to,
        :data:`MATCHED_PLANS`, or one more, the first of them light (:data:`LIGHT_FIRST`),
        when the first plan's projected judgments (its own plan from the pilot, sized at the
        first plan end's boundary) fall short by more than :data:`FORECAST_WITHIN` of the
        planner's forecast at the topics' pooled level
        (:meth:`ConfidentJudging.forecast`), or the plan cannot reach the target: the plan
        from the pilot then under-reads the variance and shortfall plans follow
        (``docs/guide/anytime.md``, "The plan-end boundary"). Decided from the pilot alone,
        before any plan end, so the spending is fixed in advance of every look it governs."""
        self.forecast_plans = MATCHED_PLANS  # the boundary the projections are sized for
        saved = self._projection
        try:
            self._plan_phases()
            own = self._projection
            with np.errstate(invalid="ignore"):  # the interval's ends, from one resample
                pooled = self.forecast(np.random.default_rng(0), replicates=1)[0]
        finally:
            self.forecast_plans = None
            self._projection = saved
        self.forecast_ratio = (None if own is None or pooled is None
                               else pooled / (int(self.judged.sum()) + own))
        short = self.forecast_ratio is None or self.forecast_ratio > 1 + FORECAST_WITHIN
        return MATCHED_PLANS + int(short)

    def may_stop(self) -> bool:
        """Committed phases: whether a look now may stop judging: a plan after the pilot is
        under way (the pilot's look is no stopping point) and its phases have reached their
        strata (:meth:`_ready`); with ``spend``, only once its phases are all judged."""
        if self.spend and (self._awaiting() or any(p and p[-1].open for p in self.phases)):
            return False
        return any(len(p) > 1 for p in self.phases) and self._ready()

    def hand_out(self, topic: str, most: int) -> list[str]:
        """Committed phases: the next documents, at most ``most`` (and the ceiling), of
        ``topic``'s open phase, for a hand-out that follows the topics' own pace (a
        campaign's assessors) rather than :meth:`next_batch`'s; none when its phase has
        nothing left to hand out or judging is over (:meth:`open_phases`)."""
        i = self.topics.index(topic)
        if i not in self.open_phases():
            return []
        keep = self.batch
        try:
            self.batch = max(1, int(most))
            return self._hand_out(i, self.ceiling - self._handed())[1]
        finally:
            self.batch = keep

    def _ready(self) -> bool:
        """Committed phases: whether every topic's last phase after its pilot has judged as
        many documents of each of its strata as the phase will, up to :data:`READY` (a
        stratum not reached yet would be left out of the estimate, and one drawn a few times
        has a variance estimate too rough for the normal approximation). The hand-out order makes this a function of how far each
        phase is, not of its labels (:func:`~sampleval.selection.strata.handout`)."""
        for i, phases in enumerate(self.phases):
            if len(phases) < 2:
                continue
            phase = phases[-1]
            given = phase.order[:phase.given]
            reached = np.bincount(phase.codes[given[~np.isnan(self.labels[i][given])]],
                                  minlength=len(phase.counts))
            if (reached < np.minimum(phase.counts, READY)).any():
                return False
        return True

    def _last_look(self) -> bool:
        """When judging can go no further (ceiling, caps, or the plan narrows nothing): a
        look at the judgments made since the last one, if any (:meth:`look`)."""
        if self.looks and self.looks[-1][0] == int(self.judged.sum()):
            return False
        return self.look()

    def look(self) -> bool:
        """Re-estimate the topics judged since the last look, record the look
        (:attr:`looks`), and say whether every targeted half-width is at most the target."""
        self._refresh()
        widths = self.half_widths()
        widest = float(widths.max(initial=0.0))
        judged = int(self.judged.sum())
        if not self.looks or self.looks[-1][0] != judged:
            self.looks.append((judged, widest))
            self.look_widths.append(widths)
        if self.allocation == "neyman" and self.skip is None:
            self._fix_shares()  # the pilot's look: no stopping point, and a look of another
            self.looks.clear()  # estimate, so not one of the sequence's (nor of forecasts
            self.look_widths.clear()  # from the looks)
            return False
        return bool((widths <= self.target.half_width).all())

    def status(self) -> Status:
        status = super().status()
        if self.reason == "target met":
            status.projected_needed = 0
        return status

    def state(self) -> dict[str, Any]:
        return {**super().state(), "stop": "anytime", "interval": self.interval,
                "every": self.every, "allocation": self.allocation, "skip": self.skip,
                "spend": self.spend, "plans": self.plans,
                "forecast_plans": self.forecast_plans, "first_share": self.first_share,
                "ratio": self.ratio,
                "weights": self.weights.tolist(), "pilot": self.pilot.tolist(),
                "first": self.first.tolist(),
                "handed": self.handed.tolist(), "looks": [list(x) for x in self.looks]}

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> ConfidentJudging:
        from sampleval.estimation.anytime import target_variance

        judging = super().restore(pool, state)
        assert isinstance(judging, AnytimeJudging)
        judging.interval = state.get("interval", "anytime")
        judging.every = state.get("every")
        judging.spend = state.get("spend")
        judging.plans = state.get("plans", 0)
        judging.forecast_plans = state.get("forecast_plans")
        judging.first_share = state.get("first_share")
        judging.allocation = state.get("allocation", "own")  # saved before the option
        judging.ratio = state.get("ratio")  # saved before the range boundary: the mixture
        judging.tuned = target_variance(judging.target.half_width, judging.ci, judging.ratio)
        judging.handed[:] = state["handed"]
        judging.skip = state.get("skip")
        judging.weights[:] = state.get("weights", judging.weights)
        judging.pilot[:] = state.get("pilot", judging.pilot)
        judging.first[:] = state.get("first", judging.first)
        judging.looks = [(int(n), float(w)) for n, w in state["looks"]]
        return judging


def restore_judging(pool: Pool, state: dict[str, Any]) -> ConfidentJudging:
    """The judging a saved :meth:`ConfidentJudging.state` describes: an
    :class:`AnytimeJudging` when it was saved with ``stop=anytime``."""
    kind = AnytimeJudging if state.get("stop") == "anytime" else ConfidentJudging
    return kind.restore(pool, state)


def make_judging(selector: Selector, target: Target, stop: str = "committed",
                 **options: Any) -> ConfidentJudging:
    """Judging until confident with the stop mode ``stop`` (:data:`STOP_MODES`, or a stored
    campaign's :data:`MIXTURE_STOP`). ``anytime`` on a method with committed phases
    (:func:`has_phases`) is the anytime rule on the committed rule's plan
    (``AnytimeJudging(committed=True)``), on any other the adaptive anytime rule; an explicit
    ``committed=`` among ``options`` decides instead."""
    if stop == MIXTURE_STOP:
        return AnytimeJudging(selector, target, ratio=None, **options)
    if stop not in STOP_MODES:
        raise UsageError(f"stop must be one of {', '.join(STOP_MODES)}, not {stop!r}")
    if stop == "anytime":
        return AnytimeJudging(selector, target, **{"committed": has_phases(selector),
                                                   **options})
    return ConfidentJudging(selector, target, **options)
