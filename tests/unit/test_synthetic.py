"""Tests of the seeded synthetic collection generator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sampleval.datasets.synthetic import SyntheticCollection, make_collection

KEY = ["query_id", "doc_id"]


@pytest.fixture(scope="module")
def coll() -> SyntheticCollection:
    return make_collection(np.random.default_rng(7))


def ranked(run: pd.DataFrame) -> pd.DataFrame:
    """Order a run as trec_eval does: score descending, then doc_id descending."""
    return run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])


def pool(runs: dict[str, pd.DataFrame], k: int) -> set[tuple[str, str]]:
    tops = [ranked(run).groupby("query_id").head(k) for run in runs.values()]
    return set(pd.concat(tops)[KEY].itertuples(index=False, name=None))


def precision_at_10(run: pd.DataFrame, qrels: pd.DataFrame) -> float:
    merged = ranked(run).merge(qrels, on=KEY, how="left")
    merged["rel"] = merged["relevance"].fillna(0) > 0
    top = merged.groupby("query_id", sort=False).head(10)
    return float(top.groupby("query_id")["rel"].sum().div(10).mean())


def test_same_seed_same_output_and_different_seed_differs() -> None:
    a, b = make_collection(np.random.default_rng(3)), make_collection(np.random.default_rng(3))
    c = make_collection(np.random.default_rng(4))
    assert a.runs.keys() == b.runs.keys()
    for name in a.runs:
        pd.testing.assert_frame_equal(a.runs[name], b.runs[name])
    pd.testing.assert_frame_equal(a.qrels, b.qrels)
    assert a.true_quality == b.true_quality
    assert not a.qrels.equals(c.qrels)
    assert not a.runs["run01"].equals(c.runs["run01"])


def test_shapes_and_types(coll: SyntheticCollection) -> None:
    assert list(coll.runs) == [f"run{i:02d}" for i in range(1, 13)]
    assert coll.runs.keys() == coll.true_quality.keys()
    assert all(0 < q < 1 for q in coll.true_quality.values())
    assert sorted(coll.true_quality.values())[-1] - sorted(coll.true_quality.values())[0] > 0.5
    short = 0
    for run in coll.runs.values():
        assert list(run.columns) == ["query_id", "doc_id", "score"]
        assert run["score"].dtype == np.float64
        assert not run.duplicated(KEY).any()
        sizes = run.groupby("query_id").size()
        assert sizes.max() <= 100
        short += int((sizes < 100).sum())
        assert run["doc_id"].str.fullmatch(r"D\d{6}").all()
        assert set(run["query_id"]) <= {str(t) for t in range(1, 21)}
    assert short > 0
    assert list(coll.qrels.columns) == ["query_id", "doc_id", "relevance"]
    assert pd.api.types.is_integer_dtype(coll.qrels["relevance"])
    assert not coll.qrels.duplicated(KEY).any()


def test_topic_without_relevant_and_topic_with_many(coll: SyntheticCollection) -> None:
    relevant = coll.qrels.assign(rel=coll.qrels["relevance"] > 0).groupby("query_id")["rel"].sum()
    assert len(relevant) == 20
    assert (relevant == 0).sum() >= 1
    assert relevant.max() >= 50
    assert set(coll.qrels["relevance"]) == {0, 1, 2}


def test_one_run_misses_a_topic(coll: SyntheticCollection) -> None:
    n_topics = [run["query_id"].nunique() for run in coll.runs.values()]
    assert sorted(n_topics) == [19] + [20] * 11


def test_some_run_has_score_ties(coll: SyntheticCollection) -> None:
    assert any(run.duplicated(["query_id", "score"]).any() for run in coll.runs.values())


@pytest.mark.parametrize("k", [5, 20])
def test_qrels_are_exactly_the_pool(k: int) -> None:
    coll = make_collection(np.random.default_rng(11), pool_depth=k)
    judged = set(coll.qrels[KEY].itertuples(index=False, name=None))
    assert judged == pool(coll.runs, k)


@pytest.mark.parametrize("fraction", [0.0, 0.25])
def test_unjudged_grade_only_when_asked(fraction: float) -> None:
    base = make_collection(np.random.default_rng(5))
    coll = make_collection(np.random.default_rng(5), unjudged_fraction=fraction)
    unjudged = (coll.qrels["relevance"] == -1).mean()
    assert unjudged == pytest.approx(fraction, abs=0.01)
    pd.testing.assert_frame_equal(coll.qrels[KEY], base.qrels[KEY])


def test_other_grades_and_sizes() -> None:
    coll = make_collection(
        np.random.default_rng(1), n_topics=3, n_runs=2, n_docs=300, depth=50, grades=(0, 1, 2, 3)
    )
    assert set(coll.qrels["relevance"]) <= {0, 1, 2, 3}
    assert all(run.groupby("query_id").size().max() <= 50 for run in coll.runs.values())


def test_invalid_parameters() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_topics"):
        make_collection(rng, n_topics=1)
    with pytest.raises(ValueError, match="grades"):
        make_collection(rng, grades=(1, 2))
    with pytest.raises(ValueError, match="unjudged_fraction"):
        make_collection(rng, unjudged_fraction=1.5)


@pytest.mark.parametrize("seed", range(5))
def test_precision_at_10_follows_true_quality(seed: int) -> None:
    coll = make_collection(np.random.default_rng(seed))
    p10 = pd.Series({name: precision_at_10(run, coll.qrels) for name, run in coll.runs.items()})
    quality = pd.Series(coll.true_quality)
    spearman = p10.rank().corr(quality.rank())
    assert spearman > 0.7
