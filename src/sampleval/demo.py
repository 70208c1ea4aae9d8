"""``make demo``: generate a seeded synthetic collection, write it as TREC files, evaluate it
exactly, estimate the same leaderboard from one sample of its pool, then measure by
simulation how well four ways of choosing what to judge recover every run's measures.

Every number is of the runs cut at depth 20, the depth the collection's qrels were pooled
to: the exact leaderboard, the estimates and the simulation's truth describe the same thing.

Run it as ``python -m sampleval.demo [OUTPUT_DIR]`` (default ``demo-output``).
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from contextlib import suppress
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from sampleval.cli import run as cli_run
from sampleval.cli._app import warn
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.estimation.estimates import estimate
from sampleval.io import read_qrels, read_runs, write_qrels, write_run
from sampleval.io.samples import load_sample
from sampleval.measures.evaluation import evaluate, leaderboard

SEED = 20261122
DEPTH = 20  # make_collection's pool depth: the qrels are complete to this depth
METHODS = "depth-k,uniform,stratified,active"
RATES = "0.1,0.2,0.3"
TRIALS = 10


def write_collection(directory: Path) -> dict[str, float]:
    """Write the synthetic runs (``runs/*.gz``) and qrels; return each run's latent quality."""
    collection = make_collection(np.random.default_rng(SEED), pool_depth=DEPTH)
    (directory / "runs").mkdir(parents=True, exist_ok=True)
    for name, frame in collection.runs.items():
        write_run(Run.from_frame(frame, name=name), directory / "runs" / f"{name}.gz")
    write_qrels(Qrels.from_frame(collection.qrels), directory / "qrels.txt")
    return collection.true_quality


def show(args: list[str]) -> None:
    """Print a command line, then run it."""
    print("$ sampleval " + " ".join(args))
    cli_run(args)


def main(argv: list[str]) -> None:
    warnings.showwarning = warn  # one line each, as the sampleval command prints them
    directory = Path(argv[0] if argv else "demo-output")
    runs_dir, qrels_path = str(directory / "runs"), str(directory / "qrels.txt")
    quality = write_collection(directory)
    print(f"Synthetic collection (seed {SEED}) written to {directory}/: {len(quality)} runs, "
          f"qrels.txt judging each topic's depth-{DEPTH} pool\n")
    show(["evaluate", qrels_path, runs_dir, "-M", str(DEPTH), "-m",
          "AP,nDCG@10,P@10,Bpref,Judged@10"])
    runs = read_runs(runs_dir)
    board = leaderboard(evaluate(read_qrels(qrels_path), runs, ["AP"], depth=DEPTH))
    tau = kendalltau(board["AP"], [quality[r] for r in board.index]).statistic
    print(f"\nKendall's tau between the AP leaderboard and the runs' latent quality: {tau:.3f}")

    print(f"\nJudge only 30% of the depth-{DEPTH} pool, chosen by AP-prior stratified sampling, "
          "and estimate the same measures:")
    sample_dir = str(directory / "sample")
    shutil.rmtree(sample_dir, ignore_errors=True)  # the demo's own, from a last run
    show(["sample", "stratified", runs_dir, "--qrels", qrels_path, "--rate", "0.3", "--depth",
          str(DEPTH), "--seed", str(SEED), "-o", sample_dir])
    show(["estimate", sample_dir, runs_dir, "--depth", str(DEPTH), "-m",
          "AP~ht,P@10~ht,nDCG@10~ht"])
    with warnings.catch_warnings():  # the same sample's warnings, said once above
        warnings.simplefilter("ignore")
        estimated = leaderboard(estimate(load_sample(sample_dir), runs, ["AP~ht"],
                                         depth=DEPTH))
    tau = kendalltau(estimated["AP~ht"], board.loc[estimated.index, "AP"]).statistic
    print(f"\nKendall's tau between the estimated and the fully judged AP leaderboards: "
          f"{tau:.3f}")

    print(f"\nOne sample is one draw. Simulate {TRIALS} judging campaigns per method and "
          "budget, and measure how far each method's estimates land from the truth:")
    jobs = str(min(2, len(os.sched_getaffinity(0))))
    # the demo's own, from a last run (one made under other defaults would be refused)
    shutil.rmtree(directory / "simulation", ignore_errors=True)
    show(["simulate", runs_dir, "--qrels", qrels_path, "--methods", METHODS, "--rates", RATES,
          "--trials", str(TRIALS), "--measures", "AP,P@10", "--depth", str(DEPTH), "--seed",
          str(SEED), "--jobs", jobs, "-o", str(directory / "simulation")])
    print(f"\nrms against the budget, one line per method: "
          f"{directory / 'simulation' / 'figures' / 'rms_tau.png'}; everything on one page: "
          f"{directory / 'simulation' / 'report.html'}")
    print(f"\n{how_to_run()}")


def how_to_run() -> str:
    """How to run the ``sampleval`` command this demo ran: the virtual environment's
    ``bin/sampleval`` (relative to the working directory when it lies below it), or the
    environment activated first."""
    bin_dir = Path(sys.executable).parent
    with suppress(ValueError):
        bin_dir = bin_dir.relative_to(Path.cwd())
    return (f"Run sampleval yourself: {bin_dir / 'sampleval'} --help (or first "
            f"'source {bin_dir / 'activate'}', then: sampleval --help)")


if __name__ == "__main__":
    main(sys.argv[1:])
