"""The everyday path (issue 27): every command takes the depth, frame and estimators of a
sample from one place (`sampleval.estimation.setup`), so that `compare` and `estimate` give
the same mean for a run, and plain measures (`-m AP`) mean the design's default estimator."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import CliResult
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import UsageError
from sampleval.estimation.compare import compare
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.estimation.setup import simple_random
from sampleval.estimation.spec import draws_reach_every_document, estimator_for
from sampleval.io import write_run
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate

DESIGNS = ("stratified", "uniform", "strata", "active", "importance", "dynamic")
POOL_DEPTH = 8  # below the runs' 40: a depth left out must mean this one, not all 40


@cache
def collection() -> tuple[list[Run], Qrels]:
    made = make_collection(np.random.default_rng(11), n_topics=5, n_runs=5, n_docs=200,
                           depth=40)
    qrels = Qrels.from_frame(made.qrels)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    # runs with every topic: a run's mean in compare is over the topics a pair shares
    return [r for r in runs if set(r.topics) == set(qrels.topics)], qrels


@cache
def drawn(method: str) -> Sample:
    runs, qrels = collection()
    selector = METHODS[method](Pool.from_runs(runs, depth=POOL_DEPTH), Budget(rate=0.5),
                               np.random.default_rng(3))
    return simulate(selector, qrels_oracle(qrels)).sample()


def means(rows: pd.DataFrame) -> dict[str, float]:
    mean = rows[rows["query_id"] == MEAN_TOPIC]
    return dict(zip(mean["run"], mean["value"].astype(float), strict=True))


def compared_means(table: pd.DataFrame) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in table.itertuples():
        out.setdefault(str(row.run_a), float(row.mean_a))
        out.setdefault(str(row.run_b), float(row.mean_b))
    return out


@pytest.mark.parametrize("method", DESIGNS)
def test_compare_means_equal_estimate_at_the_sample_depth(method: str) -> None:
    """On a sample pooled at depth 8 of 40-deep runs, a run's mean in compare is its
    estimate to the last digit, for compare's default estimator and for plain AP (before
    issue 27 compare cut the runs at full depth)."""
    runs, _ = collection()
    sample = drawn(method)
    assert sample.meta["pool_depth"] == POOL_DEPTH and len(runs) >= 3
    ap = estimator_for("AP", None, sample.design, draws_reach_every_document(sample))
    assert ap is not None
    for measure in (ap.name, None, "AP"):
        table = compare(sample, runs, measure, correction="none")
        got = compared_means(table)
        want = means(estimate(sample, runs, [str(table["measure"].iloc[0])]))
        assert got == want, (method, measure)
    deep = means(estimate(sample, runs, [str(table["measure"].iloc[0])], depth=None))
    assert deep != want  # the depth matters on this collection: the test can fail


@pytest.mark.parametrize("method", DESIGNS)
def test_plain_measures_mean_the_designs_default(method: str) -> None:
    """``AP``, ``P@10``, ``nDCG@10`` are estimated by the estimator the design prefers, and
    the results name it."""
    runs, _ = collection()
    sample = drawn(method)
    reach = draws_reach_every_document(sample)
    rows = estimate(sample, runs, ["AP", "P@10", "nDCG@10"])
    want = [estimator_for(b, c, sample.design, reach, simple_random(sample)) for b, c in
            (("AP", None), ("P", 10), ("nDCG", 10))]
    assert list(dict.fromkeys(rows["measure"])) == [s.name for s in want if s is not None]
    named = estimate(sample, runs, [s.name for s in want if s is not None])
    pd.testing.assert_frame_equal(rows, named)


def test_cli_compare_equals_estimate(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """The command line: compare's means are estimate's for three runs, with -m AP and
    without -M, on a depth-8 sample."""
    runs, _ = collection()
    sample_dir = tmp_path / "sample"
    drawn("stratified").save(sample_dir)
    paths = []
    for run in runs[:3]:
        paths.append(str(tmp_path / f"{run.name}.txt"))
        write_run(run, paths[-1])
    out = cli("compare", str(sample_dir), *paths, "-m", "AP", "-f", "json")
    table = json.loads(out.stdout)
    out = cli("estimate", str(sample_dir), *paths, "-m", "AP", "-f", "json")
    estimated = json.loads(out.stdout)
    measure = table[0]["measure"]
    assert measure == estimator_for("AP", None, "stratified").name
    for row in table:
        for side in ("a", "b"):
            want = estimated[row[f"run_{side}"]][MEAN_TOPIC][measure]["value"]
            assert row[f"mean_{side}"] == pytest.approx(want, rel=0, abs=5e-11)  # 10 digits
    shown = cli("compare", str(sample_dir), *paths, "-m", "AP")
    assert f"AP by {measure}" in shown.stdout


def test_unknown_plain_measure_is_one_line() -> None:
    runs, _ = collection()
    with pytest.raises(UsageError, match="no estimator of Bpref applies"):
        estimate(drawn("stratified"), runs, ["Bpref"])
    with pytest.raises(UsageError, match="takes a relevance level"):  # AP(rel=2) is taken
        estimate(drawn("stratified"), runs, ["nDCG(gains={1:1,2:3})@5"])


# -- item 6: the library takes what its neighbours hold ------------------------------------

def test_evaluate_takes_one_name_and_ir_measures_objects() -> None:
    """One measure as a string is one measure (it was split into letters), and ir_measures
    objects are their names (``ir_measures.nDCG@10`` raised KeyError: 0)."""
    ir_measures = pytest.importorskip("ir_measures")
    from sampleval.measures.evaluation import evaluate

    runs, qrels = collection()
    one = evaluate(qrels, runs, "nDCG@10")
    assert set(one["measure"]) == {"nDCG@10"}
    by_object = evaluate(qrels, runs, ir_measures.nDCG @ 10)
    pd.testing.assert_frame_equal(one, by_object)
    several = evaluate(qrels, runs, [ir_measures.AP, ir_measures.P @ 10, ir_measures.R @ 100,
                                     ir_measures.AP(rel=2)])
    named = evaluate(qrels, runs, ["AP", "P@10", "R@100", "AP(rel=2)"])
    pd.testing.assert_frame_equal(several, named)


def test_pytrec_eval_dicts_for_runs_and_qrels() -> None:
    """``{qid: {docid: score}}`` runs and ``{qid: {docid: rel}}`` qrels give the numbers the
    Run and Qrels objects give, and pytrec_eval's own."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from sampleval.measures.evaluation import evaluate

    runs, qrels = collection()
    run = runs[0]
    as_run = {str(q): dict(zip(g["doc_id"], g["score"].astype(float), strict=True))
              for q, g in run.to_frame().groupby("query_id")}
    as_qrels = {str(q): dict(zip(g["doc_id"], g["relevance"].astype(int), strict=True))
                for q, g in qrels.frame.groupby("query_id")}
    got = evaluate(as_qrels, as_run, ["AP", "nDCG@10"])
    want = evaluate(qrels, [run], ["AP", "nDCG@10"]).assign(run="run")
    pd.testing.assert_frame_equal(got, want)
    reference = pytrec_eval.RelevanceEvaluator(as_qrels, {"map", "ndcg_cut_10"}).evaluate(as_run)
    per_topic = got[got["query_id"] != MEAN_TOPIC].set_index(["query_id", "measure"])["value"]
    for topic, values in reference.items():
        assert per_topic[(topic, "AP")] == pytest.approx(values["map"], abs=1e-12)
    several = evaluate(qrels, {r.name: {q: dict(zip(g["doc_id"], g["score"], strict=True))
                                        for q, g in r.to_frame().groupby("query_id")}
                               for r in runs}, "AP")
    assert set(several["run"]) == {r.name for r in runs}
    estimated = estimate(drawn("stratified"), as_run, pytest.importorskip("ir_measures").AP)
    assert set(estimated["run"]) == {"run"}


