"""The select-up-front methods: ``depth-k``, ``uniform`` and ``strata``.

Budgets spent exactly without repeats; inclusion probabilities checked by Monte Carlo on a real
topic; stopping after any round, saving the state as JSON and continuing (also in a fresh
process) gives the uninterrupted sample; the ``sample`` and ``methods`` commands end to end.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import conftest
from conftest import CliResult
from sampleval.core.inclusion import judged_design
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import SamplingWarning, UsageError
from sampleval.io import read_runs, write_qrels, write_run
from sampleval.selection import METHODS, Budget, Selector, qrels_oracle, simulate
from sampleval.selection.base import Oracle
from sampleval.selection.strata import (
    STRATEGIES,
    allocate,
    handout,
    parse_strata,
    within_ranks,
)

TESTS = Path(__file__).resolve().parent
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("depth-k", {}), ("depth-k", {"k": 3}), ("uniform", {}),
    *[("strata", {"strategy": s}) for s in STRATEGIES],
    ("strata", {"strata": "1-5:1,6-10:0.5,11-:0.2"}),
]


def synthetic() -> tuple[Pool, Qrels]:
    """Four topics, six runs pooled to depth 20 (a few topics miss runs or run short)."""
    collection = make_collection(np.random.default_rng(3), n_topics=4, n_runs=6, n_docs=400,
                                 depth=30)
    runs = [Run.from_frame(frame, name) for name, frame in collection.runs.items()]
    return Pool.from_runs(runs, depth=20), Qrels.from_frame(collection.qrels)


@pytest.fixture(scope="module")
def small() -> tuple[Pool, Oracle]:
    pool, qrels = synthetic()
    return pool, qrels_oracle(qrels)


def selector(pool: Pool, method: str, params: dict[str, Any], budget: Budget,
             seed: int = 5) -> Selector:
    return METHODS[method](pool, budget, np.random.default_rng(seed), **params)


# -- (a) budgets and repeats -----------------------------------------------------------------

@pytest.mark.parametrize(("method", "params"), CONFIGS)
@pytest.mark.parametrize("budget", [Budget(count=17), Budget(rate=0.3), Budget(count=10_000)])
def test_budget_spent_exactly_without_repeats(small: tuple[Pool, Oracle], method: str,
                                              params: dict[str, Any], budget: Budget) -> None:
    pool, oracle = small
    asked: dict[str, list[str]] = {t: [] for t in pool.topics}

    def recording(topic: str, docnos: list[str]) -> dict[str, float]:
        asked[topic] += docnos
        return oracle(topic, docnos)

    chosen = simulate(selector(pool, method, params, budget), recording, batch=4)
    frame = chosen.sample().frame
    for tp in pool:
        expected = chosen.budget_for(tp.topic)
        if "k" in params:  # the depth-k pool, cut by a smaller budget
            expected = min(expected, int((tp.best_rank() <= params["k"]).sum()))
        if params.get("strategy") == "pool":  # the deepest depth-k pool that fits
            pooled = np.cumsum(np.bincount(tp.best_rank()))
            expected = int(pooled[pooled <= expected].max(initial=0))
        assert len(asked[tp.topic]) == len(set(asked[tp.topic])) == expected
        judged = frame[(frame["query_id"] == tp.topic) & frame["relevance"].notna()]
        assert sorted(judged["doc_id"]) == sorted(asked[tp.topic])
    assert chosen.propose(pool.topics[0], 3) == []


def test_depth_k_takes_documents_rank_by_rank(small: tuple[Pool, Oracle]) -> None:
    pool, _ = small
    tp = pool[pool.topics[0]]
    chosen = selector(pool, "depth-k", {}, Budget(count=25))
    proposed = chosen.propose(tp.topic, 25)
    best = tp.best_rank()
    position = pd.Index(pool.docnos_of(tp.topic)).get_indexer(proposed)
    ranks = best[position]
    assert list(zip(ranks, proposed, strict=True)) == sorted(zip(ranks, proposed, strict=True))
    assert (ranks <= np.sort(best)[24]).all()


def test_voorhees_strategies_as_specified(small: tuple[Pool, Oracle]) -> None:
    """Issue 9, item 6: the default strategy is 2strata; pool is one exhaustive stratum (the
    deepest depth-k pool within the budget, the same whatever the seed, nothing random);
    3strata's third stratum (best ranks 31-) is sampled at a tenth of the second's rate."""
    pool, oracle = small
    assert selector(pool, "strata", {}, Budget(count=30)).params["strategy"] == "2strata"
    samples = [simulate(selector(pool, "strata", {"strategy": "pool"}, Budget(count=30),
                                 seed=seed), oracle).sample() for seed in (1, 2)]
    for tp in pool:
        best = tp.best_rank()
        pooled = np.cumsum(np.bincount(best))
        k = int(np.searchsorted(pooled, 30, side="right")) - 1
        for sample in samples:
            judged = sample.topic(tp.topic).judged
            assert (judged == (best <= k)).all() and 0 < judged.sum() <= 30
    frame = Pool.from_runs([Run.from_frame(pd.DataFrame({  # one run of 200 documents
        "query_id": "1", "doc_id": [f"d{i:03d}" for i in range(200)],
        "score": np.arange(200, 0, -1.0)}), "r")])
    three = selector(frame, "strata", {"strategy": "3strata"}, Budget(count=30))
    layout = three._layout(frame["1"], 30)  # type: ignore[attr-defined]
    sizes = np.bincount(layout.codes, minlength=len(layout.labels))
    rates = dict(zip(layout.labels, layout.counts / np.maximum(sizes, 1), strict=True))
    assert rates["1-10"] == 1.0 and sizes[list(layout.labels).index("31-")] == 170
    assert rates["31-"] == pytest.approx(rates["11-30"] / 10, abs=0.01)


def test_yilmaz4_is_depth_k_then_three_equal_strata_sampled_3_1_5_1() -> None:
    """Issue 9, item 6: the top stratum is the depth-k pool within half the budget; the rest,
    by best rank, in three strata of equal size that share the rest of the budget 3:1.5:1."""
    rng = np.random.default_rng(0)
    runs = [Run.from_frame(pd.DataFrame({
        "query_id": "1", "doc_id": [f"d{i:04d}" for i in rng.choice(3000, 300, replace=False)],
        "score": np.arange(300, 0, -1.0)}), f"r{r}") for r in range(8)]
    pool = Pool.from_runs(runs)
    budget = 400
    chosen = selector(pool, "strata", {"strategy": "yilmaz4"}, Budget(count=budget))
    layout = chosen._layout(pool["1"], budget)  # type: ignore[attr-defined]
    best = pool["1"].best_rank()
    top = layout.codes == 0
    k = int(best[top].max())
    assert top.sum() <= budget // 2 < (best <= k + 1).sum() and (top == (best <= k)).all()
    sizes = np.bincount(layout.codes)[1:]
    assert sizes.max() - sizes.min() <= 1
    counts = layout.counts[1:]
    assert counts.sum() == budget - top.sum()
    assert counts / counts.sum() == pytest.approx([3 / 5.5, 1.5 / 5.5, 1 / 5.5], abs=0.01)
    deeper = [best[layout.codes == h] for h in (1, 2, 3)]
    assert deeper[0].max() <= deeper[1].min() and deeper[1].max() <= deeper[2].min()


def test_a_budget_that_starves_a_stratum_warns_with_the_fix(small: tuple[Pool, Oracle]
                                                            ) -> None:
    """Issue 10, item 3: 2strata with a budget smaller than the top-10 pool leaves the
    deeper stratum without a judgment; the selector says so once, with the budget that
    reaches it, and that budget does."""
    pool, oracle = small
    with pytest.warns(SamplingWarning, match=r"Judge at least (\d+) documents") as caught:
        simulate(selector(pool, "strata", {}, Budget(count=5)), oracle)
    assert len(caught) == 1
    need = int(re.search(r"at least (\d+)", str(caught[0].message))[1])  # type: ignore[index]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sample = simulate(selector(pool, "strata", {}, Budget(count=need)), oracle).sample()
    for topic in pool.topics:
        assert sample.topic(topic).strata()[1].min() >= 1


def test_allocation_meets_rates_and_scales_them_to_the_budget() -> None:
    sizes, rates = np.array([10, 20, 70]), np.array([1.0, 0.3, 0.1])
    for budget, counts in [(23, [10, 6, 7]), (5, [5, 0, 0]), (30, [10, 9, 11]),
                           (95, [10, 20, 65]), (200, [10, 20, 70])]:
        assert allocate(sizes, rates, budget).tolist() == counts
    # n_h = round(rate_h N_h) with the total kept: 3.5 + 2.5 = 6 -> 4 + 2 or 3 + 3, sum 6
    assert allocate(np.array([7, 5]), np.array([0.5, 0.5]), 6).sum() == 6


@pytest.mark.parametrize("text", ["1-10", "1-10:2", "0-5:1", "5-3:1", "1-10:1,5-20:0.5",
                                  "1-:1,5-:0.5", "1-10:0", "a-b:1"])
def test_bad_strata_specs_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_strata(text)


# -- (b) inclusion probabilities by Monte Carlo ---------------------------------------------

REPLICATES = 5000


@pytest.mark.shared
@pytest.mark.parametrize(("method", "params", "budget"), [
    ("uniform", {}, Budget(rate=0.3)),
    ("strata", {"strata": "1-3:1,4-10:0.4,11-20:0.15"}, Budget(count=59)),
])
def test_inclusion_probabilities_match_the_draws(covid: Path, method: str,
                                                 params: dict[str, Any],
                                                 budget: Budget) -> None:
    runs = read_runs(sorted((covid / "round5" / "runs").glob("*.gz"))[:20])
    pool = Pool.from_runs(runs, depth=20, topics=["1"])
    tp = pool["1"]
    chosen = selector(pool, method, params, budget, seed=11)
    sample = simulate(chosen, lambda t, d: dict.fromkeys(d, 1.0)).sample()
    layout = chosen._layout(tp, chosen.budget_for("1"))
    # the selector's draw is handout() on one row of uniform keys, in pool order
    keys = np.random.default_rng(11).random(tp.size)
    assert np.array_equal(np.sort(handout(layout.codes, layout.counts, keys)),
                          np.flatnonzero(sample.topic("1").judged))
    # 5000 draws of the same design at once
    keys = np.random.default_rng(12).random((REPLICATES, tp.size))
    drawn = within_ranks(layout.codes, keys) < layout.counts[layout.codes]
    assert (drawn.sum(axis=1) == layout.counts.sum()).all()
    ts = sample.topic("1")
    pi = ts.inclusion
    se = np.sqrt(pi * (1 - pi) / REPLICATES)
    assert (np.abs(drawn.mean(axis=0) - pi) <= 4 * se + 1e-12).all()
    design = judged_design(sample, ts)
    strata = ts.stratum[design.index]
    pairs = _pairs(strata)
    assert len(pairs) == (2 if method == "uniform" else 8)
    for a, b in pairs:
        i, j = design.index[a], design.index[b]
        joint = design.pi_joint[a, b]
        empirical = (drawn[:, i] & drawn[:, j]).mean()
        assert abs(empirical - joint) <= 4 * np.sqrt(joint * (1 - joint) / REPLICATES) + 1e-12


def _pairs(strata: np.ndarray) -> list[tuple[int, int]]:
    """Pairs of judged documents (positions among the judged): two within each stratum, one
    across each pair of neighbouring strata."""
    members = [np.flatnonzero(strata == h) for h in np.unique(strata)]
    within = [(int(m[i]), int(m[j])) for m in members if len(m) > 3
              for i, j in ((0, 1), (-2, -1))]
    across = [(int(a[0]), int(b[-1])) for a, b in pairwise(members)]
    return within + across


# -- (c) resumability ------------------------------------------------------------------------

RESUME = [("depth-k", {}), ("uniform", {}), ("strata", {"strategy": "3strata"}),
          ("strata", {"strategy": "yilmaz4"})]


@pytest.mark.parametrize(("method", "params"), RESUME)
def test_stop_save_restore_continue_gives_the_same_sample(small: tuple[Pool, Oracle],
                                                          method: str,
                                                          params: dict[str, Any]) -> None:
    pool, oracle = small
    budget, batch = Budget(count=7), 2
    whole = simulate(selector(pool, method, params, budget), oracle, batch=batch).sample()
    for rounds in range(5):  # 7 documents in batches of 2: 4 rounds, then nothing
        first = simulate(selector(pool, method, params, budget), oracle, batch=batch,
                         rounds=rounds)
        state = json.loads(json.dumps(first.state()))
        resumed = simulate(METHODS[method].restore(pool, state), oracle, batch=batch)
        pd.testing.assert_frame_equal(resumed.sample().frame, whole.frame)
        assert resumed.sample().meta == whole.meta
    if method != "depth-k":  # the draws do not depend on the batch size
        one_by_one = simulate(selector(pool, method, params, budget), oracle).sample()
        pd.testing.assert_frame_equal(one_by_one.frame, whole.frame)


def test_state_checks_its_method_and_pool(small: tuple[Pool, Oracle]) -> None:
    pool, _ = small
    state = selector(pool, "uniform", {}, Budget(count=5)).state()
    with pytest.raises(UsageError, match="method"):
        METHODS["strata"].restore(pool, state)
    other = Pool.from_runs([], topics=pool.topics)
    with pytest.raises(UsageError, match="another pool"):
        METHODS["uniform"].restore(other, state)
    chosen = selector(pool, "uniform", {}, Budget(count=5))
    with pytest.raises(UsageError, match="not proposed"):
        chosen.observe(pool.topics[0], {"no-such-doc": 1.0})


RESUME_SCRIPT = """
import json, sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], str(Path(sys.argv[1]).parent)]  # the module, its conftest
from test_selection_basic import synthetic
from sampleval.selection import METHODS, qrels_oracle, simulate
pool, qrels = synthetic()
state = json.loads(Path(sys.argv[2]).read_text())
resumed = METHODS[state["method"]].restore(pool, state)
simulate(resumed, qrels_oracle(qrels), batch=2).sample().save(sys.argv[3])
"""


def test_resuming_in_a_fresh_process(small: tuple[Pool, Oracle], tmp_path: Path) -> None:
    pool, oracle = small
    params, budget = {"strategy": "2strata"}, Budget(count=9)
    simulate(selector(pool, "strata", params, budget), oracle, batch=2).sample().save(
        tmp_path / "whole")
    first = simulate(selector(pool, "strata", params, budget), oracle, batch=2, rounds=2)
    (tmp_path / "state.json").write_text(json.dumps(first.state()))
    done = subprocess.run([sys.executable, "-c", RESUME_SCRIPT, str(TESTS),
                           str(tmp_path / "state.json"), str(tmp_path / "resumed")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "resumed" / "sample.json").read_text() == (
        tmp_path / "whole" / "sample.json").read_text()
    assert (tmp_path / "resumed" / "frame.parquet").read_bytes() == (
        tmp_path / "whole" / "frame.parquet").read_bytes()


# -- (d, e) the command line ----------------------------------------------------------------

def run_cli(args: Sequence[str | Path]) -> CliResult:
    return conftest.run_cli(*args)  # in this process: no interpreter start-up a call


def run_process(args: Sequence[str | Path]) -> subprocess.CompletedProcess[str]:
    """The console script in a process of its own (a hash seed of its own)."""
    return subprocess.run([str(Path(sys.executable).parent / "sampleval"), *map(str, args)],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.slow
@pytest.mark.shared
def test_sample_then_estimate(covid: Path, tmp_path: Path) -> None:
    runs = sorted((covid / "round5" / "runs").glob("*.gz"))[:8]
    qrels = covid / "qrels" / "qrels.covid-round5.txt"
    args = ["sample", "strata", *runs, "--qrels", qrels, "--rate", "0.1", "--depth", "20",
            "--seed", "1"]
    with ThreadPoolExecutor(2) as workers:
        done = list(workers.map(run_process, [[*args, "-o", tmp_path / d]
                                              for d in ("a", "b")]))
    for result in done:
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("strata: 50 topics, ") and result.stdout.count("\n") == 1
    assert (tmp_path / "a" / "frame.parquet").read_bytes() == (
        tmp_path / "b" / "frame.parquet").read_bytes()
    header = json.loads((tmp_path / "a" / "sample.json").read_text())
    assert header["design"] == "stratified" and header["meta"]["seed"] == 1
    estimated = run_cli(["estimate", tmp_path / "a", *runs, "-m", "xinfAP", "-f", "tsv"])
    assert estimated.returncode == 0, estimated.stderr
    lines = estimated.stdout.splitlines()
    assert lines[0] == "run\ttopic\tmeasure\tvalue\tlo\thi\tframe_share\timputed\tcoverage\testimator"
    assert len(lines) == 1 + len(runs)
    assert all(0 <= float(line.split("\t")[3]) <= 1 for line in lines[1:])


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two synthetic runs and their qrels as files."""
    folder = tmp_path_factory.mktemp("tiny")
    collection = make_collection(np.random.default_rng(1), n_topics=2, n_runs=2, n_docs=100,
                                 depth=10, tie_runs=0)
    for name, frame in collection.runs.items():
        write_run(Run.from_frame(frame, name), folder / f"{name}.run")
    write_qrels(Qrels.from_frame(collection.qrels), folder / "qrels.txt")
    return folder, folder / "qrels.txt"


