"""``sampleval simulate`` and ``report`` on the synthetic collection: the grid and its seeds,
the splits, the truth, agreement with ``estimation.estimates.estimate``, the output tables, results
independent of --jobs and the backend, resuming after Ctrl-C, and the report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli
from sampleval.cli import run as cli_run
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import InputError, UsageError
from sampleval.estimation.estimates import estimate
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import estimator_for
from sampleval.io import write_qrels, write_run
from sampleval.measures.evaluation import MEAN_TOPIC, evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle
from sampleval.selection import simulate as judge
from sampleval.simulation.grid import BudgetSpec, Cell, parse_method, split_methods
from sampleval.simulation.runner import simulate
from sampleval.simulation.seeds import trial_rng, trial_seed
from sampleval.simulation.splits import make_splits, tag_prefix
from sampleval.simulation.summary import COLUMNS
from sampleval.simulation.targets import parse_target, plan_for
from sampleval.simulation.trial import ROW_COLUMNS, TOPIC_COLUMNS

SAMPLEVAL = Path(sys.executable).parent / "sampleval"
DEPTH = 20


@pytest.fixture(scope="module")
def collection() -> tuple[list[Run], Qrels]:
    """A small synthetic collection: 8 runs, 8 topics, qrels of the depth-30 pool (the
    simulations pool to depth 20)."""
    made = make_collection(np.random.default_rng(7), n_topics=8, n_runs=8, n_docs=600,
                           depth=40, pool_depth=30)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    return runs, Qrels.from_frame(made.qrels)


@pytest.fixture(scope="module")
def files(collection: tuple[list[Run], Qrels], tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[Path, Path]:
    """The collection as TREC files: a directory of runs and a qrels file."""
    runs, qrels = collection
    root = tmp_path_factory.mktemp("collection")
    (root / "runs").mkdir()
    for run in runs:
        write_run(run, root / "runs" / f"{run.name}.gz")
    write_qrels(qrels, root / "qrels.txt")
    return root / "runs", root / "qrels.txt"


GRID = {"methods": ["depth-k", "uniform", "active:batch=5;floor=0.1", "mtf"], "rates": [0.2, 0.4],
        "trials": 3, "measures": ["AP", "P@10", "NumRel~ht"], "depth": DEPTH}


@pytest.fixture(scope="module")
def simulated(collection: tuple[list[Run], Qrels], tmp_path_factory: pytest.TempPathFactory
              ) -> Path:
    runs, qrels = collection
    out = tmp_path_factory.mktemp("sim") / "out"
    with pytest.warns(UserWarning, match="NumRel~ht"):  # no NumRel~ht from pooled samples
        simulate(runs, qrels, output=out, figures=False, **GRID)  # type: ignore[arg-type]
    return out


# -- the grid ------------------------------------------------------------------------------------


def test_a_changed_default_makes_new_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell's key hashes every parameter's value, defaults included: resuming a directory
    after a default changed (``active``'s uniform share) computes new cells instead of mixing
    trials drawn under both defaults into one."""
    from sampleval.selection.active import ActiveSelector

    spec = parse_method("active")
    key = Cell(spec, BudgetSpec(rate=0.1), 0).key
    assert key == Cell(parse_method("active"), BudgetSpec(rate=0.1), 0).key
    paper = tuple(replace(p, default=0.0) if p.name == "uniform" else p
                  for p in ActiveSelector.parameters)
    monkeypatch.setattr(ActiveSelector, "parameters", paper)
    assert Cell(spec, BudgetSpec(rate=0.1), 0).key != key
    assert spec.resolved["uniform"] == 0.0 and not spec.reach_every_document


def test_method_strings_are_checked_against_the_declarations() -> None:
    assert parse_method(" active : batch = 5 ").text == "active:batch=5"
    assert parse_method("active:floor=0.5;batch=5").text == "active:batch=5;floor=0.5"
    for name, cls in METHODS.items():  # every declared parameter, given its default
        for param in cls.parameters:
            if param.default is not None:
                text = f"{name}:{param.name}={param.default}"
                assert parse_method(text).params == ((param.name, str(param.default)),)
    with pytest.raises(UsageError, match="did you mean active"):
        parse_method("activ")
    with pytest.raises(UsageError, match=r"no parameter .bath.*did you mean batch"):
        parse_method("active:bath=5")
    with pytest.raises(UsageError, match="batch must be a whole number"):
        parse_method("active:batch=many")
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_method("active:batch")
    # a comma inside a parameter value stays with its method
    assert split_methods(["importance:q=pairwise;runs=run01,run02,active", "mtf"]) == [
        "importance:q=pairwise;runs=run01,run02", "active", "mtf"]


