"""Names of estimated measures: ``BASE[@k]~FAMILY`` (``AP~ht``, ``P@10~is``) or a family's
established names (``infAP``, ``xinfAP``, ``infNDCG``, ``iP@10``, ``inum_rel``, ``statAP``),
all taken from the families' declarations (:mod:`sampleval.estimators.family`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sampleval.errors import UsageError
from sampleval.estimators.family import FAMILIES
from sampleval.registry import did_you_mean

_FORM = re.compile(r"^(?P<base>[A-Za-z_]+)(?:@(?P<cut>\d+))?(?:~(?P<family>[a-z_]+))?$")


@dataclass(frozen=True)
class EstimateSpec:
    """One estimated measure: its family, base measure, cutoff, and the name it prints as.
    Made only for what the family declares (UsageError otherwise)."""

    family: str
    base: str
    cutoff: int | None = None

    def __post_init__(self) -> None:
        declared = FAMILIES[self.family].base(self.base)
        if declared is None:
            offered = ", ".join(FAMILIES[self.family].measure_names())
            raise UsageError(f"{self.base}~{self.family}: the {self.family} family estimates "
                             f"{offered}")
        if declared.cutoff == "required" and self.cutoff is None:
            example = replace(self, cutoff=10).name
            raise UsageError(f"{self.name} needs a cutoff, e.g. {example}")
        if declared.cutoff == "no" and self.cutoff is not None:
            raise UsageError(f"{self.name}: {replace(self, cutoff=None).name} takes no cutoff")
        if self.cutoff is not None and self.cutoff < 1:
            raise UsageError(f"{self.name}: the cutoff must be at least 1")

    @property
    def name(self) -> str:
        cut = "" if self.cutoff is None else f"@{self.cutoff}"
        declared = FAMILIES[self.family].base(self.base)
        if declared is not None and declared.alias:
            return f"{declared.alias}{cut}"
        return f"{self.base}{cut}~{self.family}"


def established_names() -> dict[str, tuple[str, str]]:
    """Established names (``xinfAP``) -> (family, base measure), over every family."""
    return {b.alias: (f.name, b.name) for f in FAMILIES.values() for b in f.bases if b.alias}


def parse_estimate(text: str) -> EstimateSpec:
    """Parse ``AP~ht``, ``P@10~is``, ``xinfAP``, ``iP@10`` ...; UsageError when unknown."""
    match = _FORM.match(text.strip())
    if match is None:
        raise UsageError(f"cannot read the estimated measure {text!r} (write BASE~FAMILY, "
                         "e.g. AP~ht or P@10~ht, or an established name such as xinfAP)")
    base, cut, family = match["base"], match["cut"], match["family"]
    cutoff = None if cut is None else int(cut)
    if family is None:
        aliases = established_names()
        if base not in aliases:
            known = sorted(aliases)
            raise UsageError(f"unknown estimated measure {text!r}{did_you_mean(base, known)}: "
                             f"use BASE~FAMILY (e.g. AP~ht, P@10~ht) or one of "
                             f"{', '.join(known)}")
        family, base = aliases[base]
    elif family not in FAMILIES:
        known = FAMILIES.names()
        raise UsageError(f"unknown estimator family {family!r} in {text!r}"
                         f"{did_you_mean(family, known)} (one of {', '.join(known)})")
    return EstimateSpec(family, base, cutoff)


def estimator_for(base: str, cutoff: int | None, design: str) -> EstimateSpec | None:
    """The preferred estimator of the plain measure ``base[@cutoff]`` on samples of
    ``design`` (the family with the lowest :meth:`EstimatorFamily.preference`; ties by
    family name), or None when no family applies."""
    best: tuple[int, str] | None = None
    for family in FAMILIES.values():
        rank = family.preference(design, base)
        declared = family.base(base)
        if rank is None or declared is None:
            continue
        if (declared.cutoff == "no" and cutoff is not None) or (
                declared.cutoff == "required" and cutoff is None):
            continue
        if best is None or (rank, family.name) < best:
            best = (rank, family.name)
    return None if best is None else EstimateSpec(best[1], base, cutoff)
