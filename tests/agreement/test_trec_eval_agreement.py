"""Exact evaluation agrees with trec_eval (through pytrec_eval) on real data, to 1e-9.

Round 5 of TREC-COVID (126 runs, 50 topics, full depth), round 1 (143 runs, depth 100) and
Cranfield (runs made by the project's own retrieval models), every measure, per topic and
mean, plus the options: relevance level, judged-only, depth, all topics.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets import cranfield_runs
from sampleval.datasets import read_qrels as read_cranfield_qrels
from sampleval.io import read_qrels, read_runs
from sampleval.measures.evaluation import MEAN_TOPIC, evaluate

pytestmark = pytest.mark.shared

# sampleval name -> pytrec_eval name
MEASURES = {
    "AP": "map", "P@5": "P_5", "P@20": "P_20", "R@100": "recall_100", "Rprec": "Rprec",
    "nDCG": "ndcg", "nDCG@10": "ndcg_cut_10", "nDCG@20": "ndcg_cut_20", "RR": "recip_rank",
    "Bpref": "bpref", "NumRel": "num_rel", "NumRet": "num_ret", "NumRelRet": "num_rel_ret",
    "AP@10": "map_cut_10",
}
PYTREC_MEASURES = {"map", "P.5,20", "recall.100", "Rprec", "ndcg", "ndcg_cut.10,20",
                   "recip_rank", "bpref", "num_rel", "num_ret", "num_rel_ret", "map_cut.10"}
# trec_eval's other measures that pytrec_eval (trec_eval 9.0.x inside) computes
MORE_MEASURES = {
    "GMAP": "gm_map", "gm_bpref": "gm_bpref", "infAP": "infAP", "binG": "binG", "G": "G",
    "ndcg_rel": "ndcg_rel", "Rndcg": "Rndcg", "NumQ": "num_q",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret", "SetP": "set_P", "SetR": "set_recall",
    "SetAP": "set_map", "SetF": "set_F", "set_relative_P": "set_relative_P",
    "utility": "utility", "relative_P@5": "relative_P_5", "relative_P@100": "relative_P_100",
    "Success@1": "success_1", "Success@10": "success_10", "Rprec_mult@0.2": "Rprec_mult_0.20",
    "Rprec_mult@1.6": "Rprec_mult_1.60", "Rprec_mult@2.0": "Rprec_mult_2.00",
}
PYTREC_MORE = {"gm_map", "gm_bpref", "infAP", "binG", "G", "ndcg_rel", "Rndcg", "num_q",
               "num_nonrel_judged_ret", "set_P", "set_recall", "set_map", "set_F",
               "set_relative_P", "utility", "relative_P.5,100", "success.1,10", "Rprec_mult",
               "iprec_at_recall", "11pt_avg"}
LEVELS = [i / 10 for i in range(11)]
# interpolated precision: trec_eval 10 takes the round(x * R)-th relevant document, 9.0.x
# (pytrec_eval) the int(x * R + 0.9)-th: they agree on the topics where both give the same
INTERPOLATED = {f"IPrec@{x}": f"iprec_at_recall_{x:.2f}" for x in LEVELS} | {
    "11pt_avg": "11pt_avg"}


def pytrec_runs(paths: list[Path]) -> dict[str, dict[str, dict[str, float]]]:
    """Each run file parsed by pytrec_eval, keyed by its tag."""
    runs = {}
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            tag = fh.readline().split()[5]
            fh.seek(0)
            runs[tag] = pytrec_eval.parse_run(fh)
    return runs


def reference(qrels: dict, runs: dict, measures: dict[str, str] = MEASURES,
              pytrec_measures: set[str] = PYTREC_MEASURES, **options: object) -> pd.DataFrame:
    """pytrec_eval's per-topic values and trec_eval's aggregate, as a tidy frame."""
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, pytrec_measures, **options)
    rows = []
    for run, ranking in runs.items():
        per_topic = evaluator.evaluate(ranking)
        for ours, theirs in measures.items():
            values = [v[theirs] for v in per_topic.values()]
            rows += [(run, q, ours, v[theirs]) for q, v in per_topic.items()]
            rows.append((run, MEAN_TOPIC, ours,
                         pytrec_eval.compute_aggregated_measure(theirs, values)))
    return pd.DataFrame(rows, columns=["run", "query_id", "measure", "value"])


def assert_agree(ours: pd.DataFrame, theirs: pd.DataFrame) -> None:
    """Same (run, topic, measure) rows, values within 1e-9."""
    key = ["run", "query_id", "measure"]
    merged = ours.merge(theirs, on=key, how="outer", suffixes=("", "_ref"), indicator=True)
    missing = merged[merged["_merge"] != "both"]
    assert missing.empty, f"rows only on one side:\n{missing.head()}"
    diff = (merged["value"] - merged["value_ref"]).abs()
    worst = merged.loc[diff.idxmax()]
    assert diff.max() <= 1e-9, f"largest difference {diff.max()} at\n{worst}"


def _round5(covid: Path, every: int = 1) -> tuple[Qrels, list[Run], dict, dict]:
    """Round 5's qrels and every ``every``-th run, ours and pytrec_eval's."""
    qrels_path = covid / "qrels" / "qrels.covid-round5.txt"
    paths = sorted((covid / "round5" / "runs").glob("*.gz"))[::every]
    with qrels_path.open() as fh:
        ref_qrels = pytrec_eval.parse_qrel(fh)
    return read_qrels(qrels_path), read_runs(paths), ref_qrels, pytrec_runs(paths)


@pytest.fixture(scope="module")
def round5(covid: Path) -> tuple[Qrels, list[Run], dict, dict]:
    """All 126 runs (the slow tests)."""
    return _round5(covid)


@pytest.fixture(scope="module")
def round5_subset(covid: Path) -> tuple[Qrels, list[Run], dict, dict]:
    """Every sixth run (21; the fast tests: reading all 126 twice took most of their time)."""
    return _round5(covid, 6)


@pytest.mark.slow
def test_round5_every_measure_matches_trec_eval(round5: tuple) -> None:
    qrels, runs, ref_qrels, ref_runs = round5
    assert len(runs) == 126
    ours = evaluate(qrels, runs, list(MEASURES))
    assert_agree(ours, reference(ref_qrels, ref_runs))


@pytest.mark.slow
@pytest.mark.parametrize("options", [{"relevance_level": 2}, {"judged_docs_only_flag": True},
                                     {"relevance_level": 2, "judged_docs_only_flag": True}])
def test_round5_options_match_trec_eval(round5: tuple, options: dict) -> None:
    qrels, runs, ref_qrels, ref_runs = round5
    subset = [r for r in runs if r.name in list(ref_runs)[::6]]
    ours = evaluate(qrels, subset, list(MEASURES),
                    rel_level=int(options.get("relevance_level", 1)),  # type: ignore[call-overload]
                    judged_only=bool(options.get("judged_docs_only_flag", False)))
    theirs = reference(ref_qrels, {r.name: ref_runs[r.name] for r in subset}, **options)
    assert_agree(ours, theirs)


@pytest.mark.slow
def test_round5_official_leaderboard_is_reproduced(covid: Path, round5: tuple) -> None:
    qrels, runs, _, _ = round5
    official = pd.read_csv(covid / "round5" / "leaderboard.csv").set_index("tag")
    ours = evaluate(qrels, runs, ["AP", "P@20", "nDCG@20", "Bpref"])
    means = ours[ours["query_id"] == MEAN_TOPIC].pivot(index="run", columns="measure",
                                                       values="value")
    columns = {"AP": "map", "P@20": "P@20", "nDCG@20": "ndcg@20", "Bpref": "bpref"}
    assert set(means.index) == set(official.index)
    for ours_name, column in columns.items():
        rounded = means[ours_name].round(4)
        expected = official.loc[means.index, column]
        assert np.allclose(rounded, expected, atol=1e-9), (
            f"{column}: {(rounded - expected).abs().idxmax()} differs")


def test_depth_cut_matches_trec_eval_cutoff_measures(round5_subset: tuple) -> None:
    """At depth 10, AP is trec_eval's map_cut_10 and NumRet is min(10, retrieved)."""
    qrels, runs, ref_qrels, ref_runs = round5_subset
    subset = runs[::2]
    cut = evaluate(qrels, subset, ["AP", "NumRet", "P@10"], depth=10)
    full = evaluate(qrels, subset, ["AP@10", "P@10"])
    theirs = reference(ref_qrels, {r.name: ref_runs[r.name] for r in subset},
                       measures={"AP@10": "map_cut_10"})
    cut_ap = cut[cut["measure"] == "AP"].assign(measure="AP@10")
    assert_agree(cut_ap, theirs)
    per_topic = cut[(cut["measure"] == "NumRet") & (cut["query_id"] != MEAN_TOPIC)]
    assert (per_topic["value"] <= 10).all() and (per_topic["value"] == 10).mean() > 0.99
    p10 = cut[cut["measure"] == "P@10"].reset_index(drop=True)
    assert np.array_equal(p10["value"], full[full["measure"] == "P@10"]["value"].to_numpy())


