"""A campaign's target: judge until confident (:mod:`sampleval.judging.confident`,
``docs/guide/confident.md``) in a campaign.

The organiser gives a target when creating the campaign (``campaign create --target
AP~ht:0.02 [--target-run RUN]... [--start N]``): the 95% half-width of the mean over topics
of a measure, for every run or the runs named. Each time the live estimates are recomputed
(:mod:`.live`), :func:`target_status` measures the campaign's current sample against it
with :class:`~sampleval.judging.confident.ConfidentJudging`'s public API: a ConfidentJudging over
the campaign's selector, told what has been judged (:meth:`ConfidentJudging.observe`),
gives the current half-width of every targeted run and its projection of the judgments
still needed (:meth:`ConfidentJudging.status`).

What the projection means here. ConfidentJudging projects the judgments its allocation rule
would add, each batch going to the topic where it narrows the widest targeted interval
most. A campaign does not allocate by the rule: each topic's design hands out its own
plan, and assessors judge the topics they are given, so the campaign may need more than
projected unless the organiser steers assessors to the topics the plan names (the status
lists the first of them).

Stopping. Once every topic has its first ``start`` judgments (or more where its design
needs more to reach every stratum, :meth:`Selector.judgments_to_cover`; a topic whose plan
is all judged counts as started) and every targeted half-width meets the target
(ConfidentJudging's own test: no further judgment is planned), the campaign stops handing
out documents and says so (:func:`sampleval.campaign.organise.save_estimates` records it,
the service answers ``done``). Nothing is reallocated: the designs stay those fixed at
creation and judging only stops early, which is the optional stopping whose effect on the
estimates ``docs/guide/confident.md`` measures. The test runs whenever the live estimates are
recomputed (at most every ``--refresh`` seconds of ``sampleval serve``), so a few
judgments may arrive after the target is met; they are kept and counted.

``--stop anytime`` (``campaigns.target_stop``, issue 32; ``docs/guide/anytime.md``). The
rule is :class:`~sampleval.judging.confident.AnytimeJudging` (:func:`sampleval.judging.confident.make_judging`
with the stored stop mode): every recomputation of the live estimates is a *look*, the
half-widths are those of the anytime-valid confidence sequence, and the campaign stops at the
first look where every topic has its start and every targeted run's anytime half-width is at
most the target (:meth:`AnytimeJudging.look`, the test ``sample --stop anytime`` makes). The
looks so far, (judgments, widest half-width), are kept with the status (``looks``) and give
``rate_needed``, the judgments the current rate suggests (:func:`rate_needed`), and
``rate_range``, its interval.

On a method with committed phases (``stratified``, ``strata``, ``uniform``, without
predictions) an ``anytime`` campaign's hand-out is the rule's plan
(:class:`PlanSelector`, made at creation by :func:`campaign_selector` and restored from
its saved state by :func:`restore_campaign_selector`): the check is then the rule's own
look on the phases' sample, and the status adds ``plan_needed``, the judgments the
current plan's phases still need (:func:`plan_needed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from sampleval.core.pool import Pool
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.judging.confident import (
    STATE_FORMAT,
    AnytimeJudging,
    ConfidentJudging,
    Target,
    has_phases,
    is_anytime,
    make_judging,
    restore_judging,
)
from sampleval.judging.planning import forecast_from_looks
from sampleval.selection.base import Selector

DEFAULT_START = 20
"""Judgments each topic receives before the target may stop the campaign (as ``sampleval
sample --target``'s ``--start``)."""
NEXT_TOPICS = 5
"""How many of the topics the plan would judge next the status names."""


class _Observed:
    """A selector that has already observed every judgment: ConfidentJudging's
    :meth:`~ConfidentJudging.observe` then only counts them (everything else is the
    selector's)."""

    def __init__(self, selector: Selector) -> None:
        self._selector = selector

    def __getattr__(self, name: str) -> Any:
        return getattr(self._selector, name)

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        """Already observed by the campaign."""


class PlanSelector:
    """A campaign's hand-out under ``--stop anytime`` for a method with committed phases
    (:func:`~sampleval.judging.confident.has_phases`): the anytime rule on the committed
    rule's plan (``AnytimeJudging(committed=True)``, the rule ``sample --stop anytime`` and
    ``simulate`` run for these methods), in the selector's place. Each topic is handed out
    its pilot, then its phase of the current plan, a batch (:meth:`batch_size`) at a time as
    its assessors ask (:meth:`AnytimeJudging.hand_out`); a topic whose phase is handed out
    proposes nothing until every phase of the plan is judged and the next plan is made
    (:meth:`waits`: the service offers ``wait`` meanwhile and hands the topic its next phase
    when it has one, :meth:`reopens`). Its state is the rule's (phases, their hand-out
    orders, labels and the selector's generator), saved with every batch, so a campaign
    killed and restarted continues the same plan. Everything else is the method's
    selector's."""

    splits_state = False

    def __init__(self, rule: AnytimeJudging) -> None:
        if not rule.committed:
            raise UsageError("a campaign's plan needs the anytime rule on committed phases")
        self.rule = rule

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rule.selector, name)

    def __deepcopy__(self, memo: dict[int, Any]) -> PlanSelector:
        import copy

        return PlanSelector(copy.deepcopy(self.rule, memo))

    def batch_size(self, topic: str) -> int:
        return self.rule.batch

    def budget_for(self, topic: str) -> int:
        return self.rule.selector.budget_for(topic)

    def propose(self, topic: str, n: int) -> list[str]:
        return self.rule.hand_out(topic, n)

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        if judgments:
            self.rule.observe(topic, judgments)

    def waits(self, topic: str) -> bool:
        """Whether ``topic`` may be handed documents again (judging is not over), though it
        proposes none now."""
        return not self.rule.reason

    def reopens(self, topic: str) -> bool:
        """Whether ``topic``, which proposed nothing before, has documents to hand out now
        (a new plan gave it a phase)."""
        return self.rule.topics.index(topic) in self.rule.open_phases()

    def sample(self) -> Sample:
        return self.rule.sample()

    def state(self) -> dict[str, Any]:
        return self.rule.state()

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> PlanSelector:
        rule = restore_judging(pool, state)
        assert isinstance(rule, AnytimeJudging)
        return cls(rule)


