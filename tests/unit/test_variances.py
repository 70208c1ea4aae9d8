"""The variance options of xinfAP, infAP and AP~ht (issue 9, item 2), and AP~ht's paper
variants.

The jackknife kernels recompute only what leaving one judged document out changes; here each
replicate is instead computed the slow way, by estimating again from the sample with that
document unjudged (or, for designs with independent inclusions, removed), and the jackknife
formula applied to those. The Appendix variance of infAP is checked against a plain loop over
the paper's formulas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.views import z_value
from sampleval.estimation.estimates import estimate

Z = z_value(0.95)


def random_case(seed: int, n_docs: int = 45, n_runs: int = 4
                ) -> tuple[list[Run], pd.DataFrame]:
    """Runs over documents d0.. (each ranks a random 30 of them) and a stratified sample:
    three strata of 15 documents (by index), 5, 6 and 7 of them judged, grades 0-2."""
    rng = np.random.default_rng(seed)
    docs = np.array([f"d{i:02d}" for i in range(n_docs)])
    runs = []
    for r in range(n_runs):
        ranked = rng.permutation(docs)[:30]
        runs.append(Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ranked,
                                                 "score": np.arange(30, 0, -1.0)}), f"r{r}"))
    stratum = np.repeat(["A", "B", "C"], n_docs // 3)
    relevance = np.full(n_docs, -1.0)
    for h, n in zip("ABC", (5, 6, 7), strict=True):
        chosen = rng.choice(np.flatnonzero(stratum == h), n, replace=False)
        relevance[chosen] = rng.choice([0.0, 1.0, 2.0], n, p=[0.5, 0.3, 0.2])
    table = pd.DataFrame({"query_id": "1", "iteration": "0", "doc_id": docs,
                          "stratum": stratum, "relevance": relevance})
    return runs, table


def per_run(sample: Sample, runs: list[Run], measure: str) -> pd.DataFrame:
    out = estimate(sample, runs, [measure], depth=30)
    return out[out["query_id"] == "1"].set_index("run")


def half_width(rows: pd.DataFrame) -> pd.Series:
    return (rows["hi"] - rows["lo"]) / 2


def brute_stratified_jackknife(runs: list[Run], table: pd.DataFrame, measure: str
                               ) -> pd.Series:
    """sum_h (1 - n_h/N_h) (n_h - 1)/n_h sum_j (theta_(j) - mean_h)^2, each theta_(j) the
    estimate from the sample with j unjudged."""
    total = pd.Series(0.0, index=[r.name for r in runs])
    for _, part in table.groupby("stratum"):
        judged = part.index[part["relevance"] >= 0]
        n, big_n = len(judged), len(part)
        reps = []
        for j in judged:
            less = table.copy()
            less.loc[j, "relevance"] = -1.0
            reps.append(per_run(Sample.from_sample_qrels(less), runs, measure)["value"])
        frame = pd.concat(reps, axis=1)
        spread = frame.sub(frame.mean(axis=1), axis=0).pow(2).sum(axis=1)
        total += (1 - n / big_n) * (n - 1) / n * spread
    return total


@pytest.mark.parametrize("measure", ["xinfAP", "infAP", "AP~ht(bias=none)",
                                     "AP@10~ht(bias=none)", "AP~ht(ap=paper,bias=none)"])
def test_stratified_jackknife_equals_its_replicates(measure: str) -> None:
    for seed in (1, 2):
        runs, table = random_case(seed)
        if measure == "infAP":  # infAP's design: one stratum
            table = table.assign(stratum="all")
        rows = per_run(Sample.from_sample_qrels(table), runs, measure)
        expected = brute_stratified_jackknife(runs, table, measure)
        np.testing.assert_allclose((half_width(rows) / Z) ** 2, expected[rows.index],
                                   rtol=1e-9, atol=1e-14)
        assert (expected > 0).any()


def test_poisson_jackknife_equals_its_replicates() -> None:
    """Prels (independent inclusions): v = sum_k (1 - pi_k)(theta_(k) - theta)^2, theta_(k)
    the estimate without k in the sample."""
    runs, table = random_case(3)
    rng = np.random.default_rng(3)
    judged = table[table["relevance"] >= 0].assign(
        probability=rng.uniform(0.2, 0.9, int((table["relevance"] >= 0).sum())))
    prels = judged[["query_id", "doc_id", "relevance", "probability"]]
    rows = per_run(Sample.from_prels(prels), runs, "AP~ht(bias=none)")
    theta = rows["value"]
    expected = pd.Series(0.0, index=theta.index)
    for k in prels.index:
        without = per_run(Sample.from_prels(prels.drop(index=k)), runs,
                          "AP~ht(bias=none)")["value"]
        expected += (1 - prels.loc[k, "probability"]) * (without - theta) ** 2
    np.testing.assert_allclose((half_width(rows) / Z) ** 2, expected[rows.index], rtol=1e-9,
                               atol=1e-14)


def test_infap_appendix_variance_by_its_formulas() -> None:
    """The Appendix (dependent precisions) on one stratum, as a plain loop."""
    runs, table = random_case(4)
    table = table.assign(stratum="all")
    rows = per_run(Sample.from_sample_qrels(table), runs, "infAP(variance=appendix)")
    judged = dict(zip(table["doc_id"], table["relevance"], strict=True))
    frame, n_judged = set(table["doc_id"]), int((table["relevance"] >= 0).sum())
    relevant = [d for d, g in judged.items() if g >= 1]
    r = len(relevant)
    for run in runs:
        ranked = run.to_frame()["doc_id"].tolist()
        pc, var_pc, ranks = {}, {}, {}
        rel_above = non_above = unj_above = 0
        for k, doc in enumerate(ranked, start=1):
            grade = judged.get(doc, -1.0)
            if grade >= 1:
                m, big_d = rel_above + non_above, rel_above + non_above + unj_above
                pc[doc] = 1 / k + (big_d / k) * (rel_above + 1e-5) / (m + 2e-5)
                if big_d <= 0 or m >= big_d:
                    hyp = 0.0
                elif m == 0:
                    hyp = 0.25
                else:
                    p = rel_above / m
                    hyp = p * (1 - p) / m * (1 - (m - 1) / (big_d - 1))
                var_pc[doc], ranks[doc] = (big_d / k) ** 2 * hyp, k
            if doc in frame:
                if grade >= 1:
                    rel_above += 1
                elif grade >= 0:
                    non_above += 1
                else:
                    unj_above += 1
        infap = sum(pc.values()) / r
        sigma2 = sum((pc.get(d, 0.0) - infap) ** 2 for d in relevant) / (r - 1)
        first = (1 - n_judged / len(frame)) * sigma2 / r
        cov = sum(ranks[k] / ranks[m] * var_pc[k] for k in ranks for m in ranks
                  if ranks[k] < ranks[m])
        second = (sum(var_pc.values()) + 2 * cov) / r**2
        assert rows.loc[run.name, "value"] == pytest.approx(infap, abs=1e-12)
        assert (half_width(rows)[run.name] / Z) ** 2 == pytest.approx(first + second,
                                                                       rel=1e-9)


def test_ap_paper_counts_each_document_at_one_over_pi_squared() -> None:
    """Li & Kanoulas's literal AP-hat: PC(r(i)) = (1/r(i)) sum_{j in S, r(j) <= r(i)} y_j /
    pi_j, AP-hat = sum_i y_i PC(r(i))/pi_i / R-hat. Poisson design: a (pi 1/2) at rank 1,
    b (pi 1/4) at rank 3; R-hat = 2 + 4 = 6."""
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "x", "b"],
                                       "score": [3.0, 2.0, 1.0]}), "r")
    prels = pd.DataFrame({"query_id": "1", "doc_id": ["a", "b"], "relevance": [1.0, 1.0],
                          "probability": [0.5, 0.25]})
    sample = Sample.from_prels(prels)
    paper = per_run(sample, [run], "AP~ht(ap=paper,bias=none)").loc["r", "value"]
    # PC(1) = 2, PC(3) = (2 + 4)/3 = 2; sum = 2 * 2 + 2 * 4 = 12
    assert paper == pytest.approx(12 / 6)
    # ours: a: (1/pi_a) * 1; b: (1/pi_b) (1 + pi_b/pi_ab)/3 with pi_ab = 1/8: 4 * 3/3
    ours = per_run(sample, [run], "AP~ht(bias=none)").loc["r", "value"]
    assert ours == pytest.approx((2 + 4) / 6)


def test_rprec_cut_floor_is_the_papers() -> None:
    """R-hat = 2.5 (Poisson, pi 0.8 for two relevant documents at ranks 2 and 3): the
    paper's cut r(i) <= R-hat (the default) keeps rank 2; int(R-hat + 0.5) = 3 keeps both."""
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["x", "a", "b"],
                                       "score": [3.0, 2.0, 1.0]}), "r")
    prels = pd.DataFrame({"query_id": "1", "doc_id": ["a", "b"], "relevance": [1.0, 1.0],
                          "probability": [0.8, 0.8]})
    sample = Sample.from_prels(prels)
    assert per_run(sample, [run], "Rprec~ht").loc["r", "value"] == pytest.approx(1.25 / 2.5)
    assert per_run(sample, [run], "Rprec~ht(cut=round)").loc["r", "value"] == (
        pytest.approx(2.5 / 2.5))


