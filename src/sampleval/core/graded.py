"""Each run's grades in trec_eval's ranking, from the run and the qrels alone: what the exact
measures read (:class:`~sampleval.measures.base.RankedGrades`), without building a Pool.

A Pool gives every document of every run an id in one sorted vocabulary, which selection
and estimation need; exact evaluation needs only each retrieved document's grade. So a run
is joined with the qrels on its own (:func:`run_grades`: its docnos looked up among the
qrels' docnos, ranked with :func:`~sampleval.core.run.trec_order`) and reduced to a
:class:`RunGrades`, a float per retrieved document: commands read run files and reduce
each as it arrives, in threads, and never hold all the runs' tables
(:func:`sampleval.io.runs.read_runs_as`). :func:`ranked_grades` then lays the runs side by
side, one topic at a time, as the Pool path (``evaluation.ranked_topics``) does.

numpy and pyarrow only: no pandas, no compiled kernels, so reading threads never wait for
imports.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sampleval.core._arrow import arrow_of, dictionary_array, numpy_of, packed_keys, strings_of
from sampleval.core.run import Run, sorted_codes, trec_order
from sampleval.measures.base import RankedGrades

Strings: TypeAlias = "np.ndarray | pa.Array | pa.ChunkedArray"
DENSE_CELLS = 1 << 22  # (topic, docno) lookup table cells: 16 MB of int32 at most


@dataclass(frozen=True, eq=False)
class JudgedIndex:
    """The qrels of the evaluated ``topics`` as a lookup table: ``keys`` (sorted) are
    ``topic position * len(docnos) + docno position`` of each qrels line, ``grades`` its
    grade (``NaN`` for a negative grade, "in the pool, not judged"), ``pooled`` whether the
    grade is negative (None when no grade is); ``topic_grades`` each topic's judged grades
    (>= 0) in file order. ``line_of``, when the topics times the docnos make at most
    :data:`DENSE_CELLS`, gives each possible key's position in ``keys`` (-1: no line), so a
    lookup is one gather instead of a binary search."""

    topics: tuple[str, ...]
    docnos: pa.Array
    keys: np.ndarray
    grades: np.ndarray
    pooled: np.ndarray | None
    topic_grades: tuple[np.ndarray, ...]
    line_of: np.ndarray | None = None

    @classmethod
    def build(cls, query_ids: Strings, doc_ids: Strings, relevance: np.ndarray,
              topics: Sequence[str]) -> JudgedIndex:
        """From the qrels' columns (strings, strings, float grades) and the topics to
        evaluate, in order."""
        topic_at = _positions(_strings(query_ids), strings_of(list(topics)))
        docs = dictionary_array(_strings(doc_ids))
        doc_at = numpy_of(docs.indices).astype(np.int64)
        wanted = topic_at >= 0
        keys = topic_at[wanted] * max(len(docs.dictionary), 1) + doc_at[wanted]
        grades = relevance[wanted]
        order = np.argsort(keys, kind="stable")
        keys, grades = keys[order], grades[order]
        negative = grades < 0
        by_topic = np.argsort(topic_at[wanted], kind="stable")  # file order within a topic
        judged = relevance[wanted][by_topic]
        bounds = np.searchsorted(topic_at[wanted][by_topic], np.arange(len(topics) + 1))
        topic_grades = tuple(g[g >= 0] for g in np.split(judged, bounds[1:-1]))
        cells = len(topics) * len(docs.dictionary)
        line_of = None
        if cells <= DENSE_CELLS:
            line_of = np.full(cells, -1, dtype=np.int32)
            line_of[keys] = np.arange(len(keys), dtype=np.int32)
        return cls(topics=tuple(topics), docnos=docs.dictionary, keys=keys,
                   grades=np.where(negative, np.nan, grades),
                   pooled=negative if negative.any() else None, topic_grades=topic_grades,
                   line_of=line_of)

    @functools.cached_property
    def topic_array(self) -> pa.Array:
        """:attr:`topics` as an Arrow array (what each run's topics are looked up in)."""
        return strings_of(self.topics)

    def lines(self, topic_at: np.ndarray, docno_at: np.ndarray) -> np.ndarray:
        """The position in :attr:`keys` of each (topic position, docno position) pair's
        qrels line, -1 where there is none."""
        key = topic_at * max(len(self.docnos), 1) + docno_at
        if self.line_of is not None:
            return self.line_of[key]
        if not len(self.keys):
            return np.full(len(key), -1)
        at = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        return np.where(self.keys[at] == key, at, -1)


@dataclass(frozen=True, eq=False)
class RunGrades:
    """One run reduced to what the exact measures read: the grade of each document it
    retrieved for an evaluated topic, topic after topic (in :attr:`JudgedIndex.topics`
    order), in trec_eval's ranking (``NaN``: unjudged); ``pooled``, where an unjudged
    document has a negative grade (None: nowhere); ``lengths``, documents per topic."""

    name: str
    grades: np.ndarray
    pooled: np.ndarray | None
    lengths: np.ndarray


def run_grades(run: Run, index: JudgedIndex, depth: int | None = None,
               score_type: type[np.floating] = np.float32) -> RunGrades:
    """``run`` joined with the qrels of ``index``: its top ``depth`` documents (all when
    None) of each evaluated topic, ranked as trec_eval ranks them (``score_type``: see
    :func:`~sampleval.core.run.trec_order`), with their grades."""
    if depth is not None and depth < 1:
        raise ValueError("depth must be a positive number of documents")
    query = dictionary_array(run.table["query_id"])
    doc = dictionary_array(run.table["doc_id"])
    topic_code = numpy_of(query.indices)
    doc_code = numpy_of(doc.indices)

    def doc_order(rows: np.ndarray) -> np.ndarray:  # strcmp order, for the rows that tie
        keys = packed_keys(doc.dictionary.take(arrow_of(doc_code[rows])))
        return sorted_codes(doc.dictionary)[doc_code[rows]] if keys is None else keys

    order = trec_order(topic_code, numpy_of(run.table["score"]), doc_order, score_type)
    # ``order`` holds each topic's rows in one block, blocks in code order: take the blocks
    # of the evaluated topics in the index's order, each cut to ``depth``
    counts = np.bincount(topic_code, minlength=len(query.dictionary))
    position = _positions(query.dictionary, index.topic_array)
    codes = np.argsort(position, kind="stable")[np.count_nonzero(position < 0):]
    taken = counts[codes] if depth is None else np.minimum(counts[codes], depth)
    shift = (np.cumsum(counts) - counts)[codes] - (np.cumsum(taken) - taken)
    rows = order[np.arange(int(taken.sum())) + np.repeat(shift, taken)]
    topic_at = np.repeat(position[codes], taken)
    docno_at = _positions(doc.dictionary, index.docnos)[doc_code[rows]]
    known = np.flatnonzero(docno_at >= 0)  # docnos the qrels judge for some topic
    at = index.lines(topic_at[known], docno_at[known])
    known, at = known[at >= 0], at[at >= 0]
    grades = np.full(len(rows), np.nan)
    grades[known] = index.grades[at]
    pooled = None
    if index.pooled is not None:
        pooled = np.zeros(len(rows), dtype=bool)
        pooled[known] = index.pooled[at]
    lengths = np.zeros(len(index.topics), dtype=np.int64)
    lengths[position[codes]] = taken
    return RunGrades(run.name, grades, pooled, lengths)


def ranked_grades(runs: Sequence[RunGrades], index: JudgedIndex, judged_only: bool = False,
                  positions: Iterable[int] | None = None) -> Iterator[tuple[str, RankedGrades]]:
    """Each topic of ``index`` (only those at ``positions``, when given) with every run's
    grades side by side (``[n_runs, width]``, ``NaN`` past a run's end), as the exact
    measures read them; ``judged_only``: trec_eval's ``-J``."""
    lengths = np.array([r.lengths for r in runs], dtype=np.int64).reshape(
        len(runs), len(index.topics))
    starts = np.cumsum(lengths, axis=1) - lengths
    any_pooled = any(r.pooled is not None for r in runs)
    for t in range(len(index.topics)) if positions is None else positions:
        topic = index.topics[t]
        width = int(lengths[:, t].max(initial=0))
        grades = np.full((len(runs), width), np.nan)
        pooled = np.zeros((len(runs), width), dtype=bool) if any_pooled else None
        for i, run in enumerate(runs):
            start, n = starts[i, t], lengths[i, t]
            grades[i, :n] = run.grades[start:start + n]
            if pooled is not None and run.pooled is not None:
                pooled[i, :n] = run.pooled[start:start + n]
        ranked = RankedGrades(grades, lengths[:, t].copy(), index.topic_grades[t], pooled)
        yield topic, (ranked.judged_only() if judged_only else ranked)


def _strings(values: Strings) -> pa.Array:
    """A string column as one Arrow array."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values if isinstance(values, pa.Array) else pa.array(values, pa.string())


def _positions(values: pa.Array, among: pa.Array) -> np.ndarray:
    """Each value's position in ``among`` (-1 where absent), int64."""
    return numpy_of(pc.index_in(values, value_set=among), missing=-1).astype(np.int64)


def warn_level_above_grades(levels: Iterable[float], grades: np.ndarray, where: str) -> None:
    """One warning when a relevance level in ``levels`` is above every grade in ``grades``
    (the judgments of ``where``, a file's name): no document counts as relevant there, so
    every measure that counts relevant documents is 0 (trec_eval gives the zeros without
    a word; nDCG reads the grades and is unaffected)."""
    finite = np.asarray(grades, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    above = sorted(level for level in set(levels) if len(finite) and level > finite.max())
    if above:
        shown = ", ".join(f"{level:g}" for level in above)
        warnings.warn(f"{where}: relevance level {shown} is above its largest grade, "
                      f"{finite.max():g}: no document counts as relevant there, so every "
                      "measure counting relevant documents is 0 at that level", stacklevel=3)
