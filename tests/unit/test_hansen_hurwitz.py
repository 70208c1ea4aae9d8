"""The per-draw (Hansen-Hurwitz) estimator: hand-computed cases, the exact expectation of
AP's numerator and denominator under an adaptive design, agreement with importance
sampling's eq. 4 and with ``~ppi(weights=draws)`` without predictions, and a Monte Carlo
comparison with Horvitz-Thompson on active sampling (TREC-COVID round 5)."""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.cli.sample import run_methods
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.estimates import default_estimates, estimate
from sampleval.estimation.spec import draws_reach_every_document, estimator_for, parse_estimate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.selection.importance import ImportanceSelector
from sampleval.simulation.runner import simulate as run_simulation
from sampleval.simulation.targets import parse_target, plan_for


def runs_of(rankings: dict[str, list[str]]) -> list[Run]:
    return [Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": docs,
                                         "score": np.arange(len(docs), 0, -1.0)}), name)
            for name, docs in rankings.items()]


@pytest.fixture(scope="module")
def hand() -> tuple[list[Run], Sample]:
    """Runs A = d1 d2 d3 and B = d3 d4; draws d1 (p 0.5), d3 (p 0.25), d1 (p 0.4); labels
    d1 = 1, d3 = 2."""
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["d1", "d2", "d3", "d4"],
                          "relevance": [1.0, np.nan, 2.0, np.nan], "stratum": "",
                          "inclusion": np.nan})
    draws = pd.DataFrame({"query_id": "1", "round": [1, 1, 2], "doc_id": ["d1", "d3", "d1"],
                          "probability": [0.5, 0.25, 0.4]})
    return (runs_of({"A": ["d1", "d2", "d3"], "B": ["d3", "d4"]}),
            Sample("with-replacement", frame, draws=draws))


def test_by_hand(hand: tuple[list[Run], Sample]) -> None:
    runs, sample = hand
    out = estimate(sample, runs, ["NumRel~hh", "P@2~hh", "DCG@2~hh"])
    got = out[out["query_id"] == "1"].set_index(["measure", "run"])
    # NumRel: terms 1/0.5, 1/0.25, 1/0.4 = 2, 4, 2.5
    terms = np.array([2.0, 4.0, 2.5])
    half = 1.959963985 * np.sqrt(terms.var(ddof=1) / 3)
    for run in ("A", "B"):
        assert got.loc[("NumRel~hh", run), "value"] == pytest.approx(8.5 / 3)
        assert got.loc[("NumRel~hh", run), "hi"] == pytest.approx(8.5 / 3 + half)
    # P@2: A has d1 at rank 1: (1/2)/0.5, 0, (1/2)/0.4; B has d3 at rank 1: 0, (1/2)/0.25, 0
    assert got.loc[("P@2~hh", "A"), "value"] == pytest.approx((1.0 + 1.25) / 3)
    assert got.loc[("P@2~hh", "B"), "value"] == pytest.approx(2.0 / 3)
    # DCG@2: A gains 1 at rank 1 (d3 at rank 3 is cut); B gains 2 at rank 1
    assert got.loc[("DCG@2~hh", "A"), "value"] == pytest.approx((2.0 + 2.5) / 3)
    assert got.loc[("DCG@2~hh", "B"), "value"] == pytest.approx(8.0 / 3)


def test_errors(hand: tuple[list[Run], Sample]) -> None:
    runs, sample = hand
    for measure in ("NumRel@5~hh", "P~hh", "infAP~hh"):
        with pytest.raises(UsageError):
            estimate(sample, runs, [measure])
    with pytest.raises(UsageError, match="with-replacement or importance sample"):
        estimate(Sample("census", sample.frame.fillna({"relevance": 0.0})), runs, ["P@2~hh"])
    unjudged = sample.draws.assign(doc_id=["d1", "d2", "d1"])  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="judgment"):
        estimate(Sample("with-replacement", sample.frame, draws=unjudged), runs, ["P@2~hh"])