BAD = [
    (["nope", "-n", "3"], "unknown selection method 'nope'"),
    (["strata", "-n", "3", "--param", "strategy=nope"], "strategy must be one of"),
    (["strata", "-n", "3", "--param", "color=1"], "has no parameter 'color'"),
    (["strata", "-n", "3", "--param", "strata=1-10:2"], "the rate must lie in [0, 1]"),
    (["strata", "-n", "3", "--param", "strategy"], "--param expects NAME=VALUE"),
    (["depth-k", "-n", "3", "--param", "k=0"], "parameter k must be at least 1"),
    (["depth-k", "-n", "3", "--param", "k=2.5"], "parameter k must be a whole number"),
    (["uniform", "--budget", "5", "--rate", "0.5"], "not allowed with argument -n/--budget"),
    (["uniform"], "one of the arguments -n/--budget -r/--rate is required"),
    (["uniform", "--rate", "1.5"], "must lie in (0, 1]"),
]


@pytest.mark.slow
def test_bad_requests_give_one_line_errors(tiny_files: tuple[Path, Path],
                                           tmp_path: Path) -> None:
    folder, qrels = tiny_files
    calls = [["sample", args[0], folder / "*.run", "--qrels", qrels, "-o", tmp_path / "out",
              *args[1:]] for args, _ in BAD]
    results = [run_cli(args) for args in [*calls, ["methods"]]]
    for (_, message), result in zip(BAD, results, strict=False):
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    listing = results[-1]
    assert listing.returncode == 0
    for name in ("depth-k", "uniform", "strata"):
        assert name in listing.stdout
    assert "stratified" in listing.stdout and "pooled" in listing.stdout
    assert not (tmp_path / "out").exists()


