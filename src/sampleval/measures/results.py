"""Exact evaluation results as arrays (:class:`ExactResults`): the values of every (topic,
measure, run), which topics count for each run, and each run's combination over them; as a
DataFrame (:meth:`ExactResults.frame`, what :func:`sampleval.measures.evaluation.evaluate` returns)
or written straight to TSV (:meth:`ExactResults.tsv`, the same bytes as
:func:`sampleval.io.formats.to_tsv` of that DataFrame). :func:`graded_results` evaluates runs
reduced to their grades (:mod:`sampleval.core.graded`), as ``sampleval evaluate`` streams
them.

numpy only: ``sampleval evaluate -f tsv`` evaluates and writes without importing pandas
(0.3 s of CPU, a tenth of the whole command on 126 runs).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sampleval.core.graded import JudgedIndex, RunGrades, ranked_grades
from sampleval.errors import SampleValError, UsageError
from sampleval.measures.aggregation import over_topics
from sampleval.measures.exact import compute
from sampleval.measures.names import DEFAULT_MEASURES, Measure, parse_measure, parse_measures

if TYPE_CHECKING:
    import pandas as pd

MEAN_TOPIC = "all"
GEOMETRIC_FLOOR = 0.00001  # trec_eval's MIN_GEO_MEAN: gm_map and gm_bpref floor values here
TSV_HEADER = ("run", "topic", "measure")


@dataclass(frozen=True, eq=False)
class ExactResults:
    """``values[t, m, r]``: measure ``m`` of run ``r`` on topic ``t``; ``included[t, r]``:
    the topic counts for the run (it has a row, and enters the run's combination);
    ``combined[m, r]``: the run's sum, mean or geometric mean (the measure's aggregate) over
    its included topics."""

    run_names: tuple[str, ...]
    topics: tuple[str, ...]
    measures: tuple[Measure, ...]
    values: np.ndarray
    included: np.ndarray
    combined: np.ndarray

    @classmethod
    def of(cls, run_names: Sequence[str], topics: Sequence[str], measures: Sequence[Measure],
           values: np.ndarray, present: np.ndarray, all_topics: bool) -> ExactResults:
        """Results from ``[topics, measures, runs]`` values and ``present`` (``[topics,
        runs]``: the run retrieved documents for the topic); ``all_topics``: every topic
        counts (trec_eval ``-c``), else those the run has. Refuses a run that shares no
        topic with the judgments."""
        # a run lacking a topic measures an empty ranking; where that is 0 / 0 (interpolated
        # precision at recall 0) it scores 0, as trec_eval -c's stand-in ranking scores it
        values = np.where(np.isnan(values) & ~present[:, None, :], 0.0, values)
        included = np.ones_like(present) if all_topics else present
        counted = included.sum(axis=0)
        if len(run_names) and not counted.all():
            lonely = [run_names[int(k)] for k in np.flatnonzero(counted == 0)]
            raise UsageError(f"no topic has both results and judgments for run(s) "
                             f"{', '.join(lonely)}: check that the qrels belong to these runs")
        return cls(tuple(run_names), tuple(topics), tuple(measures), values, included,
                   _combined(values, included, measures))

    def frame(self) -> pd.DataFrame:
        """Columns ``run, query_id, measure, value``: one row per (run, included topic,
        measure), then each run's combination as topic :data:`MEAN_TOPIC` (see
        :meth:`rows` for the order)."""
        import pandas as pd

        run_at, topic_at, measure_at, value = self.rows()
        names = np.array([str(m) for m in self.measures], dtype=object)
        runs = np.asarray(self.run_names, dtype=object)
        topics = np.asarray([*self.topics, MEAN_TOPIC], dtype=object)
        return pd.DataFrame({"run": runs[run_at], "query_id": topics[topic_at],
                             "measure": names[measure_at], "value": value})

    def tsv(self, per_topic: bool = True) -> str:
        """``run topic measure value`` with a header, rows as :meth:`frame`'s (only the
        combinations unless ``per_topic``): each value at full precision, counts as
        integers, NaN empty."""
        run_at, topic_at, measure_at, value = self.rows()
        if not per_topic:
            combined = topic_at == len(self.topics)
            run_at, topic_at, measure_at = run_at[combined], topic_at[combined], measure_at[
                combined]
            value = value[combined]
        topics = [*self.topics, MEAN_TOPIC]
        labels = [f"\t{m}\t" for m in self.measures]
        counts = [is_count(str(m)) for m in self.measures]
        lines = ["\t".join((*TSV_HEADER, "value"))]
        lines += [f"{self.run_names[r]}\t{topics[t]}{labels[m]}{format_number(v, counts[m])}"
                  for r, t, m, v in zip(run_at.tolist(), topic_at.tolist(),
                                        measure_at.tolist(), value.tolist(), strict=True)]
        return "\n".join(lines) + "\n"

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The run, topic (``len(topics)`` for the combination), measure and value of each
        row: the included (topic, measure, run) triples in that order, then the (measure,
        run) combinations, stably sorted by the position of the run's name (the last, when
        two runs share a name)."""
        n_topics, n_measures, n_runs = self.values.shape
        keep = np.broadcast_to(self.included[:, None, :], self.values.shape)
        t_idx, m_idx, r_idx = np.meshgrid(np.arange(n_topics), np.arange(n_measures),
                                          np.arange(n_runs), indexing="ij")
        m_all, r_all = np.meshgrid(np.arange(n_measures), np.arange(n_runs), indexing="ij")
        run_at = np.r_[r_idx[keep], r_all.ravel()]
        topic_at = np.r_[t_idx[keep], np.full(m_all.size, n_topics)]
        measure_at = np.r_[m_idx[keep], m_all.ravel()]
        value = np.r_[self.values[keep], self.combined.ravel()]
        position = {name: i for i, name in enumerate(self.run_names)}
        last = np.array([position[name] for name in self.run_names], dtype=np.int64)
        order = np.argsort(last[run_at], kind="stable")
        return run_at[order], topic_at[order], measure_at[order], value[order]


