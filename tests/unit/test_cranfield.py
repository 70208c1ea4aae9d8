"""Cranfield readers and the retrieval models, on the real collection in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets import (
    MODELS,
    cranfield_runs,
    rank,
    read_documents,
    read_qrels,
    read_queries,
)
from sampleval.errors import InputError


@pytest.fixture(scope="module")
def directory(cranfield_dir: Path) -> Path:
    """The Cranfield collection (conftest: fails in CI when missing, skips elsewhere)."""
    return cranfield_dir


@pytest.fixture(scope="module")
def runs(directory: Path) -> dict[str, pd.DataFrame]:
    return {run.name: run.to_frame() for run in cranfield_runs(directory, depth=100)}


def precision_at_10(run: pd.DataFrame, qrels: pd.DataFrame) -> float:
    """Mean P@10 over the queries with at least one relevant document."""
    relevant = qrels[qrels["relevance"] > 0]
    top = run.groupby("query_id").head(10)
    hits = top.merge(relevant, on=["query_id", "doc_id"]).groupby("query_id").size()
    queries = relevant["query_id"].unique()
    return float((hits.reindex(queries, fill_value=0) / 10).mean())


@pytest.mark.shared
def test_documents(directory: Path) -> None:
    documents = read_documents(directory)
    assert len(documents) == 1400
    assert documents["doc_id"].tolist() == [str(i) for i in range(1, 1401)]
    first = documents.iloc[0]
    assert first["title"].startswith("experimental investigation of the aerodynamics of a wing")
    assert first["text"].startswith(first["title"])
    stray = documents.iloc[239]  # document 240 has stray ".A" and ".B" lines inside its text
    assert stray["authors"] == "dean r. chapman"
    assert "application to turbulent separations is made" in stray["text"]


@pytest.mark.shared
def test_queries_are_numbered_in_file_order(directory: Path) -> None:
    queries = read_queries(directory)
    assert len(queries) == 225
    assert queries["query_id"].tolist() == [str(i) for i in range(1, 226)]
    third = queries.iloc[2]
    assert (third["query_id"], third["original_id"]) == ("3", "004")
    assert third["text"].startswith("what problems of heat conduction in composite slabs")


@pytest.mark.shared
def test_qrels_grades(directory: Path) -> None:
    qrels = read_qrels(directory).frame
    grade = qrels.set_index(["query_id", "doc_id"])["relevance"]
    assert grade["1", "184"] == 3  # line 1: "1 184 2"
    assert grade["1", "13"] == 1  # line 7: "1 13 4"
    assert grade["2", "12"] == 4  # line 30: "2 12 1"
    assert grade["40", "85"] == 2  # line 316: "40 85  3" (two spaces)
    for source in [("1", "486"), ("19", "499"), ("225", "1188")]:  # code -1: dropped
        assert source not in grade.index
    assert len(qrels) == 1837 - 225
    assert set(qrels["relevance"]) == {1, 2, 3, 4}
    assert not qrels.duplicated(["query_id", "doc_id"]).any()
    assert qrels["query_id"].nunique() == 225


@pytest.mark.shared
def test_bm25_beats_term_overlap(directory: Path, runs: dict[str, pd.DataFrame]) -> None:
    qrels = read_qrels(directory).frame
    assert set(runs) == {f"cran-{model}" for model in MODELS}
    bm25 = precision_at_10(runs["cran-bm25"], qrels)
    weak = precision_at_10(runs["cran-tf"], qrels)
    assert bm25 > weak + 0.05


@pytest.mark.shared
def test_runs_have_depth_rows_per_query(directory: Path, runs: dict[str, pd.DataFrame]) -> None:
    assert all(isinstance(run, Run) for run in cranfield_runs(directory, depth=5))
    for name, run in runs.items():
        assert list(run.columns) == ["query_id", "doc_id", "score", "rank"], name
        sizes = run.groupby("query_id").size()
        assert len(sizes) == 225 and (sizes == 100).all(), name
        assert not run.duplicated(["query_id", "doc_id"]).any(), name
        # ranked as trec_eval ranks: scores compared in single precision
        single = run.assign(score=run["score"].astype("float32"))
        assert single.groupby("query_id")["score"].is_monotonic_decreasing.all(), name


@pytest.mark.shared
def test_rank_is_deterministic(directory: Path) -> None:
    documents, queries = read_documents(directory), read_queries(directory)
    for model in MODELS:
        first = rank(documents, queries, model, depth=20)
        pd.testing.assert_frame_equal(first, rank(documents, queries, model, depth=20))
        assert (first.groupby("query_id").size() == 20).all()


def test_malformed_qrels_line(tmp_path: Path) -> None:
    (tmp_path / "cranqrel").write_text("1 184 2\n1 29 2\n1 x 3\n")
    with pytest.raises(InputError) as error:
        read_qrels(tmp_path)
    assert error.value.line == 3
    assert str(error.value).startswith(f"{tmp_path / 'cranqrel'}:3: ")


def test_bad_relevance_code(tmp_path: Path) -> None:
    (tmp_path / "cranqrel").write_text("1 184 2\n\n1 29 7\n")
    with pytest.raises(InputError, match=":3: relevance code"):
        read_qrels(tmp_path)


def test_duplicate_pair_keeps_highest_grade(tmp_path: Path) -> None:
    (tmp_path / "cranqrel").write_text("1 5 3\n1 5 1\n1 6 -1\n")
    qrels = read_qrels(tmp_path)
    assert isinstance(qrels, Qrels)  # the type sampleval.io.read_qrels gives
    frame = qrels.frame
    assert frame[["query_id", "doc_id", "relevance"]].values.tolist() == [["1", "5", 4.0]]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_documents(tmp_path / "nowhere")


def test_text_outside_field(tmp_path: Path) -> None:
    (tmp_path / "cran.qry").write_text(".I 001\n.W\nfirst query .\n.I 002\nstray text\n")
    with pytest.raises(InputError) as error:
        read_queries(tmp_path)
    assert error.value.line == 5
