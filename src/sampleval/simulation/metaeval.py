"""Meta-evaluation: how close estimated system scores come to the true ones.

Score errors (Li & Kanoulas, CIKM 2017, sec. 4.2). ``estimates`` is ``[samples, runs]``: one
row per sample set S (a trial, or a trial of one split of the runs), f(k|S) in each column;
``truth`` is ``[runs]`` (or ``[samples, runs]``), h(k). An optional boolean ``mask`` of the
same shape keeps only some (sample, run) cells, e.g. the runs that did not take part in the
selection (reusability, sec. 5.3); a run or a sample without a kept cell drops out.

- :func:`rms`: E_S sqrt(E_k (f(k|S) - h(k))^2), the mean over samples of each sample's root
  mean squared error over runs (the paper's definition, after Pavlu & Aslam);
- :func:`mse`: E_k E_S (f(k|S) - h(k))^2;
- :func:`bias`: E_k E_S (f(k|S) - h(k)), the paper's signed bias;
- :func:`bias_squared`: E_k (E_S (f(k|S) - h(k)))^2, the bias term of the decomposition;
- :func:`variance`: E_k VAR_S f(k|S) (``ddof=0``), so that ``mse = bias_squared + variance``
  exactly. By Jensen's inequality ``rms <= sqrt(mse)``.

Ranking agreement of one estimated scoring with the true one (both ``[runs]``):

- :func:`kendall_tau`: Kendall's tau-b, (C - D) / sqrt((n0 - n1)(n0 - n2)) with n1, n2 the
  pairs tied in either scoring;
- :func:`tau_ap`: the AP rank correlation of Yilmaz, Aslam & Robertson, "A new rank
  correlation coefficient for information retrieval", SIGIR 2008, which weights swaps near
  the top more than swaps near the bottom.

Significance (Voorhees, "The effect of sampling strategy on inferred measures", SIGIR 2014):
:func:`pair_outcomes` classifies every run pair by a paired t-test over topics at ``alpha``
(0.05) on the true and on the estimated per-topic scores into true positives, true negatives,
misses, false alarms and inversions; :attr:`PairOutcomes.accuracy` is correct / (correct +
incorrect), an inversion counting as both a miss and a false alarm.

:func:`pearson` (Voorhees' Table 3: estimated against true R per topic) and :func:`coverage`
(the share of confidence intervals that contain the truth) complete the set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

# -- score errors --------------------------------------------------------------------------------


def _cells(estimates: np.ndarray, truth: np.ndarray | None,
           mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Errors (or estimates, when ``truth`` is None) as a float ``[samples, runs]`` array, and
    the kept cells (``mask`` and finite)."""
    values = np.atleast_2d(np.asarray(estimates, dtype=np.float64))
    if truth is not None:
        values = values - np.asarray(truth, dtype=np.float64)
    keep = np.isfinite(values)
    if mask is not None:
        keep &= np.broadcast_to(np.asarray(mask, dtype=bool), values.shape)
    return values, keep


