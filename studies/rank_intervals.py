"""Which simultaneous rank intervals to give a leaderboard from per-topic values (issue 28):
their simultaneous coverage and mean length by Monte Carlo where the truth is known.

    python -m studies.rank_intervals [--collection round5] [--topics 10,19,25,50]
        [--runs 12] [--pick random|adjacent] [--trials 200] [--measures AP,P@10,nDCG@10]
        [--seed 0] [--output F.csv]

The population is a collection's own topics: each trial draws ``T`` topics *with
replacement* from its topics (TREC-COVID round 5: 50) and ``--runs`` runs (at random;
``--pick adjacent``: neighbours on the true leaderboard; ``--pick null``: at random, each
run's per-topic values shifted so that its mean over all topics is the runs' common mean,
which keeps the real values' skew and correlation and makes every true rank a tie, so
that the coverage is 1 - the family-wise error of the pairwise claims), and computes rank intervals from the exact per-topic values (the full qrels,
trec_eval's semantics, each run's top ``--depth``) on the drawn topics. The truth is the ranking of the
runs by their mean over all the collection's topics (the mean of the distribution the
topics were drawn from), so a trial's intervals cover when every run's true rank lies in
its interval at once (tied true means: any of the tied ranks). Candidates
(:data:`CANDIDATES`), each at 95%, from the paired t statistics of all R(R-1)/2 pairs:

- ``max-t``: the studentised topic bootstrap's max-|t| quantile (Westfall & Young 1993),
  single step (``rank_intervals(method="max-t")``);
- ``bonferroni``: t_{T-1} quantile at 1 - 0.05 / (R(R-1)) (Klein, Wright & Wieczorek 2020's
  joint region from Bonferroni-adjusted pairwise intervals);
- ``holm``: Holm's step-down over the R(R-1) one-sided paired t-tests "a above b"
  (``rank_intervals(method="holm")``; a family-wise error rate of the directional claims
  is all simultaneous rank intervals need, Al Mohamad, Goeman & van Zwet 2022);
- ``guarded``: the bootstrap's max-t quantile, never above Bonferroni's.

Reported per collection, measure, T and candidate: the simultaneous coverage (Monte Carlo
SE sqrt(c(1-c)/trials)), the mean interval length (hi - lo + 1, averaged over runs and
trials; R is no information), and the share of runs whose interval is a single rank.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sampleval.cli._app import split_names
from sampleval.estimation.ranks import (
    REPLICATES,
    covers_ranks,
    max_t_quantile,
    paired_t,
    rank_intervals,
)
from studies._cli import COLLECTIONS, add_data_arguments, read_collection
from studies.compare_accuracy import exact_per_topic

CANDIDATES = ("max-t", "bonferroni", "holm", "guarded")


def intervals(values: np.ndarray, candidate: str, rng: np.random.Generator,
              replicates: int = REPLICATES) -> tuple[np.ndarray, np.ndarray]:
    """``candidate``'s 95% rank intervals (lo, hi) of ``values`` ``[topics, runs]``."""
    from scipy import stats

    frame = pd.DataFrame(values)
    if candidate in ("max-t", "holm"):
        got = rank_intervals(frame, 0.95, rng, replicates, method=candidate)
        return got["rank_lo"].to_numpy(), got["rank_hi"].to_numpy()
    n_topics, n_runs = values.shape
    a, b = np.triu_indices(n_runs, k=1)
    diff, t = paired_t(values, a, b)
    crit = float(stats.t.ppf(1 - 0.05 / (n_runs * (n_runs - 1)), n_topics - 1))
    if candidate == "guarded":
        crit = min(crit, max_t_quantile(diff, diff.mean(axis=0), 0.95, rng, replicates))
    better = np.zeros((n_runs, n_runs), dtype=bool)
    better[a[t > crit], b[t > crit]] = True
    better[b[t < -crit], a[t < -crit]] = True
    lo = 1 + better.sum(axis=0)
    hi = n_runs - better.sum(axis=1)
    return lo, hi


def simulate(per_topic: pd.DataFrame, n_topics: int, n_runs: int, trials: int,
             rng: np.random.Generator, candidates: Sequence[str] = CANDIDATES,
             pick: str = "random") -> pd.DataFrame:
    """One row per candidate: ``coverage``, ``coverage_se``, ``length``, ``points``."""
    values = per_topic.to_numpy(dtype=np.float64)
    order = np.argsort(-values.mean(axis=0), kind="stable")
    n_runs = min(n_runs, values.shape[1])
    covered = {c: 0 for c in candidates}
    length = {c: 0.0 for c in candidates}
    points = {c: 0.0 for c in candidates}
    for _ in range(trials):
        if pick == "adjacent":
            start = int(rng.integers(0, values.shape[1] - n_runs + 1))
            runs = order[start:start + n_runs]
        else:
            runs = rng.choice(values.shape[1], size=n_runs, replace=False)
        chosen = values[:, runs]
        if pick == "null":  # every run's values shifted to one mean: all true ranks tie
            chosen = chosen - chosen.mean(axis=0) + chosen.mean()
        topics = rng.integers(0, values.shape[0], size=n_topics)
        truth = chosen.mean(axis=0)
        drawn = chosen[topics]
        for c in candidates:
            lo, hi = intervals(drawn, c, rng)
            covered[c] += covers_ranks(lo, hi, truth)
            length[c] += float((hi - lo + 1).mean())
            points[c] += float((hi == lo).mean())
    rows = []
    for c in candidates:
        share = covered[c] / trials
        rows.append({"candidate": c, "coverage": share,
                     "coverage_se": float(np.sqrt(share * (1 - share) / trials)),
                     "length": length[c] / trials, "points": points[c] / trials})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--collection", choices=COLLECTIONS, default="round5")
    parser.add_argument("--topics", default="10,19,25,50", metavar="T[,T]",
                        help="topics drawn per trial (default 10,19,25,50)")
    parser.add_argument("--runs", type=int, default=12, help="runs per trial (default 12)")
    parser.add_argument("--pick", choices=("random", "adjacent", "null"), default="random",
                        help="the runs of a trial: drawn at random; a random window of "
                             "neighbours on the true leaderboard; or drawn at random and "
                             "each shifted to the same mean (every order claimed is an "
                             "error)")
    parser.add_argument("--trials", type=int, default=200, help="trials per cell (default 200)")
    parser.add_argument("--measures", default="AP,P@10,nDCG@10", metavar="M[,M]")
    parser.add_argument("--output", type=Path, help="also write the table as CSV")
    add_data_arguments(parser, "seed of the numpy Generator (default 0)")
    args = parser.parse_args(argv)
    runs, qrels = read_collection(args.collection, args.data, args.depth)
    rows = []
    for measure in split_names([args.measures]):
        per_topic = exact_per_topic(qrels, runs, measure, args.depth).dropna(axis=0)
        for n_topics in (int(t) for t in split_names([args.topics])):
            rng = np.random.default_rng([args.seed, n_topics])
            table = simulate(per_topic, n_topics, args.runs, args.trials, rng,
                             pick=args.pick)
            table.insert(0, "topics", n_topics)
            table.insert(0, "measure", measure)
            table.insert(0, "pick", args.pick)
            table.insert(0, "collection", args.collection)
            rows.append(table)
            print(table.to_string(index=False, header=len(rows) == 1), flush=True)
    out = pd.concat(rows, ignore_index=True)
    if args.output:
        out.to_csv(args.output, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
