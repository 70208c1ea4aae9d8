"""Real-world input: what campaign files contain and how people feed them to commands.

Comment and blank lines, fields past the sixth, CRLF, a byte-order mark, grades written as
floats; documents a run repeats within a topic (``--duplicates``), checked against
pytrec_eval on a CLEF-style run; standard input, pipes and FIFOs for runs, qrels and samples.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from sampleval.core.run import Run
from sampleval.errors import InputError, UsageError
from sampleval.io import _table, read_qrels, read_run
from sampleval.io.samples import load_sample
from sampleval.measures.evaluation import MEAN_TOPIC, evaluate

SAMPLEVAL = Path(sys.executable).parent / "sampleval"
QRELS = "1 0 d1 1\n1 0 d2 0\n1 0 d3 2\n1 0 d4 1\n2 0 d5 1\n2 0 d6 0\n"
RUN = ("1 Q0 d1 1 0.9 tagA\n1 Q0 d2 2 0.8 tagA\n1 Q0 d3 3 0.7 tagA\n"
       "2 Q0 d6 1 0.2 tagA\n2 Q0 d5 2 0.1 tagA\n")
MEASURES = ["AP", "P@2", "nDCG@3", "Rprec", "Bpref", "RR"]


def values(qrels: str | Path, run: str | Path, tmp_path: Path, **options: str) -> dict:
    """Per-topic and mean values of MEASURES, from file contents or paths."""
    paths = []
    for name, content in (("qrels", qrels), ("run", run)):
        if isinstance(content, Path):
            paths.append(content)
        else:
            path = tmp_path / f"{name}-{abs(hash(content))}"
            path.write_bytes(content.encode() if isinstance(content, str) else content)
            paths.append(path)
    results = evaluate(read_qrels(paths[0]), [read_run(paths[1], **options)], MEASURES)
    return {(q, m): v for q, m, v in results[["query_id", "measure", "value"]].itertuples(
        index=False, name=None)}


def no_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the slow general path fail the test if it is taken."""
    def refuse(*_: object) -> bytes:
        raise AssertionError("an ordinary file left the fast path")
    monkeypatch.setattr(_table, "_regularised", refuse)


