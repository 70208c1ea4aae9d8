"""Compare selection methods by simulation: judge a share of the pool with each method, from
qrels taken as the truth, estimate every run's mean AP, and measure how far the estimates and
their leaderboard are from the exact ones (the protocol of Li & Kanoulas, "Active sampling
for large-scale information retrieval evaluation", CIKM 2017, sec. 5).

    python -m sampleval.experiments.compare_methods [--trials N] [--rate R] [--data DIR]

runs every registered method on TREC-COVID round 5 (depth-100 pool of the 126 runs, the
round-5 qrels as truth) and prints one row per method.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.estimators import estimate
from sampleval.evaluation import MEAN_TOPIC, evaluate
from sampleval.experiments._cli import read_round5, show_progress, simulation_parser
from sampleval.experiments.metaeval import (
    bias,
    kendall_tau,
    rms_error,
    significant_pair_accuracy,
    tau_ap,
    variance,
)
from sampleval.progress import steps
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.selection.base import Oracle

MethodSpec = tuple[str, dict[str, Any], str | None]
"""A method to compare: its registered name, its parameters, and the estimated measure of
mean AP (None: exact AP on the judged documents, unjudged ones not relevant)."""

COLUMNS = ["method", "measure", "trials", "rms", "bias", "variance", "rms_qrels", "tau",
           "tau_ap", "sig_acc", "select_s", "trial_s"]


def ap_measure(method: str) -> str | None:
    """The AP estimator for a method's samples: exact AP for deterministic (``pooled``)
    methods, else xinfAP where the NIST family applies (stratified designs), else AP~ht,
    else statAP; UsageError when none applies."""
    cls = METHODS[method]
    if cls.design == "pooled":
        return None
    for family, measure in (("nist", "xinfAP"), ("ht", "AP~ht"), ("stat", "statAP")):
        if family in cls.estimator_families():
            return measure
    raise UsageError(f"method {method!r} has no estimator of AP")


# Parameters that differ from a method's defaults in the comparison: Voorhees' 3strata judges
# the top-10 pool first, which at 10% of a 126-run pool takes the whole budget and leaves the
# deeper strata unsampled (a partial census, biased for any estimator); Yilmaz et al.'s
# depth-k plus an equal uniform sample of the rest is a proper stratified design at any budget.
COMPARED_PARAMS: dict[str, dict[str, Any]] = {"strata": {"strategy": "depthk+equal"}}


def default_methods() -> tuple[dict[str, MethodSpec], list[str]]:
    """Every registered method with the parameters of :data:`COMPARED_PARAMS` (else its
    defaults) and :func:`ap_measure`, and the names of the methods left out because no
    estimator of AP applies to them."""
    methods: dict[str, MethodSpec] = {}
    skipped = []
    for name in METHODS:
        try:
            methods[name] = (name, COMPARED_PARAMS.get(name, {}), ap_measure(name))
        except UsageError:
            skipped.append(name)
    return methods, skipped


def method_spec(text: str, methods: Mapping[str, MethodSpec]) -> MethodSpec:
    """``NAME`` or ``NAME:KEY=VALUE;KEY=VALUE``: the method of ``methods`` by that name, with
    the given parameters in place of its own."""
    name, _, params = text.partition(":")
    spec = methods[name]
    if not params:
        return spec
    pairs = [p.partition("=") for p in params.split(";")]
    if any(not sep or not key for key, sep, _ in pairs):
        raise UsageError(f"{text!r}: parameters must be KEY=VALUE, separated by ';'")
    return spec[0], {key.strip(): value.strip() for key, _, value in pairs}, spec[2]


def run_trial(pool: Pool, runs: Sequence[Run], oracle: Oracle, spec: MethodSpec,
              budget: Budget, seed: int) -> tuple[pd.DataFrame, float]:
    """One simulated judging campaign: per-topic and mean AP per run (``run, query_id,
    value``) and the seconds the selection took.

    Documents are judged in the selector's own batches (``Selector.batch_size``), which give
    the same sample as one document at a time.
    """
    method, params, measure = spec
    start = time.perf_counter()
    selector = METHODS[method](pool, budget, np.random.default_rng(seed), **params)
    sample = simulate(selector, oracle).sample()
    select_s = time.perf_counter() - start
    if measure is None:
        judged = sample.judged()[["query_id", "doc_id", "relevance"]]
        scores = evaluate(Qrels.from_frame(judged), pool, ["AP"])
    else:
        scores = estimate(sample, runs, [measure], depth=pool.depth)
    return scores[["run", "query_id", "value"]], select_s


def pool_qrels(qrels: Qrels, pool: Pool) -> Qrels:
    """The judgments of ``qrels`` on the pool's documents only: what judging the whole pool
    would give, and so what estimates from samples of the pool estimate."""
    labelled = pool.with_labels(qrels)
    parts = []
    for tp in labelled:
        judged = ~np.isnan(tp.labels)
        parts.append(pd.DataFrame({"query_id": tp.topic,
                                   "doc_id": labelled.docnos[tp.doc_ids[judged]],
                                   "relevance": tp.labels[judged]}))
    return Qrels.from_frame(pd.concat(parts, ignore_index=True))


def compare(runs: Sequence[Run], qrels: Qrels, methods: Mapping[str, MethodSpec],
            rate: float = 0.1, depth: int = 100, trials: int = 30, rng_seed: int = 0,
            alpha: float = 0.05, progress: bool = False) -> pd.DataFrame:
    """For each method, ``trials`` simulated campaigns (seed ``rng_seed + trial``, the same
    for every method) judging ``rate`` of each topic's depth-``depth`` pool from ``qrels``.

    The truth is exact AP at ``depth`` with the pool judged in full (:func:`pool_qrels`):
    a sample of the pool can only estimate R within the pool, so relevant documents that no
    run retrieved to ``depth`` are left out of it. ``rms_qrels`` measures the same estimates
    against AP on the full ``qrels`` instead.

    One row per method (:data:`COLUMNS`): rms error, bias and variance of mean AP over runs
    and trials; Kendall's tau, tau_AP and the significant-pair accuracy (``alpha``) of the
    estimated leaderboard, means over trials (see :mod:`.metaeval`); seconds per trial of
    the selection alone and of selection plus estimation.
    """
    pool = Pool.from_runs(runs, depth)
    names = list(pool.run_names)
    true_scores = evaluate(pool_qrels(qrels, pool), pool, ["AP"])
    true_topic = _per_topic(true_scores, names)
    true_mean = _means(true_scores, names)
    full_mean = _means(evaluate(qrels, pool, ["AP"]), names)
    oracle = qrels_oracle(qrels)
    budget = Budget(rate=rate)
    rows = []
    with steps(len(methods) * trials, "trials", progress) as step:
        for name, spec in methods.items():
            means = np.empty((trials, len(names)))
            taus, taps, accs, select, total = (np.empty(trials) for _ in range(5))
            for trial in range(trials):
                step(f"{name}: trial {trial + 1} of {trials}")
                start = time.perf_counter()
                scores, select[trial] = run_trial(pool, runs, oracle, spec, budget,
                                                  rng_seed + trial)
                total[trial] = time.perf_counter() - start
                means[trial] = _means(scores, names)
                taus[trial] = kendall_tau(means[trial], true_mean)
                taps[trial] = tau_ap(means[trial], true_mean)
                est_topic = _per_topic(scores, names).reindex(true_topic.index)
                complete = est_topic.notna().all(axis=1).to_numpy()
                accs[trial] = significant_pair_accuracy(est_topic.to_numpy()[complete],
                                                        true_topic.to_numpy()[complete], alpha)
            rows.append({
                "method": name, "measure": spec[2] or "AP (judged)", "trials": trials,
                "rms": rms_error(means, true_mean), "bias": bias(means, true_mean),
                "rms_qrels": rms_error(means, full_mean),
                "variance": variance(means), "tau": taus.mean(), "tau_ap": taps.mean(),
                "sig_acc": accs.mean(), "select_s": select.mean(), "trial_s": total.mean(),
            })
    return pd.DataFrame(rows, columns=COLUMNS)


def _means(scores: pd.DataFrame, names: list[str]) -> np.ndarray:
    """Each run's mean over topics, in ``names`` order."""
    means = scores[scores["query_id"] == MEAN_TOPIC].set_index("run")["value"]
    return means.reindex(names).to_numpy(dtype=np.float64)


