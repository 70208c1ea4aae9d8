"""Min CPU seconds of whole ``estimate()`` calls, for comparing two trees (run it with each
tree's ``src`` on PYTHONPATH, alternated; CPU time depends less on the machine's load than
wall time).

    PYTHONPATH=src nice -n 10 python scripts/bench_estimate.py ../shared/data/trec-covid
        # six ~ht measures, 20 round-5 runs, 4 stratified samples at 5%, 5 passes
    PYTHONPATH=src nice -n 10 python scripts/bench_estimate.py --golden-importance
        # four ~is measures on tests/golden's TREC-COVID subset's importance sample, 20 x 5
"""

from __future__ import annotations

import argparse
import glob
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HT_MEASURES = "AP~ht,P@10~ht,nDCG@10~ht,R@100~ht,Rprec~ht,NumRel~ht"
IS_MEASURES = "P@10~is,DCG@10~is,nDCG@10~is,R@10~is"


def round5(data: Path) -> tuple[list[Any], Any]:
    """The first 20 TREC-COVID round-5 runs and the round-5 qrels."""
    from sampleval.io import read_qrels, read_runs

    runs = read_runs(sorted(glob.glob(str(data / "round5" / "runs" / "*.gz")))[:20])
    return runs, read_qrels(data / "qrels" / "qrels.covid-round5.txt")


def stratified_samples(runs: list[Any], qrels: Any, seeds: range = range(4)) -> list[Any]:
    """A stratified 5% sample of the runs' depth-100 pool per seed, judged from ``qrels``
    (``benchmarks/few_cost.py`` times the same workload)."""
    from sampleval.core.pool import Pool
    from sampleval.selection import Budget, qrels_oracle, simulate
    from sampleval.selection.stratified import PriorStratifiedSelector

    pool = Pool.from_runs(runs, depth=100)
    return [simulate(PriorStratifiedSelector(pool, Budget(rate=0.05), np.random.default_rng(s)),
                     qrels_oracle(qrels)).sample() for s in seeds]


def stratified(data: Path, measures: list[str]) -> Callable[[], None]:
    """One pass: ``measures`` on 4 stratified 5% samples of 20 round-5 runs, depth 100."""
    from sampleval.estimation.estimates import estimate

    runs, qrels = round5(data)
    samples = stratified_samples(runs, qrels)

    def one() -> None:
        for sample in samples:
            estimate(sample, runs, measures, depth=100)
    return one


def golden_importance(measures: list[str]) -> Callable[[], None]:
    """One pass: ``measures`` 20 times on the golden TREC-COVID subset's importance sample."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "golden"))
    import make  # tests/golden/make.py

    from sampleval.estimation.estimates import estimate

    collection = make.covid()
    assert collection is not None, "the TREC-COVID data is not at ../shared/data"
    sample = make.design_sample(collection, "importance")

    def one() -> None:
        for _ in range(20):
            estimate(sample, collection.runs, measures, depth=collection.depth)
    return one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, help="the trec-covid data directory")
    parser.add_argument("--golden-importance", action="store_true",
                        help="~is on the golden subset's importance sample instead")
    parser.add_argument("--measures", help="comma-separated (default: the mode's)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.golden_importance:
        one = golden_importance((args.measures or IS_MEASURES).split(","))
    elif args.data is None:
        parser.error("give the trec-covid data directory, or --golden-importance")
    else:
        one = stratified(args.data, (args.measures or HT_MEASURES).split(","))
    one()  # compiled kernels and caches, outside the timing
    times = []
    for _ in range(5):
        start = time.process_time()
        one()
        times.append(time.process_time() - start)
    print(f"{min(times):.3f} s min CPU of {[round(t, 3) for t in times]}")


if __name__ == "__main__":
    main()
