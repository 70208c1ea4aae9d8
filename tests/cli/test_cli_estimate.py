"""`sampleval estimate` end to end: formats, intervals, sample formats, one-line errors.

Each command line runs ``sampleval.cli.main`` in this process (``conftest.run_cli``; a
console-script subprocess costs about 2 s CPU of imports a call, and
``tests/cli/test_cli_errors.py`` checks that the script prints what ``main`` prints)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import conftest
from conftest import CliResult

SAMPLE_QRELS = "1 0 a1 A 1\n1 0 a2 A 0\n1 0 b1 B 2\n1 0 b2 B -1\n1 0 b3 B -1\n1 0 b4 B 0\n"
RUN = "1 Q0 a2 1 5 r\n1 Q0 b1 2 4 r\n1 Q0 x 3 3 r\n1 Q0 a1 4 2 r\n1 Q0 b2 5 1 r\n"


def run_cli(*args: str) -> CliResult:
    return conftest.run_cli(*args)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sample.txt").write_text(SAMPLE_QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return {"sample": str(tmp_path / "sample.txt"), "run": str(tmp_path / "run.txt"),
            "dir": str(tmp_path)}


@pytest.mark.slow
def test_tsv_has_intervals_where_they_apply(files: dict[str, str]) -> None:
    got = run_cli("estimate", files["sample"], files["run"], "-m", "xinfAP,infNDCG,P@2~ht",
                  "-f", "tsv", "--per-topic")
    assert got.code == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == ("run\ttopic\tmeasure\tvalue\tlo\thi\tframe_share\timputed\tcoverage"
                        "\testimator")
    rows = {(r[1], r[2]): r for r in (line.split("\t") for line in lines[1:])}
    assert set(rows) == {(t, m) for t in ("1", "all") for m in ("xinfAP", "infNDCG", "P@2~ht")}
    assert rows[("all", "infNDCG")][4:6] == ["", ""]  # sample_eval gives no interval
    lo, value, hi = (float(rows[("all", "xinfAP")][i]) for i in (4, 3, 5))
    assert lo <= value <= hi


@pytest.mark.slow
def test_estimator_options_on_the_command_line(files: dict[str, str]) -> None:
    """Options in parentheses, commas inside them included, any case (issue 9)."""
    got = run_cli("estimate", files["sample"], files["run"], "-m",
                  "XINFAP(variance=Appendix),ap~ht(variance=linear,ap=paper)", "-m", "infAP",
                  "-f", "tsv")
    assert got.code == 0, got.stderr
    measures = [line.split("\t")[2] for line in got.stdout.splitlines()[1:]]
    assert measures == ["xinfAP(variance=appendix)", "AP~ht(ap=paper,variance=linear)", "infAP"]
    bad = run_cli("estimate", files["sample"], files["run"], "-m", "xinfAP(variance=boot)")
    assert bad.code == 2 and bad.stderr.count("\n") == 1
    assert "must be one of jackknife, appendix, linear" in bad.stderr


@pytest.mark.slow
def test_json_nests_value_and_interval(files: dict[str, str]) -> None:
    got = run_cli("estimate", files["sample"], files["run"], "-m", "xinfAP", "-f", "json")
    assert got.code == 0, got.stderr
    cell = json.loads(got.stdout)["r"]["all"]["xinfAP"]
    assert set(cell) == {"value", "lo", "hi", "frame_share", "imputed", "coverage",
                         "estimator"}
    assert cell["estimator"] == "xinfAP(bias=none,variance=jackknife,few=moment)"


@pytest.mark.slow
def test_a_saved_sample_directory_estimates_the_same(files: dict[str, str],
                                                     tmp_path: Path) -> None:
    from sampleval.io.samples import load_sample

    load_sample(files["sample"]).save(tmp_path / "saved")
    first = run_cli("estimate", files["sample"], files["run"], "-m", "xinfAP", "-f", "tsv")
    second = run_cli("estimate", str(tmp_path / "saved"), files["run"], "-m", "xinfAP",
                     "-f", "tsv")
    assert first.code == second.code == 0
    assert first.stdout == second.stdout


@pytest.mark.parametrize(("args", "says"), [
    (("-m", "Foo~ht"), "Foo~ht"),
    (("-m", "xinfAP", "--ci", "1.5"), "--ci"),
    (("--sample-format", "prels"), "sample.txt"),
])
def test_bad_requests_are_one_line(files: dict[str, str], args: tuple[str, ...],
                                   says: str) -> None:
    got = run_cli("estimate", files["sample"], files["run"], *args)
    assert got.code == 2
    assert len(got.stderr.strip().splitlines()) == 1 or "Usage" in got.stderr
    assert says in got.stderr and "Traceback" not in got.stderr


def test_a_broken_sample_names_its_line(files: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("1 0 a1 A 1\n1 0 a2 A\n")
    got = run_cli("estimate", str(bad), files["run"], "--sample-format", "sample-qrels")
    assert got.code == 2
    assert got.stderr.startswith(f"sampleval: error: {bad}:2:")
    assert len(got.stderr.splitlines()) == 1


@pytest.mark.slow
def test_an_old_option_spelling_warns_in_one_line(files: dict[str, str]) -> None:
    """``var=`` is read as ``variance=`` for one release: the same numbers, one line on
    standard error naming the new spelling."""
    old = run_cli("estimate", files["sample"], files["run"], "-m", "xinfAP(var=appendix)",
                  "-f", "tsv")
    new = run_cli("estimate", files["sample"], files["run"], "-m",
                  "xinfAP(variance=appendix)", "-f", "tsv")
    assert old.code == new.code == 0 and old.stdout == new.stdout
    said = [line for line in old.stderr.splitlines() if "spelled" in line]
    assert said == ["sampleval: warning: xinfAP: option var=appendix is now spelled "
                    "variance=appendix; the old spelling is read until the next release "
                    "(docs/guide/options.md)"]
    assert "spelled" not in new.stderr


@pytest.mark.slow
def test_explain_says_where_each_option_came_from(files: dict[str, str]) -> None:
    got = run_cli("estimate", files["sample"], files["run"], "-m",
                  "AP,R@2~ht(bias=none),xinfAP(variance=appendix),AP~ht(bias=jackknife)",
                  "--explain")
    assert got.code == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == ("AP: AP~ht(ap=ours,bias=taylor,variance=jackknife,few=completed,"
                        "interval=bias-aware)")
    assert lines[1] == "  estimator: AP~ht (by the defaults table for stratified samples)"
    assert "  bias=taylor: family default" in lines
    assert "R@2~ht(bias=none): R@2~ht(bias=none)" in lines and "  bias=none: given" in lines
    assert "  variance=appendix: given" in lines
    same = [line for line in lines if line.startswith("  interval=bias-aware: the same as")]
    assert same == ["  interval=bias-aware: the same as interval=normal with bias=jackknife "
                    "(no estimate of a bias left to widen by)"]  # not for AP's taylor
    design = next(line for line in lines if line.startswith("design: "))
    assert design.startswith("design: stratified; capabilities: ") and "has strata" in design
    assert any(line.startswith("depth: each run's whole ranking per topic") for line in lines)
    assert any(line.startswith("frame: ") for line in lines)
    assert "frame_share" not in got.stderr  # the runs are not read
    helped = run_cli("estimate", "--help")
    assert "--explain" in helped.stdout and "where each value came from" in " ".join(
        helped.stdout.split())