def test_ratios_by_hand(hand: tuple[list[Run], Sample]) -> None:
    """AP-hat = N-hat/R-hat (bias=none) and R@2 (plain, and less its Taylor term) on the
    hand sample (relevant: d1, d3)."""
    runs, sample = hand
    out = estimate(sample, runs, ["AP~hh(bias=none)", "R@2~hh(bias=none)", "R@2~hh"])
    got = out[out["query_id"] == "1"].set_index(["measure", "run"])["value"]
    # R-hat = (1/0.5 + 1/0.25 + 1/0.4)/3 = 8.5/3. Run A = d1 d2 d3: the diagonal
    # (1/(1 0.5) + 1/(3 0.25) + 1/(1 0.4))/3 = 35/18; the pairs of draws (d3 below d1):
    # (2, 1) x = 1/3 at 1/(3 2 0.25 0.5) and (2, 3) x = 1/3 at 1/(3 2 0.25 0.4): 4/9 + 5/9;
    # the two draws of d1 are no pair. N-hat = 53/18, AP-hat = 53/51 (above 1: not clipped)
    assert got[("AP~hh(bias=none)", "A")] == pytest.approx(53 / 51, abs=1e-12)
    # run B = d3 d4: only d3, at rank 1: N-hat = (1/0.25)/3, AP-hat = 8/17
    assert got[("AP~hh(bias=none)", "B")] == pytest.approx(8 / 17, abs=1e-12)
    # R@2 of A: d1 in the top 2, (2 + 0 + 2.5)/3 over R-hat
    assert got[("R@2~hh(bias=none)", "A")] == pytest.approx(9 / 17, abs=1e-12)
    # Taylor: the draws' values (2, 0, 2.5) and (2, 4, 2.5) give V(R-hat) = s^2/n = 13/36 and
    # C(N-hat, R-hat) = -5/12, so 9/17 - (9/17 13/36 + 5/12)/(17/6)^2 = 2229/4913
    assert got[("R@2~hh", "A")] == pytest.approx(2229 / 4913, abs=1e-12)


def test_one_relevant_document_drawn_surely_is_exact() -> None:
    """Every draw takes the topic's one relevant document with probability 1: R-hat = 1 and
    N-hat = 1/rank on every sample, so every AP~hh is the exact AP with no width (without
    the ``few`` floor, which widens a topic with one relevant document judged)."""
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["d1", "d2"], "relevance": [np.nan, 1.0],
                          "stratum": "", "inclusion": np.nan})
    draws = pd.DataFrame({"query_id": "1", "round": [1, 2, 3], "doc_id": "d2",
                          "probability": 1.0})
    sample = Sample("with-replacement", frame, draws=draws)
    runs = runs_of({"A": ["d1", "d2"], "B": ["d2", "d1"]})
    names = [parse_estimate(n).name for n in (  # jackknife: the default
        "AP~hh(few=none)", "AP~hh(bias=taylor,few=none)", "AP~hh(bias=none,few=none)")]
    out = estimate(sample, runs, names).set_index(["run", "measure", "query_id"])
    for name in names:
        for run, exact in (("A", 0.5), ("B", 1.0)):
            row = out.xs((run, name, "1"))
            assert (row["lo"], row["value"], row["hi"]) == pytest.approx((exact,) * 3,
                                                                         abs=1e-12), name


def test_numerator_and_denominator_are_unbiased_under_adaptive_draws() -> None:
    """Three draws from three documents (relevant: d1, d3), each draw's probabilities set by
    the label drawn before it. Over all 27 sequences, weighted by their probabilities,
    E[R-hat] = R and E[N-hat] = N exactly (N-hat = AP-hat R-hat, AP-hat with bias=none: the
    pair sum over draws is a U-statistic, unbiased by the martingale argument), while the
    ratio N-hat/R-hat is biased (module docstring)."""
    docs, labels = ["d1", "d2", "d3"], {"d1": 1.0, "d2": 0.0, "d3": 1.0}
    first, after = [0.5, 0.3, 0.2], {1.0: [0.2, 0.3, 0.5], 0.0: [0.4, 0.2, 0.4]}
    runs = runs_of({"A": ["d1", "d2", "d3"], "B": ["d3", "d1"], "C": ["d2", "d3", "d1"]})
    exact_n = {"A": 1 + 1 / 3 + 1 / 3, "B": 1 + 1 / 2 + 1 / 2, "C": 1 / 2 + 1 / 3 + 1 / 3}
    mean_n, mean_ap, mean_r = dict.fromkeys(exact_n, 0.0), dict.fromkeys(exact_n, 0.0), 0.0
    for sequence in np.ndindex(3, 3, 3):
        probs, dist = [], first
        for i in sequence:
            probs.append(dist[i])
            dist = after[labels[docs[i]]]
        drawn = [docs[i] for i in sequence]
        frame = pd.DataFrame({"query_id": "1", "doc_id": docs, "stratum": "",
                              "relevance": [labels[d] if d in drawn else np.nan for d in docs],
                              "inclusion": np.nan})
        draws = pd.DataFrame({"query_id": "1", "round": [1, 2, 3], "doc_id": drawn,
                              "probability": probs})
        out = estimate(Sample("with-replacement", frame, draws=draws), runs,
                       ["AP~hh(bias=none)", "NumRel~hh"])
        got = out[out["query_id"] == "1"].set_index(["measure", "run"])["value"]
        weight = float(np.prod(probs))
        r_hat = got[("NumRel~hh", "A")]
        mean_r += weight * r_hat
        for run in exact_n:
            mean_n[run] += weight * got[("AP~hh(bias=none)", run)] * r_hat
            mean_ap[run] += weight * got[("AP~hh(bias=none)", run)]
    assert mean_r == pytest.approx(2.0, abs=1e-12)
    for run, n in exact_n.items():
        assert mean_n[run] == pytest.approx(n, abs=1e-12), run
    assert abs(mean_ap["A"] - exact_n["A"] / 2) > 0.01  # the ratio is biased