def test_trial_seeds_depend_only_on_what_identifies_the_trial() -> None:
    def first(seed: int, method: str, budget: str, trial: int, split: int) -> int:
        return int(trial_rng(seed, method, budget, trial, split).integers(2**62))

    base = first(1, "active", "rate=0.1", 3, 0)
    assert base == first(1, "active", "rate=0.1", 3, 0)
    others = {first(2, "active", "rate=0.1", 3, 0), first(1, "mtf", "rate=0.1", 3, 0),
              first(1, "active", "rate=0.2", 3, 0), first(1, "active", "rate=0.1", 4, 0),
              first(1, "active", "rate=0.1", 3, 1)}
    assert base not in others and len(others) == 5
    # the same in another interpreter with another string hash seed (not Python's hash())
    code = ("from sampleval.simulation.seeds import trial_seed; "
            "print(trial_seed(1, 'active', 'rate=0.1', 3, 0).generate_state(4).tolist())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert json.loads(other.stdout) == trial_seed(1, "active", "rate=0.1", 3, 0
                                                  ).generate_state(4).tolist()


def test_plans_follow_the_families_declarations() -> None:
    ap = parse_target("AP")
    for name, cls in METHODS.items():
        plan = plan_for(ap, cls.design)
        if cls.design == "pooled":  # no family: the exact measure on the judged documents
            assert plan is not None and plan.spec is None and plan.r_exact
            assert plan.estimator == "AP (judged)"
        else:
            preferred = estimator_for("AP", None, cls.design)
            assert (plan.spec if plan else None) == preferred, name
    given = parse_target("P@10~ht")
    assert given.exact.name == "P" and given.exact.cutoff == 10
    assert plan_for(given, "pooled") is None
    for design in FAMILIES["ht"].designs:
        plan = plan_for(given, design)
        assert plan is not None and plan.spec == given.given
        assert plan.r_spec is not None and plan.r_spec.name == "NumRel~ht"
    assert parse_target("xinfAP").exact.name == "AP"
    with pytest.raises(UsageError, match="unknown measure"):
        parse_target("MAPP")
    with pytest.raises(UsageError, match="no exact DCG@10"):
        parse_target("DCG@10~ht")


def test_plans_and_designs_follow_the_methods_parameters(
        collection: tuple[list[Run], Qrels]) -> None:
    """A plain P@10 on ``active``'s samples is ``P@10~hh`` with the default uniform share and
    ``P@10~ht`` without it (``active:uniform=0``), in the simulation's plans as in
    ``estimate``'s defaults; ``interval_coverage`` draws its designs with the parameters
    given."""
    from sampleval.simulation.runner import _plans
    from studies.interval_coverage import draw

    plans = _plans([parse_method("active"), parse_method("active:uniform=0")],
                   [parse_target("P@10")])
    assert [p.estimator for p in plans["active"]] == ["P@10~hh"]
    assert [p.estimator for p in plans["active:uniform=0"]] == ["P@10~ht"]
    runs, qrels = collection
    pool = Pool.from_runs(runs, depth=20, qrels=qrels)
    for design, share in (("active", 0.2), ("active:uniform=0", 0.0)):
        assert draw(design, pool, qrels, 0.1, 1).meta["params"]["uniform"] == share


def test_pool_subset_is_the_pool_of_those_runs(collection: tuple[list[Run], Qrels]) -> None:
    runs, _ = collection
    chosen = [runs[5], runs[2], runs[7]]
    subset = Pool.from_runs(runs, depth=DEPTH).subset([r.name for r in chosen])
    alone = Pool.from_runs(chosen, depth=DEPTH)
    assert subset.run_names == alone.run_names and subset.topics == alone.topics
    for topic in alone.topics:
        assert (subset.docnos_of(topic) == alone.docnos_of(topic)).all()
        assert np.array_equal(subset[topic].ranking, alone[topic].ranking)
        assert np.array_equal(subset[topic].lengths, alone[topic].lengths)


# -- splits --------------------------------------------------------------------------------------


def test_splits_of_every_leave_out_mode(tmp_path: Path) -> None:
    names = ["UPrrf93-wt-r5", "UPrrf102-wt-r5", "covidex.r5.2s", "BRPHJ_BM25", "BRPHJ_bert"]
    assert [tag_prefix(n) for n in names] == ["UPrrf", "UPrrf", "covidex", "BRPHJ", "BRPHJ"]
    assert make_splits(names, "none") == make_splits(names, "none", n_splits=3)
    by_prefix = make_splits(names, "group")
    assert [s.left_out for s in by_prefix] == ["BRPHJ", "UPrrf", "covidex"]
    assert by_prefix[1].contributing == (False, False, True, True, True)
    csv = tmp_path / "leaderboard.csv"
    csv.write_text("tag,team,contributed judgments\nUPrrf93-wt-r5,unique,yes\n"
                   "UPrrf102-wt-r5,unique,no\ncovidex.r5.2s,covidex,yes\n"
                   "BRPHJ_BM25,unique,yes\nBRPHJ_bert,brphj,no\nextra-run,other,yes\n")
    teams = make_splits(names, "group", csv)
    assert [s.left_out for s in teams] == ["brphj", "covidex", "unique"]
    assert teams[2].contributing == (False, False, True, False, True)
    (contributed,) = make_splits(names, "contributed", csv)
    assert contributed.contributing == (True, False, True, True, False)
    halves = make_splits(names, "half", n_splits=4, seed=3)
    assert halves == make_splits(names, "half", n_splits=4, seed=3)
    assert all(sum(s.contributing) == 2 for s in halves)
    assert len({s.contributing for s in halves}) > 1
    with pytest.raises(InputError, match=r"1 run.*not listed.*BRPHJ_bert"):
        csv.write_text("tag,team\nUPrrf93-wt-r5,a\nUPrrf102-wt-r5,a\ncovidex.r5.2s,b\n"
                       "BRPHJ_BM25,c\n")
        make_splits(names, "group", csv)
    with pytest.raises(InputError, match="no column 'contributed judgments'"):
        make_splits(names, "contributed", csv)
    with pytest.raises(UsageError, match="needs --groups"):
        make_splits(names, "contributed")


