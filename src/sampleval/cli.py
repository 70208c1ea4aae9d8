"""The ``sampleval`` command line: parse, call the library, print. Errors are one line."""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.errors import SampleValError, UsageError
from sampleval.estimators import default_estimates, estimate
from sampleval.evaluation import MEAN_TOPIC, evaluate
from sampleval.io import read_qrels, read_runs
from sampleval.io.samples import load_sample
from sampleval.measures.names import DEFAULT_MEASURES, parse_measures
from sampleval.report import print_table, to_json, to_trec, to_tsv
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate

app = typer.Typer(
    name="sampleval",
    help="Choose what to judge, and evaluate search runs exactly or from partial judgments.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class OutputFormat(StrEnum):
    table = "table"
    tsv = "tsv"
    json = "json"
    trec = "trec"


class NameBy(StrEnum):
    tag = "tag"
    file = "file"


class SampleFormat(StrEnum):
    auto = "auto"
    sampleval = "sampleval"
    qrels = "qrels"
    sample_qrels = "sample-qrels"
    prels = "prels"


MeasureOption = Annotated[list[str] | None, typer.Option(
    "--measure", "-m", metavar="MEASURE",
    help="Measure to compute, ir_measures style (AP, P@10, R@100, Rprec, nDCG, nDCG@20, RR, "
         "Bpref, Judged@10, NumRel, NumRet, NumRelRet; parameters like AP(rel=2)); trec_eval "
         "names (map, P_10, ndcg_cut_20) also work. Repeat or separate with commas. Default: "
         + ", ".join(DEFAULT_MEASURES) + ".")]
PerTopicOption = Annotated[bool, typer.Option(
    "--per-topic", "-q", help="Also print every topic's value, not only the mean (topic 'all').")]
DepthOption = Annotated[int | None, typer.Option(
    "--depth", "-M", min=1, metavar="N",
    help="Use only each run's top N documents per topic (after ranking by score, ties by "
         "docno, as trec_eval ranks).")]
RelLevelOption = Annotated[int, typer.Option(
    "--rel-level", "-l", metavar="L",
    help="Grades at or above L are relevant (trec_eval -l). nDCG always uses the grades.")]
AllTopicsOption = Annotated[bool, typer.Option(
    "--all-topics", "-c",
    help="Average over every topic in the qrels, a topic missing from a run scoring 0 "
         "(trec_eval -c). Default: the topics present in both the run and the qrels.")]
JudgedOnlyOption = Annotated[bool, typer.Option(
    "--judged-only", "-J",
    help="Remove unjudged documents from each ranking before measuring (trec_eval -J).")]
FormatOption = Annotated[OutputFormat, typer.Option(
    "--format", "-f",
    help="table: a readable leaderboard. tsv: header 'run topic measure value', one row per "
         "(run, topic, measure), the mean as topic 'all'. json: {run: {topic: {measure: "
         "value}}}. trec: trec_eval's text output.")]
NameByOption = Annotated[NameBy, typer.Option(
    "--name-by",
    help="Name runs by their tag (6th column) or by file name (without directory and .gz). "
         "Runs sharing a tag are named by file automatically, with a warning.")]


@app.callback()
def _commands() -> None:
    """Choose what to judge, and evaluate search runs exactly or from partial judgments."""


@app.command("evaluate")
def evaluate_command(
    qrels: Annotated[Path, typer.Argument(
        help="Qrels file 'qid iter docno rel' (plain or .gz); negative rel: pooled, unjudged.",
        show_default=False)],
    runs: Annotated[list[str], typer.Argument(
        help="Run files 'qid Q0 docno rank score tag' (plain or .gz), directories of runs, "
             "or glob patterns.", show_default=False)],
    measure: MeasureOption = None,
    per_topic: PerTopicOption = False,
    depth: DepthOption = None,
    rel_level: RelLevelOption = 1,
    all_topics: AllTopicsOption = False,
    judged_only: JudgedOnlyOption = False,
    output_format: FormatOption = OutputFormat.table,
    name_by: NameByOption = NameBy.tag,
) -> None:
    """Evaluate runs exactly against qrels, as trec_eval does (to the last digit)."""
    measures = parse_measures(measure or list(DEFAULT_MEASURES))
    judgments = read_qrels(qrels)
    loaded = read_runs(runs, name_by=name_by.value, progress=_stderr.is_terminal)
    results = evaluate(judgments, loaded, measures, depth=depth, rel_level=rel_level,
                       all_topics=all_topics, judged_only=judged_only)
    if not per_topic:
        results = results[results["query_id"] == MEAN_TOPIC]
    _emit(results, output_format)


class EstimateFormat(StrEnum):
    table = "table"
    tsv = "tsv"
    json = "json"


@app.command("estimate")
def estimate_command(
    sample: Annotated[Path, typer.Argument(
        help="The judgments and their design: a sample directory written by sampleval, NIST "
             "sampled qrels 'topic iter docno stratum rel', Million Query prels 'qid docno rel "
             "method prob', or qrels 'qid iter docno rel' whose negative rel means 'pooled, "
             "not judged' (trec_eval's infAP input).", show_default=False)],
    runs: Annotated[list[str], typer.Argument(
        help="Run files (plain or .gz), directories of runs, or glob patterns.",
        show_default=False)],
    measure: Annotated[list[str] | None, typer.Option(
        "--measure", "-m", metavar="MEASURE",
        help="Estimated measure: infAP; xinfAP, infNDCG, iP@k, inum_rel, inum_rel_ret (NIST "
             "sample_eval); BASE~ht (Horvitz-Thompson: AP, P@k, R@k, Rprec, nDCG[@k], "
             "DCG[@k], NumRel); BASE~is (importance sampling: P@k, DCG@k, nDCG@k, R@k); "
             "statAP. Repeat or separate with commas. Default: by the sample's design "
             "(see the README).")] = None,
    ci: Annotated[float, typer.Option(
        "--ci", min=0.5, max=0.999, metavar="LEVEL",
        help="Confidence level of the intervals (lo, hi).")] = 0.95,
    per_topic: PerTopicOption = False,
    depth: DepthOption = None,
    rel_level: RelLevelOption = 1,
    sample_format: Annotated[SampleFormat, typer.Option(
        "--sample-format",
        help="The SAMPLE's format; auto: a directory is a sampleval sample, a file is told by "
             "its columns.")] = SampleFormat.auto,
    output_format: Annotated[EstimateFormat, typer.Option(
        "--format", "-f",
        help="table: a readable leaderboard with ± half-intervals. tsv: header 'run topic "
             "measure value lo hi' (lo, hi empty where no interval applies), the mean as "
             "topic 'all'. json: {run: {topic: {measure: {value, lo, hi}}}}.")]
    = EstimateFormat.table,
    name_by: NameByOption = NameBy.tag,
) -> None:
    """Estimate measures from incomplete judgments, with confidence intervals."""
    judgments = load_sample(sample, sample_format.value)
    names = measure or list(default_estimates(judgments))
    loaded = read_runs(runs, name_by=name_by.value, progress=_stderr.is_terminal)
    results = estimate(judgments, loaded, [n for text in names for n in _split(text)],
                       depth=depth, level=rel_level, ci=ci)
    if not per_topic:
        results = results[results["query_id"] == MEAN_TOPIC]
    if output_format is EstimateFormat.table:
        print_table(results, _stdout(), title=f"Estimates ({ci:.0%} intervals)")
    elif output_format is EstimateFormat.tsv:
        sys.stdout.write(to_tsv(results, interval=True))
    else:
        sys.stdout.write(to_json(results, interval=True))


@app.command("sample")
def sample_command(
    method: Annotated[str, typer.Argument(
        help="Selection method: " + ", ".join(sorted(METHODS)) + " (see 'sampleval methods').",
        show_default=False)],
    runs: Annotated[list[str], typer.Argument(
        help="Run files (plain or .gz), directories of runs, or glob patterns: their pool is "
             "what the method chooses from.", show_default=False)],
    qrels: Annotated[Path, typer.Option(
        "--qrels", metavar="ORACLE",
        help="Qrels 'qid iter docno rel' that answer for the assessor (simulation); a document "
             "they do not judge counts as not relevant.", show_default=False)],
    output: Annotated[Path, typer.Option(
        "--output", "-o", metavar="SAMPLE",
        help="Directory to write the sample to: sample.json and TSV tables (see "
             "docs/sample-format.md), read by 'sampleval estimate'.", show_default=False)],
    budget: Annotated[int | None, typer.Option(
        "--budget", "-n", min=1, metavar="N",
        help="Judge N documents per topic (all of a smaller pool). Give this or --rate.")]
    = None,
    rate: Annotated[float | None, typer.Option(
        "--rate", "-r", metavar="R",
        help="Judge a fraction R in (0, 1] of each topic's pool, rounded up. Give this or "
             "--budget.")] = None,
    depth: Annotated[int | None, typer.Option(
        "--depth", "-M", min=1, metavar="K",
        help="Pool each run's top K documents per topic (trec_eval order); default: all they "
             "retrieved.")] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", "-s", min=0, metavar="S",
        help="Seed of the random draws; default: a fresh one, recorded in sample.json.")]
    = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", metavar="NAME=VALUE",
        help="A parameter of the method (see 'sampleval methods'), e.g. strategy=2strata or "
             "k=10; repeat for several. Numbers are read as numbers, anything else as text.")]
    = None,
    name_by: NameByOption = NameBy.tag,
) -> None:
    """Choose documents to judge with a selection method, judged by qrels, and save the
    sample with its design."""
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r} (one of {', '.join(sorted(METHODS))})")
    if (budget is None) == (rate is None):
        raise UsageError("give the budget as --budget N or as --rate R (one of them)")
    params = dict(_parse_param(text) for text in param or [])
    oracle = qrels_oracle(read_qrels(qrels))
    loaded = read_runs(runs, name_by=name_by.value, progress=_stderr.is_terminal)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    selector = METHODS[method](Pool.from_runs(loaded, depth=depth), Budget(budget, rate),
                               np.random.default_rng(seed), **params)
    result = simulate(selector, oracle).sample()
    result = replace(result, meta={**result.meta, "seed": seed})
    result.save(output)
    judged = result.judged()
    per_topic = judged.groupby("query_id").size().reindex(result.topics, fill_value=0)
    relevant = int((judged["relevance"] > 0).sum())
    sys.stdout.write(f"{method}: {len(per_topic)} topics, {len(judged)} judged "
                     f"({per_topic.min() if len(per_topic) else 0}-"
                     f"{per_topic.max() if len(per_topic) else 0} per topic), {relevant} "
                     f"relevant found; sample written to {output}\n")


