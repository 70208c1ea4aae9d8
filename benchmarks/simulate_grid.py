"""Seconds per simulated trial of each method, and the speed-up from one worker to two.

Runs one ``sampleval simulate`` grid on TREC-COVID round 5 (the 126 runs pooled to depth 100,
the round-5 qrels as truth, AP, Rprec and P@30): every method at one budget, a few trials
each, first with one worker, then with two, each into a fresh output directory. It prints,
per method, the seconds a trial takes (selection and estimation, from trial_stats.parquet),
the wall time of each pass and their ratio (the ideal on two cores: 2x), the CPU time of the
one-worker pass (less sensitive than wall time to other jobs on the machine), how busy the two
workers were (their trials' seconds over twice the pass's wall time: what the schedule
decides, whatever else runs on the machine), and checks that the two passes wrote identical
trials. Before timing, one trial per method on a budget of 2
documents per topic loads the compiled (numba) kernels.

There is no peer tool to compare with: the reference code of these experiments (e.g.
dli1/activesampling) is research scripts, not a tool that runs the same grid.

    .venv/bin/python benchmarks/simulate_grid.py [--data DIR] [--rate R] [--trials N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from sampleval.io import read_qrels, read_runs
from sampleval.simulation.runner import simulate

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "trec-covid"
METHODS = ["depth-k", "uniform", "stratified", "active", "mtf", "mab", "importance"]
MEASURES = ["AP", "Rprec", "P@30"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--trials", type=int, default=4)
    args = parser.parse_args()
    qrels_path = args.data / "qrels" / "qrels.covid-round5.txt"
    if not qrels_path.exists():
        print(f"data missing: {qrels_path}", file=sys.stderr)
        return 1
    runs, qrels = read_runs(args.data / "round5" / "runs"), read_qrels(qrels_path)
    print(f"load average at the start: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)

        def grid(name: str, jobs: int, budgets: list[int] | None = None,
                 trials: int = args.trials) -> tuple[float, float]:
            """Wall and CPU seconds (this process's) of one grid."""
            start, cpu = time.perf_counter(), time.process_time()
            simulate(runs, qrels, METHODS, rates=None if budgets else [args.rate],
                     budgets=budgets, trials=trials, measures=MEASURES, output=root / name,
                     depth=100, jobs=jobs, figures=False)
            return time.perf_counter() - start, time.process_time() - cpu

        import warnings

        warnings.simplefilter("ignore", UserWarning)  # importance: no estimator of AP
        grid("warm-up", 1, budgets=[2], trials=1)
        one, one_cpu = grid("one", 1)
        two, _ = grid("two", 2)
        stats = pd.read_parquet(root / "one" / "trial_stats.parquet")
        busy = pd.read_parquet(root / "two" / "trial_stats.parquet").drop_duplicates(
            ["method", "trial"])["seconds"].sum() / (2 * two)
        same = pd.read_parquet(root / "one" / "trials.parquet").equals(
            pd.read_parquet(root / "two" / "trials.parquet"))
    per_trial = stats.drop_duplicates(["method", "trial"]).groupby(
        "method", observed=True, sort=False)["seconds"].mean()
    table = Table(title=f"TREC-COVID round 5: 126 runs, 50 topics, depth 100, rate "
                        f"{args.rate}, {args.trials} trials per method, measures "
                        f"{', '.join(MEASURES)}")
    table.add_column("method")
    table.add_column("s / trial (one worker)", justify="right")
    for method, seconds in per_trial.items():
        table.add_row(str(method), f"{seconds:.2f}")
    Console(width=110).print(table)
    trials = len(METHODS) * args.trials
    print(f"one worker: {one:.1f} s wall ({one / trials:.2f} s per trial), {one_cpu:.1f} s "
          f"of CPU ({one_cpu / trials:.2f} s per trial); two workers: {two:.1f} s wall, "
          f"busy {busy:.0%} of it; speed-up {one / two:.2f}x (ideal 2x); trials identical: "
          f"{same}")
    print(f"load average at the end: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
