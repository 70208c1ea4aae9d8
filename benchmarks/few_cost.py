"""The cost of AP's ``few`` forms in ``estimate()``: CPU seconds of the default
(``few=completed``) against ``few=pooled``, alternated in one process so that both see the
same machine (docs/research/calibration.md, section 14).

    PYTHONPATH=src python benchmarks/few_cost.py [--workload round5|round1] [--repeats N]

``round5``: six ``~ht`` measures (AP, P@10, nDCG@10, R@100, Rprec, NumRel) on the first 20
TREC-COVID round-5 runs, 4 stratified samples at 5% (seeds 0-3), the workload of
``estimate()``'s benchmark; ``round1``: ``AP~ht`` alone on TREC-COVID round 1 (143 runs, 30
topics), one stratified sample at 5% (seed 0). Printed: the least CPU seconds of each form
over the repetitions (the first, warming, dropped) and their ratio. Data from
``../shared/data/trec-covid`` beside the repository.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-covid"
OTHERS = ["P@10~ht", "nDCG@10~ht", "R@100~ht", "Rprec~ht", "NumRel~ht"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("round5", "round1"), default="round5",
                        help="round5: six ~ht measures on 20 round-5 runs, 4 samples; round1: "
                             "AP~ht on 143 round-1 runs, one sample (default round5)")
    parser.add_argument("--repeats", type=int, default=16,
                        help="repetitions of each form, alternated (default 16)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from sampleval.estimation.estimates import estimate
    from studies._cli import read_collection

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_estimate import round5, stratified_samples  # estimate()'s benchmark's workload

    if args.workload == "round5":
        runs, qrels = round5(DATA)
        seeds, others = range(4), OTHERS
    else:
        runs, qrels = read_collection("round1", DATA, 100)
        seeds, others = range(1), []
    samples = stratified_samples(runs, qrels, seeds)
    forms = {"completed (default)": ["AP~ht", *others],
             "pooled": ["AP~ht(few=pooled)", *others]}
    spent: dict[str, list[float]] = {name: [] for name in forms}
    for _ in range(args.repeats):
        for name, measures in forms.items():
            start = time.process_time()
            for sample in samples:
                estimate(sample, runs, measures, depth=100)
            spent[name].append(time.process_time() - start)
    least = {name: min(times[1:] or times) for name, times in spent.items()}
    for name, seconds in least.items():
        print(f"{name}: {seconds:.3f} CPU-s")
    print(f"ratio: {least['completed (default)'] / least['pooled']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
