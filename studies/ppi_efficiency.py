"""Prediction-powered estimates against Horvitz-Thompson, by simulation: for predictors of
controlled quality, how much narrower the intervals and how much smaller the errors, at the
same judging budget, and whether the estimates stay unbiased.

    python -m studies.ppi_efficiency [--trials N] [--rate R] [--method M]
        [--measures P@10,AP] [--predictors flip10,noise,...] [--guide NAME] [--data DIR]
        [--rates 0.03,0.05,0.1 --reference 0.1 --figure F.png] [--output F.csv]
        [--form ht|draws] [--raw DIR] [--from-raw DIR]

On TREC-COVID round 5 (the depth-100 pool of the 126 runs; the truth is each run's exact
measure with the pool judged in full from the round-5 qrels, unjudged documents not
relevant), each trial judges ``rate`` of every topic's pool with a selection method and
estimates every run's mean over topics with the method's ``~ht`` estimator, with ``~hh``
where ``~ppi`` takes the per-draw form (its estimate with lam = 0: the baseline power tuning
falls back to; the ratios are still against ``~ht``), and with ``~ppi`` under each
predictor of :mod:`sampleval.simulation.predictors` (made once, seeded: the predictions are
fixed, the samples vary). One row per (predictor, measure): rms error and bias of the mean
over topics (over trials and runs), mean 95% interval width, coverage of the truth, the share
of runs whose mean estimate over the trials lies within 3 standard errors of the truth, the
median over runs of those 3 standard errors (``detect3se``: about the smallest bias that
criterion detects; it shrinks as 1/sqrt(trials)), and the ratios of rms and width to
``~ht``'s. For contrast, the predictions alone (no sample):
their rms error, and the share of runs whose value lies within those 3 standard errors.
With ``--rates``, the same at each budget, and the budget ``~ppi`` needs to match ``~ht``'s
rms error at ``--reference`` (the judgments saved), drawn with ``--figure``. ``--raw DIR``
keeps every trial's estimates (rewritten after each trial), and ``--from-raw DIR`` makes the
tables and figure from them: a long run stopped early still gives the trials it finished.

A trial's cost is mostly the estimates: every predictor is estimated on one set of units per
topic (:func:`sampleval.estimation.engine.units.topic_datas`), and the predictions' frame totals are
made once for all trials (:class:`FixedPredictions`).
"""

from __future__ import annotations

import functools
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.sample import Sample
from sampleval.declare import parse_assignments
from sampleval.errors import UsageError
from sampleval.estimation.engine.corrections import CORRECTED, design_bias
from sampleval.estimation.engine.difference import predictions_alone
from sampleval.estimation.engine.units import (
    FORMS,
    FrameData,
    TopicData,
    chosen_form,
    frame_data,
    topic_datas,
)
from sampleval.estimation.engine.values import PPIResult, ppi_values
from sampleval.estimation.engine.views import MEAN_TOPIC, TopicView, summarise, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.setup import accepts
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.names import parse_measure, split_measures
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.selection.base import Oracle
from sampleval.simulation.estimates import mean_over_topics
from sampleval.simulation.predictors import PREDICTORS, make_predictions
from sampleval.simulation.truth import compute_truth
from studies._cli import read_round5, simulation_parser

__all__ = ["PREDICTORS", "make_predictions", "run"]

BASELINES = ("ht", "hh")
"""The estimates without predictions in the table: ``~ht``, and ``~hh`` over draws."""
COLUMNS = ["predictor", "measure", "trials", "rms", "bias", "width", "coverage", "within3se",
           "detect3se", "rms_ratio", "width_ratio", "alone_rms", "alone_within3se"]


