"""Measure names: ir_measures syntax, trec_eval aliases, and the order results come in."""

from __future__ import annotations

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
