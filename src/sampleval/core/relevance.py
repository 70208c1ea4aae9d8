"""What a label counts for: binary relevance at a level, and DCG's gain.

One home for both (DESIGN.md, ``core``): the exact measures (:mod:`sampleval.measures.base`),
the estimators and the selection methods all read labels through these functions.
"""

from __future__ import annotations

import numpy as np


def relevance(labels: np.ndarray, level: float) -> np.ndarray:
    """Binary relevance of (possibly fractional) labels: clip(label - level + 1, 0, 1).

    On integer grades this is trec_eval's ``label >= level``; for a label that is the mean of
    several assessors' binary votes (level 1) it is the share of votes for "relevant", so sums
    over documents (AP, P@k, R@k, Rprec, R) are linear in the labels and the design-based
    estimators stay unbiased for the expected label (Schnabel et al., ICTIR 2016, sec. 7).
    NaN (unjudged) stays NaN (:func:`judged_relevance`: 0).
    """
    return np.clip(np.asarray(labels, dtype=np.float64) - level + 1.0, 0.0, 1.0)


def judged_relevance(labels: np.ndarray, level: float) -> np.ndarray:
    """:func:`relevance`, with 0 for an unjudged (NaN) label: what the exact measures count."""
    clipped = relevance(labels, level)
    return np.where(np.isnan(clipped), 0.0, clipped)


def gain(labels: np.ndarray) -> np.ndarray:
    """DCG's gain: the grade itself, negative grades gaining nothing (trec_eval)."""
    return np.maximum(np.asarray(labels, dtype=np.float64), 0.0)
