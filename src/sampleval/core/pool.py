"""The Pool: what a set of runs retrieved, per topic, as integer arrays every method shares.

For each topic the pool holds

- ``doc_ids``: the union of the documents the runs retrieved (to a depth), as ids into the
  pool's sorted docno vocabulary ``Pool.docnos``; ascending, so also in docno order;
- ``ranking``: a ``[n_runs, width]`` matrix whose row ``i`` lists run ``i``'s documents in
  trec_eval order as indices into ``doc_ids`` (``-1`` pads a shorter run);
- ``lengths``: how many documents each run retrieved for the topic (0: the run lacks it);
- ``labels``: the judgments known so far for each pooled document (``NaN``: not judged).

Selection methods read and extend the labels; estimators and exact measures read the rankings.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pyarrow as pa

from sampleval.core._arrow import packed_keys
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run, sort_topics, sorted_codes, trec_order

PAD = -1


@dataclass(frozen=True, eq=False)
class TopicPool:
    """One topic of a :class:`Pool` (see the module docstring for the fields)."""

    topic: str
    doc_ids: np.ndarray
    ranking: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray

    @property
    def size(self) -> int:
        """Number of pooled documents."""
        return len(self.doc_ids)

    @property
    def present(self) -> np.ndarray:
        """Which runs retrieved anything for this topic."""
        return self.lengths > 0

    def best_rank(self) -> np.ndarray:
        """For each pooled document, the best (smallest, 1-based) rank any run gave it."""
        best = np.full(self.size, np.iinfo(np.int32).max, dtype=np.int64)
        rows, cols = np.nonzero(self.ranking != PAD)
        np.minimum.at(best, self.ranking[rows, cols], cols + 1)
        return best

    def labels_at_ranks(self) -> np.ndarray:
        """``[n_runs, width]`` labels in rank order (``NaN`` for unjudged docs and padding)."""
        padded = np.append(self.labels, np.nan)
        return padded[self.ranking]


@dataclass(frozen=True, eq=False)
class Pool:
    """Per-topic pools of a list of runs; build with :meth:`from_runs`."""

    run_names: tuple[str, ...]
    docnos: np.ndarray
    depth: int | None
    topic_pools: dict[str, TopicPool]

    @property
    def topics(self) -> list[str]:
        return list(self.topic_pools)

    @property
    def n_runs(self) -> int:
        return len(self.run_names)

    def __getitem__(self, topic: str) -> TopicPool:
        return self.topic_pools[topic]

    def __iter__(self) -> Iterator[TopicPool]:
        return iter(self.topic_pools.values())

    def docnos_of(self, topic: str) -> np.ndarray:
        """The docnos of a topic's pooled documents, in pool order."""
        return self.docnos[self.topic_pools[topic].doc_ids]

    @classmethod
    def from_runs(cls, runs: Sequence[Run], depth: int | None = None,
                  qrels: Qrels | None = None, topics: Sequence[str] | None = None,
                  score_type: type[np.floating] = np.float32) -> Pool:
        """Pool ``runs`` to ``depth`` (all they retrieved when None), ranking as trec_eval does.

        ``topics`` fixes the topic set (default: every topic a run retrieved for; topics no
        run retrieved for get empty pools). With ``qrels``, labels are set from them.
        ``score_type``: the precision scores are compared in (see ``trec_order``).
        """
        if depth is not None and depth < 1:
            raise ValueError("depth must be a positive number of documents")
        doc_chunks, bounds = _chunks([r.table["doc_id"] for r in runs])
        vocabulary, doc_col = _sorted_vocabulary(doc_chunks)  # doc_col: each row's doc id
        topic_names, topic_codes = _unified(_chunks([r.table["query_id"] for r in runs])[0])
        # all rows ranked, run after run (int32 where it fits: memory)
        order = np.empty(len(doc_col), dtype=np.int32 if len(doc_col) < 2**31 else np.int64)
        for run, start, end in zip(runs, bounds[:-1], bounds[1:], strict=True):
            np.add(trec_order(topic_codes[start:end], run.table["score"].to_numpy(),
                              doc_col[start:end], score_type), start, out=order[start:end])
        pools = _topic_pools([str(t) for t in topic_names.to_pylist()], topic_codes, doc_col,
                             order, bounds, depth, topics, len(vocabulary))
        pool = cls(run_names=tuple(r.name for r in runs), docnos=vocabulary,
                   depth=depth, topic_pools=pools)
        return pool if qrels is None else pool.with_labels(qrels)

    def subset(self, run_names: Sequence[str]) -> Pool:
        """The pool of some of its runs (in the order given), as :meth:`from_runs` would build
        it from those runs alone at the same depth, without reading them again: each topic
        keeps the documents these runs retrieved, with their labels. The docno vocabulary
        stays the whole pool's (``docnos_of`` is the same either way)."""
        position = {name: i for i, name in enumerate(self.run_names)}
        missing = [name for name in run_names if name not in position]
        if missing:
            raise ValueError(f"runs not in the pool: {', '.join(missing)}")
        rows = np.array([position[name] for name in run_names], dtype=np.int64)
        pools = {}
        for topic, tp in self.topic_pools.items():
            lengths = tp.lengths[rows]
            ranking = tp.ranking[rows, :int(lengths.max(initial=0))]
            used = np.unique(ranking[ranking != PAD])
            local = np.full(tp.size + 1, PAD, dtype=tp.ranking.dtype)  # the last slot: PAD
            local[used] = np.arange(len(used))
            pools[topic] = TopicPool(topic, tp.doc_ids[used], local[ranking], lengths,
                                     tp.labels[used])
        return replace(self, run_names=tuple(run_names), topic_pools=pools)

    def with_labels(self, qrels: Qrels) -> Pool:
        """A pool whose labels are the qrels' grades (``NaN`` where a document has no
        judgment or a negative grade, trec_eval's "in the pool, not judged")."""
        judged = qrels.judged()
        ids = pd.Index(self.docnos).get_indexer(judged["doc_id"].to_numpy())
        by_topic = {t: (ids[rows], judged["relevance"].to_numpy()[rows])
                    for t, rows in judged.groupby("query_id", sort=False).indices.items()}
        pools = {}
        for topic, tp in self.topic_pools.items():
            labels = np.full(tp.size, np.nan)
            if topic in by_topic:
                doc, grade = by_topic[topic]
                known = doc >= 0
                pos = np.searchsorted(tp.doc_ids, doc[known])
                hit = pos < tp.size
                hit[hit] = tp.doc_ids[pos[hit]] == doc[known][hit]
                labels[pos[hit]] = grade[known][hit]
            pools[topic] = replace(tp, labels=labels)
        return replace(self, topic_pools=pools)


