"""The anticipated variance of linear ``~ppi`` estimates on stratified samples and over
draws (:mod:`sampleval.estimation.engine.anticipated`): its stratified-design and per-draw formulas
against every sample enumerated, their expectation over the model's labels by Monte Carlo,
the model's fit, and where ``P@k~ppi`` takes it by default (stratified samples; the draws of
active samples with a uniform share and of importance samples, when every round's p_t of
every frame document is recorded)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.anticipated import (
    Draws,
    LabelModel,
    Population,
    Strata,
    features,
    fit,
    label_model,
)
from sampleval.estimation.estimates import estimate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.predictors import flipped

DEPTH = 30


def tiny_population() -> Population:
    """Three strata: 5 documents with 2 judged, 4 with 1, and 3 judged in full."""
    stratum = np.array([0] * 5 + [1] * 4 + [2] * 3)
    sizes, sampled = np.array([5.0, 4.0, 3.0]), np.array([2.0, 1.0, 3.0])
    n = len(stratum)
    return Population(np.arange(n), np.zeros((n, 2)), np.ones(n, dtype=bool), np.ones(n),
                      np.zeros(n), np.ones((2, n)), Strata(stratum, sizes, sampled))


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
    got = pop.design.variance(values, np.zeros(values.shape))
    np.testing.assert_allclose(got, exact, rtol=1e-12)


def test_per_draw_variance_of_fixed_values_is_the_designs() -> None:
    """With no spread, the per-draw formula is the variance of (1/n) sum_k e_{d_k}/p_k(d_k)
    over every sequence of draws (enumerated: a round of one draw from p_1, then one of two
    draws from p_2, 4^3 sequences weighted by their probabilities)."""
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.4, 0.1]])
    sizes = np.array([1.0, 2.0])
    values = np.array([[0.3, 0.0, 1.0, 0.5], [1.0, -0.2, 0.0, 0.7]])
    law = [probs[0], probs[1], probs[1]]
    first = second = np.zeros(2)
    for seq in itertools.product(range(4), repeat=3):
        weight = np.prod([law[k][d] for k, d in enumerate(seq)])
        mean = sum(values[:, d] / law[k][d] for k, d in enumerate(seq)) / 3
        first, second = first + weight * mean, second + weight * mean**2
    np.testing.assert_allclose(first, values.sum(axis=1), rtol=1e-12)  # unbiased
    got = Draws(sizes @ (1.0 / probs), 3.0).variance(values, np.zeros(values.shape))
    np.testing.assert_allclose(got, second - first**2, rtol=1e-12)


def test_expected_variance_averages_the_design_variance_over_the_labels() -> None:
    """Independent labels y_i ~ Bernoulli(mu_i), values w (y - lam f): each formula
    (stratified, per-draw) with their means and variances is the design variance averaged
    over the labels (Monte Carlo, 40,000 label draws: within 1.5%)."""
    pop = tiny_population()
    rng = np.random.default_rng(7)
    mu = rng.uniform(0.05, 0.6, size=12)
    f = (rng.random(12) < 0.4).astype(float)
    w = np.array([[1.0] * 12, [0.5, 0, 1, 0, 0.2, 1, 0, 1, 0.3, 1, 0, 1]])
    lam = np.array([0.8, 0.3])
    labels = (rng.random((40_000, 12)) < mu).astype(float)
    rounds = Draws(np.array([2.0, 3.0, 1.0]) @ (1.0 / rng.dirichlet(np.ones(12), size=3)), 6.0)
    for design in (pop.design, rounds):
        expected = design.variance(w * (mu - lam[:, None] * f), w * w * mu * (1 - mu))
        draws = np.array([design.variance(w * (y - lam[:, None] * f), np.zeros(w.shape))
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


def with_labels(pop: Population, labels: np.ndarray) -> Population:
    return Population(pop.docs, pop.shape, pop.judged, pop.weight, labels, pop.ranks,
                      pop.design)


def test_no_model_without_both_kinds_of_label() -> None:
    """Too few judged documents, no relevant (or no non-relevant) one, or graded labels
    that are not whole grades: no model."""
    pop = tiny_population()
    zeros = [np.zeros(12)] * 5
    assert label_model([pop], [np.zeros(12)], 1.0, False) is None  # 12 judged: too few
    assert label_model([pop] * 5, zeros, 1.0, False) is None  # all labels 0
    assert label_model([with_labels(pop, np.ones(12))] * 5, zeros, 1.0, False) is None
    mixed = with_labels(pop, np.tile([0.0, 1.0, 2.0], 4))
    assert label_model([mixed] * 5, zeros, 1.0, True) is not None
    assert label_model([mixed] * 5, zeros, 2.0, False) is not None  # relevant at level 2
    assert label_model([with_labels(pop, np.tile([0.0, 2.0], 6))] * 5, zeros, 1.0,
                       True) is not None  # no grade-1 document: grade >= 1 and >= 2 alike
    halves = with_labels(pop, np.tile([0.0, 0.5, 2.0], 4))
    assert label_model([halves] * 5, zeros, 1.0, True) is None
    assert label_model([halves] * 5, zeros, 1.0, False) is not None  # a share of votes


def test_graded_moments() -> None:
    """E[g] and E[g^2] of a grade with P(g >= 1) = p1, P(g >= 2) = p2: the distribution's
    (1 - p1, p1 - p2, p2 on 0, 1, 2); a P(g >= 2) above P(g >= 1) is cut to it."""
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    x = np.ones((1, 1))
    first, second = LabelModel((np.array([logit(0.6)]), np.array([logit(0.25)]))).moments(x)
    assert first[0] == pytest.approx(0.35 * 1 + 0.25 * 2)
    assert second[0] == pytest.approx(0.35 * 1 + 0.25 * 4)
    first, second = LabelModel((np.array([logit(0.3)]), np.array([logit(0.5)]))).moments(x)
    assert first[0] == pytest.approx(0.6) and second[0] == pytest.approx(0.3 + 0.9)


def widths_by_option(sample: Sample, runs: list[Run], predictions: pd.DataFrame
                     ) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Each linear measure's estimates by default and with ``variance=design``."""
    bases = ("P@10", "DCG@10", "NumRel")
    names = [f"{b}~ppi{o}" for b in bases for o in ("", "(variance=design)")]
    got = estimate(sample, runs, names, depth=DEPTH, predictions=predictions)
    by = {m: rows.set_index(["run", "query_id"]).sort_index()
          for m, rows in got.groupby("measure")}
    return {b: (by[f"{b}~ppi"], by[f"{b}~ppi(variance=design)"]) for b in bases}


