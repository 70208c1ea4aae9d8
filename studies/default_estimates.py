"""Which estimator ``sampleval estimate`` uses by default: the accuracy of every estimator that
applies to a design, for each measure estimated by default, measured by simulation.

    python -m studies.default_estimates [--trials N] [--methods M,M:K=V,...]

For each selection method (default: ``uniform``, ``strata`` with ``strategy=depthk+equal``,
``stratified`` and ``active``, which cover the ``stratified`` and ``with-replacement``
designs), every trial judges ``--rate`` of each topic's depth-``--depth`` pool of TREC-COVID
round 5 (126 runs, 50 topics) from the round-5 qrels, and every estimator whose family
accepts the method's design estimates each measure of
:data:`sampleval.estimation.estimates.DEFAULT_MEASURES` for all 126 runs. The truth is the exact
measure with the whole pool judged (``sampleval simulate``'s truth, :mod:`.truth`). Per (method, measure,
estimator) it prints, over runs and trials, for each run's mean over topics: the rms error,
the bias, the share of the estimate's intervals that contain the truth (``cover``), the mean
share of the value that is imputation (``imputed``), and which estimator the families'
table chooses today (``default``; :mod:`sampleval.estimation.defaults`); this experiment is
how they were chosen, but
for AP on stratified samples and censuses, where the coverage of the intervals chose
``AP~ht`` over xinfAP's lower rms under ``stratified`` (:mod:`sampleval.estimation.families.inferred`,
"Not the default AP estimator"; docs/guide/estimating.md).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.estimation.estimates import DEFAULT_MEASURES, estimate
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import EstimateSpec, estimator_for
from sampleval.measures.aggregation import aggregate_of
from sampleval.measures.evaluation import MEAN_TOPIC
from sampleval.measures.names import parse_measure
from sampleval.selection import Budget, qrels_oracle, simulate
from sampleval.simulation.estimates import mean_over_topics
from sampleval.simulation.grid import parse_method
from sampleval.simulation.truth import compute_truth
from studies._cli import read_round5, simulation_parser

DEFAULT_METHODS = ("uniform", "strata:strategy=depthk+equal", "stratified", "active")
COLUMNS = ["method", "design", "measure", "estimator", "trials", "rms", "bias", "cover",
           "imputed", "default", "best"]


def candidates(design: str) -> dict[str, list[EstimateSpec]]:
    """For each default measure (``AP``, ``nDCG@10`` ...), every estimator of it whose family
    accepts ``design``."""
    out: dict[str, list[EstimateSpec]] = {}
    for base, cutoff in DEFAULT_MEASURES:
        plain = base if cutoff is None else f"{base}@{cutoff}"
        out[plain] = [EstimateSpec(f.name, base, cutoff) for f in FAMILIES.values()
                      if f.estimates(base, cutoff, design) and not f.needs_predictions]
    return out


def topic_means(results: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Each run's mean over its per-topic rows, per measure: ``[runs, measures]``."""
    per_topic = results[results["query_id"] != MEAN_TOPIC]
    return per_topic.pivot_table(index="run", columns="measure", values="value",
                                 aggfunc="mean").reindex(names)


def measure_accuracy(runs: Sequence[Any], qrels: Any, methods: Sequence[str], rate: float,
                     depth: int, trials: int, seed: int) -> pd.DataFrame:
    """One row per (method, measure, estimator); see the module docstring."""
    pool = Pool.from_runs(runs, depth)
    names = list(pool.run_names)
    plain = [b if c is None else f"{b}@{c}" for b, c in DEFAULT_MEASURES]
    exact = compute_truth(pool, qrels, [parse_measure(m) for m in plain], [])
    truth = pd.DataFrame({m: mean_over_topics(exact.pool[str(parse_measure(m))], exact.present)
                          for m in plain}, index=list(exact.run_names)).reindex(names)
    oracle = qrels_oracle(qrels)
    rows = []
    for text in methods:
        method = parse_method(text)
        design = method.design
        specs = candidates(design)
        wanted = [s.name for group in specs.values() for s in group]
        errors: dict[str, list[np.ndarray]] = {n: [] for n in wanted}
        covered: dict[str, list[np.ndarray]] = {n: [] for n in wanted}
        imputed: dict[str, list[float]] = {n: [] for n in wanted}
        for trial in range(trials):
            start = time.perf_counter()
            selector = method.make(pool, Budget(rate=rate), np.random.default_rng(seed + trial))
            sample = simulate(selector, oracle).sample()
            results = estimate(sample, runs, wanted, depth=depth)
            means = topic_means(results, names)
            topics = results[results["query_id"] != MEAN_TOPIC].groupby(
                ["measure", "run"]).size()
            overall = results[results["query_id"] == MEAN_TOPIC].set_index(["measure", "run"])
            for measure, group in specs.items():
                for spec in group:
                    error = means[spec.name].to_numpy() - truth[measure].to_numpy()
                    errors[spec.name].append(error)
                    rows_of = overall.loc[spec.name].reindex(names)
                    # the half-width of the interval of each run's mean over topics (a
                    # count's row holds its sum: its half-width over the number of topics)
                    half = (rows_of["hi"] - rows_of["lo"]).to_numpy() / 2
                    if aggregate_of(spec.base) == "sum":
                        counts = pd.Series(topics.loc[spec.name]).reindex(names)
                        half = half / counts.to_numpy(dtype=np.float64)
                    covered[spec.name].append(np.where(np.isnan(half), np.nan,
                                                       np.abs(error) <= half))
                    imputed[spec.name].append(float(rows_of["imputed"].mean()))
            print(f"{text}: trial {trial + 1}/{trials} in {time.perf_counter() - start:.1f} s",
                  file=sys.stderr)
        for measure, group in specs.items():
            if not group:
                continue
            base, _, cut = measure.partition("@")
            chosen = estimator_for(base, int(cut) if cut else None, design,
                                   method.reach_every_document)
            rms = {s.name: float(np.sqrt(np.mean(np.square(errors[s.name])))) for s in group}
            best = min(rms, key=lambda n: rms[n])
            for spec in group:
                err = np.array(errors[spec.name])
                rows.append({
                    "method": text, "design": design, "measure": measure,
                    "estimator": spec.name, "trials": trials, "rms": rms[spec.name],
                    "bias": float(err.mean()),
                    "cover": float(np.mean(covered[spec.name])),
                    "imputed": float(np.mean(imputed[spec.name])),
                    "default": chosen is not None and chosen.name == spec.name,
                    "best": spec.name == best})
    return pd.DataFrame(rows, columns=COLUMNS)


