"""``sampleval estimate``: measures estimated from incomplete judgments, with intervals."""

from __future__ import annotations

import argparse
import sys

from sampleval.cli._app import (
    add_command,
    add_depth,
    add_duplicates,
    add_name_by,
    add_per_topic,
    add_predictions,
    add_rel_level,
    add_runs_argument,
    bounded_float,
    check_stdin_once,
    split_names,
    stderr_is_terminal,
    stdout_console,
)

SAMPLE_FORMATS = ("auto", "sampleval", "qrels", "sample-qrels", "prels")
FORMATS = ("table", "tsv", "json")


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "estimate", run,
                         "estimate measures from incomplete judgments, with confidence "
                         "intervals")
    parser.add_argument("sample", metavar="SAMPLE",
                        help="the judgments and their design: a sample directory written by "
                             "sampleval, NIST sampled qrels 'topic iter docno stratum rel', "
                             "Million Query prels 'qid docno rel method prob', or qrels 'qid "
                             "iter docno rel' whose negative rel means 'pooled, not judged' "
                             "(trec_eval's infAP input); a file may be '-' (standard input) "
                             "or a pipe")
    add_runs_argument(parser)
    parser.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                        help="an estimator's name: BASE~FAMILY (AP~ht, P@10~ht, nDCG@10~is) "
                             "or an established name (xinfAP, infNDCG, iP@10, infAP, statAP); "
                             "'sampleval methods' lists every family and its measures; repeat "
                             "or separate with commas (default: by the sample's design)")
    parser.add_argument("--ci", type=bounded_float(0.5, 0.999), default=0.95, metavar="LEVEL",
                        help="confidence level of the intervals (lo, hi)")
    add_per_topic(parser)
    add_depth(parser)
    add_rel_level(parser)
    parser.add_argument("--sample-format", choices=SAMPLE_FORMATS, default="auto",
                        help="the SAMPLE's format; auto: a directory is a sampleval sample, a "
                             "file is told by its columns")
    parser.add_argument("-f", "--format", choices=FORMATS, default="table",
                        help="table: a readable leaderboard with ± half-intervals; tsv: header "
                             "'run topic measure value lo hi' (lo, hi empty where no interval "
                             "applies), the mean as topic 'all'; json: {run: {topic: "
                             "{measure: {value, lo, hi}}}}")
    add_predictions(parser, "what the prediction-powered estimators (P@10~ppi, AP~ppi ...) "
                            "correct with the judged sample")
    add_name_by(parser)
    add_duplicates(parser)


def run(args: argparse.Namespace) -> None:
    from sampleval.estimators import default_estimates, estimate, largest_grade, requested
    from sampleval.evaluation import MEAN_TOPIC
    from sampleval.io import read_runs
    from sampleval.io.predictions import read_predictions
    from sampleval.io.samples import load_sample
    from sampleval.report import print_table, to_json, to_tsv

    check_stdin_once(args.sample, args.runs)
    judgments = load_sample(args.sample, args.sample_format)
    names = split_names(args.measure) if args.measure else list(default_estimates(judgments))
    requested(judgments, names, args.predictions is not None)  # fails before runs are read
    predicted = (None if args.predictions is None
                 else read_predictions(args.predictions, largest_grade(judgments)))
    loaded = read_runs(args.runs, name_by=args.name_by, progress=stderr_is_terminal(),
                       duplicates=args.duplicates)
    results = estimate(judgments, loaded, names, depth=args.depth, level=args.rel_level,
                       ci=args.ci, predictions=predicted)
    if not args.per_topic:
        results = results[results["query_id"] == MEAN_TOPIC]
    if args.format == "table":
        print_table(results, stdout_console(), title=f"Estimates ({args.ci:.0%} intervals)")
    elif args.format == "tsv":
        sys.stdout.write(to_tsv(results, interval=True))
    else:
        sys.stdout.write(to_json(results, interval=True))
