"""Move-to-Front pooling and bandit pooling: the rules on toys, budgets, resumability, and how
many relevant documents they find on TREC-COVID round 5 (depth-100 pool, 10% budget)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from sampleval.cli.sample import estimator_families
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.selection import METHODS, Budget, Selector, qrels_oracle, simulate
from sampleval.selection.base import Oracle
from sampleval.selection.mab import MABSelector
from sampleval.selection.mtf import MTFSelector

Params = dict[str, object]
BANDITS: list[Params] = [{"variant": "mm-ns"}, {"variant": "mm-ns", "discount": 0.0},
                         {"variant": "mm"}, {"variant": "ucb"}]
METHOD_CASES: list[tuple[str, Params]] = [("mtf", {}), *(("mab", p) for p in BANDITS)]


def toy_pool(rankings: dict[str, list[str]], topic: str = "1") -> Pool:
    """A one-topic pool; each run ranks its documents in list order."""
    return Pool.from_runs([
        Run.from_frame(pd.DataFrame({"query_id": topic, "doc_id": docs,
                                     "score": np.arange(len(docs), 0, -1.0)}), name)
        for name, docs in rankings.items()])


def toy_oracle(relevant: set[str]) -> Oracle:
    return lambda topic, docnos: {d: float(d in relevant) for d in docnos}


def sequence(selector: Selector, topic: str) -> list[str]:
    """The documents taken for a topic, in proposal order (from the saved state)."""
    saved = selector.state()["topics"].get(topic)
    return [] if saved is None else saved["docnos"]


def make(method: str, pool: Pool, budget: Budget, params: Params) -> Selector:
    return METHODS[method](pool, budget, np.random.default_rng(7), **params)


# -- the rules on toys -----------------------------------------------------------------------

def test_registered() -> None:
    for name, cls in (("mtf", MTFSelector), ("mab", MABSelector)):
        assert METHODS[name] is cls
        assert cls.design == "pooled" and estimator_families(cls.design) == []


def seeded_start(pool: Pool, budget: int, run: int) -> MTFSelector:
    """An MTF selector over ``pool`` whose random start run (topic 1) is ``run``."""
    for seed in range(100):
        selector = MTFSelector(pool, Budget(count=budget), np.random.default_rng(seed))
        if selector._arms_state("1")["start"] == run:
            return selector
    raise AssertionError("no seed starts there")


def test_mtf_follows_the_rule_step_by_step() -> None:
    # Run A: a1 R, a2 N, a3 R, a4 N, a5 R. Run B: b1 N, b2 R, a2 (already judged), b3 R, b4 N.
    # Priorities start at A = B = 0; the start run has the turn, then the highest priority,
    # ties by run order (A). Starting from A:
    #  1. a1 R: A keeps the turn.
    #  2. a2 N: A = -1; highest priority is B (0).
    #  3. b1 N: B = -1; A and B tie at -1, run order gives A.
    #  4. a3 R: A keeps the turn.
    #  5. a4 N: A = -2; B (-1) is highest.
    #  6. b2 R: B keeps the turn.
    #  7. B's next is a2, judged already: skipped without effect; b3 R: B keeps the turn.
    #  8. b4 N: B = -2; tie at -2, run order gives A.
    #  9. a5 R; every document is judged (budget = pool size = 9).
    # Starting from B: b1 N (B = -1), a1 R, a2 N (A = -1), tie: A: a3 R, a4 N (A = -2), B: b2 R,
    # b3 R, b4 N (B = -2), tie: A: a5.
    pool = toy_pool({"A": ["a1", "a2", "a3", "a4", "a5"], "B": ["b1", "b2", "a2", "b3", "b4"]})
    oracle = toy_oracle({"a1", "a3", "a5", "b2", "b3"})
    selector = simulate(seeded_start(pool, 9, 0), oracle)
    assert sequence(selector, "1") == ["a1", "a2", "b1", "a3", "a4", "b2", "b3", "b4", "a5"]
    assert selector.state()["topics"]["1"]["arms"] == {"priority": [-2, -2], "start": 0}
    from_b = simulate(seeded_start(pool, 9, 1), oracle)
    assert sequence(from_b, "1") == ["b1", "a1", "a2", "a3", "a4", "b2", "b3", "b4", "a5"]
    # a smaller budget stops early: the same prefix, then nothing more
    short = simulate(seeded_start(pool, 4, 0), oracle)
    assert sequence(short, "1") == ["a1", "a2", "b1", "a3"]
    assert short.propose("1", 3) == []


def test_mtf_and_mab_start_at_random() -> None:
    """Issue 9, item 7: MTF's first run is drawn at random (seeded), as the reference code
    does; the bandits break ties (all arms, at the start) at random."""
    pool = toy_pool({name: [f"{name}{k}" for k in range(4)] for name in "ABCD"})
    oracle = toy_oracle(set())
    for cls in (MTFSelector, MABSelector):
        first = Counter(simulate(cls(pool, Budget(count=1), np.random.default_rng(seed)),
                                 oracle).state()["topics"]["1"]["runs"][0]
                        for seed in range(200))
        assert set(first) == {0, 1, 2, 3} and min(first.values()) >= 25, (cls, first)
        again = [simulate(cls(pool, Budget(count=8), np.random.default_rng(7)), oracle)
                 for _ in range(2)]
        assert sequence(again[0], "1") == sequence(again[1], "1")


@pytest.mark.parametrize("params", BANDITS, ids=lambda p: "-".join(map(str, p.values())))
def test_bandits_pull_the_relevant_run_most(params: Params) -> None:
    # two runs of non-relevant documents first in pool order, then one run of relevant ones
    rankings = {f"bad{i}": [f"n{i}{k:02d}" for k in range(12)] for i in range(2)}
    rankings["good"] = [f"r{k:02d}" for k in range(12)]
    pool = toy_pool(rankings)
    selector = simulate(MABSelector(pool, Budget(count=15), np.random.default_rng(0),
                                      **params), toy_oracle(set(rankings["good"])))
    pulls = Counter(selector.state()["topics"]["1"]["runs"])
    assert sum(pulls.values()) == 15
    assert pulls[2] >= 10 and pulls[2] > pulls[0] + pulls[1]


def test_mab_parameters() -> None:
    pool = toy_pool({"A": ["a"]})
    rng = np.random.default_rng(0)
    with pytest.raises(UsageError, match="variant"):
        MABSelector(pool, Budget(count=1), rng, variant="thompson")
    with pytest.raises(UsageError, match="mm-ns variant only"):
        MABSelector(pool, Budget(count=1), rng, variant="mm", discount=0.5)
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        MABSelector(pool, Budget(count=1), rng, discount="1.5")
    assert MABSelector(pool, Budget(count=1), rng, discount="0.5").params == {
        "variant": "mm-ns", "discount": 0.5}


def test_batches_and_bad_labels() -> None:
    pool = toy_pool({"A": ["a1", "a2", "a3"], "B": ["a2", "b1", "b2"]})
    selector = seeded_start(pool, 5, 0)
    first = selector.propose("1", 2)  # the turn holder's next two documents, labels unknown
    second = selector.propose("1", 10)  # pending documents are never proposed again
    assert first == ["a1", "a2"] and second == ["a3", "b1", "b2"]
    with pytest.raises(UsageError, match="not proposed"):
        selector.observe("1", {"zz": 1.0})
    selector.observe("1", {"a2": 0.0, "a1": 1.0})
    with pytest.raises(UsageError, match="not proposed"):
        selector.observe("1", {"a1": 1.0})  # judged already
    with pytest.raises(UsageError, match="method"):
        MABSelector.restore(pool, selector.state())


# -- TREC-COVID round 5 --------------------------------------------------------------------

@pytest.fixture(scope="module")
def round5(round5_pool: Pool, round5_qrels: Qrels) -> tuple[Pool, Oracle, Pool]:
    """The depth-100 pool of the round-5 runs, the round-5 qrels as oracle, and the pool with
    those labels (for the relevant rate)."""
    return round5_pool, qrels_oracle(round5_qrels), round5_pool.with_labels(round5_qrels)


@pytest.fixture(scope="module")
def simulated(round5: tuple[Pool, Oracle, Pool]) -> dict[str, Selector]:
    """Every method run to a 10% budget, one judgment at a time."""
    pool, oracle, _ = round5
    return {f"{m} {p}": simulate(make(m, pool, Budget(rate=0.1), p), oracle)
            for m, p in METHOD_CASES}


@pytest.mark.shared
def test_budget_spent_exactly_no_document_twice(round5: tuple[Pool, Oracle, Pool],
                                                simulated: dict[str, Selector]) -> None:
    pool = round5[0]
    for selector in simulated.values():
        sample = selector.sample()
        judged = sample.judged()
        for tp in pool:
            taken = sequence(selector, tp.topic)
            assert len(taken) == len(set(taken)) == Budget(rate=0.1).for_topic(tp.size)
            assert selector.propose(tp.topic, 5) == []
        assert len(sample.frame) == sum(tp.size for tp in pool)
        assert (judged["inclusion"] == 1.0).all()
        assert (sample.frame["inclusion"] == 0.0).sum() == len(sample.frame) - len(judged)


@pytest.mark.shared
@pytest.mark.parametrize(("method", "params"), METHOD_CASES,
                         ids=[f"{m}-{'-'.join(map(str, p.values()))}" for m, p in METHOD_CASES])
def test_stop_save_load_continue(round5: tuple[Pool, Oracle, Pool], method: str,
                                 params: Params) -> None:
    full, oracle, _ = round5
    pool = replace(full, topic_pools={t: full[t] for t in full.topics[:4]})  # for time
    budget = Budget(rate=0.1)
    for batch in (1, 3):
        straight = simulate(make(method, pool, budget, params), oracle, batch=batch)
        for k in (1, 7, 40):
            first = simulate(make(method, pool, budget, params), oracle, batch=batch, rounds=k)
            saved = json.loads(json.dumps(first.state()))
            resumed = simulate(METHODS[method].restore(pool, saved), oracle, batch=batch)
            assert resumed.state() == straight.state()
            pd.testing.assert_frame_equal(resumed.sample().frame, straight.sample().frame)


@pytest.mark.shared
def test_more_relevant_than_uniform_random(round5: tuple[Pool, Oracle, Pool],
                                           simulated: dict[str, Selector]) -> None:
    labelled = round5[2]
    budget = Budget(rate=0.1)
    # uniform random selection of the same budget finds, in expectation, the pool's relevant
    # rate times the budget, per topic
    expected = sum(budget.for_topic(tp.size) * float(np.sum(tp.labels >= 1)) / tp.size
                   for tp in labelled)
    print(f"\nround 5, depth 100, 10% budget: uniform random finds {expected:.0f} relevant "
          f"in expectation")
    for name, selector in simulated.items():
        judged = selector.sample().judged()
        found = int((judged["relevance"] >= 1).sum())
        print(f"  {name:<44} {found:5d} relevant of {len(judged)} judged "
              f"({found / expected:.1f}x)")
        assert found > 1.5 * expected


def test_active_stops_when_no_draw_can_reach_an_unjudged_document() -> None:
    """floor=0: once every relevant document found sits in one run whose documents are all
    judged, that run takes all the weight and no draw can bring a new document; the topic
    ends short of its budget instead of drawing forever."""
    from sampleval.selection.active import ActiveSelector

    pool = toy_pool({"a": ["a1", "a2"], "b": [f"b{i}" for i in range(30)]})
    selector = ActiveSelector(pool, Budget(count=20), np.random.default_rng(3), batch=4,
                              floor=0.0, uniform=0.0)
    oracle = toy_oracle({"a1", "a2"})
    for _ in range(100):
        proposed = selector.propose("1", 4)
        if not proposed:
            break
        selector.observe("1", oracle("1", proposed))
    judged = selector.sample().judged()
    assert {"a1", "a2"} <= set(judged["doc_id"]) and len(judged) < 20
