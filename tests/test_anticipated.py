"""The anticipated variance of linear ``~ppi`` estimates on stratified samples
(:mod:`sampleval.estimators.anticipated`): its stratified-design formula against every
sample enumerated, its expectation over the model's labels by Monte Carlo, the model's fit,
and how ``P@k~ppi`` takes it by default on stratified samples only."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.estimators import estimate
from sampleval.estimators.anticipated import (
    Population,
    expected_variance,
    features,
    fit,
    relevance_model,
)
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.synthetic_predictions import flipped

DEPTH = 30


def tiny_population() -> Population:
    """Three strata: 5 documents with 2 judged, 4 with 1, and 3 judged in full."""
    stratum = np.array([0] * 5 + [1] * 4 + [2] * 3)
    sizes, sampled = np.array([5.0, 4.0, 3.0]), np.array([2.0, 1.0, 3.0])
    n = len(stratum)
    return Population(np.arange(n), stratum, sizes, sampled, np.zeros((n, 2)),
                      np.ones(n, dtype=bool), np.ones(n), np.zeros(n), np.ones((2, n)))


def test_expected_variance_of_fixed_values_is_the_design_variance() -> None:
    """With no spread, the formula is the stratified HT total's variance over every sample
    of the design (enumerated: 10 x 4 equally likely samples; the census stratum adds 0)."""
    pop = tiny_population()
    values = np.array([[0.3, 0.0, 1.0, 0.0, 0.5, 2.0, 0.0, 0.0, 1.0, 0.7, 0.1, 0.9],
                       [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]])
    totals = []
    first, second = np.arange(5), np.arange(5, 9)
    for pair in itertools.combinations(first, 2):
        for one in second:
            totals.append(values[:, list(pair)].sum(axis=1) * 5 / 2 + values[:, one] * 4
                          + values[:, 9:].sum(axis=1))
    exact = np.var(np.array(totals), axis=0)  # every sample equally likely; unbiased total
    np.testing.assert_allclose(np.array(totals).mean(axis=0), values.sum(axis=1))
    got = expected_variance(pop, values, np.zeros(values.shape))
    np.testing.assert_allclose(got, exact, rtol=1e-12)


def test_expected_variance_averages_the_design_variance_over_the_labels() -> None:
    """Independent labels y_i ~ Bernoulli(mu_i), values w (y - lam f): the formula with
    their means and variances is the design variance averaged over the labels (Monte Carlo,
    40,000 label draws: within 1.5%)."""
    pop = tiny_population()
    rng = np.random.default_rng(7)
    mu = rng.uniform(0.05, 0.6, size=12)
    f = (rng.random(12) < 0.4).astype(float)
    w = np.array([[1.0] * 12, [0.5, 0, 1, 0, 0.2, 1, 0, 1, 0.3, 1, 0, 1]])
    lam = np.array([0.8, 0.3])
    expected = expected_variance(pop, w * (mu - lam[:, None] * f),
                                 w * w * mu * (1 - mu))
    labels = (rng.random((40_000, 12)) < mu).astype(float)
    draws = np.array([expected_variance(pop, w * (y - lam[:, None] * f), np.zeros(w.shape))
                      for y in labels])
    np.testing.assert_allclose(draws.mean(axis=0), expected, rtol=0.015)


def test_fit_recovers_a_logistic_model() -> None:
    """Weighted IRLS on labels drawn from the model's own covariates recovers its
    coefficients (the weights, independent of the labels, do not bias it)."""
    rng = np.random.default_rng(11)
    n = 40_000
    f = rng.random(n)
    shape = np.column_stack([np.log(rng.integers(1, 100, n)), np.log1p(rng.integers(1, 50, n))])
    x = features(f, shape, -1.5)[:, [0, 1, 3, 5]]  # the prevalence is one topic's: drop it
    beta = np.array([-1.0, 2.5, -0.4, 0.3])
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ beta))).astype(float)
    got = fit(x, y, rng.uniform(1.0, 5.0, n))
    np.testing.assert_allclose(got, beta, atol=0.15)


def test_no_model_without_both_kinds_of_label() -> None:
    """No relevant (or no non-relevant) judged document, or too few judged: no model."""
    pop = tiny_population()
    assert relevance_model([pop], [np.zeros(12)], 1.0) is None  # all labels 0, 12 judged
    many = Population(pop.docs, pop.stratum, pop.sizes, pop.sampled, pop.shape, pop.judged,
                      pop.weight, np.ones(12), pop.ranks)
    assert relevance_model([many] * 5, [np.zeros(12)] * 5, 1.0) is None  # all relevant


@pytest.mark.filterwarnings("ignore:.*outside \\[0, 1\\]")
def test_p_at_k_takes_the_anticipated_variance_on_stratified_samples(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """On a stratified sample P@10~ppi's default interval is the anticipated variance's
    (the value is the same as with ``variance=design``); on an active sample the option
    changes nothing (no strata)."""
    runs, qrels, pool, truth = judged_collection
    predictions = flipped(truth, 0.3, np.random.default_rng(0))
    names = ["P@10~ppi", "P@10~ppi(variance=design)", "NumRel~ppi",
             "NumRel~ppi(variance=design)"]
    for method, differs in (("stratified", True), ("active", False)):
        selector = METHODS[method](pool, Budget(rate=0.3), np.random.default_rng(1))
        sample = simulate(selector, qrels_oracle(qrels)).sample()
        got = estimate(sample, runs, names, depth=DEPTH, predictions=predictions)
        by = {m: rows.set_index(["run", "query_id"]).sort_index()
              for m, rows in got.groupby("measure")}
        for base in ("P@10", "NumRel"):
            default, design = by[f"{base}~ppi"], by[f"{base}~ppi(variance=design)"]
            np.testing.assert_allclose(default["value"], design["value"], atol=1e-12)
            widths = default["hi"] - default["lo"], design["hi"] - design["lo"]
            assert not np.allclose(*widths) if differs else np.allclose(*widths)
