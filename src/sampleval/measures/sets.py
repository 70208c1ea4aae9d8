"""Measures of the retrieved set, ignoring the order: set precision, recall, relative
precision, set AP, F and utility (trec_eval's ``m_set_*.c`` and ``m_utility.c``)."""

from __future__ import annotations

import numpy as np

from sampleval.measures.base import RankedGrades, kernel, num_rel, num_rel_ret, ratio
from sampleval.measures.names import Measure


@kernel("SetP")
def set_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Relevant retrieved over retrieved."""
    return ratio(num_rel_ret(g, level), g.lengths)


@kernel("set_relative_P")
def set_relative_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Relevant retrieved over min(retrieved, R)."""
    r = num_rel(g, level)
    return ratio(num_rel_ret(g, level), np.minimum(g.lengths, r) if r else 0.0)


@kernel("SetR")
def set_recall(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Relevant retrieved over R."""
    return ratio(num_rel_ret(g, level), num_rel(g, level))


@kernel("SetAP")
def set_ap(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Set precision times set recall: relret^2 / (retrieved * R)."""
    found = num_rel_ret(g, level)
    return ratio(found * found, g.lengths * num_rel(g, level))


@kernel("SetF")
def set_f(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """(1 + beta) P R / (beta P + R) over the retrieved set (beta default 1; trec_eval's
    weighting, where beta multiplies, not squares)."""
    beta = float(m.param("beta", 1.0))  # type: ignore[arg-type]
    found = num_rel_ret(g, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = found / g.lengths
        r = found / num_rel(g, level)
        return np.where(found > 0, (beta + 1.0) * p * r / (beta * p + r), 0.0)


@kernel("utility")
def utility(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """a * relret + b * (ret - relret) + c * (R - relret) + d * (N + relret - ret - R), with
    N the number of documents in the collection (parameter ``N``, default 0)."""
    a, b, c, d = (float(m.param(k, v)) for k, v in  # type: ignore[arg-type]
                  (("a", 1.0), ("b", -1.0), ("c", 0.0), ("d", 0.0)))
    n_docs = float(m.param("N", 0.0))  # type: ignore[arg-type]
    found = num_rel_ret(g, level)
    ret = g.lengths.astype(np.float64)
    r = num_rel(g, level)
    return a * found + b * (ret - found) + c * (r - found) + d * (n_docs + found - ret - r)
