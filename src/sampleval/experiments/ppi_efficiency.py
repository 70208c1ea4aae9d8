"""Prediction-powered estimates against Horvitz-Thompson, by simulation: for predictors of
controlled quality, how much narrower the intervals and how much smaller the errors, at the
same judging budget, and whether the estimates stay unbiased.

    python -m sampleval.experiments.ppi_efficiency [--trials N] [--rate R] [--method M]
        [--measures P@10,AP] [--predictors flip10,noise,...] [--guide NAME] [--data DIR]

On TREC-COVID round 5 (the depth-100 pool of the 126 runs; the truth is each run's exact
measure with the pool judged in full from the round-5 qrels, unjudged documents not
relevant), each trial judges ``rate`` of every topic's pool with a selection method and
estimates every run's mean over topics with the method's ``~ht`` estimator (``~hh`` on draws
is not offered for AP, so the comparison is always with ``~ht``) and with ``~ppi`` under each
predictor of :mod:`sampleval.synthetic_predictions` (made once, seeded: the predictions are
fixed, the samples vary). One row per (predictor, measure): rms error and bias of the mean
over topics (over trials and runs), mean 95% interval width, coverage of the truth, the share
of runs whose mean estimate over the trials lies within 3 standard errors of the truth, and
the ratios of rms and width to ``~ht``'s. For contrast, the predictions alone (no sample):
their rms error, and the share of runs whose value lies within those 3 standard errors.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators.base import MEAN_TOPIC, TopicView, summarise, topic_views
from sampleval.estimators.horvitz_thompson import estimate_ht
from sampleval.estimators.names import parse_estimate
from sampleval.estimators.ppi import (
    ppi_values,
    predictions_alone,
    sample_form,
    topic_data,
)
from sampleval.evaluation import evaluate
from sampleval.experiments._cli import read_round5, simulation_parser
from sampleval.experiments.compare_methods import pool_qrels
from sampleval.params import parse_assignments
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.synthetic_predictions import (
    deep_over_calls,
    flipped,
    fused,
    pool_truth,
    pure_noise,
)

Predictor = Callable[[pd.DataFrame, Pool, np.random.Generator], pd.DataFrame]
PREDICTORS: dict[str, Predictor] = {
    "flip10": lambda truth, pool, rng: flipped(truth, 0.1, rng),
    "flip30": lambda truth, pool, rng: flipped(truth, 0.3, rng),
    "flip50": lambda truth, pool, rng: flipped(truth, 0.5, rng),
    "deep": lambda truth, pool, rng: deep_over_calls(truth, 0.5, rng, pool.depth),
    "noise": lambda truth, pool, rng: pure_noise(truth, rng),
    "fused": lambda truth, pool, rng: fused(pool, 0.1),
}
COLUMNS = ["predictor", "measure", "trials", "rms", "bias", "width", "coverage", "within3se",
           "rms_ratio", "width_ratio", "alone_rms", "alone_within3se"]


def make_predictions(pool: Pool, qrels: Qrels, names: Sequence[str], seed: int
                     ) -> dict[str, Predictions]:
    """The named predictors' predictions of every pooled document, each from its own child
    of ``seed``'s SeedSequence (independent of the trials' ``default_rng(seed + i)``; note
    that ``default_rng([s, 0])`` is ``default_rng(s)``)."""
    truth = pool_truth(pool, qrels)
    children = np.random.SeedSequence(seed).spawn(len(names))
    out = {}
    for name, child in zip(names, children, strict=True):
        if name not in PREDICTORS:
            raise UsageError(f"unknown predictor {name!r} (one of {', '.join(PREDICTORS)})")
        out[name] = Predictions.from_frame(PREDICTORS[name](
            truth, pool, np.random.default_rng(child)), source=name)
    return out


def _means(run_names: tuple[str, ...], views: list[TopicView], measure: str,
           values: np.ndarray, variances: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run's mean over topics and the half-width of its 95% interval."""
    rows = summarise(run_names, views, measure, values, variances, 0.95)
    rows = rows[rows["query_id"] == MEAN_TOPIC].set_index("run").reindex(list(run_names))
    return rows["value"].to_numpy(), (rows["hi"] - rows["value"]).to_numpy()


def trial_estimates(pool: Pool, sample: Sample, measures: Sequence[str],
                    predictions: dict[str, Predictions], level: float = 1.0
                    ) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """For one sample: (estimator, measure) -> each run's mean over topics and the half-width
    of its 95% interval, for ``~ht`` and for ``~ppi`` under each predictor (and, under
    ``alone:NAME``, the predictions' own value with no sample)."""
    names = pool.run_names
    views = topic_views(pool, sample)
    out = {}
    for measure in measures:
        spec = parse_estimate(f"{measure}~ht")
        rows = estimate_ht(names, views, sample, spec, level, 0.95)
        rows = rows[rows["query_id"] == MEAN_TOPIC].set_index("run").reindex(list(names))
        out[("ht", measure)] = (rows["value"].to_numpy(),
                                (rows["hi"] - rows["value"]).to_numpy())
    form = sample_form(sample)
    for name, predicted in predictions.items():
        views = topic_views(pool, sample, predicted)
        topics = [topic_data(v, sample, form) for v in views]
        for measure in measures:
            spec = parse_estimate(f"{measure}~ppi")
            result = ppi_values(spec, topics, level)
            out[(name, measure)] = _means(names, views, spec.name, result.value,
                                          result.variance)
            alone = np.array([predictions_alone(spec, level, t) for t in topics])
            out[(f"alone:{name}", measure)] = _means(names, views, spec.name, alone,
                                                     np.zeros_like(alone))
    return out


