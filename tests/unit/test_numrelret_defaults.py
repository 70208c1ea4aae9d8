"""Plain ``NumRelRet`` on Poisson, inclusion-only, with-replacement and importance samples
(issue 28): a default estimator on each (none before), exact where every document is
judged, centred on the truth by seeded Monte Carlo."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.estimation.spec import estimator_for
from sampleval.measures.evaluation import evaluate
from sampleval.selection import Budget, qrels_oracle, simulate
from sampleval.simulation.grid import parse_method

EXPECTED = {"poisson": "NumRelRet~ht", "inclusion": "NumRelRet~ht",
            "with-replacement": "NumRelRet~hh", "importance": "NumRelRet~hh"}


def _collection() -> tuple[list[Run], Qrels]:
    made = make_collection(np.random.default_rng(28), n_topics=6, n_runs=5, n_docs=400,
                           depth=30, pool_depth=30, rel_rate=0.05)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    return runs, Qrels.from_frame(pd.DataFrame(made.qrels))


def _sums(results: pd.DataFrame) -> pd.Series:
    return results[results["query_id"] == MEAN_TOPIC].set_index("run")["value"]


@pytest.mark.parametrize(("design", "name"), sorted(EXPECTED.items()))
def test_numrelret_has_a_default_on_every_probability_design(design: str, name: str) -> None:
    """Fails on main (no default: estimate -m NumRelRet refused these samples)."""
    spec = estimator_for("NumRelRet", None, design)
    assert spec is not None and spec.name == name


@pytest.mark.parametrize("design", ["poisson", "inclusion"])
def test_a_poisson_sample_of_every_document_gives_the_exact_count(design: str) -> None:
    """Every pooled document drawn (pi = 1): plain NumRelRet is each run's exact count,
    summed over topics as trec_eval sums it, with a zero-width interval."""
    runs, qrels = _collection()
    pool = Pool.from_runs(runs, 30)
    grades = qrels.frame.set_index(["query_id", "doc_id"])["relevance"]
    frame = pd.concat(pd.DataFrame({
        "query_id": tp.topic, "doc_id": pool.docnos[tp.doc_ids],
        "relevance": [float(grades.get((tp.topic, str(d)), 0.0))
                      for d in pool.docnos[tp.doc_ids]],
        "stratum": None, "inclusion": 1.0}) for tp in pool)
    got = estimate(Sample(design=design, frame=frame), runs, ["NumRelRet"], depth=30)
    exact = _sums(evaluate(qrels, runs, ["NumRelRet"], depth=30))
    assert got["measure"].iloc[0] == "NumRelRet~ht"
    sums = got[got["query_id"] == MEAN_TOPIC].set_index("run")
    assert np.allclose(sums["value"], exact[sums.index], atol=1e-9)
    assert np.allclose(sums["hi"] - sums["lo"], 0.0, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["active", "importance"])
def test_the_draw_designs_default_is_centred_on_the_truth(method: str) -> None:
    """60 seeded samples of 30% of each topic's pool: every run's mean estimated sum lies
    within 3.5 Monte Carlo standard errors of its exact NumRelRet."""
    runs, qrels = _collection()
    pool = Pool.from_runs(runs, 30)
    exact = _sums(evaluate(qrels, runs, ["NumRelRet"], depth=30))
    oracle = qrels_oracle(qrels)
    draws = []
    for trial in range(60):
        selector = parse_method(method).make(pool, Budget(rate=0.3),
                                             np.random.default_rng(trial))
        got = estimate(simulate(selector, oracle).sample(), runs, ["NumRelRet"], depth=30)
        assert got["measure"].iloc[0] == "NumRelRet~hh"
        draws.append(_sums(got)[exact.index].to_numpy())
    values = np.array(draws)
    se = values.std(axis=0, ddof=1) / np.sqrt(len(values))
    assert (np.abs(values.mean(axis=0) - exact.to_numpy()) <= 3.5 * se + 1e-9).all()
