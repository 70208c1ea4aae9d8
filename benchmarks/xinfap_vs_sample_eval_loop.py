"""xinfAP and infNDCG for all 126 TREC-COVID round-5 runs from one stratified sample:
sampleval (vectorised over runs) against the same computation done the way NIST's
sample_eval.pl does it (a faithful pure-Python loop per run, per topic, per rank).

Usage: python benchmarks/xinfap_vs_sample_eval_loop.py [--data DIR] [--sample-eval PL]

The sample: the depth-100 pool of all runs, strata by best rank (1-10, 11-30, 31-100) sampled
at rates 1, 0.3, 0.1 (seeded), judged from the round-5 qrels. Both sides read the same files
and must agree to 1e-9. With ``--sample-eval`` pointing at NIST's Perl script, it is timed too
(the script is not part of this repository).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.estimation.estimates import estimate
from sampleval.io import read_qrels, read_runs, write_run
from sampleval.io.samples import load_sample, write_sample_qrels

ROOT = Path(__file__).resolve().parents[1]
RATES = {1: 1.0, 2: 0.3, 3: 0.1}
MEASURES = ["xinfAP", "infNDCG"]
WARM_UP = 4  # runs: enough to meet runs that need sorting and float64 re-sorting


def make_sample(data: Path, out: Path, seed: int = 7) -> None:
    """Write the stratified sampled qrels described in the module docstring."""
    qrels = read_qrels(data / "qrels" / "qrels.covid-round5.txt")
    runs = read_runs(data / "round5" / "runs")
    pool = Pool.from_runs(runs, depth=100, qrels=qrels)
    rng = np.random.default_rng(seed)
    parts = []
    for tp in pool:
        best = tp.best_rank()
        stratum = np.where(best <= 10, 1, np.where(best <= 30, 2, 3))
        labels = np.nan_to_num(tp.labels, nan=0.0)
        relevance = np.full(tp.size, -1.0)
        for h, rate in RATES.items():
            members = np.flatnonzero(stratum == h)
            chosen = rng.choice(members, size=round(rate * len(members)), replace=False)
            relevance[chosen] = labels[chosen]
        parts.append(pd.DataFrame({"query_id": tp.topic, "iteration": "0",
                                   "doc_id": pool.docnos[tp.doc_ids],
                                   "stratum": stratum.astype(str), "relevance": relevance}))
    write_sample_qrels(pd.concat(parts), out)


# -- the reference: sample_eval's algorithm, one run at a time, in plain Python -------------

def reference_read_sample(path: Path) -> dict[str, dict[str, tuple[str, float]]]:
    sample: dict[str, dict[str, tuple[str, float]]] = defaultdict(dict)
    with path.open() as fh:
        for line in fh:
            topic, _, doc, stratum, rel = line.split()
            sample[topic][doc] = (stratum, float(rel))
    return sample


def reference_topic(judged: dict[str, tuple[str, float]],
                    ranking: list[str]) -> tuple[float, float]:
    """xinfAP and infNDCG of one ranking, following sample_eval.pl step by step."""
    size: dict[str, int] = defaultdict(int)
    sampled: dict[str, int] = defaultdict(int)
    rel: dict[str, int] = defaultdict(int)
    per_grade: dict[float, float] = defaultdict(float)
    for stratum, grade in judged.values():
        size[stratum] += 1
        sampled[stratum] += grade >= 0
        rel[stratum] += grade > 0
    for stratum, grade in judged.values():
        if grade > 0:
            per_grade[grade] += size[stratum] / sampled[stratum]
    num_rel = sum(rel[h] * size[h] / sampled[h] for h in size if sampled[h])
    ideal, start = 0.0, 0
    for grade in sorted(per_grade, reverse=True):
        count = int(per_grade[grade] + 0.5)
        for r in range(start + 1, start + count + 1):
            ideal += grade / math.log2(r + 1)
            if r >= 1000:
                break
        start += count
    docs: dict[str, int] = defaultdict(int)
    smp: dict[str, int] = defaultdict(int)
    rels: dict[str, int] = defaultdict(int)
    sap: dict[str, float] = defaultdict(float)
    gain: dict[str, float] = defaultdict(float)
    for rank, doc in enumerate(ranking[:1000], start=1):
        stratum, grade = judged.get(doc, ("", -1.0))
        if grade > 0:
            above = sum(docs[h] * (rels[h] + 1e-5) / (smp[h] + 3e-5) for h in size)
            sap[stratum] += (1 + above) / rank
            rels[stratum] += 1
            gain[stratum] += grade / math.log2(rank + 1)
        if doc in judged:
            docs[stratum] += 1
            smp[stratum] += grade >= 0
    xinfap = sum(sap[h] * size[h] / sampled[h] for h in size if sampled[h]) / num_rel \
        if num_rel else 0.0
    dcg = sum(docs[h] * gain[h] / smp[h] for h in size if smp[h])
    return xinfap, (dcg / ideal if ideal else 0.0)


def reference_parse(sample_path: Path, run_paths: list[Path]) -> tuple[dict, list]:
    """The sample and every run read into dicts, as the script reads them."""
    runs = []
    for path in run_paths:
        scores: dict[str, dict[str, float]] = defaultdict(dict)
        tag = ""
        with path.open() as fh:
            for line in fh:
                topic, _, doc, _, score, tag = line.split()
                scores[topic][doc] = float(score)
        runs.append((tag, scores))
    return reference_read_sample(sample_path), runs


def reference(sample: dict, runs: list) -> dict[tuple[str, str], tuple[float, float]]:
    """Rank each run's topics (score desc, docno desc) and run the per-rank loop."""
    out = {}
    for tag, scores in runs:
        for topic, docs in scores.items():
            if topic in sample:
                ranking = sorted(docs, key=lambda d, s=docs: (-s[d], _desc(d)))
                out[(tag, topic)] = reference_topic(sample[topic], ranking)
    return out


