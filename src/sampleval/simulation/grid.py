"""The grid of a simulation: methods x budgets x splits (cells), each run for trials 0..N-1.

A method is written ``NAME`` or ``NAME:KEY=VALUE;KEY=VALUE`` (``active:batch=5``,
``strata:strategy=2strata``); its parameters are checked against the method's own
declarations (:mod:`sampleval.declare`) when the grid is made, before any work starts. Two
modifiers judge until confident (:mod:`sampleval.judging.confident`) instead of spending the budget:
``target=MEASURE:HALF_WIDTH`` (as ``sample --target``: ``stratified:target=AP:0.01``; the
cell's budget is then each topic's cap), ``start=N`` (each topic's pilot, default 20) and
``stop=anytime`` (:class:`~sampleval.judging.confident.AnytimeJudging`: a look after every batch,
stopping on anytime-valid intervals, which the cell's means then report; not for a method
with a parameter of its own named ``stop``, ``dynamic``). A cell's
key names it in the output directory and in its trials' seeds, so a cell can be recomputed
alone and a changed grid finds the cells it shares with an earlier one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sampleval.declare import parse_assignments, resolve
from sampleval.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

    from sampleval.core.design import Design
    from sampleval.core.pool import Pool
    from sampleval.core.predictions import Predictions
    from sampleval.core.sample import Sample
    from sampleval.selection.base import Budget, Oracle, Selector


@dataclass(frozen=True)
class MethodSpec:
    """A selection method with the parameters given for it (as texts, sorted by name)."""

    name: str
    params: tuple[tuple[str, str], ...] = ()
    modifiers: tuple[tuple[str, str], ...] = ()
    """``target``, ``start`` and ``stop``, when the method judges until confident (sorted by
    name)."""

    @property
    def text(self) -> str:
        """The canonical spelling: ``NAME`` or ``NAME:KEY=VALUE;...`` (keys sorted)."""
        given = sorted(self.params + self.modifiers)
        if not given:
            return self.name
        return f"{self.name}:" + ";".join(f"{k}={v}" for k, v in given)

    @property
    def selector(self) -> type[Selector]:
        from sampleval.selection import METHODS

        return METHODS[self.name]

    @property
    def design(self) -> Design:
        return self.selector.design

    @property
    def resolved(self) -> dict[str, Any]:
        """Every parameter's value: given, else its default."""
        cls = self.selector
        return resolve(cls.parameters, dict(self.params), cls.name)

    @property
    def uses_predictions(self) -> bool:
        """Whether the method, with these parameters, selects by predicted relevance
        (``stratified:size=residual``, ``importance:prior=predictions``)."""
        return self.selector.uses_predictions(self.resolved)

    @property
    def reach_every_document(self) -> bool:
        """Whether every draw of its samples could reach every pooled document (``active``
        with a uniform share), where the per-draw estimators are the defaults."""
        return self.selector.draws_reach_every_document(self.resolved)

    @property
    def simple_random(self) -> bool:
        """Whether its samples are one simple random sample per topic (``uniform``), where
        AP has a default of its own."""
        return self.selector.simple_random_sample(self.resolved)

    def anytime_tuning(self, ci: float) -> float | None:
        """With ``stop=anytime``: the variance of a mean for which its anytime-valid
        interval is the target (:func:`sampleval.estimation.anytime.target_variance`);
        else None."""
        modifiers = dict(self.modifiers)
        if modifiers.get("stop") != "anytime":
            return None
        from sampleval.estimation.anytime import target_variance
        from sampleval.judging.confident import Target

        return target_variance(Target.parse(modifiers["target"]).half_width, ci)

    def make(self, pool: Pool, budget: Budget, rng: np.random.Generator,
             predictions: Predictions | None = None) -> Selector:
        """The selector over ``pool`` with this budget, generator and parameters, given
        ``predictions`` when it uses them."""
        options: dict[str, Any] = dict(self.params)
        if self.uses_predictions:
            options["predictions"] = predictions
        return self.selector(pool, budget, rng, **options)

    def judge(self, selector: Selector, oracle: Oracle) -> Sample:
        """The sample ``selector`` gives when ``oracle`` judges: its whole budget, or until
        the target holds with the ``target`` modifier."""
        from sampleval.selection.base import simulate

        modifiers = dict(self.modifiers)
        if "target" not in modifiers:
            return simulate(selector, oracle).sample()
        from sampleval.judging.confident import Target, make_judging

        judging = make_judging(selector, Target.parse(modifiers["target"]),
                               modifiers.get("stop", "committed"),
                               start=int(modifiers.get("start", TARGET_START)))
        judging.run(oracle)
        return judging.sample()


