"""Input files as bytes: :func:`load` reads a file, a pipe or standard input (``-``) whole,
inflating gzip (detected by its magic number) with ISA-L; :func:`expand_run_paths` finds the
files a list of files, directories and glob patterns names; :class:`Prefetch` loads files
ahead, on a thread of its own, for readers that parse them in order.

The standard library and ISA-L only: a command starts loading its files while it imports
numpy and pyarrow (ISA-L inflates without holding the GIL, imports hold it).
"""

from __future__ import annotations

import glob
import sys
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import cast

from isal import isal_zlib

from sampleval.errors import InputError

STDIN = "-"
STDIN_NAME = "<stdin>"
_GZIP_MAGIC = b"\x1f\x8b"
# isal's stub types its error class as an instance, hence the cast
_GZIP_ERRORS = (cast(type[Exception], isal_zlib.error), OSError, EOFError)


@dataclass(frozen=True, eq=False)
class Source:
    """A text file's bytes, read once and inflated: a file, a pipe or standard input.
    ``name`` is what messages call it (``<stdin>`` for standard input)."""

    name: str
    data: bytes


def load(path: str | PathLike[str] | Source) -> Source:
    """Read ``path`` (``-``: standard input) whole, inflating gzip (detected by content)."""
    if isinstance(path, Source):
        return path
    if str(path) == STDIN:
        name, raw = STDIN_NAME, sys.stdin.buffer.read()
    else:
        p = Path(path)
        name = str(p)
        if not p.exists():
            raise InputError(p, None, "no such file")
        if p.is_dir():
            raise InputError(p, None, "is a directory, not a file")
        try:
            with p.open("rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise InputError(p, None, f"cannot read: {exc.strerror or exc}") from None
    if raw[:2] == _GZIP_MAGIC:
        raw = _inflate(name, raw)
    return Source(name, raw)


def _inflate(name: str, raw: bytes) -> bytes:
    """The content of gzip data (every member of a concatenated file); ISA-L's inflate is
    about 2.5x zlib's and releases the GIL, so threads inflate files in parallel."""
    parts = []
    try:
        while raw:
            inflater = isal_zlib.decompressobj(wbits=31)
            parts.append(inflater.decompress(raw))
            if not inflater.eof:
                raise InputError(name, None, "truncated gzip data (the file ends early)")
            raw = inflater.unused_data.lstrip(b"\x00")  # gzip allows zero padding
            if raw and raw[:2] != _GZIP_MAGIC:
                raise InputError(name, None, "trailing garbage after the gzip data")
    except _GZIP_ERRORS as exc:
        raise InputError(name, None, f"corrupt gzip data: {exc}") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)


def head_tokens(path: str | PathLike[str], size: int = 1 << 16) -> list[str] | None:
    """The tokens of a file's first data line (blank and ``#`` lines skipped), reading only
    its first ``size`` bytes (gzip inflated); None when the head holds no such text line."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(size)
        if data.startswith(_GZIP_MAGIC):
            from isal import igzip

            with igzip.open(path, "rb") as fh:
                data = fh.read(size)
    except _GZIP_ERRORS:
        return None
    for line in data.split(b"\n")[:-1] if b"\n" in data else [data]:
        if line.startswith(b"#") or not line.strip():
            continue
        try:
            return line.decode("utf-8").split()
        except UnicodeDecodeError:
            return None
    return None


def looks_like_run(path: str | PathLike[str]) -> bool:
    """Whether a file's first data line reads as a TREC run's ``qid Q0 docno rank score
    tag`` (a whole rank, a numeric score)."""
    tokens = head_tokens(path)
    if tokens is None or len(tokens) < 6:
        return False
    try:
        int(tokens[3])
        float(tokens[4])
    except ValueError:
        return False
    return True


def expand_run_paths(specs: Iterable[str | PathLike[str]]) -> list[Path]:
    """Files named by ``specs``: files (and pipes, and ``-`` for standard input) as given,
    directories by their visible files that read as runs (sorted; the others, a README say,
    skipped with one warning), glob patterns by their matches (sorted). A spec that names
    nothing is an error."""
    paths: list[Path] = []
    for spec in specs:
        p = Path(spec)
        if str(spec) == STDIN:
            paths.append(p)
        elif p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
            runs = [f for f in found if looks_like_run(f)]
            if not runs:
                raise InputError(p, None, "directory holds no run files" + (
                    f" (none of its {len(found)} files reads as 'qid Q0 docno rank score "
                    "tag')" if found else ""))
            if len(runs) < len(found):
                import warnings

                others = [f.name for f in found if f not in runs]
                listed = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
                warnings.warn(f"{p}: skipped {len(others)} files that are not TREC runs "
                              f"({listed})", stacklevel=2)
            paths.extend(runs)
        elif p.exists():
            paths.append(p)
        elif glob.has_magic(str(spec)):
            matches = sorted(Path(m) for m in glob.glob(str(spec)) if Path(m).is_file())
            if not matches:
                raise InputError(p, None, "pattern matches no file")
            paths.extend(matches)
        else:
            raise InputError(p, None, "no such file")
    return paths


class Prefetch:
    """Loads ``paths`` (:func:`load`) in order on a thread of its own, holding at most
    ``budget`` bytes of loaded files that :meth:`take` has not yet handed out (always at
    least one file). Readers that take the files in about that order find the first ones
    inflated (while the command imports) and load those the thread has not reached
    themselves; a file that cannot be loaded raises its error from :meth:`take`. Standard
    input is never prefetched (it can be read only once): :meth:`take` loads it.

    Use as a context manager: leaving it stops the thread and drops what was not taken."""

    def __init__(self, paths: Sequence[Path], budget: int) -> None:
        self._order: deque[tuple[Path, Future[Source]]] = deque(
            (p, Future()) for p in dict.fromkeys(paths) if str(p) != STDIN)
        self._loaded = dict(self._order)  # until taken: a taken file is referenced nowhere
        self._budget = budget
        self._held = 0
        self._stop = False
        self._room = threading.Condition()
        self._thread = threading.Thread(target=self._work, name="prefetch", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while self._order:
            path, future = self._order.popleft()
            with self._room:
                self._room.wait_for(lambda: self._stop or self._held < self._budget)
                if self._stop:
                    return
            if not future.set_running_or_notify_cancel():  # a reader took it first
                continue
            try:
                source = load(path)
            except BaseException as exc:  # handed to the reader, raised by take()
                future.set_exception(exc)
                continue
            with self._room:
                self._held += len(source.data)
            future.set_result(source)

    def take(self, path: Path) -> Source:
        """``path`` loaded: its prefetched bytes (waiting while they inflate), or, when the
        thread has not started on it, loaded now on the caller's thread."""
        future = self._loaded.pop(path, None)
        if future is None or future.cancel():
            return load(path)
        source = future.result()
        with self._room:
            self._held -= len(source.data)
            self._room.notify()
        return source

    def close(self) -> None:
        """Stop loading; what was loaded and not taken is dropped."""
        with self._room:
            self._stop = True
            self._room.notify()
        self._loaded.clear()

    def __enter__(self) -> Prefetch:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