def _desc(text: str) -> tuple[int, ...]:
    """A key that sorts strings in descending byte order."""
    return (*(-b for b in text.encode()), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=ROOT.parent / "shared" / "data" / "trec-covid")
    parser.add_argument("--sample-eval", type=Path, help="NIST's sample_eval.pl, if at hand")
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f"data not found: {args.data}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_sample(args.data, work / "sample.txt")
        (work / "runs").mkdir()
        for run in read_runs(args.data / "round5" / "runs"):
            write_run(run, work / "runs" / f"{run.name}.txt")  # plain text for both sides
        run_paths = sorted((work / "runs").iterdir())

        # warm-up, not timed: the first calls load (or compile) sampleval's numba kernels;
        # on a fresh copy of the sample and a few runs, so no cache of the timed inputs fills
        estimate(load_sample(work / "sample.txt"), read_runs(run_paths[:WARM_UP]), MEASURES)
        print(f"warm-up: one untimed estimate ({WARM_UP} runs) loaded the compiled kernels")
        start = time.perf_counter()
        sample, runs = load_sample(work / "sample.txt"), read_runs(run_paths)
        t_read = time.perf_counter() - start
        start = time.perf_counter()
        ours = estimate(sample, runs, MEASURES)
        t_ours = time.perf_counter() - start
        start = time.perf_counter()
        parsed = reference_parse(work / "sample.txt", run_paths)
        t_parse = time.perf_counter() - start
        start = time.perf_counter()
        theirs = reference(*parsed)
        t_loop = time.perf_counter() - start

        table = ours[ours["query_id"] != "all"].set_index(["run", "query_id", "measure"])
        worst = max(max(abs(table.loc[(run, topic, "xinfAP"), "value"] - x),
                        abs(table.loc[(run, topic, "infNDCG"), "value"] - n))
                    for (run, topic), (x, n) in theirs.items())
        print(f"runs: {len(run_paths)}, topic-run pairs compared: {len(theirs)}, "
              f"max abs difference: {worst:.2e}")
        if worst > 1e-9:
            sys.exit("the two computations disagree")
        print(f"{'':34}{'read':>8}{'compute':>10}{'total':>9}")
        print(f"{'sampleval':34}{t_read:8.2f}{t_ours:10.2f}{t_read + t_ours:9.2f}")
        print(f"{'pure-Python loop (sample_eval)':34}{t_parse:8.2f}{t_loop:10.2f}"
              f"{t_parse + t_loop:9.2f}")
        print(f"speed-up, computing (ranking + xinfAP + infNDCG): {t_loop / t_ours:.1f}x")
        print(f"speed-up, end to end: {(t_parse + t_loop) / (t_read + t_ours):.1f}x")
        t_ours += t_read
        if args.sample_eval:
            start = time.perf_counter()
            for path in run_paths:
                subprocess.run(["perl", str(args.sample_eval), str(work / "sample.txt"),
                                str(path)], check=True, capture_output=True)
            t_perl = time.perf_counter() - start
            print(f"sample_eval.pl, once per run: {t_perl:.2f} s "
                  f"(speed-up {t_perl / t_ours:.1f}x)")


if __name__ == "__main__":
    main()
