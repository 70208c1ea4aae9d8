"""No silent wrong numbers (issue 10): each test below failed on commit e98edfc.

1. ``estimate`` uses the depth the sample was pooled at unless told otherwise (and warns then);
2. every estimate reports its run's frame coverage, with a warning below 90%;
4. an estimate that is mostly the estimator's imputation is flagged, and no default estimate is;
5. counts aggregate over topics by one rule, exact or estimated (summed);
6. a value does not depend on what else is computed beside it.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
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
from sampleval.estimation.estimates import default_estimates, estimate
from sampleval.io import read_qrels, read_runs, write_run
from sampleval.measures.evaluation import MEAN_TOPIC, evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate


@pytest.fixture(scope="module")
def collection() -> tuple[list[Run], Qrels]:
    """50 topics, 8 runs of 40 documents, qrels of the depth-10 pool."""
    made = make_collection(np.random.default_rng(10), n_topics=50, n_runs=8, n_docs=600,
                           depth=40, pool_depth=10, rel_rate=0.05)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    return runs, Qrels.from_frame(made.qrels)


def sampled(runs: list[Run], qrels: Qrels, method: str, depth: int, budget: Budget,
            seed: int = 1, **params: str) -> Sample:
    selector = METHODS[method](Pool.from_runs(runs, depth=depth), budget,
                               np.random.default_rng(seed), **params)
    return simulate(selector, qrels_oracle(qrels)).sample()


def means(results: pd.DataFrame) -> pd.Series:
    overall = results[results["query_id"] == MEAN_TOPIC]
    return overall.set_index(["run", "measure"])["value"]


# -- 1. the sample's depth is the default ----------------------------------------------------

def test_the_sample_depth_is_the_default(collection: tuple[list[Run], Qrels]) -> None:
    """Runs retrieve 40 documents, the sample pooled their top 10: estimating all 40 counts
    the documents below rank 10 that no run pooled as not relevant (the issue's AP~ht 0.49
    instead of 0.31)."""
    runs, qrels = collection
    sample = sampled(runs, qrels, "stratified", 10, Budget(rate=0.5))
    assert sample.meta["pool_depth"] == 10
    names = ["AP~ht", "P@10~ht", "xinfAP"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        default = estimate(sample, runs, names)
    assert not [w for w in caught if "depth" in str(w.message)]  # the default depth: silent
    at_ten = estimate(sample, runs, names, depth=10)
    pd.testing.assert_frame_equal(default, at_ten)
    with pytest.warns(UserWarning, match="depth all differs from the sample's pool depth "
                                         "10") as said:
        deeper = estimate(sample, runs, names, depth=None)
    depth_warning = next(str(w.message) for w in said if "pool depth" in str(w.message))
    assert "leave the depth out" not in depth_warning and len(depth_warning) < 200
    assert not np.allclose(means(deeper).xs("AP~ht", level="measure"),
                           means(default).xs("AP~ht", level="measure"))


# -- 2. frame coverage --------------------------------------------------------------------

def test_runs_outside_the_frame_are_reported(collection: tuple[list[Run], Qrels]) -> None:
    """A sample pooled from 3 runs, used to rank all 8: the other runs' frame share is the
    share of their top 10 inside the frame, and one warning line counts the runs below 90%
    and names the lowest."""
    from sampleval.estimation.estimates import MIN_FRAME_SHARE

    runs, qrels = collection
    sample = sampled(runs[:3], qrels, "uniform", 10, Budget(rate=0.5))
    with pytest.warns(UserWarning, match="in the sample's frame") as caught:
        results = estimate(sample, runs, ["AP~ht", "P@10~ht"])
    overall = results[results["query_id"] == MEAN_TOPIC].drop_duplicates("run").set_index(
        "run")["frame_share"]
    assert (overall[[r.name for r in runs[:3]]] == 1.0).all()
    # each outsider's coverage, counted directly: its top 10 docnos against the frame
    frame = set(zip(sample.frame["query_id"], sample.frame["doc_id"], strict=True))
    for run in runs[3:]:
        top = run.to_frame(10)
        inside = top.apply(lambda row: (row["query_id"], row["doc_id"]) in frame, axis=1)
        expected = inside.groupby(top["query_id"]).mean().mean()
        assert overall[run.name] == pytest.approx(expected, abs=1e-12)
    low = overall[overall < MIN_FRAME_SHARE]
    said = str(caught[0].message)
    assert len(low) and said.startswith(f"{len(low)} of {len(runs)} runs have under 90%")
    assert f"lowest {low.idxmin()} {low.min():.2f}" in said and "\n" not in said


def test_coverage_is_in_every_output(collection: tuple[list[Run], Qrels], tmp_path: Path,
                                     cli: Callable[..., CliResult]) -> None:
    """The TSV and JSON of the command line carry frame_share and imputed (and coverage,
    frame_share's old name, for one release), the table a frame share column; stderr warns
    of the runs below 90%."""
    runs, qrels = collection
    sampled(runs[:3], qrels, "uniform", 10, Budget(rate=0.5)).save(tmp_path / "s")
    for run in runs:
        write_run(run, tmp_path / f"{run.name}.txt")
    args = ["estimate", tmp_path / "s", *(tmp_path / f"{r.name}.txt" for r in runs),
            "-m", "P@10~ht"]
    tsv = cli(*args, "-f", "tsv")
    assert tsv.code == 0, tsv.stderr
    assert tsv.stdout.splitlines()[0].split("\t") == [
        "run", "topic", "measure", "value", "lo", "hi", "frame_share", "imputed", "coverage",
        "estimator"]
    assert tsv.stderr.startswith("sampleval: warning:") and "frame" in tsv.stderr
    cell = json.loads(cli(*args, "-f", "json").stdout)[runs[0].name]["all"]["P@10~ht"]
    assert cell["frame_share"] == cell["coverage"] == 1.0 and cell["imputed"] == 0.0
    table = cli(*args)
    assert "frame share" in table.stdout and "100%" in table.stdout


def test_an_unjudged_stratum_is_outside_the_frame() -> None:
    """A stratum with no judged document is outside the frame for every estimator (main's
    reading, Sample.keep_empty_strata False), so the coverage counts its documents out; NIST's
    reading (keep_empty_strata) keeps them in."""
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["a", "b", "c", "d"],
                          "relevance": [1.0, 0.0, np.nan, np.nan],
                          "stratum": ["top", "top", "deep", "deep"]})
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "c", "b", "d"],
                                       "score": [4.0, 3.0, 2.0, 1.0]}), name="r")
    for keep, expected in ((False, 0.5), (True, 1.0)):
        sample = Sample.from_sample_qrels(frame.assign(iteration="0", relevance=frame[
            "relevance"].fillna(-1.0)), keep_empty_strata=keep)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = estimate(sample, [run], ["P@4~ht"])
        assert got["frame_share"].tolist() == [expected, expected]


# -- 4. imputation ----------------------------------------------------------------------

def nist_measured_part(sample: Sample, run: Run, cutoff: int) -> pd.Series:
    """sample_eval's inum_rel_ret at rank k without its guesses, counted directly: per
    topic, sum over strata with a sampled document among the run's top k of d_h (s_h +
    1e-5) / (m_h + 3e-5), strata with none left out (sample_eval.pl, lines 300-305)."""
    top = run.to_frame(cutoff)
    frame = sample.frame.set_index(["query_id", "doc_id"])
    out = {}
    for topic, rows in top.groupby("query_id"):
        keys = [(topic, d) for d in rows["doc_id"] if (topic, d) in frame.index]
        inside = frame.loc[keys]
        total = 0.0
        for _, members in inside.groupby("stratum"):
            m = int(members["relevance"].notna().sum())
            s = int((members["relevance"] >= 1).sum())
            if m:
                total += len(members) * (s + 1e-5) / (m + 3e-5)
        out[topic] = total / cutoff
    return pd.Series(out)


def test_imputed_share_of_ip(collection: tuple[list[Run], Qrels]) -> None:
    """iP@10's imputed share is the part of the value that strata without a sampled document
    in the top 10 contribute (1/3 per document): value * (1 - share) is the measured part,
    counted independently here."""
    runs, qrels = collection
    sample = sampled(runs, qrels, "strata", 10, Budget(rate=0.2),
                     strata="1-3:0.5,4-:0.1")
    results = estimate(sample, runs, ["iP@10"]).set_index(["run", "query_id"])
    for run in runs[:2]:
        measured = nist_measured_part(sample, run, 10)
        rows = results.loc[run.name].drop(MEAN_TOPIC)
        got = rows["value"] * (1 - rows["imputed"])
        assert got.to_numpy() == pytest.approx(measured.reindex(rows.index).to_numpy(),
                                               abs=1e-9)
    assert (results["imputed"] > 0).any()


def test_mostly_imputed_estimates_are_flagged(collection: tuple[list[Run], Qrels]) -> None:
    """A uniform 5% sample: iP@10 is mostly sample_eval's 1/3 guesses, flagged (share above
    one half, and a warning); P@10~ht imputes nothing; no default estimate is mostly
    imputed."""
    from sampleval.estimation.imputation import MOSTLY

    runs, qrels = collection
    sample = sampled(runs, qrels, "uniform", 10, Budget(rate=0.05))
    with pytest.warns(UserWarning, match="iP@10: mostly imputed, not measured") as got:
        results = estimate(sample, runs, ["iP@10", "P@10~ht"])
    overall = results[results["query_id"] == MEAN_TOPIC].set_index(["measure", "run"])
    flagged = int((overall.loc["iP@10", "imputed"] > MOSTLY).sum())
    assert flagged and f"for {flagged} of {len(runs)} runs" in str(got[0].message)
    assert (overall.loc["P@10~ht", "imputed"] == 0).all()
    defaults = estimate(sample, runs)
    assert set(defaults["measure"]) == set(default_estimates(sample))
    assert (defaults.loc[defaults["query_id"] == MEAN_TOPIC, "imputed"] <= MOSTLY).all()


def test_estimates_outside_the_measure_s_range_are_explained() -> None:
    """Two of ten documents judged (one stratum), both relevant at ranks 1 and 2: AP-hat =
    (5 + 2.5 + 22.5) / 10 = 3 before the ratio correction (diagonal 1/(pi r) with pi = 0.2,
    the pair 1/(pi_12 r) with pi_12 = 2/90, over R-hat = 2/0.2), far above what AP can be.
    The per-topic value stays what the estimator gives, and a warning says where and why;
    the same judgments with the other eight judged (a census) give AP = 1 and no warning."""
    docs = [f"d{i}" for i in range(10)]
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": docs,
                                       "score": np.arange(10.0, 0.0, -1.0)}), name="r")
    judged = [1.0, 1.0] + [-1.0] * 8
    sample = Sample.from_sample_qrels(pd.DataFrame({
        "query_id": "1", "iteration": "0", "doc_id": docs, "stratum": "A",
        "relevance": judged}))
    with pytest.warns(UserWarning) as got:
        out = estimate(sample, [run], ["AP~ht(bias=none)", "AP~ht", "P@2~ht"])
    values = out[out["query_id"] == "1"].set_index("measure")["value"]
    assert values["AP~ht(bias=none)"] == pytest.approx(3.0)
    assert values["AP~ht"] > 1 and values["P@2~ht"] == pytest.approx(5.0)
    said = [str(w.message) for w in got if "per-topic estimates outside" in str(w.message)]
    assert len(said) == 3
    assert said[0].startswith("AP~ht(bias=none): 1 of 1 per-topic estimates outside [0, 1], "
                              "kept and marked !")
    census = Sample.from_qrels(Qrels.from_frame(pd.DataFrame({
        "query_id": "1", "doc_id": docs, "relevance": [1] * 2 + [0] * 8})))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = estimate(census, [run], ["AP~ht", "P@2~ht"])
    assert exact.set_index(["measure", "query_id"]).loc[("AP~ht", "1"), "value"] == 1.0


# -- 5. one aggregation rule --------------------------------------------------------------

def test_counts_sum_over_topics_exact_or_estimated(collection: tuple[list[Run], Qrels]) -> None:
    """On a census every estimator is exact, and the estimates of counts aggregate as the
    exact counts do: summed (the issue: NumRel 10910 beside NumRel~ht 208.82)."""
    runs, qrels = collection
    pool = Pool.from_runs(runs, depth=10, qrels=qrels)
    parts = [pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos_of(tp.topic),
                           "relevance": np.nan_to_num(tp.labels), "stratum": "1",
                           "inclusion": 1.0}) for tp in pool]
    census = Sample("census", pd.concat(parts, ignore_index=True), meta={"pool_depth": 10})
    exact = means(evaluate(census.to_qrels(), runs, ["NumRel", "AP"], depth=10))
    estimated = means(estimate(census, runs, ["NumRel~ht", "inum_rel", "AP~ht"]))
    for run in runs:
        total = exact[(run.name, "NumRel")]
        assert estimated[(run.name, "NumRel~ht")] == pytest.approx(total, abs=1e-9)
        assert estimated[(run.name, "inum_rel")] == pytest.approx(total, rel=1e-4)
        assert estimated[(run.name, "AP~ht")] == pytest.approx(exact[(run.name, "AP")],
                                                               abs=1e-12)


# -- 6. a value does not depend on what else is computed ---------------------------------

def test_a_value_does_not_depend_on_its_company(collection: tuple[list[Run], Qrels]) -> None:
    """The mean of a measure over topics is the same number alone or beside other measures
    and runs: the exactly rounded sum of its topics' values over their count."""
    runs, qrels = collection
    together = means(evaluate(qrels, runs, ["AP", "P@10", "nDCG@10", "NumRel"]))
    for run in runs:
        alone = means(evaluate(qrels, [run], ["P@10"]))
        assert alone[(run.name, "P@10")] == together[(run.name, "P@10")]
        per_topic = evaluate(qrels, [run], ["P@10"])
        values = per_topic.loc[per_topic["query_id"] != MEAN_TOPIC, "value"]
        assert alone[(run.name, "P@10")] == math.fsum(values) / len(values)
    sample = sampled(runs, qrels, "stratified", 10, Budget(rate=0.3))
    both = means(estimate(sample, runs, ["P@10~ht", "AP~ht"]))
    for run in runs[:3]:
        single = means(estimate(sample, [run], ["P@10~ht"]))
        assert single[(run.name, "P@10~ht")] == both[(run.name, "P@10~ht")]


@pytest.mark.shared
def test_the_issues_p10(covid: Path) -> None:
    """The issue's own case: UPrrf93-wt-r5's P@10 on round 5 prints 0.946 either way."""
    qrels = read_qrels(covid / "qrels" / "qrels.covid-round5.txt")
    run = read_runs(covid / "round5" / "runs" / "UPrrf93-wt-r5.gz")
    alone = means(evaluate(qrels, run, ["P@10"]))
    beside = means(evaluate(qrels, run, ["AP", "P@10", "NumRel"]))
    assert float(alone[("UPrrf93-wt-r5", "P@10")]) == float(beside[("UPrrf93-wt-r5", "P@10")])
    assert repr(float(beside[("UPrrf93-wt-r5", "P@10")])) == "0.946"

