"""The jackknife replicate kernels (``estimation/families/_inferred_kernels.py``: ``nist_replicates``,
``infap_replicates``) against the brute force they replaced: each run's pass redone from the
rank of every sampled document with that document taken as not sampled (the kernels' former
code, kept here as the reference), on real samples of round 5 of several designs and on
edge cases."""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np
import pytest

from sampleval.core.pool import Pool
from sampleval.estimation.engine.views import TopicView, topic_views
from sampleval.estimation.families._inferred_kernels import (
    infap_replicates,
    nist_replicates,
    pairwise_sum,
)
from sampleval.estimation.families.inferred import INFAP_EPSILON, NIST_MAX_RESULTS
from sampleval.io import read_qrels, read_runs
from sampleval.selection import Budget, qrels_oracle, simulate
from sampleval.selection.strata import StrataSelector
from sampleval.selection.stratified import PriorStratifiedSelector
from sampleval.selection.uniform import UniformSelector

REL_EPS, SMP_EPS = 1e-5, 3e-5  # sample_eval's smoothing (_kernels.py)
RTOL = 1e-12


# -- the references: a pass per sampled document -----------------------------------------------

@numba.njit(cache=True)
def _nist_continue(row: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
                   sampled_index: np.ndarray, level: float, start: int, skip: int,
                   d: np.ndarray, s: np.ndarray, rels: np.ndarray, sap: np.ndarray) -> None:
    """sample_eval's pass over one run's ``row`` from rank ``start`` on, continuing from the
    counts ``d``, ``s``, ``rels`` and sums ``sap`` (updated in place), frame document
    ``skip`` taken as not sampled (-1: none)."""
    terms = np.empty(len(d))
    for k in range(start, len(row)):
        f = row[k]
        if f < 0 or stratum[f] < 0:
            continue
        h = stratum[f]
        sampled = sampled_index[f] >= 0 and f != skip
        if sampled and labels[f] >= level:
            for g in range(len(d)):
                terms[g] = d[g] * (rels[g] + REL_EPS) / (s[g] + SMP_EPS)
            sap[h] += (1.0 + pairwise_sum(terms)) / (k + 1)
            rels[h] += 1
        d[h] += 1
        if sampled:
            s[h] += 1