# -- what files contain ----------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["comments", "crlf", "bom", "crlf-bom-comments", "tabs"])
def test_ordinary_variants_take_the_fast_path(variant: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Comment lines, blank lines, CRLF and a BOM read on the fast path, to the same values."""
    clean = values(QRELS, RUN, tmp_path)
    qrels, run = QRELS, RUN
    if "comments" in variant:
        qrels = "# judged by NIST\n\n" + qrels.replace("2 0 d5", "# topic 2\n2 0 d5") + "\n"
        run = "# run tagA\n" + run.replace("2 Q0 d6", "\n# topic 2\n\n2 Q0 d6")
    if "crlf" in variant:
        qrels, run = qrels.replace("\n", "\r\n"), run.replace("\n", "\r\n")
    if "bom" in variant:
        qrels, run = "\ufeff" + qrels, "\ufeff" + run
    if variant == "tabs":
        qrels, run = qrels.replace(" ", "\t"), run.replace(" ", "\t")
    no_general_path(monkeypatch)
    assert values(qrels, run, tmp_path) == clean


def test_comment_mark_inside_a_docno_is_kept(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a '#' that starts a line marks a comment (MS MARCO v2.1 docnos hold '#')."""
    path = tmp_path / "run"
    path.write_text("#c\n1 Q0 doc#4_1 1 0.9 t\n1 Q0 doc#0_2 2 0.8 t\n")
    no_general_path(monkeypatch)
    assert sorted(read_run(path).to_frame()["doc_id"]) == ["doc#0_2", "doc#4_1"]


def test_fields_after_the_sixth_are_ignored(tmp_path: Path) -> None:
    """As trec_eval: a run line may carry more fields (on some lines or all)."""
    clean = values(QRELS, RUN, tmp_path)
    some = RUN.replace("0.8 tagA", "0.8 tagA extra fields here")
    every = RUN.replace("tagA\n", "tagA 17 x\n")
    assert values(QRELS, some, tmp_path) == clean
    assert values(QRELS, every, tmp_path) == clean
    assert values(QRELS, every.replace(" ", "\t"), tmp_path) == clean


def test_mixed_whitespace_general_path(tmp_path: Path) -> None:
    """Padded, mixed separators and CRLF together (the general path) read the same values."""
    messy = "".join("  " + line.replace(" ", " \t ") + "  \r\n" for line in RUN.splitlines())
    assert values(QRELS, messy, tmp_path) == values(QRELS, RUN, tmp_path)


def test_float_grades(tmp_path: Path) -> None:
    """Grades written 1.0, 2.0 read as 1 and 2."""
    floats = QRELS.replace(" 1\n", " 1.0\n").replace(" 2\n", " 2.0\n").replace(" 0\n", " 0.0\n")
    assert "1.0" in floats
    assert values(floats, RUN, tmp_path) == values(QRELS, RUN, tmp_path)


@pytest.mark.parametrize(("text", "line", "says"), [
    ("1 Q0 d1 1 0.9 t\n# fine\n1 Q0 d2 2\n", 3, "6 or more"),
    ("1 Q0 d1 1 0.9 t\n1 Q0 d2 2 0.8\n", 2, "found 5"),
    ("1\tQ0\td1\t1\t0.9\tt\n1\tQ0\td2\t\t0.8\tt\n", 2, "found 5"),
    ("1 Q0 d1 1 0.9 t\r\n1 Q0 d2 2 x t\r\n", 2, "'x'"),
])
def test_what_is_still_refused(tmp_path: Path, text: str, line: int, says: str) -> None:
    """Short lines and bad numbers name their line, comments and CRLF counted."""
    path = tmp_path / "run"
    path.write_text(text, newline="")
    with pytest.raises(InputError) as caught:
        read_run(path)
    assert caught.value.line == line
    assert says in str(caught.value)


# -- repeated documents ----------------------------------------------------------------------

# A CLEF eHealth-style run: AF/NF in the second column, URL-like docnos, and documents repeated
# within a topic (as 12 of the 24 CLEF eHealth 2018 runs do), with other scores each time.
CLEF_QRELS = "".join(f"{q} 0 {d} {g}\n" for q, d, g in [
    ("151001", "http://a.org/1", 2), ("151001", "http://b.org/2", 0),
    ("151001", "http://c.org/3", 1), ("151001", "http://d.org/4", 1),
    ("151002", "http://a.org/1", 0), ("151002", "http://e.org/5", 2),
    ("151002", "http://f.org/6", 1)])
CLEF_RUN = "".join(f"{q} {q0} {d} {r} {s} baseline\n" for q, q0, d, r, s in [
    ("151001", "AF", "http://b.org/2", 1, 9.0), ("151001", "AF", "http://a.org/1", 2, 8.0),
    ("151001", "NF", "http://x.org/9", 3, 7.0), ("151001", "AF", "http://b.org/2", 4, 6.0),
    ("151001", "NF", "http://c.org/3", 5, 5.0), ("151001", "AF", "http://a.org/1", 6, 9.5),
    ("151002", "AF", "http://f.org/6", 1, 3.0), ("151002", "AF", "http://a.org/1", 2, 2.0),
    ("151002", "AF", "http://f.org/6", 3, 1.0), ("151002", "NF", "http://e.org/5", 4, 0.5)])


def test_duplicates_error_names_file_lines_and_option(tmp_path: Path) -> None:
    """The default refuses, naming the file, both lines and the option that resolves it."""
    (tmp_path / "q").write_text(CLEF_QRELS)
    (tmp_path / "r").write_text(CLEF_RUN)
    got = subprocess.run([str(SAMPLEVAL), "evaluate", str(tmp_path / "q"), str(tmp_path / "r")],
                         capture_output=True, text=True)
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr.splitlines() == [
        f"sampleval: error: {tmp_path / 'r'}:4: qid 151001, docno http://b.org/2 repeated "
        "(first at line 1); --duplicates first|last keeps one (duplicates= in the library)"]


def test_duplicates_last_agrees_with_pytrec_eval(tmp_path: Path) -> None:
    """``last`` keeps each document's last line, as pytrec_eval's dict does: same values."""
    (tmp_path / "r").write_text(CLEF_RUN)
    ours = values(CLEF_QRELS, tmp_path / "r", tmp_path, duplicates="last")
    # pytrec_eval-terrier's parse_run refuses repeats (an assert): its users fill the dict
    # themselves, line by line, so each line overwrites the one before
    run: dict[str, dict[str, float]] = {}
    for line in CLEF_RUN.splitlines():
        topic, _, doc, _, score, _ = line.split()
        run.setdefault(topic, {})[doc] = float(score)
    qrels = pytrec_eval.parse_qrel(CLEF_QRELS.splitlines())
    names = {"AP": "map", "P@2": "P_2", "nDCG@3": "ndcg_cut_3", "Rprec": "Rprec",
             "Bpref": "bpref", "RR": "recip_rank"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.2", "ndcg_cut.3", "Rprec",
                                                    "bpref", "recip_rank"}).evaluate(run)
    assert run["151001"]["http://a.org/1"] == 9.5  # the dict kept the last line
    for topic, measures in theirs.items():
        for ours_name, their_name in names.items():
            assert ours[(topic, ours_name)] == pytest.approx(measures[their_name], abs=1e-12)


