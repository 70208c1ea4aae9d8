"""``sampleval evaluate``: exact measures with trec_eval's semantics."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sampleval.cli._app import (
    Output,
    add_command,
    add_depth,
    add_duplicates,
    add_name_by,
    add_output,
    add_per_topic,
    add_rel_level,
    add_runs_argument,
    check_not_a_run,
    check_stdin_once,
    in_background,
    start_reading_runs,
    stderr_is_terminal,
)
from sampleval.errors import UsageError
from sampleval.measures.names import DEFAULT_MEASURES, measure_names

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from sampleval.core.graded import JudgedIndex, RunGrades
    from sampleval.io._source import Prefetch
    from sampleval.measures.names import Measure
    from sampleval.measures.results import ExactResults

FORMATS = ("table", "tsv", "json", "trec")
PREFETCH_BYTES = 1 << 26  # inflated run files held ahead of parsing: 30 TREC-COVID runs


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "evaluate", run,
                         "evaluate runs exactly against qrels, as trec_eval does")
    parser.add_argument("qrels", metavar="QRELS",
                        help="qrels file 'qid iter docno rel' (plain or .gz, or '-' for "
                             "standard input; negative rel: pooled, not judged), or a sample "
                             "directory of a deterministic design (depth-k, mtf, mab: its "
                             "judgments are exact; a sample drawn at random is refused: "
                             "estimate it instead)")
    add_runs_argument(parser)
    parser.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                        help="measure to compute, ir_measures style (AP, P@10, nDCG@20, "
                             "AP(rel=2), P@10(rel=2), nDCG(gains={1:1,2:3})); trec_eval names "
                             "(map, P_10, ndcg_cut_20) also work, in any case when "
                             "unambiguous; repeat or separate with commas. Measures: "
                             f"{', '.join(measure_names())} (docs/guide/trec_eval.md describes "
                             "them; prefs_* read the qrels as preferences, *_avgjg the qrels' "
                             "second column as judgment groups) "
                             f"(default: {', '.join(DEFAULT_MEASURES)})")
    add_per_topic(parser)
    add_depth(parser)
    add_rel_level(parser)
    parser.add_argument("-c", "--all-topics", action="store_true",
                        help="average over every topic in the qrels, a topic missing from a "
                             "run scoring 0 (trec_eval -c); otherwise over the topics both "
                             "the run and the qrels have")
    parser.add_argument("-J", "--judged-only", action="store_true",
                        help="remove unjudged documents from each ranking before measuring "
                             "(trec_eval -J)")
    parser.add_argument("-f", "--format", choices=FORMATS, default="table",
                        help="table: a readable leaderboard; tsv: header 'run topic measure "
                             "value', one row per (run, topic, measure), the mean as topic "
                             "'all'; json: {run: {topic: {measure: value}}}; trec: "
                             "trec_eval's text lines, each run's after its runid line, the "
                             "measures in -m's order (a measure with a relevance level or "
                             "parameters of its own, P(rel=2)@5, under its own name); "
                             "'sampleval trec_eval' prints trec_eval's output byte for byte")
    add_output(parser)
    add_name_by(parser)
    add_duplicates(parser)


def parse_evaluated(texts: list[str]) -> list[Measure]:
    """The measures named in ``texts``; for a name that is an estimator's (``xinfAP``,
    ``P@10~ht``), a UsageError pointing to ``sampleval estimate`` (the command line knows both
    vocabularies; the measures do not import the estimators)."""
    from sampleval.measures.names import parse_measure, parse_measures, split_measures

    try:
        return parse_measures(texts)
    except UsageError:
        from sampleval.estimation.spec import parse_estimate

        for part in (part for text in texts for part in split_measures(text)):
            try:
                parse_measure(part)
            except UsageError:
                try:
                    name = parse_estimate(part).name
                except UsageError:
                    break
                raise UsageError(f"unknown measure {part!r} ({name} is an estimate from a "
                                 "sample of judgments: 'sampleval estimate SAMPLE RUN...')"
                                 ) from None
        raise


def run(args: argparse.Namespace) -> None:
    measures = parse_evaluated(args.measure or list(DEFAULT_MEASURES))
    check_stdin_once(args.qrels, args.runs)
    check_not_a_run(args.qrels, "the qrels", "sampleval evaluate QRELS RUN...")
    output = Output(args.output, [args.qrels, *args.runs])
    if all(m.spec.judgments == "qrels" for m in measures):
        exact = _evaluate_streaming(args, measures)
        if args.format == "tsv":  # written from the arrays: no pandas
            output.write(exact.tsv(per_topic=args.per_topic))
            return
        results = exact.frame()
    else:  # preference and judgment-group measures read the runs themselves
        with start_reading_runs(args) as reading:  # the runs load while pandas imports
            from sampleval.io.coerce import as_qrels
            from sampleval.measures.evaluation import evaluate

            judgments = as_qrels(args.qrels)
            loaded = reading.result()
        results = evaluate(judgments, loaded, measures, depth=args.depth,
                           rel_level=args.rel_level, all_topics=args.all_topics,
                           judged_only=args.judged_only)
    if not args.per_topic:
        from sampleval.measures.evaluation import MEAN_TOPIC

        results = results[results["query_id"] == MEAN_TOPIC]
    emit(results, args.format, output)


def _evaluate_streaming(args: argparse.Namespace, measures: list[Measure]) -> ExactResults:
    """Qrels measures: the qrels and the runs are read, and each run reduced to its grades
    (``core.graded``), on background threads while the measures import; no run's table
    outlives its reduction. The run files start inflating (:class:`Prefetch`, at most
    :data:`PREFETCH_BYTES` ahead) before numpy and pyarrow are imported, on the core the
    imports leave idle."""
    from pathlib import Path

    from sampleval.errors import InputError
    from sampleval.io._source import Prefetch, expand_run_paths

    try:
        paths: list[Path] | None = expand_run_paths(args.runs)
    except InputError:  # reported by the reader, after any error in the qrels
        paths = None
    with Prefetch(paths or [], PREFETCH_BYTES) as prefetch:
        index = None
        if args.qrels != "-" and Path(args.qrels).is_dir():  # a sample: read through pandas
            from sampleval.io.coerce import as_qrels
            from sampleval.measures.evaluation import judged_index

            judgments = as_qrels(args.qrels)
            index = judged_index(judgments, judgments.topics)
        with in_background(_read_graded, args, paths, index, prefetch) as reading:
            from sampleval.measures.results import graded_results

            index, graded = reading.result()
    from sampleval.core.graded import warn_level_above_grades

    warn_level_above_grades([args.rel_level], index.grades, "standard input"
                            if args.qrels == "-" else args.qrels)
    return graded_results(graded, index, measures, rel_level=args.rel_level,
                          all_topics=args.all_topics, judged_only=args.judged_only)


def _read_graded(args: argparse.Namespace, paths: list[Path] | None,
                 index: JudgedIndex | None, prefetch: Prefetch
                 ) -> tuple[JudgedIndex, list[RunGrades]]:
    """The qrels' index (unless given) and every run (``paths``, else ``args.runs``)
    reduced to its grades, named. The run files parse while the qrels are read; each waits
    for the index to be reduced. A bad qrels file is reported before a bad run file, as if
    read first."""
    from dataclasses import replace

    from sampleval.core.graded import run_grades
    from sampleval.io.runs import read_runs_as

    def indexed(qrels: str) -> JudgedIndex:
        return _qrels_index(qrels) if index is None else index

    with in_background(indexed, args.qrels) as indexing:
        try:
            names, graded = read_runs_as(
                args.runs if paths is None else paths,
                lambda run: run_grades(run, indexing.result(), args.depth),
                name_by=args.name_by, progress=stderr_is_terminal(),
                duplicates=args.duplicates, prefetch=prefetch)
        except Exception:
            indexing.result()
            raise
        return indexing.result(), [replace(g, name=n)
                                   for n, g in zip(names, graded, strict=True)]


def _qrels_index(path: str) -> JudgedIndex:
    """The qrels file's judgments of all its topics (in natural order), indexed."""
    import pyarrow.compute as pc

    from sampleval.core._arrow import numpy_of
    from sampleval.core.graded import JudgedIndex
    from sampleval.core.run import sort_topics
    from sampleval.io._table import read_table
    from sampleval.io.qrels import QRELS_FORMAT

    table = read_table(path, QRELS_FORMAT)
    topics = sort_topics([str(t) for t in pc.unique(table["query_id"]).to_pylist()])
    return JudgedIndex.build(table["query_id"], table["doc_id"], numpy_of(table["relevance"]),
                             topics)


def emit(results: pd.DataFrame, output_format: str, output: Output) -> None:
    """Write exact results in one of :data:`FORMATS`."""
    from sampleval.io.formats import print_table, to_json, to_trec, to_tsv

    if output_format == "table":
        console = output.console()
        print_table(results, console)
        output.write_console(console)
    else:
        writer = {"tsv": to_tsv, "json": to_json, "trec": to_trec}[output_format]
        output.write(writer(results))
