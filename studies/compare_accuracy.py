"""How honest ``sampleval compare`` is on sampled judgments (issue 14): on TREC-COVID round
5, the depth-100 pool of the 126 runs judged in full (the round-5 qrels, unjudged = not
relevant) is the truth; each trial judges a ``--rate`` sample of it with ``--method`` and
compares runs from that sample alone.

    python -m studies.compare_accuracy [--trials 200] [--accuracy-trials 30]

1. Agreement with the full-judgment paired t-test (Voorhees, SIGIR 2014, sec. 3): every
   pair of the 126 runs, significant at alpha 0.05 (no correction, as in the paper) on the
   exact per-topic AP, against the same test on the estimated per-topic AP; true positives,
   true negatives, misses, false alarms, inversions and the accuracy, averaged over the
   first ``--accuracy-trials`` trials; and how often the 95% interval of the difference
   covers the true difference of the mean over these 50 topics.
2. The false-positive rate on pairs whose true difference is exactly 0: ``--null-runs``
   runs (spread over the true ranking), each against a copy in which documents of equal true
   grade trade places at random within its top 100 (:func:`equal_grade_copy`), so every exact
   measure of the copy is the original's, topic by topic (checked); over ``--trials``
   samples, the share of these pairs the paired test calls significant at 0.05.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import pandas as pd

from sampleval.cli._app import split_names
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.compare import pair_order, paired_differences
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.metaeval import classify_pairs
from studies._cli import read_round5, simulation_parser

EXACT_CHECK = ("AP", "P@10", "nDCG@10", "Rprec", "RR", "R@100")


def equal_grade_copy(run: Run, qrels: Qrels, rng: np.random.Generator, depth: int,
                     name: str | None = None) -> Run:
    """``run`` cut to its top ``depth`` documents per topic (trec_eval order), in which
    documents of the same true grade (qrels grade; unjudged or negative: 0) trade places
    at random; scores are ``depth + 1 - rank`` so the new order is the one ranked. Every
    measure that depends only on the grade at each rank is unchanged, topic by topic (with
    qrels that judge every retrieved document, as the pool judged in full does, that is all
    of trec_eval's; otherwise Bpref, which tells judged from unjudged non-relevant
    documents, can change)."""
    frame = run.to_frame(depth=depth)
    judged = qrels.judged()
    truth = pd.Series(np.maximum(judged["relevance"].to_numpy(dtype=np.float64), 0.0),
                      index=pd.MultiIndex.from_frame(judged[["query_id", "doc_id"]]))
    where = pd.MultiIndex.from_frame(frame[["query_id", "doc_id"]])
    grade = truth.reindex(where).fillna(0.0).to_numpy()
    topic = pd.factorize(frame["query_id"])[0]
    rank = frame["rank"].to_numpy()
    slots = np.lexsort((rank, grade, topic))  # each (topic, grade) group's ranks, in order
    movers = np.lexsort((rng.random(len(frame)), grade, topic))  # its documents, shuffled
    docs = frame["doc_id"].to_numpy(dtype=object)
    new_docs = np.empty(len(frame), dtype=object)
    new_docs[slots] = docs[movers]
    return Run.from_frame(pd.DataFrame({"query_id": frame["query_id"], "doc_id": new_docs,
                                        "score": (depth + 1 - rank).astype(np.float64)}),
                          name or f"{run.name}~swapped")


def per_topic_estimates(pools: dict[type[np.floating], Pool], sample: Sample,
                        measure: str) -> pd.DataFrame:
    """``[topics, runs]`` estimates of ``measure`` from ``sample`` (the family's compute on
    the pool of its score precision, built once)."""
    spec = parse_estimate(measure)
    family = FAMILIES[spec.family]
    pool = pools[family.score_type]
    rows = family.compute(pool.run_names, topic_views(pool, sample), sample, [spec], 1.0, 0.95)
    rows = rows[rows["query_id"] != MEAN_TOPIC]
    return rows.pivot(index="query_id", columns="run", values="value")[list(pool.run_names)]


def difference_variances(pools: dict[type[np.floating], Pool], sample: Sample, measure: str,
                         per_topic: pd.DataFrame, pairs: list[tuple[str, str]]
                         ) -> np.ndarray | None:
    """``[topics, pairs]`` estimated sampling variances of the per-topic differences, in
    ``per_topic``'s topic order (None: the family gives none)."""
    spec = parse_estimate(measure)
    family = FAMILIES[spec.family]
    if family.differences is None:
        return None
    pool = pools[family.score_type]
    views = topic_views(pool, sample)
    index = {name: i for i, name in enumerate(pool.run_names)}
    at = np.array([[index[a], index[b]] for a, b in pairs], dtype=np.int64)
    _, variances = family.differences(pool.run_names, views, sample, spec, 1.0, at)
    order = {v.pool.topic: t for t, v in enumerate(views)}
    return variances[[order[q] for q in per_topic.index]]