def _parse_param(text: str) -> tuple[str, int | float | str]:
    """``NAME=VALUE`` with VALUE as an int, a float, or else text."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--param expects NAME=VALUE, not {text!r}")
    value = value.strip()
    for kind in (int, float):
        try:
            return name.strip(), kind(value)
        except ValueError:
            continue
    return name.strip(), value


@app.command("methods")
def methods_command() -> None:
    """List the selection methods: their design, parameters and the estimator families that
    apply to their samples."""
    table = Table(title="Selection methods", title_justify="left")
    for column in ("method", "design", "estimators", "parameters"):
        table.add_column(column)
    for name, cls in sorted(METHODS.items()):
        table.add_row(name, cls.design, ", ".join(cls.estimators) or "exact measures only",
                      "\n".join(f"{p}: {h}" for p, h in cls.parameters.items()) or "none")
    _stdout().print(table)


def _split(text: str) -> list[str]:
    return [part for part in re.split(r"[,\s]+", text.strip()) if part]


def _emit(results: pd.DataFrame, output_format: OutputFormat) -> None:
    if output_format is OutputFormat.table:
        print_table(results, _stdout())
    elif output_format is OutputFormat.tsv:
        sys.stdout.write(to_tsv(results))
    elif output_format is OutputFormat.json:
        sys.stdout.write(to_json(results))
    else:
        sys.stdout.write(to_trec(results))


_stderr = Console(stderr=True)


def _stdout() -> Console:
    """The console tables print to: the terminal's width, or wide enough when redirected."""
    console = Console()
    return console if console.is_terminal else Console(width=240)


def _fail(message: str) -> NoReturn:
    _stderr.print(f"sampleval: error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(2)


def _warn(message: Warning | str, *_: object, **__: object) -> None:
    _stderr.print(f"sampleval: warning: {message}", markup=False, highlight=False,
                  soft_wrap=True)


def main() -> None:
    """Entry point: run the app, turning sampleval's errors into one line and exit code 2."""
    warnings.showwarning = _warn
    try:
        app(standalone_mode=True)
    except SampleValError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted")
