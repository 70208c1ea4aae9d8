"""``sampleval export``: a sample's judgments as a file other tools read."""

from __future__ import annotations

import argparse
import sys

from sampleval.cli._app import add_command

EXPORT_FORMATS = ("qrels", "sample-qrels", "prels")


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "export", run,
                         "write a sample's judgments as qrels, NIST sampled qrels or prels",
                         "Write a sample's judgments as a file other tools read: qrels 'qid "
                         "iter docno rel' for trec_eval, ir_measures or pytrec_eval (every "
                         "document of the sample's frame; those not judged with rel -1, "
                         "trec_eval's 'pooled, not judged', infAP's input); NIST sampled "
                         "qrels 'topic iter docno stratum rel' for sample_eval (stratified "
                         "samples); or Million Query prels 'qid docno rel method prob' for "
                         "statAP (the judged documents and their inclusion probabilities).")
    parser.add_argument("sample", metavar="SAMPLE",
                        help="a sample directory, or any file 'sampleval estimate' reads as a "
                             "sample")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the file to write (a new one: an existing file is never "
                             "overwritten); gzipped when the name ends in .gz")
    parser.add_argument("--as", dest="as_format", choices=EXPORT_FORMATS, default="qrels",
                        help="the format to write")
    parser.add_argument("--sample-format", choices=("auto", "sampleval", "qrels",
                                                    "sample-qrels", "prels"), default="auto",
                        help="the SAMPLE's format, when it is a file (auto: told by its "
                             "columns)")


def run(args: argparse.Namespace) -> None:
    from sampleval.io.export import export
    from sampleval.io.samples import load_sample

    sample = load_sample(args.sample, args.sample_format)
    lines = export(sample, args.output, args.as_format)
    sys.stdout.write(f"{lines} lines written to {args.output} ({args.as_format})\n")
