"""Measure names: one declaration per measure (:data:`SPECS`), parsed from ir_measures syntax
(``AP``, ``P@10``, ``nDCG@20``, ``AP(rel=2)``, ``nDCG(gains={1:1,2:3})``, ``P@10(rel=2)``)
or from trec_eval's names (``map``, ``P_10``, ``ndcg_cut_20``, ``iprec_at_recall_0.10``).

A name is matched exactly first, then case-insensitively (``ap``, ``ndcg@10``); an unknown
name gets a "did you mean". The declarations follow trec_eval 10's measure table, in its
order: that order is the order ``sampleval trec_eval`` prints in, the ``sets`` are its
nicknames (``-m official``, ``-m all_trec`` ...), and the ``trec_*`` fields say how its
command line takes parameters. Measures without an ir_measures name keep trec_eval's name.
This module stays light (no numpy): the command line imports it at start.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from sampleval.declare import did_you_mean
from sampleval.errors import UsageError, short_repr

Cutoff = Literal["no", "optional", "required"]
Estimand = Literal["", "total", "ratio", "pair-sum ratio"]
ESTIMANDS: tuple[Estimand, ...] = ("total", "ratio", "pair-sum ratio")
"""What a design-based estimator estimates for a measure (:attr:`MeasureSpec.estimand`)."""
Params = tuple[tuple[str, object], ...]

_TOP = frozenset({"official", "all_trec"})
_TREC = frozenset({"all_trec"})
_SET = frozenset({"all_trec", "set"})
_PREFS = frozenset({"all_prefs", "prefs"})
_ALL_PREFS = frozenset({"all_prefs"})
_COUNTS = "5,10,15,20,30,100,200,500,1000"
_RECALL_LEVELS = "0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0"
_MULTIPLES = "0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0"


@dataclass(frozen=True)
class MeasureSpec:
    """One measure: how sampleval names and parses it, and how trec_eval presents it.

    - ``name``: the name results carry (ir_measures' where it has one); ``trec``: trec_eval's.
    - ``cutoff``: whether ``@k`` is taken; ``cutoff_kind``: ``int`` (documents) or ``float``
      (a share of R: IPrec@0.5, Rprec_mult@0.2).
    - ``keywords``: the parameters written ``NAME(key=value)``.
    - ``aggregate``: how topics combine: ``mean``, ``sum`` (counts) or ``gmean`` (geometric
      mean of values floored at 1e-5, as trec_eval's gm_map).
    - ``judgments``: ``qrels``, ``prefs`` (preference judgments) or ``groups`` (qrels of
      several judgment groups).
    - ``trec_params``: how trec_eval's ``-m name.params`` reads parameters: ``none``,
      ``counts`` (sorted integer cutoffs), ``shares`` (sorted decimal cutoffs), ``numbers``
      (a list of numbers), ``pairs`` (``key=value`` pairs); ``trec_default`` its default.
    - ``trec_kind``: printed as a ``float`` (%6.4f), a ``count`` (integer) or ``text``;
      ``per_topic``: printed for each topic under ``-q``; ``sets``: trec_eval nicknames.
    - ``library``: False for trec_eval's text items (runid, relstring), which only
      ``sampleval trec_eval`` prints; ``trec_eval``: False for measures trec_eval lacks.
    - ``estimand``: what the design-based estimators (``~ht``, ``~hh``, ``~ppi``) estimate
      from a sample (""; none): a ``total`` over the topic's documents, sum_d w(rank_d)
      v(label_d), with rank weights w registered beside the kernel
      (:func:`sampleval.measures.weights.rank_weight`); a ``ratio`` of such totals (R@k,
      Rprec, nDCG); AP's ``pair-sum ratio`` (a sum over pairs of documents over R). ``graded``:
      v is the gain (the grade), not the relevance 1{grade >= level}. The engine reads both
      (:mod:`sampleval.estimation.engine`), so a measure with a total as its estimand is
      estimated by those families with no edit of theirs.
    """

    trec: str
    doc: str
    name: str = ""
    cutoff: Cutoff = "no"
    cutoff_kind: type = int
    keywords: tuple[str, ...] = ("rel",)
    aggregate: Literal["mean", "sum", "gmean"] = "mean"
    judgments: Literal["qrels", "prefs", "groups"] = "qrels"
    trec_params: Literal["none", "counts", "shares", "numbers", "pairs"] = "none"
    trec_default: str = ""
    trec_kind: Literal["float", "count", "text"] = "float"
    per_topic: bool = True
    sets: frozenset[str] = field(default_factory=frozenset)
    aliases: tuple[str, ...] = ()
    library: bool = True
    trec_eval: bool = True
    estimand: Estimand = ""
    graded: bool = False

    @property
    def key(self) -> str:
        """The library name: ``name`` if given, else trec_eval's."""
        return self.name or self.trec


def _gains(trec: str, doc: str, name: str = "", sets: frozenset[str] = _TREC,
           keywords: tuple[str, ...] = ("gains",), estimand: Estimand = "") -> MeasureSpec:
    return MeasureSpec(trec, doc, name=name, keywords=keywords, trec_params="pairs", sets=sets,
                       estimand=estimand, graded=bool(estimand))


def _prefs(trec: str, doc: str, sets: frozenset[str] = _ALL_PREFS) -> MeasureSpec:
    return MeasureSpec(trec, doc, keywords=(), judgments="prefs", sets=sets)


SPECS: tuple[MeasureSpec, ...] = (
    MeasureSpec("runid", "the run's name: the tag (sixth field) of its file's last line",
                keywords=(), trec_kind="text", per_topic=False,
                sets=_TOP | {"set", "all_prefs", "prefs", "qrels_jg"}, library=False),
    MeasureSpec("num_q", "number of topics averaged over (with -c: every qrels topic)",
                name="NumQ", keywords=(), aggregate="sum", trec_kind="count", per_topic=False,
                sets=_TOP | {"set", "all_prefs", "prefs", "qrels_jg"}),
    MeasureSpec("num_ret", "documents retrieved (after -M and -J); summed over topics",
                name="NumRet", keywords=(), aggregate="sum", trec_kind="count",
                sets=_TOP | {"set"}),
    MeasureSpec("num_rel", "relevant documents in the qrels, retrieved or not; summed",
                name="NumRel", aggregate="sum", trec_kind="count", sets=_TOP | {"set"},
                estimand="total"),
    MeasureSpec("num_rel_ret", "relevant documents retrieved; summed over topics",
                name="NumRelRet", aggregate="sum", trec_kind="count", sets=_TOP | {"set"},
                estimand="total"),
    MeasureSpec("map", "average precision: the mean, over the R relevant documents, of the "
                "precision at each one's rank (0 for those not retrieved)", name="AP",
                sets=_TOP, estimand="pair-sum ratio"),
    MeasureSpec("gm_map", "AP, combined over topics by a geometric mean (values below "
                "0.00001 count as 0.00001); printed for the summary only", name="GMAP",
                aggregate="gmean", per_topic=False, sets=_TOP),
    MeasureSpec("Rprec", "precision at rank R (R: the topic's relevant documents)",
                sets=_TOP, estimand="ratio"),
    MeasureSpec("bpref", "binary preference (Buckley & Voorhees 2004): for each relevant "
                "document, 1 - (judged non-relevant documents above it, at most R) / "
                "min(R, judged non-relevant); unjudged documents are skipped", name="Bpref",
                sets=_TOP),
    MeasureSpec("recip_rank", "1 / rank of the first relevant document (0 if none)",
                name="RR", cutoff="optional", sets=_TOP),
    MeasureSpec("iprec_at_recall", "interpolated precision at a recall level x: the best "
                "precision at or below the rank of the round(x*R)-th relevant document",
                name="IPrec", cutoff="required", cutoff_kind=float, trec_params="shares",
                trec_default=_RECALL_LEVELS, sets=_TOP),
    MeasureSpec("P", "precision at rank k (a run with fewer than k documents counts the "
                "missing ones as non-relevant)", cutoff="required", trec_params="counts",
                trec_default=_COUNTS, sets=_TOP, estimand="total"),
    MeasureSpec("relstring", "the grades of the first N retrieved documents as a string "
                "('-': not in the qrels, '.': in the qrels but unjudged, '>': above 9); "
                "printed per topic only", keywords=(), trec_params="numbers", trec_default="10",
                trec_kind="text", sets=_TREC, library=False),
    MeasureSpec("recall", "recall at rank k: relevant documents in the top k over R",
                name="R", cutoff="required", trec_params="counts", trec_default=_COUNTS,
                sets=_TREC, estimand="ratio"),
    MeasureSpec("infAP", "inferred AP (Yilmaz & Aslam 2006) from a judged sample of the pool "
                "(qrels grade -1: pooled, not judged)", sets=_TREC),
    MeasureSpec("gm_bpref", "Bpref combined over topics by a geometric mean (floor 0.00001);"
                " printed for the summary only", aggregate="gmean", per_topic=False,
                sets=_TREC),
    MeasureSpec("Rprec_mult", "precision at rank int(x*R + 0.9), for multiples x of R",
                cutoff="required", cutoff_kind=float, trec_params="shares",
                trec_default=_MULTIPLES, sets=_TREC),
    MeasureSpec("utility", "a*relret + b*(ret - relret) + c*(R - relret) + d*(N + relret - "
                "ret - R) with N the collection size (-N); default a=1, b=-1, c=d=0",
                keywords=("a", "b", "c", "d", "N", "rel"), trec_params="numbers",
                trec_default="1.0,-1.0,0.0,0.0", sets=_SET),
    MeasureSpec("11pt_avg", "interpolated precision averaged over recall levels (default "
                "the 11 levels 0, 0.1, ..., 1)", keywords=("levels", "rel"),
                trec_params="numbers", trec_default=_RECALL_LEVELS, sets=_TREC),
    MeasureSpec("binG", "mean over the R relevant documents of 1/log2(2 + non-relevant "
                "documents above it)", sets=_TREC),
    _gains("G", "normalised gain: each retrieved document's gain over log2(2 + ideal cost "
           "so far - gain so far), summed and divided by the ideal total gain"),
    _gains("dcg", "discounted cumulative gain (gain / log2(rank + 1), gains: the grades)",
           sets=frozenset(), estimand="total"),
    _gains("ideal_dcg", "DCG of the ideal ranking of the topic's judged documents",
           sets=frozenset()),
    MeasureSpec("ndcg", "normalised DCG (Jarvelin & Kekalainen 2002): DCG over the DCG of "
                "the ideal ranking; gains are the grades unless given as level=gain pairs",
                name="nDCG", cutoff="optional", keywords=("gains",), trec_params="pairs",
                sets=_TREC, estimand="ratio", graded=True),
    _gains("ndcg_rel", "nDCG averaged over the relevant documents, at each one's rank "
           "(at the run's end for those not retrieved)"),
    _gains("Rndcg", "nDCG averaged over the ranks where the ideal gain changes (the "
           "R-levels of each grade)"),
    MeasureSpec("ndcg_cut", "nDCG over the top k (gains: the grades)", name="nDCG",
                cutoff="required", keywords=("gains",), trec_params="counts",
                trec_default=_COUNTS, sets=_TREC, estimand="ratio", graded=True),
    MeasureSpec("map_cut", "AP over the top k (relevant documents below k count as not "
                "retrieved)", name="AP", cutoff="required", trec_params="counts",
                trec_default=_COUNTS, sets=_TREC, estimand="pair-sum ratio"),
    MeasureSpec("relative_P", "precision at k relative to the best possible: relevant in "
                "the top k over min(k, R)", cutoff="required", trec_params="counts",
                trec_default=_COUNTS, sets=_TREC),
    MeasureSpec("success", "1 if a relevant document is in the top k, else 0",
                name="Success", cutoff="required", trec_params="counts",
                trec_default="1,5,10", sets=_TREC),
    MeasureSpec("set_P", "precision of the whole retrieved set", name="SetP", sets=_SET),
    MeasureSpec("set_relative_P", "relevant retrieved over min(retrieved, R)", sets=_SET,
                aliases=("SetP(relative=True)",)),
    MeasureSpec("set_recall", "recall of the whole retrieved set", name="SetR", sets=_SET),
    MeasureSpec("set_map", "set precision times set recall", name="SetAP", sets=_SET),
    MeasureSpec("set_F", "F measure of the retrieved set, (1+beta)PR/(beta P + R) (default "
                "beta 1)", name="SetF", keywords=("beta", "rel"), trec_params="numbers",
                trec_default="1.0", sets=_SET),
    MeasureSpec("num_nonrel_judged_ret", "judged non-relevant documents retrieved; summed",
                aggregate="sum", trec_kind="count", sets=_TREC),
    MeasureSpec("prefs_num_prefs_poss", "preferences judged (pairs A > B)", keywords=(),
                aggregate="sum", judgments="prefs", trec_kind="count", sets=_PREFS),
    MeasureSpec("prefs_num_prefs_ful", "preferences fulfilled: A above B, or A retrieved "
                "and B not", keywords=(), aggregate="sum", judgments="prefs",
                trec_kind="count", sets=_PREFS),
    MeasureSpec("prefs_num_prefs_ful_ret", "preferences fulfilled with A and B retrieved",
                keywords=(), aggregate="sum", judgments="prefs", trec_kind="count",
                sets=_PREFS),
    _prefs("prefs_simp", "preferences fulfilled over preferences judged", _PREFS),
    _prefs("prefs_pair", "mean over document pairs of the share of judgment groups whose "
           "preference the ranking fulfils", _PREFS),
    _prefs("prefs_avgjg", "prefs_simp within each judgment group, averaged over groups",
           _PREFS),
    _prefs("prefs_avgjg_Rnonrel", "prefs_avgjg with each group's non-relevant documents "
           "(level 0) reduced or padded to R"),
    _prefs("prefs_simp_ret", "prefs_simp over pairs with both documents retrieved"),
    _prefs("prefs_pair_ret", "prefs_pair over pairs with both documents retrieved"),
    _prefs("prefs_avgjg_ret", "prefs_avgjg over pairs with both documents retrieved"),
    _prefs("prefs_avgjg_Rnonrel_ret", "prefs_avgjg_Rnonrel over retrieved documents"),
    _prefs("prefs_simp_imp", "prefs_simp over pairs with at least one document retrieved"),
    _prefs("prefs_pair_imp", "prefs_pair over pairs with at least one document retrieved"),
    _prefs("prefs_avgjg_imp", "prefs_avgjg over pairs with at least one retrieved"),
    MeasureSpec("map_avgjg", "AP of each judgment group's qrels, averaged over the groups",
                judgments="groups", sets=frozenset({"qrels_jg"})),
    MeasureSpec("P_avgjg", "P@k of each judgment group's qrels, averaged over the groups",
                cutoff="required", judgments="groups", trec_params="counts",
                trec_default=_COUNTS, sets=frozenset({"qrels_jg"})),
    MeasureSpec("Rprec_mult_avgjg", "Rprec_mult of each judgment group, averaged",
                cutoff="required", cutoff_kind=float, judgments="groups",
                trec_params="shares", trec_default=_MULTIPLES, sets=frozenset({"qrels_jg"})),
    MeasureSpec("yaap", "yet another AP (Robertson 2012): log((1 + S) / (1 + R - S)), S the "
                "sum of the precisions at the relevant documents"),
    MeasureSpec("rbp", "rank-biased precision (Moffat & Zobel 2008) with persistence p "
                "(default 0.9); gains are the grades, rescaled to [0, 1] when some fall "
                "outside", name="RBP", keywords=("p", "gains"), trec_params="pairs",
                sets=_TREC),
    MeasureSpec("rbp_resid", "the most RBP could grow if every unjudged retrieved document "
                "had the highest gain (0 when all are judged)", keywords=("p",),
                trec_params="pairs", sets=_TREC),
    MeasureSpec("unj", "share of the top k documents without a judgment (missing from the "
                "qrels or with a negative grade); ranks past the run's end count as judged",
                cutoff="required", keywords=(), trec_params="counts", trec_default="5,10,20",
                sets=_TREC),
    MeasureSpec("Judged", "share of the top min(k, retrieved) documents that carry a "
                "judgment (ir_measures' Judged; not a trec_eval measure)",
                cutoff="required", keywords=(), trec_eval=False),
)

DEFAULT_MEASURES = ("AP", "nDCG@10", "P@10", "Rprec", "Bpref", "RR")

_BY_TREC = {s.trec: s for s in SPECS}
_BY_KEY: dict[str, list[MeasureSpec]] = {}
for _spec in SPECS:
    if _spec.library:
        _BY_KEY.setdefault(_spec.key, []).append(_spec)


def spec_of(name: str, cutoff: float | None = None) -> MeasureSpec:
    """The declaration of the library measure ``name`` (with or without a cutoff)."""
    candidates = _BY_KEY[name]
    if len(candidates) > 1:
        wanted: tuple[Cutoff, ...] = ("no", "optional") if cutoff is None else ("required",)
        candidates = [s for s in candidates if s.cutoff in wanted] or candidates
    return candidates[0]


def trec_spec(trec: str) -> MeasureSpec | None:
    """The declaration of trec_eval's measure ``trec`` (exact name), if it has one."""
    return _BY_TREC.get(trec)


def nickname_members(nickname: str) -> list[MeasureSpec] | None:
    """The measures of one of trec_eval's nicknames (``official``, ``all_trec`` ...)."""
    members = [s for s in SPECS if nickname in s.sets]
    return members or None


@dataclass(frozen=True)
class Measure:
    """A measure with its parameters: ``cutoff`` (``@k``: documents, or a share of R for
    IPrec and Rprec_mult), ``rel`` (the relevance level, trec_eval's ``-l``, overriding the
    evaluation's for this measure) and ``params`` (other keywords, in order: ``gains`` as
    ``((level, gain), ...)``, ``p``, ``beta``, ``a``..``d``, ``levels``)."""

    name: str
    cutoff: float | None = None
    rel: int | None = None
    params: Params = ()

    def __str__(self) -> str:
        parts = [f"{k}={_show(v)}" for k, v in self.params]
        if self.rel is not None:
            parts.append(f"rel={self.rel}")
        text = self.name + (f"({','.join(parts)})" if parts else "")
        if self.cutoff is None:
            return text
        return f"{text}@{float(self.cutoff)!r}" if isinstance(self.cutoff, float) else (
            f"{text}@{self.cutoff}")

    def param(self, key: str, default: object = None) -> object:
        """The value of keyword ``key`` (``default`` when not given)."""
        return next((v for k, v in self.params if k == key), default)

    @property
    def spec(self) -> MeasureSpec:
        return spec_of(self.name, self.cutoff)

    @property
    def aggregate(self) -> str:
        """How topics combine: ``mean``, ``sum`` (the counts) or ``gmean``."""
        return self.spec.aggregate

    @property
    def trec_name(self) -> str:
        """The name trec_eval prints (``map``, ``P_10``, ``ndcg_cut_20``,
        ``iprec_at_recall_0.10``)."""
        spec = self.spec
        if self.cutoff is not None:
            base = spec.trec if spec.cutoff == "required" else f"{spec.trec}_cut"
            cut = f"{self.cutoff:3.2f}" if spec.cutoff_kind is float else str(self.cutoff)
            return f"{base}_{cut}"
        return spec.trec


def _show(value: object) -> str:
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) for v in value):
        return "{" + ",".join(f"{_show(k)}:{_show(v)}" for k, v in value) + "}"
    if isinstance(value, tuple):
        return "(" + ",".join(_show(v) for v in value) + ")"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- parsing ---------------------------------------------------------------------------------