# -- the tables ----------------------------------------------------------------------------------


def test_tables_of_a_simulation(simulated: Path, collection: tuple[list[Run], Qrels]) -> None:
    runs, qrels = collection
    rows = pd.read_parquet(simulated / "trials.parquet")
    assert list(rows.columns) == ROW_COLUMNS
    means = rows[rows["topic"] == MEAN_TOPIC]
    cells = means.groupby(["method", "rate", "trial", "measure"], observed=True).size()
    assert (cells == len(runs)).all()
    # 4 methods x 2 rates x 3 trials x 3 measures, less NumRel~ht for the 2 pooled methods
    assert len(cells) == 4 * 2 * 3 * 3 - 2 * 2 * 3
    estimators = means.groupby(["method", "measure"], observed=True)["estimator"].first()
    assert estimators["mtf", "AP"] == "AP (judged)"
    assert estimators["uniform", "AP"] == estimator_for("AP", None, "stratified",
                                                        simple_random=True).name
    # not xinfAP (issue 9); the Taylor-jackknife correction on simple random samples (issue 29)
    assert estimators["uniform", "AP"] == "AP~ht(bias=taylor-jackknife)"
    assert estimators["active:batch=5;floor=0.1", "NumRel~ht"] == "NumRel~ht"
    assert means["contributed"].all() and (means["split"] == 0).all()
    # the truth: the exact measure with the depth-20 pool judged in full by the qrels ...
    pool = Pool.from_runs(runs, depth=DEPTH)
    census = pool.with_labels(qrels)
    judged = pd.concat([pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos_of(tp.topic),
                                      "relevance": np.nan_to_num(tp.labels)})
                        for tp in census])
    exact = evaluate(Qrels.from_frame(judged), pool, ["AP", "P@10"])
    official = evaluate(qrels, runs, ["AP", "P@10"], depth=DEPTH)
    first = rows[(rows["trial"] == 0) & (rows["method"] == "uniform") & (rows["rate"] == 0.2)]
    for measure in ("AP", "P@10"):
        mine = first[first["measure"] == measure].set_index(["run", "topic"])
        for table, column in ((exact, "truth"), (official, "truth_qrels")):
            want = table[table["measure"] == measure].set_index(["run", "query_id"])["value"]
            got = mine[column].reindex(want.index)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # ... the qrels judge documents beyond depth 20, so R and AP differ there
    assert not np.allclose(first["truth"], first["truth_qrels"])


@pytest.mark.slow
def test_topic_counts_say_what_each_sample_reached(
        simulated: Path, collection: tuple[list[Run], Qrels], tmp_path: Path) -> None:
    """trial_topics.parquet: relevant pooled documents, and those judged and reached (the
    universe: pooling's judged documents, uniform's whole pool, Dynamic Sampling's batches
    recounted from its own sample; undefined for active's with-replacement sample)."""
    runs, qrels = collection
    pool = Pool.from_runs(runs, depth=DEPTH)
    relevant = {tp.topic: int((np.nan_to_num(tp.labels) >= 1).sum())
                for tp in pool.with_labels(qrels)}
    topics = pd.read_parquet(simulated / "trial_topics.parquet")
    assert list(topics.columns) == TOPIC_COLUMNS
    assert len(topics) == 4 * 2 * 3 * len(pool.topics)
    assert (topics["relevant"] == topics["topic"].astype(str).map(relevant)).all()
    rows = pd.read_parquet(simulated / "trials.parquet")
    judged = rows[rows["topic"] != MEAN_TOPIC].groupby(
        ["method", "rate", "trial", "topic"], observed=True)["judged"].first()
    mine = topics.set_index(["method", "rate", "trial", "topic"])["judged"]
    pd.testing.assert_series_equal(mine.reindex(judged.index).astype(float), judged,
                                   check_names=False)
    for method in ("depth-k", "mtf"):
        own = topics[topics["method"] == method]
        assert (own["reached"] == own["judged"]).all()
        assert (own["relevant_reached"] == own["relevant_judged"]).all()
    uniform = topics[topics["method"] == "uniform"]
    sizes = uniform["topic"].astype(str).map({tp.topic: tp.size for tp in pool})
    assert (uniform["reached"] == sizes).all()
    assert (uniform["relevant_reached"] == uniform["relevant"]).all()
    assert topics.loc[topics["method"].str.startswith("active"), "reached"].isna().all()
    simulate(runs, qrels, ["dynamic"], budgets=[12], trials=1, measures=["AP"],
             output=tmp_path / "ds", depth=DEPTH, figures=False)
    ds = pd.read_parquet(tmp_path / "ds" / "trial_topics.parquet").set_index("topic")
    rng = trial_rng(0, "dynamic", "budget=12", 0, 0)
    frame = judge(METHODS["dynamic"](pool, Budget(count=12), rng), qrels_oracle(qrels)
                  ).sample().frame
    batches = frame[frame["stratum"] != "rest"]
    relevant_docs = set(qrels.frame.loc[qrels.frame["relevance"] >= 1, "doc_id"] + "\0"
                        + qrels.frame.loc[qrels.frame["relevance"] >= 1, "query_id"])
    for topic, reached in batches.groupby("query_id"):
        assert ds.loc[topic, "reached"] == len(reached) < pool[str(topic)].size
        assert ds.loc[topic, "relevant_reached"] == sum(
            f"{d}\0{topic}" in relevant_docs for d in reached["doc_id"])
    assert (ds["relevant_reached"] <= ds["relevant"]).all()
    assert (ds["relevant_reached"] >= ds["relevant_judged"]).all()


