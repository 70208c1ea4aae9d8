"""Whitespace-separated text tables (runs, qrels, sampled qrels, prels) read fast and checked.

Every format sampleval reads is a text file of whitespace-separated columns, one record a line,
plain or gzipped. :func:`read_table` reads one into a :class:`pyarrow.Table`:

1. a fast path: pyarrow's multi-threaded CSV reader, used when the first line shows a single
   tab or a single space between columns;
2. a general path: pandas' C parser splitting on any run of whitespace (files that mix
   separators or pad columns);
3. when either path fails, or a value is not acceptable, :func:`_locate_error` streams the file
   line by line and raises an :class:`~sampleval.errors.InputError` naming the first bad line.

The slow scan only runs on bad input, so good files pay for the fast path alone.
"""

from __future__ import annotations

import codecs
import gzip
import math
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import IO, Literal, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from sampleval.errors import InputError

Kind = Literal["token", "dict", "float", "skip"]
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 1 << 16


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
    """A line format: its columns and, optionally, columns whose values must be unique together."""

    name: str
    columns: tuple[Column, ...]
    unique: tuple[str, ...] = ()

    @property
    def width(self) -> int:
        return len(self.columns)

    def layout(self) -> str:
        return " ".join(c.described for c in self.columns)


def as_path(path: str | PathLike[str]) -> Path:
    """Check that ``path`` names a readable file; return it as a Path."""
    p = Path(path)
    if not p.exists():
        raise InputError(p, None, "no such file")
    if p.is_dir():
        raise InputError(p, None, "is a directory, not a file")
    return p


def open_text_bytes(path: Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, decompressing gzip transparently (by magic number)."""
    try:
        with path.open("rb") as probe:
            magic = probe.read(2)
        if magic == _GZIP_MAGIC:
            return cast(IO[bytes], gzip.open(path, "rb"))
        return path.open("rb")
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None


def _sniff(path: Path) -> bytes:
    """The first bytes of the (decompressed) file, checked to be text."""
    try:
        with open_text_bytes(path) as fh:
            head = fh.read(_SNIFF_BYTES)
    except (OSError, EOFError) as exc:
        raise InputError(path, None, f"cannot read (corrupt gzip?): {exc}") from None
    if b"\x00" in head:
        raise InputError(path, None, "binary file, not a text table")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        raise InputError(path, None, "binary file, not UTF-8 text") from None
    return head


def _delimiter(head: bytes, width: int) -> str | None:
    """The single-character delimiter the first line uses, if it uses exactly one."""
    first = next((ln for ln in head.split(b"\n") if ln.strip()), b"").rstrip(b"\r")
    for delim in (b"\t", b" "):
        if len(first.split(delim)) == width:
            return delim.decode()
    return None


def _arrow_type(kind: Kind) -> pa.DataType:
    return {
        "token": pa.string(),
        "dict": pa.dictionary(pa.int32(), pa.string()),
        "float": pa.float64(),
        "skip": pa.dictionary(pa.int32(), pa.string()),
    }[kind]


def _read_arrow(path: Path, fmt: TableFormat, delimiter: str, gz: bool) -> pa.Table | None:
    """Parse with Arrow's CSV reader split on ``delimiter``; None when the file does not keep
    to one delimiter between non-empty tokens (then the whitespace parser takes over)."""
    stream = pa.input_stream(str(path), compression="gzip" if gz else None)
    try:
        table = pcsv.read_csv(
            stream,
            read_options=pcsv.ReadOptions(column_names=[c.name for c in fmt.columns]),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={c.name: _arrow_type(c.kind) for c in fmt.columns},
                strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[]),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None
    if not all(_clean_tokens(table[c.name]) for c in fmt.columns if c.kind != "float"):
        return None
    return table.drop_columns([c.name for c in fmt.columns if c.kind == "skip"])


def _clean_tokens(column: pa.ChunkedArray) -> bool:
    """Whether every value is a non-empty token without white space (for dictionary columns
    only the distinct values are checked)."""
    chunks = [c.dictionary if pa.types.is_dictionary(c.type) else c for c in column.chunks]
    return all(pc.all(pc.match_substring_regex(c, r"^\S+$")).as_py() in (True, None)
               for c in chunks)


def _read_pandas(path: Path, fmt: TableFormat, gz: bool) -> pa.Table:
    """Parse splitting on any run of white space. Numbers are read as text and converted by
    Arrow (correctly rounded, as strtod is); a short or long line raises ValueError."""
    dtypes = {c.name: ("category" if c.kind in ("dict", "skip") else str) for c in fmt.columns}
    frame = pd.read_csv(
        path, sep=r"\s+", header=None, names=[c.name for c in fmt.columns], dtype=dtypes,
        engine="c", na_filter=False, quoting=3, compression="gzip" if gz else None,
        skip_blank_lines=True,
    )
    if any((frame[c].astype(str) == "").any() for c in frame):  # a short line's missing cells
        raise ValueError("short line")
    keep = [c.name for c in fmt.columns if c.kind != "skip"]
    return pa.Table.from_pandas(frame[keep], preserve_index=False)


def _tokens(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Each non-blank line's number and whitespace-separated tokens."""
    number = 0
    with open_text_bytes(path) as raw:
        try:
            for number, line in enumerate(raw, start=1):
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(path, number, "not UTF-8 text") from None
                tokens = text.split()
                if tokens:
                    yield number, tokens
        except (EOFError, OSError, zlib.error):
            raise InputError(path, None,
                             f"corrupt or truncated gzip data after line {number}") from None


def _locate_error(path: Path, fmt: TableFormat) -> None:
    """Stream the file and raise an InputError for its first bad line, if it has one."""
    positions = {c.name: i for i, c in enumerate(fmt.columns)}
    key_at = [positions[name] for name in fmt.unique]
    seen: dict[tuple[str, ...], int] = {}
    for number, tokens in _tokens(path):
        if len(tokens) != fmt.width:
            raise InputError(path, number, f"expected {fmt.width} columns ({fmt.layout()}), "
                                           f"found {len(tokens)}")
        for column, token in zip(fmt.columns, tokens, strict=True):
            if column.kind == "float":
                try:
                    value = float(token)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value):
                    raise InputError(path, number,
                                     f"{column.described} {token!r} is not a finite number")
                if column.rule is not None and not column.rule(np.array([value]))[0]:
                    raise InputError(path, number,
                                     f"{column.described} {token} {column.rule_text}")
        if key_at:
            key = tuple(tokens[i] for i in key_at)
            if key in seen:
                what = ", ".join(f"{fmt.columns[i].described} {tokens[i]}" for i in key_at)
                raise InputError(path, number, f"{what} repeated (first at line {seen[key]})")
            seen[key] = number