def _run_means(values: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run's mean over its kept samples, and which runs have any."""
    counts = keep.sum(axis=0)
    sums = np.where(keep, values, 0.0).sum(axis=0)
    has = counts > 0
    return np.divide(sums, counts, out=np.full(len(counts), np.nan), where=has), has


def sample_rms(estimates: np.ndarray, truth: np.ndarray,
               mask: np.ndarray | None = None) -> np.ndarray:
    """Each sample's root mean squared error over its kept runs (``[samples]``; NaN for a
    sample without a kept run)."""
    errors, keep = _cells(estimates, truth, mask)
    counts = keep.sum(axis=1)
    squares = np.where(keep, errors**2, 0.0).sum(axis=1)
    return np.sqrt(np.divide(squares, counts, out=np.full(len(counts), np.nan),
                             where=counts > 0))


def rms(estimates: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None) -> float:
    """E_S sqrt(E_k (f(k|S) - h(k))^2): the mean of :func:`sample_rms` over samples."""
    per_sample = sample_rms(estimates, truth, mask)
    return float(np.nanmean(per_sample)) if np.isfinite(per_sample).any() else float("nan")


def mse(estimates: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None) -> float:
    """E_k E_S (f(k|S) - h(k))^2 over the kept cells."""
    errors, keep = _cells(estimates, truth, mask)
    per_run, has = _run_means(errors**2, keep)
    return float(per_run[has].mean()) if has.any() else float("nan")


def bias(estimates: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None) -> float:
    """E_k E_S (f(k|S) - h(k)): the mean signed error (Li & Kanoulas' bias)."""
    errors, keep = _cells(estimates, truth, mask)
    per_run, has = _run_means(errors, keep)
    return float(per_run[has].mean()) if has.any() else float("nan")


def bias_squared(estimates: np.ndarray, truth: np.ndarray,
                 mask: np.ndarray | None = None) -> float:
    """E_k (E_S (f(k|S) - h(k)))^2: the squared-bias term of the mse."""
    errors, keep = _cells(estimates, truth, mask)
    per_run, has = _run_means(errors, keep)
    return float((per_run[has] ** 2).mean()) if has.any() else float("nan")


def variance(estimates: np.ndarray, mask: np.ndarray | None = None) -> float:
    """E_k VAR_S f(k|S): the mean over runs of each run's variance across its kept samples
    (``ddof=0``)."""
    values, keep = _cells(estimates, None, mask)
    mean, has = _run_means(values, keep)
    spread, _ = _run_means((values - mean) ** 2, keep)
    return float(spread[has].mean()) if has.any() else float("nan")


# -- rankings ------------------------------------------------------------------------------------


def kendall_tau(estimated: np.ndarray, truth: np.ndarray) -> float:
    """Kendall's tau-b between two scorings of the same runs: sum over pairs of
    sign(dx) sign(dy), over sqrt(pairs untied in x * pairs untied in y); NaN when either
    scoring ties every pair."""
    x, y = np.asarray(estimated, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    i, j = np.triu_indices(len(x), k=1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    denominator = np.sqrt(float(np.abs(sx).sum()) * float(np.abs(sy).sum()))
    return float(np.sum(sx * sy) / denominator) if denominator > 0 else float("nan")


def tau_ap(estimated: np.ndarray, truth: np.ndarray) -> float:
    """AP rank correlation tau_AP of ``estimated`` against ``truth`` (Yilmaz, Aslam &
    Robertson, SIGIR 2008, eq. 3)::

        tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1)  -  1

    with the runs in the estimated order (best first; ties broken by input order) and C(i)
    the number of runs above rank i that the truth also scores at least as high as the run at
    rank i (a pair tied in the truth has no wrong order, so it counts as correct). Identical
    orders give 1, reversed ones -1; unlike Kendall's tau it is not symmetric.
    """
    order = np.argsort(-np.asarray(estimated, dtype=np.float64), kind="stable")
    true = np.asarray(truth, dtype=np.float64)[order]
    n = len(true)
    if n < 2:
        raise ValueError("tau_AP needs at least two runs")
    above = np.tril(true[None, :] >= true[:, None], k=-1)  # [i, j]: j above i, truly >=
    correct = above.sum(axis=1)[1:]
    return float(2 / (n - 1) * np.sum(correct / np.arange(1, n)) - 1)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's correlation of two samples (NaN when either is constant or has fewer than
    two values)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(a) < 2:
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    denominator = np.sqrt(np.sum(da**2) * np.sum(db**2))
    return float(np.sum(da * db) / denominator) if denominator > 0 else float("nan")


def coverage(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray) -> tuple[int, int]:
    """How many of the intervals [lo, hi] (those with finite bounds) contain the truth, and
    how many intervals there are."""
    lo, hi, truth = (np.asarray(a, dtype=np.float64) for a in (lo, hi, truth))
    has = np.isfinite(lo) & np.isfinite(hi)
    return int(((lo <= truth) & (truth <= hi) & has).sum()), int(has.sum())


# -- significance --------------------------------------------------------------------------------


def significant_pairs(per_topic: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """Paired two-sided t-tests over topics for every run pair ``i < j``.

    ``per_topic``: ``[topics, runs]`` scores. Returns, per pair in ``np.triu_indices`` order,
    the sign of the mean difference (run i minus run j) and whether p < ``alpha`` (a pair
    whose differences are all equal has no test and is not significant).
    """
    scores = np.asarray(per_topic, dtype=np.float64)
    n = scores.shape[0]
    i, j = np.triu_indices(scores.shape[1], k=1)
    diff = scores[:, i] - scores[:, j]
    mean = diff.mean(axis=0)
    if n < 2:
        return np.sign(mean), np.zeros(len(mean), dtype=bool)
    spread = np.sqrt(np.sum((diff - mean) ** 2, axis=0) / (n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (spread / np.sqrt(n))  # scipy.stats.ttest_rel's statistic, without its
    p = 2.0 * special.stdtr(n - 1, -np.abs(t))  # per-call overhead (thousands of pairs)
    return np.sign(mean), np.nan_to_num(p, nan=1.0) < alpha


@dataclass(frozen=True)
class PairOutcomes:
    """Voorhees' five categories of run pairs, the truth's significance against the
    estimates'."""

    true_positive: int
    """significant in both, in the same direction"""
    true_negative: int
    """significant in neither"""
    miss: int
    """significant in the truth only"""
    false_alarm: int
    """significant in the estimates only"""
    inversion: int
    """significant in both, in opposite directions"""

    @property
    def correct(self) -> int:
        return self.true_positive + self.true_negative

    @property
    def incorrect(self) -> int:
        """Misses and false alarms, an inversion counting as one of each."""
        return self.miss + self.false_alarm + 2 * self.inversion

    @property
    def accuracy(self) -> float:
        """correct / (correct + incorrect); NaN without pairs."""
        total = self.correct + self.incorrect
        return self.correct / total if total else float("nan")


def pair_outcomes(estimated: np.ndarray, truth: np.ndarray,
                  alpha: float = 0.05) -> PairOutcomes:
    """Classify every run pair by paired t-tests over topics (p < ``alpha``) on the true and
    on the estimated per-topic scores (both ``[topics, runs]``, same topics and runs)."""
    true_sign, true_sig = significant_pairs(truth, alpha)
    est_sign, est_sig = significant_pairs(estimated, alpha)
    return classify_pairs(true_sign, true_sig, est_sign, est_sig)


def classify_pairs(true_sign: np.ndarray, true_sig: np.ndarray, est_sign: np.ndarray,
                   est_sig: np.ndarray) -> PairOutcomes:
    """Voorhees' categories from each pair's direction and significance, on the truth and on
    the estimates (the same pairs in the same order, e.g. from :func:`significant_pairs`)."""
    true_sig, est_sig = np.asarray(true_sig, dtype=bool), np.asarray(est_sig, dtype=bool)
    both = true_sig & est_sig
    same = np.sign(est_sign) == np.sign(true_sign)
    return PairOutcomes(true_positive=int((both & same).sum()),
                        true_negative=int((~true_sig & ~est_sig).sum()),
                        miss=int((true_sig & ~est_sig).sum()),
                        false_alarm=int((~true_sig & est_sig).sum()),
                        inversion=int((both & ~same).sum()))