def campaign_selector(selector: Selector, target: Target, start: int,
                      stop: str) -> Selector:
    """The hand-out of a new campaign over ``selector`` with ``target``: a
    :class:`PlanSelector` with ``stop='anytime'`` on a method with committed phases, else
    ``selector`` itself (whose own design the target check then measures). Raises
    UsageError where the target cannot apply (:func:`judging`)."""
    if stop != "anytime" or not has_phases(selector):
        judging(selector, target, start, stop)
        return selector
    rule = make_judging(selector, target, stop, start=start)  # before the selector draws
    assert isinstance(rule, AnytimeJudging)
    return cast(Selector, PlanSelector(rule))


def restore_campaign_selector(method: str, pool: Pool, state: dict[str, Any]) -> Selector:
    """The hand-out a campaign saved (:func:`campaign_selector`): a :class:`PlanSelector`
    when the state is the rule's, else the method's selector."""
    from sampleval.selection import METHODS

    if state.get("format") == STATE_FORMAT:
        return cast(Selector, PlanSelector.restore(pool, state))
    return METHODS[method].restore(pool, state)


def parse_target(text: str, runs: Sequence[str] | None = None) -> Target:
    """``MEASURE:HALF_WIDTH`` for ``runs`` (None: every run), as ``sampleval sample
    --target`` reads it."""
    return Target.parse(text, None if not runs else list(runs))


def judging(selector: Selector, target: Target, start: int,
            stop: str = "committed") -> ConfidentJudging:
    """Judging until confident over ``selector`` with the stop mode ``stop`` (raises
    UsageError when the target cannot apply to the method's design, names runs the pool
    lacks, or the stop mode does not apply to the method)."""
    return make_judging(cast(Selector, _Observed(selector)), target, stop, start=start)