@numba.njit(cache=True)
def brute_nist_replicates(frame_at_rank: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
                    sampled_index: np.ndarray, level: float, scale: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The delete-one replicates of sample_eval's precision sums: with sampled document j
    (j counting the sampled documents in frame order) taken as not sampled, ``total[r, j]``
    = sum_h scale_h SAP_h of run r and ``own[r, j]`` = SAP_{h(j)}, the sum in j's own stratum
    (whose scale the replicate changes). A run's pass is redone from the rank of each sampled
    document it retrieved; for the others it is the run's own pass."""
    n_runs, width = frame_at_rank.shape
    n_strata = len(scale)
    n_sampled = int(sampled_index.max()) + 1 if len(sampled_index) else 0
    unit_stratum = np.zeros(n_sampled, dtype=np.int64)
    for f in range(len(sampled_index)):
        if sampled_index[f] >= 0:
            unit_stratum[sampled_index[f]] = stratum[f]
    total = np.zeros((n_runs, n_sampled))
    own = np.zeros((n_runs, n_sampled))
    d = np.zeros(n_strata)
    s = np.zeros(n_strata)
    rels = np.zeros(n_strata)
    sap = np.zeros(n_strata)
    for r in range(n_runs):
        row = frame_at_rank[r]
        d[:] = 0.0
        s[:] = 0.0
        rels[:] = 0.0
        sap[:] = 0.0
        seen = np.zeros(n_sampled, dtype=np.bool_)
        for k in range(width):
            f = row[k]
            if f >= 0 and stratum[f] >= 0 and sampled_index[f] >= 0:
                j = sampled_index[f]
                seen[j] = True
                d2, s2, rels2, sap2 = d.copy(), s.copy(), rels.copy(), sap.copy()
                _nist_continue(row, stratum, labels, sampled_index, level, k, f,
                               d2, s2, rels2, sap2)
                total[r, j] = (sap2 * scale).sum()
                own[r, j] = sap2[unit_stratum[j]]
            _nist_continue(row[:k + 1], stratum, labels, sampled_index, level, k, -1,
                           d, s, rels, sap)
        base_total = (sap * scale).sum()
        for j in range(n_sampled):
            if not seen[j]:
                total[r, j] = base_total
                own[r, j] = sap[unit_stratum[j]]
    return total, own


@numba.njit(cache=True)
def brute_infap_replicates(frame_at_rank: np.ndarray, judged: np.ndarray, relevant: np.ndarray,
                     judged_index: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """trec_eval's infAP sums of precisions at the relevant judged documents of every run
    (``base``, ``[n_runs]``) and their delete-one replicates (``rep``, ``[n_runs,
    n_judged]``: judged document j taken as unjudged, j counting the judged documents in
    frame order). ``judged``/``relevant``: per frame document; ``frame_at_rank`` as in
    :func:`nist_pass` (-1: outside the frame)."""
    n_runs, width = frame_at_rank.shape
    n_judged = int(judged_index.max()) + 1 if len(judged_index) else 0
    base = np.zeros(n_runs)
    rep = np.zeros((n_runs, n_judged))
    for r in range(n_runs):
        row = frame_at_rank[r]
        seen = np.zeros(n_judged, dtype=np.bool_)
        for skip_rank in range(-1, width):
            f = row[skip_rank] if skip_rank >= 0 else -1
            if skip_rank >= 0 and (f < 0 or not judged[f]):
                continue
            total, rel, non, unj = 0.0, 0.0, 0.0, 0.0
            for k in range(width):
                g = row[k]
                if g < 0:
                    continue
                is_judged = judged[g] and k != skip_rank
                if is_judged and relevant[g]:
                    density = (rel + epsilon) / (rel + non + 2.0 * epsilon)
                    total += (1.0 + (rel + non + unj) * density) / (k + 1)
                    rel += 1.0
                elif is_judged:
                    non += 1.0
                else:
                    unj += 1.0
            if skip_rank < 0:
                base[r] = total
            else:
                rep[r, judged_index[f]] = total
                seen[judged_index[f]] = True
        for j in range(n_judged):
            if not seen[j]:
                rep[r, j] = base[r]
    return base, rep


# -- inputs --------------------------------------------------------------------------------------

def nist_inputs(view: TopicView, level: float = 1.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """The arguments ``inferred.nist_topic`` gives the kernel for one topic."""
    ts = view.sample
    sizes, n_sampled = ts.strata()
    scale = np.divide(sizes, n_sampled, out=np.zeros(len(sizes)), where=n_sampled > 0)
    sampled_index = np.where(ts.judged, np.cumsum(ts.judged) - 1, -1)
    frame_at_rank = np.ascontiguousarray(view.frame_at_rank[:, :NIST_MAX_RESULTS])
    return frame_at_rank, ts.stratum, ts.labels, sampled_index, level, scale


def infap_inputs(view: TopicView, level: float = 1.0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The arguments ``inferred.infap_topic`` gives the kernel for one topic."""
    ts = view.sample
    judged_index = np.where(ts.judged, np.cumsum(ts.judged) - 1, -1)
    relevant = ts.judged & (ts.labels >= level)
    return (np.ascontiguousarray(view.frame_at_rank), ts.judged, relevant, judged_index,
            INFAP_EPSILON)


def assert_same(fast: tuple[np.ndarray, ...], slow: tuple[np.ndarray, ...]) -> None:
    for a, b in zip(fast, slow, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * max(1.0, np.abs(b).max(initial=0)))


# -- real samples --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def round5(covid: Path) -> tuple[Pool, object]:
    runs = read_runs(sorted((covid / "round5" / "runs").iterdir())[::4])  # 32 of the 126
    pool = Pool.from_runs(runs, depth=100, topics=["1", "7", "18", "33", "50"])
    return pool, qrels_oracle(read_qrels(covid / "qrels" / "qrels.covid-round5.txt"))


DESIGNS = {
    "stratified 5%": (PriorStratifiedSelector, {}, 0.05),
    "stratified 20%": (PriorStratifiedSelector, {}, 0.2),
    "2strata 30%": (StrataSelector, {"strategy": "2strata"}, 0.3),
    "3strata 30%": (StrataSelector, {"strategy": "3strata"}, 0.3),
    "uniform 3%": (UniformSelector, {}, 0.03),
    "uniform 10%": (UniformSelector, {}, 0.1),
}


@pytest.mark.shared
@pytest.mark.parametrize("design", list(DESIGNS))
def test_replicates_equal_the_brute_force_on_round_5(round5: tuple[Pool, object],
                                                     design: str) -> None:
    pool, oracle = round5
    cls, params, rate = DESIGNS[design]
    selector = cls(pool, Budget(rate=rate), np.random.default_rng(8), **params)
    sample = simulate(selector, oracle).sample()  # type: ignore[arg-type]
    views = topic_views(pool, sample)
    assert len(views) == 5
    for view in views:
        for level in (1.0, 2.0):
            args = nist_inputs(view, level)
            assert_same(nist_replicates(*args), brute_nist_replicates(*args))
            iargs = infap_inputs(view, level)
            assert_same(infap_replicates(*iargs), brute_infap_replicates(*iargs))
    n_strata = max(int(v.sample.stratum.max()) + 1 for v in views)
    assert n_strata == 1 if design.startswith("uniform") else n_strata >= 2


# -- edge cases ----------------------------------------------------------------------------------

def synthetic(seed: int, n_frame: int = 40, n_runs: int = 5, width: int = 30,
              n_strata: int = 3, sampled: float = 0.4, relevant: float = 0.4
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs over a frame of ``n_frame`` documents (-1 ranks: outside the frame or padding),
    strata at random (-1: outside every stratum), a share sampled, labels 0-2."""
    rng = np.random.default_rng(seed)
    frame_at_rank = np.full((n_runs, width), -1, dtype=np.int64)
    for r in range(n_runs):
        length = rng.integers(0, width + 1)
        chosen = rng.choice(n_frame + 10, length, replace=False)  # >= n_frame: outside
        frame_at_rank[r, :length] = np.where(chosen < n_frame, chosen, -1)
    stratum = rng.integers(-1, n_strata, n_frame) if n_strata else np.full(n_frame, -1)
    is_sampled = (rng.random(n_frame) < sampled) & (stratum >= 0)
    labels = np.where(is_sampled, np.where(rng.random(n_frame) < relevant,
                                           rng.integers(1, 3, n_frame), 0), np.nan)
    sampled_index = np.where(is_sampled, np.cumsum(is_sampled) - 1, -1)
    return frame_at_rank, stratum.astype(np.int64), labels.astype(np.float64), sampled_index


def both_kernels(frame_at_rank: np.ndarray, stratum: np.ndarray, labels: np.ndarray,
                 sampled_index: np.ndarray, n_strata: int, scale: np.ndarray | None = None
                 ) -> None:
    """Both kernels against their references on one case (infAP: one stratum, the sampled
    documents judged)."""
    if scale is None:
        scale = np.random.default_rng(0).uniform(1.0, 5.0, n_strata)
    args = (frame_at_rank, stratum, labels, sampled_index, 1.0, scale)
    assert_same(nist_replicates(*args), brute_nist_replicates(*args))
    judged = sampled_index >= 0
    iargs = (frame_at_rank, judged, judged & (np.nan_to_num(labels) >= 1), sampled_index,
             INFAP_EPSILON)
    assert_same(infap_replicates(*iargs), brute_infap_replicates(*iargs))


@pytest.mark.parametrize("seed", range(6))
def test_replicates_on_random_cases(seed: int) -> None:
    both_kernels(*synthetic(seed), 3)
    both_kernels(*synthetic(seed, sampled=0.9, relevant=0.8), 3)


def test_replicates_edge_cases() -> None:
    # a stratum with nothing sampled (scale 0, as nist_topic gives it) and one not retrieved
    frame_at_rank, stratum, labels, sampled_index = synthetic(11, n_strata=4)
    empty = stratum == 3
    labels[empty], sampled_index[empty] = np.nan, -1
    is_sampled = sampled_index >= 0
    sampled_index = np.where(is_sampled, np.cumsum(is_sampled) - 1, -1)
    both_kernels(frame_at_rank, stratum, labels, sampled_index, 5,
                 np.array([2.0, 1.5, 3.0, 0.0, 0.0]))
    # nothing relevant
    frame_at_rank, stratum, labels, sampled_index = synthetic(12, relevant=0.0)
    assert not (labels >= 1).any()
    both_kernels(frame_at_rank, stratum, labels, sampled_index, 3)
    # a single sampled document, relevant, retrieved by some runs
    frame_at_rank, stratum, labels, sampled_index = synthetic(13, sampled=0.0)
    doc = int(frame_at_rank[0, 0]) if frame_at_rank[0, 0] >= 0 else 0
    stratum[doc] = 1
    labels[doc], sampled_index[doc] = 1.0, 0
    both_kernels(frame_at_rank, stratum, labels, sampled_index, 3)
    labels[doc] = 0.0  # the same, not relevant
    both_kernels(frame_at_rank, stratum, labels, sampled_index, 3)
    # nothing sampled; no runs; empty runs
    frame_at_rank, stratum, labels, sampled_index = synthetic(14, sampled=0.0)
    both_kernels(frame_at_rank, stratum, labels, sampled_index, 3)
    both_kernels(frame_at_rank[:0], *synthetic(14)[1:], 3)
    both_kernels(np.full((3, 10), -1, dtype=np.int64), *synthetic(15)[1:], 3)
    # every document sampled and relevant, one stratum
    frame_at_rank, stratum, labels, sampled_index = synthetic(16, n_strata=1, sampled=1.0,
                                                              relevant=1.0)
    both_kernels(frame_at_rank, stratum, labels, sampled_index, 1)