def _per_topic(scores: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per-topic scores as ``[topics, runs]`` (runs in ``names`` order)."""
    topics = scores[scores["query_id"] != MEAN_TOPIC]
    return topics.pivot(index="query_id", columns="run", values="value").reindex(
        columns=names)


def render(table: pd.DataFrame, title: str) -> Table:
    """The comparison as a rich table."""
    out = Table(title=title)
    for column in COLUMNS:
        out.add_column(column, justify="left" if column in ("method", "measure") else "right")
    for row in table.itertuples(index=False):
        out.add_row(str(row.method), str(row.measure), str(row.trials),
                    *(f"{getattr(row, c):.4f}" for c in ("rms", "bias", "variance",
                                                          "rms_qrels", "tau", "tau_ap",
                                                          "sig_acc")),
                    f"{row.select_s:.2f}", f"{row.trial_s:.2f}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=30)
    parser.add_argument("--methods", help="comma-separated methods (default: all), each a "
                        "name or NAME:KEY=VALUE;KEY=VALUE for other parameters, e.g. "
                        "active:floor=1")
    args = parser.parse_args(argv)
    console = Console(width=140)
    methods, skipped = default_methods()
    wanted = [m.strip() for m in args.methods.split(",")] if args.methods else list(methods)
    unknown = [m for m in wanted if m.partition(":")[0] not in methods]
    if unknown:
        console.print(f"[red]not comparable: {', '.join(unknown)}")
        return 1
    try:
        methods = {m: method_spec(m, methods) for m in wanted}
        runs, qrels = read_round5(args.data)
        table = compare(runs, qrels, methods, rate=args.rate, depth=args.depth,
                        trials=args.trials, rng_seed=args.seed, progress=show_progress())
    except UsageError as exc:
        console.print(f"[red]{exc}")
        return 1
    console.print(render(table, f"TREC-COVID round 5: {len(runs)} runs, depth {args.depth}, "
                                f"rate {args.rate}, {args.trials} trials (mean AP)"))
    if skipped:
        console.print(f"left out (no estimator of AP): {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
