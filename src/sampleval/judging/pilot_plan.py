"""The judgments judge-until-confident's committed rule (``sampleval plan``'s ``committed``
row), or the anytime rule on its committed phases (the ``anytime`` row of a pilot laid out in
strata), is forecast to use after a pilot sample: the rule's own first plan from that pilot,
then campaigns simulated from it. Apart from :mod:`sampleval.judging.planning`, whose
models the rule itself reads, so that neither module imports the other's reader.

Why a simulation. The rule's first plan projects each topic's variance from its pilot's,
shrunk halfway to the median over the topics, and a 20-document pilot's variance estimates
are right-skewed, so the first phase falls short and a *shortfall plan* re-judges the topics
whose phase revealed a large variance: they pay for their first phase twice, which no level
of the first plan counts (``docs/research/anytime.md``, "Stop 42" and "Stop 43"). So each
simulated campaign judges the rule's first plan (the campaign's own, to the judgment), draws
the variance every topic's first phase reveals, checks the target as the rule does, and
where it is missed lets the rule make its shortfall plan on those variances
(:meth:`ConfidentJudging._plan_phases`, the rule's own code). The variance a phase of design
factor D reveals is u D, u per unit of design factor (the rule's
:meth:`~ConfidentJudging._planning_variance` over the pilot's D): the topic's own pilot
value with probability :data:`~sampleval.judging.confident.SHRINK` (the weight the rule's
plan gives it), else the value of a topic drawn from a resample of the pilot's topics (a
topic bootstrap: which topics hold the variance the pilot cannot tell, and how heavy its
tail is the pilot's topics only estimate). The shortfall plan is then taken to land: it is
planned from phases of hundreds of documents, not the pilot's 20 (the third plans measured
were 3-4% of the judgments; drawing their phases again from the pilot's values, whose tail
a phase's larger sample does not share, made campaigns of 4-8 plans where the rule made
2-3). A shortfall phase's design factor over the documents left is the first plan's table
times the topic's AP-prior mass left after its first phase (within 5-10% of the layouts'
at the sizes planned, TREC-COVID), so no layout is made per campaign.

The forecast is the mean judgments over the campaigns, its interval their quantiles: it
holds the campaign's own draws and the pilot's topics' uncertainty about the variances'
distribution, not an error of the model.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from sampleval.errors import UsageError
from sampleval.judging.confident import (
    SHRINK,
    STOP_MODES,
    AnytimeJudging,
    ConfidentJudging,
    is_anytime,
)
from sampleval.judging.planning import Forecast
from sampleval.selection.strata import StratifiedSelector

COMMITTED_METHODS = ("stratified", "strata", "uniform")
"""The methods whose committed phases :func:`committed_forecast` can lay out."""
CAMPAIGNS = 20
"""Campaigns simulated per forecast by default (:func:`campaign_forecast`; 20 took 0.44
CPU-s on TREC-COVID round 5's 126 runs and 50 topics)."""


class _Campaign(ConfidentJudging):
    """One simulated campaign after ``judging``'s pilot (module docstring): the rule's state
    with the judgments counted, the variances revealed set by the simulation, and each
    next phase's design factor from the first plan's ``table`` (no layout made)."""

    def __init__(self, judging: ConfidentJudging, table: np.ndarray, least: np.ndarray,
                 judged: np.ndarray, last: np.ndarray, left: np.ndarray) -> None:
        self.__dict__.update(judging.__dict__)
        self.table, self.least = table, least
        self.judged, self.last, self.left = judged.copy(), last.copy(), left.copy()
        self.variance, self.bias = judging.variance.copy(), judging.bias.copy()
        self.upper, self.found = judging.upper.copy(), judging.found.copy()
        self.owed = np.zeros_like(judging.owed)  # a shortfall plan: no topic owed a phase
        self._projection = None

    def _factor_last(self) -> np.ndarray:
        return self.last.copy()

    def _factors(self, room: np.ndarray) -> np.ndarray:
        out = np.full((len(room), int(room.max(initial=0)) + 2), np.inf)
        for i in np.flatnonzero(room > 0).tolist():
            out[i, 1:room[i] + 1] = self.table[i, 1:room[i] + 1] * self.left[i]
        return out

    def _least(self, i: int) -> int:
        return int(min(self.least[i], self.pool_size[i] - self.judged[i]))

    def _handed(self) -> int:
        return int(self.judged.sum())


def campaign_forecast(judging: ConfidentJudging, rng: np.random.Generator,
                      coverage: float = 0.9, campaigns: int = CAMPAIGNS) -> Forecast:
    """The judgments in all (those made included) the committed rule is forecast to use
    from ``judging``'s state after its pilot (module docstring): the mean over ``campaigns``
    simulated campaigns, with their ``coverage`` interval (quantiles). ``needed`` None:
    the rule's first plan cannot reach the target. Leaves ``judging`` as it was (its
    selector's generator included)."""
    if not judging.committed:
        raise UsageError("a forecast from the plan needs the phase-committed design")
    if campaigns < 1:
        raise UsageError(f"campaigns must be at least 1, not {campaigns}")
    judging._refresh()
    made = int(judging.judged.sum())
    rule = "anytime" if isinstance(judging, AnytimeJudging) else "committed"
    if not judging.owed.any() and (judging.half_widths() <= judging.target.half_width).all():
        return Forecast(rule, made, made, made, made)
    saved = judging._projection
    try:
        first = judging._plan_phases()
        reached = judging._projection is not None
    finally:
        judging._projection = saved
    if not reached:
        return Forecast(rule, made, None, None, None)
    topics, runs = len(judging.topics), judging.runs
    room = np.where(judging.exhausted, 0, np.minimum(
        judging.capacity - judging.judged, judging.pool_size - judging.judged)).astype(np.int64)
    table = judging._factors(room)  # cached by the plan just made
    least = np.array([judging._least(i) if room[i] else 0 for i in range(topics)])
    g = judging._factor_last()
    present = judging.present[:, runs]
    per = np.where(g > 0, g, 1.0)[:, None]
    unit = np.where(g[:, None] > 0, judging._planning_variance(present, room > 0, g) / per, 0.0)
    bias = np.where(g[:, None] > 0, judging.bias[:, runs] / per, 0.0)
    upper = np.where(g[:, None] > 0, judging.upper[:, runs] / per, 0.0)
    last, left, share = _first_phases(judging, first)
    donors = np.flatnonzero(g > 0)
    kind = _campaign_kind(type(judging))
    within = isinstance(judging, AnytimeJudging) and not judging.spend
    totals = np.empty(campaigns)
    for k in range(campaigns):
        campaign = kind(judging, table, least, judging.judged, np.where(first > 0, last, g),
                        np.ones(topics))
        pool = donors[rng.integers(0, len(donors), len(donors))]
        sizes = first
        for stage in range(2):  # the first phase's outcome, then the shortfall plan lands
            phased = np.flatnonzero(sizes > 0)
            if stage:
                campaign.last[phased] = table[phased, sizes[phased]] * campaign.left[phased]
            source = np.where(rng.random(len(phased)) < SHRINK, phased,
                              pool[rng.integers(0, len(pool), len(phased))])
            campaign.found[phased] = judging.found[source]
            step = _stop_within(campaign, phased, sizes, unit[source], bias[source],
                                upper[source], within)
            campaign.left[phased] = left[phased] if not stage else campaign.left[phased] * (
                1 - np.minimum(1.0, share[phased] * sizes[phased] / (
                    campaign.pool_size[phased] - campaign.judged[phased])))
            campaign.judged = campaign.judged + step
            if stage or (step < sizes).any() or (
                    campaign.half_widths() <= judging.target.half_width).all():
                break
            sizes = campaign._plan_phases()
        totals[k] = campaign.judged.sum()
    tail = (1 - coverage) / 2
    lo, hi = np.quantile(totals, [tail, 1 - tail], method="inverted_cdf")
    return Forecast(rule, made, round(float(totals.mean())), int(lo), int(hi))


LOOKS = 20
"""The anytime rule on committed phases: the points within a simulated phase, evenly spread,
where its look may stop judging (:func:`_stop_within`)."""


def _stop_within(campaign: _Campaign, phased: np.ndarray, sizes: np.ndarray,
                 unit: np.ndarray, bias: np.ndarray, upper: np.ndarray,
                 within: bool) -> np.ndarray:
    """The judgments the phases of ``sizes`` take in a simulated campaign: all of them, or
    (``within``: a rule that looks within phases) those up to the first of :data:`LOOKS`
    points, the phases judged alike, where its half-widths meet the target; ``campaign``'s
    variances (``unit`` times each phase's design factor so far, bias and allowance
    alike; the first plan's table scaled to the phase's own factor) are left at that
    point."""
    at = np.ix_(phased, campaign.runs)
    step = sizes.copy()
    for f in np.linspace(1 / LOOKS, 1, LOOKS) if within else [1.0]:
        done = np.maximum(np.ceil(f * sizes[phased]).astype(np.int64), 1)
        full = campaign.table[phased, sizes[phased]]
        scale = (campaign.last[phased] * np.divide(  # the phase's factor at the share judged
            campaign.table[phased, done], full, out=np.ones(len(phased)), where=full > 0))[
            :, None]
        campaign.variance[at] = unit * scale
        campaign.bias[at], campaign.upper[at] = bias * scale, upper * scale
        if f < 1 and (campaign.half_widths() <= campaign.target.half_width).all():
            step[phased] = done
            break
    return step


_KINDS: dict[type, type[_Campaign]] = {}


def _campaign_kind(rule: type[ConfidentJudging]) -> type[_Campaign]:
    """:class:`_Campaign` over the rule ``rule`` (its half-widths and plans)."""
    if rule not in _KINDS:
        _KINDS[rule] = _Campaign if rule is ConfidentJudging else type(
            f"_{rule.__name__}Campaign", (_Campaign, rule), {})
    return _KINDS[rule]


def _first_phases(judging: ConfidentJudging, sizes: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each topic's first phase of ``sizes`` laid out as the rule lays it out: its design
    factor, the share of the topic's AP-prior mass not judged before it that it leaves, and
    the share of that mass it judges per share of the documents (the next phases' mass
    left is projected with it)."""
    selector = judging.selector
    assert isinstance(selector, StratifiedSelector)
    last, left, share = np.zeros(len(sizes)), np.ones(len(sizes)), np.ones(len(sizes))
    for i in np.flatnonzero(sizes > 0).tolist():
        keep = np.isnan(judging.labels[i])
        layout = selector.layout_within(judging.topics[i], keep, int(sizes[i]))
        last[i] = judging._design_factor(i, keep, int(sizes[i]), layout)
        inside = layout.codes >= 0
        drawn = np.bincount(layout.codes[inside], minlength=len(layout.labels))
        pi = np.divide(layout.counts, drawn, out=np.zeros(len(drawn)), where=drawn > 0)
        prior = judging._prior(i)[inside]
        mass = float(prior.sum())
        took = float((pi[layout.codes[inside]] * prior).sum()) / mass if mass > 0 else 0.0
        left[i] = 1.0 - took
        share[i] = took / (sizes[i] / max(int(inside.sum()), 1)) if took > 0 else 1.0
    return last, left, share


def committed_forecast(sample: Any, runs: Any, target: Any, *, ci: float = 0.95,
                       level: float = 1, depth: Any = None, cap: int | None = None,
                       rng: np.random.Generator, campaigns: int = CAMPAIGNS,
                       coverage: float = 0.9, stop: str = "committed") -> Forecast:
    """The judgments judge-until-confident's committed rule (``sample --target``; ``stop=
    "anytime"``: the anytime rule on its committed phases, ``--stop anytime``) is forecast
    to use after the pilot ``sample`` (a stratified sample of the ``runs``' pool, e.g.
    ``sampleval sample stratified ... -n 20``): :func:`campaign_forecast` from the rule's
    state after that pilot (:meth:`~sampleval.judging.confident.ConfidentJudging.
    from_pilot`), with its ``coverage`` interval over ``campaigns`` simulated campaigns.
    Its next phases are laid out by the method that made the sample (``stratified`` for a
    sample that does not say), ``cap`` judgments per topic at most (default: its pool); its
    least phase is the pilot's median judgments per topic."""
    from sampleval.core.pool import Pool
    from sampleval.estimation.estimates import SAMPLE_DEPTH
    from sampleval.estimation.setup import estimation_depth
    from sampleval.io.coerce import as_runs, as_sample
    from sampleval.selection import METHODS, Budget

    sample = as_sample(sample)
    method = sample.meta.get("method", "stratified")
    if method not in COMMITTED_METHODS:
        raise UsageError(f"the committed rule's forecast needs a pilot laid out in strata "
                         f"({', '.join(COMMITTED_METHODS)}), not {method}")
    with warnings.catch_warnings():  # the caller's estimate has said what the depth means
        warnings.simplefilter("ignore")
        cut = estimation_depth(sample, SAMPLE_DEPTH if depth is None else depth)
        pool = Pool.from_runs(as_runs(runs), depth=cut)
    params = dict(sample.meta.get("params", {}))
    selector = METHODS[method](pool, Budget(rate=1.0) if cap is None else Budget(count=cap),
                               rng, **params)
    judged = sample.frame.groupby("query_id")["relevance"].count()
    start = max(1, int(np.median(judged[judged > 0]))) if (judged > 0).any() else 1
    if stop not in STOP_MODES:
        raise UsageError(f"stop must be one of {', '.join(STOP_MODES)}, not {stop!r}")
    kind = AnytimeJudging if is_anytime(stop) else ConfidentJudging
    judging = kind.from_pilot(selector, target, sample, start=start, ci=ci, level=level)
    with warnings.catch_warnings():  # estimate's notes on sparse topics
        warnings.simplefilter("ignore")
        return campaign_forecast(judging, rng, coverage, campaigns)
