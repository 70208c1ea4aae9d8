"""The per-draw (Hansen-Hurwitz) estimator: a hand-computed case, agreement with importance
sampling's eq. 4, and a Monte Carlo comparison with Horvitz-Thompson on active sampling
(TREC-COVID round 5)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.core.inclusion import judged_design
from sampleval.core.pool import Pool
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators import estimate
from sampleval.estimators import horvitz_thompson as ht
from sampleval.estimators.base import relevance, topic_views
from sampleval.estimators.hansen_hurwitz import estimate_hh
from sampleval.estimators.names import parse_estimate
from sampleval.io import read_qrels, read_runs
from sampleval.selection import ActiveSelector, Budget, qrels_oracle, simulate
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
    with pytest.raises(UsageError, match="draws"):
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
def test_hh_against_ht_on_active_sampling(covid: Path) -> None:
    """Active sampling (batch 3) at a 10% budget, 200 trials on topics 42 and 43: bias,
    sd and rms of HT (path-dependent pi) and HH for P@10 (every run) and NumRel, the truth
    being the round-5 qrels over the depth-100 pool. HH's mean NumRel bias is within 3 SE
    of 0."""
    start = time.perf_counter()
    qrels = read_qrels(covid / "qrels" / "qrels.covid-round5.txt")
    full = Pool.from_runs(read_runs(covid / "round5" / "runs"), depth=100)
    pool = replace(full, topic_pools={t: full[t] for t in TOPICS})
    oracle = qrels_oracle(qrels)
    p10, num_rel = parse_estimate("P@10~hh"), parse_estimate("NumRel~hh")
    truth_p, truth_r = [], []
    for tp in pool:
        docs = pool.docnos_of(tp.topic)
        ranks = np.zeros((pool.n_runs, tp.size), dtype=np.int64)
        runs, cols = np.nonzero(tp.ranking >= 0)
        ranks[runs, tp.ranking[runs, cols]] = cols + 1
        y = relevance(np.array(list(oracle(tp.topic, list(docs)).values())), 1.0)
        truth_p.append(((ranks > 0) & (ranks <= 10)) @ y / 10)
        truth_r.append(y.sum())
    truth = {"P@10": np.array(truth_p), "NumRel": np.array(truth_r)}  # [T, n_runs], [T]
    errors: dict[tuple[str, str], list[np.ndarray]] = {}
    for seed in range(TRIALS):
        selector = ActiveSelector(pool, Budget(rate=0.1), np.random.default_rng(seed))
        sample = simulate(selector, oracle).sample()
        views = topic_views(pool, sample)
        ht_p, ht_r = [], []
        for view in views:
            design = judged_design(sample, view.sample)
            y = relevance(view.sample.labels[design.index], 1.0)
            ranks = view.rank_of(design.index)
            ht_p.append(ht.precision(y, design.pi, design.pi_joint, ranks, 10).value)
            ht_r.append(ht.num_rel(y, design.pi, design.pi_joint, ranks).value[0])
        hh_p, hh_r = (estimate_hh(pool.run_names, views, sample, spec, 1.0, 0.95)
                      .query("query_id != 'all'")["value"].to_numpy()
                      .reshape(len(TOPICS), pool.n_runs) for spec in (p10, num_rel))
        for key, value in ((("HT", "P@10"), np.array(ht_p)), (("HH", "P@10"), hh_p),
                           (("HT", "NumRel"), np.array(ht_r)), (("HH", "NumRel"), hh_r[:, 0])):
            errors.setdefault(key, []).append(value - truth[key[1]])
    print(f"\nactive sampling, 10% budget, topics {', '.join(TOPICS)}, {TRIALS} trials "
          f"({time.perf_counter() - start:.0f} s); per topic (and run), averaged:")
    print(f"  {'':6} {'measure':7} {'bias':>8} {'sd':>8} {'rms':>8}")
    rms = {}
    for (family, measure), errs in errors.items():
        e = np.array(errs)  # [trials, T(, runs)]
        rms[family, measure] = float(np.sqrt((e**2).mean()))
        print(f"  {family:6} {measure:7} {e.mean():8.4f} {np.sqrt(e.var(axis=0).mean()):8.4f} "
              f"{rms[family, measure]:8.4f}")
    for measure in ("P@10", "NumRel"):
        better = min(("HT", "HH"), key=lambda f: rms[f, measure])
        print(f"  lower rms for {measure}: {better}")
    topic_mean = np.array(errors["HH", "NumRel"]).mean(axis=1)  # the mean over the topics
    se = topic_mean.std(ddof=1) / np.sqrt(TRIALS)
    print(f"  HH NumRel, mean over topics: bias {topic_mean.mean():.3f}, SE {se:.3f}")
    assert abs(topic_mean.mean()) < 3 * se
