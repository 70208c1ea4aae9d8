"""Before/after of issue 28's double-jackknife change (docs/research/engine.md, last section):
per topic, `AP~ht(bias=jackknife)`'s variance by the array path without the two-document rule
(`replicates.double_jackknife`, before) and by the engine's (`corrections.ap_double_jackknife`,
after), with the CPU of each, on the golden stratified samples and 4 prior-stratified 5%
samples of TREC-COVID round 5 (20 runs, depth 100); then on those, the mean's `hi` of
`estimate()` with either in place.

    PYTHONPATH=src python scripts/double_jackknife_change.py ../shared/data
"""

from __future__ import annotations

import glob
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path[:0] = ["tests", "tests/golden"]
import make  # noqa: E402

import sampleval.estimation.families.ht as ht  # noqa: E402
from sampleval.core.inclusion import judged_design  # noqa: E402
from sampleval.core.pool import Pool  # noqa: E402
from sampleval.core.run import Run  # noqa: E402
from sampleval.core.sample import Sample  # noqa: E402
from sampleval.estimation.engine.corrections import ap_double_jackknife  # noqa: E402
from sampleval.estimation.engine.replicates import double_jackknife  # noqa: E402
from sampleval.estimation.engine.units import TopicData  # noqa: E402
from sampleval.estimation.engine.views import relevance, topic_views  # noqa: E402
from sampleval.estimation.estimates import MEAN_TOPIC, estimate  # noqa: E402
from sampleval.estimation.spec import EstimateSpec, parse_estimate  # noqa: E402
from sampleval.io import read_qrels, read_runs  # noqa: E402
from sampleval.selection import Budget, qrels_oracle, simulate  # noqa: E402
from sampleval.selection.stratified import PriorStratifiedSelector  # noqa: E402

MEASURE = "AP~ht(bias=jackknife)"


def before(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
           pairs: np.ndarray | None = None) -> np.ndarray:
    """The array path's double jackknife of one topic (no two-document rule)."""
    view, sample = data.view, data.sample
    judged = np.flatnonzero(view.sample.judged)
    y = relevance(view.sample.labels[judged], level)
    index = judged[y != 0]
    design = judged_design(sample, view.sample, index)
    sizes, n_sampled = view.sample.strata()
    strata = (view.sample.stratum[index], sizes, n_sampled)
    return double_jackknife(y[y != 0], view.rank_of(index), spec.cutoff, False, strata,
                            design.pi, design.pi_joint, pairs).variance


def per_topic(label: str, sample: Sample, runs: list[Run], depth: int | None) -> None:
    spec = parse_estimate(MEASURE)
    views = topic_views(Pool.from_runs(runs, depth=depth, topics=sample.topics), sample)
    worst, cpu = 0.0, [0.0, 0.0]
    for data in ht.ht_topics(views, sample):
        got = []
        for i, function in enumerate((before, ap_double_jackknife)):
            start = time.process_time()
            got.append(function(spec, 1.0, data, np.zeros((2, data.ranks.shape[0]))))
            cpu[i] += time.process_time() - start
        old, new = got
        if (old > 0).any():
            worst = max(worst, float(np.max(np.abs(new - old)[old > 0] / old[old > 0])))
    print(f"{label}: {len(views)} topics, per-topic variance max rel change {worst:.4f}; "
          f"CPU before {cpu[0]:.3f} s, after {cpu[1]:.3f} s")


def means(label: str, sample: Sample, runs: list[Run]) -> None:
    rows = []
    for function in (before, ap_double_jackknife):
        ht.ap_double_jackknife = function  # type: ignore[assignment]
        table = estimate(sample, runs, [MEASURE], depth=100)
        rows.append(table[table["query_id"] == MEAN_TOPIC])
    ht.ap_double_jackknife = ap_double_jackknife
    old, new = rows
    change = np.abs(new["hi"] - old["hi"]).to_numpy() / np.abs(old["hi"]).to_numpy()
    ratio = ((new["hi"] - new["value"]) / (old["hi"] - old["value"])).to_numpy()
    print(f"{label}: mean's hi max rel change {change.max():.4f}; upper half-width "
          f"after/before {ratio.min():.3f}-{ratio.max():.3f}")


def main() -> None:
    warnings.simplefilter("ignore")
    data = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
    for name in ("synthetic", "covid"):
        collection = make.synthetic() if name == "synthetic" else make.covid(data)
        assert collection is not None
        per_topic(f"golden {name} stratified", make.design_sample(collection, "stratified"),
                  collection.runs, collection.depth)
    covid = data / "trec-covid"
    runs = read_runs(sorted(glob.glob(str(covid / "round5/runs/*.gz")))[:20])
    qrels = read_qrels(covid / "qrels/qrels.covid-round5.txt")
    pool = Pool.from_runs(runs, depth=100)
    for seed in range(4):
        sample = simulate(PriorStratifiedSelector(pool, Budget(rate=0.05),
                                                  np.random.default_rng(seed)),
                          qrels_oracle(qrels)).sample()
        label = f"round 5, 20 runs, prior-stratified 5%, seed {seed}"
        per_topic(label, sample, runs, 100)
        means(label, sample, runs)


if __name__ == "__main__":
    main()