def _means(run_names: tuple[str, ...], views: list[TopicView], measure: str,
           values: np.ndarray, variances: np.ndarray, bias: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Each run's mean over topics and the half-width of its 95% interval (bias-aware with
    ``bias``, as ``summarise`` says)."""
    rows = summarise(run_names, views, measure, values, variances, 0.95, bias)
    rows = rows[rows["query_id"] == MEAN_TOPIC].set_index("run").reindex(list(run_names))
    return rows["value"].to_numpy(), (rows["hi"] - rows["value"]).to_numpy()


class FixedPredictions:
    """Each predictor's values on each topic's frame and its :class:`FrameData` (the
    predictions' frame totals), made once and reused by every trial whose sample has the
    same frame (the designs here sample from the whole pool, so every trial's does)."""

    def __init__(self, predictions: dict[str, Predictions]) -> None:
        self.predictions = predictions
        self._by_topic: dict[str, tuple[np.ndarray, list[np.ndarray], list[FrameData]]] = {}

    def for_view(self, view: TopicView) -> tuple[list[np.ndarray], list[FrameData]]:
        topic, docnos = view.pool.topic, view.sample.docnos
        cached = self._by_topic.get(topic)
        if cached is None or not np.array_equal(cached[0], docnos):
            values = [p.for_topic(topic, docnos) for p in self.predictions.values()]
            cached = (docnos, values, [frame_data(view, v) for v in values])
            self._by_topic[topic] = cached
        return cached[1], cached[2]


def trial_estimates(pool: Pool, sample: Sample, measures: Sequence[str],
                    predictions: dict[str, Predictions] | FixedPredictions,
                    level: float = 1.0, alone: bool = True, form: str | None = None
                    ) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """For one sample: (estimator, measure) -> each run's mean over topics and the half-width
    of its 95% interval, for ``~ht`` (where the sample's design has inclusion probabilities),
    for ``~hh`` (where some measure's ``~ppi`` takes the per-draw form) and for ``~ppi`` in
    ``form`` (default: the measure's form option on the sample, :func:`chosen_form`)
    under each predictor (and, under ``alone:NAME`` when ``alone``, the predictions' own
    value with no sample: the same for every sample). Every predictor is estimated on one
    set of units per topic (:func:`topic_datas`)."""
    fixed = (predictions if isinstance(predictions, FixedPredictions)
             else FixedPredictions(predictions))
    names = pool.run_names
    views = topic_views(pool, sample)
    out = {}
    if accepts(FAMILIES["ht"], sample.design):
        for measure in measures:
            spec = parse_estimate(_for_family(measure, "ht"))
            rows = FAMILIES["ht"].compute(names, views, sample, [spec], level, 0.95)
            rows = rows[rows["query_id"] == MEAN_TOPIC].set_index("run").reindex(list(names))
            out[("ht", measure)] = (rows["value"].to_numpy(),
                                    (rows["hi"] - rows["value"]).to_numpy())
    per_form: dict[str, list[list[TopicData]]] = {}
    results: dict[tuple[object, ...], PPIResult] = {}
    for measure in measures:
        spec = parse_estimate(f"{measure}~ppi")
        chosen = form or chosen_form(sample, spec)
        if chosen == "draws" and ("hh", measure) not in out:
            rows = FAMILIES["hh"].compute(
                names, views, sample, [parse_estimate(_for_family(measure, "hh"))], level, 0.95)
            rows = rows[rows["query_id"] == MEAN_TOPIC].set_index("run").reindex(list(names))
            out[("hh", measure)] = (rows["value"].to_numpy(),
                                    (rows["hi"] - rows["value"]).to_numpy())
        if chosen not in per_form:
            per_form[chosen] = [topic_datas(view, sample, chosen, *fixed.for_view(view))
                                for view in views]
        # a ratio with and without the taylor correction: one computation (PPIResult)
        bias = (design_bias(spec, per_form[chosen][0][0].units)
                if spec.base in CORRECTED and views else None)
        corrects = bias in ("taylor", "jackknife", "taylor-jackknife")
        aware = spec.base == "AP" and corrects and spec.option("interval") == "bias-aware"
        kind = bias if bias in ("jackknife", "taylor-jackknife") else "taylor"
        shared = (chosen, spec.base, spec.cutoff, kind,
                  tuple(o for o in spec.options if o[0] not in ("bias", "weights")))
        for p, name in enumerate(fixed.predictions):
            topics = [datas[p] for datas in per_form[chosen]]
            if (*shared, p) not in results:
                results[(*shared, p)] = ppi_values(
                    spec, topics, level, spec.option("tuning"),
                    bias=kind if spec.base in CORRECTED else None)
            result = results[(*shared, p)]
            out[(name, measure)] = _means(names, views, spec.name, result.value if corrects
                                          else result.uncorrected, result.variance,
                                          result.remaining if aware else None)
            if alone:
                blind = np.array([predictions_alone(spec, level, t) for t in topics])
                out[(f"alone:{name}", measure)] = _means(names, views, spec.name, blind,
                                                         np.zeros_like(blind))
    return out


def _for_family(measure: str, family: str) -> str:
    """``measure`` as a name of ``family`` (``ht``, ``hh``), without the options that family
    does not take for it (``P(weights=draws)@10`` and ``Rprec(bias=none)`` are compared with
    ``P@10~ht`` and ``Rprec~ht``)."""
    match = re.fullmatch(r"([^()]*)\(([^()]*)\)(.*)", measure)
    if match is None:
        return f"{measure}~{family}"
    declared = {o for b in FAMILIES[family].bases if b.name == match[1] for o in b.options}
    kept = [o for o in match[2].split(",") if o.split("=")[0].strip().lower() in declared]
    options = f"({','.join(kept)})" if kept else ""
    return f"{match[1]}{options}{match[3]}~{family}"


Trials = dict[tuple[str, str], list[np.ndarray]]


class Setup(NamedTuple):
    """What every trial shares: each measure's truth (each run's mean over topics), the
    predictions (:class:`FixedPredictions`), the judging oracle and the selection method's
    ``predictions`` argument (empty without a guide)."""

    truth: dict[str, np.ndarray]
    fixed: FixedPredictions
    oracle: Oracle
    guiding: dict[str, Predictions]


def measured(entry: str) -> str:
    """The measure an entry of ``measures`` estimates: ``AP(bias=none)`` (``AP~ht(bias=none)``
    and ``AP~ppi(bias=none)``, recorded under that name) estimates AP."""
    return str(parse_measure(re.sub(r"\([^()]*\)", "", entry)))


def study_setup(pool: Pool, qrels: Qrels, measures: Sequence[str],
                predictor_names: Sequence[str], seed: int, guide: str | None) -> Setup:
    """The :class:`Setup` of :func:`run`'s arguments, made once for every rate."""
    plain = list(dict.fromkeys(measured(m) for m in measures))
    exact = compute_truth(pool, qrels, [parse_measure(m) for m in plain], [])
    truth = {m: mean_over_topics(exact.pool[measured(m)], exact.present) for m in measures}
    predictions = make_predictions(pool, qrels, predictor_names, seed)
    if guide is not None and guide not in predictions:
        raise UsageError(f"the guide {guide!r} is not among the predictors")
    guiding = {} if guide is None else {"predictions": predictions[guide]}
    return Setup(truth, FixedPredictions(predictions), qrels_oracle(qrels), guiding)


def run(pool: Pool, qrels: Qrels, method: str, params: dict[str, Any], rate: float,
        trials: int, measures: Sequence[str], predictor_names: Sequence[str],
        seed: int = 0, guide: str | None = None,
        progress: Callable[[int], None] | None = None, raw: Path | None = None,
        form: str | None = None, setup: Setup | None = None) -> pd.DataFrame:
    """The simulation of the module docstring on ``pool``'s topics: one row per (predictor,
    measure); trial i samples with seed ``seed + i``; ``guide``: the predictor (one of
    ``predictor_names``) whose predictions the selection method receives (``stratified``
    with ``size=residual``, ``importance`` with ``prior=predictions``); ``progress`` is
    called with the number of trials done; ``raw``: an .npz file rewritten after every
    trial with every estimate so far (:func:`load_raw`), so that a run cut short still
    yields its trials; when it exists, its trials are kept and the run goes on from there
    (the same arguments are assumed; a measure it lacks is computed for the trials already
    done, whose seeds give the same samples); ``setup``: :func:`study_setup`'s, if already made; ``form``: the ``~ppi`` form (default the sample's). Without ``~ht`` (an importance sample) there is no ``ht`` row and
    the ratios are NaN."""
    truth, fixed, oracle, guiding = setup or study_setup(pool, qrels, measures,
                                                         predictor_names, seed, guide)
    values: Trials = {}
    halves: Trials = {}
    if raw is not None and raw.exists():  # resume: the trials already done are kept
        _, values, halves, _ = load_raw(raw)
    done = {m: max((len(v) for k, v in values.items()
                    if k[1] == m and not k[0].startswith("alone:")), default=0)
            for m in measures}
    for trial in range(min(done.values(), default=trials), trials):
        todo = [m for m in measures if done[m] <= trial]  # a measure added on resuming
        selector = METHODS[method](pool, Budget(rate=rate), np.random.default_rng(
            seed + trial), **guiding, **params)
        sample = simulate(selector, oracle).sample()
        estimates = trial_estimates(pool, sample, todo, fixed, alone=trial == 0, form=form)
        for key, (value, half) in estimates.items():
            values.setdefault(key, []).append(value)
            halves.setdefault(key, []).append(half)
        if raw is not None:
            save_raw(raw, truth, values, halves)
        if progress is not None:
            progress(trial + 1)
    return summary(truth, values, halves, predictor_names)


def save_raw(path: Path, truth: dict[str, np.ndarray], values: Trials, halves: Trials
             ) -> None:
    """Every estimate so far (``[trials, runs]`` per estimator and measure) and the truth,
    as one .npz (written beside, then renamed: a reader never sees half a file)."""
    arrays = {f"truth|{m}": t for m, t in truth.items()}
    for key in values:
        arrays[f"{key[0]}|{key[1]}|value"] = np.array(values[key])
        arrays[f"{key[0]}|{key[1]}|half"] = np.array(halves[key])
    partial = path.with_name(path.name + ".partial.npz")
    np.savez(partial, **arrays)  # type: ignore[arg-type]
    partial.replace(path)


def load_raw(path: Path) -> tuple[dict[str, np.ndarray], Trials, Trials, list[str]]:
    """What :func:`save_raw` wrote: the truth, the values and half-widths, and the
    predictors (in the order they were run)."""
    truth: dict[str, np.ndarray] = {}
    values: Trials = {}
    halves: Trials = {}
    names: list[str] = []
    with np.load(path) as data:
        for name in data.files:
            parts = name.split("|")
            if parts[0] == "truth":
                truth[parts[1]] = data[name]
                continue
            (values if parts[2] == "value" else halves)[(parts[0], parts[1])] = list(data[name])
            if parts[0] not in (*BASELINES, *names) and not parts[0].startswith("alone:"):
                names.append(parts[0])
    return truth, values, halves, names


def summary(truth: dict[str, np.ndarray], values: Trials, halves: Trials,
            predictor_names: Sequence[str]) -> pd.DataFrame:
    """One row per (predictor, measure) over the trials in ``values`` (see the module
    docstring)."""
    rows = []
    baseline = "ht" if any(k[0] == "ht" for k in values) else None
    present = [b for b in BASELINES if any(k[0] == b for k in values)]
    for name in [*present, *predictor_names]:
        for measure, true in truth.items():
            if (name, measure) not in values:  # ~hh: only where ~ppi takes the draws
                continue
            est, half = np.array(values[(name, measure)]), np.array(halves[(name, measure)])
            trials = len(est)
            rms = float(np.sqrt(np.mean((est - true) ** 2)))
            ht_rms, ht_half = np.nan, np.nan
            if baseline:
                ht_rms = float(np.sqrt(np.mean((np.array(values[("ht", measure)]) - true) ** 2)))
                ht_half = float(np.mean(halves[("ht", measure)]))
            se = est.std(axis=0, ddof=1) / np.sqrt(trials) if trials > 1 else np.inf
            alone = (np.array(values[(f"alone:{name}", measure)])[0]
                     if name not in BASELINES else np.full(len(true), np.nan))
            rows.append({
                "predictor": name,
                "measure": f"{measure}~{name if name in BASELINES else 'ppi'}",
                "trials": trials, "rms": rms, "bias": float(np.mean(est - true)),
                "width": float(np.mean(2 * half)),
                "coverage": float(np.mean(np.abs(est - true) <= half)),
                "within3se": float(np.mean(np.abs(est.mean(axis=0) - true) <= 3 * se)),
                "detect3se": float(np.median(3 * se)),
                "rms_ratio": rms / ht_rms,
                "width_ratio": float(np.mean(half)) / ht_half,
                "alone_rms": float(np.sqrt(np.mean((alone - true) ** 2))),
                "alone_within3se": float(np.mean(np.abs(alone - true) <= 3 * se))
                if name not in BASELINES else np.nan,
            })
    return pd.DataFrame(rows, columns=COLUMNS)


def budget_sweep(pool: Pool, qrels: Qrels, method: str, params: dict[str, Any],
                 rates: Sequence[float], trials: int, measures: Sequence[str],
                 predictor_names: Sequence[str], seed: int = 0, guide: str | None = None,
                 progress: Callable[[float, int], None] | None = None,
                 raw: Path | None = None, form: str | None = None, chunk: int = 10
                 ) -> pd.DataFrame:
    """:func:`run` at each of ``rates`` (same seeds), one table with a ``rate`` column;
    ``raw``: a directory for each rate's estimates (``rate{RATE}.npz``, :func:`from_raw`),
    then filled ``chunk`` trials at a time at each rate in turn, so that a run stopped early
    has about as many trials at every rate (and is resumed where it stopped)."""
    steps = [trials] if raw is None else [*range(chunk, trials, chunk), trials]
    setup = study_setup(pool, qrels, measures, predictor_names, seed, guide)
    tables: dict[float, pd.DataFrame] = {}
    for upto in steps:
        for rate in rates:
            tick = None if progress is None else functools.partial(progress, rate)
            table = run(pool, qrels, method, params, rate, upto, measures, predictor_names,
                        seed, guide, tick, None if raw is None else raw / f"rate{rate}.npz",
                        form, setup)
            tables[rate] = table.assign(rate=rate)
    return pd.concat(tables.values(), ignore_index=True)


def from_raw(directory: Path) -> pd.DataFrame:
    """The sweep table of the trials saved in ``directory`` by :func:`budget_sweep` (as many
    as were done at each rate: see the ``trials`` column)."""
    tables = []
    for path in sorted(directory.glob("rate*.npz")):
        if path.name.endswith(".partial.npz"):
            continue
        truth, values, halves, names = load_raw(path)
        rate = float(path.name[len("rate"):-len(".npz")])
        tables.append(summary(truth, values, halves, names).assign(rate=rate))
    if not tables:
        raise UsageError(f"no rate*.npz in {directory}")
    return pd.concat(tables, ignore_index=True)


def matching_budget(sweep: pd.DataFrame, reference: float) -> pd.DataFrame:
    """For each (predictor, measure) of ``sweep``: the budget (share of each topic's pool) at
    which ``~ppi``'s rms error equals ``~ht``'s at ``reference``, by linear interpolation
    between the swept rates (the first crossing from above); ``saved`` = 1 - budget /
    reference. ``budget`` is the smallest rate swept, flagged ``at_most``, when ``~ppi`` is
    already as good there, and NaN when it is not as good at any rate swept."""
    rows = []
    for measure in sweep["measure"].str.split("~").str[0].unique():
        ht = sweep[(sweep["predictor"] == "ht") & (sweep["measure"] == f"{measure}~ht")]
        target = float(ht.loc[np.isclose(ht["rate"], reference), "rms"].iloc[0])
        ppi = sweep[sweep["measure"] == f"{measure}~ppi"]
        for name, curve in ppi.groupby("predictor", sort=False):
            curve = curve.sort_values("rate")
            rate, rms = curve["rate"].to_numpy(), curve["rms"].to_numpy()
            below = np.flatnonzero(rms <= target)
            budget, at_most = np.nan, False
            if len(below) and below[0] == 0:
                budget, at_most = float(rate[0]), True
            elif len(below):
                i = below[0]
                budget = float(np.interp(target, [rms[i], rms[i - 1]], [rate[i], rate[i - 1]]))
            rows.append({"predictor": name, "measure": measure, "ht_rms": target,
                         "budget": budget, "at_most": at_most,
                         "saved": 1.0 - budget / reference})
    return pd.DataFrame(rows)


def plot_sweep(sweep: pd.DataFrame, matches: pd.DataFrame, reference: float,
               path: Path, title: str) -> None:
    """One panel per measure: rms error of the mean over topics against the budget, ``~ht``
    and ``~ppi`` under each predictor, with ``~ht``'s rms at ``reference`` and the budget
    each predictor needs to match it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measures = list(matches["measure"].unique())
    fig, axes = plt.subplots(1, len(measures), figsize=(5.5 * len(measures), 4.2),
                             squeeze=False)
    for ax, measure in zip(axes[0], measures, strict=True):
        ht = sweep[sweep["measure"] == f"{measure}~ht"].sort_values("rate")
        ax.plot(100 * ht["rate"], ht["rms"], "k--o", label="~ht", linewidth=2)
        target = matches.loc[matches["measure"] == measure, "ht_rms"].iloc[0]
        ax.axhline(target, color="grey", linestyle=":", linewidth=1)
        ppi = sweep[sweep["measure"] == f"{measure}~ppi"]
        for name, curve in ppi.groupby("predictor", sort=False):
            curve = curve.sort_values("rate")
            line = ax.plot(100 * curve["rate"], curve["rms"], "-o", markersize=3,
                           label=f"~ppi, {name}")[0]
            match = matches[(matches["measure"] == measure) & (matches["predictor"] == name)]
            budget = float(match["budget"].iloc[0])
            if np.isfinite(budget):
                ax.plot([100 * budget], [target], marker="v", color=line.get_color(),
                        markersize=9)
        ax.set_xlabel("budget (% of each topic's pool judged)")
        ax.set_ylabel("rms error of the mean over topics")
        ax.set_title(f"{measure}: triangles = budget matching ~ht at {reference:.0%}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
                        help="comma-separated measures (default P@10,AP), each with the "
                             "estimators' options if any, recorded under that name: "
                             "'P@10,AP,AP(bias=none)'")
    parser.add_argument("--predictors", default=",".join(PREDICTORS),
                        help=f"comma-separated predictors (default all: "
                             f"{', '.join(PREDICTORS)})")
    parser.add_argument("--guide", help="the predictor whose predictions the selection "
                                        "method uses (e.g. --method stratified:size=residual "
                                        "--guide fused)")
    parser.add_argument("--rates", help="comma-separated budgets to sweep (e.g. "
                                        "0.03,0.05,0.07,0.1; overrides --rate), with the "
                                        "budget ~ppi needs to match ~ht at --reference")
    parser.add_argument("--reference", type=float, default=0.1,
                        help="with --rates: the budget of ~ht to match (default 0.1, one of "
                             "the rates)")
    parser.add_argument("--figure", type=Path, help="with --rates: write the rms-against-"
                                                    "budget figure here (PNG)")
    parser.add_argument("--output", type=Path, help="also write the table(s) as CSV here "
                                                    "(with --rates: OUTPUT and "
                                                    "OUTPUT.budget.csv)")
    parser.add_argument("--form", choices=FORMS, help="the ~ppi form (default the sample's: "
                                                      "ht, or draws for importance samples)")
    parser.add_argument("--raw", type=Path, help="a directory for every trial's estimates, "
                                                 "rewritten after each trial (rate{RATE}.npz)")
    parser.add_argument("--from-raw", type=Path, help="no simulation: the tables, budgets "
                                                      "and figure of the trials saved by --raw "
                                                      "in this directory")
    args = parser.parse_args(argv)
    console = Console(width=160)
    method, _, given = args.method.partition(":")
    measures = split_measures(args.measures)
    names = [p.strip() for p in args.predictors.split(",") if p.strip()]
    rates = ([float(r) for r in args.rates.split(",")] if args.rates else [args.rate])
    if args.rates and not any(np.isclose(r, args.reference) for r in rates):
        console.print(f"[red]--reference {args.reference} is not among --rates")
        return 1

    def progress(rate: float, done: int) -> None:
        if not sys.stdout.isatty():
            print(f"rate {rate}: {done}/{args.trials} trials "
                  f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)

    start = time.perf_counter()
    try:
        if args.from_raw:
            sweep = from_raw(args.from_raw)
        else:
            runs, qrels = read_round5(args.data)
            start = time.perf_counter()
            if args.raw:
                args.raw.mkdir(parents=True, exist_ok=True)
            sweep = budget_sweep(Pool.from_runs(runs, args.depth), qrels, method,
                                 parse_assignments(given), rates, args.trials, measures, names,
                                 args.seed, args.guide, progress, args.raw, args.form)
    except UsageError as exc:
        console.print(f"[red]{exc}")
        return 1
    seconds = time.perf_counter() - start
    # the raw files do not record the method or depth: name where the trials came from
    design = (f"the trials in {args.from_raw}" if args.from_raw
              else f"depth {args.depth}, {args.method}")
    for rate, table in sweep.groupby("rate", sort=False):
        console.print(render(table, f"TREC-COVID round 5, {design} at rate {rate}, "
                                    f"{table['trials'].max()} trials"))
    console.print(f"{seconds:.0f} s")
    if args.output:
        sweep.to_csv(args.output, index=False)
    if sweep["rate"].nunique() > 1:
        matches = matching_budget(sweep, args.reference)
        console.print(matches.to_string(index=False, float_format="{:.4f}".format))
        if args.output:
            matches.to_csv(f"{args.output}.budget.csv", index=False)
        if args.figure:
            plot_sweep(sweep, matches, args.reference, args.figure,
                       f"TREC-COVID round 5, {design}, "
                       f"{sweep['trials'].min()}-{sweep['trials'].max()} trials per budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