_IR_MEASURES = re.compile(r"^(?P<name>[A-Za-z_0-9]+?)(?:\((?P<params>.*)\))?"
                          r"(?:@(?P<cut>[0-9.]+))?(?:\((?P<params2>.*)\))?$")
_TREC_CUT = re.compile(r"^(?P<name>[A-Za-z_0-9]+?)_(?P<cut>[0-9]+(?:\.[0-9]+)?)$")


def _names() -> dict[str, str]:
    """Every name a measure is known by (library names, trec_eval names) -> what it means:
    a library name, or ``trec:NAME`` for a trec_eval name that is not one."""
    names: dict[str, str] = {}
    for spec in SPECS:
        if spec.library:
            names[spec.key] = spec.key
    for spec in SPECS:
        if spec.library:
            names.setdefault(spec.trec, f"trec:{spec.trec}")
    return names


def _key(meaning: str) -> str:
    return _BY_TREC[meaning[5:]].key if meaning.startswith("trec:") else meaning


def _lowercase(names: dict[str, str]) -> dict[str, str]:
    """Lower-cased names -> meaning; names differing only in case must mean one measure."""
    out: dict[str, str] = {}
    for name, meaning in names.items():
        previous = out.get(name.lower())
        if previous is not None and _key(previous) != _key(meaning):
            raise AssertionError(f"measure names clash when case is ignored: {name}")
        if previous is None or not meaning.startswith("trec:"):
            out[name.lower()] = meaning
    return out


