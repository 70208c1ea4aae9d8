"""Names of estimated measures: ``BASE[@k]~FAMILY`` (``AP~ht``, ``P@10~is``) or a family's
established names (``infAP``, ``xinfAP``, ``infNDCG``, ``iP@10``, ``inum_rel``, ``statAP``),
all taken from the families' declarations (:mod:`sampleval.estimation.family`).

A family's options (the one vocabulary of :mod:`sampleval.estimation.options`) follow the name
ir_measures-style, in parentheses, either after the whole name or after the base:
``xinfAP(variance=appendix)``, ``AP~ht(variance=jackknife,ap=paper)``,
``AP(variance=jackknife)@10~ht``. Names are case-insensitive where that is unambiguous (``ap~ht``,
``XINFAP``, ``ndcg@10~HT``); an unknown name gets a "did you mean".
"""

from __future__ import annotations

import math
import re
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sampleval.declare import did_you_mean, parse_assignments
from sampleval.errors import SampleValError, UsageError
from sampleval.estimation.defaults import CUTOFF, DEFAULTS, default_name
from sampleval.estimation.family import FAMILIES, EstimatorFamily
from sampleval.estimation.options import (
    canonical,
    given_names,
    unknown_option,
    warn_deprecated,
)

if TYPE_CHECKING:
    from sampleval.core.sample import Sample

_FORM = re.compile(r"^(?P<base>[A-Za-z_]+)(?:\((?P<early>[^()]*)\))?(?:@(?P<cut>\d+))?"
                   r"(?:~(?P<family>[A-Za-z_]+))?(?:\((?P<late>[^()]*)\))?$")


@dataclass(frozen=True)
class EstimateSpec:
    """One estimated measure: its family, base measure, cutoff, options, and the name it
    prints as. Made only for what the family declares (UsageError otherwise).

    ``options`` are ``(name, value)`` pairs of the options this base takes; old spellings
    are read as the vocabulary's (with a FutureWarning), values are converted and checked by
    the option's declaration, they are kept in the vocabulary's order, and options at their
    default are dropped, so that ``xinfAP(variance=jackknife)`` and ``xinfAP`` (when jackknife
    is the default) are the same estimate, printed ``xinfAP``.

    ``level``: the measure's own relevance level (``P(rel=2)@5~ht``, from the plain measure
    ``P(rel=2)@5``), which the command's level (``-l``, ``level=``) does not override; None:
    the command's (:meth:`level_or`). Only a base whose measure declares ``rel`` takes one.
    """

    family: str
    base: str
    cutoff: int | None = None
    options: tuple[tuple[str, Any], ...] = field(default=())
    level: int | None = None

    def __post_init__(self) -> None:
        family = FAMILIES[self.family]
        declared = family.base(self.base)
        if declared is None:
            offered = ", ".join(family.measure_names())
            hint = did_you_mean(self.base, [b.name for b in family.bases])
            raise UsageError(f"{self.base}~{self.family}{hint}: the {self.family} family "
                             f"estimates {offered}")
        if declared.cutoff == "required" and self.cutoff is None:
            example = replace(self, cutoff=10).name
            raise UsageError(f"{self.name} needs a cutoff, e.g. {example}")
        if declared.cutoff == "no" and self.cutoff is not None:
            raise UsageError(f"{self.name}: {replace(self, cutoff=None).name} takes no cutoff")
        if self.cutoff is not None and self.cutoff < 1:
            raise UsageError(f"{self.name}: the cutoff must be at least 1")
        if self.level is not None and not takes_level(self.base, self.cutoff):
            raise UsageError(f"{self.name}: {self.base} takes no relevance level (rel=)")
        object.__setattr__(self, "options", _checked_options(family, self.base, self.options,
                                                             self._plain_name))

    @property
    def _plain_name(self) -> str:
        rel = "" if self.level is None else f"(rel={self.level})"
        cut = "" if self.cutoff is None else f"@{self.cutoff}"
        declared = FAMILIES[self.family].base(self.base)
        if declared is not None and declared.alias:
            return f"{declared.alias}{rel}{cut}"
        return f"{self.base}{rel}{cut}~{self.family}"

    def _with_options(self, options: str) -> str:
        """The plain name with ``options`` (``variance=linear``) in parentheses: after the
        level's, in the same pair, when the name ends with it (``xinfAP(rel=2,...)``)."""
        plain = self._plain_name
        if not options:
            return plain
        return f"{plain[:-1]},{options})" if plain.endswith(")") else f"{plain}({options})"

    @property
    def name(self) -> str:
        """``xinfAP``, ``AP@10~ht``, ``P(rel=2)@5~ht``, with the options not at their
        default: ``AP~ht(variance=linear)``."""
        return self._with_options(",".join(f"{k}={v}" for k, v in self.options))

    def level_or(self, level: float) -> float:
        """The relevance level this estimate is computed at: its own, else ``level`` (the
        command's)."""
        return level if self.level is None else self.level

    @property
    def full_name(self) -> str:
        """The fully resolved name: every option its base takes at its value, defaults
        included, in the vocabulary's order:
        ``AP~ht(ap=ours,bias=taylor,variance=jackknife,few=completed,interval=bias-aware)``;
        two specs with the same ``full_name`` compute the same thing whatever the defaults
        of the day (every result carries it; ``simulate`` records it)."""
        taken = [p.name for p in FAMILIES[self.family].params(self.base)]
        return self._with_options(",".join(f"{k}={self.option(k)}" for k in taken))

    def option(self, name: str) -> Any:
        """The value of option ``name``: as given, else its base's declared default."""
        for key, value in self.options:
            if key == name:
                return value
        declared = FAMILIES[self.family].option(name, self.base)
        if declared is None:
            raise KeyError(f"{self._plain_name} has no option {name!r}")
        return declared.default