@pytest.mark.parametrize("bad", [42, 3.5, {"1": [("d", 1.0)]}, {"1": {"d": "high"}}, [1, 2]])
def test_anything_else_is_one_usage_error(bad: object) -> None:
    from sampleval.measures.evaluation import evaluate

    runs, qrels = collection()
    with pytest.raises(UsageError) as as_runs:
        evaluate(qrels, bad, ["AP"])  # type: ignore[arg-type]
    with pytest.raises(UsageError) as as_measures:
        evaluate(qrels, runs, bad)  # type: ignore[arg-type]
    if isinstance(bad, dict):
        with pytest.raises(UsageError):
            evaluate(bad, runs, ["AP"])  # type: ignore[arg-type]
    for raised in (as_runs, as_measures):
        assert "\n" not in str(raised.value)


# -- item 8: a directory of runs with other files --------------------------------------------

def test_a_runs_directory_skips_other_files_with_one_warning(
        tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """A README and notes beside the runs are skipped with one warning line naming them;
    the runs are read as before (a README used to stop the command on its first line)."""
    from sampleval.io import read_runs

    runs, qrels = collection()
    folder = tmp_path / "runs"
    folder.mkdir()
    for run in runs:
        write_run(run, folder / f"{run.name}.txt")
    (folder / "README.md").write_text("# Runs\n\nThese runs were made by 3 systems in 2024.\n")
    (folder / "notes.txt").write_text("run01 used BM25 with k1 0.9 b 0.4\n")
    with pytest.warns(UserWarning, match=r"skipped 2 files that are not TREC runs "
                                         r"\(README.md, notes.txt\)") as said:
        got = read_runs(folder)
    assert len(said) == 1 and [r.name for r in got] == [r.name for r in runs]
    qrels_path = tmp_path / "qrels.txt"
    from sampleval.io import write_qrels

    write_qrels(qrels, qrels_path)
    out = cli("evaluate", qrels_path, folder, "-m", "AP")
    assert out.code == 0, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "README.md" in out.stderr


# -- item 10: short warnings, out-of-range values marked ---------------------------------------

def test_out_of_range_values_are_kept_and_marked(tmp_path: Path,
                                                 cli: Callable[..., CliResult]) -> None:
    """Two of ten documents judged, both relevant at ranks 1 and 2: AP~ht's per-topic value
    is above 1. It is kept, marked ``!`` in the table with a one-line footnote, and every
    warning is one short line pointing to the docs."""
    docs = [f"d{i}" for i in range(10)]
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": docs,
                                       "score": np.arange(10.0, 0.0, -1.0)}), name="r")
    sample = Sample.from_sample_qrels(pd.DataFrame({
        "query_id": "1", "iteration": "0", "doc_id": docs, "stratum": "A",
        "relevance": [1.0, 1.0] + [-1.0] * 8}))
    sample.save(tmp_path / "s")
    write_run(run, tmp_path / "r.txt")
    out = cli("estimate", tmp_path / "s", tmp_path / "r.txt", "-m", "AP~ht,P@2~ht", "-q")
    assert out.code == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "│" in line and " 1 " in line]
    assert rows and all("!" in row for row in rows)
    assert "! outside the measure's range: kept" in out.stdout
    warned = out.stderr.strip().splitlines()
    assert warned and all(len(line) <= 160 and "docs/guide/" in line for line in warned)
    value = float(cli("estimate", tmp_path / "s", tmp_path / "r.txt", "-m", "P@2~ht", "-q",
                      "-f", "tsv").stdout.splitlines()[1].split("\t")[3])
    assert value == pytest.approx(5.0)  # kept: what the unbiased estimator gives


