"""``sampleval sample_eval``: NIST's ``sample_eval.pl``, byte for byte."""

from __future__ import annotations

import argparse
import sys

from sampleval.cli._app import add_command, check_stdin_once


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "sample_eval", run,
        "NIST's sample_eval.pl: xinfAP, infNDCG, iP@k from sampled qrels, its output byte "
        "for byte",
        "Print what NIST's sample_eval.pl prints for sampled qrels and one run: infAP (the "
        "paper's xinfAP), infNDCG, 11-point interpolated precision, iP10, iP50, iP1000, "
        "inum_rel_ret, inum_rel and num_ret, in the script's order and formats, with the "
        "script's reading of the run (a repeated document keeps its last line; leading zeros "
        "of run topic ids dropped; 1000 ranks). docs/guide/sample_eval.md lists what it reproduces.")
    parser.add_argument("-q", "--per-topic", action="store_true",
                        help="print every topic's values before the means, as the script's -q")
    parser.add_argument("qrels", metavar="QRELS",
                        help="sampled qrels 'topic iter docno stratum rel' (rel < 0: in the "
                             "pool, not sampled); plain or .gz, '-' for standard input")
    parser.add_argument("run_file", metavar="RUN",
                        help="one TREC run file 'qid Q0 docno rank score tag' (plain or .gz, "
                             "'-' for standard input, or a pipe)")


def run(args: argparse.Namespace) -> None:
    from sampleval.compat.sample_eval import sample_eval

    check_stdin_once(args.qrels, args.run_file)
    sys.stdout.write(sample_eval(args.qrels, args.run_file, per_topic=args.per_topic))
