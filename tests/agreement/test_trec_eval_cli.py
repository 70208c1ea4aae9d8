"""``sampleval trec_eval``'s command line: trec_eval's option syntax, its output on small
cases worked by hand, and one-line errors (exit code 2) for what it refuses."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from sampleval.cli import main
from sampleval.compat.trec_eval import Options, atof, atol, getopt, parse_options, select
from sampleval.errors import UsageError

# Topic 1: d1 (1), d2 (0), d3 (2) retrieved in that order, d4 (1) not; R = 3.
# Topic 3: retrieved, not judged. (Topic 2 of TOPIC_2: judged, not retrieved.)
QRELS = "1 0 d1 1\n1 0 d2 0\n1 0 d3 2\n1 0 d4 1\n"
TOPIC_2 = "2 0 d5 1\n"
RUN = "1 Q0 d1 1 0.9 tagA\n1 Q0 d2 2 0.8 tagA\n3 Q0 d9 1 5 tagA\n1 Q0 d3 3 0.7 tagB\n"
AP_1 = (1 / 1 + 2 / 3) / 3


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


def trec_eval(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
              *args: str) -> tuple[int, str, str]:
    """Run ``sampleval trec_eval ARGS`` in-process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["sampleval", "trec_eval", *args])
    try:
        main()
        code = 0
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def table(out: str) -> dict[tuple[str, str], str]:
    return {(name.strip(), topic): value
            for name, topic, value in (line.split("\t") for line in out.splitlines())}


def test_getopt_reads_options_as_gnu_getopt_long() -> None:
    options, operands = getopt(["-qc", "-mP.5", "q", "-m", "map", "r", "--meas=ndcg",
                                "--Judged", "-l2", "--", "-n"])
    assert options == [("q", ""), ("c", ""), ("m", "P.5"), ("m", "map"), ("m", "ndcg"),
                       ("J", ""), ("l", "2")]
    assert operands == ["q", "r", "-n"]
    assert getopt(["-", "-M", "100"]) == ([("M", "100")], ["-"])


