"""How well ``sampleval audit`` finds a machine judge that favours a run, and how honest the
rank intervals are, by simulation (issue 31).

    python -m studies.audit_power [--collection round5|sparse|round5-rel2] [--trials 200]
        [--rate 0.05] [--method stratified|audit|audit-neyman|...] [--inflation 0.03] [--ppi]
        [--ppi-measure 'AP~ppi(bias=taylor)'] [--output F.csv] [--top-cost 1,3,10]

The truth is a collection judged in full (TREC-COVID round 5: the depth-``--depth`` pool of
its 126 runs with the round-5 qrels, unjudged = not relevant; ``round5-rel2``: the same with
grade 2 the only relevant one, :func:`studies._cli.read_collection`; or ``sparse``: a
synthetic collection of 40 runs and 50 topics with 1% of the documents relevant,
:func:`sampleval.datasets.synthetic.make_collection`). Two machine judges label the whole pool:

- ``perfect``: the true grades (every run's true bias is 0: any flag is a false alarm);
- ``circular``: the true grades, except that the favoured run's top k documents of every
  topic are called relevant (:func:`sampleval.simulation.predictors.circular`); the
  favoured run is the one at the median of the true AP leaderboard and k the smallest of
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50 that inflates its machine AP by at least
  ``--inflation`` relative to the other runs (exactly: the machine AP minus the true AP,
  less the mean of that over runs).

Each trial judges a ``--rate`` sample with ``--method`` (seed SEED + trial; a method that
reads predictions, such as ``audit``, gets the circular judge's labels) and audits both
judges on AP~ht (Holm, alpha 0.05) from two sample sides (:data:`PATHS`): the people's
labels alone (``plain``) and the machine's labels as control variates (``control``), each
with the t and the normal reference. Reported per side (columns ``{side}_{reference}_...``):
the power (the favoured run flagged; also under Benjamini-Hochberg, and its unadjusted test
at 0.05), the false alarms per run and family-wise (perfect judge: every run; circular
judge: the runs whose exact relative bias is below 0.005 in absolute value), the coverage
of the relative-bias intervals and their width (mean half-width / (1.96 x rms of the
relative bias's error)), the simultaneous coverage of the rank intervals (every run's true
rank inside its interval; tied true means: any of the tied ranks) and their mean width
against the full qrels' max-t intervals (:func:`~sampleval.estimation.ranks.
rank_intervals` of the exact per-topic AP), and the estimates' rms; with ``--ppi``,
whether the AP~ppi leaderboard with the circular judge's labels as predictions stays
unbiased (each run's mean error over the trials within 3 of its standard errors), and
whether a failure is bias or an understated standard error: per run the mean error, its
spread over the trials, the estimated standard error and the 95% intervals' coverage
(``--ppi-measure`` names the estimator, its options included, for the ppi side and the
leaderboard).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.estimation.audit import (
    NULL_RELATIVE,
    REFERENCES,
    HumanEstimates,
    controlled_estimates,
    human_estimates,
    judge_rows,
)
from sampleval.estimation.ranks import covers_ranks, rank_intervals
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.predictors import circular, median_run, pool_truth
from studies._cli import read_collection, read_round5, simulation_parser
from studies.compare_accuracy import exact_per_topic
from studies.compare_accuracy import pool_truth as judged_in_full

K_CHOICES = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50)
MEASURE = "AP~ht"
PPI = "AP~ppi"


COLLECTIONS = ("round5", "sparse", "round5-rel2")
"""The collections the audit studies simulate on (the module docstring)."""


def read_audit_collection(name: str, data: Path, seed: int) -> tuple[list[Run], Qrels]:
    """The runs and qrels of collection ``name`` (:data:`COLLECTIONS`)."""
    if name == "sparse":
        return sparse_collection(seed)
    return read_round5(data) if name == "round5" else read_collection(name, data)


def sparse_collection(seed: int) -> tuple[list[Run], Qrels]:
    """40 runs, 50 topics, 5000 documents of which about 1% relevant."""
    data = make_collection(np.random.default_rng(seed), n_topics=50, n_runs=40, n_docs=5000,
                           depth=100, pool_depth=100, rel_rate=0.01)
    return ([Run.from_frame(f, n) for n, f in data.runs.items()],
            Qrels.from_frame(data.qrels))


def machine_bias(predictions: pd.DataFrame, runs: Sequence[Run], exact: pd.Series,
                 depth: int) -> pd.Series:
    """Each run's exact machine AP (the predictions as qrels) minus its true AP."""
    qrels = Qrels.from_frame(predictions.rename(columns={"prediction": "relevance"}))
    rows = evaluate(qrels, runs, ["AP"], depth=depth)
    machine = rows[rows["query_id"] == "all"].set_index("run")["value"]
    return machine[exact.index] - exact


