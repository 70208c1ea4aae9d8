"""Interpolated precision and precision at multiples of R: IPrec (``iprec_at_recall``),
``11pt_avg`` and ``Rprec_mult`` (trec_eval's ``m_iprec_at_recall.c``, ``m_11pt_avg.c``,
``m_Rprec_mult.c``).

Interpolated precision at recall level x is the best precision at or below the rank of the
c-th relevant document, c = lround(x * R) (trec_eval 10 rounds; versions up to 9 took
int(x * R + 0.9), so a few values differ from pytrec_eval's); a level past the relevant
documents retrieved scores 0 and a level of 0 documents takes the best precision anywhere.
"""

from __future__ import annotations

import numpy as np

from sampleval.measures.base import (
    RankedGrades,
    c_round,
    found,
    kernel,
    num_rel,
    num_rel_ret,
    ratio,
    seen_relevant,
    top,
)
from sampleval.measures.names import Measure

DEFAULT_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _best_precision_below(g: RankedGrades, level: float) -> np.ndarray:
    """``[n_runs, width]``: the best precision at any rank from this one to the run's end."""
    def make() -> np.ndarray:
        ranks = np.arange(1, g.width + 1)
        precision = np.where(g.retrieved(), found(g, level)[:, 1:] / ranks, -np.inf)
        return np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    return g.memo(("bestprec", level), make)


def _interpolated(g: RankedGrades, level: float, counts: np.ndarray, in_loop: np.ndarray,
                  skipped: np.ndarray) -> np.ndarray:
    """Interpolated precision at ``counts`` relevant documents (``[n_runs, L]``): where
    ``in_loop`` the best precision from the rank of the c-th relevant document down, where
    ``skipped`` 0, elsewhere the best precision of the whole ranking (0 / retrieved when
    nothing relevant was retrieved)."""
    rel_ret = num_rel_ret(g, level)[:, None]
    best = _best_precision_below(g, level)
    with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 prints -nan, as there
        final = np.where(rel_ret > 0, best[:, :1] if g.width else 0.0,
                         rel_ret / g.lengths[:, None])
    seen = seen_relevant(g, level)
    out = np.repeat(final, counts.shape[1], axis=1)
    for j in range(counts.shape[1]):
        c = counts[:, j]
        loop = in_loop[:, j] & (c >= 1) & (c <= rel_ret[:, 0])
        if not loop.any():  # also when no run retrieved anything: no rank to look up
            continue
        rank = np.argmax(seen >= c[:, None], axis=1)
        out[loop, j] = best[loop, rank[loop]]
    return np.where(skipped, 0.0, out)


def _counts(g: RankedGrades, level: float, shares: np.ndarray) -> np.ndarray:
    """lround(x * R) for each level x, as ``[n_runs, L]``."""
    return np.broadcast_to(c_round(shares * num_rel(g, level)), (g.n_runs, len(shares)))


@kernel("IPrec")
def iprec_at_recall(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Interpolated precision at recall level x (IPrec@x, ``iprec_at_recall_x``)."""
    assert m.cutoff is not None
    counts = _counts(g, level, np.array([float(m.cutoff)]))
    skipped = counts > num_rel_ret(g, level)[:, None]
    return _interpolated(g, level, counts, ~skipped, skipped)[:, 0]


@kernel("11pt_avg")
def eleven_point_average(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Interpolated precision averaged over recall levels (``levels``, default 0, 0.1, ...,
    1), added from the last level to the first as trec_eval adds them. trec_eval takes the
    levels in the order given and expects them ascending: a level after a lower one gets the
    best precision of the whole ranking, as there."""
    levels = np.array(m.param("levels", DEFAULT_LEVELS), dtype=np.float64)
    counts = _counts(g, level, levels)
    rel_ret = num_rel_ret(g, level)[:, None]
    in_loop = np.zeros(counts.shape, dtype=bool)
    skipped = np.zeros(counts.shape, dtype=bool)
    for row in range(g.n_runs):
        top_index = len(levels) - 1
        while top_index >= 0 and counts[row, top_index] > rel_ret[row, 0]:
            top_index -= 1
        skipped[row, top_index + 1:] = True
        j = top_index
        while j >= 0 and counts[row, j] >= 1 and (j == top_index
                                                  or counts[row, j] <= counts[row, j + 1]):
            in_loop[row, j] = True
            j -= 1
    values = _interpolated(g, level, counts, in_loop, skipped)
    total = np.cumsum(values[:, ::-1], axis=1)[:, -1]
    return total / len(levels)


@kernel("Rprec_mult")
def r_precision_multiple(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """Precision at rank int(x * R + 0.9) (0 at rank 0)."""
    assert m.cutoff is not None
    k = int(float(m.cutoff) * num_rel(g, level) + 0.9)
    return ratio(top(g, level, k), k) if k > 0 else np.zeros(g.n_runs)
