"""How often the 95% intervals of xinfAP, infAP and AP~ht cover the truth, per variance
variant (issue 9, item 2): judge samples of the depth-k pool of TREC-COVID round 5 from the
round-5 qrels, estimate every run's AP per topic and its mean over topics, and count the
intervals that contain the exact AP (the pool judged in full).

    python -m studies.interval_coverage [--trials N] [--rate R] [--designs ...]

Designs: ``strata`` (best rank 1-10 judged fully, 11-30 at 30%, 31 and deeper at 10%, the
shape of NIST's sampled pools), ``uniform`` (a simple random sample of ``--rate`` of each
topic's pool, infAP's design), ``active`` (Li & Kanoulas's active sampling at ``--rate``,
its defaults; ``active:uniform=0``, the paper's, without the uniform share) and
``stratified`` (the ``stratified`` method, AP-prior strata, at ``--rate``); these two take
parameters as ``sampleval simulate --methods`` does. Each trial draws one sample per design
(seed SEED + trial). ``--predictor NAME`` gives the ``~ppi`` measures the predictions of one
of :data:`studies.ppi_efficiency.PREDICTORS` (made once, seeded).

Each row also diagnoses the miss of the mean's intervals (:func:`diagnose`): how far the
bias shifts the estimates, in standard deviations, and how the estimated standard error
compares with the true spread over the trials, with the Monte Carlo standard error of the
mean's coverage (clustered by trial: the runs' intervals share each trial's sample).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sampleval.core.design import STRATIFIED
from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.sample import Sample
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.names import parse_measure
from sampleval.selection import Budget, qrels_oracle, simulate
from sampleval.simulation.estimates import mean_over_topics
from sampleval.simulation.grid import parse_method
from sampleval.simulation.truth import compute_truth
from studies._cli import COLLECTIONS, read_collection, simulation_parser
from studies.ppi_efficiency import PREDICTORS, make_predictions

MEASURES = {
    "strata": ("xinfAP(variance=jackknife)", "xinfAP(variance=appendix)",
               "xinfAP(variance=linear)", "AP~ht(variance=jackknife)",
               "AP~ht(variance=linear)"),
    "uniform": ("infAP(variance=jackknife)", "infAP(variance=appendix)",
                "infAP(variance=linear)", "xinfAP(variance=jackknife)",
                "AP~ht(variance=jackknife)", "AP~ht(few=none)", "AP~ht(variance=linear)"),
    "active": ("AP~ht(variance=jackknife)", "AP~ht(variance=linear)",
               "AP~ht(ap=paper,variance=jackknife)", "AP~ht(ap=paper,variance=linear)"),
    "stratified": ("AP~ht", "AP~ht(bias=jackknife)",
                   "AP~ht(bias=taylor-jackknife)", "xinfAP", "xinfAP(bias=jackknife)"),
}
STRATA = ((1, 10, 1.0), (11, 30, 0.3), (31, None, 0.1))
ROUNDING = 1e-12  # how far a truth may lie outside an interval and still be covered


def fixed_rate_sample(pool: Pool, rng: np.random.Generator,
                      strata: Sequence[tuple[int, int | None, float]]) -> Sample:
    """A stratified sample by best rank at fixed rates (round(rate N_h), at least 1), judged
    from the pool's labels (unjudged: not relevant)."""
    parts = []
    for tp in pool:
        best = tp.best_rank()
        truth = np.nan_to_num(tp.labels, nan=0.0)
        labels = np.full(tp.size, np.nan)
        names = np.empty(tp.size, dtype=object)
        for lo, hi, rate in strata:
            members = np.flatnonzero((best >= lo) & (best <= (hi or best.max(initial=0))))
            names[members] = f"{lo}-{hi or ''}"
            if len(members):
                take = min(len(members), max(1, round(rate * len(members))))
                chosen = rng.choice(members, size=take, replace=False)
                labels[chosen] = truth[chosen]
        parts.append(pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos[tp.doc_ids],
                                   "relevance": labels, "stratum": names}))
    frame = pd.concat(parts, ignore_index=True)
    groups = frame.groupby(["query_id", "stratum"])["relevance"]
    frame["inclusion"] = groups.transform("count") / groups.transform("size")
    return Sample(STRATIFIED, frame)


