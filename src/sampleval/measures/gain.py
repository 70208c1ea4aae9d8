"""Graded measures: nDCG (``ndcg``, ``ndcg_cut``), DCG, ideal DCG, ``ndcg_rel``, ``Rndcg``,
G, RBP and ``rbp_resid`` (trec_eval's ``m_ndcg*.c``, ``m_Rndcg.c``, ``m_G.c``, ``m_rbp*.c``,
``gain_init.c``).

A document's gain is its grade unless ``gains`` maps grades to other gains (trec_eval's
``-m ndcg.1=3,2=9``; a level may be negative: -1 is "not in the qrels", -2 "in the qrels
without a judgment"). The ideal ranking takes the judged documents by decreasing gain, as
trec_eval orders its gain levels: with C's ``qsort`` comparing gains truncated to integers
(so gains closer than 1 keep their declaration order, levels named in ``gains`` first),
and stopping at the first gain that is not positive. Discounts are log2(rank + 1) (Jarvelin &
Kekalainen, ACM TOIS 2002).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sampleval.measures.base import (
    RankedGrades,
    c_map,
    discount,
    kernel,
    num_rel,
    ratio,
    seqsum,
)
from sampleval.measures.names import Measure
from sampleval.measures.weights import rank_weight

Entry = tuple[float, float, int]  # (level, gain, judged documents at the level)


@dataclass(frozen=True)
class GainTable:
    """A topic's gain levels in trec_eval's order and its ideal ranking's positive gains."""

    entries: tuple[Entry, ...]
    ideal: np.ndarray

    def gains(self, codes: np.ndarray) -> np.ndarray:
        """The gain of each relevance code (0 for a level without an entry, and past a
        run's end)."""
        lookup: dict[float, float] = {}
        for level, gain, _ in self.entries:
            lookup.setdefault(level, gain)
        out = np.zeros(codes.shape)
        for level, gain in lookup.items():
            out[codes == level] = gain
        return out