def test_ratios_are_ppi_draws_without_predictions(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """AP~hh (every bias), R@k~hh, Rprec~hh (both cuts), nDCG~hh are computed by the
    per-draw form of ~ppi with every prediction 0: equal to AP~ppi(weights=draws) etc. with
    predictions all 0 (R@k and Rprec with the Taylor correction by default in both, and with
    correction=none), value and interval (AP's bias-aware by default in both), on an active
    sample."""
    runs, qrels, pool, _ = judged_collection
    selector = METHODS["active"](pool, Budget(rate=0.3), np.random.default_rng(1))
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    names = ["AP(bias=taylor)", "AP(bias=jackknife)", "AP(bias=none)", "AP@10(bias=taylor)",
             "AP@10(bias=jackknife)", "R@10", "R@10(bias=none)", "Rprec",
             "Rprec(cut=round)", "Rprec(bias=none)", "nDCG", "nDCG@10"]

    def named(base: str, family: str) -> str:
        head, _, options = base.partition("(")
        if family == "ppi":
            options = f"form=draws,{options}" if options else "form=draws)"
        return f"{head}~{family}" + (f"({options}" if options else "")

    zero = pd.DataFrame({"query_id": [sample.topics[0]], "doc_id": [
        pool.docnos_of(sample.topics[0])[0]], "prediction": [0.0]})
    hh = estimate(sample, runs, [named(b, "hh") for b in names], depth=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the predictions cover one document
        ppi = estimate(sample, runs, [named(b, "ppi") for b in names], depth=30,
                       predictions=zero)
    assert len(hh) == len(ppi) > len(names) * len(sample.topics)
    for column in ("value", "lo", "hi"):
        np.testing.assert_allclose(hh[column], ppi[column], rtol=0, atol=1e-12)
    assert hh["lo"].notna().all() and (hh["hi"] > hh["lo"]).any()


def test_ratios_need_draws(hand: tuple[list[Run], Sample]) -> None:
    """AP~hh on a with-replacement sample that records no draws: one clear line."""
    runs, sample = hand
    with pytest.raises(UsageError) as caught:
        estimate(Sample("with-replacement", sample.frame), runs, ["AP~hh"])
    assert str(caught.value) == "AP~hh needs the sample's draws with their probabilities"


def test_ratio_measures_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    """``sampleval methods`` lists the new measures, their options (built from the family's
    declaration) and active's default estimates."""
    run_methods(argparse.Namespace())
    text = " ".join(capsys.readouterr().out.split())
    assert ("measures: P@k~hh, DCG[@k]~hh, NumRel~hh, AP[@k]~hh, R@k~hh, Rprec~hh, "
            "nDCG[@k]~hh") in text
    assert "option bias (AP[@k]~hh)" in text and "option cut (Rprec~hh)" in text
    assert "estimated by default: AP~hh, nDCG@10~hh, P@10~hh, NumRel~hh" in text


def test_plain_measures_of_active_and_importance_samples(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """A plain AP, R@k, Rprec or NumRel resolves to ~hh on with-replacement (active) samples;
    P@k, DCG and nDCG to ~hh where every draw could reach every document (``active``'s
    uniform share, its default), to ~ht without the share (the paper's ``active:uniform=0``;
    module docstring, "Defaults"), in ``estimate``'s default measures and in a campaign
    target's plan; on importance samples AP, Rprec and NumRel to ~hh, the rest to ~is.
    ``AP~ht`` and ``P@10~ht`` stay available by name."""
    runs, qrels, pool, _ = judged_collection
    without_share = {"AP": "hh", "R@10": "hh", "Rprec": "hh", "NumRel": "hh",
                     "P@10": "ht", "DCG@10": "ht", "nDCG@10": "ht"}
    expected = {("with-replacement", False): without_share,
                ("with-replacement", True): dict.fromkeys(without_share, "hh"),
                ("importance", False): {"AP": "hh", "R@10": "is", "Rprec": "hh",
                                        "NumRel": "hh", "P@10": "is", "DCG@10": "is",
                                        "nDCG@10": "is"}}
    for (design, reach), families in expected.items():
        for measure, family in families.items():
            base, _, cut = measure.partition("@")
            spec = estimator_for(base, int(cut) if cut else None, design, reach)
            assert spec is not None and spec.family == family, (design, reach, measure)
    for params, chosen in (({}, ("AP~hh", "nDCG@10~hh", "P@10~hh", "NumRel~hh")),
                           ({"uniform": 0.0}, ("AP~hh", "nDCG@10~ht", "P@10~ht", "NumRel~hh"))):
        selector = METHODS["active"](pool, Budget(rate=0.3), np.random.default_rng(1), **params)
        sample = simulate(selector, qrels_oracle(qrels)).sample()
        assert default_estimates(sample) == chosen
        got = estimate(sample, runs, depth=30)
        assert list(dict.fromkeys(got["measure"])) == list(chosen)
        reach = draws_reach_every_document(sample)
        for measure, family in (("AP", "hh"), ("P@10", chosen[2].partition("~")[2])):
            plan = plan_for(parse_target(measure), sample.design, reach)
            assert plan is not None and plan.estimator == f"{measure}~{family}"
            assert plan.r_spec is not None and plan.r_spec.name == f"NumRel~{family}"
        by_name = estimate(sample, runs, ["AP~ht", "P@10~ht"], depth=30)
        assert set(by_name["measure"]) == {"AP~ht", "P@10~ht"}


def test_equals_importance_sampling_for_linear_measures() -> None:
    """On an importance sample (fixed Q) the per-draw mean is eq. 4: P@k and DCG@k agree."""
    runs = runs_of({"A": [f"d{i}" for i in range(8)], "B": [f"d{i}" for i in range(10, 2, -1)]})
    pool = Pool.from_runs(runs)
    selector = simulate(ImportanceSelector(pool, Budget(count=6), np.random.default_rng(1)),
                        lambda t, docs: {d: float(d in ("d1", "d4", "d9")) for d in docs})
    sample = selector.sample()
    for base in ("P@5", "DCG@5", "DCG"):
        hh = estimate(sample, runs, [f"{base}~hh"])
        is_ = estimate(sample, runs, [f"{base}~is"])
        np.testing.assert_allclose(hh["value"], is_["value"])
        np.testing.assert_allclose(hh["lo"], is_["lo"])


TOPICS = ["42", "43"]  # round 5's two smallest depth-100 pools (976 and 1170 documents)
TRIALS = 200


@pytest.mark.slow
@pytest.mark.shared
def test_hh_against_ht_on_active_sampling(round5_runs: list[Run], round5_qrels: Qrels,
                                          tmp_path: Path) -> None:
    """Active sampling (batch 3) at a 10% budget, 200 trials on topics 42 and 43, simulated
    by ``sampleval simulate`` with the measures P@10~ht, P@10~hh, NumRel~ht, NumRel~hh:
    bias, sd and rms of HT (path-dependent pi) and HH against the pool judged in full. HH's
    NumRel bias, averaged over the topics, is within 3 SE of 0."""
    start = time.perf_counter()
    judged = round5_qrels.to_frame()
    qrels = Qrels.from_frame(judged[judged["query_id"].isin(TOPICS)])  # the pool's topics
    summary = run_simulation(round5_runs, qrels, ["active"],
                             rates=[0.1], trials=TRIALS, output=tmp_path / "active",
                             measures=["P@10~ht", "P@10~hh", "NumRel~ht", "NumRel~hh"],
                             depth=100, figures=False)
    print(f"\nactive sampling, 10% budget, topics {', '.join(TOPICS)}, {TRIALS} trials "
          f"({time.perf_counter() - start:.0f} s):")
    print(summary[["measure", "rms", "bias", "variance", "coverage_topic"]].to_string())
    rows = pd.read_parquet(tmp_path / "active" / "trials.parquet",
                           filters=[("measure", "==", "NumRel~hh"), ("topic", "!=", "all")])
    per_topic = rows.drop_duplicates(["trial", "topic"])  # the same for every run
    error = (per_topic["estimate"] - per_topic["truth"]).groupby(per_topic["trial"]).mean()
    se = error.std(ddof=1) / np.sqrt(TRIALS)
    print(f"  HH NumRel, mean over topics: bias {error.mean():.3f}, SE {se:.3f}")
    assert len(error) == TRIALS
    assert abs(error.mean()) < 3 * se
