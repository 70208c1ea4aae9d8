"""Meta-evaluation measures on hand-computed cases, and a smoke test of compare()."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.experiments.compare_methods import COLUMNS, ap_measure, compare, method_spec
from sampleval.experiments.metaeval import (
    bias,
    kendall_tau,
    rms_error,
    significant_pair_accuracy,
    significant_pairs,
    tau_ap,
    variance,
)
from sampleval.io import read_qrels, read_runs

TRUTH = np.array([4.0, 3.0, 2.0, 1.0])  # runs A > B > C > D


def scores_for(order: str) -> np.ndarray:
    """Scores over runs ABCD that rank them in ``order`` (best first)."""
    return np.array([len(order) - order.index(r) for r in "ABCD"], dtype=float)


def test_score_errors_by_hand() -> None:
    estimates = np.array([[1.0, 2.0], [3.0, 2.0]])  # 2 trials x 2 runs
    truth = np.array([2.0, 1.0])  # errors [[-1, 1], [1, 1]]
    assert rms_error(estimates, truth) == pytest.approx(1.0)
    assert bias(estimates, truth) == pytest.approx(0.5)
    assert variance(estimates) == pytest.approx(0.5)  # run 1: var(1, 3) = 1; run 2: 0
    run_bias = (estimates - truth).mean(axis=0)
    assert rms_error(estimates, truth) ** 2 == pytest.approx(
        np.mean(run_bias**2) + variance(estimates))


@pytest.mark.parametrize(("order", "tau_b"), [
    ("ABCD", 1.0), ("DCBA", -1.0), ("ACBD", 2 / 3), ("BACD", 2 / 3), ("ABDC", 2 / 3)])
def test_kendall_tau_by_hand(order: str, tau_b: float) -> None:
    assert kendall_tau(scores_for(order), TRUTH) == pytest.approx(tau_b)


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


TOPIC_A = np.array([0.5, 0.6, 0.7, 0.4, 0.5, 0.6])
NOISE = np.array([0.01, -0.02, 0.03, -0.01, 0.0, -0.005])
# [topics, runs]: A beats B on every topic; C is A plus noise; C beats B
PER_TOPIC = np.column_stack([TOPIC_A, TOPIC_A - 0.1 + NOISE / 5, TOPIC_A + NOISE])


def test_significant_pairs_match_paired_t_tests() -> None:
    sign, significant = significant_pairs(PER_TOPIC)
    assert sign.tolist() == [1, -1, -1]  # pairs (A, B), (A, C), (B, C)
    assert significant.tolist() == [True, False, True]
    for k, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
        p = stats.ttest_rel(PER_TOPIC[:, i], PER_TOPIC[:, j]).pvalue
        assert significant[k] == (p < 0.05)


def test_significant_pair_accuracy_by_hand() -> None:
    assert significant_pair_accuracy(PER_TOPIC, PER_TOPIC) == 1.0
    assert significant_pair_accuracy(-PER_TOPIC, PER_TOPIC) == 0.0  # every sign flipped
    # C estimated as B plus noise: (A, B) kept, (B, C) no longer significant
    estimated = PER_TOPIC.copy()
    estimated[:, 2] = estimated[:, 1] + NOISE
    assert significant_pair_accuracy(estimated, PER_TOPIC) == 0.5
    flat = np.ones((6, 3))  # no pair differs: no test, nothing significant
    assert not significant_pairs(flat)[1].any()
    assert np.isnan(significant_pair_accuracy(PER_TOPIC, flat))


def _first_topics(run: Run, topics: list[str]) -> Run:
    frame = run.to_frame()
    return Run.from_frame(frame[frame["query_id"].isin(topics)], run.name)


@pytest.mark.shared
def test_compare_smoke(covid: Path) -> None:
    runs = read_runs(sorted((covid / "round5" / "runs").glob("*.gz"))[:20])
    topics = runs[0].topics[:5]
    runs = [_first_topics(r, topics) for r in runs]
    qrels = read_qrels(covid / "qrels" / "qrels.covid-round5.txt")
    methods = {"uniform": ("uniform", {}, ap_measure("uniform")),
               "mtf": ("mtf", {}, ap_measure("mtf"))}
    table = compare(runs, qrels, methods, rate=0.2, depth=20, trials=2, rng_seed=7)
    assert list(table.columns) == COLUMNS
    assert table["method"].tolist() == ["uniform", "mtf"]
    assert table["measure"].tolist() == ["xinfAP", "AP (judged)"]
    assert (table["trials"] == 2).all()
    assert (table[["rms", "variance", "select_s", "trial_s"]] >= 0).all().all()
    assert (table["rms"] < 0.5).all()
    assert table["tau"].between(-1, 1).all() and table["tau_ap"].between(-1, 1).all()
    # a census of the pool gives the truth (AP with the pool judged), exactly; the full
    # qrels know relevant documents outside the depth-20 pool, so AP on them is lower
    census = compare(runs, qrels, {"all": ("depth-k", {}, None)}, rate=1.0, depth=20,
                     trials=1)
    assert census.loc[0, "rms"] == pytest.approx(0.0, abs=1e-12)
    assert census.loc[0, "rms_qrels"] > 0.01
    assert census.loc[0, "tau"] == pytest.approx(1.0)
    assert census.loc[0, "tau_ap"] == pytest.approx(1.0)


def test_method_spec_takes_parameters_from_the_text() -> None:
    methods = {"active": ("active", {}, "AP~ht")}
    assert method_spec("active", methods) == ("active", {}, "AP~ht")
    assert method_spec("active:floor=1; weights=prior-mass", methods) == (
        "active", {"floor": "1", "weights": "prior-mass"}, "AP~ht")
    with pytest.raises(UsageError, match="KEY=VALUE"):
        method_spec("active:floor", methods)