def draw(method: str, pool: Pool, qrels: Qrels, rate: float, seed: int) -> Sample:
    """One sample by ``method`` (one of ``--designs``: module docstring)."""
    rng = np.random.default_rng(seed)
    if method == "strata":
        return fixed_rate_sample(pool, rng, STRATA)
    if method == "uniform":
        return fixed_rate_sample(pool, rng, ((1, None, rate),))
    selector = parse_method(method).make(pool, Budget(rate=rate), rng)
    return simulate(selector, qrels_oracle(qrels)).sample()


def truth(pool: Pool, qrels: Qrels, measure: str) -> pd.DataFrame:
    """Exact ``measure`` of every run and topic with the whole pool judged (the truth of
    ``sampleval simulate``, :mod:`.truth`): ``[topics, runs]``, each run's mean over the
    topics it retrieved for as row ``all``."""
    exact = compute_truth(pool, qrels, [parse_measure(measure)], [])
    values = exact.pool[str(parse_measure(measure))]
    mean = mean_over_topics(values, exact.present)
    return pd.DataFrame(np.vstack([values, mean]), index=[*exact.topics, MEAN_TOPIC],
                        columns=list(exact.run_names))


def coverage(designs: Sequence[str], pool32: Pool, pool64: Pool, qrels: Qrels, rate: float,
             trials: int, seed: int, measures: Sequence[str] | None = None,
             predictions: Predictions | None = None,
             raw: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """One row per design and measure (``measures``, default :data:`MEASURES`): the share of
    intervals covering the truth per (topic, run) and for each run's mean, the mean
    half-widths, ``width`` (the mean's mean half-width over 1.96 times its rms error: 1
    when calibrated), the bias of the mean and its rms error, and the diagnosis of the mean's
    miss (:func:`diagnose`); ``predictions`` go to the families that need them. ``raw``, if
    given, receives every trial's rows (``trial, design, measure, query_id, run, value,
    truth, lo, hi`` and ``relevant``, the topic's judged relevant documents)."""
    targets: dict[str, pd.DataFrame] = {}
    runs = pool32.run_names
    tally: dict[tuple[str, str], list[np.ndarray]] = {}
    means: dict[tuple[str, str], list[np.ndarray]] = {}
    for trial in range(trials):
        for design in designs:
            sample = draw(design, pool32, qrels, rate, seed + trial)
            relevant = sample.judged().assign(rel=lambda f: f["relevance"] >= 1).groupby(
                "query_id")["rel"].sum()
            for name in measures or MEASURES[design.partition(":")[0]]:
                spec = parse_estimate(name)
                exact = spec.base + ("" if spec.cutoff is None else f"@{spec.cutoff}")
                if exact not in targets:
                    targets[exact] = truth(pool32, qrels, exact)
                target = targets[exact]
                family = FAMILIES[spec.family]
                pool = pool64 if family.score_type == np.float64 else pool32
                views = topic_views(pool, sample,
                                    predictions if family.needs_predictions else None)
                rows = family.compute(runs, views, sample, [spec], 1.0, 0.95)
                where = pd.MultiIndex.from_frame(rows[["query_id", "run"]])
                rows = rows.assign(truth=target.stack().reindex(where).to_numpy())
                if raw is not None:
                    raw.append(rows.drop(columns="measure").assign(
                        trial=trial, design=design, measure=name,
                        relevant=rows["query_id"].map(relevant).fillna(0).astype(np.int64)))
                # an interval of no width around an estimate known exactly (the run's
                # documents all judged) covers a truth equal to it up to rounding
                covered = ((rows["lo"] - ROUNDING <= rows["truth"])
                           & (rows["truth"] <= rows["hi"] + ROUNDING))
                mean = rows["query_id"] == MEAN_TOPIC
                tally.setdefault((design, name), []).append(np.array([
                    covered[~mean].mean(), covered[mean].mean(),
                    ((rows["hi"] - rows["lo"]) / 2)[~mean].mean(),
                    ((rows["hi"] - rows["lo"]) / 2)[mean].mean(),
                    (rows["value"] - rows["truth"])[mean].mean(),
                    ((rows["value"] - rows["truth"])[mean] ** 2).mean()]))
                overall = rows[mean].set_index("run").reindex(list(runs))
                means.setdefault((design, name), []).append(np.stack([
                    overall["value"].to_numpy(), overall["truth"].to_numpy(),
                    (overall["value"] - overall["lo"]).to_numpy(),
                    (overall["hi"] - overall["value"]).to_numpy()]))
        print(f"trial {trial + 1}/{trials} done", file=sys.stderr, flush=True)
    out = [{"design": d, "measure": m, **dict(zip(
        ("cover_topic", "cover_mean", "half_topic", "half_mean", "bias_mean", "rms_mean"),
        np.mean(values, axis=0), strict=True)), **diagnose(np.stack(means[d, m]))}
        for (d, m), values in tally.items()]
    table = pd.DataFrame(out)
    table["rms_mean"] = np.sqrt(table["rms_mean"])
    table.insert(6, "width", table["half_mean"] / (1.959963984540054 * table["rms_mean"]))
    return table


LOW_AP = 0.02
"""The true mean below which a run counts as low-AP (:func:`diagnose`'s ``cover_low_ap``)."""


def _low_ap(covered: np.ndarray, low: np.ndarray) -> dict[str, float]:
    """The coverage ``covered`` ``[trials, runs]`` over the runs ``low`` and its standard
    error clustered by trial."""
    if not low.any():
        return {"cover_low_ap": float("nan"), "cover_low_ap_se": float("nan")}
    per_trial = covered[:, low].mean(axis=1)
    return {"cover_low_ap": float(per_trial.mean()),
            "cover_low_ap_se": float(per_trial.std(ddof=1) / np.sqrt(len(per_trial)))
            if len(per_trial) > 1 else float("nan")}


def diagnose(trials: np.ndarray, z: float = 1.959963984540054) -> dict[str, float]:
    """How much of the mean's coverage miss is bias and how much is too small a variance
    estimate, from ``trials`` ``[trials, 3, runs]`` (each run's estimated mean over topics,
    its truth and its interval's half-width, per trial) or ``[trials, 4, runs]`` (the
    estimate, the truth, and the interval's lower and upper half-widths, for intervals
    widened on one side: ``few=completed``; "half-width" below is their mean). Per run r, over the trials: the
    bias b_r (mean estimate - truth), the spread sd_r of the estimates, and the mean
    standard error se_r (half-width / z). Columns, averaged over the runs with sd_r > 0:
    ``bias_sd`` the root mean square of b_r/sd_r; ``se_sd`` the mean of se_r/sd_r; and the
    coverage a normal estimate would have with only one of the two faults:
    ``cover_if_unbiased`` = P(|Z| < z se_r/sd_r) (the variance estimate's share of the miss)
    and ``cover_if_true_se`` = P(|Z + b_r/sd_r| < z) (the bias's share). Over all runs:
    ``cover_mean_se``, the Monte Carlo standard error of the mean's coverage clustered by
    trial (the standard deviation over the trials of each trial's share of runs covered, over
    sqrt(trials): one trial's intervals share its sample, so they are not independent), and
    ``cover_low_se``, the coverage where a run's half-width is below its median over the
    trials (under the overall coverage where small standard errors come with large errors);
    ``cover_low_ap`` and its clustered standard error ``cover_low_ap_se``, the mean's coverage
    over the runs whose true mean is below :data:`LOW_AP` (NaN where there is none): where
    relevant documents are rare, the runs that find few of them are the ones missed."""
    from scipy.stats import norm

    value, target = trials[:, 0], trials[:, 1]
    down, up = (trials[:, 2], trials[:, 3]) if trials.shape[1] > 3 else (trials[:, 2],) * 2
    half = (down + up) / 2
    covered = (value - target <= down + ROUNDING) & (target - value <= up + ROUNDING)
    low = half < np.median(half, axis=0)
    per_trial = covered.mean(axis=1)
    spread = {"cover_mean_se": float(per_trial.std(ddof=1) / np.sqrt(len(per_trial)))
              if len(per_trial) > 1 else float("nan"),
              "cover_low_se": float(covered[low].mean()) if low.any() else float("nan"),
              **_low_ap(covered, target.mean(axis=0) < LOW_AP)}
    sd = value.std(axis=0, ddof=1) if len(value) > 1 else np.zeros(value.shape[1])
    usable = sd > 0
    if not usable.any():
        return {**dict.fromkeys(("bias_sd", "se_sd", "cover_if_unbiased", "cover_if_true_se"),
                                float("nan")), **spread}
    shift = (value.mean(axis=0) - target.mean(axis=0))[usable] / sd[usable]
    ratio = (half.mean(axis=0) / z)[usable] / sd[usable]
    return {"bias_sd": float(np.sqrt(np.mean(shift**2))), "se_sd": float(np.mean(ratio)),
            "cover_if_unbiased": float(np.mean(2 * norm.cdf(z * ratio) - 1)),
            "cover_if_true_se": float(np.mean(norm.cdf(z - shift) - norm.cdf(-z - shift))),
            **spread}


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=100)
    parser.add_argument("--designs", default="strata,uniform,active",
                        help="comma-separated designs among strata, uniform, active, "
                             "stratified (default strata,uniform,active); active and "
                             "stratified take parameters as in 'sampleval simulate "
                             "--methods', separated by ';': 'active:uniform=0' is the paper's")
    parser.add_argument("--measures", help="estimated measures to check on every design, "
                        "separated by ';' (default: each design's own list)")
    parser.add_argument("--predictor", help="predictions for the ~ppi measures: one of "
                        f"{', '.join(PREDICTORS)}")
    parser.add_argument("--collection", default="round5", choices=COLLECTIONS,
                        help="TREC-COVID round5 or round1 (from --data; -rel2: grade 2 the "
                             "only relevant grade), cranfield (16 runs of the project's "
                             "retrieval models) or synthetic (seeded, sparse); default round5")
    parser.add_argument("--raw", type=Path, help="also write every trial's estimates and "
                        "intervals, per topic and run, to this parquet file")
    args = parser.parse_args(argv)
    if args.predictor is not None and args.predictor not in PREDICTORS:
        parser.error(f"unknown predictor {args.predictor} (one of {', '.join(PREDICTORS)})")
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    unknown = [d for d in designs if d.partition(":")[0] not in MEASURES]
    if unknown:
        parser.error(f"unknown design(s) {', '.join(unknown)} (one of {', '.join(MEASURES)})")
    runs, qrels = read_collection(args.collection, args.data, args.depth)
    start = time.perf_counter()
    pool32 = Pool.from_runs(runs, depth=args.depth, qrels=qrels)
    pool64 = Pool.from_runs(runs, depth=args.depth, qrels=qrels, score_type=np.float64)
    measures = [m.strip() for m in args.measures.split(";")] if args.measures else None
    predictions = None if args.predictor is None else make_predictions(
        pool32, qrels, [args.predictor], args.seed)[args.predictor]
    raw: list[pd.DataFrame] | None = [] if args.raw else None
    table = coverage(designs, pool32, pool64, qrels, args.rate, args.trials, args.seed,
                     measures, predictions, raw)
    if args.raw and raw:
        pd.concat(raw, ignore_index=True).to_parquet(args.raw)
    print(f"{args.collection}: {len(runs)} runs, {len(pool32.topics)} topics, depth "
          f"{args.depth}, rate {args.rate} (uniform, active, stratified), {args.trials} trials, "
          f"{time.perf_counter() - start:.0f} s")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