def compared(pools: dict[type[np.floating], Pool], sample: Sample, measure: str,
             alpha: float, dfs: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Every pair of the pools' runs (in column order) compared on ``measure`` from
    ``sample`` as ``sampleval compare --df DF`` compares them, without correction: one
    table per rule in ``dfs``, from the same estimates."""
    per_topic = per_topic_estimates(pools, sample, measure)
    pairs = pair_order(per_topic, ranked=False)
    variances = (difference_variances(pools, sample, measure, per_topic, pairs)
                 if "satterthwaite" in dfs else None)
    return {df: paired_differences(per_topic, measure, correction="none", alpha=alpha,
                                   pairs=pairs,
                                   sampling_variance=None if df == "topics" else variances)
            for df in dfs}


def exact_per_topic(qrels: Qrels, runs: Sequence[Run], measure: str,
                    depth: int) -> pd.DataFrame:
    """``[topics, runs]`` exact ``measure`` at ``depth`` (trec_eval's semantics)."""
    exact = evaluate(qrels, runs, [measure], depth=depth)
    exact = exact[exact["query_id"] != MEAN_TOPIC]
    return exact.pivot(index="query_id", columns="run", values="value")[[r.name for r in runs]]


def pool_truth(pool: Pool) -> Qrels:
    """The pool judged in full: its labels, unjudged documents as grade 0."""
    return Qrels.from_frame(pd.concat(
        pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos[tp.doc_ids],
                      "relevance": np.nan_to_num(tp.labels, nan=0.0)}) for tp in pool))


def null_runs(runs: Sequence[Run], truth: pd.DataFrame, count: int) -> list[Run]:
    """``count`` runs spread evenly over the true ranking by mean ``truth``."""
    order = truth.mean(axis=0).sort_values(ascending=False).index
    picks = np.unique(np.linspace(0, len(order) - 1, count).round().astype(int))
    by_name = {r.name: r for r in runs}
    return [by_name[str(order[i])] for i in picks]


def run_experiment(runs: Sequence[Run], qrels: Qrels, *, method: str, rate: float,
                   depth: int, measures: Sequence[str], trials: int, accuracy_trials: int,
                   n_null: int, seed: int, alpha: float = 0.05,
                   dfs: Sequence[str] = ("satterthwaite",)) -> tuple[pd.DataFrame,
                                                                     pd.DataFrame]:
    """The two tables of the module docstring: accuracy (one row per measure and
    degrees-of-freedom rule in ``dfs``) and null pairs (the same, with
    :func:`null_diagnosis`); every rule tests the same samples' estimates."""
    from scipy import stats

    pool = Pool.from_runs(runs, depth=depth, qrels=qrels)
    truth_qrels = pool_truth(pool)
    exact = exact_per_topic(truth_qrels, runs, "AP", depth)
    true_pairs = paired_differences(exact, "AP", correction="none", alpha=alpha, ranked=False)
    true_diff = true_pairs["diff"].to_numpy()
    originals = null_runs(runs, exact, n_null)
    copy_rng = np.random.default_rng(seed + 1_000_003)
    copies = [equal_grade_copy(r, truth_qrels, copy_rng, depth) for r in originals]
    for measure in EXACT_CHECK:  # the copies' exact measures are the originals', topic by topic
        a = exact_per_topic(truth_qrels, originals, measure, depth).to_numpy()
        b = exact_per_topic(truth_qrels, copies, measure, depth).to_numpy()
        if not np.array_equal(a, b):
            raise AssertionError(f"an equal-grade copy changed the exact {measure}")
    null_set = [*originals, *copies]
    score_types = {FAMILIES[parse_estimate(m).family].score_type for m in measures}
    full_pools = {t: Pool.from_runs(runs, depth=depth, score_type=t) for t in score_types}
    null_pools = {t: Pool.from_runs(null_set, depth=depth, score_type=t) for t in score_types}
    pairs = [(o.name, c.name) for o, c in zip(originals, copies, strict=True)]
    cells = [(m, df) for m in measures for df in dfs]
    accuracy: dict[tuple[str, str], list[dict[str, float]]] = {c: [] for c in cells}
    null: dict[tuple[str, str], list[np.ndarray]] = {c: [] for c in cells}
    oracle = qrels_oracle(truth_qrels)
    for trial in range(trials):
        selector = METHODS[method](pool, Budget(rate=rate), np.random.default_rng(seed + trial))
        sample = simulate(selector, oracle).sample()
        for measure in measures:
            if trial < accuracy_trials:
                for df, est in compared(full_pools, sample, measure, alpha, dfs).items():
                    outcome = classify_pairs(
                        np.sign(true_diff), true_pairs["significant"].to_numpy(),
                        np.sign(est["diff"].to_numpy()), est["significant"].to_numpy())
                    covered = (est["lo"] <= true_diff) & (true_diff <= est["hi"])
                    accuracy[measure, df].append({**asdict(outcome),
                                                  "accuracy": outcome.accuracy,
                                                  "coverage": float(covered.mean())})
            for df, every in compared(null_pools, sample, measure, alpha, dfs).items():
                result = every.set_index(["run_a", "run_b"]).loc[pairs]
                quantile = stats.t.ppf(0.975, result["df"].to_numpy())
                null[measure, df].append(np.stack([result["p"].to_numpy() < alpha,
                                                   result["diff"].to_numpy(),
                                                   (result["hi"] - result["lo"]).to_numpy()
                                                   / (2 * quantile),
                                                   result["df"].to_numpy()]))
        print(f"trial {trial + 1}/{trials} done", file=sys.stderr, flush=True)
    acc_table = pd.DataFrame([{"measure": m, "df": df, **pd.DataFrame(rows).mean().to_dict()}
                              for (m, df), rows in accuracy.items() if rows])
    null_table = pd.DataFrame([{
        "measure": m, "df": df, "pairs": len(pairs), "trials": len(v),
        "false_positive_rate": float(np.mean([x[0] for x in v])),
        "se": float(np.std([x[0].mean() for x in v], ddof=1) / np.sqrt(len(v)))
        if len(v) > 1 else float("nan"),
        "mean_diff": float(np.mean([x[1] for x in v])),
        "mean_df": float(np.mean([x[3] for x in v])),
        **null_diagnosis(np.stack(v)),
    } for (m, df), v in null.items()])
    return acc_table, null_table


