"""``dynamic``'s samples, written so that two trees can be compared: the same seeds must
give the same samples whatever the code's speed (docs/research/campaign-load.md, fourteenth
round: the classifier's fit driven without ``scipy.optimize.minimize``).

Cases: TREC-COVID round 5 (20 runs, depth 50, topics 1-5, D50 at a 15% budget; and D25 at
10%, every topic), seeds 0-4; the load benchmark's campaign (``campaign_load.py``'s synthetic
collection, 32 topics, 100 judgments each, D25, seed 11); Cranfield with TF-IDF features
(10 queries, depth 100, D50, the knee stop, 30 per topic), seed 0. Each sample's frame
(every pooled document's stratum, inclusion and label) is written to ``--out`` (a pickle);
``--compare OTHER`` then says, per case, whether the two trees' frames are identical.

    PYTHONPATH=TREE/src .venv/bin/python benchmarks/dynamic_samples.py --out FILE
        [--compare OTHER] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from campaign_load import synthetic
from sampleval.campaign.server import single_threaded_blas
from sampleval.core.pool import Pool
from sampleval.datasets import cranfield_runs, read_qrels
from sampleval.io import read_qrels as read_trec_qrels
from sampleval.io import read_runs
from sampleval.selection import Budget, qrels_oracle, simulate
from sampleval.selection.base import Oracle
from sampleval.selection.dynamic import DynamicSelector

Case = tuple[str, Pool, Budget, dict[str, object], Oracle, int]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--compare", help="another tree's --out: report whether each case's "
                                          "sample is identical")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared"
                                              / "data"))
    args = parser.parse_args()
    single_threaded_blas()  # as the server and the experiments' trials run
    frames: dict[str, pd.DataFrame] = {}
    for name, pool, budget, params, oracle, seed in cases(Path(args.data)):
        begun = time.process_time()
        selector = simulate(DynamicSelector(pool, budget, np.random.default_rng(seed),
                                            **params), oracle, batch=5)
        frames[name] = selector.sample().frame
        judged = int(frames[name]["relevance"].notna().sum())
        print(f"{name}: {judged} judged, {time.process_time() - begun:.1f} s CPU")
    Path(args.out).write_bytes(pickle.dumps(frames))
    if args.compare is None:
        return 0
    other: dict[str, pd.DataFrame] = pickle.loads(Path(args.compare).read_bytes())
    same = 0
    for name, frame in frames.items():
        equal = name in other and frame.equals(other[name])
        same += equal
        print(f"{name}: {'identical' if equal else 'DIFFERENT'}")
    print(f"{same} of {len(frames)} samples identical")
    return 0 if same == len(frames) else 1


def cases(data: Path) -> Iterator[Case]:
    covid = data / "trec-covid"
    runs = read_runs(sorted((covid / "round5" / "runs").iterdir())[:20])
    qrels = read_trec_qrels(covid / "qrels" / "qrels.covid-round5.txt")
    oracle = qrels_oracle(qrels)
    five = Pool.from_runs(runs, depth=50, topics=["1", "2", "3", "4", "5"])
    for seed in range(5):
        yield f"covid-r5-D50-seed{seed}", five, Budget(rate=0.15), {"strategy": "D50"}, \
            oracle, seed
    every = Pool.from_runs(runs, depth=50)
    yield "covid-r5-all-D25", every, Budget(rate=0.10), {"strategy": "D25"}, oracle, 0
    load_runs, load_oracle = synthetic(11)
    yield ("load-benchmark", Pool.from_runs(load_runs, depth=100), Budget(100),
           {"strategy": "D25"}, load_oracle, 11)
    cranfield = data / "cranfield"
    pool = Pool.from_runs(cranfield_runs(cranfield, depth=100), depth=100,
                          topics=[str(q) for q in range(1, 11)])
    yield ("cranfield-tfidf-knee", pool, Budget(count=30),
           {"strategy": "D50", "corpus": "cranfield", "corpus_dir": str(cranfield),
            "stop": "knee"}, qrels_oracle(read_qrels(cranfield)), 0)


if __name__ == "__main__":
    sys.exit(main())