def run(pool: Pool, qrels: Qrels, method: str, params: dict[str, Any], rate: float,
        trials: int, measures: Sequence[str], predictor_names: Sequence[str],
        seed: int = 0, guide: str | None = None) -> pd.DataFrame:
    """The simulation of the module docstring on ``pool``'s topics: one row per (predictor,
    measure); trial i samples with seed ``seed + i``; ``guide``: the predictor (one of
    ``predictor_names``) whose predictions the selection method receives (``stratified``
    with ``size=residual``)."""
    truth_rows = evaluate(pool_qrels(qrels, pool), pool, list(measures))
    truth_rows = truth_rows[truth_rows["query_id"] == MEAN_TOPIC]
    truth = {m: truth_rows[truth_rows["measure"] == m].set_index("run")["value"].reindex(
        list(pool.run_names)).to_numpy() for m in measures}
    predictions = make_predictions(pool, qrels, predictor_names, seed)
    if guide is not None and guide not in predictions:
        raise UsageError(f"the guide {guide!r} is not among the predictors")
    guiding = {} if guide is None else {"predictions": predictions[guide]}
    oracle = qrels_oracle(qrels)
    values: dict[tuple[str, str], list[np.ndarray]] = {}
    halves: dict[tuple[str, str], list[np.ndarray]] = {}
    for trial in range(trials):
        selector = METHODS[method](pool, Budget(rate=rate), np.random.default_rng(
            seed + trial), **guiding, **params)
        sample = simulate(selector, oracle).sample()
        for key, (value, half) in trial_estimates(pool, sample, measures, predictions).items():
            values.setdefault(key, []).append(value)
            halves.setdefault(key, []).append(half)
    rows = []
    for name in ["ht", *predictor_names]:
        for measure in measures:
            est, half = np.array(values[(name, measure)]), np.array(halves[(name, measure)])
            ht_est, ht_half = np.array(values[("ht", measure)]), np.array(
                halves[("ht", measure)])
            true = truth[measure]
            rms = float(np.sqrt(np.mean((est - true) ** 2)))
            se = est.std(axis=0, ddof=1) / np.sqrt(trials) if trials > 1 else np.inf
            alone = (np.array(values[(f"alone:{name}", measure)])[0]
                     if name != "ht" else np.full(len(true), np.nan))
            rows.append({
                "predictor": name, "measure": f"{measure}~{'ht' if name == 'ht' else 'ppi'}",
                "trials": trials, "rms": rms, "bias": float(np.mean(est - true)),
                "width": float(np.mean(2 * half)),
                "coverage": float(np.mean(np.abs(est - true) <= half)),
                "within3se": float(np.mean(np.abs(est.mean(axis=0) - true) <= 3 * se)),
                "rms_ratio": rms / float(np.sqrt(np.mean((ht_est - true) ** 2))),
                "width_ratio": float(np.mean(half) / np.mean(ht_half)),
                "alone_rms": float(np.sqrt(np.mean((alone - true) ** 2))),
                "alone_within3se": float(np.mean(np.abs(alone - true) <= 3 * se))
                if name != "ht" else np.nan,
            })
    return pd.DataFrame(rows, columns=COLUMNS)


def render(table: pd.DataFrame, title: str) -> Table:
    out = Table(title=title)
    for column in COLUMNS:
        out.add_column(column, justify="left" if column in ("predictor", "measure")
                       else "right")
    for row in table.itertuples(index=False):
        out.add_row(str(row.predictor), str(row.measure), str(row.trials),
                    *(f"{getattr(row, c):.4f}" for c in COLUMNS[3:]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=10)
    parser.add_argument("--method", default="stratified",
                        help="selection method, NAME or NAME:KEY=VALUE;KEY=VALUE "
                             "(default stratified)")
    parser.add_argument("--measures", default="P@10,AP",
                        help="comma-separated measures (default P@10,AP)")
    parser.add_argument("--predictors", default=",".join(PREDICTORS),
                        help=f"comma-separated predictors (default all: "
                             f"{', '.join(PREDICTORS)})")
    parser.add_argument("--guide", help="the predictor whose predictions the selection "
                                        "method uses (e.g. --method stratified:size=residual "
                                        "--guide fused)")
    args = parser.parse_args(argv)
    console = Console(width=160)
    method, _, given = args.method.partition(":")
    measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    names = [p.strip() for p in args.predictors.split(",") if p.strip()]
    try:
        runs, qrels = read_round5(args.data)
        start = time.perf_counter()
        table = run(Pool.from_runs(runs, args.depth), qrels, method,
                    parse_assignments(given), args.rate, args.trials, measures, names,
                    args.seed, args.guide)
    except UsageError as exc:
        console.print(f"[red]{exc}")
        return 1
    seconds = time.perf_counter() - start
    console.print(render(table, f"TREC-COVID round 5: {len(runs)} runs, depth {args.depth}, "
                                f"{args.method} at rate {args.rate}, {args.trials} trials "
                                f"({seconds:.0f} s)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