def null_diagnosis(trials: np.ndarray) -> dict[str, float]:
    """Why the null pairs' test rejects more (or less) often than alpha, from ``trials``
    ``[trials, 4, pairs]`` (rejected, the estimated difference of the means, the paired
    test's standard error s/sqrt(T), its degrees of freedom): per pair over the trials, the mean difference over
    its spread (``bias_sd``, root mean square over the pairs: a bias the test takes for a
    difference) and the mean standard error over that spread (``se_sd``, mean over the
    pairs: below 1, the test's denominator is too small)."""
    diff, se = trials[:, 1], trials[:, 2]
    if len(diff) < 2:
        return {"bias_sd": float("nan"), "se_sd": float("nan")}
    sd = diff.std(axis=0, ddof=1)
    usable = sd > 0
    return {"bias_sd": float(np.sqrt(np.mean((diff.mean(axis=0)[usable] / sd[usable]) ** 2))),
            "se_sd": float(np.mean(se.mean(axis=0)[usable] / sd[usable]))}


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=200)
    parser.add_argument("--accuracy-trials", type=int, default=30,
                        help="trials (the first ones) that also test every pair of runs "
                             "(default 30)")
    parser.add_argument("--method", default="stratified",
                        help="selection method (default stratified)")
    parser.add_argument("--measures", default="AP~ht,xinfAP",
                        help="estimators of AP, comma-separated (default AP~ht,xinfAP)")
    parser.add_argument("--null-runs", type=int, default=10,
                        help="runs paired with their equal-grade copy (default 10)")
    parser.add_argument("--df", default="satterthwaite",
                        help="the paired test's degrees of freedom, comma-separated to "
                             "compare rules on the same samples: satterthwaite (compare's "
                             "default), topics (T - 1) (default satterthwaite)")
    args = parser.parse_args(argv)
    runs, qrels = read_round5(args.data)
    start = time.perf_counter()
    accuracy, null = run_experiment(
        runs, qrels, method=args.method, rate=args.rate, depth=args.depth,
        measures=split_names([args.measures]),
        trials=args.trials, accuracy_trials=min(args.accuracy_trials, args.trials),
        n_null=args.null_runs, seed=args.seed, dfs=split_names([args.df]))
    print(f"TREC-COVID round 5: {len(runs)} runs, depth {args.depth}, {args.method} at rate "
          f"{args.rate}, {args.trials} trials ({min(args.accuracy_trials, args.trials)} with "
          f"every pair), {time.perf_counter() - start:.0f} s")
    print("Agreement with the full-judgment paired t-test (alpha 0.05), mean per trial:")
    print(accuracy.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print("Pairs with true difference 0 (run vs equal-grade copy):")
    print(null.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
