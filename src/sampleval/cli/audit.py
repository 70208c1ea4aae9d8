"""``sampleval audit``: which runs does a machine judge mis-score, from a human sample?"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from sampleval.cli._app import (
    add_command,
    add_depth,
    add_duplicates,
    add_name_by,
    add_rel_level,
    add_runs_argument,
    bounded_float,
    check_stdin_once,
    split_names,
    start_reading_runs,
    stdout_console,
)
from sampleval.cli.estimate import SAMPLE_DEPTH_HELP, add_sample_format, depth_of

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "tsv", "json")
DESCRIPTION = """\
Audit a machine judge (an LLM such as UMBRELA) with a human sample: for every run and
measure, the measure computed with the machine's labels as qrels ('machine'), the
design-based estimate from the human SAMPLE ('estimate'), their difference ('bias', with its
interval), and the run's bias beyond the bias every run shares ('relative': a judge off by
the same amount for every run does not change the ranking; one that favours a run does),
flagged when significantly non-zero (t test, T - 1 degrees of freedom for T topics) after
Holm's correction over the runs. Also, over the
whole pool: Cohen's kappa (binary and graded) and the confusion matrix of machine against
human labels, with intervals from the sample's design, and Kendall's tau between the
machine's and the estimated leaderboards; simultaneous 95% rank intervals of the estimated
leaderboard. See docs/guide/audit.md."""


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "audit", run,
                         "audit a machine judge's labels against a human sample: per-run "
                         "bias with intervals, flagged runs, kappa", DESCRIPTION)
    parser.add_argument("sample", metavar="SAMPLE",
                        help="the human judgments and their design, as 'sampleval estimate' "
                             "reads them")
    add_runs_argument(parser)
    parser.add_argument("--predictions", required=True, metavar="FILE",
                        help="the machine's labels of the pooled documents, 'qid iter docno "
                             "value' (qrels format, plain or .gz: grades as UMBRELA or "
                             "autoqrels write them, or probabilities of relevance, read as "
                             "relevant at >= 0.5); documents without a line count as not "
                             "relevant")
    parser.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                        help="an estimator giving per-run and difference variances (the ~ht "
                             "family: AP~ht, P@10~ht, nDCG@10~ht ...); repeat or separate "
                             "with commas (default: AP~ht)")
    parser.add_argument("--correction", choices=("holm", "bh", "none"), default="holm",
                        help="multiple-comparison correction of the relative bias's tests "
                             "over the runs: holm (family-wise error), bh (Benjamini-"
                             "Hochberg false discovery rate), none")
    parser.add_argument("--alpha", type=bounded_float(0.0001, 0.5), default=0.05, metavar="A",
                        help="a run is flagged when its adjusted p < A")
    parser.add_argument("--ci", type=bounded_float(0.5, 0.999), default=0.95, metavar="LEVEL",
                        help="confidence level of the intervals (and of the simultaneous rank "
                             "intervals)")
    parser.add_argument("--figure", metavar="FILE",
                        help="also draw each run's bias with its interval, flagged runs in "
                             "red, to FILE (png, pdf or svg)")
    add_depth(parser, SAMPLE_DEPTH_HELP)
    add_rel_level(parser)
    add_sample_format(parser)
    parser.add_argument("-f", "--format", choices=FORMATS, default="table",
                        help="table: per measure one line per run, then the agreement and "
                             "tau; tsv: the per-run table (header 'run measure topics machine "
                             "estimate bias lo hi relative relative_lo relative_hi p "
                             "p_adjusted flagged machine_rank rank rank_lo rank_hi'), an empty "
                             "line, the agreement table ('statistic machine human value lo "
                             "hi') and, after another empty line, 'measure tau'; json: "
                             "{runs: [...], agreement: [...], tau: {measure: tau}}")
    add_name_by(parser)
    add_duplicates(parser)


def run(args: argparse.Namespace) -> None:
    check_stdin_once(args.sample, args.runs, [args.predictions])
    with start_reading_runs(args) as reading:
        from sampleval.estimation.audit import (
            agreement,
            audit,
            bias_figure,
            leaderboard_tau,
            machine_predictions,
        )
        from sampleval.io.samples import load_sample

        judgments = load_sample(args.sample, args.sample_format)
        predicted = machine_predictions(judgments, args.predictions)
        loaded = reading.result()
    measures = split_names(args.measure) if args.measure else None
    table = audit(judgments, loaded, predicted, measures, depth=depth_of(args), level=args.rel_level,
                  ci=args.ci, correction=args.correction, alpha=args.alpha)
    agreed = agreement(judgments, predicted, level=args.rel_level, ci=args.ci)
    tau = leaderboard_tau(table)
    if args.figure:
        bias_figure(table, args.figure)
    if args.format == "table":
        print_audit(table, agreed, tau, args)
    elif args.format == "tsv":
        sys.stdout.write(_tsv(table) + "\n" + _tsv(agreed) + "\n")
        sys.stdout.write("measure\ttau\n" + "".join(f"{m}\t{t:.6g}\n" for m, t in tau.items()))
    else:
        sys.stdout.write(json.dumps({
            "runs": json.loads(table.to_json(orient="records", double_precision=10)),
            "agreement": json.loads(agreed.to_json(orient="records", double_precision=10)),
            "tau": tau}, indent=1) + "\n")


def _tsv(frame: pd.DataFrame) -> str:
    return frame.to_csv(sep="\t", index=False, float_format="%.6g", lineterminator="\n")


def print_audit(table: pd.DataFrame, agreed: pd.DataFrame, tau: dict[str, float],
                args: argparse.Namespace) -> None:
    """The audit as rich tables: per measure, runs by estimate (flagged ones marked), then
    kappa, the confusion matrix and tau."""
    from rich.table import Table

    console = stdout_console()
    for measure, rows in table.groupby("measure", sort=False):
        shown = Table(title=f"{measure}: machine judge against the human sample "
                            f"({args.ci:.0%} intervals, correction {args.correction}, "
                            f"alpha {args.alpha})", title_justify="left")
        for name in ("rank", "run", "estimate", "machine", "bias", "interval", "relative",
                     "interval ", "p adj.", ""):
            shown.add_column(name, justify="left" if name in ("run", "") else "right")
        for row in rows.sort_values("estimate", ascending=False, kind="stable").itertuples():
            shown.add_row(f"{row.rank} [{row.rank_lo}-{row.rank_hi}]", str(row.run),
                          f"{row.estimate:.4f}", f"{row.machine:.4f}", f"{row.bias:+.4f}",
                          f"[{row.lo:+.4f}, {row.hi:+.4f}]", f"{row.relative:+.4f}",
                          f"[{row.relative_lo:+.4f}, {row.relative_hi:+.4f}]",
                          f"{row.p_adjusted:.4f}", "flagged" if row.flagged else "")
        console.print(shown)
        console.print(f"{int(rows['flagged'].sum())} of {len(rows)} runs flagged; Kendall's "
                      f"tau between the machine and estimated leaderboards "
                      f"{tau[str(measure)]:.3f}")
    kappas = agreed[agreed["statistic"] != "confusion"]
    for row in kappas.itertuples():
        console.print(f"{row.statistic}: {row.value:.3f} [{row.lo:.3f}, {row.hi:.3f}]")
    matrix = Table(title="confusion matrix: estimated share of the pool (rows machine, "
                         "columns human)", title_justify="left")
    cells = agreed[agreed["statistic"] == "confusion"]
    humans = list(dict.fromkeys(cells["human"]))
    matrix.add_column("machine \\ human")
    for grade in humans:
        matrix.add_column(grade, justify="right")
    for machine, rows in cells.groupby("machine", sort=False):
        matrix.add_row(str(machine), *(f"{r.value:.3f} [{r.lo:.3f}, {r.hi:.3f}]"
                                       for r in rows.itertuples()))
    console.print(matrix)
