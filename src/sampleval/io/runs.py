"""TREC run files: ``qid Q0 docno rank score tag``, one file or many (directory, glob, list)."""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from sampleval.core.run import Run, check_duplicates, keep_one
from sampleval.errors import InputError
from sampleval.io._source import Prefetch, expand_run_paths
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

__all__ = ["RUN_FORMAT", "expand_run_paths", "file_run_name", "read_run", "read_runs",
           "read_runs_as", "run_of_table", "write_run"]
from sampleval.progress import track

RUN_FORMAT = TableFormat(
    name="TREC run",
    columns=(
        Column("query_id", "dict", "qid"),
        Column("q0", "skip", "Q0"),
        Column("doc_id", "dict", "docno"),
        Column("rank", "skip", "rank"),
        Column("score", "float", "score"),
        Column("tag", "skip", "tag"),
    ),
    unique=("query_id", "doc_id"),
    extra_fields=True,
    repeat_hint="; --duplicates first|last keeps one (duplicates= in the library)",
)
T = TypeVar("T")


def read_run(path: str | PathLike[str] | Source, name: str | None = None,
             duplicates: str = "error") -> Run:
    """Read one TREC run file (plain or gzipped; ``-`` reads standard input; pipes work).

    The second column may hold any token (CLEF files put ``AF``/``NF`` there), fields after
    the sixth are ignored, and the rank column is not trusted: rank documents with
    :meth:`Run.to_frame` or a Pool, which order by score descending and break ties by docno
    descending, as trec_eval does. A docno repeated within a topic is an error, as it is for
    trec_eval ("duplicate docs"), unless ``duplicates`` is ``first`` (keep the occurrence that
    ranks highest) or ``last`` (keep the last line, as sample_eval.pl does and as a dict
    filled line by line, pytrec_eval's input, does). The
    run is named by its tag (the first tag of the file) unless ``name`` is given.
    """
    check_duplicates(duplicates)
    source = load(path)
    table = read_table(source, RUN_FORMAT, unique=duplicates == "error")
    return run_of_table(table, source, name, duplicates)


def run_of_table(table: pa.Table, source: Source, name: str | None, duplicates: str) -> Run:
    """A Run from a table :func:`read_table` read from ``source`` in :data:`RUN_FORMAT`
    (repeats resolved by ``duplicates``, ``first`` or ``last``; ``error``: already checked);
    named ``name``, or else by the tag of the file's first line."""
    if duplicates != "error":
        table = keep_one(table, duplicates)
    run_name = name if name is not None else first_tokens(source)[RUN_FORMAT.width - 1]
    return Run(name=run_name, table=table, source=source.name)


def file_run_name(path: str | PathLike[str]) -> str:
    """A run name from its file: the base name without a ``.gz`` suffix (``stdin`` for
    standard input)."""
    if str(path) == STDIN:
        return "stdin"
    name = Path(path).name
    return name[:-3] if name.endswith(".gz") else name


def read_runs(specs: Sequence[str | PathLike[str]] | str | PathLike[str],
              name_by: str = "tag", progress: bool = False,
              duplicates: str = "error") -> list[Run]:
    """Read many runs: a directory, a glob pattern, a file, or a list of any of these.

    ``name_by="tag"`` names each run by its tag; when two runs share a tag, every run is named
    by its file instead (with a warning). ``name_by="file"`` always names runs by file.
    ``progress`` shows a progress bar on standard error. ``duplicates``: see :func:`read_run`.
    """
    names, runs = read_runs_as(specs, _as_read, name_by, progress, duplicates)
    return [Run(name=n, table=r.table, source=r.source) for n, r in zip(names, runs, strict=True)]


def _as_read(run: Run) -> Run:
    return run


def read_runs_as(specs: Sequence[str | PathLike[str]] | str | PathLike[str],
                 convert: Callable[[Run], T], name_by: str = "tag", progress: bool = False,
                 duplicates: str = "error", prefetch: Prefetch | None = None
                 ) -> tuple[list[str], list[T]]:
    """:func:`read_runs`, each run handed to ``convert`` on its reading thread as soon as it
    is read, and only what ``convert`` returns kept: a command that reduces each run (to
    its grades, say) never holds every run's table. Returns the runs' names (chosen as
    :func:`read_runs` chooses them) and the converted runs, in the order of the files.
    ``prefetch``: the files' bytes are taken from it (a command starts it before its
    imports)."""
    if name_by not in ("tag", "file"):
        raise ValueError(f"name_by must be 'tag' or 'file', not {name_by!r}")
    check_duplicates(duplicates)
    items = [specs] if isinstance(specs, (str, PathLike)) else list(specs)
    paths = expand_run_paths(items)

    def read(path: Path) -> tuple[str, T]:
        run = read_run(path if prefetch is None else prefetch.take(path),
                       duplicates=duplicates)
        return run.name, convert(run)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as workers:
        loaded: Iterable[tuple[str, T]] = workers.map(read, paths)  # ISA-L, Arrow: no GIL
        read_items = list(track(loaded, len(paths), "reading runs", progress))
    names = [name for name, _ in read_items]
    tags = Counter(names)
    shared = sorted(t for t, n in tags.items() if n > 1)
    if name_by == "tag" and shared:
        warnings.warn(f"runs share the tag(s) {', '.join(shared)}: naming runs by file instead",
                      stacklevel=3)
    if name_by == "file" or shared:
        names = [file_run_name(p) for p in paths]
    clash = sorted(n for n, k in Counter(names).items() if k > 1)
    if clash:
        raise InputError(None, None, f"two runs would have the same name: {', '.join(clash)}")
    return names, [item for _, item in read_items]


def write_run(run: Run, path: str | PathLike[str], depth: int | None = None) -> None:
    """Write ``run`` as a TREC run file in trec_eval order, ranks 1..n (gzip if ``.gz``)."""
    frame = run.to_frame(depth)
    lines = (f"{q} Q0 {d} {r} {s!r} {run.name}\n" for q, d, r, s in zip(
        frame["query_id"], frame["doc_id"], frame["rank"], frame["score"], strict=True))
    write_lines(path, lines)

