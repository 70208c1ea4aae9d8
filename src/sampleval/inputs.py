"""What the library's entry points accept where they need runs, qrels or a sample.

``evaluate`` and ``estimate`` take, besides sampleval's own objects:

- runs: one :class:`Run`, a list of them, a DataFrame with ir_measures column names
  (``query_id``, ``doc_id``, ``score``; a ``run`` column, or trectools' ``system``, splits it
  into several runs, otherwise it is one run named ``run``), or a path, a directory, a glob,
  or a list of them (read with :func:`sampleval.io.read_runs`);
- qrels: a :class:`Qrels`, a DataFrame (``query_id``, ``doc_id``, ``relevance``), a qrels
  file, or a sample directory whose design is deterministic (its judgments, exactly);
- a sample: a :class:`Sample` or anything :func:`sampleval.io.samples.load_sample` reads.

Files are read only through :mod:`sampleval.io`, so every format rule lives there.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TypeAlias

import pandas as pd

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import HEADER, Sample
from sampleval.errors import InputError, UsageError

RunsLike: TypeAlias = "Run | Sequence[Run | str | PathLike[str]] | pd.DataFrame | str | PathLike[str]"
QrelsLike: TypeAlias = "Qrels | pd.DataFrame | str | PathLike[str]"
SampleLike: TypeAlias = "Sample | str | PathLike[str]"

RUN_NAME_COLUMNS = ("run", "system")
DETERMINISTIC_DESIGNS = ("pooled", "census")


def as_runs(runs: RunsLike) -> list[Run]:
    """A list of Runs from any of the forms in the module docstring."""
    if isinstance(runs, Run):
        return [runs]
    if isinstance(runs, pd.DataFrame):
        return runs_from_frame(runs)
    if isinstance(runs, (str, PathLike)):
        from sampleval.io import read_runs

        return read_runs(runs)
    items = list(runs)
    paths = [item for item in items if isinstance(item, (str, PathLike))]
    if paths and len(paths) == len(items):
        from sampleval.io import read_runs

        return read_runs(paths)
    if all(isinstance(item, Run) for item in items):
        return [item for item in items if isinstance(item, Run)]
    kinds = sorted({type(item).__name__ for item in items})
    raise UsageError(f"runs must be Runs, a DataFrame or paths, not a list of {', '.join(kinds)}")


def runs_from_frame(frame: pd.DataFrame, name: str = "run") -> list[Run]:
    """One Run per value of the frame's ``run`` (or ``system``) column, else one Run named
    ``name``."""
    column = next((c for c in RUN_NAME_COLUMNS if c in frame.columns), None)
    if column is None:
        return [Run.from_frame(frame, name)]
    return [Run.from_frame(rows, str(value))
            for value, rows in frame.groupby(column, sort=False)]


def as_qrels(qrels: QrelsLike) -> Qrels:
    """Qrels from any of the forms in the module docstring."""
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, pd.DataFrame):
        return Qrels.from_frame(qrels)
    if isinstance(qrels, Sample):
        return sample_judgments(qrels)
    if isinstance(qrels, (str, PathLike)) and Path(qrels).is_dir():
        from sampleval.io.samples import load_sample

        if not (Path(qrels) / HEADER).is_file():
            raise InputError(qrels, None, f"is a directory, not a qrels file (nor a sample "
                                          f"directory: it holds no {HEADER})")
        return sample_judgments(load_sample(qrels, "sampleval"), str(qrels))
    if isinstance(qrels, (str, PathLike)):
        from sampleval.io import read_qrels

        return read_qrels(qrels)
    raise UsageError(f"qrels must be Qrels, a DataFrame or a path, not {type(qrels).__name__}")


def sample_judgments(sample: Sample, where: str = "the sample") -> Qrels:
    """The judgments of a deterministic sample as qrels (frame documents not judged: grade
    -1, "pooled, not judged"); a sample drawn at random is refused, since exact measures on
    its judged documents alone are biased."""
    if sample.design not in DETERMINISTIC_DESIGNS:
        raise UsageError(f"{where}: a {sample.design} sample, drawn at random: measures "
                         "computed exactly on its judged documents are biased; estimate "
                         f"them with 'sampleval estimate {where} RUN...' (or write its "
                         f"judgments out with 'sampleval export {where} -o FILE --as qrels')")
    return sample.to_qrels()


def as_sample(sample: SampleLike) -> Sample:
    """A Sample from a Sample or a path (:func:`sampleval.io.samples.load_sample`)."""
    if isinstance(sample, Sample):
        return sample
    if isinstance(sample, (str, PathLike)):
        from sampleval.io.samples import load_sample

        return load_sample(sample)
    raise UsageError(f"sample must be a Sample or a path, not {type(sample).__name__}")
