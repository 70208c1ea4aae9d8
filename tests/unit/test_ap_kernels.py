"""AP~ht's fast kernels (issue 9's speed): the compiled pair sums of AP-hat
(``estimation/engine/kernels.py``) and the replicate jackknife by updates
(:func:`conftest.jackknife_variance`: ``general_replicates``, and by stratum sums on stratified
samples, ``stratified_replicates``) against the numpy matrix form they replaced, kept here
as the reference: AP-hat's ``[runs, K, K]`` pair matrices, and every replicate recomputed
from scratch with one document's y at 0 and its stratum's design at n_h - 1. Agreement to
1e-12 relative on random cases (fractional labels, strata with n_h = 1, 2, N_h, ``paper``,
cutoffs, ``pairs``) and on real TREC-COVID round-5 samples of every design AP~ht meets in
``simulate``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import jackknife_variance
from sampleval.core._kernels import with_replacement_inclusion
from sampleval.core.inclusion import judged_design, stratified_inclusion
from sampleval.core.pool import Pool
from sampleval.estimation.engine.estimands import (
    _contrast,
    _delta,
    _flat,
    _quadratic,
    _run_docs,
    _RunDocs,
    ap_terms,
    average_precision,
)
from sampleval.estimation.engine.views import relevance, topic_views
from sampleval.io import read_qrels, read_runs
from sampleval.selection import Budget, qrels_oracle, simulate
from sampleval.selection.active import ActiveSelector
from sampleval.selection.strata import StrataSelector
from sampleval.selection.stratified import PriorStratifiedSelector
from sampleval.selection.uniform import UniformSelector

PAIRS = np.array([[0, 1], [2, 0], [3, 4]])


def _over_rank(values: np.ndarray, docs: _RunDocs) -> np.ndarray:
    """``values / rank`` on each run's documents (0 at padding)."""
    return np.divide(values, docs.rank, out=np.zeros(values.shape), where=docs.rank > 0)


# -- the reference: the numpy matrix form --------------------------------------------------------

def matrix_terms(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                 cutoff: int | None, paper: bool) -> tuple[np.ndarray, np.ndarray]:
    """AP-hat's numerator ``[runs, B]`` and contributions ``[runs, K, B]`` from the
    ``[runs, K, K]`` matrices of pi_k/pi_kl (the form before the compiled kernels)."""
    docs = _run_docs(ranks, cutoff)
    y_run = np.where(docs.rank > 0, _flat(y).T[docs.doc], 0.0)
    rank = docs.rank[..., 0]
    above = (rank[:, None, :] > 0) & (rank[:, None, :] < rank[:, :, None])
    pi_run = pi[docs.doc]
    pair = (pi_run[:, :, None] * pi_run[:, None, :] if paper
            else pi_joint[docs.doc[:, :, None], docs.doc[:, None, :]])
    given = pi_run[:, :, None] / np.where(pair > 0, pair, 1.0)
    itself = (1.0 / pi_run if paper else np.ones_like(pi_run))[:, :, None]
    prec = _over_rank(itself * y_run + np.where(above, given, 0.0) @ y_run, docs)
    below = np.where(np.swapaxes(above, 1, 2), given, 0.0) @ _over_rank(y_run, docs)
    x_run = y_run / pi_run[:, :, None]
    return (x_run * prec).sum(axis=1), x_run * (prec + below)


def matrix_value(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                 cutoff: int | None, paper: bool, taylor: bool) -> np.ndarray:
    """AP-hat (``taylor``: less (AP-hat b'Db - a'Db)/R-hat^2) for each row of ``y``
    ``[B, m]``: ``[B, runs]``."""
    num, contribution = matrix_terms(y, pi, pi_joint, ranks, cutoff, paper)
    docs = _run_docs(ranks, cutoff)
    delta = _delta(pi, pi_joint)
    x_b = _flat(y) / pi
    delta_b = x_b @ delta
    denom = x_b.sum(axis=-1)
    q = np.divide(num, denom, out=np.zeros(num.shape), where=denom > 0)
    if taylor:
        cross = (contribution * delta_b.T[docs.doc]).sum(axis=1)
        own = (x_b * delta_b).sum(axis=-1)
        q = q - np.divide(q * own - cross, denom * denom, out=np.zeros(q.shape),
                          where=denom > 0)
    return q.T