def rate_needed(looks: Sequence[Sequence[float]], half_width: float,
                ci: float = 0.95, boundary: str = "anytime") -> int | None:
    """The further judgments the current rate suggests before the widest anytime-valid
    half-width reaches ``half_width``, from the ``looks`` so far ((judgments, widest
    half-width), oldest first): the planner's forecast from the looks
    (:func:`sampleval.judging.planning.forecast_from_looks`: the variance of the widest mean falls
    as a power of the judgments, fitted over the recent looks) less the judgments made,
    the half-widths read back by the campaign's ``boundary``
    (:attr:`~sampleval.judging.confident.AnytimeJudging.boundary`). 0 when met; None with
    fewer than two looks or no decrease yet."""
    forecast = forecast_from_looks(looks, half_width, boundary, ci=ci)
    if forecast is None or forecast.needed is None:
        return None
    return max(0, forecast.needed - forecast.judged)


def rate_range(looks: Sequence[Sequence[float]], half_width: float,
               ci: float = 0.95, boundary: str = "anytime") -> list[int | None] | None:
    """The 90% interval of :func:`rate_needed` (the forecast's, from the fit of the decay;
    None where it has none: fewer than three recent looks). An end None: unbounded."""
    forecast = forecast_from_looks(looks, half_width, boundary, ci=ci)
    if forecast is None or forecast.lo is None:
        return None
    return [max(0, forecast.lo - forecast.judged),
            None if forecast.hi is None else max(0, forecast.hi - forecast.judged)]


def target_status(selector: Selector, sample: Sample, target: Target, start: int,
                  finished: set[str], stop: str = "committed",
                  looks: Sequence[Sequence[float]] = ()) -> dict[str, Any]:
    """The target's status on the campaign's current ``sample`` (``selector`` has observed
    it; ``finished``: topics whose plan is all judged). JSON-ready: ``target``,
    ``measure`` (the estimator), ``half_width``, ``half_widths`` per targeted run,
    ``widest`` and ``widest_run``, ``projected_needed`` (None: the budgets cannot reach
    the target), ``next_topics``, ``short_of_start`` (judgments before every topic has
    its start), ``judged``, ``met``, ``stop``, and ``text``, a sentence saying where it
    stands. With ``stop='anytime'`` the half-widths are anytime-valid, ``met`` is the
    look's test, and ``looks`` (the earlier ones given, this one added) and
    ``rate_needed`` (:func:`rate_needed`) say how judging has gone."""
    planned = isinstance(selector, PlanSelector)
    if isinstance(selector, PlanSelector):  # the rule hands out: it has observed everything
        rule: ConfidentJudging = selector.rule
    else:
        rule = judging(selector, target, start, stop)
        judged = sample.judged()
        for topic, group in judged.groupby("query_id", sort=False):
            rule.observe(str(topic), dict(zip(group["doc_id"].astype(str),
                                              group["relevance"].astype(float), strict=True)))
    status = rule.status()
    short = int(sum(max(0, int(first) - int(n)) for t, first, n in
                    zip(rule.topics, rule.first, rule.judged, strict=True)
                    if t not in finished))
    upcoming = [rule.topics[i] for i in _upcoming(rule)][:NEXT_TOPICS]
    widest_run = (max(status.half_widths, key=lambda r: status.half_widths[r])
                  if status.half_widths else None)
    some = status.judged > 0  # before any judgment every variance reads 0: say nothing
    if isinstance(rule, AnytimeJudging):
        met = short == 0 and some and (not rule.committed or rule.may_stop()) and rule.look()
    else:
        met = status.projected_needed == 0 and short == 0
    out = {"target": f"{target.measure}:{target.half_width:g}", "measure": rule.spec.name,
           "half_width": target.half_width,
           "runs": None if target.runs is None else list(target.runs),
           "half_widths": {r: _finite(w) if some else None
                           for r, w in status.half_widths.items()},
           "widest": _finite(status.widest) if some else None,
           "widest_run": widest_run if some else None,
           "projected_needed": status.projected_needed, "next_topics": upcoming,
           "short_of_start": short, "start": start, "judged": status.judged, "met": met,
           "stop": stop}
    if isinstance(rule, AnytimeJudging):
        history = [[int(n), float(w)] for n, w in looks]
        if some and short == 0 and np.isfinite(status.widest) and (
                not history or history[-1][0] != status.judged):
            history.append([status.judged, float(status.widest)])
        out["looks"] = history
        out["rate_needed"] = rate_needed(history, target.half_width, rule.ci, rule.boundary)
        out["rate_range"] = rate_range(history, target.half_width, rule.ci, rule.boundary)
    if planned:
        out["plan_needed"] = plan_needed(rule)
    out["text"] = describe(out)
    return out


