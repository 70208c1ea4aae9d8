"""Reading trec_eval's inputs through sampleval's readers, the way trec_eval reads them.

- Results: one run file (``-`` reads standard input); the run is named by the tag of its
  last line, as trec_eval names it.
- Grades are whole numbers for trec_eval (``atol``): ``1.9`` is read as 1, ``-0.5`` as 0.
- Lines starting with ``#`` are comments and fields after the sixth of a run line are ignored
  (trec_eval 10). The readers of ``sampleval.io`` refuse both today; :func:`tolerant` retries
  a refused file with such lines blanked and such fields cut (line numbers kept), so that
  files trec_eval accepts are accepted here. This retry is meant to go once the readers
  accept both themselves.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import numpy as np

from sampleval.core.prefs import GroupQrels, Preferences
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import InputError
from sampleval.io._table import open_text_bytes, read_table
from sampleval.io.prefs import read_group_qrels, read_prefs, read_qrels_prefs
from sampleval.io.qrels import read_qrels
from sampleval.io.runs import RUN_FORMAT

T = TypeVar("T")

def _whole(values: np.ndarray) -> np.ndarray:
    """Grades as trec_eval reads them (C's ``atol``: the integer part)."""
    return np.trunc(values) + 0.0


def read_results(path: str) -> tuple[Run, str]:
    """The run of a results file and its name (the last line's tag)."""
    with _stdin_if_dash(path) as source:
        table = tolerant(lambda p: read_table(p, RUN_FORMAT), source, run_fields=6)
    tags = table["tag"].combine_chunks()
    runid = str(tags.dictionary[tags.indices[len(tags) - 1].as_py()])
    return Run(name=runid, table=table.drop_columns(["tag"]), source=path), runid


def read_rel_info(path: str, rel_format: str) -> Qrels | Preferences | GroupQrels:
    """The judgments of ``-R rel_format``: qrels, prefs, qrels_prefs or qrels_jg."""
    if rel_format == "qrels":
        qrels = tolerant(read_qrels, path)
        return Qrels(frame=qrels.frame.assign(relevance=_whole(qrels.frame["relevance"]
                                                               .to_numpy())),
                     source=qrels.source)
    if rel_format == "qrels_jg":
        groups = tolerant(read_group_qrels, path)
        return GroupQrels(frame=groups.frame.assign(relevance=_whole(
            groups.frame["relevance"].to_numpy())), source=groups.source)
    reader = read_prefs if rel_format == "prefs" else read_qrels_prefs
    return tolerant(reader, path)


def tolerant(reader: Callable[[str], T], path: str, run_fields: int | None = None) -> T:
    """``reader(path)``; when it refuses the file and the file has comment lines (or, for
    runs, lines with more than ``run_fields`` fields), ``reader`` of a copy without them,
    errors naming the original file."""
    try:
        return reader(path)
    except InputError as refused:
        if not Path(path).is_file():
            raise
        with _normalised_copy(Path(path), run_fields) as copy:
            if copy is None:
                raise
            try:
                return reader(str(copy))
            except InputError as error:
                raise InputError(path, error.line, error.message) from None
        raise refused from None


@contextmanager
def _normalised_copy(path: Path, run_fields: int | None) -> Iterator[Path | None]:
    """A temporary copy of ``path`` with comment lines blanked and run lines cut to
    ``run_fields`` fields, or None when the file has neither."""
    changed = False
    with tempfile.TemporaryDirectory(prefix="sampleval-") as tmp:
        copy = Path(tmp) / path.name.removesuffix(".gz")
        with open_text_bytes(path) as source, copy.open("wb") as target:
            for line in source:
                stripped = line.lstrip()
                if stripped.startswith(b"#"):
                    line, changed = b"\n", True
                elif run_fields is not None and len(fields := line.split()) > run_fields:
                    line, changed = b" ".join(fields[:run_fields]) + b"\n", True
                target.write(line)
        yield copy if changed else None


@contextmanager
def _stdin_if_dash(path: str) -> Iterator[str]:
    """``path``, or for ``-`` a temporary file holding standard input."""
    if path != "-":
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="sampleval-") as tmp:
        copy = Path(tmp) / "stdin"
        with copy.open("wb") as target:
            shutil.copyfileobj(sys.stdin.buffer, target)
        yield str(copy)


def read_zscores(path: str) -> dict[tuple[str, str], tuple[float, float]]:
    """trec_eval's ``-Z`` file: lines ``qid measure mean stddev`` -> {(qid, measure):
    (mean, stddev)} (the first line of a repeated pair wins)."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    opener = gzip.open if Path(path).suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != 4:
                    raise InputError(path, number, "expected 4 columns (qid measure mean "
                                                   f"stddev), found {len(fields)}")
                try:
                    mean, stddev = float(fields[2]), float(fields[3])
                except ValueError:
                    raise InputError(path, number, "mean and stddev must be numbers") from None
                out.setdefault((fields[0], fields[1]), (mean, stddev))
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    if not out:
        raise InputError(path, None, "empty file: no z-score lines")
    return out
