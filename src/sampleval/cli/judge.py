"""``sampleval judge``: import labels made outside sampleval into a sample being judged."""

from __future__ import annotations

import argparse
import sys
import warnings

from sampleval.cli._app import add_command, stderr_is_terminal


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "judge", run,
                         "import labels made in another tool into a sample being judged, and "
                         "list the next documents to judge",
                         "Import the labels of the documents listed in SAMPLE/to-judge.tsv "
                         "from JUDGMENTS, a qrels file 'topic iter docno rel' (a negative "
                         "rel means 'not judged yet': the document stays listed, and a "
                         "warning names those lines; lines for other documents are left "
                         "aside). Methods that adapt to the labels (active, mtf, mab, "
                         "dynamic) then list their next batch in to-judge.tsv; once nothing "
                         "is left to judge, 'sampleval estimate SAMPLE RUN...' estimates "
                         "from it. See docs/guide/judging.md.")
    parser.add_argument("sample", metavar="SAMPLE",
                        help="a sample directory written by 'sampleval sample' without "
                             "--qrels")
    parser.add_argument("judgments", metavar="JUDGMENTS",
                        help="the labels: qrels 'topic iter docno rel' (plain or .gz); it may "
                             "hold every label so far, only the listed documents' are taken")
    parser.add_argument("runs", nargs="*", metavar="RUN",
                        help="the runs the sample was drawn from, only if their files moved "
                             "since 'sampleval sample' (which recorded their paths; they are "
                             "read with the --name-by and --duplicates rules it was given)")
    parser.add_argument("--stop", action="store_true",
                        help="end the sample with the documents judged so far: list nothing "
                             "more (every listed document must have a label)")


def run(args: argparse.Namespace) -> None:
    from pathlib import Path

    from sampleval.errors import UsageError
    from sampleval.io import read_qrels

    if Path(args.sample).is_file() and Path(args.judgments).is_dir():
        raise UsageError(f"{args.sample}: the first argument looks like a judgments file, the "
                         f"second ({args.judgments}) is a directory; give the sample "
                         "directory first (sampleval judge SAMPLE JUDGMENTS)")
    from sampleval.judging.loop import TO_JUDGE, judge

    judgments = read_qrels(args.judgments)
    progress = judge(args.sample, judgments, args.runs or None, stop=args.stop,
                     progress=stderr_is_terminal())
    if progress.ignored and not (progress.imported or progress.skipped):
        warnings.warn(f"{args.judgments}: none of its {progress.ignored} judgments is of a "
                      f"document {Path(args.sample) / TO_JUDGE} lists: labels of another "
                      "sample or pool, or only of documents imported before?",
                      stacklevel=1)
    aside = f" ({progress.ignored} other judgments left aside)" if progress.ignored else ""
    if progress.skipped:
        aside += f" ({progress.skipped} negative labels skipped, their documents still listed)"
    done = (f"the sample is complete: {progress.judged} documents judged; estimate with: "
            f"sampleval estimate {args.sample} RUN..." if progress.complete else
            f"{progress.pending} documents to judge next, listed in "
            f"{progress.directory / TO_JUDGE}; then: sampleval judge {args.sample} JUDGMENTS")
    sys.stdout.write(f"{progress.imported} labels imported{aside}; {done}\n")