TIE = 0.02
"""Estimators whose rms lie within this share of the lowest count as equally accurate."""


def by_design(table: pd.DataFrame) -> pd.DataFrame:
    """The rule that chose the defaults, applied to :func:`measure_accuracy`'s table: per
    (design, measure), each estimator's rms and interval coverage averaged over the
    design's methods; the chosen one (``rule``) has the lowest rms, estimators within
    :data:`TIE` of it counting as tied and the tie going to the one whose intervals cover the
    truth most often (within :data:`TIE` too; an estimator without intervals covers
    nothing), then to today's default. ``default`` marks what the table chooses today; for AP on stratified designs it departs from ``rule`` where
    xinfAP's rms is the lower (the module docstring)."""
    mean = table.groupby(["design", "measure", "estimator"], sort=False).agg(
        rms=("rms", "mean"), cover=("cover", "mean"), default=("default", "first"),
        methods=("method", "nunique")).reset_index()
    mean["rule"] = False
    for _, group in mean.groupby(["design", "measure"], sort=False):
        tied = group[group["rms"] <= group["rms"].min() * (1 + TIE)]
        cover = tied["cover"].fillna(0.0)
        best = tied[cover >= cover.max() - TIE]
        preferred = best[best["default"]] if best["default"].any() else best
        mean.loc[preferred.index[0], "rule"] = True
    return mean


def render(table: pd.DataFrame, title: str) -> Table:
    out = Table(title=title)
    for column in COLUMNS:
        out.add_column(column, justify="left" if column in (
            "method", "design", "measure", "estimator") else "right")
    for row in table.to_dict("records"):
        imputed = float(row["imputed"])
        out.add_row(str(row["method"]), str(row["design"]), str(row["measure"]),
                    str(row["estimator"]), str(row["trials"]), f"{row['rms']:.4f}",
                    f"{row['bias']:+.4f}",
                    "" if np.isnan(float(row["cover"])) else f"{float(row['cover']):.2f}",
                    "" if np.isnan(imputed) else f"{imputed:.2f}",
                    "yes" if row["default"] else "", "yes" if row["best"] else "")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=10)
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help="comma-separated methods, each NAME or NAME:KEY=VALUE;KEY=VALUE "
                             f"(default: {','.join(DEFAULT_METHODS)})")
    parser.add_argument("--tsv", help="also write the table as TSV to this file")
    args = parser.parse_args(argv)
    runs, qrels = read_round5(args.data)
    table = measure_accuracy(runs, qrels, [m for m in args.methods.split(",") if m],
                             args.rate, args.depth, args.trials, args.seed)
    if args.tsv:
        table.to_csv(args.tsv, sep="\t", index=False)
    console = Console(width=160)
    console.print(render(table, f"TREC-COVID round 5: {len(runs)} runs, depth {args.depth}, "
                                f"rate {args.rate}, {args.trials} trials (each run's mean "
                                "over topics)"))
    console.print(render_rule(by_design(table)))
    return 0


def render_rule(summary: pd.DataFrame) -> Table:
    out = Table(title=f"By design: rms and cover averaged over its methods; rule: lowest rms, "
                      f"ties within {TIE:.0%} to the best-covering intervals")
    for column in ("design", "measure", "estimator", "methods", "rms", "cover", "rule",
                   "default"):
        out.add_column(column, justify="left" if column in (
            "design", "measure", "estimator") else "right")
    for row in summary.to_dict("records"):
        cover = float(row["cover"])
        out.add_row(str(row["design"]), str(row["measure"]), str(row["estimator"]),
                    str(row["methods"]), f"{row['rms']:.4f}",
                    "" if np.isnan(cover) else f"{cover:.2f}",
                    "yes" if row["rule"] else "", "yes" if row["default"] else "")
    return out


if __name__ == "__main__":
    sys.exit(main())
