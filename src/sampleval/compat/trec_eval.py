"""``sampleval trec_eval``: trec_eval 10's command line over sampleval's exact measures,
printing what trec_eval prints, byte for byte.

- Options are read as GNU ``getopt_long`` reads trec_eval's (``hvqm:cl:nD:JN:M:R:T:oZ:``
  and the long names): clustered flags (``-qc``), attached values (``-mall_trec``, ``-l2``),
  options after the file names, ``--`` ending them, unambiguous long-name prefixes.
- ``-m name[.params]`` marks a measure or a nickname (``official``, ``all_trec``, ``set``,
  ``all_prefs``, ``prefs``, ``qrels_jg``); parameters are read as trec_eval reads them
  (``atol``/``atof``); the first ``-m`` giving parameters to a measure wins.
- Topics are those of the judgments, in byte order; a topic the run lacks is skipped (as
  trec_eval 9 and trec_eval's help; trec_eval 10.0 exits, see docs/guide/trec_eval.md), or with
  ``-c`` evaluated on trec_eval's one-document stand-in ranking. A document the run repeats within a topic is an
  error where trec_eval 10 finds it (see :mod:`sampleval.compat._inputs`); ``--duplicates
  first|last`` (sampleval's own option) keeps one occurrence instead. Values accumulate in
  topic order and print as trec_eval's ``%6.4f``.

The measures, their names and their order come from :data:`sampleval.measures.names.SPECS`;
this module only reads options, picks measures, drives the evaluation and formats.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from sampleval.core.run import DUPLICATES
from sampleval.errors import InputError, UsageError
from sampleval.measures.names import SPECS, Measure, MeasureSpec, nickname_members, trec_spec

if TYPE_CHECKING:
    from sampleval.compat._inputs import QrelsColumns
    from sampleval.core.prefs import GroupQrels, Preferences
    from sampleval.core.run import Run

VERSION = "10.0"
SHORT_OPTIONS = "hvqm:cl:nD:JN:M:R:T:oZ:"
LONG_OPTIONS = {  # long name -> short option (takes a value when the short one does)
    "help": "h", "version": "v", "query_eval_wanted": "q", "measure": "m",
    "complete_rel_info_wanted": "c", "level_for_rel": "l", "nosummary": "n",
    "Debug_level": "D", "Judged_docs_only": "J", "Number_docs_in_coll": "N",
    "Max_retrieved_per_topic": "M", "Rel_info_format": "R", "Results_format": "T",
    "Output_old_results_format": "o", "Zscore": "Z",
    "duplicates": "duplicates",  # sampleval's own, long name only, takes a value
}
REL_FORMATS = ("qrels", "qrels_jg", "prefs", "qrels_prefs")
MISSING_ZSCORE = -1000000.0
GEOMETRIC_FLOOR = 0.00001
STAND_IN_DOCNO = "ceci_nest_pas_un_docno"  # trec_eval's ranking for a topic a run lacks (-c)
USAGE = ("usage: sampleval trec_eval [-h] [-q] [-m measure[.params]]... [-c] [-n] [-l num] "
         "[-M num] [-N num] [-J] [-R rel_format] [-Z zscores] rel_info_file results_file")


@dataclass
class Options:
    """trec_eval's options (see :func:`sampleval.compat.trec_eval_help.HELP`)."""

    query: bool = False
    complete: bool = False
    judged_only: bool = False
    summary: bool = True
    level: int = 1
    num_docs: int = 0
    max_docs: int | None = None
    debug_query: str | None = None
    rel_format: str = "qrels"
    results_format: str = "trec_results"
    zscores: str | None = None
    duplicates: str = "error"
    help: bool = False
    version: bool = False
    marked: set[str] = field(default_factory=set)
    params: list[tuple[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Item:
    """One printed value: its declaration, the name trec_eval prints, the library measure
    computing it (None for runid and relstring) and relstring's length."""

    spec: MeasureSpec
    name: str
    measure: Measure | None
    length: int = 0


# -- command line ------------------------------------------------------------------------------

def getopt(argv: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Options and operands as GNU ``getopt_long`` returns them for trec_eval."""
    options: list[tuple[str, str]] = []
    operands: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            short = _long_option(name)
            if _takes_value(short):
                if not has_value:
                    if i >= len(args):
                        raise UsageError(f"trec_eval: option '--{name}' requires an argument")
                    value = args[i]
                    i += 1
            elif has_value:
                raise UsageError(f"trec_eval: option '--{name}' doesn't allow an argument")
            options.append((short, value))
        elif arg.startswith("-") and arg != "-":
            j = 1
            while j < len(arg):
                short = arg[j]
                if short == ":" or short not in SHORT_OPTIONS:
                    raise UsageError(f"trec_eval: invalid option -- '{short}'")
                j += 1
                if _takes_value(short):
                    if j < len(arg):
                        value = arg[j:]
                    elif i < len(args):
                        value = args[i]
                        i += 1
                    else:
                        raise UsageError(f"trec_eval: option requires an argument -- '{short}'")
                    options.append((short, value))
                    break
                options.append((short, ""))
        else:
            operands.append(arg)
    return options, operands


def _takes_value(short: str) -> bool:
    if short == "duplicates":
        return True
    index = SHORT_OPTIONS.index(short)
    return short == "o" or (index + 1 < len(SHORT_OPTIONS) and SHORT_OPTIONS[index + 1] == ":")


def _long_option(name: str) -> str:
    if name in LONG_OPTIONS:
        return LONG_OPTIONS[name]
    matches = [long for long in LONG_OPTIONS if long.startswith(name)] if name else []
    if len(matches) == 1:
        return LONG_OPTIONS[matches[0]]
    if matches:
        raise UsageError(f"trec_eval: option '--{name}' is ambiguous; possibilities: "
                         + " ".join(f"'--{m}'" for m in matches))
    raise UsageError(f"trec_eval: unrecognized option '--{name}'")


def parse_options(argv: Sequence[str]) -> Options:
    """trec_eval's options, measures marked as its ``mark_measure`` marks them."""
    opts = Options()
    options, opts.files = getopt(argv)
    for short, value in options:
        if short == "v":
            opts.version = True
            return opts
        if short == "h":
            opts.help = True
        elif short == "q":
            opts.query = True
        elif short == "m":
            _mark(opts, value)
        elif short == "c":
            opts.complete = True
        elif short == "l":
            opts.level = atol(value)
        elif short == "n":
            opts.summary = False
        elif short == "D":
            _, dot, query = value.partition(".")
            opts.debug_query = query if dot else None
        elif short == "J":
            opts.judged_only = True
        elif short == "N":
            opts.num_docs = atol(value)
        elif short == "M":
            opts.max_docs = atol(value)
        elif short == "R":
            opts.rel_format = value
        elif short == "T":
            opts.results_format = value
        elif short == "Z":
            opts.zscores = value
        elif short == "duplicates":
            if value not in DUPLICATES:
                raise UsageError(f"trec_eval: --duplicates must be one of "
                                 f"{', '.join(DUPLICATES)}, not '{value}'")
            opts.duplicates = value
    return opts


def _mark(opts: Options, text: str) -> None:
    """trec_eval's ``mark_measure``: a measure or nickname, optionally ``.params``."""
    name, dot, params = text.partition(".")
    if dot:
        if not params:
            raise UsageError(f"trec_eval: improper measure in parameter '{name}'")
        opts.params.append((name, params))
    members = nickname_members(name)
    if members is None:
        spec = trec_spec(name)
        if spec is None or not spec.trec_eval:
            known = [s.trec for s in SPECS if s.trec_eval]
            from sampleval.declare import did_you_mean

            raise UsageError(f"trec_eval: illegal measure '{text}'{did_you_mean(name, known)}")
        members = [spec]
    opts.marked.update(s.trec for s in members)


# -- parameters, as trec_eval reads them ------------------------------------------------------

_FLOAT_PREFIX = re.compile(r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)",
                           re.IGNORECASE)


def atol(text: str) -> int:
    """C's ``atol``: the integer at the start of ``text`` (0 when there is none)."""
    match = re.match(r"\s*([+-]?\d+)", text)
    return int(match[1]) if match else 0


def atof(text: str) -> float:
    """C's ``atof``: the number at the start of ``text`` (0 when there is none)."""
    match = _FLOAT_PREFIX.match(text)
    return float(match[0]) if match else 0.0


def _valid_int(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text) is not None


def _pairs(text: str) -> list[tuple[str, float]]:
    """``name=value,...`` as trec_eval's ``get_param_pairs`` reads it."""
    last = ","
    for char in text:
        if char == ",":
            if last == ",":
                break
            last = ","
        elif char == "=":
            if last == "=":
                last = ","
                break
            last = "="
    if last != "=":
        raise UsageError(f"trec_eval: malformed pair parameters in '{text}'")
    return [(name, atof(value)) for name, _, value in (p.partition("=") for p in text.split(","))]


def items_of(spec: MeasureSpec, params: str | None, opts: Options) -> list[Item]:
    """The values trec_eval prints for ``spec`` given ``-m spec.params`` (None: defaults)."""
    raw = spec.trec_default if params is None else params
    key = spec.key
    if spec.trec_params == "counts":
        cutoffs = sorted(atol(p) for p in raw.split(","))
        if cutoffs[0] <= 0:
            raise UsageError(f"trec_eval: {spec.trec}: cutoffs must be positive ('{raw}')")
        _no_repeats(cutoffs, spec, raw)
        return [Item(spec, f"{spec.trec}_{k}", Measure(key, cutoff=k)) for k in cutoffs]
    if spec.trec_params == "shares":
        shares = sorted(atof(p) for p in raw.split(","))
        _no_repeats(shares, spec, raw)
        return [Item(spec, f"{spec.trec}_{x:3.2f}", Measure(key, cutoff=x)) for x in shares]
    name = spec.trec if params is None else f"{spec.trec}_{params}"
    if spec.trec_params == "numbers":
        values = [atof(p) for p in raw.split(",")]
        if spec.trec == "relstring":
            return [Item(spec, name, None, max(int(values[0]), 0))]
        if spec.trec == "utility":
            if len(values) != 4:
                raise UsageError("trec_eval: utility takes 4 coefficients (a,b,c,d), not "
                                 f"'{raw}'")
            coefficients = tuple(zip("abcd", values, strict=True))
            return [Item(spec, name, Measure(key, params=(*coefficients,
                                                          ("N", float(opts.num_docs)))))]
        if spec.trec == "11pt_avg":
            return [Item(spec, name, Measure(key, params=(("levels", tuple(values)),)))]
        return [Item(spec, name, Measure(key, params=(("beta", values[0]),)))]  # set_F
    if spec.trec_params == "pairs":
        pairs = _pairs(params) if params is not None else []
        chosen: list[tuple[str, object]] = []
        persistence = [value for n, value in pairs if n == "p"]
        if persistence and "p" in spec.keywords:
            chosen.append(("p", persistence[-1]))
        gains = tuple((atol(n), value) for n, value in pairs if _valid_int(n))
        if gains and "gains" in spec.keywords:
            chosen.append(("gains", gains))
        return [Item(spec, name, Measure(key, params=tuple(chosen)))]
    return [Item(spec, spec.trec, Measure(key) if spec.library else None)]


def _no_repeats(values: list[int] | list[float], spec: MeasureSpec, raw: str) -> None:
    if len(set(values)) != len(values):
        raise UsageError(f"trec_eval: {spec.trec}: repeated cutoffs in '{raw}'")


def select(opts: Options) -> list[Item]:
    """The printed values, in trec_eval's order (``official`` when no ``-m``)."""
    marked = opts.marked or {s.trec for s in nickname_members("official") or []}
    out: list[Item] = []
    for spec in SPECS:
        if spec.trec_eval and spec.trec in marked:
            params = next((p for n, p in opts.params if n == spec.trec), None)
            out.extend(items_of(spec, params, opts))
    return out


# -- evaluation --------------------------------------------------------------------------------

@dataclass
class TopicValues:
    """One topic's values: a number per item (None for runid), relstring's text."""

    topic: str
    values: list[float | None]
    relstring: str = ""


def _check_formats(items: list[Item], rel_format: str) -> None:
    needs = {"qrels": ("qrels",), "prefs": ("prefs", "qrels_prefs"), "groups": ("qrels_jg",)}
    for item in items:
        if item.spec.trec in ("runid", "num_q"):
            continue
        if rel_format not in needs[item.spec.judgments]:
            wanted = " or ".join(f"-R {f}" for f in needs[item.spec.judgments])
            raise UsageError(f"trec_eval: measure '{item.spec.trec}' needs {wanted} (the "
                             f"rel_info file is read as -R {rel_format})")


def _with_stand_ins(run: Run, topics: list[str]) -> Run:
    """The run plus trec_eval's one-document ranking for each topic in ``topics``."""
    import pyarrow as pa

    from sampleval.core.run import Run as RunType

    if not topics:
        return run
    kind = pa.dictionary(pa.int32(), pa.string())
    extra = pa.table({"query_id": pa.array(topics).cast(kind),
                      "doc_id": pa.array([STAND_IN_DOCNO] * len(topics)).cast(kind),
                      "score": pa.array([1.0] * len(topics))})
    table = run.table.select(["query_id", "doc_id", "score"])
    table = table.cast(pa.schema([("query_id", kind), ("doc_id", kind),
                                  ("score", pa.float64())]))
    return RunType(name=run.name, table=pa.concat_tables([table, extra]), source=run.source)


def evaluate_topics(opts: Options, items: list[Item], judgments: QrelsColumns | Preferences |
                    GroupQrels, run: Run, topics: list[str]) -> list[TopicValues]:
    """Each topic's values (``topics``: evaluated in this order, the run's missing ones on
    trec_eval's stand-in ranking)."""
    import numpy as np

    from sampleval.compat._inputs import QrelsColumns
    from sampleval.core.graded import ranked_grades, run_grades
    from sampleval.measures.exact import compute

    present = set(run.topics)
    full = _with_stand_ins(run, [t for t in topics if t not in present])
    out = {t: TopicValues(t, [None] * len(items)) for t in topics}
    level = opts.level
    if isinstance(judgments, QrelsColumns):
        index = judgments.index(topics)
        graded = [run_grades(full, index, opts.max_docs, np.float64)]
        for topic, ranked in ranked_grades(graded, index, opts.judged_only):
            for j, item in enumerate(items):
                if item.measure is not None:
                    out[topic].values[j] = float(compute(item.measure, ranked, level)[0])
                elif item.spec.trec == "relstring":
                    out[topic].relstring = relstring(ranked.codes()[0], item.length)
    elif opts.rel_format in ("prefs", "qrels_prefs"):
        from sampleval.measures.evaluation import prefs_rankings
        from sampleval.measures.prefs import prefs_values

        for topic, judged, pos, njr in prefs_rankings(judgments, [full], topics,  # type: ignore[arg-type]
                                                      opts.max_docs, np.float64):
            found = prefs_values(judged, pos, njr)
            for j, item in enumerate(items):
                if item.measure is not None and item.spec.judgments == "prefs":
                    out[topic].values[j] = float(found[item.measure.name][0])
    else:  # qrels_jg
        from sampleval.core.pool import Pool
        from sampleval.measures.evaluation import group_rankings
        from sampleval.measures.groups import compute_groups

        pool = Pool.from_runs([full], depth=opts.max_docs, topics=topics,
                              score_type=np.float64)
        by_topic = group_rankings(pool, judgments, topics, opts.judged_only)  # type: ignore[arg-type]
        for topic in topics:
            for j, item in enumerate(items):
                if item.measure is not None and item.spec.judgments == "groups":
                    out[topic].values[j] = float(compute_groups(
                        item.measure, by_topic[topic], level)[0])
    for values in out.values():
        for j, item in enumerate(items):
            if item.spec.trec == "num_q":
                values.values[j] = 1.0
    return [out[t] for t in topics]


def relstring(codes: Sequence[float], length: int) -> str:
    """trec_eval's relstring: the first ``length`` grades as characters."""
    chars = []
    for code in list(codes)[:length]:
        if math.isnan(code):
            break
        rel = int(code)
        chars.append(">" if rel > 9 else str(rel) if rel >= 0 else
                     "-" if rel == -1 else "." if rel == -2 else "<")
    return "".join(chars)


def _stand_in_cleanup(values: TopicValues, items: list[Item]) -> None:
    """What trec_eval resets after measuring a stand-in ranking (by printed name)."""
    for j, item in enumerate(items):
        name = item.name
        if name in ("num_ret", "utility", "rbp_resid") or name.startswith("unj"):
            values.values[j] = 0.0
        elif name == "relstring":
            values.relstring = ""


def _zscores(values: TopicValues, items: list[Item],
             table: dict[tuple[str, str], tuple[float, float]], topics: set[str]) -> None:
    """trec_eval's ``-Z``: each value as (value - mean) / stddev of the reference runs."""
    for j, item in enumerate(items):
        value = values.values[j]
        if value is None:
            continue
        reference = table.get((values.topic, item.name)) if values.topic in topics else None
        if reference is None:
            values.values[j] = MISSING_ZSCORE
            continue
        mean, stddev = reference
        if stddev:
            values.values[j] = (value - mean) / stddev
        else:
            values.values[j] = 0.0 if value == mean else MISSING_ZSCORE


# -- output ------------------------------------------------------------------------------------

def c_float(value: float) -> str:
    """C's ``%6.4f`` (``-nan`` for a NaN with its sign bit set, as glibc prints it)."""
    if math.isnan(value):
        text = "-nan" if math.copysign(1.0, value) < 0 else "nan"
        return f"{text:>6}"
    return f"{value:6.4f}"


def _line(name: str, topic: str, text: str, z: bool = False) -> str:
    return f"{'Z' if z else ''}{name:<22}\t{topic}\t{text}\n"


def _number(item: Item, value: float, z: bool) -> str:
    if z or item.spec.trec_kind != "count":
        return c_float(value)
    return str(math.trunc(value)) if math.isfinite(value) else c_float(value)


def report(opts: Options, items: list[Item], per_topic: list[TopicValues], runid: str,
           n_rel_topics: int, positive_judgments: int) -> str:
    """trec_eval's output: each topic's values (with ``-q``), then the summary."""
    z = opts.zscores is not None
    lines: list[str] = []
    sums = [0.0] * len(items)
    for values in per_topic:
        for j, item in enumerate(items):
            value = values.values[j]
            if item.spec.trec == "relstring":
                if opts.query:
                    lines.append(_line(item.name, values.topic, f"'{values.relstring}'"))
                continue
            if value is None:
                continue
            sums[j] += value
            if opts.query and item.spec.per_topic:
                lines.append(_line(item.name, values.topic, _number(item, value, z), z))
    if opts.summary:
        evaluated = len(per_topic)
        divisor = n_rel_topics if opts.complete else evaluated
        for j, item in enumerate(items):
            spec = item.spec
            if spec.trec == "runid":
                lines.append(_line("runid", "all", runid))
                continue
            if spec.trec == "relstring":
                continue
            total = sums[j]
            if spec.trec == "num_q":
                total = float(divisor)
            elif spec.trec == "num_rel" and opts.complete and opts.rel_format == "qrels":
                total = float(positive_judgments)
            elif spec.aggregate == "gmean":
                total += (divisor - evaluated) * math.log(GEOMETRIC_FLOOR)
                total = math.exp(total / divisor) if divisor else total
            elif spec.aggregate == "mean" and divisor:
                total /= divisor
            lines.append(_line(item.name, "all", _number(item, total, z), z))
    return "".join(lines)


def run(argv: Sequence[str], out: TextIO | None = None) -> None:
    """Run one trec_eval command line; output to ``out`` (standard output)."""
    out = out or sys.stdout
    opts = parse_options(argv)
    if opts.version:
        sys.stderr.write(f"trec_eval version {VERSION} (sampleval)\n")
        return
    if opts.help:
        from sampleval.compat.trec_eval_help import help_text

        out.write(help_text(opts))
        return
    if len(opts.files) != 2:
        raise UsageError(f"trec_eval: expected rel_info_file and results_file, got "
                         f"{len(opts.files)} file name(s) ({USAGE})")
    if opts.files.count("-") > 1:
        raise UsageError("trec_eval: standard input ('-') can be read only once")
    if opts.rel_format not in REL_FORMATS:
        raise UsageError(f"trec_eval: illegal rel_format '{opts.rel_format}' (one of "
                         f"{', '.join(REL_FORMATS)})")
    if opts.results_format != "trec_results":
        raise UsageError(f"trec_eval: illegal retrieval results format "
                         f"'{opts.results_format}' (trec_results is the only one)")
    if opts.max_docs is not None and opts.max_docs < 1:
        raise UsageError("trec_eval: -M must be at least 1")
    items = select(opts)
    _check_formats(items, opts.rel_format)
    out.write(evaluate_files(opts, items))


def evaluate_files(opts: Options, items: list[Item]) -> str:
    """Read the two files (and the z-scores), evaluate, and format."""

    from sampleval.cli._app import in_background
    from sampleval.compat._inputs import QrelsColumns, read_results  # numpy, pyarrow only

    rel_info_file, results_file = opts.files
    with in_background(read_results, results_file) as reading:
        from sampleval.compat._inputs import read_rel_info, read_zscores, settle_repeats

        try:
            judgments = read_rel_info(rel_info_file, opts.rel_format)
        except InputError:
            from sampleval.cli._app import check_not_a_run

            check_not_a_run(rel_info_file, "the qrels",
                            "sampleval trec_eval [OPTIONS] REL_INFO_FILE RESULTS_FILE")
            raise
        run_, source = reading.result()
    runid = run_.name
    zscores = read_zscores(opts.zscores) if opts.zscores is not None else None
    rel_topics = judgments.topics() if isinstance(judgments, QrelsColumns) else sorted(
        map(str, judgments.frame["query_id"].unique()), key=str.encode)
    wanted = rel_topics if opts.debug_query is None else [
        t for t in rel_topics if t == opts.debug_query]
    present = set(run_.topics)
    topics = [t for t in wanted if t in present or opts.complete]
    if not topics:
        raise UsageError("trec_eval: no queries with both results and relevance info "
                         f"({rel_info_file}, {results_file})")
    run_ = settle_repeats(run_, source, topics, opts.max_docs, opts.duplicates)
    per_topic = evaluate_topics(opts, items, judgments, run_, topics)
    z_topics = {q for q, _ in zscores} if zscores is not None else set()
    for values in per_topic:
        for j, item in enumerate(items):
            value = values.values[j]
            if item.spec.aggregate == "gmean" and value is not None:
                values.values[j] = math.log(max(value, GEOMETRIC_FLOOR))
        if values.topic not in present:
            _stand_in_cleanup(values, items)
        if zscores is not None:
            _zscores(values, items, zscores, z_topics)
    positive = judgments.positive() if isinstance(judgments, QrelsColumns) else 0
    return report(opts, items, per_topic, runid, len(rel_topics), positive)