def test_options_are_named_and_checked() -> None:
    runs, table = random_case(5)
    sample = Sample.from_sample_qrels(table)
    out = estimate(sample, runs, ["xinfAP(variance=appendix)", "xinfAP(variance=jackknife)",
                                  "XINFAP", "ap~ht(variance=linear)"], depth=30)
    assert list(dict.fromkeys(out["measure"])) == ["xinfAP(variance=appendix)", "xinfAP",
                                                   "AP~ht(variance=linear)"]
    with pytest.raises(UsageError, match="must be one of"):
        estimate(sample, runs, ["xinfAP(variance=bootstrap)"])
    with pytest.raises(UsageError, match="has no option 'ap'"):
        estimate(sample, runs, ["xinfAP(ap=paper)"])
    with pytest.raises(UsageError, match="did you mean var"):
        estimate(sample, runs, ["AP~ht(vr=linear)"])


def test_poisson_jackknife_without_a_relevant_judged_document() -> None:
    """A topic whose judged documents are all not relevant estimates AP 0 with variance 0
    (an empty set of contributing documents, as simulations meet at small budgets)."""
    runs, table = random_case(5)
    judged = table[table["relevance"] >= 0].assign(relevance=0.0, probability=0.5)
    rows = per_run(Sample.from_prels(judged[["query_id", "doc_id", "relevance",
                                             "probability"]]), runs, "AP~ht")
    assert (rows["value"] == 0).all()
    assert (half_width(rows) == 0).all()
