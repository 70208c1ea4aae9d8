"""Judgments of sampled pools, in the two formats NIST's tools read.

- Sampled qrels, as NIST's ``sample_eval`` reads them: ``topic iter docno stratum rel``
  (rel < 0: in the pool, not sampled).
- Million Query prels, as ``statAP_MQ_eval`` reads them: ``qid docno rel method prob``
  (``prob`` the document's inclusion probability).
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import pandas as pd
import pyarrow as pa

from sampleval.core.sample import Sample, pending_count, read_header
from sampleval.errors import InputError, UsageError
from sampleval.io._table import (
    STDIN,
    Column,
    Source,
    TableFormat,
    first_tokens,
    load,
    read_table,
    write_lines,
)
from sampleval.io.qrels import format_grade, read_qrels

SAMPLE_QRELS_FORMAT = TableFormat(
    name="sampled qrels",
    columns=(
        Column("query_id", "token", "topic"),
        Column("iteration", "token", "iter"),
        Column("doc_id", "token", "docno"),
        Column("stratum", "token", "stratum"),
        Column("relevance", "float", "rel"),
    ),
    unique=("query_id", "doc_id"),
)

PRELS_FORMAT = TableFormat(
    name="prels",
    columns=(
        Column("query_id", "token", "qid"),
        Column("doc_id", "token", "docno"),
        Column("relevance", "float", "rel"),
        Column("method", "token", "method"),
        Column("probability", "float", "inclusion probability",
               rule=lambda p: (p > 0) & (p <= 1), rule_text="is not in (0, 1]"),
    ),
    unique=("query_id", "doc_id"),
)


def _frame(table: pa.Table, text_columns: list[str]) -> pd.DataFrame:
    frame = table.to_pandas()
    for column in text_columns:
        frame[column] = frame[column].to_numpy(dtype=object)
    return frame


def read_sample_qrels(path: str | PathLike[str] | Source) -> pd.DataFrame:
    """Read ``topic iter docno stratum rel`` lines into a DataFrame with columns
    ``query_id, iteration, doc_id, stratum, relevance`` (stratum kept as text)."""
    table = read_table(path, SAMPLE_QRELS_FORMAT)
    return _frame(table, ["query_id", "iteration", "doc_id", "stratum"])


def read_prels(path: str | PathLike[str] | Source) -> pd.DataFrame:
    """Read ``qid docno rel method prob`` lines into a DataFrame with columns
    ``query_id, doc_id, relevance, method, probability``; every probability must lie in (0, 1]."""
    return _frame(read_table(path, PRELS_FORMAT), ["query_id", "doc_id", "method"])


def write_sample_qrels(frame: pd.DataFrame, path: str | PathLike[str]) -> None:
    """Write a sampled-qrels DataFrame (columns as :func:`read_sample_qrels` gives them)."""
    iteration = frame["iteration"] if "iteration" in frame.columns else pd.Series(
        "0", index=frame.index)
    write_lines(path, (f"{q} {i} {d} {s} {format_grade(r)}\n" for q, i, d, s, r in zip(
        frame["query_id"], iteration, frame["doc_id"], frame["stratum"], frame["relevance"],
        strict=True)))


def write_prels(frame: pd.DataFrame, path: str | PathLike[str]) -> None:
    """Write a prels DataFrame (columns as :func:`read_prels` gives them)."""
    write_lines(path, (f"{q} {d} {format_grade(r)} {m} {p!r}\n" for q, d, r, m, p in zip(
        frame["query_id"], frame["doc_id"], frame["relevance"], frame["method"],
        frame["probability"], strict=True)))


SAMPLE_FORMATS = ("auto", "sampleval", "qrels", "sample-qrels", "prels")


def load_sample(path: str | PathLike[str], sample_format: str = "auto") -> Sample:
    """A Sample from any of the formats sampleval reads.

    ``sampleval``: a directory written by :meth:`Sample.save`; ``qrels``: ``qid iter docno
    rel`` (negative rel: pooled, not judged; trec_eval's infAP input); ``sample-qrels``:
    NIST's ``topic iter docno stratum rel``; ``prels``: ``qid docno rel method prob``.
    ``auto`` picks by the directory, or by the first line: 4 columns are qrels; 5 columns are
    prels when the third and fifth are numbers, the fifth in (0, 1], and the fourth (the
    method) is not a number; otherwise sampled qrels. A file is read once, so ``-`` (standard
    input) and pipes work.
    """
    if sample_format not in SAMPLE_FORMATS:
        raise UsageError(f"unknown sample format {sample_format!r} "
                         f"(one of {', '.join(SAMPLE_FORMATS)})")
    sample = _load(path, sample_format)
    object.__setattr__(sample, "origin", "standard input" if str(path) == STDIN else str(path))
    return sample


def _load(path: str | PathLike[str], sample_format: str) -> Sample:
    """:func:`load_sample`'s reading, by format."""
    p = Path(path)
    if sample_format == "auto" and str(path) != STDIN and p.is_dir():
        sample_format = "sampleval"
    if sample_format == "sampleval":
        waiting = pending_count(read_header(p))
        if waiting:
            raise UsageError(f"{p}: {waiting} proposed documents have no label yet (listed in "
                             f"{p / 'to-judge.tsv'}): judge them, then import the labels with "
                             f"'sampleval judge {p} JUDGMENTS'")
        return Sample.load(p)
    source = load(path)
    if sample_format == "auto":
        sample_format = _sniff_format(source)
    if sample_format == "qrels":
        return Sample.from_qrels(read_qrels(source))
    if sample_format == "prels":
        return Sample.from_prels(read_prels(source), source=source.name)
    return Sample.from_sample_qrels(read_sample_qrels(source), source=source.name)


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _sniff_format(source: Source) -> str:
    first = first_tokens(source)
    if not first:
        raise InputError(source.name, None, "empty file: no sample lines (qrels, NIST sampled "
                                            "qrels or prels)")
    if len(first) == 4:
        return "qrels"
    if len(first) == 6:
        raise UsageError(f"{source.name}: looks like a TREC run (6 columns), not a sample: give "
                         "the sample first, then the runs (sampleval estimate SAMPLE RUN...)")
    if len(first) == 5:
        rel, method, prob = _number(first[2]), _number(first[3]), _number(first[4])
        is_prels = rel is not None and method is None and prob is not None and 0 < prob <= 1
        return "prels" if is_prels else "sample-qrels"
    raise InputError(source.name, None, f"cannot tell the sample format from {len(first)} "
                                        "columns (give --sample-format)")
