"""The one engine (issue 28, step 3): every design-based family gives the per-topic parts
(estimate, variance, bias) and the variance of a difference of two runs, so that ``compare``
and the audit work with each of them, ``~ppi`` included (its predictions then act as
control variates on the differences too), and AP's ``few`` floor applies to every family
whose AP declares it."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from conftest import golden_collection as synthetic
from conftest import golden_sample as sample
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.compare import compare
from sampleval.estimation.estimates import estimate, estimate_differences
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.result import takes_few
from sampleval.estimation.spec import parse_estimate


def zero_predictions() -> pd.DataFrame:
    return synthetic().qrels.frame[["query_id", "doc_id"]].assign(prediction=0.0)


def noisy_predictions(flip: float = 0.02) -> pd.DataFrame:
    """The labels (relevance at level 1) with a share ``flip`` of them flipped (seeded):
    good predictions, not perfect ones."""
    frame = synthetic().qrels.frame
    relevant = (frame["relevance"].to_numpy(dtype=np.float64) >= 1).astype(np.float64)
    flipped = np.random.default_rng(5).random(len(frame)) < flip
    return frame[["query_id", "doc_id"]].assign(
        prediction=np.where(flipped, 1.0 - relevant, relevant))


def quiet(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


def variances(design: str, measure: str, predictions: pd.DataFrame | None = None
              ) -> pd.DataFrame:
    collection = synthetic()
    names = [r.name for r in collection.runs]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    out = quiet(estimate_differences, sample(design), collection.runs, measure, pairs,
                depth=collection.depth, predictions=predictions)
    assert out is not None, measure
    return out


def test_compare_with_ppi_uses_the_predictions_as_control_variates() -> None:
    """On a stratified sample, ``compare`` with AP~ppi: with predictions all 0 the variance
    of every per-topic difference, and so the test (Satterthwaite's df, p, interval), is
    AP~ht's (both take the jackknife of the Taylor-corrected estimate's replicates there),
    and the test (AP~ppi's default value there is AP~ht(bias=taylor-jackknife)'s) gives the
    same differences, intervals, Satterthwaite's df and p; with good predictions the
    variances are smaller in total, for every pair."""
    collection = synthetic()
    ht = variances("stratified", "AP~ht")
    zero = variances("stratified", "AP~ppi", zero_predictions())
    np.testing.assert_allclose(zero.to_numpy(), ht.to_numpy(), rtol=1e-9, atol=1e-15)
    good = variances("stratified", "AP~ppi", noisy_predictions())
    ratio = good.sum() / ht.sum()  # 0.69-0.96 by pair (0 with the labels themselves)
    assert (ratio < 1).all() and ratio.mean() < 0.9, ratio.describe()
    assert (good.sum() > 0).all()  # the flipped labels leave residuals
    by_ht = quiet(compare, sample("stratified"), collection.runs,
                  "AP~ht(bias=taylor-jackknife)", depth=collection.depth)
    by_ppi = quiet(compare, sample("stratified"), collection.runs, "AP~ppi",
                   depth=collection.depth, predictions=zero_predictions())
    for column in ("diff", "lo", "hi", "df", "p"):
        np.testing.assert_allclose(by_ppi[column], by_ht[column], rtol=1e-9, err_msg=column)
    assert by_ht["df"].lt(len(sample("stratified").topics) - 1).any()  # Satterthwaite's


# family, design, measure: every family that gives differences, on a design it takes
DIFFERENCES = [
    ("ht", "stratified", "AP~ht"), ("ht", "poisson", "nDCG@10~ht"),
    ("hh", "with-replacement", "AP~hh"), ("hh", "importance", "P@10~hh"),
    ("ppi", "stratified", "AP~ppi"), ("ppi", "stratified", "P@10~ppi"),
    ("ppi", "poisson", "AP~ppi(bias=jackknife)"), ("ppi", "with-replacement", "Rprec~ppi"),
    ("is", "importance", "P@10~is"), ("is", "importance", "nDCG@10~is"),
]


@pytest.mark.parametrize(("family", "design", "measure"), DIFFERENCES)
def test_a_run_against_its_own_copy_differs_by_nothing(family: str, design: str,
                                                      measure: str) -> None:
    """The difference of a run and an identical copy of it is 0 with variance 0 on every
    topic, and the difference of two runs is the difference of their estimates."""
    assert parse_estimate(measure).family == family
    collection = synthetic()
    first = collection.runs[0]
    runs = [*collection.runs, Run.from_frame(first.to_frame(), "copy")]
    pairs = np.array([[0, len(runs) - 1], [0, 1]])
    declared = FAMILIES[family]
    assert declared.differences is not None and declared.parts is not None
    from sampleval.core.pool import Pool
    from sampleval.core.predictions import Predictions
    from sampleval.estimation.engine.views import topic_views

    spec = parse_estimate(measure)
    pool = Pool.from_runs(runs, depth=collection.depth, topics=sample(design).topics,
                          score_type=declared.score_type)
    predicted = (Predictions.from_frame(noisy_predictions()) if declared.needs_predictions
                 else None)
    views = topic_views(pool, sample(design), predicted)
    values, variance = quiet(declared.differences, pool.run_names, views, sample(design),
                             spec, 1.0, pairs)
    parts = quiet(declared.parts, pool.run_names, views, sample(design), spec, 1.0)
    np.testing.assert_allclose(values[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(variance[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(values[:, 1], parts.value[:, 0] - parts.value[:, 1],
                               atol=1e-12)
    assert (np.nan_to_num(variance[:, 1]) >= -1e-12).all()


@pytest.mark.parametrize(("design", "plain", "ppi"), [
    ("with-replacement", "AP~hh", "AP~ppi"), ("importance", "Rprec~hh", "Rprec~ppi"),
    ("importance", "P@10~is", "P@10~ppi(variance=design)"),
    ("importance", "R@10~is", "R@10~ppi(bias=none)"),
    ("poisson", "P@10~ht", "P@10~ppi(variance=design)"),
])
def test_differences_with_zero_predictions_are_the_family_without(
        design: str, plain: str, ppi: str) -> None:
    """As the estimates (tests/contracts/test_equivalences.py), so the variances of the differences:
    ``~ppi`` with predictions all 0 gives those of the family without predictions."""
    want = variances(design, plain)
    got = variances(design, ppi, zero_predictions())
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-9, atol=1e-15)


def test_few_applies_to_every_family_whose_ap_declares_it() -> None:
    """``few`` is an option of AP in ht, hh, ppi, infAP and xinfAP, applied by one function
    (:func:`sampleval.estimation.result.corrected`)."""
    for name in ("AP~ht", "AP~hh", "AP~ppi", "xinfAP", "infAP"):
        assert takes_few(parse_estimate(name)), name
    for name in ("P@10~ht", "P@10~ppi", "statAP"):
        assert not takes_few(parse_estimate(name)), name


@pytest.mark.parametrize(("design", "measure"), [("with-replacement", "AP~hh"),
                                                 ("stratified", "AP~ppi")])
def test_few_floors_the_variance_where_at_most_one_relevant_is_judged(
        design: str, measure: str) -> None:
    """With ``few=bound`` every topic whose sample (not a census) holds at most one
    relevant document gets a variance of at least 1/4; ``few=none`` leaves it as
    computed; the values do not move."""
    collection = synthetic()
    made = sample(design)
    frame = made.frame.copy()  # keep one topic's judged relevant documents to one
    topic = made.topics[0]
    relevant = frame.index[(frame["query_id"] == topic) & (frame["relevance"] >= 1)]
    frame.loc[relevant[1:], "relevance"] = 0.0
    few = Sample(made.design, frame, draws=made.draws, rounds=made.rounds,
                 round_probs=made.round_probs, meta=made.meta)
    predictions = None if "~hh" in measure else zero_predictions()
    rows = {option: quiet(estimate, few, collection.runs, [f"{measure}(few={option})"],
                          depth=collection.depth, predictions=predictions)
            for option in ("bound", "none")}
    bound, none = (rows[o][rows[o]["query_id"] == topic] for o in ("bound", "none"))
    np.testing.assert_allclose(bound["value"], none["value"])
    half = (bound["hi"] - bound["lo"]) / 2
    assert (half >= 1.959 * 0.5 - 1e-9).all()
    assert ((none["hi"] - none["lo"]) / 2 < half).any()


def test_units_forms_is_the_dense_bilinear_form_per_run() -> None:
    """``Units.forms`` (compiled, per run over the units with a value) equals the dense
    x' Delta y of every pair of vectors, runs whose vectors are 0 at most units included."""
    from sampleval.estimation.engine.units import Units

    rng = np.random.default_rng(3)
    m, n_runs = 9, 4
    delta = rng.normal(size=(m, m))
    delta = delta + delta.T
    vectors = [rng.normal(size=(n_runs, m)) * (rng.random((n_runs, m)) < 0.5)
               for _ in range(3)]
    vectors[0][1] = 0.0  # a run without a unit
    units = Units("ht", np.arange(m), np.ones(m), delta=delta)
    dense = np.einsum("irm,mn,jrn->ijr", np.stack(vectors), delta, np.stack(vectors))
    np.testing.assert_allclose(units.forms(vectors), dense, rtol=1e-12, atol=1e-14)


def test_vectorised_stratum_jackknife_is_the_loop_over_strata() -> None:
    """The engine's stratified jackknife of replicates (every stratum at once) gives the
    variance and bias of ``ht_reference.stratum_jackknife`` (one stratum at a time), strata
    with one judged document, a census stratum and one without a unit included."""
    from ht_reference import stratum_jackknife, stratum_rows
    from sampleval.estimation.engine.replicates import strata_jackknife

    rng = np.random.default_rng(4)
    stratum = np.array([0, 0, 0, 1, 2, 2, 4])
    sizes = np.array([10.0, 8.0, 3.0, 5.0, 6.0])
    counts = np.array([5.0, 1.0, 3.0, 2.0, 4.0])  # stratum 2: a census; 3: no unit
    n_runs = 3
    reps, others = rng.random((n_runs, len(stratum))), rng.random((n_runs, len(sizes)))
    value = rng.random(n_runs)
    loop = stratum_jackknife((stratum, sizes, counts),
                             lambda h, rows: stratum_rows(reps.T, others.T, h, rows),
                             n_runs, value)
    np.testing.assert_allclose(strata_jackknife(reps, others, value, stratum, sizes, counts),
                               loop, rtol=1e-12)