def _upcoming(rule: ConfidentJudging) -> list[int]:
    """The topics the rule would judge next, in order: on committed phases those whose
    phase is open, least far through first; else the adaptive plan's order."""
    if not rule.committed:
        return list(dict.fromkeys(rule.plan().tolist()))
    opened = [i for i, p in enumerate(rule.phases) if p and p[-1].open]
    return sorted(opened, key=lambda i: rule.phases[i][-1].given / len(rule.phases[i][-1].order))


def plan_needed(rule: ConfidentJudging) -> int:
    """On committed phases: the judgments the current plan's phases still need (their
    documents not judged yet, handed out or not). The anytime rule may stop at a look
    before they are all in, or plan further after them."""
    left = 0
    for labels, phases in zip(rule.labels, rule.phases, strict=True):
        if phases:
            order = phases[-1].order
            left += int(np.isnan(labels[order]).sum())
    return left


def describe(status: Mapping[str, Any]) -> str:
    """One sentence on where the target stands (the organiser page and ``campaign
    status`` print it)."""
    widest = status["widest"]
    anytime = is_anytime(status.get("stop"))
    kind = "anytime-valid 95%" if anytime else "95%"
    now = ("no half-width yet" if widest is None else
           f"widest {kind} half-width {widest:.4f} ({status['widest_run']})")
    head = f"target {status['measure']} half-width <= {status['half_width']:g}: {now}"
    if status["met"]:
        return f"{head}; met: no more documents are handed out"
    if status["short_of_start"]:
        return (f"{head}; {status['short_of_start']} judgments to go before every topic has "
                f"its first {status['start']}")
    if status.get("plan_needed"):
        return (f"{head}; the current plan has {status['plan_needed']} judgments left (it "
                "stops at the first look where every half-width meets the target, or plans "
                "further when they are in)")
    if anytime and status["projected_needed"] is not None:
        rate, span = status.get("rate_needed"), status.get("rate_range")
        if rate is None:
            return head + "; too few looks to extrapolate the rate yet"
        within = "" if not span else (
            f" (90% range {span[0]}-{'?' if span[1] is None else span[1]})")
        return (f"{head}; about {rate} more judgments{within} at the rate the widest "
                "interval has narrowed over the recent looks")
    needed = status["projected_needed"]
    if needed is None:
        return f"{head}; not reachable within the topics' budgets, as projected"
    return (f"{head}; projected {needed} more judgments if they go to the topics where "
            f"they narrow the widest interval most (next: {', '.join(status['next_topics'])})")


def widest_first(half_widths: Mapping[str, float | None]) -> list[tuple[str, float | None]]:
    """``half_widths`` (a status's, JSON-ready) as (run, half-width) pairs, the widest
    first and runs without a half-width yet (None: before any judgment, or infinite)
    last, in their given order: the organiser page and ``campaign status`` list them so."""
    return sorted(half_widths.items(), key=lambda item: (item[1] is None, -(item[1] or 0.0)))


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