@pytest.mark.parametrize("method", ["uniform", "active:batch=5;floor=0.1"])
def test_trials_estimate_as_estimators_estimate_does(
        simulated: Path, collection: tuple[list[Run], Qrels], method: str) -> None:
    """Trial 1 of a cell, redone by hand with its seed, the selector and
    ``estimation.estimates.estimate``, gives the very rows simulate wrote."""
    runs, qrels = collection
    rows = pd.read_parquet(simulated / "trials.parquet",
                           filters=[("method", "==", method), ("trial", "==", 1),
                                    ("rate", "==", 0.4)])
    spec = parse_method(method)
    rng = trial_rng(0, spec.text, "rate=0.4", 1, 0)
    selector = spec.make(Pool.from_runs(runs, depth=DEPTH), Budget(rate=0.4), rng)
    sample = judge(selector, qrels_oracle(qrels)).sample()
    for measure, estimator in rows.groupby("measure", observed=True)["estimator"].first(
            ).items():
        want = estimate(sample, runs, [estimator], depth=DEPTH).set_index(
            ["run", "query_id"])
        got = rows[rows["measure"] == measure].set_index(["run", "topic"]).reindex(want.index)
        for column, theirs in (("estimate", "value"), ("lo", "lo"), ("hi", "hi")):
            np.testing.assert_allclose(got[column], want[theirs], rtol=1e-12, atol=1e-12,
                                       err_msg=f"{method} {measure} {column}")


def test_summary_follows_the_trials(simulated: Path) -> None:
    summary = pd.read_csv(simulated / "summary.csv")
    stats = pd.read_parquet(simulated / "trial_stats.parquet")
    assert list(summary.columns) == COLUMNS
    assert len(summary) == 4 * 2 * 3 - 2 * 2
    assert (summary["trials"] == 3).all() and (summary["samples"] == 3).all()
    np.testing.assert_allclose(summary["mse"], summary["bias_squared"] + summary["variance"],
                               rtol=1e-12)
    assert (summary["rms"] <= np.sqrt(summary["mse"]) + 1e-12).all()
    per_cell = stats.groupby(["method", "rate", "measure"], observed=True, sort=False)
    np.testing.assert_allclose(summary["rms"], per_cell["rms"].mean().to_numpy(), rtol=1e-12)
    assert (summary["sig_accuracy_min"] <= summary["sig_accuracy"] + 1e-12).all()
    assert (summary["sig_accuracy"] <= summary["sig_accuracy_max"] + 1e-12).all()
    pooled = summary[summary["method"].isin(["depth-k", "mtf"])]
    assert (pooled[pooled["method"] == "depth-k"]["variance"] < 1e-20).all()  # deterministic
    assert pooled["coverage"].isna().all()  # no intervals (mtf: random only in its first run)
    sampled = summary[summary["method"] == "uniform"]
    assert sampled["coverage"].between(0, 1).all() and (sampled["variance"] > 0).all()
    assert summary["r_corr"].between(-1, 1).all()


def test_a_census_is_the_truth(collection: tuple[list[Run], Qrels], tmp_path: Path) -> None:
    runs, qrels = collection
    summary = simulate(runs, qrels, ["depth-k", "uniform"], rates=[1.0], trials=1,
                       measures=["AP", "P@10"], output=tmp_path / "census", depth=DEPTH,
                       figures=False)
    exact = summary[summary["method"] == "depth-k"]
    assert (exact["rms"] == 0).all() and (exact["tau"] == 1).all()
    assert (exact["sig_accuracy"] == 1).all() and (exact["r_corr"] == 1).all()
    inferred = summary[summary["method"] == "uniform"]  # NIST's smoothing: within 1e-4
    assert (inferred["rms"] < 1e-4).all()


