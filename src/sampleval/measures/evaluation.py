"""Exact evaluation of runs against qrels (or preferences, or qrels of judgment groups), as
trec_eval computes it, for many runs at once.

Qrels measures on runs read each run's grades straight from the qrels
(:mod:`sampleval.core.graded`: no Pool, no compiled kernels), which is also how the command
line streams run files (:func:`evaluate_graded`); a :class:`Pool` given instead is read
through :func:`ranked_topics`, with the same values. Judgment-group measures build a Pool;
preference measures rank each run themselves."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from sampleval.core.graded import JudgedIndex, RunGrades, run_grades, warn_level_above_grades
from sampleval.core.pool import Pool
from sampleval.core.prefs import GroupQrels, Preferences
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run, ranks_within, trec_order
from sampleval.errors import UsageError
from sampleval.io.coerce import MeasuresLike, QrelsLike, RunsLike, as_qrels, as_runs
from sampleval.measures.exact import RankedGrades, compute
from sampleval.measures.groups import compute_groups
from sampleval.measures.names import DEFAULT_MEASURES, Measure
from sampleval.measures.prefs import TopicPrefs, positions, prefs_values, topic_prefs
from sampleval.measures.results import (
    GEOMETRIC_FLOOR,
    MEAN_TOPIC,
    ExactResults,
    graded_present,
    graded_results,
    graded_values,
    parse_measure_list,
)

__all__ = ["GEOMETRIC_FLOOR", "MEAN_TOPIC", "evaluate", "evaluate_graded", "group_rankings",
           "judged_index", "leaderboard", "parse_measure_list", "prefs_rankings",
           "ranked_topics", "results_frame"]

Judgments = Qrels | Preferences | GroupQrels


def evaluate(qrels: Judgments | QrelsLike, runs: RunsLike | Pool,
             measures: MeasuresLike = DEFAULT_MEASURES, *,
             depth: int | None = None, rel_level: int = 1, all_topics: bool = False,
             judged_only: bool = False) -> pd.DataFrame:
    """Evaluate runs with trec_eval's semantics; one row per (run, topic, measure).

    Returns a DataFrame with columns ``run, query_id, measure, value``; each run's mean over
    topics has ``query_id == "all"`` (the counts ``NumRel``, ``NumRet``, ``NumRelRet`` are
    summed, as trec_eval sums them; ``GMAP`` and ``gm_bpref`` take the geometric mean of
    values floored at 0.00001).

    - ``qrels``: :class:`Qrels`; or :class:`~sampleval.core.prefs.Preferences` for the
      preference measures (``prefs_*``, which read plain qrels as trec_eval's
      ``qrels_prefs``: the second column a judgment group); or
      :class:`~sampleval.core.prefs.GroupQrels` for the judgment-group measures
      (``map_avgjg``, ``P_avgjg@k``, ``Rprec_mult_avgjg@x``, which read plain qrels as one
      group per value of the second column).
    - ``depth``: only each run's top ``depth`` documents per topic count (trec_eval ``-M``).
    - ``rel_level``: grades at or above it are relevant (trec_eval ``-l``).
    - ``all_topics``: average over every qrels topic, a topic the run lacks scoring 0
      (trec_eval ``-c``); by default, over the topics both the run and the qrels have.
    - ``judged_only``: drop unjudged documents from each ranking first (trec_eval ``-J``).

    ``measures``: one name (``"nDCG@10"``), an ir_measures measure (``ir_measures.nDCG@10``)
    or a list of them. ``qrels`` may also be a DataFrame, a dict ``{query_id: {doc_id:
    relevance}}``, a qrels file or a deterministic sample's directory; ``runs`` a Run, a list
    of Runs, a DataFrame, a dict ``{query_id: {doc_id: score}}`` or paths
    (:mod:`sampleval.io.coerce`), or a :class:`Pool` built earlier (then ``depth`` must be
    None; preference measures need the runs themselves).
    """
    if not isinstance(qrels, (Preferences, GroupQrels)):
        qrels = as_qrels(qrels)
    parsed = parse_measure_list(measures)
    if isinstance(qrels, Qrels):
        warn_level_above_grades([rel_level], qrels.frame["relevance"].to_numpy(),
                                qrels.source or "the qrels")
    topics = qrels.topics
    if isinstance(runs, Pool):
        if depth is not None:
            raise UsageError("give the depth when building the Pool, not to evaluate()")
        pool: Pool | None = runs
        run_list: list[Run] | None = None
        run_names = runs.run_names
        topics = [t for t in topics if t in runs.topic_pools]
    else:
        pool, run_list = None, as_runs(runs)
        run_names = tuple(r.name for r in run_list)
    values = np.zeros((len(topics), len(parsed), len(run_names)))
    present = None
    for kind in ("qrels", "groups", "prefs"):
        wanted = [j for j, m in enumerate(parsed) if m.spec.judgments == kind]
        if not wanted:
            continue
        chosen = [parsed[j] for j in wanted]
        if kind == "qrels" and run_list is not None:
            index = judged_index(_as_qrels(qrels), topics)
            graded = [run_grades(r, index, depth) for r in run_list]
            found = graded_values(graded, index, chosen, rel_level, judged_only)
            present = graded_present(graded, index)
        elif kind == "prefs":
            if run_list is None:
                raise UsageError("preference measures need the runs, not a Pool")
            found = _prefs_values(_as_prefs(qrels), run_list, topics, chosen, depth,
                                  np.float32)
        else:
            if pool is None:
                assert run_list is not None
                pool = Pool.from_runs(run_list, depth=depth, topics=topics)
            if kind == "qrels":
                found = _qrels_values(pool, _as_qrels(qrels), topics, chosen, rel_level,
                                      judged_only)
            else:
                found = _group_values(pool, _as_groups(qrels), topics, chosen, rel_level,
                                      judged_only)
        values[:, wanted] = found
    if present is None:
        if pool is None:
            assert run_list is not None
            pool = Pool.from_runs(run_list, depth=depth, topics=topics)
        present = np.array([pool[t].present for t in topics]).reshape(len(topics),
                                                                       len(run_names))
    return results_frame(run_names, topics, parsed, values, present, all_topics)


def judged_index(qrels: Qrels, topics: Sequence[str]) -> JudgedIndex:
    """The qrels of ``topics`` as :func:`~sampleval.core.graded.run_grades` looks them up."""
    frame = qrels.frame
    return JudgedIndex.build(frame["query_id"].to_numpy(), frame["doc_id"].to_numpy(),
                             frame["relevance"].to_numpy(dtype=np.float64), topics)


def evaluate_graded(graded: Sequence[RunGrades], index: JudgedIndex,
                    measures: Sequence[str | Measure] = DEFAULT_MEASURES, *,
                    rel_level: int = 1, all_topics: bool = False,
                    judged_only: bool = False) -> pd.DataFrame:
    """:func:`evaluate` for qrels measures on runs already reduced to their grades
    (:func:`~sampleval.core.graded.run_grades`, depth applied there): the DataFrame of
    :func:`sampleval.measures.results.graded_results`."""
    return graded_results(graded, index, measures, rel_level=rel_level,
                          all_topics=all_topics, judged_only=judged_only).frame()


def results_frame(run_names: Sequence[str], topics: list[str], measures: list[Measure],
                  values: np.ndarray, present: np.ndarray, all_topics: bool) -> pd.DataFrame:
    """The results DataFrame of :func:`evaluate` from ``[topics, measures, runs]`` values and
    ``present`` (``[topics, runs]``: the run retrieved documents for the topic); refuses a
    run that shares no topic with the judgments (:meth:`ExactResults.of`)."""
    return ExactResults.of(run_names, topics, measures, values, present, all_topics).frame()


def _as_qrels(judgments: Judgments) -> Qrels:
    if not isinstance(judgments, Qrels):
        raise UsageError("this measure needs qrels (one grade per document), not "
                         f"{type(judgments).__name__}")
    return judgments


def _as_groups(judgments: Judgments) -> GroupQrels:
    if isinstance(judgments, Qrels):
        return GroupQrels.from_qrels(judgments)
    if not isinstance(judgments, GroupQrels):
        raise UsageError("the judgment-group measures need qrels of judgment groups")
    return judgments


def _as_prefs(judgments: Judgments) -> Preferences:
    if isinstance(judgments, Qrels):
        return Preferences.from_qrels(judgments)
    if not isinstance(judgments, Preferences):
        raise UsageError("the preference measures need preferences or qrels")
    return judgments


def ranked_topics(pool: Pool, qrels: Qrels, topics: Sequence[str],
                  judged_only: bool = False) -> Iterator[tuple[str, RankedGrades]]:
    """Each topic's rankings as the exact measures read them, from ``pool`` labelled with
    ``qrels``; documents with a negative grade are marked as "in the pool, not judged"
    (:attr:`RankedGrades.pooled`)."""
    labelled = pool.with_labels(qrels)
    judged = qrels.judged()
    topic_grades = {t: rows["relevance"].to_numpy()
                    for t, rows in judged.groupby("query_id", sort=False)}
    negative = qrels.frame[qrels.frame["relevance"] < 0]
    in_pool = None if negative.empty else pool.with_labels(
        Qrels(frame=negative.assign(relevance=1.0)))
    for topic in topics:
        tp = labelled[topic]
        pooled = None if in_pool is None else ~np.isnan(in_pool[topic].labels_at_ranks())
        ranked = RankedGrades(tp.labels_at_ranks(), tp.lengths,
                              topic_grades.get(topic, np.zeros(0)), pooled)
        yield topic, (ranked.judged_only() if judged_only else ranked)


def group_rankings(pool: Pool, groups: GroupQrels, topics: Sequence[str],
                   judged_only: bool = False) -> dict[str, list[RankedGrades]]:
    """For each topic, its rankings labelled by each of its judgment groups (in byte order
    of the group names, as trec_eval takes them)."""
    by_topic: dict[str, list[RankedGrades]] = {t: [] for t in topics}
    present = groups.frame.groupby("group", sort=False)["query_id"].unique()
    for name, qrels in groups.groups():
        mine = [t for t in topics if t in set(present[name])]
        for topic, ranked in ranked_topics(pool, qrels, mine, judged_only):
            by_topic[topic].append(ranked)
    return by_topic


def prefs_rankings(prefs: Preferences, runs: Sequence[Run], topics: Sequence[str],
                   depth: int | None, score_type: type[np.floating]
                   ) -> Iterator[tuple[str, TopicPrefs, np.ndarray, np.ndarray]]:
    """For each topic with preferences: its preferences, each judged document's position in
    each run (:func:`sampleval.measures.prefs.positions`) and the judged documents each run
    retrieved. Runs are ranked by score, ties by docno ascending (trec_eval ranks this way
    for preferences, and by docno descending for qrels)."""
    ranked = [_ranks(run, depth, score_type) for run in runs]
    rows_of = dict(tuple(prefs.frame.groupby("query_id", sort=False)))
    for topic in topics:
        if topic not in rows_of:
            continue
        rows = rows_of[topic]
        judged = topic_prefs(rows, prefs.source)
        where = np.zeros((len(ranked), len(judged.docs)), dtype=np.int64)
        for i, run_ranks in enumerate(ranked):
            mine = run_ranks.get(topic)
            if mine is not None:
                where[i] = mine.reindex(judged.docs, fill_value=0).to_numpy()
        pos, njr = positions(where)
        yield topic, judged, pos, njr


def _ranks(run: Run, depth: int | None, score_type: type[np.floating]) -> dict[str, pd.Series]:
    """Each topic's ranks of the run's documents (by docno), ties broken by docno ascending."""
    frame = run.to_frame()
    topic_key = pd.factorize(frame["query_id"])[0]
    doc_key = frame["doc_id"].map(lambda d: str(d).encode()).rank(method="dense").to_numpy(
        dtype=np.int64)
    order = trec_order(topic_key, frame["score"].to_numpy(), doc_key.max(initial=0) - doc_key,
                       score_type)
    ranked = frame.iloc[order]
    rank = ranks_within(topic_key[order])
    keep = rank <= (depth if depth is not None else len(rank))
    ranked = ranked.assign(rank=rank)[keep]
    return {str(t): rows.set_index("doc_id")["rank"]
            for t, rows in ranked.groupby("query_id", sort=False)}


def _qrels_values(pool: Pool, qrels: Qrels, topics: Sequence[str], measures: list[Measure],
                  rel_level: int, judged_only: bool) -> np.ndarray:
    values = np.zeros((len(topics), len(measures), pool.n_runs))
    for i, (_, ranked) in enumerate(ranked_topics(pool, qrels, topics, judged_only)):
        for j, measure in enumerate(measures):
            values[i, j] = compute(measure, ranked, rel_level)
    return values


def _group_values(pool: Pool, groups: GroupQrels, topics: Sequence[str],
                  measures: list[Measure], rel_level: int, judged_only: bool) -> np.ndarray:
    values = np.zeros((len(topics), len(measures), pool.n_runs))
    by_topic = group_rankings(pool, groups, topics, judged_only)
    for i, topic in enumerate(topics):
        if by_topic[topic]:
            for j, measure in enumerate(measures):
                values[i, j] = compute_groups(measure, by_topic[topic], rel_level)
    return values


def _prefs_values(prefs: Preferences, runs: Sequence[Run], topics: Sequence[str],
                  measures: list[Measure], depth: int | None,
                  score_type: type[np.floating]) -> np.ndarray:
    values = np.zeros((len(topics), len(measures), len(runs)))
    index = {t: i for i, t in enumerate(topics)}
    for topic, judged, pos, njr in prefs_rankings(prefs, runs, topics, depth, score_type):
        found = prefs_values(judged, pos, njr)
        for j, measure in enumerate(measures):
            values[index[topic], j] = found[measure.name]
    return values


def leaderboard(results: pd.DataFrame) -> pd.DataFrame:
    """Means per run as a wide table (runs as rows, measures as columns), best first by the
    first measure."""
    means = results[results["query_id"] == MEAN_TOPIC]
    order = list(dict.fromkeys(means["measure"]))
    wide = means.pivot(index="run", columns="measure", values="value")[order]
    return wide.sort_values(order[0], ascending=False, kind="stable")
