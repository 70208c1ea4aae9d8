"""Bad input through the command line: exit code 2, one line on stderr naming file and line.

Each case runs ``sampleval.cli.main`` in this process (``conftest.run_cli``: a subprocess
costs about 2 s CPU of imports and numba's cache a call); every error case once, by one
module-scoped fixture. One case also runs through the installed console script in a
process of its own, which must say the same.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import conftest
from conftest import CliResult
from sampleval.core.sample import Sample

SAMPLEVAL = Path(sys.executable).parent / "sampleval"

# One topic: d1 (grade 1), d2 (grade 0), d3 (grade 2) retrieved in that order; d4 (grade 1)
# not retrieved. R = 3.
GOOD_QRELS = "1 0 d1 1\n1 0 d2 0\n1 0 d3 2\n1 0 d4 1\n"
GOOD_RUN = "1 Q0 d1 1 0.9 tagA\n1 Q0 d2 2 0.8 tagA\n1 Q0 d3 3 0.7 tagA\n"
AP_1 = (1 / 1 + 2 / 3) / 3
NDCG_3 = (1 + 2 / math.log2(4)) / (2 + 1 / math.log2(3) + 1 / math.log2(4))
# A second topic: d5 (grade 1) at rank 1, d6 (grade 0) at rank 2. AP = 1, P@2 = 0.5.
QRELS_2 = GOOD_QRELS + "2 0 d5 1\n2 0 d6 0\n"
RUN_2 = GOOD_RUN + "2 Q0 d6 2 0.1 tagA\n2 Q0 d5 1 0.2 tagA\n"


def run_cli(args: Sequence[str | Path]) -> CliResult:
    """``sampleval ARGS`` in this process (:func:`conftest.run_cli`)."""
    return conftest.run_cli(*args)


def gz(text: str | bytes) -> bytes:
    """``text`` gzipped."""
    return gzip.compress(text.encode() if isinstance(text, str) else text, mtime=0)


def big_truncated_gz() -> bytes:
    """A gzipped run whose text is well past the 64 KiB the reader sniffs, cut short."""
    text = "".join(f"1 Q0 doc{i} {i + 1} {100000 - i} tagA\n" for i in range(20000))
    data = gz(text)
    return data[: len(data) * 9 // 10]


SEEDED = random.Random(20240601)
BINARY = SEEDED.randbytes(300) + b"\x00" + SEEDED.randbytes(100)


ANY_PATH = "<any path>"


@dataclass(frozen=True)
class Case:
    """One bad invocation: files to write, the command and its arguments (``@name`` stands
    for the path of the file ``name``), the file the message must name (None: no file;
    ``ANY_PATH``: not checked), the line to blame, what the message must say and must not."""

    files: dict[str, str | bytes] = field(default_factory=dict)
    args: tuple[str, ...] = ("@qrels", "@run")
    blame: str | None = None
    line: int | None = None
    says: tuple[str, ...] = ()
    command: str = "evaluate"
    lacks: tuple[str, ...] = ()


def case(run: str | bytes | None = None, qrels: str | bytes | None = None, *,
         args: tuple[str, ...] = ("@qrels", "@run"), blame: str | None = "auto",
         line: int | None = None, says: tuple[str, ...] = (),
         extra: dict[str, str | bytes] | None = None) -> Case:
    """A case with a good qrels and a good run unless ``run`` or ``qrels`` replaces one;
    by default the message must name the replaced file."""
    files: dict[str, str | bytes] = {"qrels": GOOD_QRELS if qrels is None else qrels,
                                     "run": GOOD_RUN if run is None else run, **(extra or {})}
    if blame == "auto":
        blame = "run" if run is not None else "qrels" if qrels is not None else None
    return Case(files=files, args=args, blame=blame, line=line, says=says)


def sample_files(name: str, sample: Sample, judging: dict[str, object] | None = None
                 ) -> dict[str, str | bytes]:
    """The files of ``sample`` saved as directory ``name`` (with a ``judging`` header part,
    as judging outside sampleval writes it)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s"
        out.mkdir()
        sample.write(out, extra=None if judging is None else {"judging": judging})
        return {f"{name}/{f.name}": f.read_bytes() for f in sorted(out.iterdir())}


