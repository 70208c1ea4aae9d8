"""What a sample can detect: the audit's relative bias per sample side, its spread over
samples against the variances estimated from one sample (issue 31).

    python -m studies.audit_variance [--collection round5|sparse|round5-rel2] [--trials 30]
        [--start 0] [--rate 0.05] [--method stratified] [--paths control,plain,ppi]
        [--output DIR] [--summarise]

The circular judge of :mod:`studies.audit_power` (the median run's top k documents called
relevant, k the smallest that inflates its AP by at least 0.03 relative to the others).
Trial i (``--start`` to ``--start`` + ``--trials`` - 1; trial i of
:mod:`studies.audit_power` is the same sample) judges a ``--rate`` sample with
``--method`` (seed SEED + i) and, per sample
side (:data:`studies.audit_power.PATHS`), keeps every run's estimated relative bias and two
estimates of its variance: the audit's, (K S K')_rr from the design
(:func:`sampleval.estimation.audit.contrast_variance`), and the collapsed-strata one, the
spread over topics of the per-topic relative biases (topics as strata of one unit each,
collapsed: Wolter, Introduction to Variance Estimation, 2007, sec. 2.5; biased upward by
the spread of the true per-topic biases, :func:`topic_spread`). One ``.npz`` per trial goes
to ``--output`` (default /tmp/audit-variance), so runs add up and can be read as they grow.

The summary, per side: the favoured run's relative bias over the trials (mean and sd:
the Monte Carlo truth of what one sample estimates), the mean of its estimated sd under
each variance, the mean estimated variance over the spread of the estimated relative bias
(``variance_ratio``: the ratio of their sums over the runs), the share of the intervals'
mean half-width that is the bias-aware widening (``widening_share``), and with each variance the 95% t intervals' coverage over every run and
their width (mean half-width / (1.96 rms error)), Holm's power on the favoured run, the
share of the other runs whose exact relative bias is below 0.005 that are flagged, and the
share of runs whose mean error lies within 3 Monte Carlo standard errors of 0; then the sd
Holm's first test needs for power 0.8 and the sample share that reaches it
(:func:`studies.audit_power.attainable`).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.estimation.audit import (
    NULL_RELATIVE,
    HumanEstimates,
    contrast_variance,
    controlled_estimates,
    human_estimates,
    machine_per_topic,
    relative_p,
)
from sampleval.estimation.compare import adjust
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.predictors import circular, median_run, pool_truth
from studies._cli import simulation_parser
from studies.audit_power import (
    COLLECTIONS,
    MEASURE,
    PATHS,
    PPI,
    attainable,
    choose_k,
    parse_paths,
    read_audit_collection,
)
from studies.compare_accuracy import exact_per_topic
from studies.compare_accuracy import pool_truth as judged_in_full

VARIANCES = ("design", "topics")
"""The relative bias's variance estimates compared: the audit's, from the design, and the
collapsed-strata one over topics."""


def topic_spread(per_topic: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``[runs, runs]`` the collapsed-strata covariance of the runs' weighted means
    sum_t a_tr x_tr (``per_topic`` x ``[T, R]``, ``weights`` a): T/(T - 1) sum_t (c_t - c-bar)
    (c_t - c-bar)', c_t = a_t x_t and c-bar their mean over the T topics."""
    contributions = weights * per_topic
    centred = contributions - contributions.mean(axis=0, keepdims=True)
    n = len(per_topic)
    return n / max(n - 1, 1) * centred.T @ centred


def trial_record(side: HumanEstimates, machine: np.ndarray) -> dict[str, np.ndarray]:
    """One side's estimated relative biases and their two variance estimates."""
    bias = (machine * side.weights).sum(axis=0) - side.estimate
    return {"rel": bias - bias.mean(), "design": contrast_variance(side.covariance),
            "topics": contrast_variance(topic_spread(machine - side.values, side.weights)),
            "widen": np.abs(side.relative_bias)}


