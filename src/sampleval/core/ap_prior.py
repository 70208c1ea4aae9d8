"""The AP-prior: how much each rank of a ranked list weighs in average precision, as a
distribution over the ranks 1..N of a list of N documents. ``active`` draws documents from
it within each run, ``stratified`` samples the pool in proportion to its mean over the runs.

Writing AP = (1/R) sum_{j <= i} y_i y_j / i over pairs of ranks, rank r takes part in the
pairs (r, j <= r), 1/r each, and (i > r, r), 1/i each. The named forms (``prior=``):

``aslam`` (default)  w(r) = (1/2N) (1 + 1/r + 1/(r+1) + ... + 1/N), the AP-prior of Aslam,
                     Pavlu & Yilmaz (SIGIR 2006, sec. 3), which Li & Kanoulas (CIKM 2017,
                     sec. 2.2) use as (1/N)(1 + 1/r + ... + 1/N), normalised (the same
                     distribution); it sums to 1 exactly.
``harmonic``         w(r) = (1/N) (1/r + 1/(r+1) + ... + 1/N), the same without the constant
                     term (so flatter at the top, smaller at the bottom: w(N) = 1/N^2); it
                     sums to 1 exactly. sampleval's form before issue 9, ours.
``log``              w(r) proportional to log(N/r), the approximation the paper gives
                     (sec. 2.2, "~ (1/N) log(N/r)") and the form of its reference code
                     (repository dli1/activesampling, ``APDist``: log(z/r), z the pool depth).
                     It gives the last rank no weight at all.

N is each list's own length (a run's documents in the pool), so every run's prior sums to 1.
"""

from __future__ import annotations

import numpy as np

from sampleval.core.pool import PAD, TopicPool

PRIORS = ("aslam", "harmonic", "log")


def rank_prior(n: int, kind: str = "aslam") -> np.ndarray:
    """The AP-prior over ranks 1..n (sums to 1; a one-document list puts all on rank 1)."""
    if kind not in PRIORS:
        raise ValueError(f"unknown AP-prior {kind!r} (one of {', '.join(PRIORS)})")
    if n <= 1:
        return np.ones(max(n, 0))
    ranks = np.arange(1, n + 1)
    if kind == "log":
        weight = np.log(n / ranks)
        return weight / weight.sum()
    tail = np.cumsum((1.0 / ranks)[::-1])[::-1]  # 1/r + ... + 1/n
    return (1.0 + tail) / (2.0 * n) if kind == "aslam" else tail / n


def run_prior(ranking: np.ndarray, kind: str = "aslam") -> np.ndarray:
    """``[n_runs, width]``: each run's AP-prior over its own retrieved (pooled) documents, 0 at
    padding (``ranking``: a TopicPool's rank matrix)."""
    out = np.zeros(ranking.shape)
    lengths = (ranking != PAD).sum(axis=1)
    for length in np.unique(lengths[lengths > 0]):
        out[lengths == length, :length] = rank_prior(int(length), kind)
    return out


def prior_at_ranks(ranks: np.ndarray, kind: str = "aslam",
                   starts: np.ndarray | None = None) -> np.ndarray:
    """Each document's prior from ``ranks`` ``[n_runs, n_docs]`` (1-based, 0: not retrieved;
    a run's length is its largest rank): the mean over the runs of the run's AP-prior at the
    document's rank, normalised to sum to 1. ``starts``: the columns as consecutive groups
    (each a topic's documents, a group starting at each of ``starts``, the first at 0), each
    with its own runs' lengths and normalised on its own (one group by default)."""
    n_docs = ranks.shape[1]
    starts = np.zeros(1, dtype=np.int64) if starts is None else np.asarray(starts)
    if not n_docs:
        return np.zeros(0)
    sizes = np.diff(np.r_[starts, n_docs])
    filled = sizes > 0  # reduceat reads an empty group as its next column
    lengths = np.zeros((ranks.shape[0], len(starts)), dtype=ranks.dtype)  # [runs, groups]
    lengths[:, filled] = np.maximum.reduceat(ranks, starts[filled], axis=1)
    runs, docs = np.nonzero(ranks)  # a run retrieves few of the documents: only those
    return retrieved_prior(runs, docs, ranks[runs, docs], lengths,
                           np.repeat(np.arange(len(starts)), sizes), kind)


def retrieved_prior(runs: np.ndarray, docs: np.ndarray, ranks: np.ndarray,
                    lengths: np.ndarray, group: np.ndarray, kind: str = "aslam"
                    ) -> np.ndarray:
    """:func:`prior_at_ranks` from the documents the runs retrieved: run ``runs[i]`` ranks
    document ``docs[i]`` at ``ranks[i]``; ``lengths`` ``[n_runs, groups]`` each run's length
    in each group (0: none), ``group`` each document's group (its length: the documents')."""
    known = np.unique(lengths[lengths > 0])
    width = int(known.max(initial=0)) + 1
    table = np.zeros((len(known) + 1, width))  # row i + 1: the prior of the i-th length
    for i, length in enumerate(known.tolist()):
        table[i + 1, 1:length + 1] = rank_prior(length, kind)
    row = np.where(lengths > 0, np.searchsorted(known, lengths) + 1, 0)  # 0: all 0
    at = row[runs, group[docs]] * width + ranks
    total = np.bincount(docs, weights=table.ravel()[at], minlength=len(group))
    sums = np.bincount(group, weights=total, minlength=lengths.shape[1])[group]
    return np.divide(total, sums, out=np.zeros(len(group)), where=sums > 0)


def document_prior(tp: TopicPool, kind: str = "aslam") -> np.ndarray:
    """:func:`prior_at_ranks` of a topic's pooled documents (pool order)."""
    ranks = np.zeros((tp.ranking.shape[0], tp.size), dtype=np.int64)
    runs, cols = np.nonzero(tp.ranking != PAD)
    ranks[runs, tp.ranking[runs, cols]] = cols + 1
    return prior_at_ranks(ranks, kind)
