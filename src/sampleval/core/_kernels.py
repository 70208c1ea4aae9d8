"""Compiled passes (numba) over all the runs' rows at once: the Pool's vocabulary and
per-topic ranking matrices (see ``pool.py`` for what they mean), and inclusion
probabilities. Imported only where they run: exact evaluation (``core.graded``) needs none,
so ``evaluate`` and ``trec_eval`` never import numba."""

from __future__ import annotations

import numba
import numpy as np

_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: spreads keys over slots


@numba.njit(cache=True)
def factorize_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` for uint64 ``keys``: each key's code (int32, in order of first
    appearance) and the distinct keys; open addressing, Fibonacci hashing, linear probing,
    the table kept at most half full."""
    bits = 16
    table_keys = np.zeros(1 << bits, dtype=np.uint64)
    table_ids = np.full(1 << bits, -1, dtype=np.int32)
    distinct = np.empty(1 << (bits - 1), dtype=np.uint64)
    codes = np.empty(len(keys), dtype=np.int32)
    n = 0
    for i in range(len(keys)):
        key = keys[i]
        slot = (key * _FIBONACCI) >> np.uint64(64 - bits)
        while table_ids[slot] >= 0 and table_keys[slot] != key:
            slot = (slot + np.uint64(1)) & np.uint64((1 << bits) - 1)
        if table_ids[slot] >= 0:
            codes[i] = table_ids[slot]
            continue
        table_keys[slot], table_ids[slot] = key, n
        distinct[n] = key
        codes[i] = n
        n += 1
        if n == len(distinct):  # half full: double the table
            bits += 1
            table_keys = np.zeros(1 << bits, dtype=np.uint64)
            table_ids = np.full(1 << bits, -1, dtype=np.int32)
            for code in range(n):
                slot = (distinct[code] * _FIBONACCI) >> np.uint64(64 - bits)
                while table_ids[slot] >= 0:
                    slot = (slot + np.uint64(1)) & np.uint64((1 << bits) - 1)
                table_keys[slot], table_ids[slot] = distinct[code], code
            distinct = np.concatenate((distinct, np.empty_like(distinct)))
    return codes, distinct[:n]


@numba.njit(cache=True)
def topic_rankings(topic: np.ndarray, doc: np.ndarray, order: np.ndarray,
                   run_bounds: np.ndarray, depth: int, wanted: np.ndarray, n_docs: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every wanted topic's pool from all runs' rows in one pass.

    ``topic``/``doc``: int32 topic code and sorted-vocabulary doc id of every row (runs
    concatenated); ``order``: the rows in trec_eval order (so grouped by topic), run after
    run, ``run_bounds[i]: run_bounds[i + 1]`` being run i's; ``depth``: ranks kept (-1: all);
    ``wanted``: bool per topic code; ``n_docs``: vocabulary size.

    Returns ``lengths`` (``[n_topics, n_runs]`` int32), ``doc_ids`` (each topic's distinct
    doc ids ascending, topics one after another; int64) with ``doc_bounds`` (``[n_topics + 1]``),
    ``rankings`` (each topic's ``[n_runs, width]`` int32 matrix of indices into its doc ids, -1
    padding, flattened one after another) with ``ranking_bounds``.
    """
    n_topics, n_runs = len(wanted), len(run_bounds) - 1
    lengths = np.zeros((n_topics, n_runs), dtype=np.int32)
    for r in range(n_runs):  # ranks: rows of a run's topic counted in order
        for i in range(run_bounds[r], run_bounds[r + 1]):
            t = topic[order[i]]
            if wanted[t] and (depth < 0 or lengths[t, r] < depth):
                lengths[t, r] += 1
    widths = np.zeros(n_topics, dtype=np.int64)
    for t in range(n_topics):
        widths[t] = lengths[t].max() if n_runs else 0
    ranking_bounds = np.zeros(n_topics + 1, dtype=np.int64)
    ranking_bounds[1:] = np.cumsum(widths * n_runs)
    rankings = np.full(ranking_bounds[-1], -1, dtype=np.int32)
    for r in range(n_runs):  # global doc ids into place, one (run, topic) stretch at a time
        i = run_bounds[r]
        while i < run_bounds[r + 1]:
            t = topic[order[i]]
            cells = rankings[ranking_bounds[t] + r * widths[t]:][:lengths[t, r]]
            k = 0
            while i < run_bounds[r + 1] and topic[order[i]] == t:
                if k < len(cells):
                    cells[k] = doc[order[i]]
                k += 1
                i += 1
    seen = np.zeros(n_docs, dtype=np.bool_)
    local = np.empty(n_docs, dtype=np.int32)
    doc_bounds = np.zeros(n_topics + 1, dtype=np.int64)
    doc_ids = np.empty(lengths.sum(), dtype=np.int64)
    for t in range(n_topics):  # compact: distinct docs ascending, cells as local indices
        cells = rankings[ranking_bounds[t]:ranking_bounds[t + 1]]
        for d in cells:
            if d >= 0:
                seen[d] = True
        count = doc_bounds[t]
        for d in range(n_docs):
            if seen[d]:
                local[d] = count - doc_bounds[t]
                doc_ids[count] = d
                count += 1
                seen[d] = False
        doc_bounds[t + 1] = count
        for j in range(len(cells)):
            if cells[j] >= 0:
                cells[j] = local[cells[j]]
    return lengths, doc_ids[:doc_bounds[-1]], doc_bounds, rankings, ranking_bounds


@numba.njit(cache=True)
def with_replacement_inclusion(p: np.ndarray, sizes: np.ndarray
                               ) -> tuple[np.ndarray, np.ndarray]:
    """pi_i and the ``[n, n]`` matrix pi_ij of documents drawn with replacement in rounds
    (``core.inclusion``): ``p[i, t]`` is document i's draw probability at round t and
    ``sizes[t]`` the round's number of draws N_t.

    pi_i = 1 - prod_t (1 - p_t(i))^N_t and pi_ij = pi_i + pi_j - [1 - prod_t (1 - p_t(i) -
    p_t(j))^N_t], in one pass over the n (n - 1) / 2 pairs and T rounds, without the
    ``[n, n, T]`` tensors numpy would need. pi_i sums logs (``log1p``); the pairs, the bulk
    of the work, multiply the factors out (N_t is a whole number of draws), rescaling before
    the product could underflow, and take one log per pair: as exact as summing logs of
    1 - p_t(i) - p_t(j) (what the numpy version computed) at a fraction of the cost.
    """
    n, rounds = p.shape
    draws = np.empty(rounds, dtype=np.int64)
    whole = True
    for t in range(rounds):
        draws[t] = int(sizes[t])
        whole = whole and draws[t] == sizes[t]
    pi = np.empty(n)
    for i in range(n):
        total = 0.0
        for t in range(rounds):
            total += np.log1p(-min(p[i, t], 1.0)) * sizes[t]
        pi[i] = -np.expm1(total)
    joint = np.empty((n, n))
    for i in range(n):
        joint[i, i] = pi[i]
        for j in range(i + 1, n):
            total = 0.0  # log of prod_t (1 - p_t(i) - p_t(j))^N_t
            product = 1.0
            for t in range(rounds):
                miss = 1.0 - p[i, t] - p[j, t]
                if miss <= 0.0:
                    total = -np.inf
                    break
                if whole:
                    for _ in range(draws[t]):
                        product *= miss
                    if product < 1e-200:
                        total += np.log(product)
                        product = 1.0
                else:
                    total += np.log(min(miss, 1.0)) * sizes[t]
            if total > -np.inf:
                total += np.log(product)
            joint[i, j] = joint[j, i] = pi[i] + pi[j] + np.expm1(total)
    return pi, joint
