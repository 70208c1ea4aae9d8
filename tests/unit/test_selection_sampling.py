"""The AP-prior sampling methods: ``stratified`` (Pavlu & Aslam 2007, without replacement) and
``active`` (Li & Kanoulas, CIKM 2017, Algorithm 1, with replacement in rounds).

Checked: the AP-prior weights; the vectorised AP estimate that steers ``active`` against the
Horvitz-Thompson core; on TREC-COVID round 5 (first 20 runs, depth 20), the budget spent
exactly without duplicates, inclusion probabilities (``stratified``: 5000 seeded samples
against pi_i and pi_ij; ``active``: the next round's draws, over 20000 draws from one
history, against the reported p_t), stop / save / load / continue giving the same Sample,
and HT estimates from the samples end to end. Printed with -s: the time of one ``active``
trial at 10% of the depth-100 pool of all 126 runs.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chisquare

from sampleval.core.ap_prior import prior_at_ranks, rank_prior, run_prior
from sampleval.core.inclusion import judged_design
from sampleval.core.pool import PAD, Pool
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.estimands import average_precision
from sampleval.estimation.estimates import estimate
from sampleval.io import read_qrels, read_runs
from sampleval.selection import Budget, Selector, qrels_oracle, simulate
from sampleval.selection.active import (
    ActiveSelector,
    estimated_ap,
    insert_hits,
    run_distribution,
)
from sampleval.selection.base import Oracle, rng_state
from sampleval.selection.stratified import PriorStratifiedSelector

METHODS: dict[str, type[Selector]] = {"stratified": PriorStratifiedSelector,
                                      "active": ActiveSelector}


def synthetic_pool(seed: int = 0, n_runs: int = 4, n_docs: int = 30, depth: int = 10) -> Pool:
    """Runs of random rankings over ``n_docs`` documents, one of them shorter than ``depth``."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n_runs):
        length = depth - 3 if i == 0 else depth
        docs = rng.choice(n_docs, size=length, replace=False)
        runs.append(Run.from_frame(pd.DataFrame({
            "query_id": "q", "doc_id": [f"d{d:02d}" for d in docs],
            "score": np.arange(length, 0, -1.0)}), name=f"r{i}"))
    return Pool.from_runs(runs, depth=depth)


def test_ap_priors_by_hand() -> None:
    """The three named AP-priors on a list of 3 (issue 9, item 4): Aslam et al.'s
    (1/6)(1 + 1 + 1/2 + 1/3), (1/6)(1 + 1/2 + 1/3), (1/6)(1 + 1/3); the same without the
    constant term, (1/3)(1/r + ... + 1/3); log(3/r), normalised (0 at the last rank)."""
    assert rank_prior(3, "aslam") == pytest.approx([17 / 36, 11 / 36, 8 / 36])
    assert rank_prior(3, "harmonic") == pytest.approx([11 / 18, 5 / 18, 2 / 18])
    logs = np.log([3.0, 1.5, 1.0])
    assert rank_prior(3, "log") == pytest.approx(logs / logs.sum())
    for kind in ("aslam", "harmonic", "log"):
        for n in (1, 5, 100):
            w = rank_prior(n, kind)
            assert w.sum() == pytest.approx(1.0) and (np.diff(w) < 0).all()
    # a second run retrieving only the third document: its whole prior on it
    both = prior_at_ranks(np.array([[1, 2, 3], [0, 0, 1]]))
    assert both == pytest.approx([17 / 72, 11 / 72, (8 / 36 + 1) / 2])


def test_run_prior_is_each_runs_ap_prior() -> None:
    ranking = synthetic_pool()["q"].ranking
    prior = run_prior(ranking)
    assert np.allclose(prior.sum(axis=1), 1.0)
    assert (prior[ranking == PAD] == 0).all() and (prior[ranking != PAD] > 0).all()
    assert np.allclose(prior[0, :7], rank_prior(7)) and np.allclose(prior[1], rank_prior(10))


