"""`sampleval compare`: paired differences, tests and corrections (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import conftest
from conftest import CliResult
from sampleval import cli
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import SampleValError, UsageError
from sampleval.estimation.compare import adjust, compare, paired_differences
from sampleval.measures.evaluation import evaluate
from sampleval.simulation.metaeval import PairOutcomes, classify_pairs
from studies.compare_accuracy import equal_grade_copy, exact_per_topic


def test_paired_t_matches_scipy() -> None:
    """The difference, its t interval and p agree with scipy's paired t-test."""
    rng = np.random.default_rng(3)
    scores = pd.DataFrame(rng.random((30, 4)), columns=list("abcd"))
    scores.iloc[4, 2] = np.nan  # run c lacks topic 4: its pairs use 29 topics
    got = paired_differences(scores, "AP", correction="none")
    assert len(got) == 6
    for row in got.itertuples():
        both = scores[[row.run_a, row.run_b]].dropna()
        ref = stats.ttest_rel(both[row.run_a], both[row.run_b])
        interval = ref.confidence_interval(0.95)
        assert row.topics == len(both)
        assert row.diff == pytest.approx((both[row.run_a] - both[row.run_b]).mean())
        assert row.p == pytest.approx(ref.pvalue) and row.t == pytest.approx(ref.statistic)
        assert (row.lo, row.hi) == pytest.approx((interval.low, interval.high))
    means = scores.mean()
    assert all(means[a] >= means[b] for a, b in zip(got["run_a"], got["run_b"], strict=True))


def test_baseline_pairs_and_constant_differences() -> None:
    scores = pd.DataFrame({"base": [0.125, 0.25, 0.5], "same": [0.125, 0.25, 0.5],
                           "up": [0.25, 0.375, 0.625]})
    got = paired_differences(scores, "P@10~ht", baseline="base", correction="none")
    assert list(zip(got["run_a"], got["run_b"], strict=True)) == [("same", "base"),
                                                                    ("up", "base")]
    same, up = got.iloc[0], got.iloc[1]
    assert same["diff"] == 0 and same["p"] == 1 and not same["significant"]
    assert up["diff"] == 0.125 and up["p"] == 0 and up["significant"]
    with pytest.raises(UsageError, match="baseline 'x'"):
        paired_differences(scores, "AP", baseline="x")
    with pytest.raises(UsageError, match="at least two runs"):
        paired_differences(scores[["base"]], "AP")
    with pytest.raises(UsageError, match="fewer than two topics"):
        paired_differences(scores.iloc[:1], "AP")