def recomputed_jackknife(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                         taylor: bool, pi: np.ndarray, pi_joint: np.ndarray,
                         strata: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                         pairs: np.ndarray | None = None) -> np.ndarray:
    """The jackknife variance (:func:`conftest.jackknife_variance`) by its definition: every replicate recomputed in full
    (one batch row per deleted document, the stratum's design at n_h - 1)."""
    m = len(y)

    def replicates(rows: np.ndarray, p: np.ndarray, joint: np.ndarray) -> np.ndarray:
        batch = np.repeat(y[None, :], len(rows), axis=0)
        deleted = rows >= 0
        batch[np.flatnonzero(deleted), rows[deleted]] = 0.0
        values = matrix_value(batch, p, joint, ranks, cutoff, paper, taylor)
        return values if pairs is None else _contrast(values.T, pairs).T

    variance = np.zeros(ranks.shape[0] if pairs is None else len(pairs))
    if m == 0:
        return variance
    if strata is None:
        value = matrix_value(y[None], pi, pi_joint, ranks, cutoff, paper, taylor)[0]
        value = value if pairs is None else _contrast(value, pairs)
        reps = replicates(np.arange(m), pi, pi_joint)
        return ((1.0 - pi)[:, None] * (reps - value) ** 2).sum(axis=0)
    stratum, sizes, n_sampled = strata
    for h, (big_n, n_h) in enumerate(zip(sizes, n_sampled, strict=True)):
        members = np.flatnonzero(stratum == h)
        if n_h < 2 or n_h >= big_n or not len(members):
            continue
        less = n_sampled.astype(np.float64)
        less[h] -= 1
        p, joint = stratified_inclusion(stratum, sizes, less)
        rest = int(n_h) - len(members)
        rows = np.r_[members, [-1] if rest else []].astype(np.int64)
        reps = replicates(rows, p, joint)
        weight = np.r_[np.ones(len(members)), [rest] if rest else []]
        mean = weight @ reps / n_h
        variance += (1.0 - n_h / big_n) * (n_h - 1) / n_h * (weight @ (reps - mean) ** 2)
    return variance


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Equal to 1e-12 relative (of the largest value where one is near 0)."""
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * scale)


def check_all(y: np.ndarray, ranks: np.ndarray, pi: np.ndarray, joint: np.ndarray,
              strata: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
    """The jackknife and AP-hat itself, per run and per pair, ours and the paper's, with
    and without the correction and a cutoff."""
    n_runs = ranks.shape[0]
    pairs = PAIRS[PAIRS.max(axis=1) < n_runs]
    for paper in (False, True):
        for cutoff in (None, 20):
            for taylor in (True, False):
                for p in (None, pairs):
                    assert_close(
                        jackknife_variance(y, ranks, cutoff, paper, taylor, pi, joint,
                                            strata, p),
                        recomputed_jackknife(y, ranks, cutoff, paper, taylor, pi, joint,
                                             strata, p))
            assert_close(average_precision(y, pi, joint, ranks, cutoff, paper, True).value,
                         matrix_value(y[None], pi, joint, ranks, cutoff, paper, True)[0])


# -- random cases ---------------------------------------------------------------------------------

def test_pair_sums_match_the_matrix_form() -> None:
    """ap_terms and the HT quadratic form, batched (B = 3), ours and the paper's, with a
    cutoff, general pi_ij (with-replacement rounds)."""
    rng = np.random.default_rng(5)
    m, n_runs = 30, 6
    pi, joint = with_replacement_inclusion(rng.dirichlet(np.ones(m), size=3).T,
                                           np.array([4.0, 6.0, 5.0]))
    ranks = np.array([rng.permutation(50)[:m] + 1 for _ in range(n_runs)])
    ranks[ranks > 35] = 0
    y = rng.random((3, m)) * (rng.random((3, m)) < 0.6)
    for paper in (False, True):
        for cutoff in (None, 10):
            terms = ap_terms(y, pi, joint, ranks, cutoff, paper)
            num, contribution = matrix_terms(y, pi, joint, ranks, cutoff, paper)
            assert_close(terms.num, num)
            assert_close(terms.contribution, contribution)
            docs = _run_docs(ranks, cutoff)
            delta = _delta(pi, joint)
            blocks = delta[docs.doc[:, :, None], docs.doc[:, None, :]]
            assert_close(_quadratic(contribution, docs, delta),
                         ((blocks @ contribution) * contribution).sum(axis=1))


@pytest.mark.parametrize("seed", range(6))
def test_replicates_match_recomputation_on_random_cases(seed: int) -> None:
    """Stratified: strata with n_h = N_h (no replicate), n_h = 2 (its replicates leave one
    document, pi_ij of a pair then 1/(pi_i pi_j)), n_h = 1, and judged documents with y = 0
    (counted, not passed); fractional labels. General designs: with-replacement rounds."""
    rng = np.random.default_rng(seed)
    sizes = np.array([6, 12, 30, 80, 9, 40])
    n_sampled = np.array([6, 2, 7, 12, 1, 5])
    stratum = np.repeat(np.arange(len(sizes)), n_sampled)
    y = rng.random(len(stratum)) * (rng.random(len(stratum)) < 0.6)
    y[rng.random(len(stratum)) < 0.3] = 1.0
    y[6] = 1.0
    n_runs = 5
    ranks = np.array([rng.permutation(60)[:len(stratum)] + 1 for _ in range(n_runs)])
    ranks[ranks > 40] = 0
    keep = y != 0
    y, stratum, ranks = y[keep], stratum[keep], ranks[:, keep]
    pi, joint = stratified_inclusion(stratum, sizes, n_sampled)
    check_all(y, ranks, pi, joint, (stratum, sizes, n_sampled))
    # a census of the same documents: no variance either way
    census = np.bincount(stratum, minlength=len(sizes))
    got = jackknife_variance(y, ranks, None, False, True, np.ones(len(y)),
                              np.ones((len(y), len(y))), (stratum, census, census))
    np.testing.assert_array_equal(got, 0.0)
    pi, joint = with_replacement_inclusion(rng.dirichlet(np.ones(len(y)), size=2).T,
                                           np.array([3.0, 5.0]))
    check_all(y, ranks, pi, joint, None)


def test_nothing_or_one_document() -> None:
    """m = 0 and m = 1 (every replicate without it has R-hat = 0, AP-hat 0)."""
    ranks = np.array([[3], [0], [1]])
    for y in (np.zeros(0), np.ones(1)):
        r = ranks[:, :len(y)]
        pi = np.full(len(y), 0.4)
        joint = np.diag(pi) if len(y) else np.zeros((0, 0))
        check_all(y, r, pi, joint, None)
        check_all(y, r, pi, joint, (np.zeros(len(y), dtype=np.int64), np.array([10]),
                                    np.array([4])))


# -- real samples ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def round5(covid: Path) -> tuple[Pool, object]:
    runs = read_runs(sorted((covid / "round5" / "runs").iterdir())[::3])  # 42 of the 126
    pool = Pool.from_runs(runs, depth=100, topics=["1", "7", "18", "33", "50"])
    return pool, qrels_oracle(read_qrels(covid / "qrels" / "qrels.covid-round5.txt"))


DESIGNS = {
    "stratified 5%": (PriorStratifiedSelector, {}, 0.05),
    "2strata 30%": (StrataSelector, {"strategy": "2strata"}, 0.3),
    "3strata 30%": (StrataSelector, {"strategy": "3strata"}, 0.3),
    "uniform 10%": (UniformSelector, {}, 0.1),
    "active 10%": (ActiveSelector, {}, 0.1),
}


@pytest.mark.shared
@pytest.mark.parametrize("design", list(DESIGNS))
def test_replicates_match_recomputation_on_round_5(round5: tuple[Pool, object],
                                                   design: str) -> None:
    """Each topic's inputs as ``_topic_ap`` builds them (relevance level 1 and 2), the
    jackknife of every run and pair, ours and the paper's; and a census of the same
    judged documents (every stratum judged in full) has variance 0."""
    pool, oracle = round5
    cls, params, rate = DESIGNS[design]
    selector = cls(pool, Budget(rate=rate), np.random.default_rng(3), **params)
    sample = simulate(selector, oracle).sample()  # type: ignore[arg-type]
    stratified = sample.design == "stratified"
    assert stratified != design.startswith("active")
    for view in topic_views(pool, sample):
        judged = np.flatnonzero(view.sample.judged)
        for level in (1.0, 2.0):
            y = relevance(view.sample.labels[judged], level)
            index = judged[y != 0]
            design_ = judged_design(sample, view.sample, index)
            strata = None
            if stratified:
                sizes, n_sampled = view.sample.strata()
                strata = (view.sample.stratum[index], sizes, n_sampled)
            check_all(y[y != 0], view.rank_of(index), design_.pi, design_.pi_joint, strata)
            if strata is not None:
                full = np.bincount(strata[0], minlength=len(strata[1]))
                got = jackknife_variance(y[y != 0], view.rank_of(index), None, False, True,
                                          design_.pi, design_.pi_joint,
                                          (strata[0], full, full))
                np.testing.assert_array_equal(got, 0.0)
