"""``sampleval trec_eval``: trec_eval 10's command line, output byte for byte.

The sub-parser takes every argument after ``trec_eval`` as it is (no argparse option
handling: its prefix character is one no argument starts with) and hands them to
:mod:`sampleval.compat.trec_eval`, which reads them as trec_eval's ``getopt_long`` does.
"""

from __future__ import annotations

import argparse

SUMMARY = "trec_eval's command line and output, byte for byte (see 'sampleval trec_eval -h')"


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("trec_eval", help=SUMMARY, description=SUMMARY,
                                 prefix_chars="\x01", add_help=False)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from sampleval.compat.trec_eval import run as trec_eval

    trec_eval(args.args)