@pytest.mark.filterwarnings("ignore:.*outside \\[0, ")
@pytest.mark.parametrize(("method", "differs"), [
    ("stratified", True), ("active:uniform=0.3", True), ("active", True), ("importance", True),
    ("active:uniform=0", False)])
def test_linear_measures_take_the_anticipated_variance_by_default(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame], method: str,
        differs: bool) -> None:
    """The linear measures' default interval is the anticipated variance's on stratified
    samples and over the draws of active samples with a uniform share (``active``'s default)
    and of importance samples (the value is the same as with ``variance=design``); on active
    samples without a share (the ``ht`` form, no strata) the option changes nothing."""
    runs, qrels, pool, truth = judged_collection
    predictions = flipped(truth, 0.3, np.random.default_rng(0))
    name, _, param = method.partition(":")
    params = dict(p.split("=") for p in param.split(";") if p)
    selector = METHODS[name](pool, Budget(rate=0.3), np.random.default_rng(1),
                             **{k: float(v) for k, v in params.items()})
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    for default, design in widths_by_option(sample, runs, predictions).values():
        np.testing.assert_allclose(default["value"], design["value"], atol=1e-12)
        widths = default["hi"] - default["lo"], design["hi"] - design["lo"]
        assert not np.allclose(*widths) if differs else np.allclose(*widths)


@pytest.mark.filterwarnings("ignore:.*outside \\[0, ")
def test_draws_keep_the_design_variance_without_every_documents_probability(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """An active sample that records p_t of the sampled documents only (as samples written
    before 2026-11 do: no round 0) keeps the design's variance; where a round gives one
    topic's frame document probability 0 (p-bar = 0), that topic keeps it and the others
    take the anticipated one: the model has no p_t(d) to weigh the documents never drawn
    by."""
    runs, qrels, pool, truth = judged_collection
    predictions = flipped(truth, 0.3, np.random.default_rng(0))
    selector = METHODS["active"](pool, Budget(rate=0.3), np.random.default_rng(1),
                                 uniform=0.3)
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    assert sample.round_probs is not None and sample.draws is not None

    def width(rows: pd.DataFrame) -> np.ndarray:
        return (rows["hi"] - rows["lo"]).to_numpy()

    rounds = sample.round_probs[sample.round_probs["round"] > 0]
    for default, design in widths_by_option(replace(sample, round_probs=rounds), runs,
                                            predictions).values():
        np.testing.assert_allclose(width(default), width(design), rtol=1e-12)
    zero = sample.round_probs.copy()
    zero.loc[zero.index[zero["round"] == 0][0], "probability"] = 0.0
    topic = zero["query_id"].iloc[0]
    for default, design in widths_by_option(replace(sample, round_probs=zero), runs,
                                            predictions).values():
        same = default.index.get_level_values("query_id") == topic
        np.testing.assert_allclose(width(default)[same], width(design)[same], rtol=1e-12)
        assert not np.allclose(width(default)[~same], width(design)[~same])
