"""Where a ``~ppi`` estimate's bias sits, by simulation: each topic's share of the bias of
the runs' mean over topics, and whether the mean passes without the topic that carries most.

    python -m studies.bias_by_topic [--trials N] [--rate R] [--method M]
        [--measure AP] [--predictors flip10,noise] [--top 8] [--output F.csv] [--data DIR]

The simulation of :mod:`.ppi_efficiency` (the same seeds give the same samples and the same
predictions), keeping every topic's estimate instead of the mean alone. Per predictor, one
line: the bias of the mean over topics (over trials and runs), the share of runs whose mean
estimate lies within 3 standard errors of the truth (issue 13's criterion 1), the topic with
the largest share of that bias, and the same two figures over the other topics. Then the
``--top`` topics by the size of their share: the topic's relevant documents in the pool,
its own bias (over trials and runs), its share of the mean's bias (its error divided by
the number of topics a run is present in, averaged over trials and runs: the shares add up
to the bias of the mean), how often the check on the sample gave it lam = 0 (an impossible
ratio or jackknife replicate, :func:`sampleval.estimation.engine.values.ppi_values`) and the part of
its share that comes from those topic-runs, and the mean lam it used (numerator,
denominator).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.declare import parse_assignments
from sampleval.errors import UsageError
from sampleval.estimation.engine.units import chosen_form, topic_datas
from sampleval.estimation.engine.values import ppi_values
from sampleval.estimation.engine.views import topic_views
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.names import parse_measure
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.estimates import mean_over_topics
from sampleval.simulation.truth import compute_truth
from studies._cli import read_round5, simulation_parser
from studies.ppi_efficiency import (
    PREDICTORS,
    FixedPredictions,
    make_predictions,
    measured,
)


class TopicTrials(NamedTuple):
    """Every trial's per-topic estimates of one measure: the truth (``[topics, runs]``), the
    topics a run is present in (same shape), each topic's relevant documents in the pool,
    and per predictor the estimates, where the check gave lam = 0, and the lam used (``[trials,
    topics, runs]``; lam ``[trials, topics, 2, runs]``)."""

    topics: list[str]
    truth: np.ndarray
    present: np.ndarray
    relevant: np.ndarray
    values: dict[str, np.ndarray]
    checked: dict[str, np.ndarray]
    lam: dict[str, np.ndarray]


def run(pool: Pool, qrels: Qrels, method: str, params: dict[str, Any], rate: float,
        trials: int, measure: str, predictor_names: Sequence[str], seed: int = 0,
        progress: Callable[[int], None] | None = None) -> TopicTrials:
    """``trials`` samples of ``method`` at ``rate`` (trial i seeded ``seed + i``, as
    :func:`.ppi_efficiency.run`), each topic's ``measure~ppi`` under each predictor (its
    options after the measure: ``AP(bias=taylor)``)."""
    spec = parse_estimate(f"{measure}~ppi")
    exact = compute_truth(pool, qrels, [parse_measure(measured(measure))], [1.0])
    fixed = FixedPredictions(make_predictions(pool, qrels, predictor_names, seed))
    oracle = qrels_oracle(qrels)
    values: dict[str, list[np.ndarray]] = {n: [] for n in predictor_names}
    checked: dict[str, list[np.ndarray]] = {n: [] for n in predictor_names}
    lam: dict[str, list[np.ndarray]] = {n: [] for n in predictor_names}
    for trial in range(trials):
        selector = METHODS[method](pool, Budget(rate=rate),
                                   np.random.default_rng(seed + trial), **params)
        sample = simulate(selector, oracle).sample()
        views = topic_views(pool, sample)
        form = chosen_form(sample, spec)
        per_topic = [topic_datas(view, sample, form, *fixed.for_view(view)) for view in views]
        for i, name in enumerate(predictor_names):
            result = ppi_values(spec, [datas[i] for datas in per_topic], 1.0,
                                str(spec.option("tuning")))
            values[name].append(result.value)
            checked[name].append(result.checked)
            lam[name].append(result.lam)
        if progress is not None:
            progress(trial + 1)
    return TopicTrials(list(exact.topics), exact.pool[measured(measure)], exact.present,
                       exact.num_rel[1.0], *({n: np.array(v[n]) for n in predictor_names}
                                             for v in (values, checked, lam)))


def shares(data: TopicTrials, name: str) -> pd.DataFrame:
    """One row per topic (see the module docstring), largest share of the bias first."""
    error = data.values[name] - data.truth[None]
    per_run = np.where(data.present, 1.0 / data.present.sum(axis=0), 0.0)  # [topics, runs]
    share = (error * per_run[None]).mean(axis=0).mean(axis=1)
    checked = data.checked[name]
    from_checked = (np.where(checked, error, 0.0) * per_run[None]).mean(axis=0).mean(axis=1)
    counted = np.broadcast_to(data.present[None], error.shape)
    table = pd.DataFrame({
        "query_id": data.topics, "relevant": data.relevant.astype(int),
        "bias": np.where(counted, error, 0.0).sum(axis=(0, 2)) / counted.sum(axis=(0, 2)),
        "share": share,
        "checked": checked.mean(axis=(0, 2)), "share_checked": from_checked,
        "lam_num": data.lam[name][:, :, 0].mean(axis=(0, 2)),
        "lam_den": data.lam[name][:, :, 1].mean(axis=(0, 2))})
    return table.iloc[np.argsort(-np.abs(share), kind="stable")].reset_index(drop=True)


def within(data: TopicTrials, name: str, kept: np.ndarray) -> tuple[float, float]:
    """The bias of the runs' mean over the ``kept`` topics (a mask) and the share of runs
    whose mean over the trials lies within 3 standard errors of the truth."""
    counted = data.present & kept[:, None]
    means = np.array([mean_over_topics(v, counted) for v in data.values[name]])
    truth = mean_over_topics(data.truth, counted)
    se = means.std(axis=0, ddof=1) / np.sqrt(len(means))
    return (float(np.nanmean(means - truth)),
            float(np.mean(np.abs(means.mean(axis=0) - truth) <= 3 * se)))


def summary(data: TopicTrials) -> pd.DataFrame:
    """One row per predictor: the mean's bias and criterion 1 with every topic and without
    the topic with the largest share of the bias."""
    rows = []
    for name in data.values:
        top = shares(data, name).iloc[0]
        every = np.ones(len(data.topics), dtype=bool)
        bias, ok = within(data, name, every)
        bias_rest, ok_rest = within(data, name, np.array(data.topics) != top["query_id"])
        rows.append({"predictor": name, "trials": len(data.values[name]), "bias": bias,
                     "within3se": ok, "top_topic": top["query_id"], "top_share": top["share"],
                     "bias_without": bias_rest, "within3se_without": ok_rest})
    return pd.DataFrame(rows)


SIGNED = ("bias", "share", "share_checked", "top_share", "bias_without")


def render_table(table: pd.DataFrame, title: str) -> Table:
    """``table`` as a rich table: text left, numbers right with 4 decimals (a sign on the
    biases and shares)."""
    out = Table(title=title)
    for column in table.columns:
        out.add_column(column, justify="right" if table[column].dtype.kind in "fi" else "left")
    for row in table.itertuples(index=False):
        out.add_row(*(f"{v:+.4f}" if c in SIGNED else f"{v:.4f}" if isinstance(v, float)
                      else str(v) for c, v in zip(table.columns, row, strict=True)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__ or "", trials=10)
    parser.add_argument("--method", default="stratified",
                        help="selection method, NAME or NAME:KEY=VALUE;KEY=VALUE "
                             "(default stratified)")
    parser.add_argument("--measure", default="AP",
                        help="the measure, with the ~ppi estimator's options if any "
                             "(default AP; e.g. 'AP(bias=taylor)')")
    parser.add_argument("--predictors", default="flip10,deep,noise",
                        help=f"comma-separated predictors (default flip10,deep,noise; any "
                             f"of {', '.join(PREDICTORS)})")
    parser.add_argument("--top", type=int, default=8,
                        help="topics listed per predictor, largest share first (default 8)")
    parser.add_argument("--output", help="also write every topic's row as CSV here")
    args = parser.parse_args(argv)
    console = Console(width=160)
    method, _, given = args.method.partition(":")
    names = [p.strip() for p in args.predictors.split(",") if p.strip()]
    start = time.perf_counter()

    def progress(done: int) -> None:
        if not sys.stdout.isatty():
            print(f"{done}/{args.trials} trials ({time.perf_counter() - start:.0f} s)",
                  file=sys.stderr, flush=True)

    try:
        if method not in METHODS:
            raise UsageError(f"unknown method {method!r} (one of {', '.join(METHODS)})")
        runs, qrels = read_round5(args.data)
        start = time.perf_counter()
        data = run(Pool.from_runs(runs, args.depth), qrels, method, parse_assignments(given),
                   args.rate, args.trials, args.measure, names, args.seed, progress)
    except UsageError as exc:
        console.print(f"[red]{exc}")
        return 1
    title = (f"TREC-COVID round 5, depth {args.depth}, {args.method} at rate {args.rate}, "
             f"{args.measure}~ppi, {args.trials} trials")
    console.print(render_table(summary(data), title))
    tables = []
    for name in names:
        table = shares(data, name)
        tables.append(table.assign(predictor=name))
        console.print(render_table(table.head(args.top), f"{name}: the topics' shares of the "
                                                          f"mean's bias"))
    console.print(f"{time.perf_counter() - start:.0f} s")
    if args.output:
        pd.concat(tables).to_csv(args.output, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