def tiny_sample(design: str) -> Sample:
    """Topic 1 of GOOD_QRELS as a sample: d1, d2 judged of d1..d4."""
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["d1", "d2", "d3", "d4"],
                          "relevance": [1.0, 0.0, np.nan, np.nan], "stratum": "1",
                          "inclusion": [0.5, 0.5, np.nan, np.nan]})
    if design == "with-replacement":
        rounds = pd.DataFrame({"query_id": "1", "round": [1], "size": [2]})
        probs = pd.DataFrame({"query_id": "1", "round": [1, 1], "doc_id": ["d1", "d2"],
                              "probability": [0.3, 0.3]})
        return Sample(design, frame.assign(stratum=""), draws=probs, rounds=rounds,
                      round_probs=probs, meta={"method": "active", "pool_depth": 3})
    return Sample(design, frame, meta={"method": "uniform", "pool_depth": 3})


STRATIFIED = sample_files("strat", tiny_sample("stratified"))
POOLED = sample_files("pooled", tiny_sample("pooled"))
ACTIVE = sample_files("active", tiny_sample("with-replacement"))
PENDING = sample_files("pending", tiny_sample("stratified"),
                       {"pending": 2, "complete": False, "runs": ["/nonexistent/run.gz"]})
SAMPLE_ARGS = ("uniform", "@run", "--qrels", "@qrels", "--budget", "2")


def command_case(command: str, *args: str, blame: str | None, says: tuple[str, ...] = (),
                 lacks: tuple[str, ...] = (), files: dict[str, str | bytes] | None = None
                 ) -> Case:
    """A bad invocation of ``command`` with a good qrels and run and ``files`` beside."""
    return Case(files={"qrels": GOOD_QRELS, "run": GOOD_RUN, **(files or {})}, args=args,
                blame=blame, says=says, command=command, lacks=lacks)


