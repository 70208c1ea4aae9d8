"""Measure names: ir_measures syntax, trec_eval aliases, and the order results come in."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.measures.evaluation import evaluate
from sampleval.measures.names import SPECS, Measure, parse_measure, parse_measures


@pytest.mark.parametrize(("text", "expected"), [
    ("AP", Measure("AP")), ("map", Measure("AP")), ("P@10", Measure("P", 10)),
    ("P_10", Measure("P", 10)), ("ndcg_cut_20", Measure("nDCG", 20)),
    ("AP(rel=2)", Measure("AP", rel=2)), ("recip_rank", Measure("RR")),
])
def test_names_and_aliases(text: str, expected: Measure) -> None:
    assert parse_measure(text) == expected


@pytest.mark.parametrize("text", ["P", "Rprec@5", "Foo", "nDCG(rel=2)@10", "P@0"])
def test_bad_names(text: str) -> None:
    with pytest.raises(UsageError):
        parse_measure(text)


def test_results_keep_the_order_measures_were_given_in() -> None:
    qrels = Qrels.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "b"],
                                           "relevance": [1, 0]}))
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "b"],
                                       "score": [2.0, 1.0]}), name="r")
    got = evaluate(qrels, [run], ["P@1", Measure("AP"), "RR", "AP"])
    assert list(dict.fromkeys(got["measure"])) == ["P@1", "AP", "RR"]


@pytest.mark.parametrize(("text", "expected"), [
    ("ap", Measure("AP")), ("ndcg@10", Measure("nDCG", 10)), ("MAP", Measure("AP")),
    ("Map_Cut_5", Measure("AP", 5)), ("p@10(rel=2)", Measure("P", 10, rel=2)),
    ("P@10(rel=2)", Measure("P", 10, rel=2)), ("P(rel=2)@10", Measure("P", 10, rel=2)),
    ("iprec_at_recall_0.10", Measure("IPrec", 0.1)), ("IPrec@0.1", Measure("IPrec", 0.1)),
    ("Rprec_mult_0.20", Measure("Rprec_mult", 0.2)), ("gm_map", Measure("GMAP")),
    ("nDCG(gains={1:3,2:9})@10", Measure("nDCG", 10, params=(("gains", ((1, 3.0), (2, 9.0))),))),
    ("RBP(p=0.95)", Measure("RBP", params=(("p", 0.95),))),
    ("SetP(relative=True)", Measure("set_relative_P")), ("unj_5", Measure("unj", 5)),
])
def test_any_case_and_trec_eval_names(text: str, expected: Measure) -> None:
    assert parse_measure(text) == expected


@pytest.mark.parametrize(("text", "says"), [
    ("xinfap", "xinfAP is an estimate"), ("P@10~ht", "P@10~ht is an estimate"),
])
def test_estimator_names_point_to_estimate(text: str, says: str) -> None:
    """The command line's measures (``evaluate -m``) name ``sampleval estimate`` for an
    estimator; the measures themselves do not know the estimators (no import cycle)."""
    from sampleval.cli.evaluate import parse_evaluated

    with pytest.raises(UsageError, match=re.escape(says)):
        parse_evaluated(["AP", text])
    with pytest.raises(UsageError, match=re.escape(f"unknown measure {text!r}")):
        parse_measure(text)


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(UsageError, match=r"unknown measure 'nDGC@10' \(did you mean nDCG\?\)"):
        parse_measure("nDGC@10")
    with pytest.raises(UsageError, match="did you mean ndcg_cut"):
        parse_measure("ndcg_cutt_10")
    with pytest.raises(UsageError, match="not a measure"):
        parse_measure("relstring")


@pytest.mark.parametrize("text", ["map_cut", "IPrec", "nDCG(gains=3)", "AP(p=0.5)",
                                  "P(rel=2)@10(rel=3)"])
def test_bad_parameters(text: str) -> None:
    with pytest.raises(UsageError):
        parse_measure(text)


def test_every_declared_name_parses_back() -> None:
    """Each measure's printed name, and its trec_eval name, parse to the same measure."""
    for spec in SPECS:
        if not spec.library:
            continue
        cut = None if spec.cutoff != "required" else (0.5 if spec.cutoff_kind is float else 5)
        measure = Measure(spec.key, cut)
        assert parse_measure(str(measure)) == measure
        assert parse_measure(measure.trec_name) == measure
        assert measure.spec is spec


def test_commas_inside_parameters_do_not_split() -> None:
    assert parse_measures(["AP,nDCG(gains={1:3,2:9})@10 P@5"]) == [
        Measure("AP"), Measure("nDCG", 10, params=(("gains", ((1, 3.0), (2, 9.0))),)),
        Measure("P", 5)]


def test_the_trec_eval_docs_list_every_measure_in_order() -> None:
    """docs/guide/trec_eval.md's measure table: every trec_eval measure, in trec_eval's order,
    with the name evaluate() uses."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "trec_eval.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| (`[^`]+`|—) \|", text, re.MULTILINE)
    assert [trec for trec, _ in rows] == [s.trec for s in SPECS if s.trec_eval]
    for (_, ours), spec in zip(rows, [s for s in SPECS if s.trec_eval], strict=True):
        assert ours == "—" if not spec.library else ours.startswith(f"`{spec.key}")
