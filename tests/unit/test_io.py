"""Readers and writers: TREC runs, qrels, sampled qrels and prels, plain or gzipped."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import InputError
from sampleval.io import (
    read_prels,
    read_qrels,
    read_run,
    read_runs,
    read_sample_qrels,
    write_prels,
    write_qrels,
    write_run,
    write_sample_qrels,
)

# (qid, Q0, docno, rank, score, tag): topic 1 has a tie (d2, d3) broken by docno descending.
RUN_ROWS = [
    ("1", "Q0", "d1", "1", "0.9", "mytag"),
    ("1", "Q0", "d2", "2", "0.5", "mytag"),
    ("1", "Q0", "d3", "3", "0.5", "mytag"),
    ("2", "Q0", "d1", "1", "1.25", "mytag"),
    ("2", "Q0", "d4", "2", "-3", "mytag"),
]
# The run above as trec_eval ranks it: (qid, docno, score, rank).
RUN_RANKED = [
    ("1", "d1", 0.9, 1), ("1", "d3", 0.5, 2), ("1", "d2", 0.5, 3),
    ("2", "d1", 1.25, 1), ("2", "d4", -3.0, 2),
]


def ranked(run: Run, depth: int | None = None) -> list[tuple[str, str, float, int]]:
    """``run.to_frame(depth)`` as plain tuples (qid, docno, score, rank)."""
    frame = run.to_frame(depth)
    assert list(frame.columns) == ["query_id", "doc_id", "score", "rank"]
    return [(str(q), str(d), float(s), int(r)) for q, d, s, r in zip(
        frame["query_id"], frame["doc_id"], frame["score"], frame["rank"], strict=True)]


def joined(rows: list[tuple[str, ...]], sep: str, end: str = "\n") -> str:
    """Rows joined by ``sep``, each line ending in ``end``."""
    return "".join(sep.join(row) + end for row in rows)


def irregular(rows: list[tuple[str, ...]]) -> str:
    """Rows separated by runs of tabs and spaces, padded, with CRLF ends and blank lines."""
    seps = ["\t\t", "  ", " \t ", "\t", "   "]
    lines = ["", "   "]
    for n, row in enumerate(rows):
        text = ""
        for i, token in enumerate(row):
            text += token if i == 0 else seps[(n + i) % len(seps)] + token
        lines += [("  " if n % 2 else "") + text + " \t  ", "", "\t"]
    return "\r\n".join(lines) + "\r\n"


def write_bytes(path: Path, text: str, compress: bool = False) -> Path:
    """Write ``text`` to ``path`` as UTF-8, gzipped when ``compress``."""
    data = text.encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


# ----------------------------------------------------------------------------------------
# Runs


@pytest.mark.parametrize(("layout", "name", "compress"), [
    ("tab", "run.txt", False),
    ("space", "run.txt", False),
    ("irregular", "run.txt", False),
    ("tab_crlf", "run.txt", False),
    ("tab_blank_lines", "run.txt", False),
    ("tab", "run.txt.gz", True),
    ("space", "run-gzipped-without-suffix", True),
    ("irregular", "run.txt.gz", True),
    ("irregular", "run-gzipped-without-suffix", True),
    ("irregular", "plain-text.gz", False),
    ("tab_trailing_space", "run.txt", False),
])
def test_run_layouts_read_the_same(tmp_path: Path, layout: str, name: str,
                                   compress: bool) -> None:
    """Tabs, spaces, irregular whitespace, CRLF, blank lines and gzip all read alike."""
    text = {
        "tab": joined(RUN_ROWS, "\t"),
        "space": joined(RUN_ROWS, " "),
        "irregular": irregular(RUN_ROWS),
        "tab_crlf": joined(RUN_ROWS, "\t", "\r\n"),
        "tab_blank_lines": "\n" + joined(RUN_ROWS, "\t", "\n\n"),
        "tab_trailing_space": joined(RUN_ROWS, "\t", " \n"),
    }[layout]
    run = read_run(write_bytes(tmp_path / name, text, compress))
    assert run.name == "mytag"
    assert ranked(run) == RUN_RANKED
    assert run.topics == ["1", "2"]
    assert len(run) == len(RUN_ROWS)


def test_gzip_detected_by_magic_number(tmp_path: Path) -> None:
    """A gzipped run without a .gz name, and a plain run named .gz, both read."""
    gz = write_bytes(tmp_path / "run", joined(RUN_ROWS, " "), compress=True)
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    plain = write_bytes(tmp_path / "plain.gz", joined(RUN_ROWS, " "))
    assert ranked(read_run(gz)) == ranked(read_run(plain)) == RUN_RANKED


def test_second_column_may_be_any_token(tmp_path: Path) -> None:
    """CLEF runs put AF/NF in the second column; it is ignored."""
    rows = [(q, tok, d, r, s, t) for (q, _, d, r, s, t), tok in zip(
        RUN_ROWS, ["AF", "NF", "AF", "Q0", "x"], strict=True)]
    assert ranked(read_run(write_bytes(tmp_path / "run", joined(rows, " ")))) == RUN_RANKED


def test_rank_column_is_ignored(tmp_path: Path) -> None:
    """Scrambled ranks change nothing: order is score desc, ties by docno desc."""
    text = "7 Q0 a 3 1.0 t\n7 Q0 b 1 1.0 t\n7 Q0 c 99 1.0 t\n7 Q0 z 2 0.5 t\n"
    run = read_run(write_bytes(tmp_path / "run", text))
    assert ranked(run) == [("7", "c", 1.0, 1), ("7", "b", 1.0, 2), ("7", "a", 1.0, 3),
                           ("7", "z", 0.5, 4)]


def test_scores_compared_in_single_precision(tmp_path: Path) -> None:
    """0.1 and 0.1 + 1e-12 tie (float32), so docno breaks the tie; 0.1 + 1e-6 does not."""
    tied = f"1 Q0 a 1 {0.1 + 1e-12!r} t\n1 Q0 b 2 0.1 t\n"
    run = read_run(write_bytes(tmp_path / "tied", tied))
    assert [d for _, d, _, _ in ranked(run)] == ["b", "a"]
    distinct = f"1 Q0 a 1 {0.1 + 1e-6!r} t\n1 Q0 b 2 0.1 t\n"
    run = read_run(write_bytes(tmp_path / "distinct", distinct))
    assert [d for _, d, _, _ in ranked(run)] == ["a", "b"]


def test_docnos_that_look_like_missing_values_are_kept(tmp_path: Path) -> None:
    """Docnos such as NA, nan and null are text, not missing values, on both parse paths."""
    single = "1 Q0 NA 1 3 t\n1 Q0 nan 2 2 t\n1 Q0 null 3 1 t\n"
    padded = "1  Q0 NA 1 3 t\n1 Q0 nan 2 2 t\n1 Q0 null 3 1 t\n"
    for name, text in (("single", single), ("padded", padded)):
        run = read_run(write_bytes(tmp_path / name, text))
        assert [d for _, d, _, _ in ranked(run)] == ["NA", "nan", "null"]


@pytest.mark.parametrize("score", ["abc", "nan", "NaN", "inf", "-inf", "1e400", "0x1p3"])
@pytest.mark.parametrize("sep", [" ", "\t", "  "])
def test_bad_score_names_its_line(tmp_path: Path, score: str, sep: str) -> None:
    """A score that is not a finite number is an InputError naming line 2, on every path."""
    rows = [("1", "Q0", "a", "1", "0.5", "t"), ("1", "Q0", "b", "2", score, "t")]
    path = write_bytes(tmp_path / "run", joined(rows, sep))
    with pytest.raises(InputError) as caught:
        read_run(path)
    assert (caught.value.path, caught.value.line) == (str(path), 2)
    assert repr(score) in caught.value.message


@pytest.mark.parametrize(("text", "line"), [
    pytest.param("1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4 t\n1 Q0 c 3 0.3\n", 3, id="no-tag-last-line"),
    pytest.param("1\tQ0\ta\t1\t0.5\tt\n\n1\tQ0\tb\t0.4\tt\n1\tQ0\tc\t3\t0.3\tt\n", 3,
                 id="no-rank-tab"),
    pytest.param("1  Q0 a 1 0.5 t\n1 Q0 b\n", 2, id="three-columns-padded"),
])
def test_wrong_column_count_names_its_line(tmp_path: Path, text: str, line: int) -> None:
    """A run line with the wrong number of columns is an InputError naming it."""
    path = write_bytes(tmp_path / "run", text)
    with pytest.raises(InputError) as caught:
        read_run(path)
    assert (caught.value.path, caught.value.line) == (str(path), line)
    assert "columns" in caught.value.message


def test_non_utf8_run_is_an_input_error(tmp_path: Path) -> None:
    """Latin-1 bytes in a run are an InputError naming the file, not a UnicodeDecodeError."""
    path = tmp_path / "run"
    path.write_bytes(b"1 Q0 a 1 0.5 t\n1 Q0 \xe9t\xe9 2 0.4 t\n")
    with pytest.raises(InputError) as caught:
        read_run(path)
    assert caught.value.path == str(path)


def test_run_named_by_tag_or_given_name(tmp_path: Path) -> None:
    """The run takes the tag of its first line unless a name is given."""
    path = write_bytes(tmp_path / "file-name.txt", joined(RUN_ROWS, " "))
    assert read_run(path).name == "mytag"
    assert read_run(path, name="chosen").name == "chosen"
    assert read_run(path).source == str(path)


def make_run_files(root: Path) -> dict[str, Path]:
    """Two runs in ``root/runs``: alpha.txt (tag A, plain), beta.txt.gz (tag B, gzipped)."""
    folder = root / "runs"
    folder.mkdir()
    alpha = write_bytes(folder / "alpha.txt", "1 Q0 d1 1 2 A\n1 Q0 d2 2 1 A\n")
    beta = write_bytes(folder / "beta.txt.gz", "1 Q0 d2 1 2 B\n", compress=True)
    write_bytes(folder / ".hidden", "not a run")
    return {"folder": folder, "alpha": alpha, "beta": beta}


def test_read_runs_directory_glob_and_list(tmp_path: Path) -> None:
    """A directory (hidden files skipped), a glob pattern and a list name the same runs."""
    files = make_run_files(tmp_path)
    assert [r.name for r in read_runs(files["folder"])] == ["A", "B"]
    assert [r.name for r in read_runs(str(files["folder"] / "*.txt*"))] == ["A", "B"]
    assert [r.name for r in read_runs(str(files["folder"] / "a*"))] == ["A"]
    assert [r.name for r in read_runs([files["beta"], str(files["alpha"])])] == ["B", "A"]
    assert ranked(read_runs([files["alpha"]])[0]) == [("1", "d1", 2.0, 1), ("1", "d2", 1.0, 2)]


def test_read_runs_name_by_file(tmp_path: Path) -> None:
    """name_by='file' names runs by base name, without the directory and the .gz suffix."""
    files = make_run_files(tmp_path)
    assert [r.name for r in read_runs(files["folder"], name_by="file")] == [
        "alpha.txt", "beta.txt"]
    with pytest.raises(ValueError, match="name_by"):
        read_runs(files["folder"], name_by="path")


def test_shared_tag_names_runs_by_file_with_warning(tmp_path: Path) -> None:
    """Two runs with one tag are named by file instead, with a warning."""
    one = write_bytes(tmp_path / "one.run", "1 Q0 d1 1 1 same\n")
    two = write_bytes(tmp_path / "two.run.gz", "1 Q0 d2 1 1 same\n", compress=True)
    with pytest.warns(UserWarning, match="same"):
        runs = read_runs([one, two])
    assert [r.name for r in runs] == ["one.run", "two.run"]


def test_read_runs_missing_inputs(tmp_path: Path) -> None:
    """A missing file, a pattern matching nothing and an empty directory are InputErrors."""
    (tmp_path / "empty").mkdir()
    for spec in (tmp_path / "missing.run", str(tmp_path / "*.nothing"), tmp_path / "empty"):
        with pytest.raises(InputError) as caught:
            read_runs(spec)
        assert caught.value.path == str(spec)


@pytest.mark.parametrize("name", ["out.run", "out.run.gz"])
def test_write_run_round_trip(tmp_path: Path, name: str) -> None:
    """write_run then read_run gives the same ranking and name (gzip when .gz)."""
    run = read_run(write_bytes(tmp_path / "in", irregular(RUN_ROWS)))
    out = tmp_path / name
    write_run(run, out)
    assert (out.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    back = read_run(out)
    assert back.name == run.name
    assert ranked(back) == ranked(run) == RUN_RANKED
    assert not list(tmp_path.glob("*.tmp"))


def test_write_run_writes_trec_order_and_depth(tmp_path: Path) -> None:
    """Written lines are ranked 1..n in trec_eval order; depth keeps the top of each topic."""
    run = read_run(write_bytes(tmp_path / "in", joined(RUN_ROWS, "\t")))
    write_run(run, tmp_path / "out", depth=1)
    lines = [ln.split() for ln in (tmp_path / "out").read_text().splitlines()]
    assert lines == [["1", "Q0", "d1", "1", "0.9", "mytag"],
                     ["2", "Q0", "d1", "1", "1.25", "mytag"]]


def test_to_frame_depth(tmp_path: Path) -> None:
    """to_frame(depth=2) keeps the top two documents of each topic."""
    rows = [("3", "Q0", f"doc{i}", "1", str(i), "t") for i in range(5)] + RUN_ROWS
    run = read_run(write_bytes(tmp_path / "run", joined(rows, " ")))
    top = ranked(run, depth=2)
    assert top == [("1", "d1", 0.9, 1), ("1", "d3", 0.5, 2), ("2", "d1", 1.25, 1),
                   ("2", "d4", -3.0, 2), ("3", "doc4", 4.0, 1), ("3", "doc3", 3.0, 2)]
    assert ranked(run, depth=100) == ranked(run)


@pytest.mark.parametrize(("query", "doc"), [("qid", "docno"), ("query_id", "doc_id")])
def test_run_from_frame_column_names(query: str, doc: str) -> None:
    """Run.from_frame takes qid/docno or query_id/doc_id; a rank column is ignored."""
    frame = pd.DataFrame({
        query: [r[0] for r in RUN_ROWS], doc: [r[2] for r in RUN_ROWS],
        "score": [float(r[4]) for r in RUN_ROWS], "rank": [5, 4, 3, 2, 1]})
    run = Run.from_frame(frame, name="framed")
    assert run.name == "framed"
    assert ranked(run) == RUN_RANKED


def test_run_from_frame_rejects_repeated_doc() -> None:
    """A docno repeated within a topic is an InputError."""
    frame = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["a", "a", "a"],
                          "score": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match="repeat"):
        Run.from_frame(frame, name="dup")


# ----------------------------------------------------------------------------------------
# Qrels

QRELS_TEXT = "401 4.5  d1  1\n401 0 d2 0\n401 0  d3   -1\n402 Q0 d1 2\n402 0 d9 -2\n"


def qrels_rows(qrels: Qrels) -> list[tuple[str, str, float, str]]:
    """The qrels as (qid, docno, grade, iter) tuples, in file order."""
    f = qrels.frame
    return [(str(q), str(d), float(r), str(i)) for q, d, r, i in zip(
        f["query_id"], f["doc_id"], f["relevance"], f["iteration"], strict=True)]


def test_read_qrels(tmp_path: Path) -> None:
    """iter may be any token; double spaces are fine; negative grades are kept."""
    qrels = read_qrels(write_bytes(tmp_path / "qrels", QRELS_TEXT))
    assert qrels_rows(qrels) == [
        ("401", "d1", 1.0, "4.5"), ("401", "d2", 0.0, "0"), ("401", "d3", -1.0, "0"),
        ("402", "d1", 2.0, "Q0"), ("402", "d9", -2.0, "0")]
    assert qrels.topics == ["401", "402"]
    judged = qrels.judged()
    assert list(zip(judged["query_id"], judged["doc_id"], strict=True)) == [
        ("401", "d1"), ("401", "d2"), ("402", "d1")]


def test_read_qrels_tab_separated_gzipped(tmp_path: Path) -> None:
    """Tab-separated and gzipped qrels read like the space-separated file."""
    rows = [tuple(line.split()) for line in QRELS_TEXT.splitlines()]
    plain = read_qrels(write_bytes(tmp_path / "plain", QRELS_TEXT))
    tabbed = read_qrels(write_bytes(tmp_path / "tabbed", joined(rows, "\t"), compress=True))
    assert qrels_rows(tabbed) == qrels_rows(plain)


@pytest.mark.parametrize("name", ["qrels.out", "qrels.out.gz"])
def test_qrels_round_trip(tmp_path: Path, name: str) -> None:
    """write_qrels then read_qrels gives the same judgments, iter and grades included."""
    qrels = read_qrels(write_bytes(tmp_path / "qrels", QRELS_TEXT + "403 0 d5 0.5\n"))
    write_qrels(qrels, tmp_path / name)
    assert qrels_rows(read_qrels(tmp_path / name)) == qrels_rows(qrels)


def test_qrels_from_frame_ir_datasets_names(tmp_path: Path) -> None:
    """Qrels.from_frame takes ir_datasets columns (query_id, doc_id, relevance, iteration)."""
    frame = pd.DataFrame({"query_id": ["401", "401", "401", "402", "402"],
                          "doc_id": ["d1", "d2", "d3", "d1", "d9"],
                          "relevance": [1, 0, -1, 2, -2],
                          "iteration": ["4.5", "0", "0", "Q0", "0"]})
    qrels = Qrels.from_frame(frame)
    assert qrels_rows(qrels) == qrels_rows(read_qrels(write_bytes(tmp_path / "q", QRELS_TEXT)))
    with pytest.raises(InputError, match="twice"):
        Qrels.from_frame(pd.concat([frame, frame.iloc[:1]]))


def test_qrels_space_before_tab(tmp_path: Path) -> None:
    """Whitespace around a tab separator is not part of the docno."""
    qrels = read_qrels(write_bytes(tmp_path / "qrels", "1\t0\td1 \t1\n1\t0\td2\t0\n"))
    assert [str(d) for d in qrels.frame["doc_id"]] == ["d1", "d2"]


def test_qrels_line_with_five_columns_is_an_error(tmp_path: Path) -> None:
    """A 5-column qrels line is an InputError naming its line."""
    path = write_bytes(tmp_path / "qrels", "1 0 d1 1\n1 0 d2 1 extra\n")
    with pytest.raises(InputError) as caught:
        read_qrels(path)
    assert caught.value.line == 2


# ----------------------------------------------------------------------------------------
# Sampled qrels and prels

SAMPLE_TEXT = "401 0 d1 1 1\n401 0  d2 2 -1\n401 0 d3 01 0\n402 0 d1 3 2\n"
PRELS_TEXT = "401 d1 1 MTC 0.25\n401 d2 0 MTC 1\n402 d1 2 statAP 0.003\n"


def test_read_sample_qrels(tmp_path: Path) -> None:
    """topic iter docno stratum rel: stratum kept as text, rel as a float."""
    frame = read_sample_qrels(write_bytes(tmp_path / "sq", SAMPLE_TEXT))
    assert list(frame.columns) == ["query_id", "iteration", "doc_id", "stratum", "relevance"]
    assert [str(s) for s in frame["stratum"]] == ["1", "2", "01", "3"]
    assert frame["relevance"].tolist() == [1.0, -1.0, 0.0, 2.0]
    assert [str(d) for d in frame["doc_id"]] == ["d1", "d2", "d3", "d1"]


@pytest.mark.parametrize("name", ["sq.out", "sq.out.gz"])
def test_sample_qrels_round_trip(tmp_path: Path, name: str) -> None:
    """write_sample_qrels then read_sample_qrels gives the same frame."""
    frame = read_sample_qrels(write_bytes(tmp_path / "sq", SAMPLE_TEXT))
    write_sample_qrels(frame, tmp_path / name)
    pd.testing.assert_frame_equal(read_sample_qrels(tmp_path / name), frame)


def test_read_prels(tmp_path: Path) -> None:
    """qid docno rel method prob."""
    frame = read_prels(write_bytes(tmp_path / "prels", PRELS_TEXT))
    assert list(frame.columns) == ["query_id", "doc_id", "relevance", "method", "probability"]
    assert frame["probability"].tolist() == [0.25, 1.0, 0.003]
    assert [str(m) for m in frame["method"]] == ["MTC", "MTC", "statAP"]


@pytest.mark.parametrize("name", ["prels.out", "prels.out.gz"])
def test_prels_round_trip(tmp_path: Path, name: str) -> None:
    """write_prels then read_prels gives the same frame."""
    frame = read_prels(write_bytes(tmp_path / "prels", PRELS_TEXT))
    write_prels(frame, tmp_path / name)
    pd.testing.assert_frame_equal(read_prels(tmp_path / name), frame)


@pytest.mark.parametrize("prob", ["0", "1.5", "-0.25"])
def test_prels_probability_outside_unit_interval(tmp_path: Path, prob: str) -> None:
    """An inclusion probability outside (0, 1] is an InputError naming the file and line."""
    path = write_bytes(tmp_path / "prels", PRELS_TEXT + f"402 d7 1 MTC {prob}\n")
    with pytest.raises(InputError) as caught:
        read_prels(path)
    assert caught.value.path == str(path)
    assert caught.value.line == 4
    assert f"{prob} is not in (0, 1]" in str(caught.value)


def test_prels_probability_message_is_plain(tmp_path: Path) -> None:
    """The message quotes the probability as the file wrote it."""
    path = write_bytes(tmp_path / "prels", PRELS_TEXT + "402 d7 1 MTC 1.5\n")
    with pytest.raises(InputError) as caught:
        read_prels(path)
    assert "np." not in str(caught.value)


# ----------------------------------------------------------------------------------------
# Property: any small run survives write/read and ranks as trec_eval ranks

TOPICS = ["1", "2", "10", "q7"]
DOCNOS = ["a", "b", "c", "ab", "B", "Z", "1", "10", "2", "NA", "nan"]
SCORES = [0.0, -0.0, 1.0, 0.5, 0.1, 0.1 + 1e-12, 0.1 + 1e-6, -2.5, 1e-8, 3.0, 1e6]


def reference_ranking(rows: dict[tuple[str, str], float]) -> list[tuple[str, str, float, int]]:
    """Pure-Python trec_eval order: topics ascending; score desc (float32), docno desc."""
    out = []
    for topic in sorted({t for t, _ in rows}):
        docs = sorted(((d, s) for (t, d), s in rows.items() if t == topic), reverse=True)
        docs.sort(key=lambda item: -float(np.float32(item[1])))  # stable: docno desc kept
        out += [(topic, d, s, rank) for rank, (d, s) in enumerate(docs, start=1)]
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.dictionaries(st.tuples(st.sampled_from(TOPICS), st.sampled_from(DOCNOS)),
                            st.sampled_from(SCORES), min_size=1, max_size=30))
def test_write_read_round_trip_matches_reference(rows: dict[tuple[str, str], float]) -> None:
    """Random small runs: written and read back give the same to_frame(), which is the
    reference sort."""
    frame = pd.DataFrame({"query_id": [t for t, _ in rows], "doc_id": [d for _, d in rows],
                          "score": list(rows.values())})
    run = Run.from_frame(frame, name="prop")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "prop.run"
        write_run(run, path)
        back = read_run(path)
    assert back.name == "prop"
    pd.testing.assert_frame_equal(back.to_frame(), run.to_frame())
    assert ranked(run) == reference_ranking(rows)


def test_prefetch_hands_out_files_within_its_budget(tmp_path: Path) -> None:
    """``Prefetch`` inflates files ahead in order, never holding more than its budget of
    files not yet taken (but always one), raises a file's error when it is taken, leaves
    standard input to ``take`` and stops when closed."""
    import time

    from sampleval.io._source import STDIN, Prefetch

    paths = []
    for i in range(5):
        paths.append(tmp_path / f"run{i}.gz")
        with gzip.open(paths[-1], "wt") as fh:
            fh.write(f"1 Q0 d{i} 1 1.0 tag\n" * 100)
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b not gzip")
    with Prefetch([*paths[:2], tmp_path / "bad.gz", *paths[2:], Path(STDIN)],
                  budget=1) as prefetch:
        time.sleep(0.2)
        assert prefetch._held == len(b"1 Q0 d0 1 1.0 tag\n" * 100)  # one file, not more
        assert [prefetch.take(p).data[:8] for p in paths[:2]] == [b"1 Q0 d0 ", b"1 Q0 d1 "]
        with pytest.raises(InputError, match=r"bad\.gz.*corrupt gzip"):
            prefetch.take(tmp_path / "bad.gz")
        assert prefetch.take(paths[4]).name == str(paths[4])
        assert STDIN not in {str(p) for p in prefetch._loaded}
    assert not prefetch._loaded