SAMPLE_CASES = [
    pytest.param(command_case("sample", *SAMPLE_ARGS, "-o", "@existing", blame="existing",
                              files={"existing": "notes\n"}, says=("not a directory",)),
                 id="sample-o-existing-file"),
    pytest.param(command_case("sample", *SAMPLE_ARGS, "-o", "@strat", blame="strat",
                              files=STRATIFIED, says=("holds a sample",)),
                 id="sample-o-directory-holding-a-sample"),
    pytest.param(command_case("sample", *SAMPLE_ARGS, "-o", "@busy", blame="busy",
                              files={"busy/notes.txt": "x\n"}, says=("not empty",)),
                 id="sample-o-non-empty-directory"),
    pytest.param(command_case("sample", "uniform", "@run", "--budget", "2", "-o", "@s",
                              "--batch", "0", blame=None, says=("--batch",)),
                 id="sample-batch-0"),
    pytest.param(command_case("estimate", "@run", "@strat", "--sample-format", "sampleval",
                              blame="strat", files=STRATIFIED, says=("comes first",)),
                 id="estimate-swapped-arguments-sampleval-format"),
    pytest.param(command_case("estimate", "@run", "@strat", blame="strat", files=STRATIFIED,
                              says=("comes first",), lacks=("--sample-format",)),
                 id="estimate-swapped-arguments"),
    pytest.param(command_case("estimate", "@runs", "@strat", blame="strat",
                              files={**STRATIFIED, "runs/a.run": GOOD_RUN},
                              says=("comes first",)),
                 id="estimate-runs-directory-first"),
    pytest.param(command_case("estimate", "@empty", "@run", blame="empty",
                              files={"empty": ""}, says=("empty file",),
                              lacks=("columns",)),
                 id="estimate-empty-sample-file"),
    pytest.param(command_case("estimate", "@run", "@sample.txt", blame="run",
                              files={"sample.txt": "1 0 d1 A 1\n1 0 d2 A -1\n"},
                              says=("TREC run", "sample first"), lacks=("--sample-format",)),
                 id="estimate-swapped-files"),
    pytest.param(command_case("estimate", "@pending", "@run", blame="pending", files=PENDING,
                              says=("2 proposed documents", "sampleval judge")),
                 id="estimate-while-documents-await-labels"),
    pytest.param(command_case("estimate", "@pooled", "@run", blame=None, files=POOLED,
                              says=("sampleval evaluate",)),
                 id="estimate-pooled-sample"),
    pytest.param(command_case("estimate", "@strat", "@run", "-o", "@strat/results.tsv",
                              blame="strat/results.tsv", files=STRATIFIED,
                              says=("inputs",)),
                 id="estimate-o-an-input"),
    pytest.param(command_case("evaluate", "@strat", "@run", blame="strat", files=STRATIFIED,
                              says=("stratified sample", "sampleval estimate")),
                 id="evaluate-random-sample-as-qrels"),
    pytest.param(command_case("evaluate", "@qrels", "@run", "-o", "@folder", blame="folder",
                              files={"folder/x": "1"}, says=("is a directory",)),
                 id="evaluate-o-directory"),
    pytest.param(command_case("evaluate", "@qrels", "@run", "-o", "@qrels", blame="qrels",
                              says=("inputs",)), id="evaluate-o-its-qrels"),
    pytest.param(command_case("evaluate", "@qrels", "@run", "-o", "@nowhere/out.tsv",
                              blame="nowhere/out.tsv", says=("no such directory",)),
                 id="evaluate-o-missing-directory"),
    pytest.param(command_case("export", "@strat", "-o", "@existing", blame="existing",
                              files={**STRATIFIED, "existing": "1 0 d9 1\n"},
                              says=("exists",)), id="export-o-existing-file"),
    pytest.param(command_case("export", "@active", "-o", "@out.txt", "--as", "sample-qrels",
                              blame=None, files=ACTIVE, says=("with-replacement", "prels")),
                 id="export-with-replacement-as-sample-qrels"),
    pytest.param(command_case("export", "@missing", "-o", "@out.txt", blame="missing"),
                 id="export-missing-sample"),
    pytest.param(command_case("judge", "@strat", "@qrels", blame="strat", files=STRATIFIED,
                              says=("not started for judging",)),
                 id="judge-a-finished-sample"),
    pytest.param(command_case("judge", "@pending", "@missing.qrels", blame="missing.qrels",
                              files=PENDING), id="judge-missing-judgments"),
    pytest.param(command_case("judge", "@pending", "@qrels", blame=ANY_PATH, files=PENDING,
                              says=("/nonexistent/run.gz", "give them again")),
                 id="judge-runs-moved"),
    pytest.param(command_case("sample", "uniform", "-", "--budget", "2", "-o", "@s",
                              blame=ANY_PATH, says=("-: standard input", "cannot read again",
                                                    "--qrels")),
                 id="sample-to-judge-from-standard-input"),
    pytest.param(command_case("evaluate", "@run", "@qrels", blame="run",
                              says=("first argument looks like a TREC run file",
                                    "give the qrels first")),
                 id="evaluate-swapped-arguments"),
    pytest.param(command_case("trec_eval", "@run", "@qrels", blame="run",
                              says=("first argument looks like a TREC run file",
                                    "give the qrels first")),
                 id="trec_eval-swapped-arguments"),
    pytest.param(command_case("estimate", "@run", "@run", blame="run",
                              says=("first argument looks like a TREC run file",
                                    "give the sample first")),
                 id="estimate-run-first"),
    pytest.param(command_case("compare", "@run", "@strat", "@run", blame="strat",
                              files=STRATIFIED, says=("comes first", "sampleval compare")),
                 id="compare-swapped-arguments"),
    pytest.param(command_case("judge", "@qrels", "@pending", blame="qrels", files=PENDING,
                              says=("first argument looks like a judgments file",)),
                 id="judge-swapped-arguments"),
    pytest.param(command_case("evaluate", "@qrels", "@run", "-m", "xinfap", blame=None,
                              says=("xinfAP is an estimate", "sampleval estimate")),
                 id="evaluate-an-estimator-name"),
    pytest.param(command_case("evaluate", "@qrels", "@run", "-m", "ndgc@10", blame=None,
                              says=("did you mean nDCG?",)),
                 id="evaluate-misspelt-measure"),
]

