"""Issue 28's everyday path, this stop's walk: the defects the last walk found and left, and
those of a new walk (trec_eval drop-in flags, --explain, methods --defaults, simulate's
reports, every --help), each with the test that failed before its fix."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from sampleval import cli
from sampleval.measures.evaluation import evaluate

ROOT = Path(__file__).resolve().parents[2]
TREC_EVAL = ROOT.parent / "shared" / "data" / "trec_eval-test"
needs_data = pytest.mark.skipif(not (TREC_EVAL / "qrels.test").exists(),
                                reason="trec_eval's test files not beside the repository")


def _warnings(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[str], str]:
    """Run ``argv`` in process: its warnings' texts and its standard output."""
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cli.run(list(argv))
    return [str(w.message) for w in seen], capsys.readouterr().out


@needs_data
def test_a_level_above_every_grade_warns_once_naming_the_file_and_the_largest_grade(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``-l 5`` on qrels graded 0-1: trec_eval gives zeros without a word; sampleval gives
    the same zeros and one warning naming the file and its largest grade (evaluate,
    estimate with the command's level and with a measure's own ``rel=``). Fails on main
    (no warning)."""
    qrels, run = str(TREC_EVAL / "qrels.test"), str(TREC_EVAL / "results.test")
    said, out = _warnings(capsys, "evaluate", qrels, run, "-m", "P_10", "-l", "5", "-f", "tsv")
    assert [s for s in said if "relevance level" in s] == [
        f"{qrels}: relevance level 5 is above its largest grade, 1: no document counts as "
        "relevant there, so every measure counting relevant documents is 0 at that level"]
    assert float(out.splitlines()[1].split("\t")[-1]) == 0
    said, _ = _warnings(capsys, "evaluate", qrels, run, "-m", "P_10", "-f", "tsv")
    assert not [s for s in said if "relevance level" in s]
    for extra in (["-m", "P@10", "-l", "3"], ["-m", "P(rel=3)@10"]):
        said, _ = _warnings(capsys, "estimate", qrels, run, *extra, "-f", "tsv")
        assert next(s for s in said if "relevance level" in s).startswith(
            f"{qrels}: relevance level 3 is above its largest grade, 1")
    said, _ = _warnings(capsys, "estimate", qrels, run, "-m", "P@10,nDCG@10", "-f", "tsv")
    assert not [s for s in said if "relevance level" in s]


def test_the_library_warns_too_naming_the_qrels() -> None:
    qrels = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "relevance": [0, 2]})
    run = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    with pytest.warns(UserWarning, match="the qrels: relevance level 3 is above its largest "
                                         "grade, 2"):
        got = evaluate(qrels, run, ["P@1", "P@2"], rel_level=3)
    assert (got["value"] == 0).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate(qrels, run, ["P@2"], rel_level=2)  # at the largest grade: no warning


def test_an_unknown_option_is_named_once_and_points_to_the_commands_help(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``sampleval evaluate -n`` (trec_eval's no-summary flag) said "sampleval: error:
    sampleval: unrecognized arguments: -n (see 'sampleval --help')": the program twice and
    the wrong help. Now the command's parser says it, with the drop-in that takes the flag.
    Fails on main."""
    with pytest.raises(SystemExit):
        cli.run(["evaluate", "-n", "-q", "qrels", "run"])
    assert capsys.readouterr().err == (
        "sampleval: error: sampleval evaluate: unrecognized arguments: -n; 'sampleval "
        "trec_eval' takes trec_eval's options as they are (see 'sampleval evaluate --help')\n")
    with pytest.raises(SystemExit):
        cli.run(["estimate", "sample", "run", "--bogus"])
    assert capsys.readouterr().err == ("sampleval: error: sampleval estimate: unrecognized "
                                       "arguments: --bogus (see 'sampleval estimate --help')\n")
    with pytest.raises(SystemExit):
        cli.run(["bogus"])
    assert capsys.readouterr().err.startswith("sampleval: error: argument COMMAND: invalid "
                                              "choice: 'bogus'")


def test_trec_eval_s_measure_parameters_are_explained() -> None:
    """``-m P.10`` (trec_eval's NAME.PARAMS) in ``evaluate``: the list of every measure
    before; now what to write instead. Fails on main."""
    from sampleval.errors import UsageError
    from sampleval.measures.names import parse_measure

    with pytest.raises(UsageError) as said:
        parse_measure("P.10")
    assert str(said.value) == (
        "unknown measure 'P.10': trec_eval's '-m NAME.PARAMS' form; here a cutoff is written "
        "as trec_eval prints it (P_10), or 'sampleval trec_eval -m P.10' takes trec_eval's "
        "options as they are")
    with pytest.raises(UsageError, match="known: "):
        parse_measure("foo.3")


@needs_data
def test_explain_says_a_default_measure_was_not_named(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """``estimate --explain`` without -m said 'estimator: AP~ht (as named)' for the default
    measures nobody named; now it says the defaults table chose them. Fails on main."""
    qrels, run = str(TREC_EVAL / "qrels.test"), str(TREC_EVAL / "results.test")
    cli.run(["estimate", qrels, run, "--explain"])
    lines = [x for x in capsys.readouterr().out.splitlines() if "estimator:" in x]
    assert lines and all("as named" not in x and x.endswith(
        "(by the defaults table for census samples; no -m: a default measure)") for x in lines)
    cli.run(["estimate", qrels, run, "--explain", "-m", "AP~ht,P@10"])
    lines = [x for x in capsys.readouterr().out.splitlines() if "estimator:" in x]
    assert lines == ["  estimator: AP~ht (as named)",
                     "  estimator: P@10~ht (by the defaults table for census samples)"]