def choose_k(truth: pd.DataFrame, pool: Pool, runs: Sequence[Run], exact: pd.Series,
             favoured: str, inflation: float, depth: int) -> tuple[int, pd.Series]:
    """The smallest k of :data:`K_CHOICES` whose circular judge inflates ``favoured``'s AP by
    ``inflation`` relative to the others, and every run's exact relative bias under it."""
    relative = pd.Series(dtype=float)
    for k in K_CHOICES:
        bias = machine_bias(circular(truth, pool, favoured, k), runs, exact, depth)
        relative = bias - bias.mean()
        if relative[favoured] >= inflation:
            return k, relative
    return K_CHOICES[-1], relative


class CircularSetting(NamedTuple):
    """The collection judged in full and the circular judge of the module docstring."""

    pool: Pool
    truth_qrels: Qrels
    truth: pd.DataFrame  # every pooled document's true grade
    exact_topics: pd.DataFrame  # exact AP, topics x runs
    favoured: str
    k: int
    relative: pd.Series  # each run's exact relative bias under the circular judge


def circular_setting(runs: list[Run], qrels: Qrels, depth: int, inflation: float
                     ) -> CircularSetting:
    """The depth-``depth`` pool of ``runs`` judged in full by ``qrels``, the exact AP, the
    favoured run (the median of the true leaderboard) and the k that inflates it by
    ``inflation`` (:func:`choose_k`)."""
    pool = Pool.from_runs(runs, depth=depth, qrels=qrels)
    truth_qrels = judged_in_full(pool)
    truth = pool_truth(pool, truth_qrels)
    exact_topics = exact_per_topic(truth_qrels, runs, "AP", depth)
    exact = exact_topics.mean(axis=0)
    favoured = median_run(exact)
    k, relative = choose_k(truth, pool, runs, exact, favoured, inflation, depth)
    return CircularSetting(pool, truth_qrels, truth, exact_topics, favoured, k, relative)


PATHS = ("control", "plain", "ppi")
"""The audit's sample sides: the machine's labels as control variates
(:func:`~sampleval.estimation.audit.controlled_estimates` of AP~ht), the people's labels
alone (:func:`~sampleval.estimation.audit.human_estimates` of AP~ht, ``sampleval audit``'s
default) and the prediction-powered estimates with the judge's labels as predictions
(``human_estimates`` of AP~ppi, ``sampleval audit -m AP~ppi``)."""


