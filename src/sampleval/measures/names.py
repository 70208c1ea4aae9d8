"""Measure names: ir_measures syntax (``AP``, ``P@10``, ``nDCG@20``, ``AP(rel=2)``), with
trec_eval's names (``map``, ``P_10``, ``ndcg_cut_20``, ``recip_rank``) accepted as aliases."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sampleval.errors import UsageError

# name -> (takes a cutoff: "no" | "optional" | "required", aggregate over topics, trec_eval name)
_SPECS: dict[str, tuple[str, str, str]] = {
    "AP": ("optional", "mean", "map"),
    "P": ("required", "mean", "P"),
    "R": ("required", "mean", "recall"),
    "Rprec": ("no", "mean", "Rprec"),
    "nDCG": ("optional", "mean", "ndcg"),
    "DCG": ("optional", "mean", "dcg"),
    "RR": ("optional", "mean", "recip_rank"),
    "Bpref": ("no", "mean", "bpref"),
    "Judged": ("required", "mean", "judged"),
    "NumRel": ("no", "sum", "num_rel"),
    "NumRet": ("no", "sum", "num_ret"),
    "NumRelRet": ("no", "sum", "num_rel_ret"),
}
_CUT_TREC_NAMES = {"AP": "map_cut", "nDCG": "ndcg_cut", "DCG": "dcg_cut",
                   "RR": "recip_rank_cut"}
_TREC_ALIASES = {
    "map": "AP", "P": "P", "recall": "R", "Rprec": "Rprec", "ndcg": "nDCG", "ndcg_cut": "nDCG",
    "map_cut": "AP", "recip_rank": "RR", "bpref": "Bpref", "num_rel": "NumRel",
    "num_ret": "NumRet", "num_rel_ret": "NumRelRet", "judged": "Judged",
}
_IR_MEASURES = re.compile(r"^(?P<name>[A-Za-z]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<cut>\d+))?$")
_TREC_STYLE = re.compile(r"^(?P<name>[A-Za-z_]+?)(?:[_.](?P<cut>\d+))?$")

DEFAULT_MEASURES = ("AP", "nDCG@10", "P@10", "Rprec", "Bpref", "RR")


@dataclass(frozen=True)
class Measure:
    """A measure with its parameters: ``cutoff`` (``@k``) and ``rel`` (the relevance level,
    trec_eval's ``-l``, overriding the evaluation's default for this measure)."""

    name: str
    cutoff: int | None = None
    rel: int | None = None

    def __str__(self) -> str:
        params = "" if self.rel is None else f"(rel={self.rel})"
        cut = "" if self.cutoff is None else f"@{self.cutoff}"
        return f"{self.name}{params}{cut}"

    @property
    def aggregate(self) -> str:
        """How trec_eval combines topics: ``mean``, or ``sum`` for the counts."""
        return _SPECS[self.name][1]

    @property
    def trec_name(self) -> str:
        """The name trec_eval prints (``map``, ``P_10``, ``ndcg_cut_20`` ...)."""
        if self.cutoff is None:
            return _SPECS[self.name][2]
        base = _CUT_TREC_NAMES.get(self.name, _SPECS[self.name][2])
        return f"{base}_{self.cutoff}"


def parse_measure(text: str) -> Measure:
    """Parse one measure name; raise UsageError naming what is wrong."""
    text = text.strip()
    match = _IR_MEASURES.match(text)
    if match and match["name"] in _SPECS:
        return _checked(match["name"], match["cut"], match["params"], text)
    trec = _TREC_STYLE.match(text)
    if trec and trec["name"] in _TREC_ALIASES:
        return _checked(_TREC_ALIASES[trec["name"]], trec["cut"], None, text)
    known = ", ".join(_SPECS)
    raise UsageError(f"unknown measure {text!r} (known: {known}; e.g. AP, P@10, nDCG@20)")


def parse_measures(texts: list[str] | tuple[str, ...]) -> list[Measure]:
    """Parse measure names (each may hold several, comma- or space-separated), in order,
    without repeats."""
    out: list[Measure] = []
    for text in texts:
        for part in re.split(r"[,\s]+", text.strip()):
            if part:
                measure = parse_measure(part)
                if measure not in out:
                    out.append(measure)
    return out


def _checked(name: str, cut: str | None, params: str | None, text: str) -> Measure:
    takes_cut = _SPECS[name][0]
    if cut is None and takes_cut == "required":
        raise UsageError(f"measure {text!r} needs a cutoff, e.g. {name}@10")
    if cut is not None and takes_cut == "no":
        raise UsageError(f"measure {text!r} takes no cutoff")
    if cut is not None and int(cut) < 1:
        raise UsageError(f"measure {text!r}: the cutoff must be at least 1")
    rel = None
    for param in filter(None, (p.strip() for p in (params or "").split(","))):
        key, _, value = param.partition("=")
        if key.strip() != "rel" or not value.strip().lstrip("-").isdigit():
            raise UsageError(f"measure {text!r}: the only parameter is rel=<integer level>")
        if name in ("nDCG", "DCG"):
            raise UsageError(f"measure {text!r}: {name} uses every grade as its gain, not rel")
        rel = int(value)
    return Measure(name=name, cutoff=None if cut is None else int(cut), rel=rel)