def parse_measure_list(measures: Sequence[str | Measure] | str | Any) -> list[Measure]:
    """Measures given as one name, :class:`Measure` or ir_measures object, or a sequence of
    them (:func:`sampleval.measures.names.as_measures`), in the order given, without repeats."""
    from sampleval.measures.names import as_measures

    return list(dict.fromkeys(
        m for item in as_measures(measures)
        for m in ([item] if isinstance(item, Measure) else parse_measures([item]))))


def graded_values(graded: Sequence[RunGrades], index: JudgedIndex, measures: list[Measure],
                  rel_level: int, judged_only: bool) -> np.ndarray:
    """``[topics, measures, runs]`` values of qrels measures on runs reduced by
    :func:`~sampleval.core.graded.run_grades`. Topics are measured apart from each other,
    so each core's thread takes every so many (numpy computes on the ``[runs, ranks]``
    arrays without holding the GIL); the values do not depend on the threads."""
    values = np.zeros((len(index.topics), len(measures), len(graded)))
    workers = max(1, min(os.cpu_count() or 1, len(index.topics)))

    def measure_topics(first: int) -> None:
        positions = range(first, len(index.topics), workers)
        for i, (_, ranked) in zip(positions, ranked_grades(graded, index, judged_only,
                                                            positions), strict=True):
            for j, measure in enumerate(measures):
                values[i, j] = compute(measure, ranked, rel_level)

    with ThreadPoolExecutor(max_workers=workers) as threads:
        list(threads.map(measure_topics, range(workers)))
    return values


def graded_present(graded: Sequence[RunGrades], index: JudgedIndex) -> np.ndarray:
    """``[topics, runs]``: whether each run retrieved documents for each topic."""
    return np.array([g.lengths for g in graded]).reshape(len(graded), len(index.topics)).T > 0


def graded_results(graded: Sequence[RunGrades], index: JudgedIndex,
                   measures: Sequence[str | Measure] = DEFAULT_MEASURES, *,
                   rel_level: int = 1, all_topics: bool = False,
                   judged_only: bool = False) -> ExactResults:
    """Qrels measures on runs already reduced to their grades
    (:func:`~sampleval.core.graded.run_grades`, depth applied there), with the options of
    :func:`sampleval.measures.evaluation.evaluate`."""
    parsed = parse_measure_list(measures)
    values = graded_values(graded, index, parsed, rel_level, judged_only)
    return ExactResults.of([g.name for g in graded], index.topics, parsed, values,
                           graded_present(graded, index), all_topics)


def _combined(values: np.ndarray, included: np.ndarray, measures: Sequence[Measure]
              ) -> np.ndarray:
    """``[measures, runs]``: each measure's aggregate over the included topics (counts
    summed; geometric means of values floored at :data:`GEOMETRIC_FLOOR`)."""
    _, n_measures, n_runs = values.shape
    keep = np.broadcast_to(included[:, None, :], values.shape)
    aggregate = np.array([m.aggregate for m in measures])
    out = np.empty((n_measures, n_runs))
    for kind in ("sum", "mean", "gmean"):  # each measure's topics summed once, exactly
        rows = aggregate == kind
        if not rows.any():
            continue
        part = values[:, rows]
        if kind == "gmean":
            part = np.log(np.maximum(part, GEOMETRIC_FLOOR))
        combined = over_topics(part, keep[:, rows], "sum" if kind == "sum" else "mean")
        out[rows] = np.exp(combined) if kind == "gmean" else combined
    return out


def format_number(value: float, count: bool) -> str:
    """``value`` at full precision (``repr``); as an integer when ``count`` and it is one;
    empty for NaN."""
    if math.isnan(value):
        return ""
    if count and value.is_integer():
        return str(int(value))
    return repr(value)


@functools.cache
def is_count(measure: str) -> bool:
    """Exact counts print as integers; estimated ones (``inum_rel``, ``NumRel~ht``) do not."""
    try:
        return parse_measure(measure).aggregate == "sum"
    except SampleValError:
        return False
