"""Exact evaluation from runs reduced to their grades (``core.graded``, what ``evaluate`` and
``trec_eval`` stream) against the Pool path, and the numpy-only Arrow conversions it uses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sampleval.core._arrow import arrow_of, numpy_of, strings_of
from sampleval.core.graded import DENSE_CELLS, JudgedIndex
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.io.runs import read_runs, read_runs_as, write_run
from sampleval.measures.evaluation import evaluate, judged_index

MEASURES = ["AP", "P@5", "nDCG@3", "nDCG", "Rprec", "Bpref", "infAP", "RR", "Judged@5",
            "NumRet", "NumRelRet", "iprec_at_recall_0.20"]


def _collection(seed: int, docnos: list[str]) -> tuple[Qrels, list[Run]]:
    """Qrels with fractional and negative grades and a topic no run has; runs with ties,
    missing topics and topics the qrels lack."""
    rng = np.random.default_rng(seed)
    qrels = pd.DataFrame([(t, d, g) for t in ["1", "2", "10", "7"]
                          for d, g in zip(rng.choice(docnos, 12, replace=False),
                                          rng.choice([0, 1, 2, 0.5, -1], 12), strict=True)],
                         columns=["query_id", "doc_id", "relevance"])
    runs = []
    for i in range(4):
        rows = [(t, d, float(s)) for t in rng.choice(["1", "2", "10", "99"], 3, replace=False)
                for d, s in zip(rng.choice(docnos, 15, replace=False),
                                rng.choice([1.0, 0.5, 0.25, 0.5 + 1e-12], 15), strict=True)]
        runs.append(Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id",
                                                               "score"]), f"r{i}"))
    return Qrels.from_frame(qrels), runs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("long_docnos", [False, True])
def test_graded_path_equals_pool_path(seed: int, long_docnos: bool) -> None:
    prefix = "a-docno-longer-than-8-bytes-" if long_docnos else "d"
    qrels, runs = _collection(seed, [f"{prefix}{i}" for i in range(40)])
    for depth in (None, 4):
        for options in ({}, {"judged_only": True}, {"all_topics": True}, {"rel_level": 2}):
            streamed = evaluate(qrels, runs, MEASURES, depth=depth, **options)
            pooled = evaluate(qrels, Pool.from_runs(runs, depth=depth, topics=qrels.topics),
                              MEASURES, **options)
            pd.testing.assert_frame_equal(streamed, pooled, check_exact=True)


def test_sparse_index_equals_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels, runs = _collection(3, [f"d{i}" for i in range(40)])
    dense = evaluate(qrels, runs, MEASURES)
    monkeypatch.setattr("sampleval.core.graded.DENSE_CELLS", 0)
    assert judged_index(qrels, qrels.topics).line_of is None
    pd.testing.assert_frame_equal(evaluate(qrels, runs, MEASURES), dense, check_exact=True)
    assert DENSE_CELLS > 0


def test_index_keeps_file_order_and_marks_negative_grades() -> None:
    index = JudgedIndex.build(np.array(["2", "1", "2", "3"], dtype=object),
                              np.array(["a", "b", "c", "a"], dtype=object),
                              np.array([1.0, -1.0, 0.5, 2.0]), ["1", "2"])
    assert index.topics == ("1", "2")
    assert [g.tolist() for g in index.topic_grades] == [[], [1.0, 0.5]]
    assert index.pooled is not None and index.pooled.sum() == 1  # topic 3 left out
    assert np.isnan(index.grades[index.pooled]).all()


def test_read_runs_as_names_and_orders_like_read_runs(tmp_path: Path) -> None:
    _, runs = _collection(1, [f"d{i}" for i in range(40)])
    for i, run in enumerate(runs):
        write_run(Run(name="same-tag", table=run.table), tmp_path / f"run{i}.gz")
    with pytest.warns(UserWarning, match="share the tag"):
        names, sizes = read_runs_as(tmp_path, len)
    assert names == [f"run{i}" for i in range(4)]
    with pytest.warns(UserWarning):
        assert [len(r) for r in read_runs(tmp_path)] == sizes


def test_arrow_conversions_through_buffers() -> None:
    values = np.array([3, -1, 7], dtype=np.int32)
    array = arrow_of(values)
    assert array.type == pa.int32() and array.to_pylist() == [3, -1, 7]
    assert numpy_of(array.slice(1)).tolist() == [-1, 7]
    chunked = pa.chunked_array([pa.array([1.5, 2.5]), pa.array([3.5])])
    assert numpy_of(chunked).tolist() == [1.5, 2.5, 3.5]
    with_nulls = pa.array([1, None, 3], pa.int64()).slice(1)
    assert numpy_of(with_nulls, missing=-1).tolist() == [-1, 3]
    assert strings_of(["a", "", "é"]).to_pylist() == ["a", "", "é"]


def test_trec_eval_on_qrels_imports_neither_pandas_nor_numba(tmp_path: Path) -> None:
    """pyarrow imports pandas when an Arrow array first meets numpy; the qrels path converts
    through buffers, so a one-run trec_eval does not pay for pandas (nor numba)."""
    qrels, runs = _collection(2, [f"d{i}" for i in range(40)])
    (tmp_path / "qrels").write_text("".join(
        f"{q} 0 {d} {int(g)}\n" for q, d, g in qrels.frame[["query_id", "doc_id",
                                                             "relevance"]].itertuples(
            index=False)))
    write_run(runs[0], tmp_path / "run")
    script = ("import sys\nfrom sampleval.compat.trec_eval import run\n"
              f"run(['-q', '-m', 'all_trec', {str(tmp_path / 'qrels')!r}, "
              f"{str(tmp_path / 'run')!r}])\n"
              "print(sorted({'pandas', 'numba', 'scipy'} & set(sys.modules)), "
              "file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stderr.strip() == "[]"
    assert "map                   \tall\t" in done.stdout


def test_a_run_lacking_a_topic_scores_zero_with_all_topics() -> None:
    qrels = Qrels.from_frame(pd.DataFrame({"query_id": ["1", "7"], "doc_id": ["a", "b"],
                                           "relevance": [1, 1]}))
    run = Run.from_frame(pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0]}),
                         "r")
    values = evaluate(qrels, [run], ["iprec_at_recall_0.00", "AP"], all_topics=True)
    assert values["value"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.5, 0.5]


@pytest.mark.parametrize("all_topics", [False, True])
def test_tsv_from_arrays_equals_tsv_of_the_frame(all_topics: bool) -> None:
    """``sampleval evaluate -f tsv`` writes from the arrays: the same bytes as ``to_tsv`` of
    the DataFrame, per topic and combined, counts as integers, NaN empty, for runs in any
    order and with a shared name (the frame's order: the name's last position)."""
    from sampleval.io.formats import to_tsv
    from sampleval.measures.names import parse_measures
    from sampleval.measures.results import ExactResults

    measures = parse_measures(["AP", "NumRel", "GMAP", "iprec_at_recall_0.00", "P@5"])
    rng = np.random.default_rng(4)
    values = rng.random((3, len(measures), 3))
    values[:, 1] = rng.integers(0, 5, (3, 3))  # NumRel: a count
    values[1, 3, 1] = np.nan  # a NaN that stays (the run has the topic)
    present = np.array([[True, False, True], [True, True, False], [False, True, True]])
    for names in (["b", "a", "c"], ["a", "b", "a"]):
        results = ExactResults.of(names, ["2", "10", "1"], measures, values, present,
                                  all_topics)
        frame = results.frame()
        assert results.tsv() == to_tsv(frame)
        assert results.tsv(per_topic=False) == to_tsv(frame[frame["query_id"] == "all"])
    text = results.tsv()
    assert f"a\tall\tNumRel\t{int(results.combined[1, 2])}\n" in text
    assert "b\t10\tIPrec@0.0\t\n" in text


def test_evaluate_tsv_imports_no_pandas(tmp_path: Path) -> None:
    """The command writes TSV from arrays (pandas costs 0.3 s of CPU to import); its output
    equals the library's DataFrame written by ``to_tsv``."""
    from sampleval.io.formats import to_tsv

    qrels, runs = _collection(2, [f"d{i}" for i in range(40)])
    (tmp_path / "qrels").write_text("".join(
        f"{q} 0 {d} {g}\n" for q, d, g in qrels.frame[["query_id", "doc_id",
                                                      "relevance"]].itertuples(index=False)))
    paths = [tmp_path / f"run{i}" for i in range(len(runs))]
    for run, path in zip(runs, paths, strict=True):
        write_run(run, path)
    script = ("import sys\nfrom sampleval.cli import main\n"
              f"sys.argv = ['sampleval', 'evaluate', {str(tmp_path / 'qrels')!r}, "
              f"*{[str(p) for p in paths]!r}, '-m', 'AP,NumRel,nDCG@5', '-q', '-f', 'tsv']\n"
              "try:\n    main()\nfinally:\n"
              "    print(sorted({'pandas', 'numba', 'scipy'} & set(sys.modules)), "
              "file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stderr.strip() == "[]", done.stderr
    expected = to_tsv(evaluate(Qrels.from_frame(qrels.frame), read_runs(paths),
                               ["AP", "NumRel", "nDCG@5"]))
    assert done.stdout == expected


def test_repeat_check_by_flags_equals_hash_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """``has_repeats`` marks a table of flags when the key combinations are few, and
    counts hashed keys otherwise: the same answer, plain or dictionary columns."""
    from sampleval.core._arrow import has_repeats

    rng = np.random.default_rng(7)
    tables = []
    for repeat in (False, True):
        pairs = {(str(t), f"d{d}") for t, d in rng.integers(0, 30, (200, 2))}
        rows = sorted(pairs) + ([sorted(pairs)[5]] if repeat else [])
        query, doc = (list(c) for c in zip(*rows, strict=True))
        tables.append((repeat, pa.table({"query_id": pa.array(query),
                                         "doc_id": pa.array(doc).dictionary_encode()})))
    empty = pa.table({"query_id": pa.array([], pa.string()), "doc_id": pa.array([], pa.string())})
    for dense in (True, False):
        if not dense:
            monkeypatch.setattr("sampleval.core._arrow.DENSE_KEYS", 0)
        assert [has_repeats(t, ("query_id", "doc_id")) for _, t in tables] == [
            repeat for repeat, _ in tables]
        assert not has_repeats(empty, ("query_id", "doc_id"))


def test_sequential_row_sums_equal_accumulation() -> None:
    """``seqsum`` adds each row's values left to right, as trec_eval's loops do: equal to
    the last column of a cumulative sum to the bit (a pairwise sum differs in the last
    digits), for one row, two rows and many, narrow and wide."""
    from sampleval.measures.base import seqsum

    rng = np.random.default_rng(11)
    for runs, width in [(1, 1500), (2, 1000), (3, 1), (126, 1000), (5, 0), (40, 777)]:
        values = rng.random((runs, width)) * 10.0 ** rng.integers(-3, 7, (runs, width))
        values[rng.random((runs, width)) < 0.5] = 0.0
        expected = np.cumsum(values, axis=1)[:, -1] if width else np.zeros(runs)
        assert np.array_equal(seqsum(values), expected)
        assert np.array_equal(seqsum(values[:, ::-1]), np.cumsum(values[:, ::-1], axis=1)[
            :, -1] if width else np.zeros(runs))


def test_values_do_not_depend_on_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels, runs = _collection(5, [f"d{i}" for i in range(40)])
    frames = []
    for cores in (1, 3):
        monkeypatch.setattr("sampleval.measures.results.os.cpu_count", lambda cores=cores: cores)
        frames.append(evaluate(qrels, runs, MEASURES))
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)
