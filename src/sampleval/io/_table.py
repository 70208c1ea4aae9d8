"""Whitespace-separated text tables (runs, qrels, sampled qrels, prels) read fast and checked.

Every format sampleval reads is a text file of whitespace-separated columns, one record a line,
plain or gzipped, from a file, a pipe (``<(zcat run.gz)``) or standard input (``-``).
:func:`~sampleval.io._source.load` reads the bytes once (inflating gzip, detected by its
magic number, with ISA-L), so pipes, which cannot be read twice, work like files.
:func:`read_table` then parses them into a :class:`pyarrow.Table`:

1. lines starting with ``#`` (comments, as trec_eval 10 allows) are blanked first, only when
   the file has any; a UTF-8 byte-order mark and CRLF line ends are accepted as they are;
2. the fast path: pyarrow's multi-threaded CSV reader, when the first line shows one tab or
   one space between exactly the format's columns and no other white space occurs;
3. the general path, for files that mix separators, pad columns or (runs) carry fields past
   the last column: the bytes are regularised (one space between tokens, none at line ends,
   extra fields cut) and read by the same CSV reader;
4. when parsing fails, or a value is not acceptable, :func:`_locate_error` scans the bytes
   line by line and raises an :class:`~sampleval.errors.InputError` naming the first bad line.

Blank lines are skipped everywhere. Good files pay for the fast path alone.
"""

from __future__ import annotations

import codecs
import gzip
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from sampleval.core._arrow import has_repeats, numpy_of
from sampleval.errors import InputError
from sampleval.io._source import STDIN, STDIN_NAME, Source, load

__all__ = ["STDIN", "STDIN_NAME", "Column", "Source", "TableFormat", "first_tokens", "last_tokens",
           "load", "read_table", "write_lines"]

Kind = Literal["token", "dict", "float", "skip"]
_BOM = codecs.BOM_UTF8
_SNIFF_BYTES = 1 << 16
# Arrow parses a file in blocks of this size: one block (so one dictionary per column, no
# unification later) for files up to 64 MiB, on the calling thread (commands read several
# files on threads of their own); several threads for larger ones
_BLOCK_BYTES = 1 << 26
_COMMENT = re.compile(rb"(?m)^#[^\n]*")
_ALL_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")
_SPACES = re.compile(rb"  +")


Rule = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Column:
    """One column of a format: its name, how it is stored, how errors describe it, and, for
    numbers, an optional rule (a vectorised predicate) with the words that state it."""

    name: str
    kind: Kind
    label: str = ""
    rule: Rule | None = None
    rule_text: str = ""

    @property
    def described(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class TableFormat:
    """A line format: its columns; whether a line may carry fields past them (ignored);
    columns whose values must be unique together, and what to tell a user who repeats them."""

    name: str
    columns: tuple[Column, ...]
    unique: tuple[str, ...] = ()
    extra_fields: bool = False
    repeat_hint: str = ""

    @property
    def width(self) -> int:
        return len(self.columns)

    def layout(self) -> str:
        return " ".join(c.described for c in self.columns)


def _check_text(source: Source) -> None:
    """Refuse binary content (a NUL byte or invalid UTF-8 in the first 64 KiB)."""
    head = source.data[:_SNIFF_BYTES]
    if b"\x00" in head:
        raise InputError(source.name, None, "binary file, not a text table")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        raise InputError(source.name, None, "binary file, not UTF-8 text") from None


def _body(data: bytes) -> bytes:
    """The bytes without a byte-order mark, comment lines blanked (kept as empty lines)."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if b"#" in data and (data.startswith(b"#") or b"\n#" in data):  # memchr first: fast
        data = _COMMENT.sub(b"", data)
    return data


def first_line(data: bytes) -> bytes:
    """The first line holding more than white space (comments and the BOM already gone)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end]
        if line.strip():
            return line.rstrip(b"\r")
        start = end + 1
    return b""


def first_tokens(source: Source) -> list[str]:
    """The tokens of the first data line (blank and comment lines skipped)."""
    return first_line(_body(source.data)).decode("utf-8", "replace").split()


