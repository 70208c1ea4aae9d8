"""Exact measures with trec_eval's semantics: :func:`compute` one measure for every run on one
topic. The kernels live in one module per family (see :mod:`sampleval.measures.base`);
importing this module registers them all.

Conventions (trec_eval 10, ``form_res_rels.c`` and the ``m_*.c`` files):

- a document is relevant when its grade is at least the relevance level (``-l``, default 1);
  unjudged documents (absent from the qrels, or with a negative grade) count as not relevant;
  a fractional grade between level - 1 and level counts as that share of a relevant document
  (see :func:`relevance`) in the measures that sum over documents; measures that need a yes
  or no (RR, Bpref, infAP, interpolated precision, binG) take grade >= level;
- R (``NumRel``) counts the judged relevant documents of the whole qrels topic, retrieved or not;
- nDCG's gain is the grade itself (level 0 gains nothing) unless ``gains`` says otherwise,
  its discount ``1/log2(rank+1)``; the ideal ranking sorts every judged document of the
  topic by gain; the relevance level does not apply to the gain measures;
- ``P@k`` divides by k even when fewer than k documents were retrieved;
- ``Judged@k``: the fraction of the top ``min(k, retrieved)`` documents that carry a judgment
  (as ir_measures computes it, but with trec_eval's ranking and negative grades unjudged).
"""

from __future__ import annotations

import numpy as np

from sampleval.errors import UsageError
from sampleval.measures import gain, interpolated, judged, ranked, sets
from sampleval.measures.base import KERNELS, RankedGrades, relevance
from sampleval.measures.names import Measure, estimand_of
from sampleval.measures.weights import WEIGHTS, RankWeight

__all__ = ["KERNELS", "RankedGrades", "compute", "rank_weights", "relevance", "weight_of"]
_FAMILIES = (gain, interpolated, judged, ranked, sets)  # imported to register their kernels


def compute(measure: Measure, g: RankedGrades, level: float) -> np.ndarray:
    """Value of ``measure`` for every run on one topic."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return KERNELS[measure.name](g, measure, level if measure.rel is None else measure.rel)


def weight_of(base: str) -> RankWeight:
    """The rank weights of ``base`` (a library name, any case), whose declared estimand is a
    total; a UsageError for any other measure. The built-in measures' weights are registered
    with their kernels (:mod:`sampleval.measures.weights`), which this module imports."""
    spec = estimand_of(base)
    if spec is None or spec.estimand != "total" or spec.key not in WEIGHTS:
        raise UsageError(f"{base} is not a total over documents with rank weights")
    return WEIGHTS[spec.key]


def rank_weights(base: str, cutoff: int | None, width: int) -> np.ndarray:
    """lambda(r), r = 1..width, of U(h) = sum_y lambda(rank_h(y)) rel(y) (Schnabel et al.
    sec. 3): the registered weights of P@k (1/k) and DCG (1/log2(r+1), also nDCG's
    numerator), 1 for R@k's numerator; 0 past k."""
    ranks = np.arange(1, width + 1)
    if base == "P" and cutoff is None:
        raise UsageError("P~is needs a cutoff")
    if base == "R":
        return np.where(ranks <= (width if cutoff is None else cutoff), 1.0, 0.0)
    if base not in ("P", "DCG", "nDCG"):
        raise UsageError(f"importance sampling estimates P, R, DCG and nDCG, not {base}")
    return weight_of("DCG" if base == "nDCG" else base)(ranks, cutoff)
