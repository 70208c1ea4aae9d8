"""Predictions files: ``qid iter docno value``, a qrels-like line per predicted document.

``value`` is a predicted grade or a probability of relevance, in [0, max grade]; ``iter`` may
be any token (ignored). Read with the qrels' rules (:mod:`._table`): any whitespace between
columns, plain or gzipped, one line per (topic, document), and bad input reported as one
line naming the file and the line.
"""

from __future__ import annotations

from os import PathLike

import numpy as np
import pandas as pd

from sampleval.core.predictions import Predictions
from sampleval.io._table import Column, TableFormat, read_table, write_lines


def predictions_format(max_grade: float | None = None) -> TableFormat:
    """The line format, its values checked to lie in [0, ``max_grade``] (no upper bound
    when None)."""
    top = np.inf if max_grade is None else float(max_grade)

    def rule(values: np.ndarray) -> np.ndarray:
        return (values >= 0) & (values <= top)

    text = ("is negative (values are grades or probabilities)" if max_grade is None else
            f"is not in [0, {top:g}] (values are grades or probabilities of relevance on "
            "the judgments' scale)")
    return TableFormat(
        name="predictions",
        columns=(
            Column("query_id", "token", "qid"),
            Column("iteration", "skip", "iter"),
            Column("doc_id", "token", "docno"),
            Column("prediction", "float", "value", rule=rule, rule_text=text),
        ),
        unique=("query_id", "doc_id"),
    )


def read_predictions(path: str | PathLike[str], max_grade: float | None = None
                     ) -> Predictions:
    """Read a predictions file (plain or gzipped); values must lie in [0, ``max_grade``]."""
    table = read_table(path, predictions_format(max_grade))
    frame = table.to_pandas()
    for column in ("query_id", "doc_id"):
        frame[column] = frame[column].to_numpy(dtype=object)
    return Predictions(frame=frame[["query_id", "doc_id", "prediction"]], source=str(path))


def write_predictions(predictions: Predictions | pd.DataFrame,
                      path: str | PathLike[str]) -> None:
    """Write predictions as ``qid 0 docno value`` lines (gzip if the name ends in ``.gz``)."""
    f = predictions.frame if isinstance(predictions, Predictions) else predictions
    values = np.asarray(f["prediction"], dtype=np.float64)
    write_lines(path, (f"{q} 0 {d} {v:.17g}\n" for q, d, v in zip(
        f["query_id"], f["doc_id"], values, strict=True)))
