"""``sampleval simulate`` (how well selection methods estimate measures, by simulation) and
``sampleval report`` (its figures and HTML report, redrawn from its files)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from sampleval.cli._app import (
    add_command,
    add_duplicates,
    add_name_by,
    add_predictions,
    add_runs_argument,
    check_stdin_once,
    positive_int,
    rate,
    split_names,
    start_reading_runs,
    stderr_is_terminal,
    stdout_console,
)

if TYPE_CHECKING:
    import pandas as pd

LEAVE_OUT = ("none", "group", "contributed", "half")
BACKENDS = ("local", "dask")

DESCRIPTION = """\
Simulate judging campaigns on runs whose judgments are complete: for every method and budget,
judge TRIALS random samples of each topic's depth-K pool, answered from the qrels, estimate
the measures of every run from each sample, and compare with the truth (the exact measure
with the whole pool judged). Trials are seeded from --seed, the method, the budget, the trial
and the split, so results do not depend on --jobs, the backend or the order cells run in.

OUTDIR receives trials.parquet (one row per method, budget, trial, split, measure, run and
topic; topic 'all' is the mean), trial_stats.parquet, trial_topics.parquet (per topic:
documents judged and reached, relevant ones among them), summary.csv (rms, bias, variance,
Kendall's tau, tau_AP, Voorhees' significant-pair accuracy, R correlation, interval
coverage, the share of the pool a design left unreachable and the budget that reaches every
stratum), figures/ and report.html. Finished trials are written as they come: after Ctrl-C
or a crash, the same command resumes; a changed grid reuses the cells it shares.
See docs/guide/simulate.md."""


def comma_list(convert: Callable[[str], float | int]) -> Callable[[str], list[float | int]]:
    """An argparse type: comma-separated values, each converted by ``convert``."""
    def parse(text: str) -> list[float | int]:
        return [convert(part) for part in re.split(r"[,\s]+", text.strip()) if part]
    return parse


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "simulate", run_simulate,
                         "measure by simulation how well selection methods and their "
                         "estimators recover every run's measures", DESCRIPTION)
    add_runs_argument(parser)
    parser.add_argument("--qrels", required=True, metavar="TRUTH",
                        help="complete qrels 'qid iter docno rel': they answer for the "
                             "assessor and define the truth (documents they do not judge "
                             "are not relevant)")
    parser.add_argument("--methods", required=True, action="append", metavar="M1,M2,...",
                        help="selection methods, comma-separated, each NAME or "
                             "NAME:KEY=VALUE;KEY=VALUE (e.g. active:batch=5, "
                             "strata:strategy=2strata); 'sampleval methods' lists them and "
                             "their parameters")
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--rates", type=comma_list(rate), metavar="R1,R2,...",
                        help="budgets as shares in (0, 1] of each topic's pool (of the "
                             "contributing runs), rounded up, e.g. 0.01,0.05,0.1")
    budget.add_argument("--budgets", type=comma_list(positive_int), metavar="B1,B2,...",
                        help="budgets as documents judged per topic (all of a smaller pool)")
    parser.add_argument("--trials", type=positive_int, required=True, metavar="N",
                        help="trials per method, budget and split (Li & Kanoulas: 30)")
    parser.add_argument("-m", "--measures", required=True, action="append", metavar="M1,M2,...",
                        help="what to estimate, comma-separated: plain measures (AP, Rprec, "
                             "P@30, nDCG@10), each estimated with the estimator its method's "
                             "design supports (deterministic methods: the exact measure on "
                             "the judged documents), or estimators used as given (P@10~ht, "
                             "xinfAP)")
    parser.add_argument("-M", "--depth", type=positive_int, default=100, metavar="K",
                        help="pool depth: each run's top K documents per topic; the truth "
                             "and the estimates are of the runs cut at K")
    parser.add_argument("-s", "--seed", type=int, default=0, metavar="S",
                        help="seed every trial's and split's randomness derives from")
    parser.add_argument("--leave-out", choices=LEAVE_OUT, default="none",
                        help="which runs select documents (all runs are evaluated): none = "
                             "all; group = all groups but one, for each group in turn (groups "
                             "from --groups, else the run tag's leading letters); "
                             "contributed = the runs --groups marks yes in 'contributed "
                             "judgments'; half = a random half of the runs, --splits times")
    parser.add_argument("--groups", metavar="CSV",
                        help="CSV naming each run (column 'run' or 'tag') with its group "
                             "(column 'team') and whether it contributed judgments (column "
                             "'contributed judgments'), e.g. TREC-COVID's leaderboard.csv")
    parser.add_argument("--splits", type=positive_int, default=50, metavar="K",
                        help="random halves of the runs for --leave-out half (Voorhees: 50)")
    parser.add_argument("-j", "--jobs", type=positive_int, default=1, metavar="N",
                        help="worker processes (or Dask workers of a local cluster)")
    parser.add_argument("--backend", choices=BACKENDS, default="local",
                        help="local: worker processes on this machine; dask: a Dask cluster "
                             "(needs the 'dask' extra)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="the Dask scheduler to use (tcp://host:port); default: a local "
                             "cluster of --jobs workers")
    parser.add_argument("--no-per-topic", dest="per_topic", action="store_false",
                        help="keep only the mean-over-topics rows in trials.parquet (per-topic "
                             "statistics are still computed; the R-range figure needs the "
                             "per-topic rows); for large grids")
    parser.add_argument("--no-report", dest="report", action="store_false",
                        help="write the tables only; draw the figures and report.html later "
                             "with 'sampleval report OUTDIR'")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR",
                        help="directory for the results (created; a directory of an earlier "
                             "run of the same inputs is resumed)")
    add_predictions(parser, "for the methods that select by them "
                            "(stratified:size=residual, importance:prior=predictions) and the "
                            "prediction-powered measures (P@10~ppi, AP~ppi ...)")
    parser.add_argument("--predictor", metavar="SPEC",
                        help="instead of --predictions, a synthetic machine judge made from "
                             "the qrels: flip10, flip30, flip50, deep, noise, fused, or "
                             "circular:run=RUN,k=K (the truth, except that run RUN's top K "
                             "documents of every topic are called relevant; RUN a name, a "
                             "0-based position or median)")
    parser.add_argument("--audit", action="store_true",
                        help="audit the predictions as a machine judge in every trial (as "
                             "'sampleval audit', Holm, alpha 0.05) for the ~ht estimates: "
                             "summary columns audit_power (the favoured run of a circular "
                             "judge flagged), audit_false_alarm (the other runs flagged) and "
                             "rank_coverage (the rank intervals held every true rank)")
    add_name_by(parser)
    add_duplicates(parser)

    report = add_command(commands, "report", run_report,
                         "redraw a simulation's figures and write its one-page HTML report",
                         "Redraw the figures of a 'sampleval simulate' output directory "
                         "(figures/*.png and *.svg) and write report.html, from its files "
                         "alone.")
    report.add_argument("output", metavar="OUTDIR", help="the simulation's output directory")
    chosen = report.add_mutually_exclusive_group()
    chosen.add_argument("--rate", type=rate, metavar="R",
                        help="the budget the per-budget figures and table show (default: 0.1 "
                             "when simulated, else the middle one)")
    chosen.add_argument("--budget", type=positive_int, metavar="N",
                        help="the same, for a grid of --budgets")


def run_simulate(args: argparse.Namespace) -> None:
    from sampleval.simulation.runner import check_judge

    predictions = [] if args.predictions is None else [args.predictions]
    check_stdin_once(args.qrels, args.runs, predictions)
    check_judge(args.methods, split_names(args.measures), args.predictions is not None,
                args.predictor, args.audit)
    with start_reading_runs(args) as reading:
        from sampleval.io import read_qrels
        from sampleval.simulation.runner import simulate

        qrels = read_qrels(args.qrels)
        loaded = reading.result()
    progress = stderr_is_terminal()
    summary = simulate(loaded, qrels, args.methods, rates=args.rates,
                       budgets=args.budgets, trials=args.trials,
                       measures=split_names(args.measures), output=args.output,
                       depth=args.depth, seed=args.seed, leave_out=args.leave_out,
                       groups=args.groups, splits=args.splits, jobs=args.jobs,
                       backend=args.backend, scheduler=args.scheduler,
                       per_topic=args.per_topic, progress=progress, figures=args.report,
                       predictions=args.predictions, predictor=args.predictor,
                       audit=args.audit)
    print_summary(summary)
    from sampleval.simulation.summary import unreachable_notes

    for note in unreachable_notes(summary):
        sys.stdout.write(f"{note}\n")
    drawn = ", figures/, report.html" if args.report else ""
    sys.stdout.write(f"written to {args.output}/: summary.csv, trials.parquet, "
                     f"trial_stats.parquet, trial_topics.parquet{drawn}\n")


def run_report(args: argparse.Namespace) -> None:
    from sampleval.simulation.report import render

    path = render(args.output, rate=args.rate, budget=args.budget)
    sys.stdout.write(f"{path}\n")


def print_summary(summary: pd.DataFrame) -> None:
    """The summary's main columns as a table on standard output."""
    from rich.table import Table

    columns = [c for c in ("method", "rate", "budget", "measure", "estimator", "rms", "bias",
                           "variance", "tau", "tau_ap", "sig_accuracy", "r_corr",
                           "coverage", "rms_left_out", "audit_power", "audit_false_alarm",
                           "rank_coverage", "judged", "seconds_per_trial", "unreachable")
               if c in summary and summary[c].notna().any()
               and (c != "unreachable" or summary[c].fillna(0).gt(0).any())]
    table = Table(title="Simulation summary")
    for column in columns:
        table.add_column(column.replace("seconds_per_trial", "s/trial"),
                         justify="left" if column in ("method", "measure", "estimator")
                         else "right")
    for row in summary[columns].itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    stdout_console().print(table)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}" if abs(value) >= 10 else f"{value:.4f}"
    return str(value)
