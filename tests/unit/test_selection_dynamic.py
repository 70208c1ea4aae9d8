"""Dynamic Sampling (``dynamic``): exact budget, batches as strata with n_h/N_h, sampling
frequencies given a history, resumability, and real data (TREC-COVID round 5 from the runs
alone; Cranfield with TF-IDF features), where it finds more relevant documents than uniform
sampling at the same budget."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets import cranfield_runs, read_qrels
from sampleval.estimation.estimates import estimate
from sampleval.io import read_qrels as read_trec_qrels
from sampleval.io import read_runs
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.selection.base import Oracle, Selector, rng_state
from sampleval.selection.dynamic import DynamicSelector, batch_sizes
from sampleval.selection.uniform import UniformSelector


def toy_pool(n_runs: int = 4, n_docs: int = 80, topics: tuple[str, ...] = ("1", "2")) -> Pool:
    """Runs ranking overlapping windows of d0..d{n_docs-1}; low numbers are ranked high."""
    rng = np.random.default_rng(3)
    frames = []
    for s in range(n_runs):
        parts = []
        for t in topics:
            docs = np.sort(rng.choice(n_docs, size=n_docs // 2, replace=False))
            parts.append(pd.DataFrame({"query_id": t, "doc_id": [f"d{d}" for d in docs],
                                       "score": np.arange(len(docs), 0, -1.0)}))
        frames.append(Run.from_frame(pd.concat(parts), f"r{s}"))
    return Pool.from_runs(frames)


def toy_oracle(topic: str, docnos: list[str]) -> dict[str, float]:
    return {d: float(int(d[1:]) % 3 == 0 and int(d[1:]) < 40) for d in docnos}


def judged_per_topic(selector: Selector) -> pd.Series:
    return selector.sample().judged().groupby("query_id").size()


def check_design(selector: DynamicSelector) -> None:
    """Strata are the batches; inclusion is n_h / N_h; no document judged twice."""
    frame = selector.sample().frame
    assert not frame.duplicated(["query_id", "doc_id"]).any()
    for topic, rows in frame.groupby("query_id"):
        state = selector.state()["topics"][topic]
        for j, (members, chosen) in enumerate(zip(state["batches"], state["chosen"],
                                                  strict=True)):
            batch = rows[rows["stratum"] == f"b{j + 1:03d}"]
            assert len(batch) == len(members)
            assert batch["relevance"].notna().sum() == len(chosen)
            assert np.allclose(batch["inclusion"], len(chosen) / len(members))
        rest = rows[rows["stratum"] == "rest"]
        assert rest["relevance"].isna().all() and (rest["inclusion"] == 0).all()


def test_pool_exhausted_before_budget() -> None:
    pool = toy_pool()
    selector = simulate(DynamicSelector(pool, Budget(count=60), np.random.default_rng(1),
                                        strategy="D12"), toy_oracle, batch=4)
    assert (judged_per_topic(selector) < 60).all()
    assert (selector.sample().frame["stratum"] != "rest").all()
    check_design(selector)


def test_registered_and_batch_rule() -> None:
    assert METHODS["dynamic"] is DynamicSelector
    assert batch_sizes(1, 40).tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 4]
    assert batch_sizes(10, 60).tolist() == [10, 11, 13, 15, 11]


@pytest.mark.parametrize(("params", "rate"), [({"strategy": "D12"}, 0.12),
                                              ({"strategy": "D50", "batch": 3}, 0.5),
                                              ({"rate": 1.0}, 1.0)])
def test_exact_budget_no_repeats_and_strata(params: dict[str, object], rate: float) -> None:
    pool = toy_pool(n_docs=400)
    selector = simulate(DynamicSelector(pool, Budget(count=17), np.random.default_rng(1),
                                        **params), toy_oracle, batch=2)
    assert judged_per_topic(selector).tolist() == [17, 17]
    check_design(selector)
    batches = selector.state()["topics"]["1"]
    for members, chosen in list(zip(batches["batches"], batches["chosen"], strict=True))[:-1]:
        assert len(chosen) == math.ceil(rate * len(members))


@pytest.mark.slow
def test_next_batch_frequencies_match_rates() -> None:
    """Given a fixed history, the next batch is fixed and each of its documents is drawn
    with probability n_h / N_h over the seeds."""
    pool = toy_pool(topics=("1",))
    selector = simulate(DynamicSelector(pool, Budget(count=40), np.random.default_rng(2),
                                        strategy="D25"), toy_oracle, rounds=8)
    saved = selector.state()
    counts: dict[str, int] = {}
    batches = set()
    trials = 400
    for seed in range(trials):
        state = json.loads(json.dumps(saved))
        state["topics"]["1"]["rng"] = rng_state(np.random.default_rng(seed))
        again = DynamicSelector.restore(pool, state)
        for d in again.propose("1", 100):
            counts[d] = counts.get(d, 0) + 1
        batches.add(tuple(again.state()["topics"]["1"]["batches"][-1]))
    assert len(batches) == 1
    members = next(iter(batches))
    n = math.ceil(0.25 * len(members))
    assert set(counts) <= set(pool.docnos_of("1")[list(members)])
    freq = np.array([counts.get(d, 0) for d in pool.docnos_of("1")[list(members)]]) / trials
    p = n / len(members)
    assert np.all(np.abs(freq - p) < 4 * math.sqrt(p * (1 - p) / trials))


@pytest.mark.parametrize("stop", ["none", "knee"])
def test_resume_gives_the_identical_sample(stop: str) -> None:
    pool = toy_pool(n_docs=400)
    params = {"strategy": "D50", "stop": stop}
    full = simulate(DynamicSelector(pool, Budget(count=90), np.random.default_rng(5),
                                    **params), toy_oracle, batch=3)
    part = simulate(DynamicSelector(pool, Budget(count=90), np.random.default_rng(5),
                                    **params), toy_oracle, batch=3, rounds=4)
    resumed = simulate(DynamicSelector.restore(pool, json.loads(json.dumps(part.state()))),
                       toy_oracle, batch=3)
    pd.testing.assert_frame_equal(resumed.sample().frame, full.sample().frame)
    assert resumed.propose("1", 5) == []


# -- real data ------------------------------------------------------------------------------

def relevant_found(selector: Selector, qrels: Qrels) -> int:
    judged = selector.sample().judged()[["query_id", "doc_id"]]
    truth = qrels.judged()[["query_id", "doc_id", "relevance"]]
    return int((judged.merge(truth, on=["query_id", "doc_id"])["relevance"] >= 1).sum())


def compare_with_uniform(pool: Pool, runs: list[Run], qrels: Qrels, budget: Budget,
                         params: dict[str, object], label: str) -> DynamicSelector:
    oracle: Oracle = qrels_oracle(qrels)
    dynamic = simulate(DynamicSelector(pool, budget, np.random.default_rng(11), **params),
                       oracle, batch=5)
    assert isinstance(dynamic, DynamicSelector)
    check_design(dynamic)
    expected = [budget.for_topic(pool[t].size) for t in pool.topics]
    assert judged_per_topic(dynamic).reindex(pool.topics).tolist() == expected
    found = relevant_found(dynamic, qrels)
    uniform = [relevant_found(simulate(UniformSelector(pool, budget, np.random.default_rng(s)),
                                       oracle, batch=50), qrels) for s in range(3)]
    print(f"\n{label}: budget {sum(expected)} judgments; relevant found: dynamic {found}, "
          f"uniform {uniform} (mean {np.mean(uniform):.1f})")
    assert found > max(uniform)
    table = estimate(dynamic.sample(), runs, ["xinfAP", "AP~ht"])
    assert set(table["measure"]) == {"xinfAP", "AP~ht"}
    assert np.isfinite(table[table["query_id"] == "all"]["value"]).all()
    return dynamic


@pytest.mark.slow
@pytest.mark.shared
def test_covid_round5_from_runs(covid: Path) -> None:
    runs = read_runs(sorted((covid / "round5" / "runs").iterdir())[:20])
    qrels = read_trec_qrels(covid / "qrels" / "qrels.covid-round5.txt")
    pool = Pool.from_runs(runs, depth=50, topics=["1", "2", "3", "4", "5"])
    compare_with_uniform(pool, runs, qrels, Budget(rate=0.15), {"strategy": "D50"},
                         "TREC-COVID round 5 (20 runs, depth 50, 5 topics, D50)")


@pytest.mark.slow
@pytest.mark.shared
def test_cranfield_with_texts(cranfield_dir: Path) -> None:
    runs = cranfield_runs(cranfield_dir, depth=100)
    qrels = read_qrels(cranfield_dir)
    topics = [str(q) for q in range(1, 11)]
    pool = Pool.from_runs(runs, depth=100, topics=topics)
    params = {"strategy": "D50", "corpus": "cranfield", "corpus_dir": str(cranfield_dir),
              "stop": "knee"}
    compare_with_uniform(pool, runs, qrels, Budget(count=30), params,
                         "Cranfield (5 runs, depth 100, 10 queries, TF-IDF, D50)")


def test_a_selector_given_a_rate_resumes_from_its_state() -> None:
    """``rate=`` instead of ``strategy=``: the state keeps the rate alone, so restoring it does
    not meet the default strategy beside the rate ("give either strategy or rate")."""
    pool = toy_pool()
    part = simulate(DynamicSelector(pool, Budget(count=30), np.random.default_rng(2), rate=0.3),
                    toy_oracle, batch=4, rounds=2)
    state = json.loads(json.dumps(part.state()))
    assert "strategy" not in state["params"] and state["params"]["rate"] == 0.3
    resumed = simulate(DynamicSelector.restore(pool, state), toy_oracle, batch=4)
    whole = simulate(DynamicSelector(pool, Budget(count=30), np.random.default_rng(2), rate=0.3),
                     toy_oracle, batch=4)
    assert resumed.state() == whole.state()
    older = {**state, "params": {**state["params"], "strategy": "D25"}}  # as saved before
    assert DynamicSelector.restore(pool, older).state() == part.state()


def test_the_same_seed_gives_the_sample_it_always_gave() -> None:
    """The documents judged on the toy pool with seed 5 (D50, 24 per topic, the learner fitted
    after every batch with a relevant judgment), frozen from the code before the fit was
    driven without ``scipy.optimize.minimize`` (main at 9f6ffc1): a faster fit must walk the
    same iterates, rank alike and so draw the same documents."""
    selector = DynamicSelector(toy_pool(), Budget(count=24), np.random.default_rng(5),
                               strategy="D50")
    simulate(selector, toy_oracle, batch=1)
    judged = selector.sample().judged().sort_values(["query_id", "stratum", "doc_id"])
    got = {t: " ".join(rows["doc_id"]) for t, rows in judged.groupby("query_id")}
    assert got == {
        "1": "d10 d22 d23 d25 d1 d39 d15 d4 d8 d18 d38 d9 d29 d46 d48 d61 d24 d37 d72 d73 "
             "d27 d49 d57 d71",
        "2": "d8 d30 d5 d7 d24 d9 d17 d32 d42 d34 d71 d78 d10 d16 d6 d77 d15 d3 d64 d66 "
             "d18 d22 d33 d56"}
