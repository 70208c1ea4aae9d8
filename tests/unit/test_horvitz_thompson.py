"""Horvitz-Thompson estimators: equal to trec_eval on a census (TREC-COVID round 5), values and
variances derived by hand on a small stratified sample, fractional labels, and the array core's
batching (what the Monte Carlo test relies on)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import ht_reference as ht
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.replicates import average_precision_jackknife
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import EstimateSpec
from sampleval.measures.evaluation import evaluate
from sampleval.measures.exact import RankedGrades, compute
from sampleval.measures.names import Measure

CENSUS_MEASURES = {  # evaluate()'s name -> the HT estimate
    "P@10": EstimateSpec("ht", "P", 10), "NumRel": EstimateSpec("ht", "NumRel"),
    "AP": EstimateSpec("ht", "AP"), "Rprec": EstimateSpec("ht", "Rprec"),
    "nDCG@10": EstimateSpec("ht", "nDCG", 10), "nDCG": EstimateSpec("ht", "nDCG"),
    "R@100": EstimateSpec("ht", "R", 100),
}


def log2(x: float) -> float:
    return math.log2(x)


def toy_pool(rankings: dict[str, list[str]], topic: str = "1") -> Pool:
    """A one-topic pool; each run ranks its documents in list order."""
    return Pool.from_runs([
        Run.from_frame(pd.DataFrame({"query_id": topic, "doc_id": docs,
                                     "score": np.arange(len(docs), 0, -1.0)}), name)
        for name, docs in rankings.items()])


def estimate(pool: Pool, sample: Sample, spec: EstimateSpec,
             level: float = 1) -> pd.DataFrame:
    """Per-topic rows of the HT estimate, indexed by run."""
    out = FAMILIES["ht"].compute(pool.run_names, topic_views(pool, sample), sample, [spec],
                                  level, 0.95)
    return out[out["query_id"] != MEAN_TOPIC].set_index("run")


def variance(rows: pd.DataFrame) -> pd.Series:
    """The variance behind each normal interval (half-width / 1.96)^2."""
    return ((rows["hi"] - rows["lo"]) / (2 * 1.959963984540054)) ** 2


# -- census = exact on TREC-COVID round 5 ----------------------------------------------------

@pytest.fixture(scope="module")
def census(round5_qrels: Qrels, round5_runs: list[Run], round5_pool: Pool
           ) -> tuple[Qrels, list[Run], Pool, Sample]:
    qrels, runs = round5_qrels, round5_runs
    judged = qrels.judged()
    frame = pd.DataFrame({"query_id": judged["query_id"].to_numpy(),
                          "doc_id": judged["doc_id"].to_numpy(),
                          "relevance": judged["relevance"].to_numpy(), "stratum": "",
                          "inclusion": 1.0})
    return qrels, runs, round5_pool, Sample(design="census", frame=frame)


@pytest.mark.shared
@pytest.mark.parametrize("measure", list(CENSUS_MEASURES))
def test_census_equals_trec_eval(census: tuple[Qrels, list[Run], Pool, Sample],
                                 measure: str) -> None:
    qrels, runs, pool, sample = census
    exact = evaluate(qrels, runs, [measure], depth=100)
    ours = FAMILIES["ht"].compute(pool.run_names, topic_views(pool, sample), sample,
                                  [CENSUS_MEASURES[measure]], 1, 0.95)
    per_topic = exact[exact["query_id"] != MEAN_TOPIC]
    joined = per_topic.merge(ours, on=["run", "query_id"], validate="one_to_one")
    assert len(joined) == len(per_topic) == 126 * 50
    np.testing.assert_allclose(joined["value_y"], joined["value_x"], rtol=0, atol=1e-9)
    assert (ours["hi"] - ours["lo"]).abs().max() == 0.0  # every variance is 0 on a census
    if measure != "NumRel":  # trec_eval sums NumRel over topics; the estimate averages
        means = exact[exact["query_id"] == MEAN_TOPIC].merge(
            ours[ours["query_id"] == MEAN_TOPIC], on="run", validate="one_to_one")
        np.testing.assert_allclose(means["value_y"], means["value_x"], rtol=0, atol=1e-9)


# -- a hand-made stratified sample -----------------------------------------------------------
# Frame of topic 1: stratum A = {a, b, c} (N = 3, n = 2 judged: a grade 2, b grade 1) and
# stratum B = {d, e, f} (N = 3, n = 1 judged: e grade 1). Inclusion (SRS within strata):
# pi_a = pi_b = 2/3, pi_e = 1/3; pi_ab = n(n-1)/(N(N-1)) = 2/6 = 1/3; pi_ae = pi_be = 2/9.
# HT weights D_ij = (pi_ij - pi_i pi_j)/pi_ij: D_aa = D_bb = 1/3, D_ee = 2/3, D_ab = -1/3,
# D_ae = D_be = 0, so every variance below is (1/3)(x_a - x_b)^2 + (2/3) x_e^2, x_i = z_i/pi_i.
# x is not in the frame (counts as not relevant); c, d, f are in the frame but unjudged.
RANKINGS = {
    "r1": ["a", "c", "x", "e", "b"],  # relevant judged: a@1, e@4, b@5
    "r2": ["e", "b", "d", "a"],  # e@1, b@2, a@4
    "r3": ["c", "d", "f", "x", "a", "b", "e"],  # a@5, b@6, e@7
}
PI = {"a": 2 / 3, "b": 2 / 3, "e": 1 / 3}


def stratified_toy() -> tuple[Pool, Sample]:
    table = pd.DataFrame({"query_id": "1", "doc_id": list("abcdef"),
                          "relevance": [2.0, 1.0, -1.0, -1.0, 1.0, -1.0],
                          "stratum": list("AAABBB")})
    return toy_pool(RANKINGS), Sample.from_sample_qrels(table)


def hand_variance(x_a: float, x_b: float, x_e: float) -> float:
    return (x_a - x_b) ** 2 / 3 + 2 * x_e ** 2 / 3


def test_hand_num_rel_and_precision() -> None:
    pool, sample = stratified_toy()
    # R-hat = sum y/pi = 1.5 + 1.5 + 3 = 6; x = (1.5, 1.5, 3): V = 0 + (2/3) 9 = 6
    # (stratum A sampled two relevant documents: its SRS variance is 0).
    numrel = estimate(pool, sample, EstimateSpec("ht", "NumRel"))
    assert numrel["value"].tolist() == pytest.approx([6.0] * 3)
    assert variance(numrel).tolist() == pytest.approx([6.0] * 3)
    # P@2 = (1/2) sum_{rank <= 2} y/pi. r1: a -> 0.75, x_a = (1/2)/(2/3) = 0.75,
    # V = (1/3) 0.75^2 = 0.1875. r2: e, b -> (3 + 1.5)/2 = 2.25, x_e = 1.5, x_b = 0.75,
    # V = (1/3) 0.75^2 + (2/3) 1.5^2 = 1.6875. r3: nothing judged in its top 2.
    p2 = estimate(pool, sample, EstimateSpec("ht", "P", 2))
    assert p2["value"].tolist() == pytest.approx([0.75, 2.25, 0.0])
    assert variance(p2).tolist() == pytest.approx([hand_variance(0.75, 0, 0),
                                                   hand_variance(0, 0.75, 1.5), 0.0])


def test_hand_dcg() -> None:
    pool, sample = stratified_toy()
    # DCG@5 = sum gain/(pi log2(rank + 1)); r1: a (gain 2) @1, e @4, b @5.
    x_a, x_e, x_b = 2 / log2(2) * 1.5, 1 / log2(5) * 3, 1 / log2(6) * 1.5
    rows = estimate(pool, sample, EstimateSpec("ht", "DCG", 5))
    assert rows.loc["r1", "value"] == pytest.approx(x_a + x_e + x_b)
    assert variance(rows)["r1"] == pytest.approx(hand_variance(x_a, x_b, x_e))


def test_hand_recall_and_rprec() -> None:
    pool, sample = stratified_toy()
    # R@2 = (sum_{rank <= 2} y/pi) / R-hat. r2: (3 + 1.5)/6 = 0.75. Linearised:
    # u = (1{rank <= 2} - 0.75) y / 6: u_e = u_b = 0.25/6, u_a = -0.75/6; x = u/pi:
    # x_e = 0.125, x_b = 0.0625, x_a = -0.1875; V = (1/3) 0.25^2 + (2/3) 0.125^2 = 0.03125.
    # The plain ratio is the paper's (bias=none); the default subtracts the Taylor
    # term (Q V(R-hat) - C(N-hat, R-hat))/R-hat^2 with the same HT forms: x^R = (1.5, 1.5,
    # 3) for (a, b, e), V(R-hat) = (1/3) 0^2 + (2/3) 3^2 = 6; r2's x^N = (0, 1.5, 3),
    # C = (1/3)(0 - 1.5)(1.5 - 1.5) + (2/3) 3 * 3 = 6, so 0.75 - (0.75 * 6 - 6)/36 = 0.75 +
    # 1/24. The variance is the plain ratio's.
    plain = (("bias", "none"),)
    r2 = estimate(pool, sample, EstimateSpec("ht", "R", 2, plain))
    assert r2.loc["r2", "value"] == pytest.approx(0.75)
    assert variance(r2)["r2"] == pytest.approx(0.03125)
    corrected = estimate(pool, sample, EstimateSpec("ht", "R", 2))
    assert corrected.loc["r2", "value"] == pytest.approx(0.75 + 1 / 24)
    assert variance(corrected)["r2"] == pytest.approx(0.03125)
    # Rprec: cut = floor(6) = 6. r3: a@5, b@6 -> (1.5 + 1.5)/6 = 0.5; e@7 is cut.
    # u_a = u_b = 0.5/6, u_e = -0.5/6: x_a = x_b = 0.125, x_e = -0.25; V = (2/3)/16 = 1/24.
    # r1 and r2 hold every judged relevant document within rank 6: Rprec-hat = 1, V = 0.
    # Taylor: r3's x^N = (1.5, 1.5, 0), C = 0, so 0.5 - (0.5 * 6 - 0)/36 = 5/12; r1 and r2
    # have N-hat = R-hat, C = V, no correction.
    rprec = estimate(pool, sample, EstimateSpec("ht", "Rprec", None, plain))
    assert rprec["value"].tolist() == pytest.approx([1.0, 1.0, 0.5])
    assert variance(rprec).tolist() == pytest.approx([0.0, 0.0, 1 / 24])
    rprec = estimate(pool, sample, EstimateSpec("ht", "Rprec"))
    assert rprec["value"].tolist() == pytest.approx([1.0, 1.0, 5 / 12])
    assert variance(rprec).tolist() == pytest.approx([0.0, 0.0, 1 / 24])


def test_hand_average_precision() -> None:
    pool, sample = stratified_toy()
    # AP-hat = (1/R-hat) sum_S (y_i/pi_i) prec_i, prec_i = (1/rank_i)(1 + sum_{j above}
    # pi_i/pi_ij). r1: prec_a = 1; prec_e = (1 + pi_e/pi_ea)/4 = (1 + 1.5)/4 = 0.625;
    # prec_b = (1 + pi_b/pi_ba + pi_b/pi_be)/5 = (1 + 2 + 3)/5 = 1.2;
    # S = 1.5 + 3 * 0.625 + 1.5 * 1.2 = 5.175 (the pair form: diagonal 1.5 + 0.75 + 0.3, pairs
    # (1/4)/(2/9) + (1/5)/(1/3) + (1/5)/(2/9) = 1.125 + 0.6 + 0.9); AP-hat = 5.175/6.
    # r2: prec_e = 1, prec_b = (1 + 3)/2 = 2, prec_a = (1 + 3 + 2)/4 = 1.5; S = 3 + 3 + 2.25.
    rows = estimate(pool, sample, EstimateSpec("ht", "AP", options=(("variance", "linear"),
                                                                     ("bias", "none"))))
    assert rows.loc["r1", "value"] == pytest.approx(0.8625)
    assert rows.loc["r2", "value"] == pytest.approx(8.25 / 6)
    # Linearised: e_k = prec_k + sum_{i below k} (1/rank_i) pi_k/pi_ki. r1: e_a = 1 + 3/4 + 2/5
    # = 2.15, e_e = 0.625 + 1.5/5 = 0.925, e_b = 1.2; u = (e - 0.8625)/6; x = u/pi.
    x_a, x_e, x_b = (2.15 - 0.8625) / 6 * 1.5, (0.925 - 0.8625) / 6 * 3, 0.3375 / 6 * 1.5
    assert variance(rows)["r1"] == pytest.approx(hand_variance(x_a, x_b, x_e))
    assert variance(rows)["r1"] == pytest.approx(0.019453125)


def test_hand_ndcg() -> None:
    pool, sample = stratified_toy()
    # N_2-hat = 1.5 -> int(2.0) = 2 docs of gain 2; N_1-hat = 1.5 + 3 = 4.5 -> int(5.0) = 5.
    ideal = 2 * (1 + 1 / log2(3)) + sum(1 / log2(r + 1) for r in range(3, 8))
    dcg_r1 = 2 * 1.5 + 3 / log2(5) + 1.5 / log2(6)
    plain = (("bias", "none"),)
    rows = estimate(pool, sample, EstimateSpec("ht", "nDCG", None, plain))
    assert rows.loc["r1", "value"] == pytest.approx(dcg_r1 / ideal)
    # nDCG@5: the ideal top 5 is 2, 2, 1, 1, 1. Linearisation of the ideal: d IDCG/d N_2 =
    # (2 - 1) disc(c_2 + 1) + (1 - 0) disc(c_1 + 1) with c_2 = 2, c_1 = 7 >= 5 (past the cut:
    # 0), so b_a = disc(3) = 1/2 and b_b = b_e = 0; a_i = gain_i disc(rank_i).
    ideal5 = 2 * (1 + 1 / log2(3)) + 1 / log2(4) + 1 / log2(5) + 1 / log2(6)
    q = dcg_r1 / ideal5
    x_a = (2 - q * 0.5) / ideal5 * 1.5
    x_e, x_b = 1 / log2(5) / ideal5 * 3, 1 / log2(6) / ideal5 * 1.5
    cut = estimate(pool, sample, EstimateSpec("ht", "nDCG", 5, plain))
    assert cut.loc["r1", "value"] == pytest.approx(q)
    assert variance(cut)["r1"] == pytest.approx(hand_variance(x_a, x_b, x_e))
    # The default subtracts the Taylor term (Q V(IDCG-hat) - C(DCG-hat, IDCG-hat))/IDCG^2,
    # IDCG-hat linearised, with the same HT forms: x^I = b/pi = (0.75, 0, 0) for (a, b, e),
    # V = (1/3) 0.75^2; x^D = a/pi = (2 * 1.5, 1.5/log2(6), 3/log2(5)), C = (1/3)(x^D_a -
    # x^D_b) 0.75 + (2/3) x^D_e 0. The variance is the plain ratio's.
    own = 0.75 ** 2 / 3
    cross = (3 - 1.5 / log2(6)) * 0.75 / 3
    corrected = estimate(pool, sample, EstimateSpec("ht", "nDCG", 5))
    assert corrected.loc["r1", "value"] == pytest.approx(q - (q * own - cross) / ideal5 ** 2)
    assert variance(corrected)["r1"] == pytest.approx(hand_variance(x_a, x_b, x_e))


def test_level_decides_binary_relevance() -> None:
    pool, sample = stratified_toy()
    # level 2: only a (grade 2) is relevant; R-hat = 1.5, r1's P@2 = (1/2) 1.5.
    assert estimate(pool, sample, EstimateSpec("ht", "NumRel"), level=2)["value"].tolist() == (
        pytest.approx([1.5] * 3))
    assert estimate(pool, sample, EstimateSpec("ht", "P", 2), level=2).loc["r1", "value"] == (
        pytest.approx(0.75))


# -- fractional labels ---------------------------------------------------------------------

def test_fractional_labels_census_equals_exact() -> None:
    # Means of assessors: binary measures take clip(label - level + 1, 0, 1), graded ones the
    # label itself, in the estimators and the exact measures alike.
    labels = {"a": 1.5, "b": 0.5, "c": 2.0, "d": 0.0, "e": 1.0, "f": 0.75}
    rankings = {"r1": ["b", "a", "x", "f", "c"], "r2": ["c", "e", "d", "b", "a", "f"]}
    pool = toy_pool(rankings)
    sample = Sample("census", pd.DataFrame({"query_id": "1", "doc_id": list(labels),
                                            "relevance": list(labels.values()),
                                            "stratum": "", "inclusion": 1.0}))
    grades = np.array([[labels.get(d, np.nan) for d in docs] + [np.nan] * (6 - len(docs))
                       for docs in rankings.values()])
    truth = RankedGrades(grades, np.array([5, 6]), np.array(list(labels.values())))
    for name, cutoff in [("AP", None), ("P", 2), ("R", 3), ("Rprec", None), ("nDCG", None),
                         ("nDCG", 3)]:
        rows = estimate(pool, sample, EstimateSpec("ht", name, cutoff))
        exact = compute(Measure(name, cutoff), truth, 1)
        np.testing.assert_allclose(rows["value"], exact, rtol=0, atol=1e-12)
    # by hand: P@2 of r1 = (clip(0.5) + clip(1.5)) / 2 = (0.5 + 1) / 2; DCG@2 of r1 gains
    # the labels: 0.5/log2(2) + 1.5/log2(3).
    assert estimate(pool, sample, EstimateSpec("ht", "P", 2)).loc["r1", "value"] == 0.75
    assert estimate(pool, sample, EstimateSpec("ht", "DCG", 2)).loc["r1", "value"] == (
        pytest.approx(0.5 + 1.5 / log2(3)))


def test_fractional_ideal_counts_each_grade() -> None:
    # Poisson sample, pi = 1/2 each: judged a (1.5) and c (1.5) and e (0.5).
    # N_1.5-hat = 4, N_0.5-hat = 2: ideal = 1.5 (1 + 1/log2 3 + 1/log2 4 + 1/log2 5)
    # + 0.5 (1/log2 6 + 1/log2 7). r1 retrieves a@1, e@2: DCG-hat = 2 (1.5 + 0.5/log2 3).
    pool = toy_pool({"r1": ["a", "e", "b"]})
    sample = Sample("poisson", pd.DataFrame({
        "query_id": "1", "doc_id": list("abcde"), "relevance": [1.5, np.nan, 1.5, np.nan, 0.5],
        "stratum": "", "inclusion": 0.5}))
    ideal = 1.5 * sum(1 / log2(r + 1) for r in range(1, 5)) + 0.5 * (1 / log2(6) + 1 / log2(7))
    rows = estimate(pool, sample, EstimateSpec("ht", "nDCG", None, (("bias", "none"),)))
    assert rows.loc["r1", "value"] == pytest.approx(2 * (1.5 + 0.5 / log2(3)) / ideal)


# -- the array core: batching, and unsampled documents as y = 0 ------------------------------

def with_replacement_design(p: np.ndarray, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """pi and pi_ij of ``draws`` i.i.d. draws from p (Li & Kanoulas 2017, sec. 3)."""
    pi = 1 - (1 - p) ** draws
    joint = pi[:, None] + pi[None, :] - (1 - (1 - p[:, None] - p[None, :]) ** draws)
    np.fill_diagonal(joint, pi)
    return pi, joint


@pytest.mark.parametrize("estimator", [ht.num_rel, ht.precision, ht.dcg, ht.recall,
                                       ht.r_precision, ht.average_precision, ht.ndcg])
def test_batched_core_equals_each_sample(estimator: ht.Estimator) -> None:
    rng = np.random.default_rng(7)
    m, n_runs, trials = 12, 4, 6
    pi, joint = with_replacement_design(rng.dirichlet(np.ones(m)), 8)
    ranks = np.zeros((n_runs, m), dtype=np.int64)
    for r in range(n_runs):  # each run retrieves 8 of the 12 documents
        ranks[r, rng.permutation(m)[:8]] = np.arange(1, 9)
    labels = rng.choice([0.0, 1.0, 2.0], size=m)
    sampled = rng.random((trials, m)) < pi
    y = labels if estimator in (ht.dcg, ht.ndcg) else (labels >= 1) * 1.0
    cutoff = None if estimator in (ht.num_rel, ht.r_precision) else 5
    batch = estimator(sampled * y, pi, joint, ranks, cutoff)
    assert batch.value.shape == batch.variance.shape == (trials, n_runs)
    for t in range(trials):
        s = np.flatnonzero(sampled[t])
        one = estimator(y[s], pi[s], joint[np.ix_(s, s)], ranks[:, s], cutoff)
        np.testing.assert_allclose(batch.value[t], one.value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(batch.variance[t], one.variance, rtol=1e-10, atol=1e-12)


def test_with_replacement_sample_uses_its_pi_joint() -> None:
    # Two rounds of 2 draws from p over the frame a..e; a, c, e were drawn.
    p = {"a": 0.4, "b": 0.1, "c": 0.2, "d": 0.1, "e": 0.2}
    judged = {"a": 1.0, "c": 0.0, "e": 2.0}
    sample = Sample(
        "with-replacement",
        pd.DataFrame({"query_id": "1", "doc_id": list(p),
                      "relevance": [judged.get(d, np.nan) for d in p], "stratum": "",
                      "inclusion": np.nan}),
        rounds=pd.DataFrame({"query_id": "1", "round": [1, 2], "size": [2, 2]}),
        round_probs=pd.DataFrame({"query_id": "1", "round": np.repeat([1, 2], 3),
                                  "doc_id": list(judged) * 2,
                                  "probability": [p[d] for d in judged] * 2}))
    pool = toy_pool({"r1": ["e", "b", "a", "c"], "r2": ["c", "a", "d", "e"]})
    pi, joint = with_replacement_design(np.array([p[d] for d in judged]), 4)
    ranks = np.array([[3, 4, 1], [2, 1, 4]])  # a, c, e in each run
    y = np.array([1.0, 0.0, 1.0])
    linear = EstimateSpec("ht", "AP", options=(("variance", "linear"), ("bias", "none")))
    for spec, core in [(linear, ht.average_precision(y, pi, joint, ranks)),
                       (EstimateSpec("ht", "P", 3), ht.precision(y, pi, joint, ranks, 3))]:
        rows = estimate(pool, sample, spec)
        np.testing.assert_allclose(rows["value"], core.value, rtol=1e-12)
        np.testing.assert_allclose(variance(rows), np.maximum(core.variance, 0), rtol=1e-9)


@pytest.mark.parametrize("ap", [ht.average_precision, average_precision_jackknife])
def test_nothing_judged_estimates_zero(ap: ht.Estimator) -> None:
    """A topic with no judged document (a sample stopped early) estimates AP 0 +- 0."""
    empty = np.zeros(0)
    out = ap(empty, empty, np.zeros((0, 0)), np.zeros((3, 0), np.int64))
    assert out.value.tolist() == out.variance.tolist() == [0.0, 0.0, 0.0]


def test_cutoff_errors() -> None:
    pool, sample = stratified_toy()
    with pytest.raises(UsageError, match="needs a cutoff"):
        estimate(pool, sample, EstimateSpec("ht", "P"))
    with pytest.raises(UsageError, match="takes no cutoff"):
        estimate(pool, sample, EstimateSpec("ht", "Rprec", 10))
    with pytest.raises(UsageError, match="ht family estimates"):
        estimate(pool, sample, EstimateSpec("ht", "Bpref"))
