"""What the library's entry points accept where they need measures, runs, qrels or a sample:
the one home of these conversions (every entry point calls them; anything else is one
:class:`~sampleval.errors.UsageError`, never a raw exception).

``evaluate``, ``estimate`` and ``compare`` take, besides sampleval's own objects:

- measures: one name (``"nDCG@10"``), an ir_measures measure object (``ir_measures.nDCG@10``,
  ``AP(rel=2)``), a :class:`~sampleval.measures.names.Measure`, or a list of them;
- runs: one :class:`Run`, a list of them, a DataFrame with ir_measures column names
  (``query_id``, ``doc_id``, ``score``; a ``run`` column, or trectools' ``system``, splits it
  into several runs, otherwise it is one run named ``run``), a pytrec_eval-style dict
  ``{query_id: {doc_id: score}}`` (one run named ``run``) or ``{run: {query_id: {doc_id:
  score}}}`` (several), or a path, a directory, a glob, or a list of them (read with
  :func:`sampleval.io.read_runs`);
- qrels: a :class:`Qrels`, a DataFrame (``query_id``, ``doc_id``, ``relevance``), a
  pytrec_eval-style dict ``{query_id: {doc_id: relevance}}``, a qrels file, or a sample
  directory whose design is deterministic (its judgments, exactly);
- a sample: a :class:`Sample` or anything :func:`sampleval.io.samples.load_sample` reads;
- predictions (``estimate``, the selectors that take them): a :class:`Predictions`, a
  DataFrame (``query_id``, ``doc_id``, ``prediction``) or a predictions file (read with
  :func:`sampleval.io.predictions.read_predictions`).

Files are read only through :mod:`sampleval.io`, so every format rule lives there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, TypeAlias

import pandas as pd

from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import HEADER, Sample
from sampleval.errors import InputError, UsageError, short_repr

RunsLike: TypeAlias = ("Run | Sequence[Run | str | PathLike[str]] | pd.DataFrame "
                       "| Mapping[str, Any] | str | PathLike[str]")
QrelsLike: TypeAlias = "Qrels | pd.DataFrame | Mapping[str, Any] | str | PathLike[str]"
MeasuresLike: TypeAlias = "str | Any | Sequence[str | Any]"
"""A measure's name, an ir_measures or sampleval Measure object, or a sequence of them."""
SampleLike: TypeAlias = "Sample | str | PathLike[str]"
PredictionsLike: TypeAlias = "Predictions | pd.DataFrame | str | PathLike[str]"

RUN_NAME_COLUMNS = ("run", "system")


def _nested(mapping: Mapping[Any, Any], what: str, value: str) -> pd.DataFrame:
    """``{query_id: {doc_id: number}}`` (pytrec_eval's layout) as a frame ``query_id,
    doc_id, value``."""
    rows = []
    for query, docs in mapping.items():
        if not isinstance(docs, Mapping):
            raise UsageError(f"{what} as a dict must be {{query_id: {{doc_id: {value}}}}} "
                             f"(pytrec_eval's layout); topic {query!r} holds "
                             f"{type(docs).__name__} {short_repr(docs)}")
        for doc, number in docs.items():
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise UsageError(f"{what} as a dict: topic {query!r}, document {doc!r} has "
                                 f"{type(number).__name__} {short_repr(number)}, not a number")
            rows.append((str(query), str(doc), float(number)))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", value])


def runs_from_dict(runs: Mapping[Any, Any]) -> list[Run]:
    """Runs from pytrec_eval's layout: ``{query_id: {doc_id: score}}`` is one run named
    ``run``; ``{run: {query_id: {doc_id: score}}}`` several."""
    first = next(iter(runs.values()), None)
    inner = next(iter(first.values()), None) if isinstance(first, Mapping) else None
    if isinstance(inner, Mapping):
        return [Run.from_frame(_nested(topics, f"run {name!r}", "score"), str(name))
                for name, topics in runs.items()]
    return [Run.from_frame(_nested(runs, "a run", "score"), "run")]


def as_runs(runs: RunsLike) -> list[Run]:
    """A list of Runs from any of the forms in the module docstring."""
    if isinstance(runs, Run):
        return [runs]
    if isinstance(runs, pd.DataFrame):
        return runs_from_frame(runs)
    if isinstance(runs, Mapping):
        return runs_from_dict(runs)
    if isinstance(runs, (str, PathLike)):
        from sampleval.io import read_runs

        return read_runs(runs)
    if not isinstance(runs, (list, tuple)):
        raise UsageError(f"runs must be Runs, a DataFrame, a dict {{query_id: {{doc_id: "
                         f"score}}}} or paths, not {type(runs).__name__} {short_repr(runs)}")
    items = list(runs)
    paths = [item for item in items if isinstance(item, (str, PathLike))]
    if paths and len(paths) == len(items):
        from sampleval.io import read_runs

        return read_runs(paths)
    if all(isinstance(item, Run) for item in items):
        return [item for item in items if isinstance(item, Run)]
    kinds = sorted({type(item).__name__ for item in items})
    raise UsageError(f"runs must be Runs, a DataFrame, a dict {{query_id: {{doc_id: score}}}} "
                     f"or paths, not a list of {', '.join(kinds)}")


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
    if isinstance(qrels, Mapping):
        return Qrels.from_frame(_nested(qrels, "qrels", "relevance"))
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
    raise UsageError(f"qrels must be Qrels, a DataFrame, a dict {{query_id: {{doc_id: "
                     f"relevance}}}} or a path, not {type(qrels).__name__}")


def sample_judgments(sample: Sample, where: str = "the sample") -> Qrels:
    """The judgments of a deterministic sample as qrels (frame documents not judged: grade
    -1, "pooled, not judged"); a sample drawn at random is refused, since exact measures on
    its judged documents alone are biased."""
    if not sample.design.is_deterministic:
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


def as_predictions(predictions: PredictionsLike, max_grade: float | None = None
                   ) -> Predictions:
    """Predictions from any of the forms in the module docstring; a file's values must lie in
    [0, ``max_grade``] (checked line by line as it is read)."""
    if isinstance(predictions, Predictions):
        return predictions
    if isinstance(predictions, pd.DataFrame):
        return Predictions.from_frame(predictions)
    if isinstance(predictions, (str, PathLike)):
        from sampleval.io.predictions import read_predictions

        return read_predictions(predictions, max_grade)
    raise UsageError("predictions must be Predictions, a DataFrame or a path, not "
                     f"{type(predictions).__name__}")