def _c_msort(items: list[Entry], compare: Callable[[Entry, Entry], int]) -> list[Entry]:
    """glibc's ``qsort`` (a top-down merge sort, left half n // 2, ties to the left)."""
    if len(items) <= 1:
        return items
    left = _c_msort(items[:len(items) // 2], compare)
    right = _c_msort(items[len(items) // 2:], compare)
    out: list[Entry] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if compare(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def _by_truncated_gain(a: Entry, b: Entry) -> int:
    return int(a[1] - b[1])  # C's (int) of the difference: gains closer than 1 tie


def gain_table(g: RankedGrades, gains: tuple[tuple[int, float], ...] | None) -> GainTable:
    """The gain levels of ``g``'s topic (``gains``: level -> gain overrides)."""
    def make() -> GainTable:
        judged = g.topic_grades[g.topic_grades >= 0]
        if np.all(judged == np.trunc(judged)):
            top_level = int(judged.max()) + 1 if len(judged) else 0
            levels = np.arange(top_level, dtype=np.float64)
            counts = np.bincount(judged.astype(np.int64), minlength=top_level)
        else:
            levels, counts = np.unique(judged, return_counts=True)
        entries = [[float(level), float(gain), 0] for level, gain in (gains or ())]
        for level, count in zip(levels.tolist(), counts.tolist(), strict=True):
            named = next((e for e in entries if e[0] == level), None)
            if named is not None:
                named[2] = count
            else:
                entries.append([level, level, count])
        ordered = _c_msort([(e[0], e[1], int(e[2])) for e in entries], _by_truncated_gain)
        return GainTable(tuple(ordered), _ideal(ordered))
    return g.memo(("gains", gains), make)  # type: ignore[arg-type,return-value]


def _ideal(entries: list[Entry]) -> np.ndarray:
    """The ideal ranking's gains: levels from the last entry down, each repeated for its
    documents, up to the first gain that is not positive (none if the last is not)."""
    ideal: list[float] = []
    if entries and entries[-1][1] > 0:
        for _, gain, count in reversed(entries):
            if count == 0:
                continue
            if gain <= 0:
                break
            ideal.extend([gain] * count)
    return np.array(ideal)


def _terms(g: RankedGrades, table: GainTable, ranks: int | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Each rank's gain, and gain / log2(rank + 1) where the gain is not 0 (``ranks``: of
    the first ranks only)."""
    gains = table.gains(g.codes(ranks))
    with np.errstate(invalid="ignore"):
        return gains, np.where(gains != 0, gains / discount(gains.shape[1]), 0.0)


def _ideal_dcg(table: GainTable) -> np.ndarray:
    """Ideal DCG at 1, 2, ... L documents (L: the positive ideal gains)."""
    return np.cumsum(table.ideal / discount(len(table.ideal)))


def _table(g: RankedGrades, m: Measure) -> GainTable:
    return gain_table(g, m.param("gains"))  # type: ignore[arg-type]


@kernel("nDCG")
def ndcg(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """nDCG; with a cutoff, DCG and ideal DCG over the top k (``ndcg_cut``), and when the
    ideal DCG is 0, the DCG itself (as ``ndcg_cut``)."""
    table = _table(g, m)
    k = None if m.cutoff is None else int(m.cutoff)
    _, terms = _terms(g, table, k)
    ideal = _ideal_dcg(table)
    if k is None:
        return ratio(seqsum(terms), ideal[-1] if len(ideal) else 0.0)
    dcg = seqsum(terms)
    best = ideal[min(k, len(ideal)) - 1] if len(ideal) else 0.0
    return dcg / best if best > 0 else dcg


@rank_weight("dcg")
def dcg_weight(ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """DCG@k's total (of gains): 1/log2(rank + 1) at ranks 1..k (every rank without k)."""
    kept = (ranks > 0) & (ranks <= (cutoff if cutoff is not None else np.inf))
    return np.divide(1.0, np.log2(ranks + 1.0), out=np.zeros(ranks.shape), where=kept)


@kernel("dcg")
def dcg(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """DCG: gain / log2(rank + 1), summed over the ranking."""
    return seqsum(_terms(g, _table(g, m))[1])


@kernel("ideal_dcg")
def ideal_dcg(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """The DCG of the ideal ranking."""
    ideal = _ideal_dcg(_table(g, m))
    return np.full(g.n_runs, ideal[-1] if len(ideal) else 0.0)


@kernel("ndcg_rel")
def ndcg_at_relevant(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """nDCG at the rank of each document with a positive gain, averaged over the L positive
    ideal gains; each one not retrieved adds the nDCG at the run's end."""
    table = _table(g, m)
    gains, terms = _terms(g, table)
    ideal = _ideal_dcg(table)
    count = len(ideal)
    dcg_so_far = np.cumsum(terms, axis=1)
    ideal_so_far = ideal[np.minimum(np.arange(g.width), count - 1)] if count else np.zeros(
        g.width)
    positive = gains > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        total = seqsum(np.where(positive, dcg_so_far / ideal_so_far, 0.0))
        missing = (count - positive.sum(axis=1)).astype(np.float64)
        total = total + missing * seqsum(terms) / (ideal[-1] if count else 0.0)
        return np.where(total > 0, total / count if count else 0.0, 0.0)


@kernel("Rndcg")
def rndcg(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """nDCG averaged over the R-levels: the ranks p where the ideal gain changes, nDCG at p
    being DCG@min(p, retrieved) / ideal DCG@p; plus the nDCG at the run's end when the run
    goes on past the first rank after the last positive ideal gain."""
    if num_rel(g, level) == 0:
        return np.zeros(g.n_runs)
    table = _table(g, m)
    _, terms = _terms(g, table)
    ideal = _ideal_dcg(table)
    count = len(ideal)
    changes = [p for p in range(1, count + 1)
               if p == count or table.ideal[p] != table.ideal[p - 1]]
    dcg_at = np.zeros((g.n_runs, g.width + 1))
    np.cumsum(terms, axis=1, out=dcg_at[:, 1:])
    rows = np.arange(g.n_runs)
    parts, counted = [], np.zeros(g.n_runs)
    for p in changes:
        if ideal[p - 1] > 0:
            parts.append(dcg_at[rows, np.minimum(p, g.lengths)] / ideal[p - 1])
            counted += 1
    total_ideal = ideal[-1] if count else 0.0
    extra = (g.lengths > count + 1) & (total_ideal > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        parts.append(np.where(extra, dcg_at[rows, g.lengths] / total_ideal, 0.0))
        counted = counted + extra
        return seqsum(np.stack(parts, axis=1)) / counted


@kernel("G")
def normalised_gain(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """G: each retrieved document's gain over log2(2 + ideal cost so far - gain so far)
    (the ideal cost of a rank: its ideal gain, at least 1), summed, over the ideal total."""
    table = _table(g, m)
    gains, _ = _terms(g, table)
    cost = np.ones(g.width)
    shared = min(g.width, len(table.ideal))
    cost[:shared] = np.maximum(table.ideal[:shared], 1.0)
    base = (2 + np.cumsum(cost)) - np.cumsum(gains, axis=1)
    nonzero = gains != 0
    logs = np.ones(gains.shape)
    logs[nonzero] = c_map(math.log2, base[nonzero])
    total = seqsum(np.where(nonzero, gains / logs, 0.0))
    ideal_total = seqsum(table.ideal[None, :])[0] if len(table.ideal) else 0.0
    return total / ideal_total if ideal_total > 0 else np.zeros(g.n_runs)


def _persistence_powers(p: float, width: int) -> np.ndarray:
    """1, p, p*p, ... (width + 1 values, multiplied in turn as trec_eval does)."""
    factors = np.full(width + 1, p)
    factors[0] = 1.0
    return np.cumprod(factors)


@kernel("RBP")
def rank_biased_precision(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """RBP (Moffat & Zobel, ACM TOIS 2008): (1 - p) * sum of gain * p^(rank - 1), gains
    rescaled to [0, 1] by (gain - min) / (max - min) over the levels when one falls
    outside [0, 1]."""
    p = float(m.param("p", 0.9))  # type: ignore[arg-type]
    table = _table(g, m)
    gains = [gain for _, gain, _ in table.entries]
    low, high = (min(gains), max(gains)) if gains else (0.0, 0.0)
    if low < 0 or high > 1:
        table = GainTable(tuple((lv, (gn - low) / (high - low), c)
                                for lv, gn, c in table.entries), table.ideal)
    values, _ = _terms(g, table)
    weighted = np.where(values != 0, values * _persistence_powers(p, g.width)[:g.width], 0.0)
    return (1.0 - p) * seqsum(weighted)


@kernel("rbp_resid")
def rbp_residual(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    """p^retrieved + (1 - p) * sum over unjudged retrieved of p^(rank - 1); 0 when every
    retrieved document is judged."""
    p = float(m.param("p", 0.9))  # type: ignore[arg-type]
    powers = _persistence_powers(p, g.width)
    unjudged = np.isnan(g.grades) & g.retrieved()
    total = seqsum(np.where(unjudged, powers[:g.width], 0.0))
    return np.where(unjudged.any(axis=1), powers[g.lengths] + (1 - p) * total, 0.0)