def test_estimated_ap_is_the_ht_core_under_independence() -> None:
    rng = np.random.default_rng(4)
    tp = synthetic_pool(seed=4, n_runs=6)["q"]
    y = rng.choice([0.0, 0.5, 1.0], size=tp.size, p=[0.5, 0.2, 0.3])
    pi = rng.uniform(0.2, 1.0, size=tp.size)
    joint = np.outer(pi, pi)
    np.fill_diagonal(joint, pi)
    ranks = np.zeros((tp.ranking.shape[0], tp.size), dtype=np.int64)
    rows, cols = np.nonzero(tp.ranking != PAD)
    ranks[rows, tp.ranking[rows, cols]] = cols + 1
    expected = average_precision(y, pi, joint, ranks).value
    width = tp.ranking.shape[1]
    key, ints, floats, n = (np.zeros(tp.ranking.size, dtype=np.int64),
                            np.zeros((3, tp.ranking.size), dtype=np.int64),
                            np.zeros(tp.ranking.size), 0)
    relevant = rng.permutation(np.flatnonzero(y > 0))  # hits arrive in any document order
    for k, doc in enumerate(relevant):
        runs, cols = np.nonzero(tp.ranking == doc)
        n = insert_hits(key, ints, floats, n, width, runs, cols, k, np.ones(len(runs)))
    assert (np.diff(key[:n]) > 0).all() and (ints[0, :n] * width + ints[1, :n] == key[:n]).all()
    got = estimated_ap(*ints[:, :n], y[relevant] / pi[relevant], y[relevant], len(ranks))
    assert np.allclose(got, expected)


def test_run_distribution_keeps_a_floor_for_every_present_run() -> None:
    present = np.array([1.0, 1.0, 1.0, 0.0])
    probs = run_distribution(np.array([0.0, 3.0, 1.0, 9.0]), present, 0.1)
    assert probs.sum() == pytest.approx(1.0) and probs[3] == 0.0
    assert probs[0] == pytest.approx(0.1 / 3) and probs[1] == pytest.approx(0.9 * 0.75 + 0.1 / 3)
    assert np.allclose(run_distribution(np.zeros(4), present, 0.1), present / 3)  # no weights


@pytest.mark.parametrize(("method", "params"), [
    ("active", {"batch": "0"}), ("active", {"floor": "-0.1"}), ("active", {"floor": "1.5"}),
    ("active", {"weights": "recall"}), ("active", {"batch": "three"}),
    ("active", {"rounds": "0"}), ("active", {"rounds": "3", "batch": "3"}),
    ("active", {"prior": "uniform"}), ("stratified", {"prior": "flat"}),
    ("stratified", {"per_stratum": "1"}), ("stratified", {"depth": "3"}),
    ("stratified", {"uniform": "1"}), ("active", {"uniform": "-0.2"}),
])
def test_bad_parameters(method: str, params: dict[str, str]) -> None:
    with pytest.raises(UsageError):
        METHODS[method](synthetic_pool(), Budget(count=5), np.random.default_rng(0), **params)


def toy_oracle(topic: str, docs: list[str]) -> dict[str, float]:
    """Every third document (by number) relevant."""
    return {d: float(int(d[1:]) % 3 == 0) for d in docs}