def _bad_values(table: pa.Table, fmt: TableFormat) -> bool:
    """Whether a parsed table holds values the format forbids (non-finite numbers, repeats)."""
    for c in fmt.columns:
        if c.kind == "float":
            values = table[c.name].to_numpy()
            if not np.isfinite(values).all() or (c.rule is not None and not c.rule(values).all()):
                return True
    if fmt.unique:
        key = np.zeros(table.num_rows, dtype=np.int64)
        for name in fmt.unique:
            codes = _codes(table[name]).astype(np.int64)
            key = key * (int(codes.max(initial=0)) + 1) + codes
        return len(pd.unique(key)) != len(key)
    return False


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Integer codes of a string column (equal codes for equal strings)."""
    if pa.types.is_dictionary(column.type):
        combined = column.unify_dictionaries().combine_chunks()
        return combined.indices.to_numpy(zero_copy_only=False)
    return pd.factorize(column.to_numpy(zero_copy_only=False))[0]


def read_table(path: str | PathLike[str], fmt: TableFormat) -> pa.Table:
    """Read a whitespace-separated file of format ``fmt``; raise InputError naming the bad line."""
    p = as_path(path)
    head = _sniff(p)
    if not head.strip():
        raise InputError(p, None, f"empty file: no {fmt.name} lines")
    gz = _is_gzip(p)
    delimiter = _delimiter(head, fmt.width)
    table = None if delimiter is None else _read_arrow(p, fmt, delimiter, gz)
    if table is None:
        try:
            table = _normalised(_read_pandas(p, fmt, gz), fmt)
        except (ValueError, pd.errors.ParserError, pa.ArrowInvalid, OSError, EOFError,
                zlib.error):
            _locate_error(p, fmt)
            raise InputError(p, None, f"cannot parse as {fmt.name} ({fmt.layout()})") from None
    if table.num_rows == 0:
        raise InputError(p, None, f"empty file: no {fmt.name} lines")
    table = _normalised(table, fmt)
    if _bad_values(table, fmt):
        _locate_error(p, fmt)
    return table


def _normalised(table: pa.Table, fmt: TableFormat) -> pa.Table:
    """Give each column the one Arrow type its kind promises, whichever parser read it."""
    table = table.replace_schema_metadata(None)
    for c in fmt.columns:
        if c.kind != "skip" and table[c.name].type != _arrow_type(c.kind):
            index = table.schema.get_field_index(c.name)
            table = table.set_column(index, c.name, table[c.name].cast(_arrow_type(c.kind)))
    return table


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def write_lines(path: str | PathLike[str], lines: Iterator[str] | Sequence[str]) -> None:
    """Write text lines to ``path`` (gzipped when it ends in ``.gz``), via a temporary file."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line)
    tmp.replace(p)
