"""Compiled passes over all the runs' rows at once: trec_eval order checks and the Pool's
per-topic ranking matrices (see ``run.py`` and ``pool.py`` for what they mean)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def in_trec_order(topic: np.ndarray, score: np.ndarray, doc_key: np.ndarray) -> bool:
    """Whether the rows already stand in trec_eval order (``run.trec_order``): topic
    ascending, then score descending, then ``doc_key`` descending, every step strict."""
    for i in range(1, len(topic)):
        if topic[i] != topic[i - 1]:
            if topic[i] < topic[i - 1]:
                return False
        elif score[i] != score[i - 1]:
            if score[i] > score[i - 1]:
                return False
        elif doc_key[i] >= doc_key[i - 1]:
            return False
    return True


@numba.njit(cache=True)
def refine_ties(order: np.ndarray, topic: np.ndarray, single: np.ndarray, score: np.ndarray,
                doc_key: np.ndarray) -> None:
    """Re-sort, in place, the stretches of ``order`` (rows in trec order by their float32
    scores ``single``) that tie in single precision but not in ``score``'s own precision, by
    score descending (stably: the docno-descending order of ties stays). Float rounding is
    monotone, so the rest of the order already holds."""
    start = 0
    for i in range(1, len(order) + 1):
        if i < len(order) and topic[order[i]] == topic[order[start]] and (
                single[order[i]] == single[order[start]]):
            continue
        for j in range(start + 1, i):
            if score[order[j]] > score[order[j - 1]]:
                stretch = order[start:i]
                stretch[:] = stretch[np.argsort(-score[stretch], kind="mergesort")]
                break
        start = i


@numba.njit(cache=True)
def topic_rankings(topic: np.ndarray, doc: np.ndarray, order: np.ndarray,
                   run_bounds: np.ndarray, depth: int, wanted: np.ndarray, n_docs: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every wanted topic's pool from all runs' rows in one pass.

    ``topic``/``doc``: int32 topic code and sorted-vocabulary doc id of every row (runs
    concatenated); ``order``: the rows in trec_eval order, run after run, ``run_bounds[i]:
    run_bounds[i + 1]`` being run i's; ``depth``: ranks kept (-1: all); ``wanted``: bool per
    topic code; ``n_docs``: vocabulary size.

    Returns ``lengths`` (``[n_topics, n_runs]`` int32), ``doc_ids`` (each topic's distinct
    doc ids ascending, topics one after another; int64) with ``doc_bounds`` (``[n_topics + 1]``),
    ``rankings`` (each topic's ``[n_runs, width]`` int32 matrix of indices into its doc ids, -1
    padding, flattened one after another) with ``ranking_bounds``.
    """
    n_topics, n_runs = len(wanted), len(run_bounds) - 1
    lengths = np.zeros((n_topics, n_runs), dtype=np.int32)
    for r in range(n_runs):  # ranks: rows of a run's topic counted in order
        for i in range(run_bounds[r], run_bounds[r + 1]):
            t = topic[order[i]]
            if wanted[t] and (depth < 0 or lengths[t, r] < depth):
                lengths[t, r] += 1
    widths = np.zeros(n_topics, dtype=np.int64)
    for t in range(n_topics):
        widths[t] = lengths[t].max() if n_runs else 0
    ranking_bounds = np.zeros(n_topics + 1, dtype=np.int64)
    ranking_bounds[1:] = np.cumsum(widths * n_runs)
    rankings = np.full(ranking_bounds[-1], -1, dtype=np.int32)
    filled = np.zeros((n_topics, n_runs), dtype=np.int32)
    for r in range(n_runs):  # global doc ids into place
        for i in range(run_bounds[r], run_bounds[r + 1]):
            row = order[i]
            t = topic[row]
            if filled[t, r] < lengths[t, r]:
                rankings[ranking_bounds[t] + r * widths[t] + filled[t, r]] = doc[row]
                filled[t, r] += 1
    seen = np.zeros(n_docs, dtype=np.bool_)
    local = np.empty(n_docs, dtype=np.int32)
    doc_bounds = np.zeros(n_topics + 1, dtype=np.int64)
    doc_ids = np.empty(lengths.sum(), dtype=np.int64)
    for t in range(n_topics):  # compact: distinct docs ascending, cells as local indices
        cells = rankings[ranking_bounds[t]:ranking_bounds[t + 1]]
        for d in cells:
            if d >= 0:
                seen[d] = True
        count = doc_bounds[t]
        for d in range(n_docs):
            if seen[d]:
                local[d] = count - doc_bounds[t]
                doc_ids[count] = d
                count += 1
                seen[d] = False
        doc_bounds[t + 1] = count
        for j in range(len(cells)):
            if cells[j] >= 0:
                cells[j] = local[cells[j]]
    return lengths, doc_ids[:doc_bounds[-1]], doc_bounds, rankings, ranking_bounds
