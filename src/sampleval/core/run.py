"""A run: one system's ranked documents per topic, and trec_eval's way of ordering them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sampleval.core._arrow import arrow_of, dictionary_array, numpy_of, repeats
from sampleval.errors import InputError, UsageError

if TYPE_CHECKING:
    import pandas as pd

# pandas and the compiled kernels (numba) are imported where they are used: reading runs
# (io.runs, in background threads) must not wait while the command line imports them.

_QUERY_ALIASES = ("query_id", "qid", "topic")
_DOC_ALIASES = ("doc_id", "docno", "docid")
# what to do with a document a run repeats within a topic (see ``keep_one``)
DUPLICATES = ("error", "first", "last")


DocKey = np.ndarray | Callable[[np.ndarray], np.ndarray]


def trec_order(topic: np.ndarray, score: np.ndarray, doc_key: DocKey,
               score_type: type[np.floating] = np.float32) -> np.ndarray:
    """Permutation that sorts rows as trec_eval does.

    Rows are grouped by ``topic`` (ascending code), then ordered by score descending, ties
    broken by docno descending. ``doc_key`` must order like the docno strings (for example the
    position of each docno in a sorted vocabulary, or :func:`sampleval.core._arrow.packed_keys`):
    trec_eval compares docnos with ``strcmp``, which is the order of their UTF-8 bytes. Scores
    are compared in single precision, as trec_eval stores them (``float sim``): scores that
    differ only beyond float32 precision tie (``score_type=np.float64`` compares as NIST's
    Perl ``sample_eval`` does). The rank column of a run file is ignored, as trec_eval
    ignores it. ``doc_key`` may also be a function giving the keys of the rows it is passed
    (row indices), called for the rows that need one.

    Run files written by trec tools are usually in order already but for ties: then only the
    rows of each tie are sorted (by docno), and only they need a docno key. Otherwise the three keys are packed into one
    64-bit integer when they fit (one sort instead of a three-key lexsort, about 3x faster):
    scores by their order-preserving float32 bits; for double precision, the rare groups that
    tie in float32 only are then re-sorted. All numpy: no compiled kernel, so the exact
    measures start without numba.
    """
    scores = score.astype(score_type, copy=False)
    if _grouped_descending(topic, scores):
        return _ties_by_docno(topic, scores, doc_key)
    if callable(doc_key):
        doc_key = doc_key(np.arange(len(topic)))
    single = score.astype(np.float32)
    topic_bits = max(int(topic.max(initial=0)), 1).bit_length()
    doc_bits = max(int(doc_key.max(initial=0)), 1).bit_length()
    if topic_bits + 32 + doc_bits > 64:
        return np.lexsort((_descending(doc_key), -scores, topic))
    doc_desc = np.uint64((1 << doc_bits) - 1) - doc_key.astype(np.uint64)
    group = (topic.astype(np.uint64) << np.uint64(32)) | _ascending_bits(-single)
    # stable (timsort): run files are nearly in order already, 10x faster than quicksort
    order = np.argsort((group << np.uint64(doc_bits)) | doc_desc, kind="stable")
    if score_type is not np.float32:
        _refine_ties(order, topic, single, scores)
    return order


def _grouped_descending(topic: np.ndarray, score: np.ndarray) -> bool:
    """Whether topics never decrease and scores never increase within a topic."""
    same = topic[1:] == topic[:-1]
    return bool(np.all((topic[1:] > topic[:-1]) | (same & (score[1:] <= score[:-1]))))


def _descending(key: np.ndarray) -> np.ndarray:
    """A key that sorts ascending as ``key`` sorts descending (unsigned keys too)."""
    return ~key if key.dtype.kind == "u" else -key.astype(np.int64)


def _ties_by_docno(topic: np.ndarray, score: np.ndarray, doc_key: DocKey) -> np.ndarray:
    """trec order of rows grouped by topic with scores not increasing: the rows of each
    stretch of equal (topic, score) sorted by docno descending, the rest left in place."""
    order = np.arange(len(topic))
    tie = (topic[1:] == topic[:-1]) & (score[1:] == score[:-1])
    if not tie.any():
        return order
    follows = np.r_[False, tie]  # the row ties the one before it
    tied = np.flatnonzero(np.r_[tie, False] | follows)
    group = np.cumsum(~follows[tied])  # a stretch starts at a tied row that follows none
    key = doc_key(tied) if callable(doc_key) else doc_key[tied]
    same = group[1:] == group[:-1]
    if not np.any(same & (key[1:] >= key[:-1])):  # docnos descend already
        return order
    if not np.any(same & (key[1:] <= key[:-1])):  # ascend (most run files): reverse each
        first = np.flatnonzero(np.r_[True, ~same])
        last = np.r_[first[1:], len(tied)] - 1
        at = group - 1
        order[tied] = tied[first[at] + last[at] - np.arange(len(tied))]
    else:
        order[tied] = tied[np.lexsort((_descending(key), group))]
    return order


def _refine_ties(order: np.ndarray, topic: np.ndarray, single: np.ndarray,
                 score: np.ndarray) -> None:
    """Re-sort, in place, the stretches of ``order`` (rows in trec order by their float32
    scores ``single``) that tie in single precision but not in ``score``'s own precision, by
    score descending (stably: the docno-descending order of ties stays). Float rounding is
    monotone, so the rest of the order already holds."""
    t, s = topic[order], single[order]
    tie = (t[1:] == t[:-1]) & (s[1:] == s[:-1])
    if not np.any(tie & (score[order[1:]] > score[order[:-1]])):
        return
    group = np.cumsum(np.r_[True, ~tie])
    order[:] = order[np.lexsort((-score[order], group))]


def _ascending_bits(values: np.ndarray) -> np.ndarray:
    """uint64 keys that sort like the float32 ``values`` (with -0.0 equal to 0.0)."""
    bits = (values + np.float32(0.0)).view(np.uint32).astype(np.uint64)
    negative = (bits >> np.uint64(31)) == 1
    return np.where(negative, ~bits & np.uint64(0xFFFFFFFF), bits | np.uint64(0x80000000))


def sorted_codes(dictionary: pa.Array) -> np.ndarray:
    """For each entry of a string dictionary, its position in byte-wise (strcmp) order."""
    order = numpy_of(pc.array_sort_indices(dictionary))
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return position


def sort_topics(topics: list[str]) -> list[str]:
    """Topics in natural order: numeric ids by value (2 before 10), then the others by text."""
    return sorted(topics, key=lambda t: (0, int(t), t) if t.isdigit() else (1, 0, t))


def ranks_within(topic_sorted: np.ndarray) -> np.ndarray:
    """1-based rank of each row within its topic, for rows already grouped by topic."""
    n = len(topic_sorted)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, topic_sorted[1:] != topic_sorted[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    return np.arange(n) - group_start + 1


@dataclass(frozen=True, eq=False)
class Run:
    """One system's output: for each topic, scored documents (in file order, not yet ranked).

    ``table`` has the columns ``query_id`` and ``doc_id`` (dictionary-encoded strings) and
    ``score`` (float64). ``name`` is the run's tag (the sixth column of a TREC run file) unless
    the caller chose another; ``source`` is the file it came from, if any.
    """

    name: str
    table: pa.Table
    source: str | None = None

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def topics(self) -> list[str]:
        """The topics this run retrieved documents for."""
        return sort_topics(_present_values(self.table["query_id"]))

    def to_frame(self, depth: int | None = None) -> pd.DataFrame:
        """The run ranked as trec_eval ranks it: columns ``query_id, doc_id, score, rank``."""
        import pandas as pd

        qid = dictionary_array(self.table["query_id"])
        doc = dictionary_array(self.table["doc_id"])
        q_key = sorted_codes(qid.dictionary)[qid.indices.to_numpy()]
        d_key = sorted_codes(doc.dictionary)[doc.indices.to_numpy()]
        score = self.table["score"].to_numpy()
        order = trec_order(q_key, score, d_key)
        rank = ranks_within(q_key[order])
        keep = order if depth is None else order[rank <= depth]
        rank = rank if depth is None else rank[rank <= depth]
        return pd.DataFrame({
            "query_id": qid.dictionary.take(qid.indices.take(pa.array(keep))).to_numpy(
                zero_copy_only=False),
            "doc_id": doc.dictionary.take(doc.indices.take(pa.array(keep))).to_numpy(
                zero_copy_only=False),
            "score": score[keep],
            "rank": rank,
        })

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, name: str, source: str | None = None,
                   duplicates: str = "error") -> Run:
        """A run from a DataFrame with ir_measures/ir_datasets column names.

        Accepts ``query_id`` (or ``qid``), ``doc_id`` (or ``docno``) and ``score``; a ``rank``
        column is ignored, as trec_eval ignores it. A docno repeated within a topic is an
        error unless ``duplicates`` is ``first`` or ``last`` (see :func:`keep_one`).
        """
        import pandas as pd

        check_duplicates(duplicates)
        query = _pick(frame, _QUERY_ALIASES, source)
        doc = _pick(frame, _DOC_ALIASES, source)
        if "score" not in frame.columns:
            raise InputError(source, None, "run frame has no 'score' column")
        score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64)
        if not np.isfinite(score).all():
            bad = int(np.flatnonzero(~np.isfinite(score))[0])
            raise InputError(source, None, f"row {bad}: score {frame['score'].iloc[bad]!r} "
                                           "is not a finite number")
        table = pa.table({
            "query_id": pa.array(frame[query].astype(str).to_numpy()).dictionary_encode(),
            "doc_id": pa.array(frame[doc].astype(str).to_numpy()).dictionary_encode(),
            "score": pa.array(score),
        })
        if duplicates != "error":
            return cls(name=name, table=keep_one(table, duplicates), source=source)
        duplicated = frame.duplicated([query, doc]).to_numpy()
        if duplicated.any():
            row = int(np.flatnonzero(duplicated)[0])
            raise InputError(source, None, f"row {row}: doc_id {frame[doc].iloc[row]} repeats "
                                           f"within query_id {frame[query].iloc[row]} "
                                           "(duplicates='first' or 'last' keeps one)")
        return cls(name=name, table=table, source=source)


def check_duplicates(duplicates: str) -> None:
    """Refuse a ``duplicates`` choice that is not one of :data:`DUPLICATES`."""
    if duplicates not in DUPLICATES:
        raise UsageError(f"duplicates must be one of {', '.join(DUPLICATES)}, "
                         f"not {duplicates!r}")


def keep_one(table: pa.Table, duplicates: str) -> pa.Table:
    """A run table with one row per (query_id, doc_id), rows otherwise in their order.

    ``first`` keeps the occurrence that ranks highest in trec_eval's order (score
    descending, then docno descending: for one docno, the highest score; of equal scores,
    the earlier row); ``last`` keeps the last row, as NIST's ``sample_eval.pl`` and
    dict-based tools such as pytrec_eval do (each line overwrites the one before).
    """
    if duplicates not in ("first", "last"):
        raise UsageError(f"keep_one needs 'first' or 'last', not {duplicates!r}")
    if duplicates == "first":  # highest score first; of equal scores, the earlier row
        order = np.argsort(-numpy_of(table["score"]), kind="stable")
        dropped = np.zeros(table.num_rows, dtype=bool)
        dropped[order] = repeats(table.take(arrow_of(order)), ("query_id", "doc_id"))
    else:
        dropped = repeats(table, ("query_id", "doc_id"), keep="last")
    keep = ~dropped
    return table if keep.all() else table.filter(pa.array(keep))


def _pick(frame: pd.DataFrame, aliases: tuple[str, ...], source: str | None) -> str:
    for name in aliases:
        if name in frame.columns:
            return name
    raise InputError(source, None, f"frame needs one of the columns {', '.join(aliases)}")


def _present_values(column: pa.ChunkedArray) -> list[str]:
    arr = dictionary_array(column)
    used = np.unique(numpy_of(arr.indices))
    return [str(v) for v in arr.dictionary.take(arrow_of(used)).to_pylist()]
