"""Preference judgments and qrels of several judgment groups, in trec_eval's formats.

- prefs (``-R prefs``): ``qid group subgroup docno level``; ``level`` a number (0: not
  relevant); the same document may appear in several groups and subgroups.
- qrels read as preferences (``-R qrels_prefs``): ``qid group docno level``, one subgroup
  per group.
- qrels of judgment groups (``-R qrels_jg``): ``qid group docno grade``; a document is judged
  at most once per group.
"""

from __future__ import annotations

from os import PathLike

import pyarrow as pa

from sampleval.core.prefs import GroupQrels, Preferences
from sampleval.io._table import Column, TableFormat, read_table

PREFS_FORMAT = TableFormat(
    name="prefs",
    columns=(
        Column("query_id", "token", "qid"),
        Column("group", "token", "group"),
        Column("subgroup", "token", "subgroup"),
        Column("doc_id", "token", "docno"),
        Column("level", "float", "level"),
    ),
)

QRELS_PREFS_FORMAT = TableFormat(
    name="qrels read as preferences",
    columns=(
        Column("query_id", "token", "qid"),
        Column("group", "token", "group"),
        Column("doc_id", "token", "docno"),
        Column("level", "float", "level"),
    ),
)

GROUP_QRELS_FORMAT = TableFormat(
    name="qrels of judgment groups",
    columns=(
        Column("query_id", "token", "qid"),
        Column("group", "token", "group"),
        Column("doc_id", "token", "docno"),
        Column("relevance", "float", "rel"),
    ),
    unique=("query_id", "group", "doc_id"),
)


def _text_columns(table: pa.Table) -> pa.Table:
    frame = table.to_pandas()
    for column in ("query_id", "group", "subgroup", "doc_id"):
        if column in frame:
            frame[column] = frame[column].to_numpy(dtype=object)
    return frame


def read_prefs(path: str | PathLike[str]) -> Preferences:
    """Read a prefs file (plain or gzipped)."""
    return Preferences(frame=_text_columns(read_table(path, PREFS_FORMAT)), source=str(path))


def read_qrels_prefs(path: str | PathLike[str]) -> Preferences:
    """Read a qrels file as preferences (trec_eval's ``qrels_prefs``): the second column is
    the group, each group a single subgroup."""
    frame = _text_columns(read_table(path, QRELS_PREFS_FORMAT))
    frame.insert(2, "subgroup", "0")
    return Preferences(frame=frame, source=str(path))


def read_group_qrels(path: str | PathLike[str]) -> GroupQrels:
    """Read qrels whose second column names a judgment group (trec_eval's ``qrels_jg``)."""
    return GroupQrels(frame=_text_columns(read_table(path, GROUP_QRELS_FORMAT)),
                      source=str(path))
