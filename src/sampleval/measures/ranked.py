"""Measures of where the relevant documents are ranked: AP, precision and recall at k, Rprec,
reciprocal rank, success, relative precision, binG, yaap, and the counts.

As trec_eval (``m_map.c``, ``m_P.c``, ``m_recall.c``, ``m_Rprec.c``, ``m_recip_rank.c``,
``m_rel_P.c``, ``m_success.c``, ``m_binG.c``, ``m_yaap.c``, ``m_num_*.c``): R counts the
judged relevant documents of the whole topic; a cutoff past a run's end counts the missing
ranks as non-relevant; a measure dividing by R is 0 when R is 0.
"""

from __future__ import annotations

import math

import numpy as np

from sampleval.errors import UsageError
from sampleval.measures.base import (
    RankedGrades,
    c_map,
    found,
    is_relevant,
    kernel,
    log2_of,
    num_rel,
    num_rel_ret,
    ratio,
    relevant,
    seen_relevant,
    seqsum,
    top,
)
from sampleval.measures.names import Measure
from sampleval.measures.weights import rank_weight


def _cut(g: RankedGrades, m: Measure) -> int:
    return g.width if m.cutoff is None else min(int(m.cutoff), g.width)


def precision_sum(g: RankedGrades, level: float, cutoff: int) -> np.ndarray:
    """Sum, over the relevant documents in the top ``cutoff``, of the precision at each one's
    rank (AP's numerator), accumulated rank by rank."""
    rel = relevant(g, level)[:, :cutoff]
    precision = found(g, level)[:, 1:cutoff + 1] / np.arange(1, cutoff + 1)
    return seqsum(np.where(rel > 0, precision * rel, 0.0))


@kernel("AP", "GMAP")
def average_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """AP (``map``; with a cutoff, ``map_cut``): the mean over the R relevant documents of
    the precision at each one's rank, 0 for those not retrieved (Buckley & Voorhees, TREC
    book ch. 3). GMAP is AP per topic; only its combination over topics differs."""
    return ratio(precision_sum(g, level, _cut(g, m)), num_rel(g, level))


@kernel("yaap")
def yaap(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """log((1 + S) / (1 + R - S)), S = AP's numerator (Robertson, ECIR 2012)."""
    s = precision_sum(g, level, g.width)
    return c_map(math.log, (1.0 + s) / (1.0 + num_rel(g, level) - s))


@rank_weight("P")
def precision_weight(ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """P@k's total: 1/k at ranks 1..k."""
    if cutoff is None:
        raise UsageError("P needs a cutoff, e.g. P@10")
    return ((ranks > 0) & (ranks <= cutoff)) / cutoff


@kernel("P")
def precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """P@k: relevant documents in the top k, divided by k."""
    assert m.cutoff is not None
    return top(g, level, int(m.cutoff)) / int(m.cutoff)


@kernel("R")
def recall(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """R@k: relevant documents in the top k, divided by R."""
    assert m.cutoff is not None
    return ratio(top(g, level, int(m.cutoff)), num_rel(g, level))


@kernel("relative_P")
def relative_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Relevant documents in the top k over min(k, R)."""
    assert m.cutoff is not None
    r = num_rel(g, level)
    return ratio(top(g, level, int(m.cutoff)), min(int(m.cutoff), r) if r else 0.0)


@kernel("Success")
def success(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """1 when the top k holds a relevant document."""
    assert m.cutoff is not None
    return (top(g, level, int(m.cutoff)) > 0).astype(np.float64)


@kernel("Rprec")
def r_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Rprec: precision at rank R (R rounded for fractional grades)."""
    r = num_rel(g, level)
    k = int(r + 0.5)
    return np.where(g.lengths > 0, ratio(top(g, level, k), r), 0.0)


@kernel("RR")
def reciprocal_rank(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """RR: 1 / rank of the first relevant (grade >= level) document (0 if none; with a
    cutoff, in the top k)."""
    rel = is_relevant(g, level)[:, :_cut(g, m)]
    if rel.shape[1] == 0:
        return np.zeros(g.n_runs)
    first = np.argmax(rel, axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


@kernel("binG")
def binary_g(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """The mean over the R relevant documents of 1/log2(2 + non-relevant documents above)."""
    rel = is_relevant(g, level)
    seen = seen_relevant(g, level)
    nonrel_above = np.arange(g.width) + 1 - seen
    terms = np.where(rel, 1.0 / log2_of(g.width + 2)[np.minimum(nonrel_above + 1, g.width + 1)],
                     0.0)
    return ratio(seqsum(terms), num_rel(g, level))


@kernel("NumQ")
def num_q(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """1 per topic (summed: the number of topics)."""
    return np.ones(g.n_runs)


@rank_weight("NumRel")
def count_weight(ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """NumRel's total: 1 for every document, retrieved or not."""
    if cutoff is not None:
        raise UsageError("NumRel takes no cutoff")
    return np.ones(ranks.shape)


@kernel("NumRel")
def count_rel(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """NumRel: R, the number of judged relevant documents of the topic."""
    return np.full(g.n_runs, num_rel(g, level))


@kernel("NumRet")
def count_ret(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """NumRet: documents retrieved."""
    return g.lengths.astype(np.float64)


@rank_weight("NumRelRet")
def retrieved_weight(ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """NumRelRet's total: 1 for every retrieved document."""
    if cutoff is not None:
        raise UsageError("NumRelRet takes no cutoff")
    return (ranks > 0).astype(np.float64)


@kernel("NumRelRet")
def count_rel_ret(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """NumRelRet: relevant documents retrieved."""
    return num_rel_ret(g, level).copy()
