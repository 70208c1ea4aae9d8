"""The audit power study's sample sides and its power analysis (studies/audit_power.py,
issue 31)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from studies.audit_power import (
    attainable,
    leaderboard_summary,
    run_experiment,
    summarise,
    top_cost,
)


def test_attainable_is_the_sd_holms_first_test_needs_and_the_share_that_reaches_it() -> None:
    critical = stats.t(49).ppf(1 - 0.05 / (2 * 126))
    needed, share = attainable(0.035, 0.01, runs=126, topics=50, rate=0.05)
    assert needed == pytest.approx(0.035 / (critical + stats.norm.ppf(0.8)), rel=1e-12)
    # a sample whose sd is already the needed one needs no more than its own share
    assert attainable(0.035, needed, runs=126, topics=50, rate=0.05)[1] == pytest.approx(0.05)
    # sd^2 scales as (1 - q)/q: twice the sd needs odds (1 - q)/q four times smaller
    _, twice = attainable(0.035, 2 * needed, runs=126, topics=50, rate=0.05)
    assert (1 - twice) / twice == pytest.approx(0.95 / 0.05 / 4, rel=1e-12)
    assert share > 0.05


def test_the_sides_are_measured_and_summarised() -> None:
    data = make_collection(np.random.default_rng(5), n_topics=6, n_runs=5, n_docs=300,
                           depth=30, pool_depth=30, rel_rate=0.05)
    runs = [Run.from_frame(f, n) for n, f in data.runs.items()]
    records, setting = run_experiment(runs, Qrels.from_frame(data.qrels), rate=0.3, depth=30,
                                      trials=2, seed=0, inflation=0.03, ppi=True,
                                      paths=("plain", "ppi"))
    assert len(records) == 2
    for path in ("plain", "ppi"):
        assert f"{path}_t_power" in records and f"{path}_favoured_relative" in records
    assert "control_t_power" not in records
    assert sum(c.startswith("ppi_error_") for c in records.columns) == len(runs)
    row = summarise(records, setting).iloc[0]
    assert 0 <= row["ppi_within_3se"] <= 1
    assert 0 < row["plain_share_for_power"] <= 1 and row["needed_sd"] > 0
    sd = records["ppi_favoured_relative"].std(ddof=1)
    assert row["ppi_favoured_relative_sd"] == pytest.approx(sd)


def test_topic_spread_is_the_collapsed_strata_covariance() -> None:
    from studies.audit_variance import topic_spread

    rng = np.random.default_rng(1)
    x, a = rng.normal(size=(7, 3)), np.full((7, 3), 1 / 7)
    # T/(T-1) sum_t (c_t - c-bar)(c_t - c-bar)' = T x the sample covariance of c_t = a_t x_t
    assert topic_spread(x, a) == pytest.approx(7 * np.cov((a * x).T, ddof=1), rel=1e-12)
    # equal per-topic values have no spread
    assert topic_spread(np.ones((5, 2)), np.full((5, 2), 0.2)) == pytest.approx(0.0)


def test_the_leaderboard_tells_bias_from_an_understated_standard_error() -> None:
    """Per run the leaderboard's errors, estimated standard errors and half-widths are
    recorded, and the summary separates a mean error (bias) from errors wider than the
    standard errors say (coverage)."""
    data = make_collection(np.random.default_rng(5), n_topics=6, n_runs=5, n_docs=300,
                           depth=30, pool_depth=30, rel_rate=0.05)
    runs = [Run.from_frame(f, n) for n, f in data.runs.items()]
    records, setting = run_experiment(runs, Qrels.from_frame(data.qrels), rate=0.3, depth=30,
                                      trials=2, seed=0, inflation=0.03, ppi=True,
                                      paths=("plain",), ppi_measure="AP~ppi(bias=taylor)")
    for prefix in ("ppi_error_", "ppi_se_", "ppi_half_"):
        assert sum(c.startswith(prefix) for c in records.columns) == len(runs)
    assert (records["ppi_se_0"] >= 0).all()
    row = summarise(records, setting).iloc[0]
    assert "ppi_se_0" not in row and "ppi_se" in row and 0 <= row["ppi_coverage"] <= 1
    # constructed: run 0 is off by +1 with no spread and a wide interval (bias, covered);
    # run 1 scatters -1, +1 with a standard error of 0.1 (no bias, not covered); run 2 favoured
    made = pd.DataFrame({"ppi_error_0": [1.0, 1.0], "ppi_error_1": [-1.0, 1.0],
                         "ppi_error_2": [5.0, 7.0], "ppi_se_0": [2.0, 2.0],
                         "ppi_se_1": [0.1, 0.1], "ppi_se_2": [1.0, 1.0],
                         "ppi_half_0": [4.0, 4.0], "ppi_half_1": [0.2, 0.2],
                         "ppi_half_2": [9.0, 0.5]})
    out = leaderboard_summary(made, favoured=2)
    assert out["ppi_within_3se"] == pytest.approx(1 / 3)  # run 0: mean 1, spread 0
    assert out["ppi_bias"] == pytest.approx(0.5) and out["ppi_sd"] == pytest.approx(
        np.sqrt(2) / 2)
    assert out["ppi_se"] == pytest.approx(1.05) and out["ppi_coverage"] == pytest.approx(0.5)
    assert out["ppi_favoured_bias"] == pytest.approx(6.0)
    assert out["ppi_favoured_coverage"] == pytest.approx(0.5)


def test_top_cost_counts_the_union_of_the_runs_top_documents() -> None:
    """Two topics, two runs: topic 1 top-2 sets {a, b} and {b, c} (3 documents of a pool of
    4), topic 2 {x, y} and {x} (a run of one document; 2 of 2)."""
    frame = pd.DataFrame({
        "query_id": ["1"] * 6 + ["2"] * 3,
        "doc_id": ["a", "b", "d", "b", "c", "a", "x", "y", "x"],
        "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0, 1.0],
        "run": ["r", "r", "r", "s", "s", "s", "r", "r", "s"]})
    runs = [Run.from_frame(g.drop(columns="run"), str(name)) for name, g in frame.groupby("run")]
    cost = top_cost(Pool.from_runs(runs, depth=3), [1, 2]).set_index("k")
    assert cost.loc[2, "per_topic"] == 2.5 and cost.loc[2, "share"] == 5 / 6
    assert (cost.loc[2, "least"], cost.loc[2, "most"]) == (2, 3)
    assert cost.loc[1, "per_topic"] == 1.5  # {a, b} and {x}
    assert cost.loc[1, "pool_per_topic"] == 3.0
