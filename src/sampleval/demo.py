"""``make demo``: generate a seeded synthetic collection, write it as TREC files, evaluate it
exactly, then judge a stratified sample of its pool and estimate the same leaderboard.

Run it as ``python -m sampleval.demo [OUTPUT_DIR]`` (default ``demo-output``).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from sampleval.cli import run as cli_run
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.estimators import estimate
from sampleval.evaluation import evaluate, leaderboard
from sampleval.io import read_qrels, read_runs, write_qrels, write_run
from sampleval.io.samples import load_sample
from sampleval.synthetic import make_collection

SEED = 20261122


def write_collection(directory: Path) -> dict[str, float]:
    """Write the synthetic runs (``runs/*.gz``) and qrels; return each run's latent quality."""
    collection = make_collection(np.random.default_rng(SEED))
    (directory / "runs").mkdir(parents=True, exist_ok=True)
    for name, frame in collection.runs.items():
        write_run(Run.from_frame(frame, name=name), directory / "runs" / f"{name}.gz")
    write_qrels(Qrels.from_frame(collection.qrels), directory / "qrels.txt")
    return collection.true_quality


def main(argv: list[str]) -> None:
    directory = Path(argv[0] if argv else "demo-output")
    quality = write_collection(directory)
    print(f"Synthetic collection (seed {SEED}) written to {directory}/: "
          f"{len(quality)} runs, qrels.txt\n")
    print(f"$ sampleval evaluate {directory}/qrels.txt {directory}/runs -m AP,nDCG@10,P@10,"
          "Bpref,Judged@10")
    cli_run(["evaluate", str(directory / "qrels.txt"), str(directory / "runs"),
         "-m", "AP,nDCG@10,P@10,Bpref,Judged@10"])
    runs = read_runs(directory / "runs")
    board = leaderboard(evaluate(read_qrels(directory / "qrels.txt"), runs, ["AP"], depth=20))
    tau = kendalltau(board["AP"], [quality[r] for r in board.index]).statistic
    print(f"\nKendall's tau between the AP leaderboard and the runs' latent quality: {tau:.3f}")

    print("\nNow judge only 30% of the depth-20 pool, chosen by AP-prior stratified sampling, "
          "and estimate:")
    shutil.rmtree(directory / "sample", ignore_errors=True)  # the demo's own, from a last run
    print(f"$ sampleval sample stratified {directory}/runs --qrels {directory}/qrels.txt "
          f"--rate 0.3 --depth 20 --seed {SEED} -o {directory}/sample")
    cli_run(["sample", "stratified", str(directory / "runs"), "--qrels",
         str(directory / "qrels.txt"), "--rate", "0.3", "--depth", "20", "--seed", str(SEED),
         "-o", str(directory / "sample")])
    print(f"$ sampleval estimate {directory}/sample {directory}/runs --depth 20 "
          "-m AP~ht,P@10~ht,nDCG@10~ht")
    cli_run(["estimate", str(directory / "sample"), str(directory / "runs"), "--depth", "20",
         "-m", "AP~ht,P@10~ht,nDCG@10~ht"])
    estimated = leaderboard(estimate(load_sample(directory / "sample"), runs, ["AP~ht"],
                                     depth=20))
    tau = kendalltau(estimated["AP~ht"], board.loc[estimated.index, "AP"]).statistic
    print(f"\nKendall's tau between the estimated and the fully judged AP leaderboards: "
          f"{tau:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