@pytest.mark.parametrize(("argv", "message"), [
    (["-x", "q", "r"], "invalid option -- 'x'"),
    (["q", "r", "-m"], "requires an argument -- 'm'"),
    (["--nos=1", "q", "r"], "doesn't allow an argument"),
    (["--Re", "q", "r"], "ambiguous"),
    (["--measures", "q", "r"], "unrecognized option"),
    (["-m", "mpa", "q", "r"], "illegal measure 'mpa' (did you mean map?)"),
    (["-m", "P.", "q", "r"], "improper measure"),
])
def test_bad_options(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_options(argv)
    assert message in str(error.value)


def test_parameters_are_read_like_atol_and_atof() -> None:
    assert (atol(" 23.4"), atol("x"), atol("-7z")) == (23, 0, -7)
    assert (atof(".25"), atof("5.0e1x"), atof("abc"), atof("1e")) == (0.25, 50.0, 0.0, 1.0)
    opts = parse_options(["-m", "P.5,7,3", "-m", "P.10", "-m", "ndcg_cut.10,20,23.4",
                          "-m", "iprec_at_recall..5,.25", "-m", "ndcg.1=3,2=4.5", "q", "r"])
    names = [item.name for item in select(opts)]
    assert names == ["iprec_at_recall_0.25", "iprec_at_recall_0.50", "P_3", "P_5", "P_7",
                     "ndcg_1=3,2=4.5", "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]


@pytest.mark.parametrize("measure", ["P.0", "P.5,5", "ndcg.1=3,2", "utility.1,2"])
def test_bad_measure_parameters(measure: str) -> None:
    with pytest.raises(UsageError):
        select(parse_options(["-m", measure, "q", "r"]))


def test_official_measures_by_default(files: tuple[str, str]) -> None:
    names = [item.name for item in select(Options())]
    assert names[:5] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret"]
    assert names[-9:] == [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]


def test_per_topic_and_summary(files: tuple[str, str], capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = trec_eval(capsys, monkeypatch, "-q", "-m", "map", "-m", "P.2",
                               "-m", "num_ret", *files)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "num_ret               \t1\t3"
    values = table(out)
    assert values[("map", "1")] == f"{AP_1:6.4f}" and values[("P_2", "1")] == "0.5000"
    assert ("map", "3") not in values  # topic 3: not judged
    assert values[("map", "all")] == f"{AP_1:6.4f}"


def test_a_judged_topic_the_run_lacks_is_skipped_without_c(
        files: tuple[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As trec_eval 9 and trec_eval's help (trec_eval 10.0 exits: docs/guide/trec_eval.md)."""
    Path(files[0]).write_text(QRELS + TOPIC_2)
    code, out, err = trec_eval(capsys, monkeypatch, "-q", "-m", "map", *files)
    assert (code, err) == (0, "")
    assert ("map", "2") not in table(out) and table(out)[("map", "all")] == f"{AP_1:6.4f}"


def test_complete_topics_measure_trec_evals_stand_in_ranking(
        files: tuple[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """-c: topic 2 is measured on a one-document ranking (so num_ret prints 0, and map 0)."""
    Path(files[0]).write_text(QRELS + TOPIC_2)
    _, out, _ = trec_eval(capsys, monkeypatch, "-q", "-c", "-m", "official", *files)
    values = table(out)
    assert values[("num_ret", "2")] == "0" and values[("map", "2")] == "0.0000"
    assert values[("num_q", "all")] == "2" and values[("num_ret", "all")] == "3"
    assert values[("map", "all")] == f"{AP_1 / 2:6.4f}"
    assert values[("runid", "all")] == "tagB"  # the last line's tag


def test_relevance_level_depth_judged_only_and_no_summary(
        files: tuple[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, out, _ = trec_eval(capsys, monkeypatch, "-l2", "-m", "map", "-m", "num_rel", *files)
    assert table(out)[("map", "all")] == f"{1 / 3 / 1:6.4f}"  # d3 at rank 3, R = 1
    _, out, _ = trec_eval(capsys, monkeypatch, "-M1", "-m", "num_ret", "-m", "map", *files)
    assert table(out)[("num_ret", "all")] == "1"
    _, out, _ = trec_eval(capsys, monkeypatch, "-qn", "-m", "relstring", "-m", "map", *files)
    assert out == "map                   \t1\t0.5556\nrelstring             \t1\t'102'\n"


def test_results_from_standard_input(files: tuple[str, str],
                                     capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(RUN.encode())))
    _, out, _ = trec_eval(capsys, monkeypatch, "-m", "map", files[0], "-")
    assert table(out)[("map", "all")] == f"{AP_1:6.4f}"


def test_help_describes_options_and_the_measures_asked_for(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = trec_eval(capsys, monkeypatch, "-h", "-m", "ndcg", "-R", "prefs")
    assert code == 0
    assert "-q, --query_eval_wanted" in out and "Rel_info format prefs" in out
    assert "\nndcg\n    Normalised DCG" in out and "\nmap\n" not in out


@pytest.mark.parametrize(("args", "message"), [
    (["-m", "map"], "expected rel_info_file and results_file"),
    (["-R", "qrels_xyz"], "illegal rel_format 'qrels_xyz'"),
    (["-T", "json"], "illegal retrieval results format"),
    (["-R", "prefs", "-m", "map"], "measure 'map' needs -R qrels"),
    (["-m", "prefs_simp"], "needs -R prefs or -R qrels_prefs"),
    (["-M0"], "-M must be at least 1"),
])
def test_refused_command_lines_are_one_line(args: list[str], message: str,
                                            files: tuple[str, str],
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    operands = [] if args == ["-m", "map"] else list(files)
    code, out, err = trec_eval(capsys, monkeypatch, *args, *operands)
    assert code == 2 and out == ""
    assert err.startswith("sampleval: error: ") and message in err and err.count("\n") == 1


def test_bad_files_are_named(tmp_path: Path, files: tuple[str, str],
                             capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad_run"
    bad.write_text("1 Q0 d1 1 0.9 tagA\n1 Q0 d2 2 0.8 tagA\n1 Q0 d3 3 x tagA\n")
    code, _, err = trec_eval(capsys, monkeypatch, files[0], str(bad))
    assert code == 2 and f"{bad}:3: score 'x' is not a finite number" in err
    code, _, err = trec_eval(capsys, monkeypatch, files[0], str(tmp_path / "none"))
    assert code == 2 and "no such file" in err
    code, _, err = trec_eval(capsys, monkeypatch, "-D", "0.7", *files)
    assert code == 2 and "no queries with both results and relevance info" in err


# A run repeating d1 in topic 1 (lines 1 and 4: ranks 1 and 4) and d9 in topic 3 (not judged)
REPEATS = ("1 Q0 d1 1 0.9 t\n1 Q0 d2 2 0.8 t\n1 Q0 d3 3 0.7 t\n1 Q0 d1 4 0.1 t\n"
           "3 Q0 d9 1 5 t\n3 Q0 d9 2 4 t\n")


def test_a_repeated_document_is_an_error_where_trec_eval_finds_it(
        tmp_path: Path, files: tuple[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """trec_eval 10 checks repeats after ranking and cutting at -M, in the topics it
    evaluates: d1 at ranks 1 and 4 stops it unless -M 3 cuts the second; topic 3's repeat
    (not judged) never counts. Both checked against the trec_eval binary (docs/guide/trec_eval.md)."""
    run = tmp_path / "repeats"
    run.write_text(REPEATS)
    code, out, err = trec_eval(capsys, monkeypatch, "-m", "map", files[0], str(run))
    assert (code, out) == (2, "")
    assert f"{run}:4: topic 1: document d1 repeated (first at line 1)" in err
    assert "--duplicates first|last" in err and err.count("\n") == 1
    code, out, err = trec_eval(capsys, monkeypatch, "-M3", "-m", "num_ret", "-m", "map",
                               files[0], str(run))
    assert (code, err) == (0, "")
    assert table(out)[("num_ret", "all")] == "3" and table(out)[("map", "all")] == "0.5556"


@pytest.mark.parametrize(("choice", "num_ret", "ap"), [
    ("first", "3", (1 + 2 / 3) / 3),       # d1 stays at rank 1
    ("last", "3", (1 / 2 + 2 / 3) / 3),    # d1 moves to rank 3 (score 0.1): d2, d3, d1
])
def test_duplicates_option_keeps_one(tmp_path: Path, files: tuple[str, str], choice: str,
                                     num_ret: str, ap: float,
                                     capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "repeats"
    run.write_text(REPEATS)
    code, out, err = trec_eval(capsys, monkeypatch, f"--duplicates={choice}", "-m", "num_ret",
                               "-m", "map", files[0], str(run))
    assert (code, err) == (0, "")
    assert table(out)[("num_ret", "all")] == num_ret
    assert table(out)[("map", "all")] == f"{ap:6.4f}"
    code, _, err = trec_eval(capsys, monkeypatch, "--duplicates", "some", *files)
    assert code == 2 and "--duplicates must be one of error, first, last" in err
