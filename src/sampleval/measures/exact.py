"""Exact measures with trec_eval's semantics, one numpy kernel per measure, vectorised over runs.

Every kernel takes a :class:`RankedGrades` (one topic, all runs) and returns one value per run.
Conventions follow trec_eval 9 (``form_res_rels.c`` and the ``m_*.c`` files):

- a document is relevant when its grade is at least the relevance level (``-l``, default 1);
  unjudged documents (absent from the qrels, or with a negative grade) count as not relevant;
  a fractional grade between level - 1 and level counts as that share of a relevant document
  (see :func:`relevance`) except in RR and Bpref, which need a yes or no;
- R (``NumRel``) counts the judged relevant documents of the whole qrels topic, retrieved or not;
- nDCG's gain is the grade itself (level 0 gains nothing) and its discount ``1/log2(rank+1)``;
  the ideal ranking sorts every judged document of the topic by grade; the relevance level
  does not apply to nDCG (trec_eval ignores ``-l`` there too);
- ``P@k`` divides by k even when fewer than k documents were retrieved;
- ``Bpref`` follows ``m_bpref.c``: unjudged documents are skipped, and each relevant document
  scores ``1 - min(n, R) / min(N, R)`` for ``n`` judged non-relevant documents above it and
  ``N`` judged non-relevant documents in the topic;
- ``Judged@k``: the fraction of the top ``min(k, retrieved)`` documents that carry a judgment
  (as ir_measures computes it, but with trec_eval's ranking and negative grades unjudged).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sampleval.measures.names import Measure


@dataclass(frozen=True)
class RankedGrades:
    """One topic as the exact measures see it.

    ``grades``: ``[n_runs, width]`` grade at each rank (``NaN``: unjudged, or past the end of a
    run); ``lengths``: documents retrieved per run; ``topic_grades``: the grades of every
    judged document of the topic in the qrels (pooled by the runs or not).
    """

    grades: np.ndarray
    lengths: np.ndarray
    topic_grades: np.ndarray

    def judged_only(self) -> RankedGrades:
        """trec_eval's ``-J``: unjudged documents removed from every ranking, order kept."""
        judged = ~np.isnan(self.grades)
        order = np.argsort(~judged, axis=1, kind="stable")
        return RankedGrades(np.take_along_axis(self.grades, order, axis=1),
                            judged.sum(axis=1), self.topic_grades)


Kernel = Callable[[RankedGrades, Measure, float], np.ndarray]


def relevance(grades: np.ndarray, level: float) -> np.ndarray:
    """Binary relevance of grades: clip(grade - level + 1, 0, 1), 0 for unjudged (NaN).

    On integer grades this is trec_eval's ``grade >= level``; a fractional grade (the mean of
    several assessors' binary votes) counts as its share of "relevant" votes, so sums over
    documents (AP, P@k, R@k, Rprec, R) are linear in the labels, as the design-based
    estimators assume (Schnabel et al., ICTIR 2016, sec. 7).
    """
    return np.nan_to_num(np.clip(grades - level + 1.0, 0.0, 1.0), nan=0.0)


def _relevant(g: RankedGrades, level: float, cutoff: int | None) -> np.ndarray:
    return relevance(g.grades if cutoff is None else g.grades[:, :cutoff], level)


def _num_rel(g: RankedGrades, level: float) -> float:
    return float(relevance(g.topic_grades, level).sum())


