"""Compiled passes over all the runs' rows at once: trec_eval order checks and the Pool's
per-topic ranking matrices (see ``run.py`` and ``pool.py`` for what they mean)."""

from __future__ import annotations

import numba
import numpy as np

_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: spreads keys over slots


@numba.njit(cache=True)
def in_trec_order(topic: np.ndarray, score: np.ndarray, doc_key: np.ndarray) -> bool:
    """Whether the rows already stand in trec_eval order (``run.trec_order``): topic
    ascending, then score descending, then ``doc_key`` descending, every step strict."""
    for i in range(1, len(topic)):
        if topic[i] != topic[i - 1]:
            if topic[i] < topic[i - 1]:
                return False
        elif score[i] != score[i - 1]:
            if score[i] > score[i - 1]:
                return False
        elif doc_key[i] >= doc_key[i - 1]:
            return False
    return True


@numba.njit(cache=True)
def pack_short(offsets: np.ndarray, data: np.ndarray, out: np.ndarray) -> bool:
    """Each string of an Arrow string array (``offsets`` int32, ``data`` uint8) as a uint64
    into ``out``: its bytes big-endian, zero-padded to 8, so the integers order as strcmp
    orders the strings. False (``out`` then partly filled) when a string is longer than 8
    bytes or holds a NUL byte, as those could not be told apart."""
    nul = False
    for i in range(len(out)):
        start, length = offsets[i], offsets[i + 1] - offsets[i]
        if length > 8:
            return False
        key = np.uint64(0)
        for j in range(start, start + length):
            key = (key << np.uint64(8)) | np.uint64(data[j])
            nul |= data[j] == 0
        out[i] = key << np.uint64(8 * (8 - length)) if length else key
    return not nul


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
def refine_ties(order: np.ndarray, topic: np.ndarray, single: np.ndarray, score: np.ndarray,
                doc_key: np.ndarray) -> None:
    """Re-sort, in place, the stretches of ``order`` (rows in trec order by their float32
    scores ``single``) that tie in single precision but not in ``score``'s own precision, by
    score descending (stably: the docno-descending order of ties stays). Float rounding is
    monotone, so the rest of the order already holds."""
    start = 0
    for i in range(1, len(order) + 1):
        if i < len(order) and topic[order[i]] == topic[order[start]] and (
                single[order[i]] == single[order[start]]):
            continue
        for j in range(start + 1, i):
            if score[order[j]] > score[order[j - 1]]:
                stretch = order[start:i]
                stretch[:] = stretch[np.argsort(-score[stretch], kind="mergesort")]
                break
        start = i


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


def load_compiled() -> None:
    """Load a kernel from numba's on-disk cache with the argument types the Pool build uses.
    The first compiled call of a process initialises LLVM (about 0.3 s of CPU); a command
    calls this while its input files are still being read, so that the Pool build does not
    pay it later."""
    pack_short(np.zeros(2, dtype=np.int32), np.zeros(1, dtype=np.uint8),
               np.zeros(1, dtype=np.uint64))
