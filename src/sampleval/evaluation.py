"""Exact evaluation of runs against qrels, as trec_eval computes it, for many runs at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from sampleval.aggregation import over_topics
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.errors import UsageError
from sampleval.inputs import QrelsLike, RunsLike, as_qrels, as_runs
from sampleval.measures.exact import RankedGrades, compute
from sampleval.measures.names import DEFAULT_MEASURES, Measure, parse_measures

MEAN_TOPIC = "all"


def evaluate(qrels: QrelsLike, runs: RunsLike | Pool,
             measures: Sequence[str | Measure] = DEFAULT_MEASURES, *,
             depth: int | None = None, rel_level: int = 1, all_topics: bool = False,
             judged_only: bool = False) -> pd.DataFrame:
    """Evaluate runs with trec_eval's semantics; one row per (run, topic, measure).

    Returns a DataFrame with columns ``run, query_id, measure, value``; each run's mean over
    topics has ``query_id == "all"`` (the counts ``NumRel``, ``NumRet``, ``NumRelRet`` are
    summed, as trec_eval sums them).

    - ``depth``: only each run's top ``depth`` documents per topic count (trec_eval ``-M``).
    - ``rel_level``: grades at or above it are relevant (trec_eval ``-l``).
    - ``all_topics``: average over every qrels topic, a topic the run lacks scoring 0
      (trec_eval ``-c``); by default, over the topics both the run and the qrels have.
    - ``judged_only``: drop unjudged documents from each ranking first (trec_eval ``-J``).

    ``qrels`` may also be a DataFrame, a qrels file or a deterministic sample's directory;
    ``runs`` a Run, a list of Runs, a DataFrame or paths (:mod:`sampleval.inputs`), or a
    :class:`Pool` built earlier (then ``depth`` must be None).
    """
    qrels = as_qrels(qrels)
    parsed = list(dict.fromkeys(  # in the order given, without repeats
        m for item in measures
        for m in ([item] if isinstance(item, Measure) else parse_measures([item]))))
    if isinstance(runs, Pool):
        if depth is not None:
            raise UsageError("give the depth when building the Pool, not to evaluate()")
        pool = runs.with_labels(qrels)
    else:
        pool = Pool.from_runs(as_runs(runs), depth=depth, qrels=qrels, topics=qrels.topics)
    return _tabulate(pool, qrels, parsed, rel_level, all_topics, judged_only)


def _tabulate(pool: Pool, qrels: Qrels, measures: list[Measure], rel_level: int,
              all_topics: bool, judged_only: bool) -> pd.DataFrame:
    judged = qrels.judged()
    topic_grades = {t: rows["relevance"].to_numpy()
                    for t, rows in judged.groupby("query_id", sort=False)}
    n_runs, n_measures = pool.n_runs, len(measures)
    topics = [t for t in qrels.topics if t in pool.topic_pools]
    values = np.zeros((len(topics), n_measures, n_runs))
    included = np.zeros((len(topics), n_runs), dtype=bool)
    for i, topic in enumerate(topics):
        tp = pool[topic]
        ranked = RankedGrades(tp.labels_at_ranks(), tp.lengths,
                              topic_grades.get(topic, np.zeros(0)))
        if judged_only:
            ranked = ranked.judged_only()
        for j, measure in enumerate(measures):
            values[i, j] = compute(measure, ranked, rel_level)
        included[i] = True if all_topics else tp.present
    counted = included.sum(axis=0)
    if n_runs and not counted.all():
        lonely = [pool.run_names[k] for k in np.flatnonzero(counted == 0)]
        raise UsageError(f"no topic has both results and judgments for run(s) "
                         f"{', '.join(lonely)}: check that the qrels belong to these runs")
    return _frame(pool.run_names, topics, measures, values, included)


def _frame(run_names: tuple[str, ...], topics: list[str], measures: list[Measure],
           values: np.ndarray, included: np.ndarray) -> pd.DataFrame:
    n_topics, n_measures, n_runs = values.shape
    t_idx, m_idx, r_idx = np.meshgrid(np.arange(n_topics), np.arange(n_measures),
                                      np.arange(n_runs), indexing="ij")
    keep = np.broadcast_to(included[:, None, :], values.shape)
    names = np.array([str(m) for m in measures], dtype=object)
    per_topic = pd.DataFrame({
        "run": np.asarray(run_names, dtype=object)[r_idx[keep]],
        "query_id": np.asarray(topics, dtype=object)[t_idx[keep]],
        "measure": names[m_idx[keep]],
        "value": values[keep],
    })
    is_sum = np.array([m.aggregate == "sum" for m in measures])[:, None]
    means = np.where(is_sum, over_topics(values, keep, "sum"),
                     over_topics(values, keep, "mean"))
    m_all, r_all = np.meshgrid(np.arange(n_measures), np.arange(n_runs), indexing="ij")
    overall = pd.DataFrame({
        "run": np.asarray(run_names, dtype=object)[r_all.ravel()],
        "query_id": MEAN_TOPIC,
        "measure": names[m_all.ravel()],
        "value": means.ravel(),
    })
    out = pd.concat([per_topic, overall], ignore_index=True)
    return out.sort_values(["run"], kind="stable", key=_run_order(run_names)).reset_index(
        drop=True)


def _run_order(run_names: tuple[str, ...]) -> Callable[[pd.Series], pd.Series]:
    position = {name: i for i, name in enumerate(run_names)}
    return lambda column: column.map(position)


def leaderboard(results: pd.DataFrame) -> pd.DataFrame:
    """Means per run as a wide table (runs as rows, measures as columns), best first by the
    first measure."""
    means = results[results["query_id"] == MEAN_TOPIC]
    order = list(dict.fromkeys(means["measure"]))
    wide = means.pivot(index="run", columns="measure", values="value")[order]
    return wide.sort_values(order[0], ascending=False, kind="stable")
