"""The command-line options every simulation experiment shares."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.io import read_qrels, read_runs

DEFAULT_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "trec-covid"


def simulation_parser(doc: str, trials: int) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first paragraph, with --trials (default ``trials``),
    --rate, --depth, --seed and --data."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=trials,
                        help=f"simulated judging campaigns (default {trials})")
    parser.add_argument("--rate", type=float, default=0.1,
                        help="budget per topic, as a share of its pool (default 0.1)")
    parser.add_argument("--depth", type=int, default=100,
                        help="pool depth: each run's top DEPTH documents (default 100)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the first trial; trial i uses SEED + i (default 0)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the trec-covid directory with round5/runs and qrels/ "
                             "(default ../shared/data/trec-covid beside the repository)")
    return parser


def read_round5(data: Path) -> tuple[list[Run], Qrels]:
    """TREC-COVID round 5 from ``data``: the 126 runs and the round-5 qrels (UsageError
    naming the missing file when the data is not there)."""
    qrels_path = data / "qrels" / "qrels.covid-round5.txt"
    if not qrels_path.exists():
        raise UsageError(f"data missing: {qrels_path}")
    return (read_runs(data / "round5" / "runs", progress=show_progress()),
            read_qrels(qrels_path))


def show_progress() -> bool:
    """Whether experiments show progress bars: when standard error is a terminal."""
    return sys.stderr.isatty()
