"""The output directory: finished trials written as they come, resumable, then consolidated.

Layout of OUTDIR:

- ``experiment.json``: what the results depend on besides the grid (a fingerprint of the
  pooled runs and of the qrels, depth, measures and the estimator each resolves to on every
  design, seed, the splits) and the last grid run. A directory made from other inputs is
  refused, so results never mix;
- ``parts/<cell key>/tFIRST-LAST.rows.parquet``, ``.stats.parquet`` and ``.topics.parquet``:
  the rows, per-trial statistics and per-topic counts of a cell's trials FIRST..LAST, written
  (to a temporary name, then renamed: the rows file last) as each task finishes. Ctrl-C or a crash loses only unfinished tasks; the
  same command again runs only the trials no part holds, and a changed grid reuses the cells
  it shares with earlier ones;
- ``trials.parquet``, ``trial_stats.parquet`` and ``trial_topics.parquet``: every part of the
  current grid (its cells, trials 0..N-1) in grid order, each cell's mean-over-topics rows (topic ``all``) in their own
  row group before its per-topic rows, so ``filters=[("topic", "==", "all")]`` reads little.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sampleval.errors import UsageError
from sampleval.estimation.engine.views import MEAN_TOPIC
from sampleval.simulation.grid import Cell, Grid
from sampleval.simulation.trial import CATEGORIES, CellResult

MANIFEST = "experiment.json"
TRIALS = "trials.parquet"
STATS = "trial_stats.parquet"
TOPICS = "trial_topics.parquet"
KINDS = (("rows", TRIALS), ("stats", STATS), ("topics", TOPICS))
"""Each kind of part and the table it goes to."""
_PART = re.compile(r"^t(\d+)-(\d+)\.rows\.parquet$")


class Store:
    """An output directory (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    @property
    def parts(self) -> Path:
        return self.directory / "parts"

    def open(self, inputs: dict[str, Any], grid: Grid,
             about: dict[str, Any] | None = None) -> None:
        """Create the directory, or check that it was made from the same ``inputs``; record
        the grid and ``about`` (descriptions for the report)."""
        manifest = self.directory / MANIFEST
        if manifest.exists():
            previous = json.loads(manifest.read_text())
            changed = sorted(k for k in set(previous.get("inputs", {})) | set(inputs)
                             if previous.get("inputs", {}).get(k) != inputs.get(k))
            if changed:
                raise UsageError(f"{self.directory} holds a simulation with other "
                                 f"{', '.join(changed)}{_estimators_changed(previous, inputs)}"
                                 ": give another -o, or remove it")
        elif self.directory.exists() and any(self.directory.iterdir()):
            raise UsageError(f"{self.directory} is not empty and holds no {MANIFEST}: give "
                             "another -o")
        self.parts.mkdir(parents=True, exist_ok=True)
        _write_text(manifest, json.dumps({"inputs": inputs, "grid": grid.describe(),
                                          "about": about or {}}, indent=2) + "\n")

    def manifest(self) -> dict[str, Any]:
        path = self.directory / MANIFEST
        if not path.exists():
            raise UsageError(f"{self.directory} holds no simulation ({MANIFEST} missing)")
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def done(self, cell: Cell) -> set[int]:
        """The trials of ``cell`` that finished parts hold."""
        folder = self.parts / cell.key
        trials: set[int] = set()
        if folder.is_dir():
            for path in folder.iterdir():
                match = _PART.match(path.name)
                if match:
                    trials.update(range(int(match[1]), int(match[2]) + 1))
        return trials

    def write(self, result: CellResult) -> None:
        """A finished task's rows and statistics, each file written whole or not at all."""
        trials = result.task.trials
        folder = self.parts / result.task.cell.key
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"t{trials[0]:05d}-{trials[-1]:05d}"
        _write_parquet(result.stats, folder / f"{stem}.stats.parquet")
        _write_parquet(result.topics, folder / f"{stem}.topics.parquet")
        _write_parquet(result.rows, folder / f"{stem}.rows.parquet")  # last: marks it done

    def cell_tables(self, cell: Cell, trials: int, kind: str) -> pd.DataFrame | None:
        """The ``kind`` (``rows`` or ``stats``) of ``cell``'s trials below ``trials``, in trial
        order (None when no part holds any)."""
        folder = self.parts / cell.key
        if not folder.is_dir():
            return None
        frames = []
        for path in sorted(folder.iterdir()):
            match = _PART.match(path.name)
            if match and int(match[1]) < trials:
                stem = path.name.removesuffix(".rows.parquet")
                part = path.with_name(f"{stem}.{kind}.parquet")
                if not part.exists():  # topics: absent from parts written before them
                    continue
                frame = pd.read_parquet(part)
                frames.append(frame[frame["trial"] < trials])
        if not frames:
            return None
        out = pd.concat(frames, ignore_index=True)
        return out.sort_values("trial", kind="stable").reset_index(drop=True)

    def consolidate(self, grid: Grid) -> None:
        """Write the tables of ``grid`` (:data:`KINDS`) from the parts (trial_topics.parquet
        only when every part has its topics)."""
        for kind, name in KINDS:
            if kind == "topics" and not self._complete(kind, grid):
                (self.directory / name).unlink(missing_ok=True)
                continue
            tables = (self.cell_tables(cell, grid.trials, kind) for cell in grid.cells())
            _write_all(self.directory / name, (t for t in tables if t is not None),
                       split_means=kind == "rows")

    def _complete(self, kind: str, grid: Grid) -> bool:
        """Whether every part of ``grid``'s cells has its ``kind`` file."""
        for cell in grid.cells():
            folder = self.parts / cell.key
            for path in folder.glob("*.rows.parquet") if folder.is_dir() else ():
                stem = path.name.removesuffix(".rows.parquet")
                if _PART.match(path.name) and not path.with_name(
                        f"{stem}.{kind}.parquet").exists():
                    return False
        return True

    def read_means(self, filters: list[tuple[str, str, Any]] | None = None) -> pd.DataFrame:
        """The mean-over-topics rows of trials.parquet (and ``filters``, pyarrow's)."""
        return pd.read_parquet(self.directory / TRIALS,
                               filters=[("topic", "==", MEAN_TOPIC), *(filters or [])])

    def read_stats(self) -> pd.DataFrame:
        return pd.read_parquet(self.directory / STATS)


def _arrow(frame: pd.DataFrame) -> pa.Table:
    """A frame as an Arrow table whose text columns are dictionaries with int32 indices (the
    same schema whatever a part's number of distinct values)."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    fields = [pa.field(f.name, pa.dictionary(pa.int32(), pa.string()))
              if f.name in CATEGORIES else f for f in table.schema]
    return table.cast(pa.schema(fields))


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    partial = path.with_name(path.name + ".partial")
    pq.write_table(_arrow(frame), partial, compression="zstd")
    os.replace(partial, path)


def _write_all(path: Path, frames: Iterable[pd.DataFrame], split_means: bool) -> None:
    """Stream ``frames`` into one Parquet file (mean rows first in each, as their own row
    group, when ``split_means``)."""
    partial = path.with_name(path.name + ".partial")
    writer: pq.ParquetWriter | None = None
    try:
        for frame in frames:
            for part in _means_first(frame) if split_means else [frame]:
                table = _arrow(part)
                if writer is None:
                    writer = pq.ParquetWriter(partial, table.schema, compression="zstd")
                writer.write_table(table.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise UsageError(f"no finished trials to write to {path}")
    os.replace(partial, path)


def _means_first(frame: pd.DataFrame) -> Iterator[pd.DataFrame]:
    means = (frame["topic"] == MEAN_TOPIC).to_numpy()
    for part in (frame[means], frame[~means]):
        if len(part):
            yield part


def _write_text(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def _estimators_changed(previous: dict[str, Any], inputs: dict[str, Any]) -> str:
    """Where a directory's estimators differ from today's (``inputs["estimators"]``: per
    measure and design, what it resolves to), the first difference, for the error message:
    a directory made under other defaults says which default moved."""
    before = previous.get("inputs", {}).get("estimators")
    now = inputs.get("estimators", {})
    if before == now:
        return ""
    if before is None:
        return " (it was made before simulate recorded what each measure resolves to)"
    for measure, designs in now.items():
        for design, resolved in designs.items():
            then = before.get(measure, {}).get(design)
            if then != resolved:
                return (f" ({measure} on {design} samples: {then or 'nothing'} there, "
                        f"{resolved or 'nothing'} now)")
    return ""
