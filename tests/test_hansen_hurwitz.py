"""The per-draw (Hansen-Hurwitz) estimator: a hand-computed case, agreement with importance
sampling's eq. 4, and a Monte Carlo comparison with Horvitz-Thompson on active sampling
(TREC-COVID round 5)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators import estimate
from sampleval.experiments.runner import simulate as run_simulation
from sampleval.io import read_qrels, read_runs
from sampleval.selection import Budget, simulate
from sampleval.selection.importance import ImportanceSelector


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
    for measure in ("NumRel@5~hh", "P~hh", "AP~hh"):
        with pytest.raises(UsageError):
            estimate(sample, runs, [measure])
    with pytest.raises(UsageError, match="with-replacement or importance sample"):
        estimate(Sample("census", sample.frame.fillna({"relevance": 0.0})), runs, ["P@2~hh"])
    unjudged = sample.draws.assign(doc_id=["d1", "d2", "d1"])  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="judgment"):
        estimate(Sample("with-replacement", sample.frame, draws=unjudged), runs, ["P@2~hh"])


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


@pytest.mark.shared
def test_hh_against_ht_on_active_sampling(covid: Path, tmp_path: Path) -> None:
    """Active sampling (batch 3) at a 10% budget, 200 trials on topics 42 and 43, simulated
    by ``sampleval simulate`` with the measures P@10~ht, P@10~hh, NumRel~ht, NumRel~hh:
    bias, sd and rms of HT (path-dependent pi) and HH against the pool judged in full. HH's
    NumRel bias, averaged over the topics, is within 3 SE of 0."""
    start = time.perf_counter()
    judged = read_qrels(covid / "qrels" / "qrels.covid-round5.txt").to_frame()
    qrels = Qrels.from_frame(judged[judged["query_id"].isin(TOPICS)])  # the pool's topics
    summary = run_simulation(read_runs(covid / "round5" / "runs"), qrels, ["active"],
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