def test_holm_and_bh() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # Holm by hand: sorted 0.005*4, 0.01*3, 0.03*2, 0.04*1 -> 0.02, 0.03, 0.06, max(0.06, 0.04)
    assert adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH by hand: sorted p*4/rank 0.02, 0.02, 0.04, 0.04 (step-up minimum from the top)
    assert adjust(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust(p, "none") == pytest.approx(p)
    assert adjust(np.array([0.6, 0.9]), "holm") == pytest.approx([1.0, 1.0])


def _collection() -> tuple[list[Run], Qrels]:
    data = make_collection(np.random.default_rng(7), n_topics=12, n_runs=5, n_docs=600,
                           depth=40, pool_depth=40)
    runs = [Run.from_frame(frame, name) for name, frame in data.runs.items()]
    return runs, Qrels.from_frame(data.qrels)


def test_census_gives_the_exact_paired_test() -> None:
    """On a census every estimate is the exact measure, so compare is the full-judgment
    paired t-test of the exact per-topic AP."""
    runs, qrels = _collection()
    census = Sample.from_qrels(qrels)
    assert census.design == "census"
    got = compare(census, runs, "AP~ht", correction="none", depth=40)
    exact = evaluate(qrels, runs, ["AP"], depth=40)
    exact = exact[exact["query_id"] != "all"].pivot(index="query_id", columns="run",
                                                    values="value")
    for row in got.itertuples():
        both = exact[[row.run_a, row.run_b]].dropna()
        ref = stats.ttest_rel(both[row.run_a], both[row.run_b])
        assert row.diff == pytest.approx((both[row.run_a] - both[row.run_b]).mean())
        assert row.p == pytest.approx(ref.pvalue)


def run_cli(*args: str) -> CliResult:
    return conftest.run_cli(*args)  # in this process: no interpreter start-up a call


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A synthetic collection's runs and a 40% uniform sample of its qrels (NIST format)."""
    root = tmp_path_factory.mktemp("compare")
    data = make_collection(np.random.default_rng(5), n_topics=10, n_runs=4, n_docs=500,
                           depth=30, pool_depth=30)
    names = []
    for name, frame in data.runs.items():
        path = root / f"{name}.txt"
        frame.assign(q0="Q0", rank=1, tag=name)[
            ["query_id", "q0", "doc_id", "rank", "score", "tag"]].to_csv(
            path, sep=" ", header=False, index=False)
        names.append(str(path))
    rng = np.random.default_rng(1)
    rel = data.qrels["relevance"].where(rng.random(len(data.qrels)) < 0.4, -1)
    data.qrels.assign(iter=0, stratum="all", relevance=rel)[
        ["query_id", "iter", "doc_id", "stratum", "relevance"]].to_csv(
        root / "sample.txt", sep=" ", header=False, index=False)
    return {"sample": str(root / "sample.txt"), "runs": " ".join(names), "dir": str(root),
            "first": next(iter(data.runs))}


@pytest.mark.slow
def test_cli_table_and_plot(files: dict[str, str]) -> None:
    plot = Path(files["dir"]) / "forest.png"
    table = run_cli("compare", files["sample"], *files["runs"].split(), "--plot", str(plot))
    assert table.returncode == 0, table.stderr
    assert "AP~ht: paired differences" in table.stdout  # the default on a stratified sample and "of 6 pairs significant" in table.stdout
    assert plot.stat().st_size > 1000


def test_cli_tsv_and_json(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    runs = files["runs"].split()
    cli.run(["compare", files["sample"], *runs, "-m", "xinfAP", "-f", "tsv", "--baseline",
             files["first"], "--correction", "bh"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == ["run_a", "run_b", "measure", "topics", "mean_a",
                                    "mean_b", "diff", "lo", "hi", "t", "df", "p", "p_adjusted",
                                    "significant", "estimator"]
    assert lines[1].split("\t")[-1] == "xinfAP(bias=none,variance=jackknife,few=moment)"
    assert len(lines) == 4 and all(line.split("\t")[1] == files["first"] for line in lines[1:])
    cli.run(["compare", files["sample"], *runs, "-m", "xinfAP", "-f", "json"])
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 6
    assert all(r["lo"] <= r["diff"] <= r["hi"] for r in records)


def test_cli_error_is_one_line(files: dict[str, str]) -> None:
    got = run_cli("compare", files["sample"], *files["runs"].split(), "--baseline", "nope")
    assert got.returncode == 2 and got.stderr.count("\n") == 1, got.stderr
    assert "the baseline 'nope' is not among the runs" in got.stderr


@pytest.mark.parametrize(("extra", "message"), [
    (["-m", "xinfAP,AP~ht"], "compare takes one measure"),
    (["-m", "AP~nope"], "nope"),
    (["-m", "P@10~is"], "needs a"),
])
def test_cli_errors(files: dict[str, str], extra: list[str], message: str) -> None:
    with pytest.raises(SampleValError, match=message):
        cli.run(["compare", files["sample"], *files["runs"].split(), *extra])


def test_equal_grade_copy_keeps_every_exact_measure() -> None:
    """A run and its copy with equal-grade documents traded: identical exact measures on
    every topic, different rankings (the null pairs of compare_accuracy)."""
    runs, qrels = _collection()
    run = runs[2]
    copy = equal_grade_copy(run, qrels, np.random.default_rng(0), depth=40)
    measures = ["AP", "P@5", "P@10", "nDCG@10", "nDCG", "Rprec", "RR", "R@20", "Bpref"]
    for measure in measures:
        a = exact_per_topic(qrels, [run], measure, 40).to_numpy()
        b = exact_per_topic(qrels, [copy], measure, 40).to_numpy()
        assert np.array_equal(a, b), measure
    before = run.to_frame(depth=40)["doc_id"].to_numpy()
    after = copy.to_frame()["doc_id"].to_numpy()
    assert sorted(before) == sorted(after) and (before != after).mean() > 0.5


def test_voorhees_accuracy_counts() -> None:
    true_sign = np.array([1, 1, -1, 1, -1, 1])
    true_sig = np.array([True, True, True, False, False, True])
    est_sign = np.array([1, 1, 1, -1, 1, 1])
    est_sig = np.array([True, False, True, True, False, True])
    got = classify_pairs(true_sign, true_sig, est_sign, est_sig)
    assert got == PairOutcomes(true_positive=2, true_negative=1, miss=1, false_alarm=1,
                               inversion=1)
    assert got.accuracy == 3 / 7