def _ratio(numerator: np.ndarray, denominator: float | np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval's convention)."""
    num = np.asarray(numerator, dtype=np.float64)
    den = np.broadcast_to(np.asarray(denominator, dtype=np.float64), num.shape)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def average_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """AP (``map``; with a cutoff, ``map_cut``): mean over the R relevant documents of the
    precision at each one's rank, 0 for those not retrieved."""
    rel = _relevant(g, level, m.cutoff)
    precision = np.cumsum(rel, axis=1) / np.arange(1, rel.shape[1] + 1)
    return _ratio((precision * rel).sum(axis=1), _num_rel(g, level))


def precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """P@k: relevant documents in the top k, divided by k."""
    assert m.cutoff is not None
    return _relevant(g, level, m.cutoff).sum(axis=1) / m.cutoff


def recall(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """R@k: relevant documents in the top k, divided by R."""
    return _ratio(_relevant(g, level, m.cutoff).sum(axis=1), _num_rel(g, level))


def r_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Rprec: precision at rank R."""
    r = _num_rel(g, level)
    return _ratio(_relevant(g, level, int(r + 0.5)).sum(axis=1), r)


def _discount(width: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, width + 2))


def ndcg(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """nDCG (``ndcg``; with a cutoff, ``ndcg_cut``): DCG with gain = grade and discount
    ``1/log2(rank+1)`` over the ideal DCG of the topic's judged grades (Jarvelin & Kekalainen,
    ACM TOIS 2002, as trec_eval computes it)."""
    grades = g.grades if m.cutoff is None else g.grades[:, :m.cutoff]
    gains = np.nan_to_num(np.clip(grades, 0, None), nan=0.0)
    dcg = gains @ _discount(gains.shape[1])
    ideal = np.sort(g.topic_grades[g.topic_grades > 0])[::-1][:m.cutoff]
    return _ratio(dcg, float(ideal @ _discount(len(ideal))))


def dcg(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """DCG (``dcg``; not in trec_eval, whose nDCG's numerator it is): gain = grade, discount
    ``1/log2(rank+1)``, summed over the ranking (with a cutoff, its top k). Schnabel et al.
    (ICTIR 2016) estimate it unnormalised."""
    grades = g.grades if m.cutoff is None else g.grades[:, :m.cutoff]
    gains = np.nan_to_num(np.clip(grades, 0, None), nan=0.0)
    return np.asarray(gains @ _discount(gains.shape[1]))


def reciprocal_rank(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """RR: 1 / rank of the first relevant (grade >= level) document (0 if none; with a
    cutoff, in the top k)."""
    rel = _relevant(g, level, m.cutoff) >= 1.0
    if rel.shape[1] == 0:
        return np.zeros(rel.shape[0])
    first = np.argmax(rel, axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1), 0.0)


def bpref(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Bpref (Buckley & Voorhees, SIGIR 2004), as ``m_bpref.c`` computes it (relevant:
    grade >= level; judged non-relevant: grade < level)."""
    judged = ~np.isnan(g.grades)
    rel = _relevant(g, level, None) >= 1.0
    nonrel = judged & ~rel
    above = np.cumsum(nonrel, axis=1) - nonrel
    r = int(np.count_nonzero(g.topic_grades >= level))
    n = int(np.count_nonzero(g.topic_grades < level))
    penalty = np.minimum(above, r) / max(min(n, r), 1)
    return _ratio(np.where(rel, 1.0 - penalty, 0.0).sum(axis=1), r)


def judged_at(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Judged@k: fraction of the top min(k, retrieved) documents that have a judgment."""
    assert m.cutoff is not None
    judged = ~np.isnan(g.grades[:, :m.cutoff])
    return _ratio(judged.sum(axis=1), np.minimum(g.lengths, m.cutoff))


def num_rel(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """NumRel: R, the number of judged relevant documents of the topic."""
    return np.full(len(g.lengths), float(_num_rel(g, level)))


def num_ret(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """NumRet: documents retrieved."""
    return g.lengths.astype(np.float64)


def num_rel_ret(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """NumRelRet: relevant documents retrieved."""
    return _relevant(g, level, None).sum(axis=1).astype(np.float64)


KERNELS: dict[str, Kernel] = {
    "AP": average_precision,
    "P": precision,
    "R": recall,
    "Rprec": r_precision,
    "nDCG": ndcg,
    "DCG": dcg,
    "RR": reciprocal_rank,
    "Bpref": bpref,
    "Judged": judged_at,
    "NumRel": num_rel,
    "NumRet": num_ret,
    "NumRelRet": num_rel_ret,
}


def compute(measure: Measure, g: RankedGrades, level: float) -> np.ndarray:
    """Value of ``measure`` for every run on one topic."""
    return KERNELS[measure.name](g, measure, level if measure.rel is None else measure.rel)
