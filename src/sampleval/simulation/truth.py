"""The truth every estimate is compared with, computed once per simulation.

A sample of the depth-K pool estimates the measure with that pool judged in full: the truth
is the exact measure (trec_eval semantics) of every run, cut at depth K, with every pooled
document labelled as the oracle labels it (its grade in the qrels; 0 when the qrels do not
judge it), so R counts the relevant documents in the pool. Beside it, ``qrels`` holds the
exact measure on the full qrels (R over every judged document, pooled or not), what the
official evaluation reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.relevance import judged_relevance
from sampleval.measures.exact import RankedGrades, compute
from sampleval.measures.names import Measure


@dataclass(frozen=True)
class Truth:
    """Per measure (by its name), ``[topics, runs]`` values in the pool's topic and run
    order: ``pool`` (the truth) and ``qrels``; ``present[t, k]``: run k retrieved for topic
    t; ``num_rel[level]``: each topic's relevant documents in the pool."""

    topics: tuple[str, ...]
    run_names: tuple[str, ...]
    present: np.ndarray
    pool: dict[str, np.ndarray]
    qrels: dict[str, np.ndarray]
    num_rel: dict[float, np.ndarray]


def compute_truth(pool: Pool, qrels: Qrels, measures: Sequence[Measure],
                  levels: Sequence[float]) -> Truth:
    """The truth of ``measures`` over ``pool`` (see the module docstring) and R at each of
    ``levels``."""
    labelled = pool.with_labels(qrels)
    judged = qrels.judged()
    grades = {t: rows["relevance"].to_numpy(dtype=np.float64)
              for t, rows in judged.groupby("query_id", sort=False)}
    shape = (len(pool.topics), pool.n_runs)
    names = [str(m) for m in measures]
    in_pool = {n: np.zeros(shape) for n in names}
    on_qrels = {n: np.zeros(shape) for n in names}
    num_rel = {float(level): np.zeros(shape[0]) for level in levels}
    for t, tp in enumerate(labelled):
        census = np.nan_to_num(tp.labels, nan=0.0)  # the oracle's label of every pooled doc
        at_rank = np.append(census, np.nan)[tp.ranking]
        whole_pool = RankedGrades(at_rank, tp.lengths, census)
        official = RankedGrades(tp.labels_at_ranks(), tp.lengths,
                                grades.get(tp.topic, np.zeros(0)))
        for name, measure in zip(names, measures, strict=True):
            in_pool[name][t] = compute(measure, whole_pool, 1.0)
            on_qrels[name][t] = compute(measure, official, 1.0)
        for level in num_rel:
            num_rel[level][t] = judged_relevance(census, level).sum()
    present = np.array([tp.present for tp in pool]).reshape(shape)
    return Truth(tuple(pool.topics), pool.run_names, present, in_pool, on_qrels, num_rel)
