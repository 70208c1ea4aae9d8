"""Measures that tell judged from unjudged documents: Bpref (and gm_bpref), infAP, unj,
Judged and num_nonrel_judged_ret (trec_eval's ``m_bpref.c``, ``m_gm_bpref.c``,
``m_infap.c``, ``m_unjudged.c``, ``m_num_nonrel_judged_ret.c``; Judged is ir_measures').

A document is unjudged when it is missing from the qrels or has a negative grade there;
judged documents are relevant (grade >= level) or judged non-relevant.
"""

from __future__ import annotations

import numpy as np

from sampleval.measures.base import (
    RankedGrades,
    is_relevant,
    kernel,
    num_rel,
    num_rel_ret,
    ratio,
    seqsum,
)
from sampleval.measures.names import Measure

INFAP_EPSILON = 0.00001


def _judged(g: RankedGrades) -> np.ndarray:
    return g.memo("judged", lambda: ~np.isnan(g.grades))


@kernel("Bpref", "gm_bpref")
def bpref(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Bpref (Buckley & Voorhees, SIGIR 2004): each relevant document scores 1 - min(n, R) /
    min(N, R) for n judged non-relevant documents above it and N judged non-relevant
    documents in the topic (1 when n = 0); summed and divided by R. gm_bpref is Bpref per
    topic, combined over topics by a geometric mean."""
    rel = is_relevant(g, level)
    nonrel = _judged(g) & ~rel
    above = (np.cumsum(nonrel, axis=1, dtype=np.int32) - nonrel).astype(np.float64)
    r = int(np.count_nonzero(g.topic_grades >= level))
    n = int(np.count_nonzero(g.topic_grades < level))
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(above > 0, 1.0 - np.minimum(above, r) / min(n, r), 1.0)
    return ratio(seqsum(np.where(rel, score, 0.0)), r)


@kernel("infAP")
def inferred_ap(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """infAP (Yilmaz & Aslam, CIKM 2006, as trec_eval computes it): at the relevant document
    at rank k + 1, 1/(k+1) + k/(k+1) * (d/k) * (r + eps)/(r + n + 2 eps), with d the
    documents above it in the qrels (judged or not), r and n the relevant and judged
    non-relevant ones among them, eps = 0.00001; 1 at rank 1; summed and divided by R."""
    rel = is_relevant(g, level)
    judged = _judged(g)
    pooled = judged if g.pooled is None else judged | g.pooled
    rel_above = (np.cumsum(rel, axis=1) - 1).astype(np.float64)  # at relevant ranks
    nonrel_above = np.cumsum(judged & ~rel, axis=1).astype(np.float64)
    unjudged_above = np.cumsum(pooled & ~judged, axis=1).astype(np.float64)
    fj = np.arange(g.width, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
            (rel_above + nonrel_above + unjudged_above) / fj) * (
            (rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON))
    term[:, :1] = 1.0
    return ratio(seqsum(np.where(rel, term, 0.0)), num_rel(g, level))


@kernel("unj")
def unjudged_at(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Share of the top k without a judgment; ranks past the run's end count as judged."""
    assert m.cutoff is not None
    k = int(m.cutoff)
    unjudged = ~_judged(g)[:, :k] & g.retrieved()[:, :k]
    return unjudged.sum(axis=1) / k


@kernel("Judged")
def judged_at(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Judged@k: fraction of the top min(k, retrieved) documents that have a judgment."""
    assert m.cutoff is not None
    judged = _judged(g)[:, :int(m.cutoff)]
    return ratio(judged.sum(axis=1), np.minimum(g.lengths, int(m.cutoff)))


@kernel("num_nonrel_judged_ret")
def judged_nonrelevant_retrieved(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Judged documents retrieved that are not relevant."""
    return _judged(g).sum(axis=1) - num_rel_ret(g, level)