def test_all_topics_scores_missing_topics_zero(round5_subset: tuple) -> None:
    """trec_eval -c: every qrels topic counts; a topic the run lacks scores 0."""
    qrels, runs, ref_qrels, ref_runs = round5_subset
    run = runs[0]
    frame = run.to_frame()
    kept = frame[~frame["query_id"].isin(["3", "17", "42"])]
    partial = Run.from_frame(kept, name="partial")
    both = evaluate(qrels, [partial], ["AP", "P@20", "NumRel"])
    complete = evaluate(qrels, [partial], ["AP", "P@20", "NumRel"], all_topics=True)
    per_topic = reference(ref_qrels, {"partial": ref_runs[run.name]},
                          measures={"AP": "map", "P@20": "P_20", "NumRel": "num_rel"})
    per_topic = per_topic[per_topic["query_id"] != MEAN_TOPIC]
    kept_topics = per_topic[~per_topic["query_id"].isin(["3", "17", "42"])]
    for measure in ("AP", "P@20"):
        ref = kept_topics[kept_topics["measure"] == measure]["value"]
        mean_both = both[(both["query_id"] == MEAN_TOPIC) & (both["measure"] == measure)]
        mean_all = complete[(complete["query_id"] == MEAN_TOPIC)
                            & (complete["measure"] == measure)]
        assert mean_both["value"].item() == pytest.approx(ref.mean(), abs=1e-12)
        assert mean_all["value"].item() == pytest.approx(ref.sum() / 50, abs=1e-12)
    missing = complete[complete["query_id"] == "17"].set_index("measure")["value"]
    assert missing["AP"] == 0 and missing["P@20"] == 0
    assert missing["NumRel"] == per_topic[(per_topic["query_id"] == "17")
                                          & (per_topic["measure"] == "NumRel")]["value"].item()