def simulate_trials(runs: list[Run], qrels: Qrels, *, rate: float, depth: int,
                    trials: range, seed: int, method: str, paths: Sequence[str],
                    output: Path, name: str) -> None:
    """Run the trials (module docstring), each saved as ``output/name-TRIAL.npz``."""
    pool = Pool.from_runs(runs, depth=depth, qrels=qrels)
    truth_qrels = judged_in_full(pool)
    truth = pool_truth(pool, truth_qrels)
    exact = exact_per_topic(truth_qrels, runs, "AP", depth).mean(axis=0)
    favoured = median_run(exact)
    k, relative = choose_k(truth, pool, runs, exact, favoured, 0.03, depth)
    judge = Predictions.from_frame(circular(truth, pool, favoured, k))
    oracle = qrels_oracle(truth_qrels)
    output.mkdir(parents=True, exist_ok=True)
    for trial in trials:
        started = time.time()
        given = {"predictions": judge} if METHODS[method].uses_predictions({}) else {}
        selector = METHODS[method](pool, Budget(rate=rate),
                                   np.random.default_rng(seed + trial), **given)
        sample = simulate(selector, oracle).sample()
        saved: dict[str, Any] = {"true_rel": relative.to_numpy(dtype=np.float64),
                                    "at": list(exact.index).index(favoured),
                                    "topics": len(sample.topics)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            machine = None
            for path in paths:
                if path == "control":
                    side = controlled_estimates(sample, runs, MEASURE, judge)
                else:
                    side = human_estimates(sample, runs, MEASURE if path == "plain" else PPI,
                                           predictions=judge if path == "ppi" else None)
                if machine is None:
                    machine = machine_per_topic(sample, judge, side.pool, side.spec,
                                                side.topics, 1)
                saved.update({f"{path}_{key}": value
                              for key, value in trial_record(side, machine).items()})
        np.savez(output / f"{name}-{trial}.npz", **saved)
        print(f"trial {trial} done ({time.time() - started:.1f} s)", file=sys.stderr,
              flush=True)


def summarise(files: Sequence[Path], rate: float) -> pd.DataFrame:
    """Per sample side found in the trials ``files`` and per variance, the module
    docstring's figures (one row each)."""
    from scipy import stats

    loaded = [dict(np.load(f)) for f in files]
    rows = []
    for path in PATHS:
        trials = [t for t in loaded if f"{path}_rel" in t]
        if len(trials) < 2:
            continue
        truth = trials[0]["true_rel"]
        at, n_topics = int(trials[0]["at"]), int(trials[0]["topics"])
        rel = np.array([t[f"{path}_rel"] for t in trials])
        widen = np.array([t[f"{path}_widen"] for t in trials])
        error = rel - truth
        n, n_runs = rel.shape
        sd_mc = error.std(axis=0, ddof=1)
        within = float(np.mean(np.abs(error.mean(axis=0)) <= 3 * sd_mc / np.sqrt(n)))
        nulls = np.abs(truth) < NULL_RELATIVE
        nulls[at] = False
        needed, share = attainable(float(truth[at]), float(sd_mc[at]), n_runs, n_topics, rate)
        reference = stats.t(max(n_topics - 1, 1))
        for variance in VARIANCES:
            sd = np.sqrt(np.array([t[f"{path}_{variance}"] for t in trials]))
            half = reference.ppf(0.975) * sd + widen
            flagged = np.array([adjust(relative_p(r, w, d, reference), "holm") < 0.05
                                for r, w, d in zip(rel, widen, sd, strict=True)])
            rows.append({
                "side": path, "variance": variance, "trials": n,
                "variance_ratio": float((sd ** 2).mean(axis=0).sum()
                                        / error.var(axis=0, ddof=1).sum()),
                "widening_share": float(widen.mean() / half.mean()),
                "favoured_true": float(truth[at]), "favoured_mean": float(rel[:, at].mean()),
                "favoured_sd": float(sd_mc[at]), "favoured_estimated_sd": float(
                    sd[:, at].mean()),
                "coverage": float((np.abs(error) <= half).mean()),
                "width": float(half.mean() / (1.96 * np.sqrt((error ** 2).mean()))),
                "power_holm": float(flagged[:, at].mean()),
                "null_flagged": float(flagged[:, nulls].mean()),
                "any_null_flagged": float(flagged[:, nulls].any(axis=1).mean()),
                "runs_within_3se": within, "needed_sd": needed, "share_for_power": share})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__ or "", trials=30)
    parser.set_defaults(rate=0.05)
    parser.add_argument("--collection", choices=COLLECTIONS, default="round5")
    parser.add_argument("--method", choices=sorted(METHODS), default="stratified",
                        metavar="METHOD",
                        help="the selection method of the human sample (default stratified)")
    parser.add_argument("--paths", default=",".join(PATHS), metavar="PATH[,PATH]",
                        help="the sample sides, comma-separated, of control, plain and ppi "
                             "(studies.audit_power's; default all three)")
    parser.add_argument("--output", type=Path, default=Path("/tmp/audit-variance"),
                        help="the directory of the per-trial records (default "
                             "/tmp/audit-variance); the summary reads every trial there of "
                             "this collection, method and rate")
    parser.add_argument("--start", type=int, default=0,
                        help="the first trial (default 0): runs started at different trials "
                             "add up in --output")
    parser.add_argument("--summarise", action="store_true",
                        help="only summarise the trials already in --output")
    args = parser.parse_args(argv)
    paths = parse_paths(parser, args.paths)
    name = f"{args.collection}-{args.method}-{args.rate:g}"
    if not args.summarise:
        runs, qrels = read_audit_collection(args.collection, args.data, args.seed)
        simulate_trials(list(runs), qrels, rate=args.rate, depth=args.depth,
                        trials=range(args.start, args.start + args.trials), seed=args.seed, method=args.method, paths=paths,
                        output=args.output, name=name)
    summary = summarise(sorted(args.output.glob(f"{name}-*.npz")), args.rate)
    sys.stdout.write(summary.to_string(index=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
