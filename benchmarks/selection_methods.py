"""Time per simulated trial of every registered selection method on TREC-COVID round 5.

One trial per method: the depth-100 pool of all 126 runs over the 50 topics, a budget of 10%
of each topic's pool, judgments from the round-5 qrels in each method's own batches
(``simulate(selector, qrels_oracle(qrels))``: one document at a time for methods that adapt
after every judgment, a round for ``active``, the whole plan for planned designs), then
``sample()``. The process is pinned to one core. Before timing, every method runs once on a
budget of 2 documents per topic, so that compiled (numba) kernels are loaded and the time is
that of the sampling alone. ``active`` is highlighted against its target of under 1 s per
trial.

    .venv/bin/python benchmarks/selection_methods.py [--data DIR] [--rate R] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.io import read_qrels, read_runs
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "trec-covid"
HIGHLIGHT = "active"
TARGET_S = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    qrels_path = args.data / "qrels" / "qrels.covid-round5.txt"
    if not qrels_path.exists():
        print(f"data missing: {qrels_path}", file=sys.stderr)
        return 1
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    runs = read_runs(args.data / "round5" / "runs")
    pool = Pool.from_runs(runs, depth=100)
    oracle = qrels_oracle(read_qrels(qrels_path))
    budget = Budget(rate=args.rate)
    table = Table(title=f"One trial per method: {len(runs)} runs, {len(pool.topics)} topics, "
                        f"depth 100, rate {args.rate}, one core")
    for column in ("method", "s / trial", "judgments", "ms / judgment"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for cls in METHODS.values():  # warm-up: load compiled kernels
        simulate(cls(pool, Budget(count=2), np.random.default_rng(args.seed)), oracle).sample()
    for name, cls in METHODS.items():
        start = time.perf_counter()
        selector = cls(pool, budget, np.random.default_rng(args.seed))
        judged = int(simulate(selector, oracle).sample().frame["relevance"].notna().sum())
        seconds = time.perf_counter() - start
        style = ""
        if name == HIGHLIGHT:
            style = "bold green" if seconds < TARGET_S else "bold red"
        table.add_row(name, f"{seconds:.2f}", str(judged), f"{1000 * seconds / judged:.3f}",
                      style=style)
    Console(width=100).print(table)
    print(f"{HIGHLIGHT}: target under {TARGET_S:.0f} s per trial")
    return 0


if __name__ == "__main__":
    sys.exit(main())
