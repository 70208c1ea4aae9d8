"""``sampleval compare``: is run A really better than run B, on sampled judgments?"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from sampleval.cli._app import (
    add_command,
    add_depth,
    add_duplicates,
    add_name_by,
    add_predictions,
    add_rel_level,
    add_runs_argument,
    bounded_float,
    check_predictions_used,
    check_stdin_once,
    start_reading_runs,
    stdout_console,
)
from sampleval.cli.estimate import (
    SAMPLE_DEPTH_HELP,
    add_ranks,
    add_sample_format,
    check_order,
    depth_of,
)
from sampleval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from sampleval.core.predictions import Predictions
    from sampleval.core.run import Run
    from sampleval.core.sample import Sample

FORMATS = ("table", "tsv", "json")
DESCRIPTION = """\
Compare runs on a measure estimated from sampled judgments: for every pair of runs (or every
run against --baseline), the estimated difference of the mean over topics, its confidence
interval, and a paired t-test over topics on the per-topic estimated differences, with
Holm's or Benjamini-Hochberg's correction over the pairs.

The per-topic difference is estimated from the one sample both runs share, so judgments
both runs rank alike cancel; the spread of the per-topic differences carries the sampling
variance as well as the topic variation (docs/guide/compare.md)."""


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "compare", run,
                         "compare runs pairwise on sampled judgments: differences, "
                         "intervals, paired tests", DESCRIPTION)
    parser.add_argument("sample", metavar="SAMPLE",
                        help="the judgments and their design, as 'sampleval estimate' reads "
                             "them (a sample directory, NIST sampled qrels, prels, or qrels "
                             "with -1 for 'pooled, not judged')")
    add_runs_argument(parser)
    parser.add_argument("-m", "--measure", metavar="MEASURE",
                        help="one measure, as 'sampleval estimate -m' takes it: a plain "
                             "measure (AP, P@10, nDCG@10: by the estimator the sample's "
                             "design prefers, named in the output) or an estimator's name "
                             "(AP~ht, xinfAP, P@10~ht ...); default: an unbiased AP, so tests "
                             "keep their level: AP~ht on stratified, AP~hh on active and "
                             "importance samples (docs/guide/compare.md)")
    parser.add_argument("--baseline", metavar="RUN",
                        help="compare every run against this one (its name) instead of every "
                             "pair")
    parser.add_argument("--correction", choices=("holm", "bh", "none"), default="holm",
                        help="multiple-comparison correction over the pairs: holm (family-"
                             "wise error), bh (Benjamini-Hochberg false discovery rate), none")
    parser.add_argument("--alpha", type=bounded_float(0.0001, 0.5), default=0.05,
                        metavar="A", help="a pair is significant when its adjusted p < A")
    parser.add_argument("--ci", type=bounded_float(0.5, 0.999), default=0.95, metavar="LEVEL",
                        help="confidence level of the intervals of the differences")
    parser.add_argument("--df", choices=("satterthwaite", "topics"), default="satterthwaite",
                        help="the paired t-test's degrees of freedom: satterthwaite (the "
                             "effective number, from each topic's sampling variance of the "
                             "difference where the estimator gives it, as AP~ht and the "
                             "other ~ht do; T - 1 for other estimators and on a census) or "
                             "topics (T - 1 always, the textbook paired t-test, which "
                             "rejects too often when a few topics carry most of the sampling "
                             "variance: docs/guide/compare.md)")
    parser.add_argument("--plot", metavar="FILE",
                        help="also draw a forest plot of the differences to FILE (png, pdf "
                             "or svg); its intervals are adjusted for multiplicity as the "
                             "p-values are (--correction), so a pair's interval excludes 0 "
                             "exactly when it is significant (with --ci 1 - --alpha)")
    add_predictions(parser, "what the prediction-powered estimators (AP~ppi ...) correct "
                    "with the sample, the per-topic differences and their variances included")
    add_ranks(parser)
    add_depth(parser, SAMPLE_DEPTH_HELP)
    add_rel_level(parser)
    add_sample_format(parser)
    parser.add_argument("-f", "--format", choices=FORMATS, default="table",
                        help="table: one line per pair, significant ones marked; tsv: header "
                             "'run_a run_b measure topics mean_a mean_b diff lo hi t df p "
                             "p_adjusted significant estimator' (estimator: the fully "
                             "resolved name, every option at its value); json: a list of "
                             "such records; with "
                             "--ranks, the leaderboard 'run measure value rank rank_lo "
                             "rank_hi' follows (tsv: after an empty line; json: {pairs, "
                             "ranks})")
    add_name_by(parser)
    add_duplicates(parser)


def run(args: argparse.Namespace) -> None:
    predictions = [] if args.predictions is None else [args.predictions]
    check_stdin_once(args.sample, args.runs, predictions)
    check_order(args.sample, args.runs, "compare")
    if args.measure is not None and "," in args.measure.split("(")[0]:
        raise UsageError("compare takes one measure (-m); run it once per measure")
    with start_reading_runs(args) as reading:
        from sampleval.estimation.compare import compare, forest_plot
        from sampleval.estimation.setup import compare_default, setup_for
        from sampleval.io.samples import load_sample

        judgments = load_sample(args.sample, args.sample_format)
        setup = setup_for(judgments, args.measure or compare_default(judgments), warn=False,
                          with_predictions=args.predictions is not None)  # before the runs
        check_predictions_used(setup.specs, args.predictions is not None)
        predicted = None
        if args.predictions is not None:
            from sampleval.estimation.estimates import largest_grade
            from sampleval.io.predictions import read_predictions

            predicted = read_predictions(args.predictions, largest_grade(judgments))
        loaded = reading.result()
    table = compare(judgments, loaded, args.measure, baseline=args.baseline,
                    correction=args.correction, alpha=args.alpha, ci=args.ci,
                    depth=depth_of(args), level=args.rel_level, df=args.df,
                    predictions=predicted)
    if args.plot:
        forest_plot(table, args.plot, ci=args.ci)
    ranks = (leaderboard(judgments, loaded, str(table["measure"].iloc[0]), args, predicted)
             if args.ranks else None)
    if args.format == "table":
        print_comparison(table, args)
        if ranks is not None:
            stdout_console().print(ranks.to_string(index=False))
    elif args.format == "tsv":
        sys.stdout.write(table.to_csv(sep="\t", index=False, float_format="%.6g",
                                      lineterminator="\n"))
        if ranks is not None:
            sys.stdout.write("\n" + ranks.to_csv(sep="\t", index=False, float_format="%.6g",
                                                 lineterminator="\n"))
    elif ranks is None:
        sys.stdout.write(table.to_json(orient="records", indent=1, double_precision=10) + "\n")
    else:
        sys.stdout.write('{"pairs": ' + table.to_json(orient="records", double_precision=10)
                         + ', "ranks": ' + ranks.to_json(orient="records", double_precision=10)
                         + "}\n")


def leaderboard(judgments: Sample, loaded: list[Run], measure: str,
                args: argparse.Namespace, predictions: Predictions | None = None
                ) -> pd.DataFrame:
    """The runs' estimates of ``measure`` with their simultaneous rank intervals (columns
    ``run measure value rank rank_lo rank_hi``), best first."""
    from sampleval.estimation.estimates import estimate
    from sampleval.estimation.ranks import RANK_COLUMNS, ranked

    rows = ranked(estimate(judgments, loaded, [measure], depth=depth_of(args),
                           level=args.rel_level, ci=args.ci, predictions=predictions),
                  args.ci)
    rows = rows[rows["query_id"] == "all"].sort_values("value", ascending=False,
                                                       kind="stable")
    return rows[["run", "measure", "value", *RANK_COLUMNS]].astype(
        {c: "int64" for c in RANK_COLUMNS})


def print_comparison(table: pd.DataFrame, args: argparse.Namespace) -> None:
    """The comparison as a rich table: one line per pair, significant pairs marked."""
    from rich.table import Table

    measure = str(table["measure"].iloc[0])
    if args.measure and args.measure.strip() != measure and "~" not in args.measure:
        measure = f"{args.measure.strip()} by {measure}"
    shown = Table(title=f"{measure}: paired differences ({args.ci:.0%} intervals, "
                        f"correction {args.correction}, alpha {args.alpha})",
                  title_justify="left")
    for name, justify in (("run A", "left"), ("run B", "left"), ("A", "right"),
                          ("B", "right"), ("A - B", "right"), ("interval", "right"),
                          ("p", "right"), ("p adj.", "right"), ("", "left")):
        shown.add_column(name, justify=justify)  # type: ignore[arg-type]
    numbers = table[["mean_a", "mean_b", "diff", "lo", "hi", "p", "p_adjusted"]].to_numpy(
        dtype=float)
    for a, b, (mean_a, mean_b, diff, lo, hi, p, adjusted), significant in zip(
            table["run_a"], table["run_b"], numbers, table["significant"], strict=True):
        shown.add_row(str(a), str(b), f"{mean_a:.4f}", f"{mean_b:.4f}", f"{diff:+.4f}",
                      f"[{lo:+.4f}, {hi:+.4f}]", _p(p), _p(adjusted),
                      "*" if significant else "")
    console = stdout_console()
    console.print(shown)
    console.print(f"{int(table['significant'].sum())} of {len(table)} pairs significant; "
                  f"{int(table['topics'].min())} topics paired")


def _p(value: float) -> str:
    return f"{value:.2e}" if value < 1e-4 else f"{value:.4f}"
