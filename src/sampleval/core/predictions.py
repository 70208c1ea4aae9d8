"""Predicted relevance: a machine's grade or probability of relevance for any set of documents.

Predictions feed the prediction-powered (difference) estimators (``~ppi``,
:mod:`sampleval.estimation.families.ppi`) and the designs that allocate judgments by predicted
residual spread (``stratified --param size=residual``). A value is a predicted grade, or a
probability of relevance, on the judgments' scale: in [0, max grade]. A document without a
prediction predicts 0, which keeps every estimate unbiased but gives that document none of the
predictions' variance reduction (``docs/guide/predictions.md``).

In the library, predictions are a DataFrame with the columns ``query_id, doc_id,
prediction`` (``Predictions.from_frame``); on disk, a qrels-like file ``qid iter docno value``
(:func:`sampleval.io.predictions.read_predictions`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sampleval.errors import UsageError

COLUMNS = ["query_id", "doc_id", "prediction"]


@dataclass(frozen=True, eq=False)
class Predictions:
    """Predicted values per (topic, document); build with :meth:`from_frame` (checked).

    ``frame``: columns ``query_id, doc_id, prediction`` (text ids, finite values >= 0, each
    document of a topic at most once); ``source``: where they came from (a file name)."""

    frame: pd.DataFrame
    source: str | None = None
    _topics: dict[str, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, init=False, repr=False)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, source: str | None = None) -> Predictions:
        """Predictions from a DataFrame with the columns ``query_id, doc_id, prediction``;
        UsageError on a missing column, a value that is not a finite number >= 0, or a
        document predicted twice for a topic."""
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise UsageError(f"predictions need the columns {', '.join(COLUMNS)}; missing: "
                             f"{', '.join(missing)}")
        values = pd.to_numeric(frame["prediction"], errors="coerce").to_numpy(np.float64)
        table = pd.DataFrame({"query_id": frame["query_id"].astype(str).to_numpy(object),
                              "doc_id": frame["doc_id"].astype(str).to_numpy(object),
                              "prediction": values})
        bad = ~(np.isfinite(values) & (values >= 0))
        if bad.any():
            row = table.iloc[int(np.argmax(bad))]
            raise UsageError(f"prediction {frame['prediction'].iloc[int(np.argmax(bad))]!r} "
                             f"for topic {row.query_id}, document {row.doc_id} is not a "
                             "finite number >= 0")
        repeated = table.duplicated(["query_id", "doc_id"])
        if repeated.any():
            row = table[repeated].iloc[0]
            raise UsageError(f"topic {row.query_id}, document {row.doc_id} is predicted "
                             "more than once")
        return cls(table, source)

    @property
    def largest(self) -> float:
        """The largest predicted value (0 when there are none)."""
        return float(self.frame["prediction"].max()) if len(self.frame) else 0.0

    def check_scale(self, max_grade: float) -> None:
        """UsageError when a value exceeds ``max_grade`` (predictions must be on the
        judgments' scale: a grade, or a probability of relevance)."""
        if self.largest > max_grade:
            row = self.frame.iloc[int(np.argmax(self.frame["prediction"].to_numpy()))]
            where = f" in {self.source}" if self.source else ""
            raise UsageError(f"prediction {row.prediction:g}{where} (topic {row.query_id}, "
                             f"document {row.doc_id}) is above the largest grade judged, "
                             f"{max_grade:g}: predictions must be grades or probabilities "
                             "of relevance on the judgments' scale")

    def coverage(self, frame: pd.DataFrame) -> float:
        """The share of ``frame``'s (``query_id``, ``doc_id``) rows that have a prediction
        (1 for an empty frame)."""
        if not len(frame):
            return 1.0
        keys = pd.MultiIndex.from_arrays([frame["query_id"].astype(str),
                                          frame["doc_id"].astype(str)])
        known = pd.MultiIndex.from_arrays([self.frame["query_id"], self.frame["doc_id"]])
        return float(keys.isin(known).mean())

    def require_coverage(self, frame: pd.DataFrame, documents: str, match: str,
                         warned: str = "", stacklevel: int = 4) -> None:
        """A UsageError if no row of ``frame`` (``documents``, e.g. "the sample's
        documents") has a prediction (``match``: what to check), a warning naming the share
        if only some have; the rest predict 0."""
        share = self.coverage(frame)
        where = f" in {self.source}" if self.source else ""
        if share == 0:
            raise UsageError(f"the predictions{where} name none of {documents} (do their "
                             f"topic ids and docnos match {match}?)")
        if share < 1:
            warnings.warn(f"the predictions{where} cover {share:.1%} of {documents}; the "
                          f"others predict 0 ({warned}see docs/guide/predictions.md)",
                          stacklevel=stacklevel)

    def for_topic(self, topic: str, docnos: np.ndarray) -> np.ndarray:
        """The predicted value of each of ``docnos`` for ``topic`` (0 where none is given)."""
        if not self._topics and len(self.frame):
            self._topics.update(self._split())
        known, values = self._topics.get(topic, (np.zeros(0, dtype=str), np.zeros(0)))
        docnos = np.asarray(docnos, dtype=str)
        if not len(known) or not len(docnos):
            return np.zeros(len(docnos))
        pos = np.minimum(np.searchsorted(known, docnos), len(known) - 1)
        return np.where(known[pos] == docnos, values[pos], 0.0)

    def _split(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per topic: its predicted docnos (sorted) and their values."""
        f = self.frame.sort_values(["query_id", "doc_id"], kind="stable")
        out = {}
        for topic, rows in f.groupby("query_id", sort=False):
            out[str(topic)] = (rows["doc_id"].to_numpy(dtype=object).astype(str),
                               rows["prediction"].to_numpy(dtype=np.float64))
        return out
