"""A campaign's target: judge until confident (:mod:`sampleval.confident`,
``docs/confident.md``) in a campaign.

The organiser gives a target when creating the campaign (``campaign create --target
AP~ht:0.02 [--target-run RUN]... [--start N]``): the 95% half-width of the mean over topics
of a measure, for every run or the runs named. Each time the live estimates are recomputed
(:mod:`.live`), :func:`target_status` measures the campaign's current sample against it
with :class:`~sampleval.confident.ConfidentJudging`'s public API: a ConfidentJudging over
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
estimates ``docs/confident.md`` measures. The test runs whenever the live estimates are
recomputed (at most every ``--refresh`` seconds of ``sampleval serve``), so a few
judgments may arrive after the target is met; they are kept and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from sampleval.confident import ConfidentJudging, Target
from sampleval.core.sample import Sample
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


def parse_target(text: str, runs: Sequence[str] | None = None) -> Target:
    """``MEASURE:HALF_WIDTH`` for ``runs`` (None: every run), as ``sampleval sample
    --target`` reads it."""
    return Target.parse(text, None if not runs else list(runs))


def judging(selector: Selector, target: Target, start: int) -> ConfidentJudging:
    """A ConfidentJudging over ``selector`` (raises UsageError when the target cannot apply
    to the method's design or names runs the pool lacks)."""
    return ConfidentJudging(cast(Selector, _Observed(selector)), target, start=start)


def target_status(selector: Selector, sample: Sample, target: Target, start: int,
                  finished: set[str]) -> dict[str, Any]:
    """The target's status on the campaign's current ``sample`` (``selector`` has observed
    it; ``finished``: topics whose plan is all judged). JSON-ready: ``target``,
    ``measure`` (the estimator), ``half_width``, ``half_widths`` per targeted run,
    ``widest`` and ``widest_run``, ``projected_needed`` (None: the budgets cannot reach
    the target), ``next_topics``, ``short_of_start`` (judgments before every topic has
    its start), ``judged``, ``met``, and ``text``, a sentence saying where it stands."""
    rule = judging(selector, target, start)
    judged = sample.judged()
    for topic, group in judged.groupby("query_id", sort=False):
        rule.observe(str(topic), dict(zip(group["doc_id"].astype(str),
                                          group["relevance"].astype(float), strict=True)))
    status = rule.status()
    short = int(sum(max(0, int(first) - int(n)) for t, first, n in
                    zip(rule.topics, rule.first, rule.judged, strict=True)
                    if t not in finished))
    order = rule.plan()
    upcoming = [rule.topics[i] for i in dict.fromkeys(order.tolist())][:NEXT_TOPICS]
    widest_run = (max(status.half_widths, key=lambda r: status.half_widths[r])
                  if status.half_widths else None)
    met = status.projected_needed == 0 and short == 0
    some = status.judged > 0  # before any judgment every variance reads 0: say nothing
    out = {"target": f"{target.measure}:{target.half_width:g}", "measure": rule.spec.name,
           "half_width": target.half_width,
           "runs": None if target.runs is None else list(target.runs),
           "half_widths": {r: _finite(w) if some else None
                           for r, w in status.half_widths.items()},
           "widest": _finite(status.widest) if some else None,
           "widest_run": widest_run if some else None,
           "projected_needed": status.projected_needed, "next_topics": upcoming,
           "short_of_start": short, "start": start, "judged": status.judged, "met": met}
    out["text"] = describe(out)
    return out


def describe(status: Mapping[str, Any]) -> str:
    """One sentence on where the target stands (the organiser page and ``campaign
    status`` print it)."""
    widest = status["widest"]
    now = ("no half-width yet" if widest is None else
           f"widest 95% half-width {widest:.4f} ({status['widest_run']})")
    head = f"target {status['measure']} half-width <= {status['half_width']:g}: {now}"
    if status["met"]:
        return f"{head}; met: no more documents are handed out"
    if status["short_of_start"]:
        return (f"{head}; {status['short_of_start']} judgments to go before every topic has "
                f"its first {status['start']}")
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