_NAMES = _names()
_LOWER = _lowercase(_NAMES)


def register_measure(spec: MeasureSpec) -> MeasureSpec:
    """Declare a measure from outside this module (a plugin, or one new file: its spec, its
    kernel registered with :func:`sampleval.measures.base.kernel`, a total's rank weights
    with :func:`sampleval.measures.weights.rank_weight`): it is then parsed, evaluated and,
    by its :attr:`~MeasureSpec.estimand`, estimated like the built-in measures. A name
    already declared is an error."""
    global SPECS
    if spec.trec in _BY_TREC or (spec.library and spec.key in _BY_KEY):
        raise UsageError(f"a measure named {spec.key!r} is already declared")
    SPECS = (*SPECS, spec)
    _BY_TREC[spec.trec] = spec
    if spec.library:
        _BY_KEY.setdefault(spec.key, []).append(spec)
    names = _names()
    lower = _lowercase(names)
    _NAMES.clear()
    _NAMES.update(names)
    _LOWER.clear()
    _LOWER.update(lower)
    return spec


def estimand_of(base: str) -> MeasureSpec | None:
    """The declaration of the library measure ``base`` (any case: ``DCG``) if it declares an
    estimand (:attr:`MeasureSpec.estimand`), else None."""
    spec = _lookup(base, False) or _lookup(base, True)
    return spec if spec is not None and spec.estimand else None