# -- reusability ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_leave_one_group_out(collection: tuple[list[Run], Qrels], tmp_path: Path) -> None:
    runs, qrels = collection
    groups = tmp_path / "groups.csv"
    teams = {r.name: f"team{i // 2}" for i, r in enumerate(runs)}  # 4 teams of 2 runs
    groups.write_text("run,team\n" + "".join(f"{r},{t}\n" for r, t in teams.items()))
    summary = simulate(runs, qrels, ["depth-k", "uniform"], rates=[0.3, 1.0], trials=2,
                       measures=["AP", "P@10"], output=tmp_path / "lgo", depth=DEPTH,
                       leave_out="group", groups=groups, figures=False)
    rows = pd.read_parquet(tmp_path / "lgo" / "trials.parquet")
    assert sorted(rows["split"].unique()) == [0, 1, 2, 3]
    for split, part in rows.groupby("split"):
        left = {r for r, team in teams.items() if team == f"team{split}"}
        assert set(part.loc[~part["contributed"], "run"]) == left
    # each split selects from the pool of the other groups' runs: depth-k's budget is 30% of
    # that pool
    pool = Pool.from_runs(runs, depth=DEPTH)
    means = rows[(rows["topic"] != MEAN_TOPIC) & (rows["method"] == "depth-k")
                 & (rows["rate"] == 0.3)]
    for split in range(4):
        kept = pool.subset([r for r, t in teams.items() if t != f"team{split}"])
        got = means[means["split"] == split].groupby("topic", observed=True)["judged"].first()
        want = {t: np.ceil(0.3 * kept[t].size) for t in got.index}
        assert got.to_dict() == want
    assert {"rms_left_out", "bias_left_out", "variance_contributed"} <= set(summary.columns)
    assert (summary["samples"] == 2 * 4).all()
    # judging the whole pool of the contributing runs gives them their exact P@10; the
    # left-out runs' unjudged documents count as not relevant: biased low
    census = summary[(summary["method"] == "depth-k") & (summary["rate"] == 1.0)
                     & (summary["measure"] == "P@10")].iloc[0]
    assert census["rms_contributed"] == 0 and census["bias_contributed"] == 0
    assert census["bias_left_out"] < 0 and census["rms_left_out"] > 0


# -- backends and resuming -----------------------------------------------------------------------

SMALL = {"methods": ["uniform", "active:batch=5;floor=0.1", "mtf"], "rates": [0.2, 0.3], "trials": 2,
         "measures": ["AP", "P@10"], "depth": DEPTH, "figures": False}


