"""The declaration of an estimator family: what it estimates, from which designs, and how.

Each family module ends with one :func:`register_family` call; names (``AP~ht``,
``xinfAP``), dispatch in :func:`sampleval.estimation.estimates.estimate`, ``sampleval methods`` and the
command lines' help are all built from these declarations, so a new family is one new module
and nothing else. Registering a family changes no default: the default estimator of a plain
measure on each design is the table of :mod:`sampleval.estimation.defaults`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sampleval.core.design import CAPABILITIES, as_design, designs
from sampleval.declare import Param, Registry
from sampleval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from sampleval.core.sample import Sample
    from sampleval.estimation.engine.views import TopicView
    from sampleval.estimation.spec import EstimateSpec

# (run names, aligned topics, sample, the family's requested measures, level, ci) -> rows
FamilyFunction = Callable[
    [tuple[str, ...], "list[TopicView]", "Sample", "list[EstimateSpec]", float, float],
    "pd.DataFrame"]
# (aligned topics, sample, one requested measure, level, its values [topics, runs]) -> the
# share of each value that is imputation [topics, runs] (:mod:`.imputation`)
ImputedShare = Callable[
    ["list[TopicView]", "Sample", "EstimateSpec", float, np.ndarray], np.ndarray]
# (run names, aligned topics, sample, one measure, level, pairs [P, 2] of run indices) ->
# per topic and pair the estimated difference and its variance, both [topics, P]
DifferenceFunction = Callable[
    [tuple[str, ...], "list[TopicView]", "Sample", "EstimateSpec", float, np.ndarray],
    "tuple[np.ndarray, np.ndarray]"]
# (run names, aligned topics, sample, one measure, level) -> per topic and run the estimate,
# its variance and the estimated bias that widens its interval, each [topics, runs]
PartsFunction = Callable[
    [tuple[str, ...], "list[TopicView]", "Sample", "EstimateSpec", float],
    "tuple[np.ndarray, np.ndarray, np.ndarray]"]
OneMeasure = Callable[
    [tuple[str, ...], "list[TopicView]", "Sample", "EstimateSpec", float, float],
    "pd.DataFrame"]

CUTOFF_RULES = ("no", "optional", "required")


@dataclass(frozen=True)
class Base:
    """A measure a family estimates: its ir_measures base name (``AP``, ``P``, ``nDCG``),
    whether it takes a cutoff (``no``, ``optional``, ``required``), the established name it
    prints as (``xinfAP``, ``iP``; None: ``BASE[@k]~FAMILY``), and ``options``: the options
    this measure takes, each the name of one of the family's (:attr:`EstimatorFamily.options`)
    or a declaration of its own (:func:`sampleval.estimation.options.pick`: other values or
    another default for this measure); kept as names, the own declarations in ``own``."""

    name: str
    cutoff: str = "no"
    alias: str | None = None
    options: tuple[str | Param, ...] = ()
    own: tuple[Param, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.cutoff not in CUTOFF_RULES:
            raise ValueError(f"cutoff must be one of {CUTOFF_RULES}")
        object.__setattr__(self, "own", tuple(p for p in self.options if isinstance(p, Param)))
        object.__setattr__(self, "options", tuple(p if isinstance(p, str) else p.name
                                                  for p in self.options))


@dataclass(frozen=True)
class EstimatorFamily:
    """An estimator family (see the module docstring).

    ``requires`` names the design capabilities (:data:`sampleval.core.design.CAPABILITIES`)
    a sample's design must have for the family to estimate from it (``has_joint_probabilities``
    for Horvitz-Thompson variances, ``has_draws``, ``has_strata`` ...), so that a new design
    with those capabilities is accepted with no edit here; ``compute`` estimates the requested measures for every run and topic;
    ``score_type`` is the precision run scores are compared in (NIST's Perl script compares
    doubles, trec_eval floats); ``options`` are the estimator's named variants, written
    ir_measures-style after the measure's name (``xinfAP(variance=appendix)``,
    ``AP~ht(variance=jackknife)``), each picked from the one vocabulary
    (:func:`sampleval.estimation.options.pick`: the values the family allows and the default
    used when none is named); each base lists the options it takes; ``imputed``
    (None: the family imputes nothing) gives the share of each estimate that its smoothing
    constants make up, so that ``estimate`` can flag the estimates that are mostly a guess;
    ``needs_predictions``: the family reads predicted relevance (``TopicView.predictions``),
    so :func:`sampleval.estimation.estimates.estimate` refuses it without predictions; ``differences``
    (None: not offered) estimates the difference of two runs per topic with the variance of
    that difference, which
    :mod:`sampleval.estimation.compare` uses for the paired test's degrees of freedom; ``parts``
    (None: read from the rows, no bias) gives the per-topic estimates, variances and the
    biases that widen the intervals (:func:`~sampleval.estimation.engine.views.summarise`), which
    :mod:`sampleval.judging.confident` plans with; ``estimands``: the estimand kinds
    (:data:`sampleval.measures.names.ESTIMANDS`) of which the family estimates every
    declared measure besides its ``bases`` (``total``: a measure registered with a total as
    its estimand is then ``NAME~FAMILY`` with no edit of the family); ``plain_bias``: AP's
    ``bias`` values with which ``interval=bias-aware`` is ``interval=normal`` on every design
    the family accepts (no estimate of a bias left to widen by), each one of its ``bias``
    values (:func:`plain_bias`, :func:`same_as_normal`).
    """

    name: str
    title: str
    reference: str
    bases: tuple[Base, ...]
    requires: tuple[str, ...]
    compute: FamilyFunction
    score_type: type[np.floating] = np.float32
    options: tuple[Param, ...] = ()
    imputed: ImputedShare | None = None
    needs_predictions: bool = False
    estimands: tuple[str, ...] = ()
    differences: DifferenceFunction | None = None
    parts: PartsFunction | None = None
    plain_bias: tuple[str, ...] = ()
    _by_name: dict[str, Base] = field(default_factory=dict, init=False, repr=False,
                                      compare=False)
    _by_name_lower: set[str] = field(default_factory=set, init=False, repr=False,
                                     compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "requires", tuple(self.requires))
        unknown = set(self.requires) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"{self.name}: unknown design capabilities {sorted(unknown)} (one "
                             f"of {', '.join(CAPABILITIES)})")
        self._by_name.update({b.name: b for b in self.bases})
        self._by_name_lower.update(b.name.lower() for b in self.bases)
        from sampleval.estimation.options import VOCABULARY

        declared = {p.name for p in self.options}
        for b in self.bases:
            undeclared = set(b.options) - declared - {p.name for p in b.own}
            if undeclared:
                raise ValueError(f"{self.name}: {b.name} takes undeclared options {undeclared}")
        outside = {p.name for b in self.bases for p in b.own} | declared
        if outside - set(VOCABULARY):
            raise ValueError(f"{self.name}: options {sorted(outside - set(VOCABULARY))} are "
                             "not in sampleval.estimation.options.VOCABULARY")

    def option(self, name: str, base: str | None = None) -> Param | None:
        """The declaration of option ``name`` for measure ``base`` (its own, else the
        family's; None: the family, or that base, has none by that name)."""
        declared = None if base is None else self.base(base)
        if declared is not None:
            if name not in declared.options:
                return None
            own = next((p for p in declared.own if p.name == name), None)
            if own is not None:
                return own
        return next((p for p in self.options if p.name == name), None)

    def params(self, base: str) -> tuple[Param, ...]:
        """The declarations of the options ``base`` takes, in the vocabulary's order."""
        from sampleval.estimation.options import ordered

        declared = self.base(base)
        if declared is None:
            return ()
        found = (self.option(n, base) for n in ordered(
            n for n in declared.options if isinstance(n, str)))
        return tuple(p for p in found if p is not None)

    def base(self, name: str) -> Base | None:
        """The base measure ``name`` the family estimates: one it declares, or a declared
        measure whose estimand is among its ``estimands`` (None when it estimates neither)."""
        declared = self._by_name.get(name)
        if declared is not None or not self.estimands:
            return declared
        from sampleval.measures.names import estimand_of

        spec = estimand_of(name)
        if (spec is None or spec.key != name or spec.estimand not in self.estimands
                or name.lower() in self._by_name_lower):
            return None  # (a declared base in another case, "dcg", is that base's)
        return Base(name, spec.cutoff)

    def accepts(self, design: str) -> bool:
        """Whether the family estimates from samples of ``design`` (a Design, or its name):
        whether the design has every capability the family ``requires``; the one place this
        is asked."""
        try:
            found = as_design(design)
        except UsageError:  # not a design at all
            return False
        return all(getattr(found, capability) for capability in self.requires)

    @property
    def designs(self) -> tuple[str, ...]:
        """The names of the registered designs the family accepts (for help texts)."""
        return tuple(d.name for d in designs() if self.accepts(d))

    def estimates(self, base: str, cutoff: int | None, design: str) -> bool:
        """Whether the family estimates ``base[@cutoff]`` (a cutoff where its declaration
        allows one) from samples of ``design``."""
        declared = self.base(base)
        if declared is None or not self.accepts(design):
            return False
        return not ((declared.cutoff == "no" and cutoff is not None)
                    or (declared.cutoff == "required" and cutoff is None))

    def measure_names(self) -> list[str]:
        """The names it offers, for help texts: ``AP~ht``, ``P@k~ht``, ``xinfAP``, ``iP@k``."""
        names = []
        for b in self.bases:
            cut = {"no": "", "optional": "[@k]", "required": "@k"}[b.cutoff]
            names.append(f"{b.alias}{cut}" if b.alias else f"{b.name}{cut}~{self.name}")
        return names

    def option_lines(self) -> list[str]:
        """One line per option declaration for help texts: its name, the measures that take
        it, and what it means from the vocabulary
        (:func:`~sampleval.estimation.options.describe`)."""
        from sampleval.estimation.options import describe

        takers: dict[Param, list[str]] = {}
        for b, shown in zip(self.bases, self.measure_names(), strict=True):
            for p in self.params(b.name):
                takers.setdefault(p, []).append(shown)
        plain = (f"bias-aware is normal with bias={' or '.join(self.plain_bias)}"
                 if self.plain_bias else None)
        return [f"{p.name} ({', '.join(names)}): {describe(p)}"
                + (f"; {plain}" if plain and p.name == "interval" else "")
                for p, names in takers.items()]


FAMILIES: Registry[EstimatorFamily] = Registry("estimator family",
                                              "sampleval.estimation.families")


def register_family(family: EstimatorFamily) -> EstimatorFamily:
    """Make ``family`` available by its name (and its bases' established names); a
    ``plain_bias`` value that is not one of its ``bias`` values is a ValueError."""
    biases = next((p.choices for p in family.options if p.name == "bias"), ())
    stray = set(family.plain_bias) - set(biases or ())
    if stray:
        raise ValueError(f"family {family.name}: plain_bias {sorted(stray)} not among its "
                         f"bias values {', '.join(biases or ())}")
    return FAMILIES.add(family.name, family)


def plain_bias() -> dict[str, tuple[str, ...]]:
    """Family -> the AP ``bias`` values with which its ``interval=bias-aware`` is
    ``interval=normal``, from each family's declaration (``EstimatorFamily.plain_bias``)."""
    return {name: family.plain_bias for name, family in FAMILIES.items()
            if family.plain_bias}


def same_as_normal(family: str, base: str, options: Mapping[str, Any]) -> bool:
    """Whether an estimate of ``base`` by ``family`` with resolved ``options`` has an
    ``interval=bias-aware`` that is ``interval=normal`` (:func:`plain_bias`)."""
    return (base == "AP" and options.get("interval") == "bias-aware"
            and options.get("bias") in plain_bias().get(family, ()))


def each_measure(one: OneMeasure) -> FamilyFunction:
    """A family function from an estimator of one measure at a time."""
    def family(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
               specs: list[EstimateSpec], level: float, ci: float) -> pd.DataFrame:
        import pandas as pd

        return pd.concat([one(run_names, views, sample, spec, level, ci) for spec in specs],
                         ignore_index=True)
    return family