ERROR_CASES = [
    pytest.param(case(run="1 Q0 d1 1 0.9 t\n1 Q0 d2 2 0.8 t\n1 Q0 d3 0.7 t\n1 Q0 d4 4 0.6 t\n",
                      line=3, says=("5",)), id="run-5-columns-line-3"),
    pytest.param(case(run="1\tQ0\td1\t1\t0.9\tt\n1\tQ0\td2\t2\t0.8\tt\n1\tQ0\td3\t\t0.7\tt\n",
                      line=3, says=("5",)), id="run-5-columns-empty-tab-field"),
    *[pytest.param(case(run=f"1 Q0 d1 1 0.9 t\n1 Q0 d2 2 {score} t\n", line=2,
                        says=(repr(score),)), id=f"run-score-{score}")
      for score in ("abc", "nan", "inf")],
    pytest.param(case(run=""), id="run-empty"),
    pytest.param(case(run="\n\n   \n\t\n\r\n"), id="run-blank-lines-only"),
    pytest.param(case(run=BINARY), id="run-binary"),
    pytest.param(case(run=gz(BINARY)), id="run-gzip-of-binary"),
    pytest.param(case(run=gz(GOOD_RUN * 3)[:30]), id="run-truncated-gz"),
    pytest.param(case(run=b"\x1f\x8b" + SEEDED.randbytes(60)), id="run-corrupt-gz"),
    pytest.param(case(run=big_truncated_gz()), id="run-truncated-gz-past-64k"),
    pytest.param(case(args=("@qrels", "@missing.run"), blame="missing.run"),
                 id="run-missing"),
    pytest.param(case(args=("@missing.qrels", "@run"), blame="missing.qrels"),
                 id="qrels-missing"),
    pytest.param(case(args=("@folder", "@run"), blame="folder", extra={"folder/x": "1"}),
                 id="qrels-is-directory"),
    pytest.param(case(run=GOOD_RUN + "1 Q0 d1 4 0.1 tagA\n", line=4,
                      says=("d1", "line 1", "--duplicates first|last")),
                 id="run-repeated-docno"),
    pytest.param(case(qrels="1 0 d1 1\n1 0 d2\n1 0 d3 2\n", line=2, says=("3",)),
                 id="qrels-3-columns"),
    pytest.param(case(qrels="1 0 d1 1\n1 0 d2 yes\n", line=2, says=("'yes'",)),
                 id="qrels-rel-not-a-number"),
    pytest.param(case(qrels="1 0 d1 1\n1 0 d2 0\n1 0 d1 2\n", line=3, says=("d1", "line 1")),
                 id="qrels-judged-twice"),
    pytest.param(case(args=("@qrels", "@run", "-m", "Foo@3"), says=("Foo@3",)),
                 id="unknown-measure"),
    pytest.param(case(args=("@qrels", "@run", "-m", "P"), says=("'P'", "cutoff")),
                 id="P-without-cutoff"),
    pytest.param(case(args=("@qrels", "@nothing*.run"), blame="nothing*.run"),
                 id="glob-matches-nothing"),
    pytest.param(case(qrels="2 0 d1 1\n2 0 d2 0\n", blame=None, args=("@qrels", "@run",
                                                                       "-m", "AP,P@2"),
                      says=("tagA", "no topic")), id="no-common-topic"),
    pytest.param(case(qrels="2 0 d1 1\n2 0 d2 0\n", blame=None, says=("tagA", "no topic")),
                 id="no-common-topic-default-measures"),
    *SAMPLE_CASES,
]


def materialise(root: Path, spec: Case) -> list[str]:
    """Write the case's files under ``root``; return its command-line arguments."""
    for name, content in spec.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    args = [str(root / a[1:]) if a.startswith("@") else a for a in spec.args]
    return [spec.command, *args, *(["--format", "tsv"] if spec.command in (
        "evaluate", "estimate") else [])]