def _lookup(name: str, has_cut: bool) -> MeasureSpec | None:
    """The declaration ``name`` refers to (exactly, else ignoring case); a library name
    shared by two trec_eval measures (AP: map, map_cut) is resolved by whether a cutoff is
    given."""
    meaning = _NAMES.get(name) or _LOWER.get(name.lower())
    if meaning is None:
        return None
    if meaning.startswith("trec:"):
        return _BY_TREC[meaning[5:]]
    return spec_of(meaning, 1 if has_cut else None)


def parse_measure(text: str) -> Measure:
    """Parse one measure name; raise UsageError naming what is wrong."""
    text = text.strip()
    if text.replace(" ", "") in ("SetP(relative=True)", "SetP(relative=1)"):
        return Measure("set_relative_P")
    match = _IR_MEASURES.match(text)
    if match:
        if match["params"] is not None and match["params2"] is not None:
            raise UsageError(f"measure {text!r}: give parameters once")
        spec = _lookup(match["name"], match["cut"] is not None)
        if spec is not None:
            params = match["params"] if match["params"] is not None else match["params2"]
            return _checked(spec, match["cut"], params, text)
    trec = _TREC_CUT.match(text)
    if trec:
        spec = _lookup(trec["name"], True)
        if spec is not None and spec.cutoff != "no":
            return _checked(spec, trec["cut"], None, text)
    stem = re.split(r"[@(]", text)[0]
    if stem in ("runid", "relstring"):
        raise UsageError(f"{stem} is a line of trec_eval's output, not a measure ('sampleval "
                         f"trec_eval -m {stem}' prints it)")
    dotted = re.fullmatch(r"(\w+)\.(.+)", text)
    if dotted and _lookup(dotted[1], False) is not None:
        cut = dotted[2] if dotted[2].isdigit() else "10"
        raise UsageError(f"unknown measure {text!r}: trec_eval's '-m NAME.PARAMS' form; here a "
                         f"cutoff is written as trec_eval prints it ({dotted[1]}_{cut}), or "
                         f"'sampleval trec_eval -m {text}' takes trec_eval's options as they are")
    known = sorted({spec.key for spec in SPECS if spec.library}, key=str.lower)
    raise UsageError(f"unknown measure {text!r}{did_you_mean(stem, list(_NAMES))} "
                     f"(known: {', '.join(known)}; trec_eval names such as map, P_10, "
                     "ndcg_cut_20 work too)")


