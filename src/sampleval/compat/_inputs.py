"""Reading trec_eval's inputs through sampleval's readers, the way trec_eval reads them.

The readers of :mod:`sampleval.io` already accept what trec_eval 10 accepts ('#' comment
lines, blank lines, fields past the sixth of a run line, ``-`` for standard input); this
module adds only what is particular to trec_eval:

- the run is named by the tag of its *last* line (trec_eval keeps the last line's run_id);
- grades are whole numbers (C's ``atol``): ``1.9`` is read as 1, ``-0.5`` as 0;
- a document a run repeats within a topic is an error only where trec_eval 10 finds it: in a
  topic it evaluates, both occurrences within the first ``-M`` documents of the ranking
  (``form_res_rels.c`` checks after ranking and cutting). Elsewhere the repeat cannot change
  a value and trec_eval evaluates the run; so does :func:`settle_repeats`.

Importing this module, and :func:`read_results`, need numpy and pyarrow only, so the results
file is read while pandas and numba import (as ``sampleval evaluate`` reads its runs).
"""

from __future__ import annotations

import codecs
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sampleval.core._arrow import dictionary_array, has_repeats, numpy_of, repeats
from sampleval.core.run import Run, keep_one, ranks_within, sorted_codes, trec_order
from sampleval.errors import InputError
from sampleval.io._table import Column, Source, TableFormat, last_tokens, load, read_table
from sampleval.io.runs import RUN_FORMAT

if TYPE_CHECKING:
    from sampleval.core.graded import JudgedIndex
    from sampleval.core.prefs import GroupQrels, Preferences

ZSCORE_FORMAT = TableFormat(
    name="z-scores",
    columns=(
        Column("query_id", "token", "qid"),
        Column("measure", "token", "measure"),
        Column("mean", "float", "mean"),
        Column("stddev", "float", "stddev"),
    ),
)


def _whole(values: np.ndarray) -> np.ndarray:
    """Grades as trec_eval reads them (C's ``atol``: the integer part)."""
    return np.trunc(values) + 0.0


def read_results(path: str) -> tuple[Run, Source]:
    """The run of a results file, named by its last line's tag, repeats kept (see
    :func:`settle_repeats`), and the file's bytes (to name lines in errors)."""
    source = load(path)
    table = read_table(source, RUN_FORMAT, unique=False)
    runid = last_tokens(source)[RUN_FORMAT.width - 1]
    return Run(name=runid, table=table, source=source.name), source


def settle_repeats(run: Run, source: Source, topics: Collection[str], depth: int | None,
                   duplicates: str) -> Run:
    """``run`` with one row per (topic, document).

    ``duplicates="error"`` does what trec_eval 10 does: a document repeated within the first
    ``depth`` documents of a topic in ``topics`` is an error naming both lines; other repeats
    (further down, or in topics not evaluated) are dropped, which changes no value (the
    occurrence that ranks highest stays). ``first`` and ``last`` keep one occurrence as
    ``sampleval evaluate --duplicates`` does.
    """
    table = run.table
    if not has_repeats(table, ("query_id", "doc_id")):
        return run
    if duplicates == "error":
        _refuse_counted_repeats(table, source, topics, depth)
        duplicates = "first"
    return Run(name=run.name, table=keep_one(table, duplicates), source=run.source)


