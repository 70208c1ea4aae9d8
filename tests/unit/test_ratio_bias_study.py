"""The study behind calibration.md section 12 (``studies/ratio_bias.py``): its model fit
against a closed form, and its table's decomposition of the bias of the mean by relevant
documents judged."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.estimation.engine.unseen import power_fit
from studies.ratio_bias import COLUMNS, table


def test_the_power_fit_is_exact_where_the_counts_are_their_means() -> None:
    """Poisson maximum likelihood of found ~ kappa prior^beta: with counts equal to
    kappa prior^beta for kappa = 3, beta = 1.7, the score equations hold at (3, 1.7)
    exactly, so Newton's method returns them."""
    prior = np.geomspace(0.001, 0.2, 40)
    kappa, beta = power_fit(3.0 * prior**1.7, prior)
    assert abs(kappa - 3.0) < 1e-8 and abs(beta - 1.7) < 1e-8


def test_the_contributions_add_up_to_the_bias_of_the_mean() -> None:
    """Every (trial, run) has the same topics, so the bias of the runs' mean is the mean
    error over the rows, which the shares times the mean errors by k add up to; a column
    equal to the truth has bias 0."""
    rng = np.random.default_rng(3)
    rows = pd.DataFrame([(s, f"t{t}", f"r{r}") for s in range(3) for t in range(7)
                         for r in range(2)], columns=["seed", "query_id", "run"])
    rows["k"] = rng.integers(0, 6, len(rows))
    rows["truth"] = rng.uniform(0, 1, len(rows))
    for column in COLUMNS:
        rows[column] = rows["truth"] + rng.normal(0.0, 0.1, len(rows)) + 0.05 * (rows["k"] == 0)
    rows["oracle"] = rows["truth"]
    out = table(rows).set_index("estimate")
    contrib = out.filter(like="contrib").sum(axis=1)
    for column in COLUMNS:
        assert abs(out.loc[column, "bias"] - contrib[column]) < 1e-12
        assert abs(out.loc[column, "bias"]
                   - (rows[column] - rows["truth"]).mean()) < 1e-12
    assert out.loc["oracle", "bias"] == 0.0
    assert abs(out.filter(like="error").loc["share of rows"].sum() - 1.0) < 1e-12