def aggregate_of(base: str) -> str:
    """How the measure ``base`` (``AP``, ``NumRel``; also a base only estimated, ``DCG``) and
    its estimates combine topics: ``sum`` for the counts, ``gmean`` for GMAP, else ``mean``
    (:mod:`sampleval.measures.aggregation`)."""
    return spec_of(base).aggregate if base in _BY_KEY else "mean"


def split_measures(text: str) -> list[str]:
    """Measure names separated by commas or spaces (commas inside brackets do not split)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0 and (char == "," or char.isspace()):
            parts.append(current)
            current = ""
        else:
            current += char
    return [p for p in [*parts, current] if p]


def parse_measures(texts: list[str] | tuple[str, ...]) -> list[Measure]:
    """Parse measure names (each may hold several, comma- or space-separated), in order,
    without repeats."""
    out: list[Measure] = []
    for text in texts:
        for part in split_measures(text):
            measure = parse_measure(part)
            if measure not in out:
                out.append(measure)
    return out


def measure_names() -> list[str]:
    """The library names, in trec_eval's order, for help texts."""
    return list(dict.fromkeys(s.key for s in SPECS if s.library))


def _checked(spec: MeasureSpec, cut: str | None, params: str | None, text: str) -> Measure:
    name = spec.key
    if cut is None and spec.cutoff == "required":
        example = "0.5" if spec.cutoff_kind is float else "10"
        raise UsageError(f"measure {text!r} needs a cutoff, e.g. {name}@{example}")
    if cut is not None and spec.cutoff == "no":
        raise UsageError(f"measure {text!r} takes no cutoff")
    cutoff: float | None = None
    if cut is not None:
        try:
            cutoff = spec.cutoff_kind(cut)
        except ValueError:
            raise UsageError(f"measure {text!r}: the cutoff must be a whole number") from None
        if spec.cutoff_kind is int and cutoff < 1:
            raise UsageError(f"measure {text!r}: the cutoff must be at least 1")
    rel, keywords = _keywords(spec, params or "", text)
    return Measure(name=name, cutoff=cutoff, rel=rel, params=keywords)