def last_tokens(source: Source) -> list[str]:
    """The tokens of the last data line (blank and comment lines skipped)."""
    body = _body(source.data).rstrip()
    return body[body.rfind(b"\n") + 1:].decode("utf-8", "replace").split()


def _delimiter(body: bytes, width: int) -> str | None:
    """The single-character delimiter the file keeps to, if any: its first line splits into
    exactly ``width`` fields on it and no other white space occurs (fast byte searches)."""
    first = first_line(body)
    for delim in (b"\t", b" "):
        other = b" " if delim == b"\t" else b"\t"
        if len(first.split(delim)) == width and not any(
                bad in body for bad in (other, b"\x0b", b"\x0c")):
            return delim.decode()
    return None


def _regularised(body: bytes, fmt: TableFormat) -> bytes:
    """One space between tokens and none at line ends; for formats that allow it, fields
    past the last column cut off."""
    text = _SPACES.sub(b" ", body.translate(_ALL_SPACE))
    text = text.replace(b" \n", b"\n").replace(b"\n ", b"\n").strip(b" ")
    if fmt.extra_fields:
        token = rb"[^ \n]+"
        text = re.sub(rb"(?m)^((?:%s ){%d}%s) [^\n]*" % (token, fmt.width - 1, token), rb"\1",
                      text)
    return text


def _arrow_type(kind: Kind) -> pa.DataType:
    return {
        "token": pa.string(),
        "dict": pa.dictionary(pa.int32(), pa.string()),
        "float": pa.float64(),
        "skip": pa.binary(),  # checked for empty fields, then dropped: no UTF-8 check
    }[kind]


def _csv_type(kind: Kind) -> pa.DataType:
    """The type the CSV reader gives a column: ``dict`` columns are read as strings and
    encoded after (:func:`_encoded`): Arrow's CSV dictionary converter takes 0.5 s of CPU
    for the two columns of 126 TREC-COVID runs, reading strings then encoding them 0.35 s."""
    return pa.string() if kind == "dict" else _arrow_type(kind)


def _encoded(table: pa.Table, fmt: TableFormat) -> pa.Table:
    """The format's ``dict`` columns dictionary-encoded (a dictionary per chunk)."""
    for c in fmt.columns:
        if c.kind == "dict":
            index = table.schema.get_field_index(c.name)
            table = table.set_column(index, c.name, pc.dictionary_encode(table[c.name]))
    return table