@pytest.mark.slow
def test_results_do_not_depend_on_jobs_or_backend(collection: tuple[list[Run], Qrels],
                                                  tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    runs, qrels = collection
    tables = {}
    for name, options in (("one", {"jobs": 1}), ("two", {"jobs": 2}),
                          ("dask", {"jobs": 1, "backend": "dask"})):
        simulate(runs, qrels, output=tmp_path / name, **options, **SMALL)  # type: ignore[arg-type]
        tables[name] = (pd.read_parquet(tmp_path / name / "trials.parquet"),
                        pd.read_parquet(tmp_path / name / "trial_stats.parquet").drop(
                            columns="seconds"))
    for name in ("two", "dask"):
        pd.testing.assert_frame_equal(tables[name][0], tables["one"][0])
        pd.testing.assert_frame_equal(tables[name][1], tables["one"][1])


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_keeps_finished_trials_and_the_same_command_resumes(
        collection: tuple[list[Run], Qrels], files: tuple[Path, Path], tmp_path: Path,
        jobs: int) -> None:
    """jobs 1: SIGINT to the main process; jobs 2: to the whole process group, as a
    terminal's Ctrl-C does (the workers too): every process is gone within seconds."""
    runs_dir, qrels_path = files
    out = tmp_path / "resumed"
    command = [str(SAMPLEVAL), "simulate", str(runs_dir), "--qrels", str(qrels_path),
               "--methods", "uniform,stratified,mtf,depth-k", "--rates", "0.1,0.2",
               "--trials", "2", "--measures", "AP,P@10", "--depth", str(DEPTH),
               "--jobs", str(jobs), "--no-report", "-o", str(out)]
    process = subprocess.Popen(  # Ctrl-C as in a terminal, even if pytest runs in the
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,  # background
        start_new_session=True, preexec_fn=_default_sigint)  # (where it is ignored)
    deadline = time.monotonic() + 120
    while not list(out.glob("parts/*/*.rows.parquet")) and time.monotonic() < deadline:
        time.sleep(0.01)
    if jobs == 1:
        process.send_signal(signal.SIGINT)
    else:
        os.killpg(process.pid, signal.SIGINT)
    sent = time.monotonic()
    _, stderr = process.communicate(timeout=60)  # returns once every process holding the
    assert time.monotonic() - sent < 15  # pipes (the workers too) is gone
    assert "Traceback" not in stderr
    assert process.returncode == 2, stderr
    assert "run the same command again to resume" in stderr
    assert stderr.strip().endswith("sampleval: error: interrupted")
    assert 0 < _trials_held(out) < 16  # 4 methods x 2 rates x 2 trials, stopped midway
    assert not (out / "trials.parquet").exists()
    again = run_cli(*command[1:])  # the same command, in this process (no start-up cost)
    assert again.code == 0, again.stderr
    assert _trials_held(out) == 16
    runs, qrels = collection
    simulate(runs, qrels, ["uniform", "stratified", "mtf", "depth-k"],
             rates=[0.1, 0.2], trials=2, measures=["AP", "P@10"],
             output=tmp_path / "whole", depth=DEPTH, figures=False)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "trials.parquet"),
                                  pd.read_parquet(tmp_path / "whole" / "trials.parquet"))
    timing = ["seconds_per_trial"]
    pd.testing.assert_frame_equal(pd.read_csv(out / "summary.csv").drop(columns=timing),
                                  pd.read_csv(tmp_path / "whole" / "summary.csv").drop(
                                      columns=timing))
    assert not (out / "report.html").exists()  # --no-report


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_stopping_the_pool_ends_running_workers() -> None:
    """backends._stop ends workers in the middle of a task (Python 3.11's shutdown forgets
    its processes: read after it, they were left running, and the interpreter's exit
    waited for their tasks), and workers started while SIGINT is held begin with it
    blocked (a Ctrl-C to the process group cannot interrupt their start-up)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from sampleval.simulation.backends import _sigint_held, _stop

    executor = ProcessPoolExecutor(max_workers=2,
                                   mp_context=multiprocessing.get_context("spawn"))
    with _sigint_held():
        mask = executor.submit(signal.pthread_sigmask, signal.SIG_BLOCK, [])
        for _ in range(2):
            executor.submit(time.sleep, 120)
    assert signal.SIGINT in mask.result(timeout=60)
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # restored
    processes = list(executor._processes.values())
    started = time.monotonic()
    _stop(executor)
    assert time.monotonic() - started < 10
    assert all(not p.is_alive() for p in processes)


def test_stopping_the_pool_ends_a_result_cut_off_mid_message() -> None:
    """A worker ended while sending its result leaves the pool's manager thread reading a
    message that never ends (here: a header announcing 1 MB, 5 bytes of it, written into the
    results pipe by hand); backends._stop must end that read, or the interpreter's exit
    waits for the thread for ever (the Ctrl-C resume test's hang under load)."""
    import multiprocessing
    import struct
    from concurrent.futures import ProcessPoolExecutor

    from sampleval.simulation.backends import _stop

    executor = ProcessPoolExecutor(max_workers=1,
                                   mp_context=multiprocessing.get_context("spawn"))
    assert executor.submit(int, 1).result(timeout=60) == 1  # the pool is up
    manager = executor._executor_manager_thread  # type: ignore[attr-defined]
    writer = executor._result_queue._writer  # type: ignore[attr-defined]
    os.write(writer.fileno(), struct.pack("!i", 1 << 20) + b"\x80\x04\x95ab")
    time.sleep(0.5)  # the manager is now inside recv()
    assert manager is not None and manager.is_alive()
    started = time.monotonic()
    _stop(executor)
    assert time.monotonic() - started < 5
    assert not manager.is_alive()


def _trials_held(out: Path) -> int:
    """The trials the parts of ``out`` hold (a part ``tFIRST-LAST`` holds LAST - FIRST + 1)."""
    held = 0
    for path in out.glob("parts/*/*.rows.parquet"):
        first, last = path.name.removesuffix(".rows.parquet")[1:].split("-")
        held += int(last) - int(first) + 1
    return held


def test_a_changed_grid_reuses_its_cells_and_other_inputs_are_refused(
        collection: tuple[list[Run], Qrels], tmp_path: Path) -> None:
    runs, qrels = collection
    out = tmp_path / "grow"
    options = {"measures": ["AP"], "output": out, "depth": DEPTH, "figures": False}
    simulate(runs, qrels, ["uniform"], rates=[0.2], trials=2, **options)  # type: ignore[arg-type]
    first = sorted(out.glob("parts/*/*.rows.parquet"))
    stamps = [p.stat().st_mtime_ns for p in first]
    summary = simulate(runs, qrels, ["uniform", "mtf"], rates=[0.2, 0.3], trials=3,
                       **options)  # type: ignore[arg-type]
    assert [p.stat().st_mtime_ns for p in first] == stamps  # kept, not recomputed
    assert len(summary) == 4 and (summary["trials"] == 3).all()
    rows = pd.read_parquet(out / "trials.parquet")
    assert sorted(rows["trial"].unique()) == [0, 1, 2]
    with pytest.raises(UsageError, match="other depth"):
        simulate(runs, qrels, ["uniform"], rates=[0.2], trials=2, measures=["AP"], output=out,
                 depth=DEPTH + 1, figures=False)
    with pytest.raises(UsageError, match="other estimators, measures"):
        simulate(runs, qrels, ["uniform"], rates=[0.2], trials=2, measures=["P@10"],
                 output=out, depth=DEPTH, figures=False)
    # a directory whose plain AP resolved to another estimator (xinfAP, the default of
    # stratified samples before) is not resumed under today's AP~ht
    manifest = json.loads((out / "experiment.json").read_text())
    today = "AP~ht(ap=ours,bias=taylor,variance=jackknife,few=completed,interval=bias-aware)"
    assert manifest["inputs"]["estimators"]["AP"]["stratified"] == f"{today}; R NumRel~ht"
    manifest["inputs"]["estimators"]["AP"]["stratified"] = "xinfAP; R inum_rel"
    (out / "experiment.json").write_text(json.dumps(manifest))
    said = (r"with other estimators \(AP on stratified samples: xinfAP; R inum_rel there, "
            r"AP~ht\(ap=ours,.*\); R NumRel~ht now\): give another -o")
    with pytest.raises(UsageError, match=said):
        simulate(runs, qrels, ["uniform"], rates=[0.2], trials=2,
                 **options)  # type: ignore[arg-type]
    # ... nor one made when an option's default was another (AP~ht's normal intervals)
    manifest["inputs"]["estimators"]["AP"]["stratified"] = (
        "AP~ht(ap=ours,bias=taylor,variance=jackknife,few=none,interval=normal); R NumRel~ht")
    (out / "experiment.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match=r"few=none,interval=normal\); R NumRel~ht there"):
        simulate(runs, qrels, ["uniform"], rates=[0.2], trials=2,
                 **options)  # type: ignore[arg-type]
    del manifest["inputs"]["estimators"]  # made before the record existed
    (out / "experiment.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match=r"other estimators \(it was made before simulate "
                                         r"recorded what each measure resolves to\)"):
        simulate(runs, qrels, ["uniform"], rates=[0.2], trials=2,
                 **options)  # type: ignore[arg-type]


# -- the command line and the report -------------------------------------------------------------


@pytest.mark.slow
def test_report_redraws_figures_and_page(simulated: Path) -> None:
    cli_run(["report", str(simulated), "--rate", "0.2"])
    for name in ("rms_tau", "scatter", "bias_variance", "r_ranges"):
        assert (simulated / "figures" / f"{name}.png").stat().st_size > 1000
        assert (simulated / "figures" / f"{name}.svg").exists()
    page = (simulated / "report.html").read_text()
    assert page.count("<img") == 4 and "Summary at rate 0.2" in page
    assert "active:batch=5" in page
    with pytest.raises(UsageError, match=r"no rate 0\.5"):
        cli_run(["report", str(simulated), "--rate", "0.5"])


def test_command_line_errors_are_one_line(files: tuple[Path, Path], tmp_path: Path) -> None:
    runs_dir, qrels_path = files
    base = ["simulate", str(runs_dir), "--qrels", str(qrels_path), "--rates", "0.1",
            "--trials", "1", "--measures", "AP", "-o", str(tmp_path / "x")]
    result = subprocess.run([str(SAMPLEVAL), *base, "--methods", "active:bath=2"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert result.stderr == ("sampleval: error: method 'active' has no parameter 'bath' (did "
                             "you mean batch?) (it takes: "
                             f"{', '.join(p.name for p in METHODS['active'].parameters)})\n")
    with pytest.raises(UsageError, match="--scheduler is for --backend dask"):
        cli_run([*base, "--methods", "uniform", "--scheduler", "tcp://localhost:1"])
    with pytest.raises(UsageError, match="no estimator of Bpref applies"):
        cli_run([*base[:-4], "--measures", "Bpref", "-o", str(tmp_path / "x"),
                 "--methods", "uniform"])
    assert not (tmp_path / "x" / "trials.parquet").exists()


def test_duplicates_mean_what_they_mean_for_estimate(files: tuple[Path, Path],
                                                     collection: tuple[list[Run], Qrels],
                                                     tmp_path: Path) -> None:
    """A run repeating a document in a topic stops the command (naming the file and the
    option) unless --duplicates first|last says which line counts."""
    runs_dir, qrels_path = files
    runs, _ = collection
    lines = [f"{r.query_id} Q0 {r.doc_id} {i + 1} {r.score} dup"
             for i, r in enumerate(runs[0].to_frame().itertuples())]
    first = lines[0].split()
    lines.append(f"{first[0]} Q0 {first[2]} {len(lines) + 1} -1000 dup")
    (tmp_path / "dup.txt").write_text("\n".join(lines) + "\n")
    base = ["simulate", str(tmp_path / "dup.txt"), *(str(p) for p in runs_dir.iterdir()),
            "--qrels", str(qrels_path), "--methods", "depth-k", "--budgets", "5",
            "--trials", "1", "--measures", "P@10", "--no-report", "-o"]
    with pytest.raises(InputError, match=r"dup\.txt.*--duplicates"):
        cli_run([*base, str(tmp_path / "error")])
    cli_run([*base, str(tmp_path / "first"), "--duplicates", "first"])
    rows = pd.read_parquet(tmp_path / "first" / "trials.parquet")
    assert "dup" in set(rows["run"]) and len(set(rows["run"])) == len(runs) + 1


# -- predictions ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_predictions_reach_selectors_and_ppi_estimates(
        collection: tuple[list[Run], Qrels], files: tuple[Path, Path], tmp_path: Path) -> None:
    """``--predictions`` guide stratified:size=residual and feed P@10~ppi; the rows are those
    of the selector and ``estimation.estimates.estimate`` given the same predictions, whatever --jobs;
    a ppi measure without predictions fails in one line before any run is read."""
    from sampleval.io.predictions import read_predictions, write_predictions
    from sampleval.simulation.predictors import flipped, pool_truth

    runs, qrels = collection
    runs_dir, qrels_path = files
    pool = Pool.from_runs(runs, depth=DEPTH)
    predicted = tmp_path / "predicted.txt.gz"
    write_predictions(flipped(pool_truth(pool, qrels), 0.3, np.random.default_rng(5)), predicted)
    base = ["simulate", str(runs_dir), "--qrels", str(qrels_path), "--methods",
            "stratified,stratified:size=residual", "--rates", "0.3", "--trials", "2",
            "--measures", "P@10~ppi,P@10", "-M", str(DEPTH), "--no-report"]
    for jobs in ("1", "2"):
        cli_run([*base, "--predictions", str(predicted), "-j", jobs,
                 "-o", str(tmp_path / jobs)])
    rows = pd.read_parquet(tmp_path / "1" / "trials.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "2" / "trials.parquet"), rows)
    estimators = rows.groupby("measure", observed=True)["estimator"].unique()
    assert [str(e) for e in estimators["P@10~ppi"]] == ["P@10~ppi"]
    assert "P@10~ppi" not in set(estimators["P@10"])

    predictions = read_predictions(predicted)
    for method in ("stratified", "stratified:size=residual"):
        spec = parse_method(method)
        selector = spec.make(pool, Budget(rate=0.3), trial_rng(0, spec.text, "rate=0.3", 1, 0),
                             predictions)
        assert (selector.predicted is not None) == (method != "stratified")
        sample = judge(selector, qrels_oracle(qrels)).sample()
        mine = rows[(rows["method"] == method) & (rows["trial"] == 1)]
        for measure in ("P@10~ppi", "P@10"):
            estimator = str(mine.loc[mine["measure"] == measure, "estimator"].iloc[0])
            want = estimate(sample, runs, [estimator], depth=DEPTH,
                            predictions=predictions).set_index(["run", "query_id"])
            got = mine[mine["measure"] == measure].set_index(["run", "topic"]).reindex(
                want.index)
            np.testing.assert_allclose(got["estimate"], want["value"], rtol=1e-12,
                                       atol=1e-12, err_msg=f"{method} {measure}")

    command = [*base[:1], str(tmp_path / "no-such-run"), *base[2:], "-o", str(tmp_path / "none")]
    command[command.index("--methods") + 1] = "stratified"
    missing = subprocess.run([str(SAMPLEVAL), *command],
                             capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2
    assert missing.stderr == ("sampleval: error: P@10~ppi needs predictions of relevance "
                              "(--predictions FILE; in the library, predictions=)\n")
    assert not (tmp_path / "none").exists()
    with pytest.raises(UsageError, match="no method or measure uses the predictions"):
        cli_run([*command[:command.index("--measures") + 1], "P@10", "--predictions",
                 str(predicted), "-o", str(tmp_path / "none")])


@pytest.mark.slow
def test_a_target_modifier_judges_until_confident(collection: tuple[list[Run], Qrels],
                                                  tmp_path: Path) -> None:
    """``uniform:target=AP~ht:0.2;start=5``: the cell's budget caps each topic,
    judging stops at the target, the judgments used are reported per trial, and the results
    do not depend on --jobs."""
    spec = parse_method("uniform:start=5;target=AP~ht:0.2")
    assert spec.text == "uniform:start=5;target=AP~ht:0.2" and spec.params == ()
    assert parse_method("strata:strategy=1stratum;target=AP:0.01").params == (
        ("strategy", "1stratum"),)
    with pytest.raises(UsageError, match="MEASURE:HALF_WIDTH"):
        parse_method("uniform:target=AP")
    with pytest.raises(UsageError, match="start= applies only with target="):
        parse_method("uniform:start=5")
    with pytest.raises(UsageError, match="no estimator of AP applies"):
        parse_method("depth-k:target=AP:0.01")
    runs, qrels = collection
    grid = {"methods": ["uniform:target=AP~ht:0.2;start=5"], "rates": [0.8],
            "trials": 2, "measures": ["AP"], "depth": DEPTH, "figures": False}
    tables = {}
    for jobs in (1, 2):
        summary = simulate(runs, qrels, output=tmp_path / str(jobs), jobs=jobs,
                           **grid)  # type: ignore[arg-type]
        tables[jobs] = (pd.read_parquet(tmp_path / str(jobs) / "trials.parquet"),
                        pd.read_parquet(tmp_path / str(jobs) / "trial_stats.parquet").drop(
                            columns="seconds"))
    pd.testing.assert_frame_equal(tables[2][0], tables[1][0])
    pd.testing.assert_frame_equal(tables[2][1], tables[1][1])
    targeted = tables[1][1]["judged"]  # per topic, mean over the topics
    pool = Pool.from_runs(runs, depth=DEPTH)
    budget = np.mean([np.ceil(0.8 * tp.size) for tp in pool])
    assert (targeted < budget).all() and (targeted >= 2 * 5).all()  # pilot + final phase
    assert summary["judged"].iloc[0] == pytest.approx(targeted.mean())
    means = tables[1][0].query("topic == 'all' and method == 'uniform:start=5;target=AP~ht:0.2'")
    assert ((means["hi"] - means["lo"]) / 2).max() <= 0.2
