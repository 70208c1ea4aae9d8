"""What a simulation measures, and with which estimator for each method.

A target is a name from ``--measures``:

- a plain measure (``AP``, ``P@30``, ``Rprec``, ``AP(rel=2)``; :mod:`sampleval.measures.names`)
  is estimated from each method's samples with the estimator its design prefers
  (:func:`sampleval.estimation.setup.estimator_of`, as every command chooses it, from the
  families' declarations and
  whether the method's every draw could reach every document); a
  design no family accepts (``pooled``: depth-k, MTF, bandits) gets the exact measure on the
  judged documents, unjudged ones not relevant;
- an estimator's name (``P@10~ht``, ``xinfAP``) is used as given, for the methods whose design
  its family accepts.

The truth of either is the exact measure of the same base (``AP`` for ``xinfAP``). Each plan
also says how the topic's number of relevant documents R is estimated alongside (Voorhees'
Table 3): by the same family's ``NumRel`` where it has one, by counting the judged relevant
documents for exact measures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sampleval.core.design import as_design
from sampleval.errors import UsageError
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.setup import accepts, estimator_of
from sampleval.estimation.spec import EstimateSpec, parse_estimate
from sampleval.measures.names import Measure, parse_measure


@dataclass(frozen=True)
class Target:
    """A name from ``--measures``: the exact measure its truth is, and the estimator named in
    it (None for a plain measure)."""

    name: str
    exact: Measure
    given: EstimateSpec | None = None

    @property
    def level(self) -> float:
        """The relevance level: the measure's own ``rel``, else 1."""
        return float(self.exact.rel if self.exact.rel is not None else 1)


@dataclass(frozen=True)
class Plan:
    """A target for one method: its estimator (None: the exact measure on the judged
    documents) and the estimator of R beside it (None: none; ``r_exact``: count the judged
    relevant documents)."""

    target: Target
    spec: EstimateSpec | None
    r_spec: EstimateSpec | None = None
    r_exact: bool = False

    @property
    def estimator(self) -> str:
        """The name of what estimates the target: ``xinfAP``, ``P@30~ht``, ``AP (judged)``."""
        return self.spec.name if self.spec is not None else f"{self.target.exact} (judged)"


def parse_target(text: str) -> Target:
    """A plain measure or an estimator's name (UsageError when it is neither, or when the
    estimator's base has no exact measure to take as its truth)."""
    text = text.strip()
    if "~" not in text:
        try:
            return Target(text, parse_measure(text))
        except UsageError as plain_error:
            try:
                spec = parse_estimate(text)
            except UsageError:
                raise UsageError(f"{plain_error}; nor is it an estimator such as AP~ht or "
                                 "xinfAP") from None
    else:
        spec = parse_estimate(text)
    cut = "" if spec.cutoff is None else f"@{spec.cutoff}"
    rel = "" if spec.level is None else f"(rel={spec.level})"  # the estimator's own level
    try:
        exact = parse_measure(f"{spec.base}{rel}{cut}")
    except UsageError:
        raise UsageError(f"{text}: there is no exact {spec.base}{rel}{cut} to take as its "
                         "truth") from None
    return Target(text, exact, spec)


def parse_targets(texts: Sequence[str]) -> list[Target]:
    """Targets in the order given, without repeats."""
    targets = list(dict.fromkeys(parse_target(t) for t in texts if t.strip()))
    if not targets:
        raise UsageError("give at least one measure with --measures")
    return targets


def plan_for(target: Target, design: str, reach_every_document: bool = False,
             simple_random: bool = False) -> Plan | None:
    """How ``target`` is estimated from samples of ``design`` (None: it cannot be);
    ``reach_every_document``: the samples' every draw could reach every document;
    ``simple_random``: they are one simple random sample per topic."""
    kind = as_design(design)
    if target.given is not None:
        if not accepts(FAMILIES[target.given.family], kind):
            return None
        spec: EstimateSpec | None = target.given
    elif not kind.is_probability_design:
        spec = None
    else:
        cut = target.exact.cutoff
        if cut is not None and not float(cut).is_integer():  # estimators take whole ranks
            return None
        plain = target.exact.name + ("" if cut is None else f"@{int(cut)}")
        try:
            spec = estimator_of(plain, kind, reach_every_document, simple_random)
        except UsageError:
            return None
    if spec is None:
        return Plan(target, None, r_exact=True)
    family = FAMILIES[spec.family]
    r_spec = EstimateSpec(family.name, "NumRel") if family.base("NumRel") is not None else None
    return Plan(target, spec, r_spec)
