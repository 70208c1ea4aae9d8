"""Which label counts when a document was judged more than once.

Every judgment is kept (re-judgments, several assessors, undone ones marked retracted). An
export picks one label per judged document by a rule:

- ``latest``: the most recent judgment, whoever made it;
- ``majority``: each assessor's most recent judgment is one vote; the grade with most votes
  wins, a tie going to the tied grade voted most recently;
- ``mean``: the mean of each assessor's most recent grade (a fractional label, which the
  estimators accept);
- a person's name: that assessor's most recent judgment (documents they did not judge keep
  the ``latest`` label; :func:`choose` reports how many).

Retracted judgments never count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

RULES = ("latest", "majority", "mean")


@dataclass(frozen=True)
class Vote:
    """One judgment of a document: who, the grade, and its order (larger: more recent)."""

    assessor: str
    label: float
    order: int


def per_assessor(votes: Iterable[Vote]) -> dict[str, Vote]:
    """Each assessor's most recent vote."""
    out: dict[str, Vote] = {}
    for vote in votes:
        if vote.assessor not in out or vote.order > out[vote.assessor].order:
            out[vote.assessor] = vote
    return out


def combine(votes: list[Vote], rule: str) -> float | None:
    """The label ``rule`` gives a document's (non-retracted) ``votes``; None when it gives
    none (no votes, or a person who did not judge it)."""
    if not votes:
        return None
    if rule == "latest":
        return max(votes, key=lambda v: v.order).label
    latest = per_assessor(votes)
    if rule == "mean":
        return sum(v.label for v in latest.values()) / len(latest)
    if rule == "majority":
        counts = Counter(v.label for v in latest.values())
        most = max(counts.values())
        tied = [v for v in latest.values() if counts[v.label] == most]
        return max(tied, key=lambda v: v.order).label
    vote = latest.get(rule)
    return None if vote is None else vote.label


def choose(votes: dict[str, list[Vote]], rule: str) -> tuple[dict[str, float], int]:
    """The label of every document in ``votes`` (docno -> its votes) under ``rule``, and how
    many documents fell back to ``latest`` (a person's rule, documents they did not judge)."""
    labels: dict[str, float] = {}
    fallback = 0
    for docno, mine in votes.items():
        label = combine(mine, rule)
        if label is None:
            label = combine(mine, "latest")
            fallback += label is not None
        if label is not None:
            labels[docno] = label
    return labels, fallback