def _keywords(spec: MeasureSpec, params: str, text: str) -> tuple[int | None, Params]:
    """``rel`` and the other keyword parameters of ``NAME(k=v,...)``, checked."""
    rel: int | None = None
    out: list[tuple[str, object]] = []
    for param in split_measures(params.replace(" ", "")):
        key, _, value = param.partition("=")
        if key not in spec.keywords:
            offered = ", ".join(spec.keywords) or "none"
            raise UsageError(f"measure {text!r}: unknown parameter {key!r} (parameters of "
                             f"{spec.key}: {offered})")
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise UsageError(f"measure {text!r}: cannot read {key}={value}") from None
        if key == "rel":
            if not isinstance(parsed, int):
                raise UsageError(f"measure {text!r}: rel must be an integer level")
            rel = parsed
        elif key == "gains":
            if not isinstance(parsed, dict) or not all(
                    isinstance(k, int) and isinstance(v, int | float) for k, v in parsed.items()):
                raise UsageError(f"measure {text!r}: gains must read like {{1:1,2:3}}")
            out.append((key, tuple((k, float(v)) for k, v in parsed.items())))
        elif key == "levels":
            if not isinstance(parsed, tuple | list) or not parsed:
                raise UsageError(f"measure {text!r}: levels must read like (0.2,0.5,0.8)")
            out.append((key, tuple(float(v) for v in parsed)))
        else:
            if not isinstance(parsed, int | float):
                raise UsageError(f"measure {text!r}: {key} must be a number")
            out.append((key, float(parsed)))
    return rel, tuple(out)


def as_measures(measures: str | Any) -> list[Any]:
    """Measures as a list of names (str) and sampleval :class:`Measure` objects: one name or
    object, or a sequence of them; an ir_measures measure becomes its name (``nDCG@10``,
    ``AP(rel=2)``), which sampleval parses as ir_measures does."""
    def one(item: Any) -> str | Measure | None:
        if isinstance(item, (str, Measure)):
            return item
        if type(item).__module__.split(".")[0] == "ir_measures":
            return str(item)
        return None

    single = one(measures)
    if single is not None:
        return [single]
    items = list(measures) if isinstance(measures, (list, tuple)) else None
    converted = [one(item) for item in items] if items is not None else [None]
    if items is None or None in converted:
        bad = measures if items is None else items[converted.index(None)]
        raise UsageError(f"a measure is a name such as 'nDCG@10', an ir_measures measure "
                         f"(ir_measures.nDCG@10) or a list of them, not "
                         f"{type(bad).__name__} {short_repr(bad)}")
    return converted
