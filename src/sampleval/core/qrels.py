"""Relevance judgments: one graded label per (topic, document)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sampleval.core.run import sort_topics
from sampleval.errors import InputError

_COLUMNS = {
    "query_id": ("query_id", "qid", "topic"),
    "doc_id": ("doc_id", "docno", "docid"),
    "relevance": ("relevance", "rel", "label", "grade"),
}


@dataclass(frozen=True, eq=False)
class Qrels:
    """Judgments as a DataFrame with columns ``query_id``, ``doc_id``, ``relevance``
    (float64; a negative grade means "in the pool, not judged", trec_eval's convention) and
    ``iteration`` (the second column of a qrels file, kept only to write it back)."""

    frame: pd.DataFrame
    source: str | None = None

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def topics(self) -> list[str]:
        """Topics with at least one qrels line."""
        return sort_topics(list(pd.unique(self.frame["query_id"])))

    def judged(self) -> pd.DataFrame:
        """The lines that carry a judgment (grade >= 0)."""
        return self.frame[self.frame["relevance"] >= 0]

    def to_frame(self) -> pd.DataFrame:
        """A copy of the judgments, ir_measures column names."""
        return self.frame.copy()

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, source: str | None = None) -> Qrels:
        """Qrels from a DataFrame named as ir_measures/ir_datasets name them (``query_id``,
        ``doc_id``, ``relevance``, optional ``iteration``); ``qid``/``docno``/``rel`` also work.
        A (topic, document) pair judged twice is an error, as it is for trec_eval."""
        picked = {}
        for target, aliases in _COLUMNS.items():
            found = next((a for a in aliases if a in frame.columns), None)
            if found is None:
                raise InputError(source, None, f"qrels frame needs a column {target!r}")
            picked[target] = frame[found]
        relevance = pd.to_numeric(picked["relevance"], errors="coerce").astype(np.float64)
        if not np.isfinite(relevance.to_numpy()).all():
            raise InputError(source, None, "qrels relevance must be finite numbers")
        out = pd.DataFrame({
            "query_id": picked["query_id"].astype(str).to_numpy(dtype=object),
            "doc_id": picked["doc_id"].astype(str).to_numpy(dtype=object),
            "relevance": relevance.to_numpy(),
            "iteration": (frame["iteration"].astype(str).to_numpy(dtype=object)
                          if "iteration" in frame.columns else "0"),
        })
        repeated = out.duplicated(["query_id", "doc_id"]).to_numpy()
        if repeated.any():
            row = out.iloc[int(np.flatnonzero(repeated)[0])]
            raise InputError(source, None, f"document {row.doc_id} is judged twice for topic "
                                           f"{row.query_id}")
        return cls(frame=out, source=source)
