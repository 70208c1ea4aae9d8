"""The command-line options every simulation experiment shares."""

from __future__ import annotations

import argparse
from pathlib import Path

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