def run_experiment(runs: Sequence[Run], qrels: Qrels, *, rate: float, depth: int,
                   trials: int, seed: int, inflation: float, ppi: bool,
                   method: str = "stratified", output: str | None = None,
                   paths: Sequence[str] = ("control", "plain"), ppi_measure: str = PPI
                   ) -> tuple[pd.DataFrame, dict[str, object]]:
    """Per trial one record (module docstring; written to ``output`` after each trial) for
    each sample side of ``paths`` (:data:`PATHS`; the ppi side and the leaderboard estimate
    ``ppi_measure``), and the setting (k, favoured run, reference rank-interval width,
    runs)."""

    runs = list(runs)
    pool, truth_qrels, truth, exact_topics, favoured, k, relative = circular_setting(
        runs, qrels, depth, inflation)
    exact = exact_topics.mean(axis=0)
    nulls = np.array([n != favoured and abs(relative[n]) < NULL_RELATIVE
                      for n in exact.index])
    judges = {"perfect": Predictions.from_frame(truth.rename(columns={"relevance":
                                                                      "prediction"})),
              "circular": Predictions.from_frame(circular(truth, pool, favoured, k))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = rank_intervals(exact_topics, method="max-t")  # as measured in docs
    oracle = qrels_oracle(truth_qrels)
    at = list(exact.index).index(favoured)
    print(f"favoured {favoured}, k {k}, inflation {relative[favoured]:.4f}, null runs "
          f"{int(nulls.sum())}, reference rank width "
          f"{float((reference['rank_hi'] - reference['rank_lo']).mean()):.3f}",
          file=sys.stderr, flush=True)
    true_relative = {"circular": relative.to_numpy(dtype=np.float64),
                     "perfect": np.zeros(len(relative))}
    records = []
    for trial in range(trials):
        started = time.time()
        given = ({"predictions": judges["circular"]} if METHODS[method].uses_predictions({})
                 else {})
        selector = METHODS[method](pool, Budget(rate=rate), np.random.default_rng(seed + trial),
                                   **given)
        sample = simulate(selector, oracle).sample()
        record: dict[str, object] = {"trial": trial}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sides = _sides(sample, runs, judges, paths, seed + trial + 1_000_003, ppi_measure)
            for path in paths:
                record.update(_path_record(path, sample, sides[path], judges, exact, at,
                                           nulls, true_relative))
            if ppi:  # the AP~ppi leaderboard, as the audit's ppi side has it when measured
                board = (sides["ppi"]["circular"] if "ppi" in sides else human_estimates(
                    sample, runs, ppi_measure, ci=0.95, predictions=judges["circular"]))
                record.update(_leaderboard_record(board, exact))
        record["seconds"] = time.time() - started
        records.append(record)
        if output:  # kept as it grows, so that a long run can be read before it ends
            pd.DataFrame(records).to_csv(output, index=False)
        print(f"trial {trial + 1}/{trials} done ({record['seconds']:.1f} s)",
              file=sys.stderr, flush=True)
    setting: dict[str, object] = {
        "method": method, "favoured": favoured, "k": k,
        "inflation": float(relative[favoured]), "runs": len(runs),
        "topics": len(exact_topics), "rate": rate, "favoured_index": at,
        "null_runs": int(nulls.sum()),
        "reference_width": float((reference["rank_hi"] - reference["rank_lo"]).mean())}
    return pd.DataFrame(records), setting


def _sides(sample: Sample, runs: list[Run], judges: dict[str, Predictions],
           paths: Sequence[str], seed: int, ppi_measure: str = PPI
           ) -> dict[str, dict[str, HumanEstimates]]:
    """Per sample side of ``paths`` and per judge, the estimates the audit compares with
    (the ppi side's of ``ppi_measure``), each carrying the judge's exact per-topic machine
    measures (computed once per judge); every side's rank intervals draw from a generator
    seeded ``seed``."""
    from sampleval.estimation.audit import machine_per_topic

    def rng() -> np.random.Generator:
        return np.random.default_rng(seed)

    plain = human_estimates(sample, runs, MEASURE, ci=0.95, rng=rng())
    machine = {name: machine_per_topic(sample, judge, plain.pool, plain.spec, plain.topics, 1)
               for name, judge in judges.items()}
    sides: dict[str, dict[str, HumanEstimates]] = {}
    for path in paths:
        if path == "control":
            sides[path] = {name: controlled_estimates(sample, runs, MEASURE, judge, rng=rng())
                           for name, judge in judges.items()}
            continue
        sides[path] = {name: dataclasses.replace(
            plain if path == "plain" else human_estimates(sample, runs, ppi_measure, ci=0.95,
                                                          rng=rng(), predictions=judge),
            judge=judge, machine=machine[name]) for name, judge in judges.items()}
    return sides


def _leaderboard_record(board: HumanEstimates, exact: pd.Series) -> dict[str, float]:
    """The prediction-powered leaderboard's figures of one trial, per run j in ``exact``'s
    order: the error of its mean (``ppi_error_j``), its estimated standard error
    (``ppi_se_j``, of the mean's variance) and its 95% interval's half-width
    (``ppi_half_j``, bias-aware where the estimator's interval is)."""
    order = [list(board.pool.run_names).index(name) for name in exact.index]
    errors = board.estimate[order] - exact.to_numpy(dtype=np.float64)
    se = np.sqrt(np.maximum(np.diagonal(board.covariance), 0.0))[order]
    out: dict[str, float] = {}
    for j, (error, s, half) in enumerate(zip(errors, se, board.half[order], strict=True)):
        out.update({f"ppi_error_{j}": float(error), f"ppi_se_{j}": float(s),
                    f"ppi_half_{j}": float(half)})
    return out


def _path_record(path: str, sample: Sample, sides: dict[str, HumanEstimates],
                 judges: dict[str, Predictions], exact: pd.Series, at: int,
                 nulls: np.ndarray, true_relative: dict[str, np.ndarray]
                 ) -> dict[str, object]:
    """One trial's figures for one sample side (``path``): per reference (t, normal) the
    power, false alarms per run and family-wise (perfect judge: any run; circular judge:
    any run whose exact relative bias is below 0.005), BH's power and false alarms, the
    relative-bias intervals' coverage, half-widths and errors, the rank intervals'
    simultaneous coverage and width, and the estimates' squared error."""
    out: dict[str, object] = {}
    order = list(exact.index)
    rows = {}
    for reference in REFERENCES:
        rows = {name: judge_rows(sample, sides[name], judge, reference=reference
                                 ).set_index("run").loc[order]
                for name, judge in judges.items()}
        circ, perfect = rows["circular"], rows["perfect"]
        flagged = circ["flagged"].to_numpy(dtype=bool)
        fair = perfect["flagged"].to_numpy(dtype=bool)
        tag = f"{path}_{reference}"
        out[f"{tag}_power"] = bool(flagged[at])
        out[f"{tag}_power_unadjusted"] = bool(circ["p"].to_numpy()[at] < 0.05)
        out[f"{tag}_false_alarm_perfect"] = float(fair.mean())
        out[f"{tag}_any_false_alarm_perfect"] = bool(fair.any())
        out[f"{tag}_false_alarm_circular"] = float(flagged[nulls].mean())
        out[f"{tag}_any_false_alarm_circular"] = bool(flagged[nulls].any())
        for name in judges:
            r = rows[name]
            lo, hi = r["relative_lo"].to_numpy(), r["relative_hi"].to_numpy()
            truth = true_relative[name]
            out[f"{tag}_{name}_relative_coverage"] = float(((lo <= truth) & (truth <= hi)
                                                            ).mean())
            out[f"{tag}_{name}_relative_half"] = float(((hi - lo) / 2).mean())
            out[f"{tag}_{name}_relative_sq_error"] = float(
                ((r["relative"].to_numpy() - truth) ** 2).mean())
    bh = judge_rows(sample, sides["circular"], judges["circular"], correction="bh"
                    ).set_index("run").loc[order]
    out[f"{path}_bh_power"] = bool(bh["flagged"].to_numpy()[at])
    out[f"{path}_bh_false_alarm_circular"] = float(bh["flagged"].to_numpy()[nulls].mean())
    circ = rows["circular"]
    lo, hi = circ["rank_lo"].to_numpy(), circ["rank_hi"].to_numpy()
    truth = exact.to_numpy(dtype=np.float64)
    out[f"{path}_rank_coverage"] = covers_ranks(lo, hi, truth)
    out[f"{path}_rank_width"] = float((hi - lo).mean())
    out[f"{path}_estimate_sq_error"] = float(((circ["estimate"].to_numpy() - truth) ** 2
                                              ).mean())
    out[f"{path}_favoured_relative"] = float(circ["relative"].to_numpy()[at])
    return out


LEADERBOARD = ("ppi_error_", "ppi_se_", "ppi_half_")
"""The per-run columns of the AP~ppi leaderboard (:func:`_leaderboard_record`)."""

POWER = 0.8
"""The power the issue's target asks for (:func:`attainable`)."""


def critical(runs: int, topics: int, alpha: float = 0.05) -> float:
    """The critical value of Holm's first test over ``runs`` runs: two-sided at alpha/R on t
    with T - 1 degrees of freedom (T = ``topics``)."""
    from scipy import stats

    return float(stats.t(max(topics - 1, 1)).ppf(1 - alpha / (2 * runs)))


def attainable(inflation: float, sd: float, runs: int, topics: int, rate: float,
               alpha: float = 0.05) -> tuple[float, float]:
    """What a sample can detect, by the normal approximation: the favoured run is the one
    Holm tests first, at alpha/R two-sided on t with T - 1 degrees of freedom, so its power
    reaches :data:`POWER` when ``inflation`` / sd >= c + z_POWER, c that critical value. The
    standard deviation that needs, and the sample share q that reaches it if the variance
    scales as Horvitz-Thompson's with the share, (1 - q)/q (finite-population correction
    over the sampling fraction, Cochran 1977, eq. 2.19): sd(q)^2 = sd^2 (1 - q)/q x
    rate/(1 - rate), ``sd`` measured at ``rate``."""
    from scipy import stats

    needed = inflation / (critical(runs, topics, alpha) + float(stats.norm.ppf(POWER)))
    odds = (1 - rate) / rate * (needed / sd) ** 2 if sd > 0 else np.inf
    return needed, 1.0 / (1.0 + odds)


def top_cost(pool: Pool, ks: Sequence[int]) -> pd.DataFrame:
    """What judging every run's top k documents of every topic with certainty costs: per k,
    the mean, least and most distinct documents per topic (the union of the runs' top k) and
    their share of the pool, beside the pool's mean size per topic (``pool_per_topic``)."""
    from sampleval.core.pool import PAD

    sizes = np.array([tp.size for tp in pool], dtype=np.float64)
    rows = []
    for k in ks:
        union = np.array([len(np.unique(top[top != PAD])) for tp in pool
                          for top in [tp.ranking[:, :k]]], dtype=np.float64)
        rows.append({"k": k, "per_topic": union.mean(), "least": union.min(),
                     "most": union.max(), "share": union.sum() / sizes.sum(),
                     "pool_per_topic": sizes.mean()})
    return pd.DataFrame(rows)


def summarise(records: pd.DataFrame, setting: dict[str, object]) -> pd.DataFrame:
    """One row: the targets' figures with their Monte Carlo standard errors; per sample side
    and judge the relative-bias intervals' width, mean half-width / (1.96 rms of the
    relative bias's error), and the estimates' rms; per sample side the favoured run's
    relative bias over the trials (mean, sd) and what it lets a sample detect
    (:func:`attainable`: ``needed_sd``, ``share_for_power``); with the AP~ppi leaderboard's
    errors, :func:`leaderboard_summary`."""
    n = len(records)
    row: dict[str, object] = {"trials": n, **setting}
    for column in records.columns:
        if column in ("trial", "seconds") or column.startswith(LEADERBOARD) or \
                column.endswith(("_half", "_sq_error", "_rank_width", "_favoured_relative")):
            continue
        values = records[column].astype(float)
        row[column] = float(values.mean())
        row[f"{column}_se"] = float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    for column in records.columns:
        if column.endswith("_half"):
            rms = float(np.sqrt(records[column.replace("_half", "_sq_error")].mean()))
            half = float(records[column].mean())
            row[column.replace("_half", "_width")] = half / (1.96 * rms) if rms > 0 else (
                np.nan if half == 0 else np.inf)
    for path in [p for p in PATHS if f"{p}_rank_width" in records]:
        width = float(records[f"{path}_rank_width"].mean())
        row[f"{path}_rank_width"] = width
        row[f"{path}_width_ratio"] = width / float(str(setting["reference_width"]))
        row[f"{path}_mean_favoured_relative"] = float(records[f"{path}_favoured_relative"]
                                                      .mean())
        row[f"{path}_estimate_rms"] = float(np.sqrt(records[f"{path}_estimate_sq_error"]
                                                    .mean()))
        sd = float(records[f"{path}_favoured_relative"].std(ddof=1)) if n > 1 else np.nan
        row[f"{path}_favoured_relative_sd"] = sd
        needed, share = attainable(float(str(setting["inflation"])), sd,
                                   int(str(setting["runs"])), int(str(setting["topics"])),
                                   float(str(setting["rate"])))
        row["needed_sd"] = needed
        row[f"{path}_share_for_power"] = share
    row.update(leaderboard_summary(records, int(str(setting["favoured_index"]))))
    return pd.DataFrame([row])


def _per_run(records: pd.DataFrame, prefix: str) -> np.ndarray:
    """The per-run columns ``{prefix}{j}`` as ``[trials, runs]``, in run order j."""
    columns = sorted((c for c in records.columns if c.startswith(prefix)),
                     key=lambda c: int(c[len(prefix):]))
    return records[columns].to_numpy(dtype=np.float64)


def leaderboard_summary(records: pd.DataFrame, favoured: int) -> dict[str, float]:
    """The AP~ppi leaderboard's figures over the trials (:func:`_leaderboard_record`'s
    columns): the share of runs whose mean error is within 3 Monte Carlo standard errors
    of 0 (``ppi_within_3se``) and, to tell bias from an understated standard error, over
    the other runs (all but the favoured one) the mean error (``ppi_bias``), the mean of
    their |mean error| / Monte Carlo standard error (``ppi_bias_z``), the mean spread of
    the errors over the trials (``ppi_sd``), the mean estimated standard error
    (``ppi_se``) and the 95% intervals' coverage (``ppi_coverage``); the favoured run's
    mean error, spread and coverage (``ppi_favoured_*``)."""
    errors = _per_run(records, "ppi_error_")
    n = len(errors)
    if not errors.size or n < 2:
        return {}
    mean, sd = errors.mean(axis=0), errors.std(axis=0, ddof=1)
    mc = sd / np.sqrt(n)
    others = np.arange(errors.shape[1]) != favoured
    out = {"ppi_within_3se": float(np.mean(np.abs(mean) <= 3 * mc)),
           "ppi_favoured_bias": float(mean[favoured]),
           "ppi_favoured_sd": float(sd[favoured]),
           "ppi_bias": float(mean[others].mean()),
           "ppi_bias_z": float(np.mean(np.abs(mean[others]) / np.where(
               mc[others] > 0, mc[others], np.inf))),
           "ppi_sd": float(sd[others].mean())}
    if "ppi_se_0" in records:
        half = _per_run(records, "ppi_half_")
        covered = np.abs(errors) <= half
        out.update({"ppi_se": float(_per_run(records, "ppi_se_")[:, others].mean()),
                    "ppi_coverage": float(covered[:, others].mean()),
                    "ppi_favoured_coverage": float(covered[:, favoured].mean())})
    return out


def parse_paths(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """``--paths``' comma-separated sample sides, each one of :data:`PATHS` (else the
    parser's one-line error)."""
    paths = [p.strip() for p in text.split(",") if p.strip()]
    if not paths or set(paths) - set(PATHS):
        parser.error(f"--paths: give some of {', '.join(PATHS)}, not {text!r}")
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__ or "", trials=200)
    parser.set_defaults(rate=0.05)
    parser.add_argument("--collection", choices=COLLECTIONS, default="round5",
                        help="round5, round5-rel2 (grade 2 the only relevant one) or sparse "
                             "(synthetic, seeded by --seed); default round5")
    parser.add_argument("--inflation", type=float, default=0.03,
                        help="the circular judge's relative inflation of the favoured run's "
                             "AP to reach (default 0.03)")
    parser.add_argument("--ppi", action="store_true",
                        help="also check that AP~ppi with the circular judge stays unbiased")
    parser.add_argument("--ppi-measure", default=PPI, metavar="MEASURE",
                        help="the prediction-powered estimator of the ppi side and of --ppi's "
                             "leaderboard, options included (default AP~ppi; for example "
                             "'AP~ppi(bias=taylor)')")
    parser.add_argument("--method", choices=sorted(METHODS), default="stratified",
                        metavar="METHOD",
                        help="the selection method of the human sample (default stratified)")
    parser.add_argument("--paths", default="control,plain", metavar="PATH[,PATH]",
                        help="the sample sides audited, comma-separated, of control (AP~ht "
                             "with the machine's labels as control variates), plain (AP~ht "
                             "from the people's labels, the command's default) and ppi "
                             "(AP~ppi with the judge's labels as predictions); default "
                             "control,plain")
    parser.add_argument("--output", help="write the per-trial records to this CSV")
    parser.add_argument("--top-cost", metavar="K[,K]",
                        help="print instead what judging every run's top K documents with "
                             "certainty costs per topic, against the pool (no simulation)")
    args = parser.parse_args(argv)
    paths = parse_paths(parser, args.paths)
    runs, qrels = read_audit_collection(args.collection, args.data, args.seed)
    if args.top_cost:
        ks = [int(k) for k in args.top_cost.split(",")]
        cost = top_cost(Pool.from_runs(runs, depth=args.depth, qrels=qrels), ks)
        sys.stdout.write(cost.to_string(index=False) + "\n")
        return 0
    records, setting = run_experiment(runs, qrels, rate=args.rate, depth=args.depth,
                                      trials=args.trials, seed=args.seed,
                                      inflation=args.inflation, ppi=args.ppi,
                                      method=args.method, output=args.output, paths=paths,
                                      ppi_measure=args.ppi_measure)
    summary = summarise(records, setting)
    sys.stdout.write(summary.T.to_string(header=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
