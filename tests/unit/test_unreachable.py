"""Issue 29, item 3: designs that leave part of the pool unreachable (inclusion probability 0)
are said so by ``estimate`` (the share of the frame) and by ``simulate``'s summary (the
share per method and budget, and the budget that reaches every stratum)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import SamplingWarning
from sampleval.estimation.estimates import estimate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate


def collection() -> tuple[list[Run], Pool, Qrels]:
    """Three topics, five runs pooled to depth 30."""
    made = make_collection(np.random.default_rng(7), n_topics=3, n_runs=5, n_docs=300,
                           depth=30)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    return runs, Pool.from_runs(runs, depth=30), Qrels.from_frame(made.qrels)


def test_estimate_names_the_share_of_the_frame_that_was_unreachable() -> None:
    """2strata with 5 judgments per topic spends them in the top-10 stratum: every document
    of best rank 11 or deeper has inclusion probability 0, and estimate says which share."""
    runs, pool, qrels = collection()
    with pytest.warns(SamplingWarning):
        sample = simulate(METHODS["strata"](pool, Budget(count=5), np.random.default_rng(0)),
                          qrels_oracle(qrels)).sample()
    deep = sum(int((pool[t].best_rank() > 10).sum()) for t in pool.topics)
    share = deep / sum(pool[t].size for t in pool.topics)
    assert 0.3 < share < 1
    with pytest.warns(UserWarning, match="unreachable") as caught:
        estimate(sample, runs, "P@10~ht")
    said = [str(w.message) for w in caught if "unreachable" in str(w.message)]
    assert len(said) == 1 and said[0].startswith(f"{share:.1%} of the sample's frame")
    assert f"({deep} of " in said[0] and "docs/guide/estimating.md#" in said[0]


def test_estimate_is_silent_when_every_stratum_is_reached() -> None:
    runs, pool, qrels = collection()
    sample = simulate(METHODS["uniform"](pool, Budget(count=20), np.random.default_rng(0)),
                      qrels_oracle(qrels)).sample()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimate(sample, runs, "P@10~ht")
    assert not [w for w in caught if "unreachable" in str(w.message)]


def test_simulate_reports_the_unreachable_share_and_the_budget_that_reaches_it(
        tmp_path: Path) -> None:
    """2strata at 5 documents per topic leaves best ranks 11- unreachable: the summary gives
    its share of the pool (as counted from the pool), the budget that reaches every stratum
    (the one the sample warning names) and a sentence; uniform reaches everything."""
    from sampleval.simulation.runner import simulate as simulate_grid
    from sampleval.simulation.summary import unreachable_notes

    runs, pool, qrels = collection()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = simulate_grid(runs, qrels, ["strata:strategy=2strata", "uniform"],
                                budgets=[5], trials=2, measures=["P@10"], depth=30,
                                output=tmp_path / "sim", figures=False)
        with pytest.warns(SamplingWarning, match=r"--budget (\d+)") as caught:
            simulate(METHODS["strata"](pool, Budget(count=5), np.random.default_rng(0)),
                     qrels_oracle(qrels))
    named = int(re.search(r"--budget (\d+)", str(caught[0].message))[1])  # type: ignore[index]
    rows = summary.set_index("method")
    deep = sum(int((pool[t].best_rank() > 10).sum()) for t in pool.topics)
    share = deep / sum(pool[t].size for t in pool.topics)
    assert rows.loc["strata:strategy=2strata", "unreachable"] == pytest.approx(share)
    assert rows.loc["strata:strategy=2strata", "reaching_budget"] == named
    assert rows.loc["uniform", "unreachable"] == 0
    assert summary["reaching_budget"].isna().tolist() == [False, True]
    (note,) = unreachable_notes(summary)
    assert note.startswith(f"strata:strategy=2strata at budget 5: {share:.1%} of the pooled")
    assert f"a budget of {named} documents per topic" in note