def _chunks(columns: list[pa.ChunkedArray]) -> tuple[list[pa.DictionaryArray], np.ndarray]:
    """The chunks of string columns of several tables, dictionary-encoded, and where each
    column's rows start and end among all their rows."""
    kind = pa.dictionary(pa.int32(), pa.string())
    chunks = [chunk for column in columns for chunk in column.cast(kind).chunks]
    return chunks, np.cumsum([0] + [len(column) for column in columns])


def _unified(chunks: list[pa.DictionaryArray]) -> tuple[pa.Array, np.ndarray]:
    """One dictionary for dictionary-encoded chunks, and the codes of all their rows in it
    (int32)."""
    if not chunks:
        return pa.array([], pa.string()), np.zeros(0, np.int32)
    unified = pa.chunked_array(chunks).unify_dictionaries()
    return unified.chunks[0].dictionary, np.concatenate(
        [chunk.indices.to_numpy(zero_copy_only=False) for chunk in unified.chunks])


def _sorted_vocabulary(chunks: list[pa.DictionaryArray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct strings of dictionary-encoded chunks in strcmp order (an object array),
    and each row's position among them (int32)."""
    packed = _packed_vocabulary(chunks)
    if packed is not None:
        return packed
    dictionary, codes = _unified(chunks)
    key = sorted_codes(dictionary)
    order = np.empty_like(key)
    order[key] = np.arange(len(key))  # inverts the permutation; no sort
    vocabulary = np.asarray(dictionary.to_numpy(zero_copy_only=False), dtype=object)
    return vocabulary[order], key.astype(np.int32)[codes]


def _packed_vocabulary(chunks: list[pa.DictionaryArray]) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_sorted_vocabulary` for strings of at most 8 bytes without NUL bytes (TREC-COVID,
    MS MARCO, numeric docnos), None for others: each string becomes an integer that orders
    as strcmp (``_arrow.packed_keys``), and integers unify several times faster."""
    from sampleval.core._kernels import factorize_keys  # numba: only where a Pool is built

    if not chunks:
        return None
    sizes = [len(chunk.dictionary) for chunk in chunks]
    keys = np.empty(sum(sizes), dtype=np.uint64)
    starts = np.cumsum([0, *sizes])
    for chunk, start, end in zip(chunks, starts[:-1], starts[1:], strict=True):
        packed = packed_keys(chunk.dictionary)
        if packed is None:
            return None
        keys[start:end] = packed
    codes, distinct = factorize_keys(keys)
    del keys  # memory: the largest array here, no longer needed
    order = np.argsort(distinct)
    key = np.empty(len(order), dtype=np.int32)
    key[order] = np.arange(len(order))
    entry_key = key[codes]  # each dictionary entry's sorted position
    del codes
    rows = np.empty(sum(len(chunk) for chunk in chunks), dtype=np.int32)
    at = 0
    for chunk, start in zip(chunks, starts[:-1], strict=True):  # into place: no concatenation
        np.take(entry_key[start:], chunk.indices.to_numpy(zero_copy_only=False),
                out=rows[at:at + len(chunk)])
        at += len(chunk)
    return _unpacked(distinct[order]), rows


def _unpacked(keys: np.ndarray) -> np.ndarray:
    """The strings ``_arrow.packed_keys`` made ``keys`` from, as an object array."""
    raw = keys.astype(">u8").view(np.uint8).reshape(-1, 8)
    kept = raw != 0  # the strings' bytes; the zero padding goes
    offsets = np.concatenate([[0], np.cumsum(kept.sum(axis=1))]).astype(np.int32)
    strings = pa.StringArray.from_buffers(len(keys), pa.py_buffer(offsets),
                                          pa.py_buffer(raw[kept]))
    return np.asarray(strings.to_numpy(zero_copy_only=False), dtype=object)


def _topic_pools(topic_names: list[str], topic_codes: np.ndarray, doc_col: np.ndarray,
                 order: np.ndarray, bounds: np.ndarray, depth: int | None,
                 wanted: Sequence[str] | None, n_docs: int) -> dict[str, TopicPool]:
    """The TopicPools of ``wanted`` topics (default: every topic, in natural order) from all
    rows (``core._kernels.topic_rankings`` explains the arguments)."""
    from sampleval.core._kernels import topic_rankings  # numba: only where a Pool is built

    names = sort_topics(topic_names) if wanted is None else list(wanted)
    code_of = {name: i for i, name in enumerate(topic_names)}
    keep = np.zeros(len(topic_names), dtype=bool)
    keep[[code_of[n] for n in names if n in code_of]] = True
    lengths, doc_ids, doc_bounds, rankings, ranking_bounds = topic_rankings(
        topic_codes, doc_col, order, bounds, -1 if depth is None else depth, keep, n_docs)
    n_runs = len(bounds) - 1
    pools: dict[str, TopicPool] = {}
    for name in names:
        code = code_of.get(name)
        if code is None:
            pools[name] = _empty_topic(name, n_runs)
            continue
        ids = doc_ids[doc_bounds[code]:doc_bounds[code + 1]]
        ranking = rankings[ranking_bounds[code]:ranking_bounds[code + 1]].reshape(n_runs, -1)
        pools[name] = TopicPool(topic=name, doc_ids=ids, ranking=ranking,
                                lengths=lengths[code], labels=np.full(len(ids), np.nan))
    return pools


def _empty_topic(name: str, n_runs: int) -> TopicPool:
    return TopicPool(topic=name, doc_ids=np.zeros(0, np.int64),
                     ranking=np.zeros((n_runs, 0), np.int32),
                     lengths=np.zeros(n_runs, np.int32), labels=np.zeros(0))