def test_a_starved_stratum_is_one_warning_line(tiny_files: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    """Issue 10, item 3 on the command line: a budget below the exhaustive top stratum writes
    the sample and says, in one line, which budget reaches every stratum."""
    folder, qrels = tiny_files
    result = run_cli(["sample", "strata", folder / "*.run", "--qrels", qrels, "-n", "3",
                      "--param", "strata=1-3:1,4-:0.5", "-o", tmp_path / "out", "--seed", "1"])
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sampleval: warning: strata: in 2 of 2 "
                                                   "topics"), result.stderr
    assert "--budget" in lines[0] and (tmp_path / "out" / "sample.json").exists()


def test_a_zero_rate_stratum_is_the_same_warning_line(tiny_files: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    """Issue 29, item 3: a stratum at rate 0 (here best ranks 6-, outside every range but
    the first) is unreachable at any budget; the same one line says so, with the share of
    the pool left out, and names no budget (none reaches it)."""
    folder, qrels = tiny_files
    result = run_cli(["sample", "strata", folder / "*.run", "--qrels", qrels, "-n", "8",
                      "--param", "strata=1-5:1,6-:0", "-o", tmp_path / "out", "--seed", "1"])
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sampleval: warning: strata: in "), (
        result.stderr)
    assert "No budget reaches 6- (rate 0)" in lines[0] and "--budget" not in lines[0]
    assert "% of the pooled documents are unreachable" in lines[0]
