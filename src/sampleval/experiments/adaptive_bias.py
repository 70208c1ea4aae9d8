"""Horvitz-Thompson against the per-draw (Hansen-Hurwitz) estimator under active sampling.

Active sampling (Li & Kanoulas, CIKM 2017) chooses each round's draw probabilities from the
judgments already seen, so pi_i = 1 - prod_t (1 - p_t(i))^N_t depends on the path the
sampling took and the HT estimator built on it is not unbiased by construction. The
per-draw estimator, the mean over draws of y / p_t(i) (``~hh``), is: each term has
expectation equal to the total given the past (a martingale difference argument). This
experiment measures both by simulation: ``trials`` seeded active-sampling campaigns at a
budget ``rate`` of each topic's depth-``depth`` pool, judged from qrels, and for P@10 (every
run) and R (NumRel) the bias, standard deviation and rms error of each estimator against the
truth of the pool judged in full, and the share of (topic, run) cells whose mean estimate
is within 3 standard errors of the truth.

    python -m sampleval.experiments.adaptive_bias [--trials N] [--topics 1,2,...] [--data DIR]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.errors import UsageError
from sampleval.estimators.base import TopicView, relevance, topic_views
from sampleval.estimators.hansen_hurwitz import estimate_hh
from sampleval.estimators.names import parse_estimate
from sampleval.experiments._cli import read_round5, show_progress, simulation_parser
from sampleval.selection import Budget, simulate
from sampleval.selection.active import ActiveSelector
from sampleval.selection.base import Oracle

ESTIMATORS = ("HT", "HH")
MEASURES = ("P@10", "NumRel")


@dataclass(frozen=True)
class Errors:
    """Estimate minus truth per trial, for each (estimator, measure): ``[trials, topics,
    runs]`` (NumRel is the same for every run; one column is kept)."""

    values: dict[tuple[str, str], np.ndarray]

    def summary(self) -> list[dict[str, float | str]]:
        """Per (estimator, measure): mean bias, root-mean variance over cells, rms, and the
        share of cells whose mean error is within 3 standard errors of 0."""
        rows: list[dict[str, float | str]] = []
        for (family, measure), e in self.values.items():
            trials = e.shape[0]
            mean, sd = e.mean(axis=0), e.std(axis=0, ddof=1)
            se = sd / np.sqrt(trials)
            rows.append({"estimator": family, "measure": measure, "trials": trials,
                         "bias": float(mean.mean()), "sd": float(np.sqrt((sd**2).mean())),
                         "rms": float(np.sqrt((e**2).mean())),
                         "within_3se": float((np.abs(mean) <= 3 * se + 1e-12).mean())})
        return rows


def pool_truth(pool: Pool, oracle: Oracle) -> dict[str, np.ndarray]:
    """P@10 ``[topics, runs]`` and NumRel ``[topics, 1]`` with the whole pool judged."""
    precision, num_rel = [], []
    for tp in pool:
        docs = pool.docnos_of(tp.topic)
        y = relevance(np.array(list(oracle(tp.topic, list(docs)).values())), 1.0)
        top = np.where((tp.ranking >= 0)[:, :10], tp.ranking[:, :10], 0)
        precision.append(np.where(tp.ranking[:, :10] >= 0, y[top], 0.0).sum(axis=1) / 10)
        num_rel.append([y.sum()])
    return {"P@10": np.array(precision), "NumRel": np.array(num_rel)}


def simulate_errors(pool: Pool, oracle: Oracle, trials: int, rate: float = 0.1,
                    seed: int = 0, progress: bool = False) -> Errors:
    """``trials`` active-sampling campaigns (seeds ``seed``, ``seed + 1``, ...) and the
    errors of HT and HH for P@10 and NumRel (see the module docstring)."""
    truth = pool_truth(pool, oracle)
    shape = {m: truth[m].shape for m in MEASURES}
    values = {(f, m): np.empty((trials, *shape[m])) for f in ESTIMATORS for m in MEASURES}
    steps = range(trials)
    for trial in track(steps, description="trials") if progress else steps:
        # the design the README's figures were measured on (3 draws a round, a floor of 0.1:
        # the per-draw estimator needs p_t(d) > 0 at every draw, which floor=0 does not give)
        selector = ActiveSelector(pool, Budget(rate=rate), np.random.default_rng(seed + trial),
                                  batch=3, floor=0.1, prior="harmonic")
        sample = simulate(selector, oracle).sample()
        views = topic_views(pool, sample)
        for measure in MEASURES:
            hh = estimate_hh(pool.run_names, views, sample, parse_estimate(f"{measure}~hh"),
                             1.0, 0.95)
            cells = hh[hh["query_id"] != "all"]["value"].to_numpy()
            estimates = {"HT": ht_point_estimates(views, measure),
                         "HH": cells.reshape(len(views), pool.n_runs)}
            for family, estimate in estimates.items():
                values[family, measure][trial] = estimate[:, :shape[measure][1]] - truth[measure]
    return Errors(values)


def ht_point_estimates(views: list[TopicView], measure: str) -> np.ndarray:
    """HT estimates ``[topics, runs]`` of P@10 or NumRel with the frame's pi_i (the same
    estimates as ``P@10~ht`` and ``NumRel~ht``; their variances, which need pi_ij, are not
    needed here)."""
    rows = []
    for view in views:
        judged = np.flatnonzero(view.sample.judged)
        x = relevance(view.sample.labels[judged], 1.0) / view.sample.inclusion[judged]
        if measure == "NumRel":
            rows.append(np.full(view.n_runs, x.sum()))
        else:
            ranks = view.rank_of(judged)
            rows.append(((ranks > 0) & (ranks <= 10)) @ x / 10)
    return np.array(rows)


def render(rows: list[dict[str, float | str]], title: str) -> Table:
    table = Table(title=title)
    for column in ("estimator", "measure", "trials", "bias", "sd", "rms", "within_3se"):
        table.add_column(column, justify="left" if column in ("estimator", "measure")
                         else "right")
    for row in rows:
        table.add_row(str(row["estimator"]), str(row["measure"]), str(row["trials"]),
                      *(f"{row[c]:.4f}" for c in ("bias", "sd", "rms", "within_3se")))
    return table


def main(argv: Sequence[str] | None = None) -> int:
    from sampleval.selection import qrels_oracle

    parser = simulation_parser(__doc__, trials=2000)
    parser.add_argument("--topics", help="comma-separated topics (default: all)")
    args = parser.parse_args(argv)
    console = Console(width=100)
    try:
        runs, qrels = read_round5(args.data)
    except UsageError as exc:
        console.print(f"[red]{exc}")
        return 1
    pool = Pool.from_runs(runs, depth=args.depth)
    if args.topics:
        pool = replace(pool, topic_pools={t: pool[t] for t in args.topics.split(",")})
    start = time.perf_counter()
    errors = simulate_errors(pool, qrels_oracle(qrels), args.trials,
                             rate=args.rate, seed=args.seed, progress=show_progress())
    console.print(render(errors.summary(), f"active sampling at {args.rate:.0%}, "
                                           f"{len(pool.topics)} topics x {pool.n_runs} runs, "
                                           f"{args.trials} trials "
                                           f"({time.perf_counter() - start:.0f} s)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
