"""Judgments beyond one grade per document: preferences, and qrels of several judgment groups.

trec_eval reads both (``-R prefs``, ``-R qrels_prefs``, ``-R qrels_jg``):

- :class:`Preferences`: lines ``qid group subgroup docno level``. Within a subgroup, a
  document with a higher level is preferred to one with a lower level; a group (one user's
  judgments) joins its subgroups, and its preferences are transitive; level 0 means
  "not relevant". A plain qrels file read as preferences (``qrels_prefs``) is one subgroup
  per group, the group being the qrels' second column.
- :class:`GroupQrels`: qrels lines ``qid group docno grade``, one set of graded judgments per
  group (several users judging the same documents).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from sampleval.core.qrels import Qrels
from sampleval.core.run import sort_topics


@dataclass(frozen=True, eq=False)
class Preferences:
    """Preference judgments: a DataFrame with columns ``query_id``, ``group``,
    ``subgroup``, ``doc_id`` (strings) and ``level`` (float64), one row a line."""

    frame: pd.DataFrame
    source: str | None = None

    @property
    def topics(self) -> list[str]:
        return sort_topics(list(pd.unique(self.frame["query_id"])))

    @classmethod
    def from_qrels(cls, qrels: Qrels) -> Preferences:
        """A qrels file read as preferences (trec_eval's ``qrels_prefs``): its second column
        is the group, each group one subgroup, grades the levels."""
        f = qrels.frame
        frame = pd.DataFrame({"query_id": f["query_id"].to_numpy(),
                              "group": f["iteration"].astype(str).to_numpy(dtype=object),
                              "subgroup": "0", "doc_id": f["doc_id"].to_numpy(),
                              "level": f["relevance"].to_numpy(dtype=float)})
        return cls(frame=frame, source=qrels.source)


@dataclass(frozen=True, eq=False)
class GroupQrels:
    """Qrels of several judgment groups: columns ``query_id``, ``group``, ``doc_id`` and
    ``relevance`` (float64; negative: in the pool, not judged)."""

    frame: pd.DataFrame
    source: str | None = None

    @property
    def topics(self) -> list[str]:
        return sort_topics(list(pd.unique(self.frame["query_id"])))

    @classmethod
    def from_qrels(cls, qrels: Qrels) -> GroupQrels:
        """A qrels file whose second column names the judgment group."""
        f = qrels.frame
        return cls(frame=pd.DataFrame({
            "query_id": f["query_id"].to_numpy(),
            "group": f["iteration"].astype(str).to_numpy(dtype=object),
            "doc_id": f["doc_id"].to_numpy(), "relevance": f["relevance"].to_numpy()}),
            source=qrels.source)

    def groups(self) -> list[tuple[str, Qrels]]:
        """Each group's judgments as qrels, groups in byte order (trec_eval's)."""
        names = sorted(pd.unique(self.frame["group"]), key=lambda g: str(g).encode())
        return [(name, Qrels(frame=rows.assign(iteration=name), source=self.source))
                for name, rows in ((n, self.frame[self.frame["group"] == n]) for n in names)]