def _refuse_counted_repeats(table: pa.Table, source: Source, topics: Collection[str],
                            depth: int | None) -> None:
    """Raise for a repeat trec_eval would find: in ``topics``, within the first ``depth``."""
    qid = dictionary_array(table["query_id"])
    doc = dictionary_array(table["doc_id"])
    q_key = sorted_codes(qid.dictionary)[qid.indices.to_numpy()]
    d_key = sorted_codes(doc.dictionary)[doc.indices.to_numpy()]
    order = trec_order(q_key, table["score"].to_numpy(), d_key)
    counted = order if depth is None else order[ranks_within(q_key[order]) <= depth]
    wanted = np.isin(qid.dictionary.to_numpy(zero_copy_only=False), list(topics))
    counted = counted[wanted[qid.indices.to_numpy()[counted]]]
    within = table.take(pa.array(np.sort(counted)))
    found = repeats(within, ("query_id", "doc_id"))
    if not found.any():
        return
    row = int(np.flatnonzero(found)[0])
    topic, docno = within["query_id"][row].as_py(), within["doc_id"][row].as_py()
    lines = _line_numbers(source, topic, docno)
    within_cut = f" within the top {depth} (-M)" if depth is not None else ""
    raise InputError(source.name, lines[1] if len(lines) > 1 else None,
                     f"topic {topic}: document {docno} repeated{within_cut} (first at line "
                     f"{lines[0]}); trec_eval 10 refuses it too ('duplicate docs'); "
                     "--duplicates first|last keeps one")


def _line_numbers(source: Source, topic: str, docno: str) -> list[int]:
    """The numbers of the lines of ``source`` giving ``docno`` for ``topic`` (error path)."""
    key = (topic.encode(), docno.encode())
    data = source.data.removeprefix(codecs.BOM_UTF8)
    return [number for number, line in enumerate(data.split(b"\n"), start=1)
            if tuple(line.split()[:3:2]) == key]


@dataclass(frozen=True, eq=False)
class QrelsColumns:
    """A qrels file as trec_eval reads it (whole grades), in columns: all the qrels measures
    need (:meth:`index`), with numpy and pyarrow only."""

    query_ids: pa.Array
    doc_ids: pa.Array
    relevance: np.ndarray

    def topics(self) -> list[str]:
        """The topics with a qrels line, in byte order (trec_eval's)."""
        return sorted(map(str, pc.unique(self.query_ids).to_pylist()), key=str.encode)

    def positive(self) -> int:
        """Lines with a grade above 0 (trec_eval's num_rel under ``-c``)."""
        return int(np.count_nonzero(self.relevance > 0))

    def index(self, topics: list[str]) -> JudgedIndex:
        """The lookup table of ``topics``' judgments (:mod:`sampleval.core.graded`)."""
        from sampleval.core.graded import JudgedIndex

        return JudgedIndex.build(self.query_ids, self.doc_ids, self.relevance, topics)


def read_rel_info(path: str, rel_format: str) -> QrelsColumns | Preferences | GroupQrels:
    """The judgments of ``-R rel_format``: qrels (as columns: no pandas), prefs,
    qrels_prefs or qrels_jg."""
    if rel_format == "qrels":
        from sampleval.io.qrels import QRELS_FORMAT

        table = read_table(path, QRELS_FORMAT)
        return QrelsColumns(table["query_id"].combine_chunks(),
                            table["doc_id"].combine_chunks(),
                            _whole(numpy_of(table["relevance"])))
    from sampleval.core.prefs import GroupQrels
    from sampleval.io.prefs import read_group_qrels, read_prefs, read_qrels_prefs

    if rel_format == "qrels_jg":
        groups = read_group_qrels(path)
        return GroupQrels(frame=groups.frame.assign(relevance=_whole(
            groups.frame["relevance"].to_numpy())), source=groups.source)
    reader = read_prefs if rel_format == "prefs" else read_qrels_prefs
    return reader(path)


def read_zscores(path: str) -> dict[tuple[str, str], tuple[float, float]]:
    """trec_eval's ``-Z`` file: lines ``qid measure mean stddev`` -> {(qid, measure):
    (mean, stddev)} (the first line of a repeated pair wins)."""
    table = read_table(path, ZSCORE_FORMAT)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for qid, measure, mean, stddev in zip(*(table[c].to_pylist() for c in table.column_names),
                                          strict=True):
        out.setdefault((qid, measure), (mean, stddev))
    return out
