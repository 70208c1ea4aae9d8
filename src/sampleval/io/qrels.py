"""Qrels files: ``qid iter docno rel`` (trec_eval's format; iter may be any token)."""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING

import numpy as np

from sampleval.io._table import Column, Source, TableFormat, load, read_table, write_lines

if TYPE_CHECKING:
    from sampleval.core.qrels import Qrels  # pandas: imported where a Qrels is made

QRELS_FORMAT = TableFormat(
    name="qrels",
    columns=(
        Column("query_id", "token", "qid"),
        Column("iteration", "token", "iter"),
        Column("doc_id", "token", "docno"),
        Column("relevance", "float", "rel"),
    ),
    unique=("query_id", "doc_id"),
)


def read_qrels(path: str | PathLike[str] | Source) -> Qrels:
    """Read a qrels file (plain or gzipped; ``-`` reads standard input; pipes work). Grades
    may be any finite number (``1`` or ``1.0``); a negative grade means "in the pool, not
    judged". A document judged twice for a topic is an error: judgments are never dropped."""
    from sampleval.core.qrels import Qrels

    source = load(path)
    table = read_table(source, QRELS_FORMAT)
    frame = table.to_pandas()
    for column in ("query_id", "iteration", "doc_id"):
        frame[column] = frame[column].to_numpy(dtype=object)
    return Qrels(frame=frame[["query_id", "doc_id", "relevance", "iteration"]],
                 source=source.name)


def format_grade(value: float) -> str:
    """A grade as text: integers without a decimal point, as qrels files write them."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_qrels(qrels: Qrels, path: str | PathLike[str]) -> None:
    """Write ``qrels`` in trec_eval's qrels format (gzip if the name ends in ``.gz``)."""
    f = qrels.frame
    grades = [format_grade(v) for v in np.asarray(f["relevance"])]
    write_lines(path, (f"{q} {i} {d} {g}\n" for q, i, d, g in zip(
        f["query_id"], f["iteration"], f["doc_id"], grades, strict=True)))
