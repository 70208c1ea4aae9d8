"""Meta-evaluation statistics on hand-computed cases and against scipy: Li & Kanoulas' rms,
bias and variance (sec. 4.2), Kendall's tau-b, tau_AP, Pearson's r, and Voorhees' five
categories of run pairs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import hadamard

from sampleval.simulation.metaeval import (
    PairOutcomes,
    bias,
    bias_squared,
    coverage,
    kendall_tau,
    mse,
    pair_outcomes,
    pearson,
    rms,
    sample_rms,
    significant_pairs,
    tau_ap,
    variance,
)

TRUTH = np.array([4.0, 3.0, 2.0, 1.0])  # runs A > B > C > D


def scores_for(order: str) -> np.ndarray:
    """Scores over runs ABCD that rank them in ``order`` (best first)."""
    return np.array([len(order) - order.index(r) for r in "ABCD"], dtype=float)


# -- rms, bias, variance ---------------------------------------------------------------------------

ESTIMATES = np.array([[1.0, 2.0], [3.0, 2.0]])  # 2 samples x 2 runs
ERRORS_TRUTH = np.array([2.0, 1.0])  # errors [[-1, 1], [1, 1]]


def test_rms_is_the_mean_over_samples_of_each_samples_rms() -> None:
    # sample 1: sqrt((1 + 1) / 2) = 1; sample 2: sqrt((1 + 1) / 2) = 1
    assert sample_rms(ESTIMATES, ERRORS_TRUTH).tolist() == [1.0, 1.0]
    assert rms(ESTIMATES, ERRORS_TRUTH) == pytest.approx(1.0)
    # unequal samples: errors [[3, 0], [1, 1]] -> sqrt(4.5) and 1, mean (sqrt(4.5) + 1) / 2,
    # while the root of the pooled mse is sqrt((9 + 0 + 1 + 1) / 4): rms <= sqrt(mse)
    unequal = np.array([[5.0, 1.0], [3.0, 2.0]])
    assert rms(unequal, ERRORS_TRUTH) == pytest.approx((np.sqrt(4.5) + 1) / 2)
    assert mse(unequal, ERRORS_TRUTH) == pytest.approx(11 / 4)
    assert rms(unequal, ERRORS_TRUTH) < np.sqrt(mse(unequal, ERRORS_TRUTH))


def test_bias_variance_decompose_the_mse() -> None:
    assert bias(ESTIMATES, ERRORS_TRUTH) == pytest.approx(0.5)  # run 1: 0; run 2: 1
    assert bias_squared(ESTIMATES, ERRORS_TRUTH) == pytest.approx(0.5)  # (0 + 1) / 2
    assert variance(ESTIMATES) == pytest.approx(0.5)  # run 1: var(1, 3) = 1; run 2: 0
    assert mse(ESTIMATES, ERRORS_TRUTH) == pytest.approx(1.0)
    rng = np.random.default_rng(3)
    estimates, truth = rng.normal(size=(30, 7)), rng.normal(size=7)
    assert mse(estimates, truth) == pytest.approx(
        bias_squared(estimates, truth) + variance(estimates))
    assert variance(estimates) == pytest.approx(np.mean(np.var(estimates, axis=0)))


def test_masks_keep_some_runs_per_sample() -> None:
    estimates = np.array([[1.0, 2.0, 9.0], [3.0, 2.0, 5.0]])
    truth = np.array([2.0, 1.0, 6.0])
    left_out = np.array([[False, False, True], [True, False, False]])
    # sample 1 keeps run 3 (error 3), sample 2 run 1 (error 1)
    assert sample_rms(estimates, truth, left_out).tolist() == [3.0, 1.0]
    assert rms(estimates, truth, left_out) == pytest.approx(2.0)
    assert bias(estimates, truth, left_out) == pytest.approx((1 + 3) / 2)  # per run, then runs
    assert variance(estimates, left_out) == 0.0  # each run kept in one sample only
    assert np.isnan(sample_rms(estimates, truth, np.zeros((2, 3), dtype=bool))).all()
    assert np.isnan(rms(estimates, truth, np.zeros((2, 3), dtype=bool)))


# -- rankings ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("order", "tau_b"), [
    ("ABCD", 1.0), ("DCBA", -1.0), ("ACBD", 2 / 3), ("BACD", 2 / 3), ("ABDC", 2 / 3)])
def test_kendall_tau_by_hand(order: str, tau_b: float) -> None:
    assert kendall_tau(scores_for(order), TRUTH) == pytest.approx(tau_b)


def test_kendall_tau_b_with_ties_by_hand_and_against_scipy() -> None:
    # pairs: (1,2) tied in x; (1,3), (2,3) concordant; (1,4), (2,4), (3,4) discordant
    x, y = np.array([1.0, 1.0, 2.0, 0.0]), np.array([1.0, 2.0, 3.0, 4.0])
    # C - D = 2 - 3 (the tied pair counts for neither); untied pairs: 5 in x, 6 in y
    assert kendall_tau(x, y) == pytest.approx(-1 / np.sqrt(5 * 6))
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = np.round(rng.normal(size=20), 1)  # many ties
        b = np.round(a + rng.normal(size=20), 1)
        assert kendall_tau(a, b) == pytest.approx(stats.kendalltau(a, b).statistic)
    assert np.isnan(kendall_tau(np.ones(4), TRUTH))


@pytest.mark.parametrize(("order", "expected"), [
    ("ABCD", 1.0),
    ("DCBA", -1.0),
    # C(2..4) / (i - 1): A above C ok (1/1); A ok, C not above B (1/2); all above D (3/3)
    ("ACBD", 2 / 3 * (1 + 1 / 2 + 1) - 1),
    # a swap at the top costs more than one at the bottom (same Kendall's tau, 2/3)
    ("BACD", 2 / 3 * (0 + 2 / 2 + 3 / 3) - 1),
    ("ABDC", 2 / 3 * (1 + 2 / 2 + 2 / 3) - 1),
])
def test_tau_ap_by_hand(order: str, expected: float) -> None:
    assert tau_ap(scores_for(order), TRUTH) == pytest.approx(expected)


def test_tau_ap_is_asymmetric_and_counts_true_ties_as_correct() -> None:
    cycled = scores_for("BCAD")  # C(2..4): 1/1, 0/2, 3/3; the other way: 0/1, 1/2, 3/3
    assert tau_ap(cycled, TRUTH) == pytest.approx(1 / 3)
    assert tau_ap(TRUTH, cycled) == pytest.approx(0.0)
    assert tau_ap(np.array([3.0, 2, 1]), np.array([1.0, 1, 1])) == 1.0
    with pytest.raises(ValueError, match="two runs"):
        tau_ap(np.array([1.0]), np.array([1.0]))


def test_pearson_by_hand_and_against_scipy() -> None:
    assert pearson(np.array([1.0, 2, 3]), np.array([2.0, 4, 6])) == pytest.approx(1.0)
    # x - mean = (-1, 0, 1), y - mean = (1/3, -2/3, 1/3): covariance 0
    assert pearson(np.array([1.0, 2, 3]), np.array([1.0, 0, 1])) == pytest.approx(0.0)
    rng = np.random.default_rng(1)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic)
    assert np.isnan(pearson(np.ones(3), x[:3]))
    assert np.isnan(pearson(x[:1], y[:1]))


def test_coverage_counts_finite_intervals() -> None:
    lo = np.array([0.0, 0.5, np.nan, 0.2])
    hi = np.array([1.0, 0.6, np.nan, 0.3])
    assert coverage(lo, hi, np.array([0.5, 0.7, 0.1, 0.3])) == (2, 3)


# -- significant pairs (Voorhees) ------------------------------------------------------------------

TOPIC_A = np.array([0.5, 0.6, 0.7, 0.4, 0.5, 0.6])
NOISE = np.array([0.01, -0.02, 0.03, -0.01, 0.0, -0.005])
# [topics, runs]: A beats B on every topic; C is A plus noise; C beats B
PER_TOPIC = np.column_stack([TOPIC_A, TOPIC_A - 0.1 + NOISE / 5, TOPIC_A + NOISE])


def test_significant_pairs_match_paired_t_tests() -> None:
    sign, significant = significant_pairs(PER_TOPIC)
    assert sign.tolist() == [1, -1, -1]  # pairs (A, B), (A, C), (B, C)
    assert significant.tolist() == [True, False, True]
    rng = np.random.default_rng(2)
    scores = np.column_stack([rng.normal(size=12) + shift for shift in (0, 0.1, 0.8, 0.9)])
    scores[:, 1] = np.round(scores[:, 1], 1)
    _, significant = significant_pairs(scores)
    for k, (i, j) in enumerate(zip(*np.triu_indices(4, k=1), strict=True)):
        p = stats.ttest_rel(scores[:, i], scores[:, j]).pvalue
        assert significant[k] == (p < 0.05)
    flat = np.ones((6, 3))  # no pair differs: no test, nothing significant
    assert not significant_pairs(flat)[1].any()


def constructed_case() -> tuple[np.ndarray, np.ndarray]:
    """Five runs over 8 topics, each run a constant plus its own mean-zero +-0.05 pattern
    (rows of a Hadamard matrix): a pair is significantly different exactly when its
    constants differ (by at least 0.3). True constants A..E: 0.3, 0, 0, 0.3, 0.6;
    estimated: 0.3, 0.3, 0, 0.3, 0."""
    patterns = 0.05 * hadamard(8)[1:6].T.astype(float)
    true = np.array([0.3, 0.0, 0.0, 0.3, 0.6]) + patterns
    estimated = np.array([0.3, 0.3, 0.0, 0.3, 0.0]) + patterns
    return estimated, true


def test_voorhees_five_categories_on_a_constructed_case() -> None:
    estimated, true = constructed_case()
    # pair by pair (truth -> estimates): AB sig -> equal: miss; AC A>C both: true positive;
    # AD equal both: true negative; AE E>A -> A>E: inversion; BC equal -> B>C: false alarm;
    # BD D>B -> equal: miss; BE E>B -> B>E: inversion; CD D>C both: true positive;
    # CE E>C -> equal: miss; DE E>D -> D>E: inversion
    outcomes = pair_outcomes(estimated, true)
    assert outcomes == PairOutcomes(true_positive=2, true_negative=1, miss=3, false_alarm=1,
                                    inversion=3)
    # an inversion counts as a miss and a false alarm: 3 correct, 3 + 1 + 2 * 3 incorrect
    assert outcomes.accuracy == pytest.approx(3 / 13)
    # the construction holds by paired t-tests too: significant pairs far below 0.05,
    # the others at p = 1 (their mean difference is exactly 0)
    for matrix in (estimated, true):
        for i, j in zip(*np.triu_indices(5, k=1), strict=True):
            p = stats.ttest_rel(matrix[:, i], matrix[:, j]).pvalue
            differs = not np.isclose(matrix[:, i].mean(), matrix[:, j].mean())
            assert (p < 1e-4) if differs else (p > 0.99)
    assert pair_outcomes(true, true).accuracy == 1.0
    assert np.isnan(PairOutcomes(0, 0, 0, 0, 0).accuracy)
