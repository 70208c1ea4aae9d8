"""Meta-evaluation: how close estimated system scores come to the true ones.

Score errors over repeated trials (``estimates``: ``[trials, runs]``, ``truth``: ``[runs]``):

- :func:`rms_error`: sqrt(mean over trials and runs of (estimate - truth)^2);
- :func:`bias`: mean over trials and runs of (estimate - truth);
- :func:`variance`: mean over runs of each run's variance across trials (``ddof=0``), so that
  ``rms_error**2 == mean over runs of (run bias^2) + variance``.

Ranking agreement of one estimated scoring with the true one (both ``[runs]``):

- :func:`kendall_tau`: Kendall's tau-b (``scipy.stats.kendalltau``);
- :func:`tau_ap`: the AP rank correlation of Yilmaz, Aslam & Robertson, "A new rank
  correlation coefficient for information retrieval", SIGIR 2008, which weights swaps near
  the top more than swaps near the bottom;
- :func:`significant_pair_accuracy`: of the run pairs a paired t-test over topics finds
  significantly different on the true per-topic scores, the share the estimates also find
  significant in the same direction;
- :func:`significance_agreement`: Voorhees's five outcomes of the significant-pair
  determination (true positive, true negative, miss, false alarm, inversion) and its accuracy.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def rms_error(estimates: np.ndarray, truth: np.ndarray) -> float:
    """Root mean squared error over trials and runs (``[trials, runs]`` vs ``[runs]``)."""
    return float(np.sqrt(np.mean((np.asarray(estimates) - truth) ** 2)))


def bias(estimates: np.ndarray, truth: np.ndarray) -> float:
    """Mean error over trials and runs (``[trials, runs]`` vs ``[runs]``)."""
    return float(np.mean(np.asarray(estimates) - truth))


def variance(estimates: np.ndarray) -> float:
    """Mean over runs of the variance across trials (rows), with ``ddof=0``."""
    return float(np.mean(np.var(np.asarray(estimates), axis=0)))


def kendall_tau(estimated: np.ndarray, truth: np.ndarray) -> float:
    """Kendall's tau-b between two scorings of the same runs."""
    return float(stats.kendalltau(estimated, truth).statistic)


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


def significant_pairs(per_topic: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """Paired two-sided t-tests over topics for every run pair ``i < j``.

    ``per_topic``: ``[topics, runs]`` scores. Returns, per pair in ``np.triu_indices`` order,
    the sign of the mean difference (run i minus run j) and whether p < ``alpha`` (a pair
    whose differences are all equal has no test and is not significant).
    """
    scores = np.asarray(per_topic, dtype=np.float64)
    i, j = np.triu_indices(scores.shape[1], k=1)
    diff = scores[:, i] - scores[:, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = stats.ttest_1samp(diff, 0.0, axis=0).pvalue
    return np.sign(diff.mean(axis=0)), np.nan_to_num(p, nan=1.0) < alpha


def significant_pair_accuracy(estimated: np.ndarray, truth: np.ndarray,
                              alpha: float = 0.05) -> float:
    """Share of the run pairs significantly different on the true per-topic scores (paired
    t-test over topics, p < ``alpha``) whose estimated per-topic scores give a mean
    difference of the same sign that is also significant at ``alpha``. Both arguments are
    ``[topics, runs]`` with the same topics and runs; NaN when no true pair is
    significant."""
    true_sign, true_sig = significant_pairs(truth, alpha)
    if not true_sig.any():
        return float("nan")
    est_sign, est_sig = significant_pairs(estimated, alpha)
    agree = est_sig & (est_sign == true_sign)
    return float(agree[true_sig].mean())


def significance_agreement(true_sign: np.ndarray, true_sig: np.ndarray, est_sign: np.ndarray,
                           est_sig: np.ndarray) -> dict[str, float]:
    """Voorhees's accuracy of the significant-pair determination (SIGIR 2014, sec. 3): per
    pair (the same pairs in both, e.g. from :func:`significant_pairs`), true positive
    (significant in both, same direction), true negative (in neither), miss (significant
    only in the truth), false alarm (only in the estimate), inversion (in both, opposite
    directions); accuracy = (TP + TN) / (TP + TN + miss + false alarm + 2 inversions), an
    inversion counting as both a false alarm and a miss. Returns the five counts and
    ``accuracy``."""
    t_sig, e_sig = np.asarray(true_sig, bool), np.asarray(est_sig, bool)
    same = np.sign(true_sign) == np.sign(est_sign)
    counts = {"true_positive": int((t_sig & e_sig & same).sum()),
              "true_negative": int((~t_sig & ~e_sig).sum()),
              "miss": int((t_sig & ~e_sig).sum()),
              "false_alarm": int((~t_sig & e_sig).sum()),
              "inversion": int((t_sig & e_sig & ~same).sum())}
    right = counts["true_positive"] + counts["true_negative"]
    wrong = counts["miss"] + counts["false_alarm"] + 2 * counts["inversion"]
    return {**counts, "accuracy": right / (right + wrong) if right + wrong else float("nan")}
