"""AP~ppi's ``lam-variance`` option (:mod:`sampleval.estimation.families.ppi_lam`): the
delete-one-topic jackknife of the mean through the plug-in lam, against its definition with
every estimate recomputed exactly at each left-out lam; zero where lam cannot move. Its
``unseen`` option (:mod:`sampleval.estimation.families.ppi_unseen`) by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.difference import topic_estimate
from sampleval.estimation.engine.tuning import minimising
from sampleval.estimation.engine.units import TopicData, topic_data
from sampleval.estimation.engine.values import ppi_values
from sampleval.estimation.engine.views import topic_views
from sampleval.estimation.estimates import estimate
from sampleval.estimation.families.ppi_lam import lam_variance, takes_lam_variance
from sampleval.estimation.families.ppi_unseen import (
    disagreement_rates,
    r_hat,
    takes_unseen,
    unseen_variance,
)
from sampleval.estimation.spec import EstimateSpec, parse_estimate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.predictors import flipped

DEPTH = 30


def _setting(judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame],
             predictions: pd.DataFrame) -> tuple[EstimateSpec, list[TopicData], np.ndarray]:
    runs, qrels, pool, _ = judged_collection
    selector = METHODS["stratified"](pool, Budget(rate=0.3), np.random.default_rng(1))
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    views = topic_views(Pool.from_runs(runs, depth=DEPTH, topics=sample.topics), sample,
                        Predictions.from_frame(predictions))
    spec = parse_estimate("AP~ppi(bias=taylor,lam-variance=topics)")
    topics = [topic_data(view, sample, "ht") for view in views]
    return spec, topics, ppi_values(spec, topics, 1, "plug-in").lam


def test_lam_variance_is_the_jackknife_of_the_mean_through_lam(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """Noisy predictions (10% of labels flipped): sum_t share_t / T^2 equals
    (T - 1)/T sum_t (M(lam_(t)) - mean)^2, M(lam) the mean over topics of the estimates
    recomputed exactly at lam_(t), the plug-in lam without topic t's forms (the linearisation
    in lam is all that separates them); a difference of two runs takes the same with their
    difference."""
    _, _, _, truth = judged_collection
    noisy = flipped(truth, 0.1, np.random.default_rng(5))
    spec, topics, lam = _setting(judged_collection, noisy)
    assert takes_lam_variance(spec)
    n_topics, n_runs = len(topics), lam.shape[2]
    at = [topic_estimate(spec, 1, data) for data in topics]
    forms = []
    for data, f in zip(topics, at, strict=True):
        parts = f(np.zeros((2, n_runs)))
        forms.append(np.nan_to_num(data.units.forms([parts.u_y, parts.u_f[0], parts.u_f[1]]))
                     .sum(axis=-1))
    gram = np.stack([form[1:, 1:] for form in forms])
    cross = np.stack([form[0, 1:] for form in forms])
    shared = np.clip(minimising(gram.sum(axis=0), cross.sum(axis=0)), 0, 1)
    means = []
    for t in range(n_topics):
        out = np.clip(minimising(gram.sum(axis=0) - gram[t], cross.sum(axis=0) - cross[t]),
                      0, 1)
        moved = [f(np.where(np.isclose(lam[s], shared[:, None]), out[:, None], lam[s])).value
                 for s, f in enumerate(at)]
        means.append(np.mean(moved, axis=0))
    means_ = np.array(means)  # [T, n_runs]
    brute = (n_topics - 1) / n_topics * ((means_ - means_.mean(axis=0)) ** 2).sum(axis=0)
    assert brute.max() > 1e-8  # lam moves here
    got = lam_variance(spec, topics, 1, lam).sum(axis=0) / n_topics**2
    np.testing.assert_allclose(got, brute, rtol=0.02, atol=1e-10)
    pairs = np.array([[0, 1], [2, 5]])
    diff = means_[:, pairs[:, 0]] - means_[:, pairs[:, 1]]
    brute_pairs = (n_topics - 1) / n_topics * ((diff - diff.mean(axis=0)) ** 2).sum(axis=0)
    got_pairs = lam_variance(spec, topics, 1, lam, pairs).sum(axis=0) / n_topics**2
    np.testing.assert_allclose(got_pairs, brute_pairs, rtol=0.02, atol=1e-10)


def test_no_lam_variance_where_lam_cannot_move(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame]) -> None:
    """Predictions equal to the labels: lam = 1 with any topic left out, the term is 0 and
    the intervals are those without it; with ``tuning=none`` or ``cross-fit`` it is not taken."""
    runs, qrels, pool, truth = judged_collection
    perfect = truth[["query_id", "doc_id"]].assign(prediction=truth["relevance"])
    spec, topics, lam = _setting(judged_collection, perfect)
    np.testing.assert_array_equal(lam_variance(spec, topics, 1, lam), 0.0)
    for options in ("tuning=none,", "tuning=cross-fit,", ""):
        named = parse_estimate(f"AP~ppi({options}lam-variance=none)")
        assert not takes_lam_variance(named)
    assert not takes_lam_variance(parse_estimate("AP~ppi(tuning=none,lam-variance=topics)"))
    selector = METHODS["stratified"](pool, Budget(rate=0.3), np.random.default_rng(1))
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    got = estimate(sample, runs, ["AP~ppi(lam-variance=topics)", "AP~ppi"], depth=DEPTH,
                   predictions=perfect)
    width = (got["hi"] - got["lo"]).to_numpy().reshape(2, -1)
    np.testing.assert_array_equal(width[0], width[1])


@pytest.mark.parametrize("measure", ["AP~ppi(bias=taylor,lam-variance=topics)",
                                     "AP~ppi(lam-variance=topics)"])
def test_lam_variance_widens_the_interval_by_its_share(
        judged_collection: tuple[list[Run], Qrels, Pool, pd.DataFrame], measure: str) -> None:
    """Through ``estimate``: each topic's interval with ``lam-variance=topics`` is the one
    without it, its variance raised by the topic's share; the estimates are unchanged."""
    runs, qrels, pool, truth = judged_collection
    noisy = flipped(truth, 0.1, np.random.default_rng(5))
    selector = METHODS["stratified"](pool, Budget(rate=0.3), np.random.default_rng(1))
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    without = measure.replace("lam-variance=topics", "lam-variance=none")
    got = estimate(sample, runs, [measure, without], depth=DEPTH, predictions=noisy)
    names = got["measure"].unique()  # in the order asked
    got = got[got["query_id"] != "all"].set_index(["measure", "run", "query_id"])
    a, b = got.loc[names[0]], got.loc[names[1]]
    np.testing.assert_allclose(a["value"], b["value"], rtol=0, atol=0)
    assert ((a["hi"] - a["lo"]) >= (b["hi"] - b["lo"]) - 1e-12).all()
    assert ((a["hi"] - a["lo"]) > (b["hi"] - b["lo"]) + 1e-9).any()