def test_duplicates_first_keeps_the_highest_ranked(tmp_path: Path) -> None:
    """``first`` keeps the occurrence that ranks highest (score, then earlier line)."""
    (tmp_path / "r").write_text(CLEF_RUN)
    kept = read_run(tmp_path / "r", duplicates="first").to_frame()
    scores = {(q, d): s for q, d, s in kept[["query_id", "doc_id", "score"]].itertuples(
        index=False, name=None)}
    assert scores == {("151001", "http://b.org/2"): 9.0, ("151001", "http://a.org/1"): 9.5,
                      ("151001", "http://x.org/9"): 7.0, ("151001", "http://c.org/3"): 5.0,
                      ("151002", "http://f.org/6"): 3.0, ("151002", "http://a.org/1"): 2.0,
                      ("151002", "http://e.org/5"): 0.5}
    last = read_run(tmp_path / "r", duplicates="last").to_frame()
    last_scores = {(q, d): s for q, d, s in last[["query_id", "doc_id", "score"]].itertuples(
        index=False, name=None)}
    assert last_scores[("151002", "http://f.org/6")] == 1.0


def test_duplicates_on_the_command_line(tmp_path: Path) -> None:
    """evaluate --duplicates first|last runs; last matches the library's last."""
    (tmp_path / "q").write_text(CLEF_QRELS)
    (tmp_path / "r").write_text(CLEF_RUN)
    lines = {}
    for choice in ("first", "last"):
        got = subprocess.run([str(SAMPLEVAL), "evaluate", str(tmp_path / "q"),
                              str(tmp_path / "r"), "--duplicates", choice, "-f", "tsv",
                              "-m", "AP"], capture_output=True, text=True)
        assert got.returncode == 0, got.stderr
        lines[choice] = float(got.stdout.splitlines()[1].split("\t")[3])
    library = values(CLEF_QRELS, tmp_path / "r", tmp_path, duplicates="last")
    assert lines["last"] == pytest.approx(library[(MEAN_TOPIC, "AP")], abs=1e-15)
    assert lines["first"] != lines["last"]


def test_run_from_frame_duplicates() -> None:
    """Run.from_frame takes the same choice; a wrong one is a UsageError."""
    frame = pd.DataFrame({"query_id": ["1", "1", "1"], "doc_id": ["a", "b", "a"],
                          "score": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match="duplicates="):
        Run.from_frame(frame, "r")
    assert sorted(Run.from_frame(frame, "r", duplicates="first").to_frame()["score"]) == [2, 3]
    assert sorted(Run.from_frame(frame, "r", duplicates="last").to_frame()["score"]) == [2, 3]
    frame.loc[2, "score"] = 0.5
    assert sorted(Run.from_frame(frame, "r", duplicates="first").to_frame()["score"]) == [1, 2]
    assert sorted(Run.from_frame(frame, "r", duplicates="last").to_frame()["score"]) == [
        0.5, 2]
    with pytest.raises(UsageError):
        Run.from_frame(frame, "r", duplicates="keep")


# -- standard input, pipes, FIFOs ------------------------------------------------------------

def cli(*args: str | Path, stdin: bytes | None = None, pass_fds: tuple[int, ...] = ()
        ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(SAMPLEVAL), *map(str, args)], input=stdin, capture_output=True,
                          pass_fds=pass_fds, timeout=120)