def test_active_rounds_follow_the_reference_code() -> None:
    """Issue 9, item 3: rounds=3 (the default) draws int(B/3) documents per round until B
    distinct documents are judged, the last round cut at the draw that brings the B-th;
    batch=3 draws 3 per round. floor=0 is allowed (neither the paper nor its code has one)."""
    pool = synthetic_pool(n_runs=6, n_docs=60, depth=20)
    budget = 24
    default = simulate(ActiveSelector(pool, Budget(count=budget), np.random.default_rng(5)),
                       toy_oracle)
    explicit = ActiveSelector(pool, Budget(count=budget), np.random.default_rng(5), rounds=3,
                              floor=0.0, uniform=0.0)
    assert explicit.params["rounds"] == 3 and "batch" not in explicit.params
    for selector in (default, simulate(explicit, toy_oracle)):
        sample = selector.sample()
        assert sample.rounds is not None and sample.draws is not None
        sizes = sample.rounds["size"].to_numpy()
        assert (sizes[:-1] == budget // 3).all() and 1 <= sizes[-1] <= budget // 3
        assert len(sizes) <= 50
        assert sample.judged()["doc_id"].nunique() == budget
        last = sample.draws[sample.draws["round"] == len(sizes)]["doc_id"]
        assert last.iloc[-1] not in set(sample.draws["doc_id"].iloc[:-1])  # the B-th new one
    batched = simulate(ActiveSelector(pool, Budget(count=budget), np.random.default_rng(5),
                                      batch=3), toy_oracle).sample()
    assert batched.rounds is not None
    assert (batched.rounds["size"] <= 3).all() and len(batched.rounds) >= budget // 3
    assert batched.judged()["doc_id"].nunique() == budget


def test_active_state_saved_before_the_share_restores_without_one() -> None:
    """A state saved before ``uniform`` existed lacks it among its parameters and was drawn
    without a share: it restores with uniform=0 (not today's default 0.2) and replays to the
    same sample, inclusion probabilities included."""
    pool = synthetic_pool(n_runs=6, n_docs=60, depth=20)
    selector = simulate(ActiveSelector(pool, Budget(count=24), np.random.default_rng(5),
                                       uniform=0.0), toy_oracle)
    state = json.loads(json.dumps(selector.state()))
    del state["params"]["uniform"]
    restored = ActiveSelector.restore(pool, state)
    assert restored.params["uniform"] == 0.0
    before, after = selector.sample(), restored.sample()
    pd.testing.assert_frame_equal(after.frame, before.frame)
    assert after.round_probs is not None and before.round_probs is not None
    pd.testing.assert_frame_equal(after.round_probs, before.round_probs)


def test_active_rejects_documents_it_did_not_propose() -> None:
    pool = synthetic_pool()
    selector = ActiveSelector(pool, Budget(count=5), np.random.default_rng(0))
    proposed = selector.propose("q", 10)
    outside = next(d for d in pool.docnos_of("q") if d not in proposed)
    with pytest.raises(UsageError):
        selector.observe("q", {outside: 1.0})


# -- TREC-COVID round 5 ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs20(covid: Path) -> list[Run]:
    return read_runs(sorted((covid / "round5" / "runs").iterdir())[:20])


@pytest.fixture(scope="module")
def oracle(covid: Path) -> Oracle:
    return qrels_oracle(read_qrels(covid / "qrels" / "qrels.covid-round5.txt"))


@pytest.fixture(scope="module")
def topic1(runs20: list[Run]) -> Pool:
    return Pool.from_runs(runs20, depth=20, topics=["1"])


@pytest.fixture(scope="module")
def pool5(runs20: list[Run]) -> Pool:
    return Pool.from_runs(runs20, depth=20, topics=["1", "2", "3", "4", "5"])


def judge_all(selector: Selector, oracle: Oracle, n: int) -> dict[str, list[str]]:
    """Run the selector to the end, ``n`` proposals at a time; every topic's proposals."""
    proposed: dict[str, list[str]] = {}
    for topic in selector.pool.topics:
        while docs := selector.propose(topic, n):
            proposed.setdefault(topic, []).extend(docs)
            selector.observe(topic, oracle(topic, docs))
    return proposed


@pytest.mark.shared
@pytest.mark.parametrize(("method", "params"), [
    ("stratified", {}), ("active", {}), ("active", {"weights": "prior-mass", "batch": 5}),
])
def test_budget_spent_exactly_without_duplicates(pool5: Pool, oracle: Oracle, method: str,
                                                 params: dict[str, Any]) -> None:
    selector = METHODS[method](pool5, Budget(rate=0.2), np.random.default_rng(1), **params)
    proposed = judge_all(selector, oracle, 2)
    sample = selector.sample()
    for topic in pool5.topics:
        budget = selector.budget_for(topic)
        assert len(proposed[topic]) == len(set(proposed[topic])) == budget
        judged = sample.judged()
        assert set(judged[judged["query_id"] == topic]["doc_id"]) == set(proposed[topic])
        ts = sample.topic(topic)
        design = judged_design(sample, ts)
        assert len(design.index) == budget
        assert np.allclose(design.pi, ts.inclusion[design.index])
        if method == "active":  # pi_i is given for the drawn documents only
            assert (ts.inclusion[ts.judged] > 0).all() and np.isnan(ts.inclusion[~ts.judged]).all()
        else:
            assert (ts.inclusion > 0).all()  # no pooled document has probability 0
    if method == "active":
        assert sample.draws is not None and sample.rounds is not None
        assert sample.round_probs is not None
        sizes = sample.rounds.groupby("query_id")["size"]
        assert (sizes.sum() == sample.draws.groupby("query_id").size()).all()
        per_round = sample.rounds.groupby("query_id")["size"].max()
        limit = [params.get("batch", selector.budget_for(t) // 3) for t in per_round.index]
        assert (per_round <= limit).all()
        sampled = sample.draws.groupby("query_id")["doc_id"].nunique()
        probs = sample.round_probs
        rounds = probs[probs["round"] > 0]
        assert (rounds.groupby("query_id").size() == sampled * sizes.size()).all()
        # round 0: every pooled document's p-bar, for the drawn ones n / sum_t N_t / p_t
        harmonic = probs[probs["round"] == 0].set_index(["query_id", "doc_id"])["probability"]
        assert len(harmonic) == len(sample.frame) and (harmonic >= 0).all()  # 0: undrawable
        n = sizes.sum()
        merged = rounds.merge(sample.rounds, on=["query_id", "round"])
        inverse = (merged["size"] / merged["probability"]).groupby(
            [merged["query_id"], merged["doc_id"]]).sum()
        expected = n.reindex(inverse.index.get_level_values(0)).to_numpy() / inverse
        np.testing.assert_allclose(harmonic.loc[inverse.index], expected, rtol=1e-12)


@pytest.mark.slow  # Monte Carlo
@pytest.mark.shared
def test_stratified_inclusion_probabilities_by_simulation(topic1: Pool, oracle: Oracle) -> None:
    budget, trials = 30, 5000
    docnos = topic1.docnos_of("1")
    reference = PriorStratifiedSelector(topic1, Budget(count=budget), np.random.default_rng(0))
    judge_all(reference, oracle, budget)
    sample = reference.sample()
    ts = sample.topic("1")
    design = judged_design(sample, ts)
    assert ts.inclusion.sum() == pytest.approx(budget)
    included = np.zeros((trials, topic1["1"].size), dtype=bool)
    for seed in range(trials):
        selector = PriorStratifiedSelector(topic1, Budget(count=budget),
                                           np.random.default_rng(seed + 1))
        included[seed] = np.isin(docnos, selector.propose("1", budget))
    assert (ts.docnos == docnos).all()  # the frame is the pool, in the same order
    pi = ts.inclusion
    se = np.sqrt(pi * (1 - pi) / trials)
    assert (np.abs(included.mean(axis=0) - pi) <= 4 * se + 1e-12).all()
    judged = design.index
    stratum = ts.stratum[judged]
    same = [(a, b) for a in range(len(judged)) for b in range(a + 1, len(judged))
            if stratum[a] == stratum[b] and design.pi[a] < 1][:4]
    other = [(a, b) for a in range(len(judged)) for b in range(a + 1, len(judged))
             if stratum[a] != stratum[b] and design.pi[a] < 1 and design.pi[b] < 1][:4]
    assert len(same) == len(other) == 4
    for a, b in same + other:
        joint = design.pi_joint[a, b]
        both = (included[:, judged[a]] & included[:, judged[b]]).mean()
        assert abs(both - joint) <= 4 * np.sqrt(joint * (1 - joint) / trials)


@pytest.mark.shared
def test_stratified_uniform_share_floors_every_inclusion_probability(topic1: Pool,
                                                                     oracle: Oracle) -> None:
    """uniform=a: each document's target is at least a n / N, so its pi_i (its stratum's
    n_h / N_h) is about that or more; without it the deepest documents fall far below."""
    budget, size = 30, topic1["1"].size
    least = {}
    for share in (0.0, 0.5):
        selector = PriorStratifiedSelector(topic1, Budget(count=budget),
                                           np.random.default_rng(0), uniform=share)
        judge_all(selector, oracle, budget)
        pi = selector.sample().topic("1").inclusion
        assert pi.sum() == pytest.approx(budget)
        least[share] = pi.min() * size / budget
    assert least[0.5] >= 0.5 * 0.8, least  # a n / N, less the strata's rounding
    assert least[0.0] < 0.3, least


def expected_next_probs(pool: Pool, sample: Sample, floor: float,
                        uniform: float) -> np.ndarray:
    """p_t over topic 1's pool after ``sample``, recomputed from its tables: P(s) from the HT
    core's AP estimates with pi_ij = pi_i pi_j, within-run AP-priors over each run's docs,
    mixed with 1/N by the uniform share."""
    tp, ts = pool["1"], sample.topic("1")
    design = judged_design(sample, ts)
    y = np.clip(ts.labels[design.index], 0, 1)
    joint = np.outer(design.pi, design.pi)
    np.fill_diagonal(joint, design.pi)
    in_pool = design.index  # the frame is the pool, in the same order
    ranks = np.zeros((tp.ranking.shape[0], len(in_pool)), dtype=np.int64)
    for s, row in enumerate(tp.ranking):
        for r, doc in enumerate(row[row != PAD]):
            ranks[s, in_pool == doc] = r + 1
    ap = average_precision(y, design.pi, joint, ranks).value
    present = tp.lengths > 0
    runs = (1 - floor) * ap / ap[present].sum() + floor * present / present.sum()
    probs = np.zeros(tp.size)
    for s, row in enumerate(tp.ranking):
        length = int((row != PAD).sum())
        tail = np.cumsum((1.0 / np.arange(1, length + 1))[::-1])[::-1]
        probs[row[:length]] += runs[s] * (1 + tail) / (2 * length)  # Aslam et al.'s prior
    return (1 - uniform) * probs + uniform / tp.size


@pytest.mark.shared
@pytest.mark.parametrize("uniform", [0.0, 0.3])
def test_active_draws_follow_the_reported_distribution(topic1: Pool, oracle: Oracle,
                                                       uniform: float) -> None:
    """The draws of a round follow p_t, and the Sample reports p_t: with a uniform share
    too, whose pi_i (through the AP estimates that steer P_t) must match the tables'."""
    size = topic1["1"].size
    selector = ActiveSelector(topic1, Budget(count=size), np.random.default_rng(3), batch=3,
                              floor=0.1, uniform=uniform)
    simulate(selector, oracle, batch=3, rounds=10)
    history = selector.sample()
    assert history.rounds is not None
    following = len(history.rounds) + 1
    assert (history.judged()["relevance"] >= 1).any()  # P_t is no longer uniform
    expected = expected_next_probs(topic1, history, 0.1, uniform)
    saved = json.loads(json.dumps(selector.state()))
    saved["params"]["batch"] = size  # one long next round: N_t = the budget left
    docnos = topic1.docnos_of("1")
    counts = np.zeros(size)
    seed = 0
    while counts.sum() < 20000:
        state = copy.deepcopy(saved)
        state["topics"]["1"]["rng"] = rng_state(np.random.default_rng(100 + seed))
        seed += 1
        resumed = ActiveSelector.restore(topic1, state)
        docs = resumed.propose("1", size)  # the whole next round's new documents
        resumed.observe("1", oracle("1", docs))
        sample = resumed.sample()
        assert sample.draws is not None and sample.round_probs is not None
        draws = sample.draws[sample.draws["round"] == following]
        counts += np.bincount(np.searchsorted(docnos, draws["doc_id"]), minlength=size)
        reported = sample.round_probs[sample.round_probs["round"] == following]
        at = np.searchsorted(docnos, reported["doc_id"])
        assert np.allclose(reported["probability"], expected[at], rtol=1e-9, atol=0)
    assert expected.sum() == pytest.approx(1.0)
    big = expected * counts.sum() >= 5
    observed, wanted = counts[big], expected[big] * counts.sum()
    if (~big).any():  # the rare documents pooled into one cell
        observed = np.append(observed, counts[~big].sum())
        wanted = np.append(wanted, expected[~big].sum() * counts.sum())
    assert chisquare(observed, wanted).pvalue > 1e-3
    share = counts / counts.sum()
    se = np.sqrt(expected * (1 - expected) / counts.sum())
    assert (np.abs(share - expected) <= 4 * se + 1e-12).all()


def tables(sample: Sample) -> dict[str, pd.DataFrame | None]:
    return {"frame": sample.frame, "draws": sample.draws, "rounds": sample.rounds,
            "round_probs": sample.round_probs}


@pytest.mark.shared
@pytest.mark.parametrize("method", ["stratified", "active"])
@pytest.mark.parametrize("params", [{}, {"uniform": 0.3}])
@pytest.mark.parametrize(("batch", "stop"), [(3, 1), (3, 4), (1, 2), (1, 7)])
def test_stop_save_load_continue_gives_the_same_sample(pool5: Pool, oracle: Oracle, method: str,
                                                       params: dict[str, Any], batch: int,
                                                       stop: int) -> None:
    cls = METHODS[method]
    whole = simulate(cls(pool5, Budget(rate=0.15), np.random.default_rng(7), **params),
                     oracle, batch=batch).sample()
    first = simulate(cls(pool5, Budget(rate=0.15), np.random.default_rng(7), **params),
                     oracle, batch=batch, rounds=stop)
    resumed = cls.restore(pool5, json.loads(json.dumps(first.state())))
    again = simulate(resumed, oracle, batch=batch).sample()
    for name, table in tables(whole).items():
        other = tables(again)[name]
        if table is None:
            assert other is None
        else:
            assert other is not None
            pd.testing.assert_frame_equal(table, other)
    assert whole.meta == again.meta


@pytest.mark.shared
@pytest.mark.parametrize("method", ["stratified", "active"])
def test_ht_estimates_from_the_samples(runs20: list[Run], pool5: Pool, oracle: Oracle,
                                       method: str, tmp_path: Path) -> None:
    selector = METHODS[method](pool5, Budget(rate=0.3), np.random.default_rng(11))
    sample = Sample.load(simulate(selector, oracle, batch=3).sample().save(tmp_path / "s"))
    result = estimate(sample, runs20, ["P@10~ht", "NumRel~ht"], depth=20)
    assert set(result["measure"]) == {"P@10~ht", "NumRel~ht"}
    assert len(result) == 2 * len(runs20) * (len(pool5.topics) + 1)
    assert np.isfinite(result["value"]).all() and (result["value"] >= 0).all()


@pytest.mark.shared
def test_one_active_trial_on_all_of_round_5(round5_pool: Pool, oracle: Oracle) -> None:
    """The benchmark's trial (benchmarks/selection_methods.py times it): every topic's budget
    is judged, every judged document has its rounds' probabilities and pi_i, every pooled
    one its p-bar."""
    pool = round5_pool
    selector = simulate(ActiveSelector(pool, Budget(rate=0.1), np.random.default_rng(0)),
                        oracle)
    sample = selector.sample()
    judged = sample.judged()
    assert len(judged) == sum(selector.budget_for(t) for t in pool.topics)
    assert (judged["inclusion"] > 0).all() and (judged["inclusion"] <= 1).all()
    assert sample.round_probs is not None and sample.rounds is not None
    per_topic = sample.round_probs.groupby("query_id").size()
    rounds = sample.rounds.groupby("query_id").size()
    drawn = judged.groupby("query_id").size()
    pooled = sample.frame.groupby("query_id").size()
    assert (per_topic == rounds * drawn + pooled).all()  # round 0: every pooled p-bar