@dataclass(frozen=True)
class Outcome:
    """What one invocation did: the folder its files are in, its output and exit code."""

    root: Path
    stdout: str
    stderr: str
    code: int


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every error case run once, by case id."""
    jobs: dict[str, tuple[Path, list[str]]] = {}
    for param in ERROR_CASES:
        spec = param.values[0]
        assert isinstance(spec, Case) and param.id is not None
        root = tmp_path_factory.mktemp(param.id)
        jobs[param.id] = (root, materialise(root, spec))
    done = [run_cli(args) for _, args in jobs.values()]
    return {key: Outcome(root, result.stdout, result.stderr, result.code)
            for (key, (root, _)), result in zip(jobs.items(), done, strict=True)}


@pytest.mark.slow
@pytest.mark.parametrize("spec", ERROR_CASES)
def test_bad_input_is_one_line(request: pytest.FixtureRequest, spec: Case,
                               outcomes: dict[str, Outcome]) -> None:
    """Exit 2, nothing on stdout, one stderr line 'sampleval: error: path[:line]: ...'."""
    got = outcomes[request.node.callspec.id]
    assert "Traceback" not in got.stderr, got.stderr
    assert got.code == 2, got.stderr
    assert got.stdout == ""
    lines = got.stderr.splitlines()
    assert len(lines) == 1, got.stderr
    line = lines[0]
    assert line.startswith("sampleval: error: ")
    if spec.blame == ANY_PATH:
        pass
    elif spec.blame is not None:
        where = str(got.root / spec.blame)
        where += f":{spec.line}: " if spec.line is not None else ": "
        assert line.startswith(f"sampleval: error: {where}"), line
    else:
        assert str(got.root) not in line
    for text in spec.says:
        assert text in line, line
    for text in spec.lacks:
        assert text not in line, line
    for name, content in spec.files.items():  # a refused command changes no file
        expected = content if isinstance(content, bytes) else content.encode()
        assert (got.root / name).read_bytes() == expected, name


@pytest.mark.parametrize("case_id", ["run-5-columns-line-3", "run-truncated-gz-past-64k"])
def test_the_console_script_fails_as_main_does(case_id: str,
                                               outcomes: dict[str, Outcome]) -> None:
    """The installed ``sampleval`` script, a process of its own, prints what ``main`` prints
    in this process and exits 2: what the other cases check in-process holds for it."""
    got = outcomes[case_id]
    spec = next(p.values[0] for p in ERROR_CASES if p.id == case_id)
    assert isinstance(spec, Case)
    done = subprocess.run([str(SAMPLEVAL), *materialise(got.root, spec)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (got.code, got.stdout, got.stderr)


def write(root: Path, files: dict[str, str | bytes]) -> dict[str, Path]:
    """Write files under ``root``; return their paths by name."""
    paths = {}
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[name] = path
    return paths


def tsv_rows(text: str) -> list[tuple[str, str, str, str]]:
    """TSV output as (run, topic, measure, value) rows, the header checked."""
    lines = text.splitlines()
    assert lines[0] == "run\ttopic\tmeasure\tvalue"
    rows = [tuple(line.split("\t")) for line in lines[1:]]
    assert all(len(row) == 4 for row in rows)
    return rows  # type: ignore[return-value]


def test_tsv_mean_values_computed_by_hand(tmp_path: Path) -> None:
    """AP = (1/1 + 2/3)/3, P@2 = 1/2 and friends, mean rows under topic 'all'."""
    f = write(tmp_path, {"qrels": GOOD_QRELS, "run": GOOD_RUN})
    result = run_cli(["evaluate", f["qrels"], f["run"], "--format", "tsv",
                      "-m", "AP,P@2,Rprec,RR,nDCG@3,Bpref,NumRel,NumRet,NumRelRet"])
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    rows = tsv_rows(result.stdout)
    assert {(run, topic) for run, topic, _, _ in rows} == {("tagA", "all")}
    values = {measure: value for _, _, measure, value in rows}
    expected = {"AP": AP_1, "P@2": 0.5, "Rprec": 2 / 3, "RR": 1.0, "nDCG@3": NDCG_3,
                "Bpref": 1 / 3}
    for measure, value in expected.items():
        assert float(values[measure]) == pytest.approx(value, abs=1e-12), measure
    assert (values["NumRel"], values["NumRet"], values["NumRelRet"]) == ("3", "3", "2")


def test_per_topic_rows(tmp_path: Path) -> None:
    """--per-topic adds a row per topic; the mean row averages them."""
    f = write(tmp_path, {"qrels": QRELS_2, "run": RUN_2})
    result = run_cli(["evaluate", f["qrels"], f["run"], "-f", "tsv", "-m", "AP,P@2",
                      "--per-topic"])
    assert result.code == 0, result.stderr
    values = {(topic, measure): float(value)
              for _, topic, measure, value in tsv_rows(result.stdout)}
    expected = {("1", "AP"): AP_1, ("2", "AP"): 1.0, ("all", "AP"): (AP_1 + 1) / 2,
                ("1", "P@2"): 0.5, ("2", "P@2"): 0.5, ("all", "P@2"): 0.5}
    assert values.keys() == expected.keys()
    for key, value in expected.items():
        assert values[key] == pytest.approx(value, abs=1e-12), key


def test_name_by_file(tmp_path: Path) -> None:
    """--name-by file names runs by base name, .gz stripped."""
    f = write(tmp_path, {"qrels": GOOD_QRELS, "runs/first.run.gz": gz(GOOD_RUN),
                         "runs/second.run": GOOD_RUN.replace("tagA", "tagB")})
    result = run_cli(["evaluate", f["qrels"], tmp_path / "runs", "-f", "tsv", "-m", "AP",
                      "--name-by", "file"])
    assert result.code == 0, result.stderr
    assert [run for run, _, _, _ in tsv_rows(result.stdout)] == ["first.run", "second.run"]


def test_shared_tag_warns_and_names_by_file(tmp_path: Path) -> None:
    """Two files with one tag: named by file, one 'sampleval: warning:' line, exit 0."""
    f = write(tmp_path, {"qrels": GOOD_QRELS, "one.txt": GOOD_RUN, "two.txt": GOOD_RUN})
    result = run_cli(["evaluate", f["qrels"], f["one.txt"], f["two.txt"], "-f", "tsv",
                      "-m", "AP"])
    assert result.code == 0, result.stderr
    assert [run for run, _, _, _ in tsv_rows(result.stdout)] == ["one.txt", "two.txt"]
    warnings = result.stderr.splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith("sampleval: warning: ")
    assert "tagA" in warnings[0]


def test_json_output(tmp_path: Path) -> None:
    """--format json is {run: {topic: {measure: value}}}."""
    f = write(tmp_path, {"qrels": QRELS_2, "run": RUN_2})
    result = run_cli(["evaluate", f["qrels"], f["run"], "-f", "json", "-m", "AP,P@2", "-q"])
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"tagA"}
    assert set(data["tagA"]) == {"1", "2", "all"}
    assert data["tagA"]["1"]["AP"] == pytest.approx(AP_1, abs=1e-12)
    assert data["tagA"]["all"]["P@2"] == pytest.approx(0.5, abs=1e-12)


def test_trec_output(tmp_path: Path) -> None:
    """--format trec prints trec_eval's lines: name padded to 22, tab, topic, tab, value."""
    f = write(tmp_path, {"qrels": GOOD_QRELS, "run": GOOD_RUN})
    result = run_cli(["evaluate", f["qrels"], f["run"], "-f", "trec", "-m", "AP,P@2,NumRel"])
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"{'runid':<22}\tall\ttagA"
    assert f"{'map':<22}\tall\t{AP_1:.4f}" in lines
    assert "map                   \tall\t0.5556" in lines
    assert f"{'P_2':<22}\tall\t0.5000" in lines
    assert f"{'num_rel':<22}\tall\t3" in lines
    assert all(re.fullmatch(r"\S+ *\t\S+\t\S+", line) for line in lines)