def _checked_options(family: EstimatorFamily, base: str,
                     given: tuple[tuple[str, Any], ...], name: str
                     ) -> tuple[tuple[str, Any], ...]:
    """``given`` in the vocabulary's spelling (an old one warns:
    :func:`~sampleval.estimation.options.canonical`), converted by the base's declarations,
    in the vocabulary's order, defaults dropped."""
    params = {p.name: p for p in family.params(base)}
    values: dict[str, Any] = {}
    for given_key, given_value in given:
        new_key, value = canonical(given_key, given_value, name)
        key = _case_insensitive(new_key, list(params))
        if key is None:
            raise unknown_option(given_key, list(params), name)
        if key in values:
            raise UsageError(f"{name}: option {key} is given twice")
        param = params[key]
        if param.choices and isinstance(value, str):
            value = _case_insensitive(value, [str(c) for c in param.choices]) or value
        values[key] = param.convert(value, name)
        warn_deprecated(family.name, key, values[key], name)
    return tuple((k, values[k]) for k, p in params.items()
                 if k in values and values[k] != p.default)


def takes_level(base: str, cutoff: int | None) -> bool:
    """Whether the measure ``base`` declares a relevance level (``rel=``)."""
    from sampleval.measures.names import spec_of

    try:
        return "rel" in spec_of(base, cutoff).keywords
    except (SampleValError, KeyError):
        return False


def established_names() -> dict[str, tuple[str, str]]:
    """Established names (``xinfAP``) -> (family, base measure), over every family."""
    return {b.alias: (f.name, b.name) for f in FAMILIES.values() for b in f.bases if b.alias}


def _case_insensitive(name: str, known: list[str]) -> str | None:
    """``name`` itself if known, else the one known name equal to it ignoring case."""
    if name in known:
        return name
    same = [k for k in known if k.lower() == name.lower()]
    return same[0] if len(same) == 1 else None


def parse_estimate(text: str) -> EstimateSpec:
    """Parse ``AP~ht``, ``P@10~is``, ``xinfAP``, ``iP@10``, ``xinfAP(variance=appendix)`` ...
    (case-insensitive where unambiguous); UsageError when unknown."""
    text = text.strip()
    match = _FORM.match(text)
    if match is None:
        raise UsageError(f"cannot read the estimated measure {text!r} (write BASE~FAMILY, "
                         "e.g. AP~ht or P@10~ht, or an established name such as xinfAP, "
                         "options in parentheses: xinfAP(variance=appendix))")
    early, late = (_options(match[group] or "", text) for group in ("early", "late"))
    rel = [group.pop(key) for group in (early, late) for key in list(group)
           if key.lower() == "rel"]
    if early and late:
        raise UsageError(f"{text!r}: give the options once, in one pair of parentheses")
    if len(rel) > 1:
        raise UsageError(f"{text!r}: give the relevance level (rel=) once")
    base, cut, family = match["base"], match["cut"], match["family"]
    cutoff = None if cut is None else int(cut)
    options = tuple((early or late).items())
    if family is None:
        aliases = established_names()
        alias = _case_insensitive(base, list(aliases))
        if alias is None:
            known = sorted(aliases)
            raise UsageError(f"unknown estimated measure {text!r}{did_you_mean(base, known)}: "
                             f"use BASE~FAMILY (e.g. AP~ht, P@10~ht) or one of "
                             f"{', '.join(known)}")
        family, base = aliases[alias]
    else:
        known = FAMILIES.names()
        found = _case_insensitive(family, known)
        if found is None:
            raise UsageError(f"unknown estimator family {family!r} in {text!r}"
                             f"{did_you_mean(family, known)} (one of {', '.join(known)})")
        family = found
        bases = [b.name for b in FAMILIES[family].bases]
        base = _case_insensitive(base, bases) or base
    return EstimateSpec(family, base, cutoff, options, _level(rel, text))