def _read_arrow(data: bytes, fmt: TableFormat, delimiter: str) -> pa.Table | None:
    """Parse with Arrow's CSV reader split on ``delimiter``; None when a line does not have
    the format's fields, a number does not parse, or a field is empty (a doubled delimiter,
    or one at a line's start or end). Columns of kind ``skip`` are checked, then dropped."""
    try:
        table = pcsv.read_csv(
            pa.BufferReader(data),
            read_options=pcsv.ReadOptions(column_names=[c.name for c in fmt.columns],
                                          block_size=_BLOCK_BYTES,
                                          use_threads=len(data) > _BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={c.name: _csv_type(c.kind) for c in fmt.columns},
                strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[]),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    table = _encoded(table, fmt)
    if not all(_non_empty(table[c.name]) for c in fmt.columns if c.kind != "float"):
        return None
    return table.drop_columns([c.name for c in fmt.columns if c.kind == "skip"])


def _non_empty(column: pa.ChunkedArray) -> bool:
    """Whether no value is the empty string (for dictionary columns: no dictionary entry)."""
    for chunk in column.chunks:
        values = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk
        if len(values) and pc.min(pc.binary_length(values)).as_py() == 0:
            return False
    return True


def data_line_numbers(path: str | PathLike[str] | Source) -> list[int]:
    """The line number of each data line of a file, in order (blank and comment lines
    skipped, as every reader skips them): row ``i`` of what a reader returns came from line
    ``data_line_numbers(path)[i]``."""
    return [number for number, _ in _lines(load(path))]


def _lines(source: Source) -> Iterator[tuple[int, list[str]]]:
    """Each data line's number and whitespace-separated tokens (blank and comment lines
    skipped)."""
    data = source.data[len(_BOM):] if source.data.startswith(_BOM) else source.data
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.startswith(b"#"):
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(source.name, number, "not UTF-8 text") from None
        tokens = text.split()
        if tokens:
            yield number, tokens


def _locate_error(source: Source, fmt: TableFormat) -> None:
    """Scan the lines and raise an InputError for the first bad one, if there is one."""
    positions = {c.name: i for i, c in enumerate(fmt.columns)}
    key_at = [positions[name] for name in fmt.unique]
    seen: dict[tuple[str, ...], int] = {}
    for number, tokens in _lines(source):
        if len(tokens) != fmt.width and not (fmt.extra_fields and len(tokens) > fmt.width):
            more = " or more" if fmt.extra_fields else ""
            raise InputError(source.name, number,
                             f"expected {fmt.width}{more} columns ({fmt.layout()}), "
                             f"found {len(tokens)}")
        for column, token in zip(fmt.columns, tokens, strict=False):
            if column.kind == "float":
                try:
                    value = float(token)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value):
                    raise InputError(source.name, number,
                                     f"{column.described} {token!r} is not a finite number")
                if column.rule is not None and not column.rule(np.array([value]))[0]:
                    raise InputError(source.name, number,
                                     f"{column.described} {token} {column.rule_text}")
        if key_at:
            key = tuple(tokens[i] for i in key_at)
            if key in seen:
                what = ", ".join(f"{fmt.columns[i].described} {tokens[i]}" for i in key_at)
                raise InputError(source.name, number, f"{what} repeated (first at line "
                                                      f"{seen[key]}){fmt.repeat_hint}")
            seen[key] = number


def _bad_numbers(table: pa.Table, fmt: TableFormat) -> bool:
    """Whether a parsed table holds numbers the format forbids (non-finite, against a rule)."""
    for c in fmt.columns:
        if c.kind == "float":
            values = numpy_of(table[c.name])
            if not np.isfinite(values).all() or (c.rule is not None and not c.rule(values).all()):
                return True
    return False


def read_table(path: str | PathLike[str] | Source, fmt: TableFormat,
               unique: bool = True) -> pa.Table:
    """Read a whitespace-separated file (or pipe, or ``-``) of format ``fmt``; raise an
    InputError naming the bad line. ``unique=False`` skips the check that the format's
    ``unique`` columns do not repeat (the caller resolves repeats)."""
    source = load(path)
    _check_text(source)
    body = _body(source.data)
    if not re.search(rb"\S", body):
        raise InputError(source.name, None, f"empty file: no {fmt.name} lines")
    delimiter = _delimiter(body, fmt.width)
    table = None if delimiter is None else _read_arrow(body, fmt, delimiter)
    if table is None:
        table = _read_arrow(_regularised(body, fmt), fmt, " ")
    if table is None:
        _locate_error(source, fmt)
        raise InputError(source.name, None, f"cannot parse as {fmt.name} ({fmt.layout()})")
    if table.num_rows == 0:
        raise InputError(source.name, None, f"empty file: no {fmt.name} lines")
    table = _normalised(table, fmt)
    if _bad_numbers(table, fmt) or (unique and fmt.unique and
                                    has_repeats(table, fmt.unique)):
        _locate_error(source, fmt)
    return table


def _normalised(table: pa.Table, fmt: TableFormat) -> pa.Table:
    """Give each column the one Arrow type its kind promises."""
    table = table.replace_schema_metadata(None)
    for c in fmt.columns:
        if c.kind != "skip" and table[c.name].type != _arrow_type(c.kind):
            index = table.schema.get_field_index(c.name)
            table = table.set_column(index, c.name, table[c.name].cast(_arrow_type(c.kind)))
    return table


def write_lines(path: str | PathLike[str], lines: Iterator[str] | Sequence[str]) -> None:
    """Write text lines to ``path`` (gzipped when it ends in ``.gz``), via a temporary file."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line)
    tmp.replace(p)
