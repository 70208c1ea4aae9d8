"""trec_eval 10's own test suite: ``sampleval trec_eval`` prints each golden output byte for
byte (the cases of ``../shared/data/trec_eval-test/README.md``, run through the command line
in-process, in the test directory, as ``make quicktest`` runs them)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from sampleval.cli import run as cli

pytestmark = pytest.mark.shared

CASES = [
    ("out.test", "qrels.test results.test"),
    ("out.test", "qrels.test.with-comments results.test"),
    ("out.comment.test", "qrels.comment.test results.comment.test"),
    ("out.test.a", "-m all_trec qrels.test results.test"),
    ("out.test.aq", "-m all_trec -q qrels.test results.test"),
    ("out.test.aqc", "-m all_trec -q -c qrels.test results.trunc"),
    ("out.test.aqcM", "-m all_trec -q -c -M100 qrels.test results.trunc"),
    ("out.test.aql", "-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test"),
    ("out.test.prefs", "-m all_prefs -q -R prefs prefs.test prefs.results.test"),
    ("out.test.prefs", "-m all_prefs -q -R prefs prefs.comment.test prefs.results.test"),
    ("out.test.qrels_prefs", "-m all_prefs -q -R qrels_prefs qrels.test results.test"),
    ("out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg qrels.123 results.test"),
    ("out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg qrels.comments.123 results.test"),
    ("out.test.meas_params", "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 "
     "-m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35 -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 "
     "-mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 qrels.test results.test"),
    ("out.test.aqZ", "-q -m all_trec -Z zscores_file qrels.test results.test"),
]


def test_the_cases_are_the_suites_table(trec_eval_suite: Path) -> None:
    """The cases here are exactly those the shared README tables (15)."""
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|$",
                      (trec_eval_suite / "README.md").read_text(),
                      re.MULTILINE)
    assert rows == CASES and len(CASES) == 15


@pytest.mark.parametrize(("golden", "args"), CASES,
                         ids=[f"{g}:{a.split()[-2]}" for g, a in CASES])
def test_golden_output(trec_eval_suite: Path, golden: str, args: str,
                       monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(trec_eval_suite)
    cli(["trec_eval", *shlex.split(args)])
    assert capsys.readouterr().out == (trec_eval_suite / golden).read_text()
