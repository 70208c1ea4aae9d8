"""Why AP~ppi's standard errors are too small with a circular judge, per topic (issue 31).

    python -m studies.audit_ppi_topics [--collection round5|sparse|round5-rel2] [--trials 40]
        [--measure 'AP~ppi(bias=taylor)'] [--output F.pkl]

The setting of :mod:`studies.audit_power` (the collection judged in full, the circular judge
that favours the median run by at least 0.03, ``stratified`` samples of ``--rate``, trial i
seed SEED + i): per trial, topic and run the error of ``--measure`` with the judge's labels as
predictions and its estimated variance, and per topic the judged documents whose label
disagrees with the judge's (relevant at level 1 or not), and the frame's. Printed over the
runs other than the favoured one whose error is defined on every topic (:func:`decompose`): the mean's spread over the trials
against its estimated standard error, coverage and width (mean half-width / (1.96 x rms));
the mean's variance over the sum of the topics' variances (above 1: the topics' errors move
together, which no per-topic variance sees); the topics' variances over their mean estimated
variances; and the share of topic-samples holding a disagreement, with their estimated
variance and squared error apart from the others'.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.estimation.audit import SAMPLE_DEPTH, _aligned
from sampleval.estimation.family import FAMILIES
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.predictors import circular
from studies._cli import simulation_parser
from studies.audit_power import COLLECTIONS, circular_setting, read_audit_collection


def measure_topics(runs: list[Run], qrels: Qrels, *, rate: float, depth: int, trials: int,
                   seed: int, measure: str) -> tuple[pd.DataFrame, int]:
    """One row per trial and topic: ``trial``, ``topic``, ``n_dis`` (judged disagreements),
    ``frame_dis`` (the frame's), ``err`` and ``var`` (per run, in the pool's run order); and
    the favoured run's index."""
    pool, truth_qrels, truth, exact_topics, favoured, k, _ = circular_setting(
        runs, qrels, depth, 0.03)
    judge = Predictions.from_frame(circular(truth, pool, favoured, k))
    true_of = {q: g.set_index("doc_id")["relevance"].astype(float)
               for q, g in truth.groupby("query_id")}
    oracle = qrels_oracle(truth_qrels)
    rows = []
    names: list[str] = []
    for trial in range(trials):
        started = time.time()
        selector = METHODS["stratified"](pool, Budget(rate=rate),
                                         np.random.default_rng(seed + trial))
        sample = simulate(selector, oracle).sample()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec, aligned, views = _aligned(sample, runs, measure, SAMPLE_DEPTH, judge)
            parts = FAMILIES[spec.family].parts
            assert parts is not None
            values, variances, _ = parts(aligned.run_names, views, sample, spec, 1)
        names = list(aligned.run_names)
        exact_here = exact_topics.loc[[v.pool.topic for v in views], names].to_numpy()
        for t, view in enumerate(views):
            labels, predicted = view.sample.labels, view.predictions
            assert predicted is not None
            true = true_of[view.pool.topic].reindex(view.sample.docnos.astype(str)).fillna(0.0)
            judged = ~np.isnan(labels)
            rows.append({"trial": trial, "topic": view.pool.topic,
                         "n_dis": int((judged & ((labels > 0) != (predicted >= 1))).sum()),
                         "frame_dis": int(((true.to_numpy() > 0) != (predicted >= 1)).sum()),
                         "err": values[t] - exact_here[t], "var": variances[t]})
        print(f"trial {trial + 1}/{trials} done ({time.time() - started:.1f} s)",
              file=sys.stderr, flush=True)
    return pd.DataFrame(rows), names.index(favoured)


def decompose(rows: pd.DataFrame, favoured: int) -> dict[str, float]:
    """The figures of the module docstring from :func:`measure_topics`' rows."""
    errors = np.stack(list(rows["err"])).astype(np.float64)
    variances = np.stack(list(rows["var"])).astype(np.float64)
    others = (np.arange(errors.shape[1]) != favoured) & ~np.isnan(errors).any(axis=0)
    topics = sorted(rows["topic"].unique())
    trials = sorted(rows["trial"].unique())
    n_topics = len(topics)
    by = np.zeros((len(trials), n_topics, errors.shape[1]))
    est = np.zeros(by.shape)
    for i, row in enumerate(rows.itertuples()):
        at = (trials.index(row.trial), topics.index(row.topic))
        by[at], est[at] = errors[i], variances[i]
    mean = by.mean(axis=1)[:, others]  # [trials, runs]
    se = np.sqrt(est.sum(axis=1) / n_topics**2)[:, others]
    found = rows["n_dis"].to_numpy() > 0
    return {
        "sd_over_trials": float(mean.std(axis=0).mean()),
        "estimated_se": float(se.mean()),
        "coverage": float((np.abs(mean) <= 1.959964 * se).mean()),
        "width": float(se.mean() / np.sqrt((mean**2).mean())),
        "mean_over_topic_variances": float(mean.var(axis=0).mean() / (
            by.var(axis=0).sum(axis=0)[others].mean() / n_topics**2)),
        "topic_over_estimated_variances": float(by.var(axis=0).sum(axis=0)[others].mean()
                                                / est.mean(axis=0).sum(axis=0)[others].mean()),
        "share_holding_a_disagreement": float(found.mean()),
        "estimated_var_with": float(variances[found][:, others].mean()),
        "sq_error_with": float((errors[found][:, others] ** 2).mean()),
        "estimated_var_without": float(variances[~found][:, others].mean()),
        "sq_error_without": float((errors[~found][:, others] ** 2).mean()),
        "frame_disagreements_per_topic": float(rows.groupby("topic")["frame_dis"].first().mean()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__ or "", trials=40)
    parser.set_defaults(rate=0.05)
    parser.add_argument("--collection", choices=COLLECTIONS, default="round5")
    parser.add_argument("--measure", default="AP~ppi(bias=taylor)",
                        help="the prediction-powered estimator, options included (default "
                             "'AP~ppi(bias=taylor)')")
    parser.add_argument("--output", help="write the per-topic rows to this pickle")
    args = parser.parse_args(argv)
    runs, qrels = read_audit_collection(args.collection, args.data, args.seed)
    rows, favoured = measure_topics(runs, qrels, rate=args.rate, depth=args.depth,
                                    trials=args.trials, seed=args.seed, measure=args.measure)
    if args.output:
        rows.to_pickle(args.output)
    for name, value in decompose(rows, favoured).items():
        sys.stdout.write(f"{name:32s} {value:.4g}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
