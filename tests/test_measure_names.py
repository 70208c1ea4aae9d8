"""Measure names: ir_measures syntax, trec_eval aliases, and the order results come in."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.evaluation import evaluate
from sampleval.measures.names import Measure, parse_measure


@pytest.mark.parametrize(("text", "expected"), [
    ("AP", Measure("AP")), ("map", Measure("AP")), ("P@10", Measure("P", 10)),
    ("P_10", Measure("P", 10)), ("ndcg_cut_20", Measure("nDCG", 20)),
    ("AP(rel=2)", Measure("AP", rel=2)), ("recip_rank", Measure("RR")),
    ("ap", Measure("AP")), ("ndcg@10", Measure("nDCG", 10)), ("MAP", Measure("AP")),
    ("p@10(rel=2)", Measure("P", 10, rel=2)), ("P(rel=2)@10", Measure("P", 10, rel=2)),
    ("numrel", Measure("NumRel")), ("RPREC", Measure("Rprec")),
])
def test_names_and_aliases(text: str, expected: Measure) -> None:
    assert parse_measure(text) == expected


@pytest.mark.parametrize("text", ["P", "Rprec@5", "Foo", "nDCG(rel=2)@10", "P@0",
                                  "P(rel=2)@10(rel=1)"])
def test_bad_names(text: str) -> None:
    with pytest.raises(UsageError):
        parse_measure(text)


@pytest.mark.parametrize(("text", "says"), [
    ("ndgc@10", "did you mean nDCG?"), ("Mapp", "did you mean map?"),
    ("xinfap", "xinfAP is an estimate"), ("P@10~ht", "P@10~ht is an estimate"),
])
def test_unknown_names_say_what_was_meant(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=re.escape(says)):
        parse_measure(text)


def test_results_keep_the_order_measures_were_given_in() -> None:
    qrels = Qrels.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "b"],
                                           "relevance": [1, 0]}))
    run = Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": ["a", "b"],
                                       "score": [2.0, 1.0]}), name="r")
    got = evaluate(qrels, [run], ["P@1", Measure("AP"), "RR", "AP"])
    assert list(dict.fromkeys(got["measure"])) == ["P@1", "AP", "RR"]
