"""Preference and judgment-group measures through the library (``evaluate`` with
:class:`Preferences` and :class:`GroupQrels`): the values of trec_eval's golden outputs, and
the readers' one-line errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sampleval.core.prefs import Preferences
from sampleval.core.run import Run
from sampleval.errors import InputError
from sampleval.io import read_qrels, read_run
from sampleval.io.prefs import read_group_qrels, read_prefs
from sampleval.measures.evaluation import MEAN_TOPIC, evaluate
from sampleval.measures.names import SPECS, parse_measures
from sampleval.measures.prefs import NAMES


def golden(path: Path) -> dict[tuple[str, str], str]:
    rows = (line.split("\t") for line in path.read_text().splitlines())
    return {(name.strip(), topic): value for name, topic, value in rows}


def check(results: pd.DataFrame, expected: dict[tuple[str, str], str]) -> int:
    """Every (measure, topic) value of ``results`` printed as trec_eval prints it equals the
    golden line; returns how many were compared."""
    compared = 0
    for row in results.itertuples(index=False):
        measure = parse_measures([row.measure])[0]
        count = measure.spec.trec_kind == "count"
        text = str(int(row.value)) if count else f"{row.value:6.4f}"
        assert expected[(measure.trec_name, row.query_id)] == text, (row.measure, row.query_id)
        compared += 1
    return compared


def test_names_cover_the_declared_preference_measures() -> None:
    assert set(NAMES) == {s.key for s in SPECS if s.judgments == "prefs"}


@pytest.mark.shared
def test_preferences_reproduce_trec_eval(trec_eval_suite: Path) -> None:
    prefs = read_prefs(trec_eval_suite / "prefs.test")
    run = read_run(trec_eval_suite / "prefs.results.test")
    results = evaluate(prefs, [run], list(NAMES))
    assert check(results, golden(trec_eval_suite / "out.test.prefs")) == 14 * 25


@pytest.mark.shared
def test_qrels_read_as_preferences_reproduce_trec_eval(trec_eval_suite: Path) -> None:
    qrels = read_qrels(trec_eval_suite / "qrels.test")
    run = read_run(trec_eval_suite / "results.test")
    expected = golden(trec_eval_suite / "out.test.qrels_prefs")
    assert check(evaluate(qrels, [run], list(NAMES)), expected) == 14 * 4
    prefs = Preferences.from_qrels(qrels)
    assert check(evaluate(prefs, [run], ["prefs_simp", "prefs_pair"]), expected) == 2 * 4


@pytest.mark.shared
def test_judgment_groups_reproduce_trec_eval(trec_eval_suite: Path) -> None:
    groups = read_group_qrels(trec_eval_suite / "qrels.123")
    run = read_run(trec_eval_suite / "results.test")
    measures = ["map_avgjg", *(f"P_avgjg@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
                *(f"Rprec_mult_avgjg@{x / 10}" for x in range(2, 21, 2))]
    results = evaluate(groups, [run], measures)
    assert check(results, golden(trec_eval_suite / "out.test.qrels_jg")) == 20 * 4


def test_a_qrels_file_is_one_judgment_group_per_iteration_value() -> None:
    """With a single group, map_avgjg is AP; with two, the mean of each group's AP."""
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "b", "c"],
                                       "score": [3.0, 2.0, 1.0]}), name="r")
    from sampleval.core.qrels import Qrels

    one = Qrels.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "b", "c"],
                                         "relevance": [0, 1, 1], "iteration": "u1"}))
    results = evaluate(one, [run], ["map_avgjg", "AP"])
    mean = results[results["query_id"] == MEAN_TOPIC]
    assert mean["value"].iloc[0] == mean["value"].iloc[1] == pytest.approx((1 / 2 + 2 / 3) / 2)
    two = Qrels.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "b", "c"],
                                         "relevance": [1, 1, 0],
                                         "iteration": ["u1", "u2", "u2"]}))
    value = evaluate(two, [run], ["map_avgjg"])["value"].iloc[0]
    assert value == pytest.approx((1.0 + 1 / 2) / 2)


@pytest.mark.parametrize(("text", "message"), [
    ("1 g s d1 2\n1 g s d2\n", ":2: expected 5 columns"),
    ("1 g s d1 x\n", ":1: level 'x' is not a finite number"),
])
def test_bad_prefs_lines_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prefs"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_prefs(path)


def test_contradicting_preferences_are_refused(tmp_path: Path) -> None:
    """Within a group, a > b in one subgroup and b > a in another cannot both hold."""
    path = tmp_path / "prefs"
    path.write_text("1 g s1 a 2\n1 g s1 b 1\n1 g s2 a 1\n1 g s2 b 2\n")
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a"], "score": [1.0]}),
                         name="r")
    with pytest.raises(InputError, match="contradict"):
        evaluate(read_prefs(path), [run], ["prefs_simp"])