# -- item 1/5 in simulate: the same choice of estimator -------------------------------------

@pytest.mark.parametrize("method", DESIGNS)
def test_simulate_plans_the_estimators_estimate_uses(method: str) -> None:
    """simulate's plan for a plain measure is the estimator `estimate -m` uses on a sample
    of the same method (one function: setup.estimator_of), and `-m` is simulate's short
    option for --measures."""
    from sampleval.cli._app import build_parser
    from sampleval.estimation.setup import setup_for
    from sampleval.simulation.targets import parse_target, plan_for

    sample = drawn(method)
    reach = draws_reach_every_document(sample)
    for name in ("AP", "P@10", "nDCG@10", "NumRel"):
        plan = plan_for(parse_target(name), sample.design, reach, simple_random(sample))
        assert plan is not None and plan.spec == setup_for(sample, name).specs[0], name
    args = build_parser().parse_args(["simulate", "runs/", "--qrels", "q", "--methods",
                                      "uniform", "--rates", "0.1", "--trials", "1", "-m",
                                      "AP,P@10", "-o", "out"])
    assert args.measures == ["AP,P@10"]


@pytest.mark.parametrize("method", ["stratified", "active", "importance"])
def test_the_campaign_leaderboard_takes_the_same_depth_and_estimators(method: str) -> None:
    """The live leaderboard's means are `estimate`'s on the same sample (its depth and
    default estimators come from setup_for, not from the campaign's own code)."""
    pytest.importorskip("sqlalchemy")
    from sampleval.campaign.organise import leaderboard

    runs, _ = collection()
    sample = drawn(method)
    rows, _ = leaderboard(sample, runs)
    got = {(r["run"], r["measure"]): r["value"] for r in rows}
    want = estimate(sample, runs)
    want = want[want["query_id"] == MEAN_TOPIC]
    assert got == {(r, m): float(v) for r, m, v in zip(want["run"], want["measure"],
                                                        want["value"], strict=True)}


@pytest.mark.parametrize("method", DESIGNS)
def test_compare_defaults_to_the_designs_ap_where_its_errors_are_centred(method: str) -> None:
    """Without a measure, compare uses the design's default AP where that is a design-based
    estimator (~ht, ~hh), so an active sample is compared by the unbiased AP~hh, not by
    AP~ht, whose adaptive bias is +0.007 to +0.012 on round 5; AP~ht where the default is a
    reference algorithm (statAP, xinfAP)."""
    runs, _ = collection()
    sample = drawn(method)
    table = compare(sample, runs, None, correction="none")
    ap = estimator_for("AP", None, sample.design, draws_reach_every_document(sample))
    assert ap is not None
    want = ap.name if ap.family in ("ht", "hh") else "AP~ht"
    assert table["measure"].iloc[0] == want, method