def test_trec_output_names_what_trec_eval_cannot(tmp_path: Path) -> None:
    """A measure with its own relevance level or parameters, which trec_eval's name cannot
    say (trec_eval's -l is one level for every measure), prints under its library name:
    before, P(rel=2)@2 printed as P_2 beside P@2's own P_2 line, and nDCG with gains as
    ndcg, so a reader of the output took one for the other."""
    f = write(tmp_path, {"qrels": GOOD_QRELS, "run": GOOD_RUN})
    result = run_cli(["evaluate", f["qrels"], f["run"], "-f", "trec", "-m",
                      "P@2,P(rel=2)@2,AP(rel=2),nDCG(gains={1:3,2:9}),RBP(p=0.5)"])
    assert result.code == 0, result.stderr
    names = [line.split("\t")[0].rstrip() for line in result.stdout.splitlines()]
    assert names == ["runid", "P_2", "P(rel=2)@2", "AP(rel=2)", "nDCG(gains={1:3,2:9})",
                     "RBP(p=0.5)"]


def test_qrels_topic_no_run_retrieved(tmp_path: Path) -> None:
    """A qrels topic missing from every run is left out of the mean (trec_eval without -c)."""
    f = write(tmp_path, {"qrels": QRELS_2, "run": GOOD_RUN})
    result = run_cli(["evaluate", f["qrels"], f["run"], "-f", "tsv"])
    assert result.code == 0, result.stderr
    values = {measure: float(value) for _, _, measure, value in tsv_rows(result.stdout)}
    assert values["AP"] == pytest.approx(AP_1, abs=1e-12)
    assert values["RR"] == 1.0


@pytest.mark.parametrize("args", [["--help"], ["evaluate", "--help"]])
def test_help(args: list[str]) -> None:
    """--help exits 0; evaluate --help lists every option."""
    result = run_cli(args)
    assert result.code == 0, result.stderr
    assert "evaluate" in result.stdout
    if args[0] == "evaluate":
        for option in ("--measure", "--per-topic", "--depth", "--rel-level", "--all-topics",
                       "--judged-only", "--format", "--name-by", "--duplicates"):
            assert option in result.stdout, option
