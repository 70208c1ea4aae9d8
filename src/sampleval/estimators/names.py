"""Names of estimated measures: ``BASE~FAMILY`` (``AP~ht``, ``P@10~is``) or the inferred
measures by their established names (``infAP``, ``xinfAP``, ``infNDCG``, ``iP@10``,
``inum_rel``, ``statAP``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sampleval.errors import UsageError

# family -> (base measures it estimates, what it is)
FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    "ht": (("AP", "P", "R", "Rprec", "nDCG", "DCG", "NumRel"),
           "Horvitz-Thompson (Li & Kanoulas, CIKM 2017), any design with pi_i and pi_ij"),
    "hh": (("P", "NumRel", "DCG"),
           "per-draw Hansen-Hurwitz, with-replacement draws (adaptive too) and their p_t"),
    "is": (("P", "DCG", "nDCG", "R"),
           "importance sampling (Schnabel et al., ICTIR 2016), i.i.d. draws from Q"),
}
# established names -> (family, base measure)
INFERRED: dict[str, tuple[str, str]] = {
    "infAP": ("trec_eval", "AP"),
    "xinfAP": ("nist", "AP"),
    "infNDCG": ("nist", "nDCG"),
    "iP": ("nist", "P"),
    "inum_rel": ("nist", "NumRel"),
    "inum_rel_ret": ("nist", "NumRelRet"),
    "statAP": ("stat", "AP"),
}
_FORM = re.compile(r"^(?P<base>[A-Za-z_]+)(?:@(?P<cut>\d+))?(?:~(?P<family>[a-z]+))?$")


@dataclass(frozen=True)
class EstimateSpec:
    """One estimated measure: its family, base measure, cutoff, and the name it prints as."""

    family: str
    base: str
    cutoff: int | None = None

    @property
    def name(self) -> str:
        cut = "" if self.cutoff is None else f"@{self.cutoff}"
        for established, (family, base) in INFERRED.items():
            if (family, base) == (self.family, self.base):
                return f"{established}{cut}"
        return f"{self.base}{cut}~{self.family}"


def parse_estimate(text: str) -> EstimateSpec:
    """Parse ``AP~ht``, ``P@10~is``, ``xinfAP``, ``iP@10`` ...; UsageError when unknown."""
    match = _FORM.match(text.strip())
    if match is None:
        raise UsageError(f"cannot read the estimated measure {text!r}")
    base, cut, family = match["base"], match["cut"], match["family"]
    cutoff = None if cut is None else int(cut)
    if family is None:
        if base not in INFERRED:
            known = ", ".join(INFERRED)
            raise UsageError(f"unknown estimated measure {text!r}: use BASE~FAMILY "
                             f"(e.g. AP~ht, P@10~is) or one of {known}")
        family, base = INFERRED[base]
        if base == "P" and cutoff is None:
            raise UsageError(f"{text!r} needs a cutoff, e.g. iP@10")
        return EstimateSpec(family, base, cutoff)
    if family not in FAMILIES:
        raise UsageError(f"unknown estimator family {family!r} in {text!r} "
                         f"(one of {', '.join(FAMILIES)})")
    if base not in FAMILIES[family][0]:
        raise UsageError(f"{text!r}: the {family} family estimates "
                         f"{', '.join(FAMILIES[family][0])}")
    if base in ("P", "R") and cutoff is None:
        raise UsageError(f"{text!r} needs a cutoff, e.g. {base}@10~{family}")
    return EstimateSpec(family, base, cutoff)