# -- unseen=prior (sampleval.estimation.families.ppi_unseen) ----------------------------------

def _hand(labels: list[float], predicted: list[float]) -> tuple[list[TopicData], np.ndarray]:
    """One topic: stratum A = {d1, d2} judged in full, stratum B = {d3..d6} with d3, d4 judged;
    ``labels`` of d1..d4, ``predicted`` of d1..d6. Run A = d1 d3 d5 d2, run B = d6 d4 d1."""
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["d1", "d2", "d3", "d4", "d5", "d6"],
                          "relevance": [*labels, -1.0, -1.0],
                          "stratum": ["A", "A", "B", "B", "B", "B"]})
    sample = Sample.from_sample_qrels(frame)
    runs = [Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": docs,
                                         "score": np.arange(len(docs), 0, -1.0)}), name)
            for name, docs in {"A": ["d1", "d3", "d5", "d2"], "B": ["d6", "d4", "d1"]}.items()]
    predictions = Predictions.from_frame(pd.DataFrame({
        "query_id": "1", "doc_id": ["d1", "d2", "d3", "d4", "d5", "d6"],
        "prediction": predicted}))
    views = topic_views(Pool.from_runs(runs), sample, predictions)
    topics = [topic_data(view, sample, "ht") for view in views]
    return topics, np.ones((1, 2, 2))


def test_unseen_variance_by_hand() -> None:
    """Labels and predictions agree on every judged document (d1 1, d2 0, d3 0, d4 1;
    predicted d5 1, d6 0): stratum A is a census, stratum B (N 4, n 2) holds no
    disagreement. p_1 = p_0 = (0 + 1/2)/(3 + 1) (three frame documents predicted each way);
    V_B = 4 (1 - 2/4)/2 (2 p_1 (1 - p_1) + 2 p_0 (1 - p_0)) = 0.4375; R-hat = 1 + 2 = 3 (d4
    weighs 2); each run's share (Q/3)^2 V_B, a pair's ((Q_a - Q_b)/3)^2 V_B; with lam_R = 0
    V_B = 4 (1 - 2/4)/2 2 p_0 (1 - p_0) = 0.21875. A disagreement
    judged in B (d3 labelled 1) leaves no stratum open: 0."""
    topics, lam = _hand([1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(disagreement_rates(topics[0], 1.0), [0.125, 0.125])
    np.testing.assert_allclose(r_hat(topics[0], lam[0], 1.0), [3.0, 3.0])
    value = np.array([[0.6, 0.3]])
    np.testing.assert_allclose(unseen_variance(topics, 1.0, value, lam),
                               [[(0.6 / 3) ** 2 * 0.4375, (0.3 / 3) ** 2 * 0.4375]])
    np.testing.assert_allclose(unseen_variance(topics, 1.0, value, lam, np.array([[0, 1]])),
                               [[(0.3 / 3) ** 2 * 0.4375]])
    # lam_R = 0: a predicted-relevant document's residual is 0, only N_B0's part is left
    np.testing.assert_allclose(unseen_variance(topics, 1.0, value, np.zeros((1, 2, 2))),
                               [[(0.6 / 3) ** 2 * 0.21875, (0.3 / 3) ** 2 * 0.21875]])
    seen, lam = _hand([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(unseen_variance(seen, 1.0, value, lam), 0.0)
    assert takes_unseen(parse_estimate("AP~ppi(unseen=prior)"))
    assert not takes_unseen(parse_estimate("AP~ppi"))