def pipe_with(data: bytes) -> tuple[int, threading.Thread]:
    """A pipe's read end (to pass as /dev/fd/N, as <(...) does) and the thread feeding it."""
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as fh:
            fh.write(data)
    writer = threading.Thread(target=feed)
    writer.start()
    return read_end, writer


def test_runs_and_qrels_from_stdin_and_pipes(tmp_path: Path) -> None:
    """'-' and /dev/fd pipes (gzipped or not) give the values files give."""
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_text(RUN)
    from_files = cli("evaluate", tmp_path / "q", tmp_path / "r", "-f", "tsv")
    assert from_files.returncode == 0, from_files.stderr
    from_stdin = cli("evaluate", "-", tmp_path / "r", "-f", "tsv", stdin=QRELS.encode())
    assert from_stdin.stdout == from_files.stdout
    from_stdin = cli("evaluate", tmp_path / "q", "-", "-f", "tsv",
                     stdin=gzip.compress(RUN.encode()))
    assert from_stdin.stdout == from_files.stdout
    fd, writer = pipe_with(gzip.compress(RUN.encode()))  # what <(cat run.gz) hands over
    try:
        from_pipe = cli("evaluate", tmp_path / "q", f"/dev/fd/{fd}", "-f", "tsv",
                        pass_fds=(fd,))
    finally:
        os.close(fd)
        writer.join()
    assert from_pipe.returncode == 0, from_pipe.stderr
    assert from_pipe.stdout == from_files.stdout


def test_stdin_named_twice_is_refused(tmp_path: Path) -> None:
    got = cli("evaluate", "-", "-", stdin=QRELS.encode())
    assert got.returncode == 2
    assert got.stderr.decode() == "sampleval: error: standard input ('-') can be read only once\n"


def test_fifo_read_once(tmp_path: Path) -> None:
    """A FIFO cannot be read twice nor sniffed then reopened: the library reads it once."""
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(RUN.encode())
    writer = threading.Thread(target=feed)
    writer.start()
    run = read_run(fifo)
    writer.join()
    assert run.name == "tagA" and len(run) == 5 and run.source == str(fifo)


@pytest.mark.parametrize("kind", ["sample-qrels", "prels", "qrels"])
def test_sample_files_from_stdin(kind: str, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """load_sample reads '-' once, telling the format from its first line."""
    text = {"sample-qrels": "1 0 d1 a 1\n1 0 d2 a -1\n1 0 d3 b 0\n",
            "prels": "1 d1 1 m 0.5\n1 d3 0 m 0.25\n",
            "qrels": "1 0 d1 1\n1 0 d2 -1\n"}[kind]
    monkeypatch.setattr(sys, "stdin", _Stdin(text.encode()))
    sample = load_sample("-")
    assert sample.meta["source"] in ("<stdin>", None) or kind == "qrels"
    assert sorted(sample.frame["doc_id"]) == sorted(
        line.split()[2 if kind != "prels" else 1] for line in text.splitlines())
    assert np.isnan(sample.frame["relevance"]).any() == (kind != "prels")


@pytest.mark.slow
def test_estimate_reads_the_sample_from_stdin(tmp_path: Path) -> None:
    """The estimate command takes its SAMPLE from '-'."""
    (tmp_path / "r").write_text(RUN)
    sample = "1 0 d1 a 1\n1 0 d2 a 0\n1 0 d3 a -1\n2 0 d5 a 1\n2 0 d6 a 0\n"
    got = cli("estimate", "-", tmp_path / "r", "-m", "xinfAP", "-f", "tsv",
              stdin=sample.encode())
    assert got.returncode == 0, got.stderr
    assert got.stdout.decode().splitlines()[1].startswith("tagA\tall\txinfAP\t")


class _Stdin:
    """A stand-in for sys.stdin with a binary buffer."""

    def __init__(self, data: bytes) -> None:
        import io

        self.buffer = io.BytesIO(data)