def _level(given: list[str], text: str) -> int | None:
    """The relevance level written ``rel=L`` in ``text`` (None: not written)."""
    if not given:
        return None
    try:
        return int(given[0])
    except ValueError:
        raise UsageError(f"{text!r}: rel must be an integer level, not {given[0]!r}") from None


GIVEN, TABLE, FAMILY = "given", "defaults table", "family default"
"""Where an option's value came from (:func:`option_sources`)."""


def option_sources(asked: str, spec: EstimateSpec) -> list[tuple[str, Any, str]]:
    """Each option of ``spec`` (what ``asked``, an estimator's name or a plain measure,
    resolved to), in the vocabulary's order: (name, value, where the value came from):
    :data:`GIVEN` (named in ``asked``), :data:`TABLE` (a plain measure's estimator, named with
    that option by the defaults table of :mod:`sampleval.estimation.defaults`) or
    :data:`FAMILY` (the family's default for the measure)."""
    match = _FORM.match(asked.strip())
    taken = [p.name for p in FAMILIES[spec.family].params(spec.base)]
    if match is None or not names_an_estimator(asked):
        named, source = {k for k, _ in spec.options}, TABLE
    else:
        named = given_names(",".join(g for g in (match["early"], match["late"]) if g), taken)
        source = GIVEN
    return [(k, spec.option(k), source if k in named else FAMILY) for k in taken]


def names_an_estimator(text: str) -> bool:
    """Whether ``text`` names an estimator (``AP~ht``, ``xinfAP``), not a plain measure
    (``AP``, ``P@10``) that the defaults table resolves."""
    match = _FORM.match(text.strip())
    return match is not None and (match["family"] is not None or _case_insensitive(
        match["base"], list(established_names())) is not None)


def _options(text: str, whole: str) -> dict[str, str]:
    """``variance=appendix,ap=paper`` as a dict (values still text)."""
    try:
        return parse_assignments(text, separator=",")
    except UsageError:
        raise UsageError(f"{whole!r}: options are NAME=VALUE, separated by commas, e.g. "
                         "xinfAP(variance=appendix)") from None


def estimator_for(base: str, cutoff: int | None, design: str,
                  reach_every_document: bool = False,
                  simple_random: bool = False) -> EstimateSpec | None:
    """The default estimator of the plain measure ``base[@cutoff]`` on samples of ``design``
    (the table of :mod:`sampleval.estimation.defaults`), or None when it has none;
    ``reach_every_document``: the samples' every draw could reach every document
    (:func:`draws_reach_every_document`); ``simple_random``: each topic's sample is one
    simple random sample of its frame (:func:`sampleval.estimation.setup.simple_random`)."""
    name = default_name(design, base, cutoff, reach_every_document, simple_random)
    return None if name is None else parse_estimate(name)


def default_families(design: str) -> list[str]:
    """The families of ``design``'s default estimators, the one with the most defaults
    first (ties by name)."""
    names = [parse_estimate(n.replace(CUTOFF, "@10")).family
             for n in DEFAULTS.get(design, {}).values()]
    return sorted(set(names), key=lambda f: (-names.count(f), f))


def draws_reach_every_document(sample: Sample) -> bool:
    """Whether every draw of ``sample`` could have drawn every pooled document, as the
    sample's design and the guarantees its method recorded say
    (:meth:`sampleval.core.design.Design.draws_reach_every_document`; ``active`` with a
    uniform share): the per-draw estimators are then unbiased for every measure."""
    return sample.design.draws_reach_every_document(sample)


def measure_range(measure: str) -> tuple[float, float]:
    """The values ``measure`` (an estimator's name such as ``AP~ht`` or ``xinfAP``, or a
    measure's, ``nDCG@10``) can take: ``[0, inf)`` for counts (trec_eval prints them as
    integers: NumRel, NumRelRet) and unnormalised DCG, ``[0, 1]`` for the others (precision,
    recall, AP, Rprec, nDCG, RR, Bpref)."""
    from sampleval.measures.names import parse_measure, spec_of

    text = measure
    with suppress(SampleValError):
        estimated = parse_estimate(measure)
        text = estimated.base + ("" if estimated.cutoff is None else f"@{estimated.cutoff}")
    try:
        plain = parse_measure(text)
        spec = spec_of(plain.name, plain.cutoff)
    except (SampleValError, KeyError):
        return 0.0, math.inf
    unbounded = spec.trec_kind == "count" or spec.key.lower() == "dcg"
    return 0.0, math.inf if unbounded else 1.0