@pytest.mark.slow
def test_round1_matches_trec_eval(covid: Path) -> None:
    qrels_path = covid / "qrels" / "qrels.covid-round1.txt"
    paths = sorted((covid / "round1" / "runs").glob("*.gz"))
    with qrels_path.open() as fh:
        ref_qrels = pytrec_eval.parse_qrel(fh)
    runs = read_runs(paths)
    assert len(runs) == 143
    ours = evaluate(read_qrels(qrels_path), runs, list(MEASURES))
    assert_agree(ours, reference(ref_qrels, pytrec_runs(paths)))


@pytest.mark.parametrize("level", [1, 3])
def test_cranfield_matches_trec_eval(cranfield_dir: Path, level: int) -> None:
    """Cranfield's codes mapped to grades 4 (complete answer) .. 1, runs of our own models."""
    runs = cranfield_runs(cranfield_dir, depth=100)
    frames = {run.name: run.to_frame() for run in runs}
    qrels_frame = read_cranfield_qrels(cranfield_dir).frame
    ref_qrels: dict[str, dict[str, int]] = {}
    for q, d, r in qrels_frame[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        ref_qrels.setdefault(q, {})[d] = int(r)
    ref_runs = {n: {q: dict(zip(g["doc_id"], g["score"].astype(float), strict=True))
                    for q, g in f.groupby("query_id")} for n, f in frames.items()}
    ours = evaluate(qrels_frame, runs, list(MEASURES), rel_level=level)
    assert_agree(ours, reference(ref_qrels, ref_runs, relevance_level=level))


def test_round5_more_measures_match_trec_eval(round5_subset: tuple) -> None:
    """gm_map, infAP, G, Rndcg, set measures, utility, relative_P, success, Rprec_mult ...:
    per topic and mean (pytrec_eval gives gm_map per topic as log(max(AP, 0.00001)))."""
    qrels, subset, ref_qrels, ref_runs = round5_subset
    ours = evaluate(qrels, subset, list(MORE_MEASURES))
    theirs = reference(ref_qrels, {r.name: ref_runs[r.name] for r in subset},
                       MORE_MEASURES, PYTREC_MORE)
    geometric = ours["measure"].isin(["GMAP", "gm_bpref"]) & (ours["query_id"] != MEAN_TOPIC)
    ours.loc[geometric, "value"] = np.log(np.maximum(ours.loc[geometric, "value"], 1e-5))
    assert_agree(ours, theirs)


def test_round5_interpolated_precision_matches_where_the_rules_agree(
        round5_subset: tuple) -> None:
    """IPrec@x and 11pt_avg agree with pytrec_eval on every topic where round(x R) equals
    int(x R + 0.9) for the 11 levels (and differ on the others, as trec_eval 10 does)."""
    qrels, subset, ref_qrels, ref_runs = round5_subset
    r = qrels.judged().assign(rel=lambda f: f["relevance"] >= 1).groupby("query_id")["rel"].sum()
    same = {t for t, n in r.items()
            if all(math.floor(x * n + 0.5) == int(x * n + 0.9) for x in LEVELS)}
    assert 10 <= len(same) < len(r)
    ours = evaluate(qrels, subset, list(INTERPOLATED))
    theirs = reference(ref_qrels, {r.name: ref_runs[r.name] for r in subset},
                       INTERPOLATED, PYTREC_MORE)
    assert_agree(ours[ours["query_id"].isin(same)], theirs[theirs["query_id"].isin(same)])
    differs = ours[~ours["query_id"].isin(same) & (ours["query_id"] != MEAN_TOPIC)].merge(
        theirs, on=["run", "query_id", "measure"], suffixes=("", "_ref"))
    assert (differs["value"] - differs["value_ref"]).abs().max() > 1e-3
