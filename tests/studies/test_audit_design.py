"""The first-order design variance of the audit's relative bias (studies/audit_design.py,
issue 31 item 3)."""

from __future__ import annotations

from itertools import combinations, product

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.simulation.predictors import circular
from studies.audit_design import design_sd, share_for_power, stratified_variance
from studies.audit_power import POWER, circular_setting, critical


def test_stratified_variance_is_the_exact_variance_over_every_sample() -> None:
    """Two strata (4 documents, 2 drawn; 3 documents, 1 drawn): the variance of the
    Horvitz-Thompson total over all 6 x 3 equally likely samples, for two rows of z."""
    z = np.array([[0.3, -1.0, 2.0, 0.5, 1.5, 0.0, -0.7], [1.0, 1.0, 0.0, 0.0, 2.0, 4.0, 1.0]])
    codes = np.array([0, 0, 0, 0, 1, 1, 1])
    counts = np.array([2, 1])
    totals = []
    for first, second in product(combinations(range(4), 2), combinations(range(4, 7), 1)):
        chosen = list(first) + list(second)
        pi = np.where(codes[chosen] == 0, 2 / 4, 1 / 3)
        totals.append((z[:, chosen] / pi).sum(axis=1))
    exact = np.var(np.array(totals), axis=0)
    np.testing.assert_allclose(stratified_variance(z, codes, counts), exact, rtol=1e-12)


def test_a_census_has_no_variance_and_the_share_for_power_is_interpolated() -> None:
    data = make_collection(np.random.default_rng(5), n_topics=4, n_runs=6, n_docs=300,
                           depth=30, pool_depth=30, rel_rate=0.06)
    runs = [Run.from_frame(f, n) for n, f in data.runs.items()]
    setting = circular_setting(runs, Qrels.from_frame(data.qrels), 30, 0.03)
    judge = circular(setting.truth, setting.pool, setting.favoured, setting.k)
    assert isinstance(setting.pool, Pool)
    at = list(setting.pool.run_names).index(setting.favoured)
    table = design_sd(setting.pool, setting.truth, judge, ["stratified", "audit-neyman"],
                      [0.2, 0.5, 1.0], at)
    census = table[table["rate"] == 1.0]
    assert (census[["favoured_sd", "others_rms", "leaderboard_rms"]] == 0).all().all()
    assert (table[table["rate"] < 1]["favoured_sd"] > 0).all()
    grid = pd.DataFrame({"method": ["m", "m"], "rate": [0.05, 0.2],
                         "favoured_sd": [0.02, 0.005]})
    # log sd linear in log rate: halfway in log sd (0.01) is halfway in log rate (0.1)
    inflation = 0.01 * (critical(2, 50) + stats.norm.ppf(POWER))
    assert share_for_power(grid, inflation, runs=2, topics=50).iloc[0] == pytest.approx(
        0.1, rel=1e-9)