def parse_method(text: str) -> MethodSpec:
    """``NAME`` or ``NAME:KEY=VALUE;KEY=VALUE``, checked against the method's declared
    parameters (UsageError naming the method and the parameter otherwise)."""
    from sampleval.selection import METHODS

    name, _, assignments = text.strip().partition(":")
    cls = METHODS[name.strip()]
    try:
        given = parse_assignments(assignments)
    except UsageError as exc:
        raise UsageError(f"method {text!r}: {exc}") from None
    own = {p.name for p in cls.parameters}  # dynamic has a parameter of its own named stop
    modifiers = {k: given.pop(k) for k in MODIFIERS if k in given and k not in own}
    resolved = resolve(cls.parameters, given, cls.name)
    if modifiers:
        _check_modifiers(text, cls, resolved, modifiers)
    return MethodSpec(cls.name, tuple(sorted(given.items())), tuple(sorted(modifiers.items())))


MODIFIERS = ("target", "start", "stop")
TARGET_START = 20


def _check_modifiers(text: str, cls: type[Selector], resolved: dict[str, Any],
                     modifiers: dict[str, str]) -> None:
    """UsageError unless ``target`` reads as a target whose estimator applies to the
    method's samples, ``start`` (only with a target) is a positive number and ``stop`` one
    of :data:`~sampleval.judging.confident.STOP_MODES`."""
    from sampleval.estimation.family import FAMILIES
    from sampleval.estimation.setup import accepts
    from sampleval.judging.confident import STOP_MODES, Target

    if "target" not in modifiers:
        given = "start=" if "start" in modifiers else "stop="
        raise UsageError(f"method {text!r}: {given} applies only with target=")
    spec = Target.parse(modifiers["target"]).spec(cls.design,
                                                  cls.draws_reach_every_document(resolved))
    if not accepts(FAMILIES[spec.family], cls.design):
        raise UsageError(f"method {text!r}: {spec.name} does not apply to {cls.name}'s "
                         f"{cls.design} samples")
    start = modifiers.get("start", str(TARGET_START))
    if not start.isdigit() or int(start) < 1:
        raise UsageError(f"method {text!r}: start must be a positive whole number")
    if modifiers.get("stop", "committed") not in STOP_MODES:
        raise UsageError(f"method {text!r}: stop must be one of {', '.join(STOP_MODES)}")


def split_methods(texts: Sequence[str]) -> list[str]:
    """Method texts from ``--methods`` values: separated by commas, except that a comma inside
    a parameter value (``importance:q=pairwise;runs=A,B``) stays there: a part that does not
    start with a method's name continues the previous method's parameters."""
    from sampleval.selection import METHODS

    out: list[str] = []
    for text in texts:
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            starts_method = part.partition(":")[0].strip() in METHODS
            if out and ":" in out[-1] and not starts_method:
                out[-1] = f"{out[-1]},{part}"
            else:
                out.append(part)
    return out


@dataclass(frozen=True)
class BudgetSpec:
    """A per-topic budget of the grid: a share of each topic's pool (``rate``) or a number of
    documents (``count``)."""

    rate: float | None = None
    count: int | None = None

    @property
    def label(self) -> str:
        """``rate=0.05`` or ``budget=300``: its part of a cell's key."""
        return f"rate={self.rate!r}" if self.rate is not None else f"budget={self.count}"

    def budget(self) -> Budget:
        from sampleval.selection.base import Budget

        return Budget(count=self.count, rate=self.rate)


def budgets_from(rates: Sequence[float] | None, counts: Sequence[int] | None
                 ) -> list[BudgetSpec]:
    """The grid's budgets, in the order given, without repeats."""
    specs = ([BudgetSpec(rate=float(r)) for r in rates] if rates
             else [BudgetSpec(count=int(c)) for c in counts or ()])
    if not specs:
        raise UsageError("give the budgets with --rates or --budgets")
    return list(dict.fromkeys(specs))


@dataclass(frozen=True)
class Cell:
    """One method at one budget on one split of the runs; its trials are numbered 0..N-1."""

    method: MethodSpec
    budget: BudgetSpec
    split: int

    @property
    def key(self) -> str:
        """A name for files: readable, and unique through a hash of the exact method text
        and every parameter's value, defaults included (a default that changes between two
        runs of one directory makes new cells instead of mixing trials of both)."""
        exact = self.method.text + repr(sorted(self.method.resolved.items()))
        digest = hashlib.sha256(exact.encode()).hexdigest()[:8]
        readable = re.sub(r"[^A-Za-z0-9.]+", "-", self.method.text).strip("-")
        budget = self.budget.label.replace("=", "-")
        return f"{readable}__{budget}__split-{self.split}__{digest}"


@dataclass(frozen=True)
class Grid:
    """Methods x budgets x splits, ``trials`` trials each."""

    methods: tuple[MethodSpec, ...]
    budgets: tuple[BudgetSpec, ...]
    trials: int
    splits: int = 1

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise UsageError("--trials must be at least 1")
        if len({m.text for m in self.methods}) < len(self.methods):
            raise UsageError("a method is listed twice")

    def cells(self) -> Iterator[Cell]:
        """Every cell, methods first, then budgets, then splits (the output's row order)."""
        for method in self.methods:
            for budget in self.budgets:
                for split in range(self.splits):
                    yield Cell(method, budget, split)

    def describe(self) -> dict[str, Any]:
        return {"methods": [m.text for m in self.methods],
                "budgets": [b.label for b in self.budgets], "trials": self.trials,
                "splits": self.splits}
