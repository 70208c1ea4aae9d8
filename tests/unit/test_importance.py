"""Importance-sampling estimators (Schnabel et al., ICTIR 2016): hand-made cases, exact
unbiasedness on TREC-COVID round 5, and a Monte Carlo study of bias and interval coverage."""

from __future__ import annotations

import math
import time
from functools import partial

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.views import TopicView, topic_views, z_value
from sampleval.estimation.families import importance as imp
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.evaluation import evaluate
from sampleval.measures.exact import rank_weights
from sampleval.measures.weights import at_rank
from sampleval.selection import priors

Z95 = z_value(0.95)
LN40 = math.log(2 / 0.05)  # Hoeffding's ln(2/delta) at 95%
LN60 = math.log(3 / 0.05)  # Bernstein's ln(3/delta) at 95%


def toy(topics: dict[str, tuple[dict[str, float], dict[str, list[str]], dict[str, float],
                                list[str]]]) -> tuple[Pool, Sample]:
    """A pool and an importance sample from {topic: (labels, rankings, Q, drawn docs)}."""
    runs: dict[str, list[pd.DataFrame]] = {}
    frame, draws, probs = [], [], []
    for topic, (labels, rankings, q, drawn) in topics.items():
        for name, docs in rankings.items():
            runs.setdefault(name, []).append(pd.DataFrame(
                {"query_id": topic, "doc_id": docs, "score": np.arange(len(docs), 0, -1.0)}))
        frame.append(pd.DataFrame({"query_id": topic, "doc_id": list(labels),
                                   "relevance": list(labels.values()), "stratum": "",
                                   "inclusion": np.nan}))
        draws.append(pd.DataFrame({"query_id": topic, "round": np.arange(1, len(drawn) + 1),
                                   "doc_id": drawn, "probability": [q[d] for d in drawn]}))
        probs.append(pd.DataFrame({"query_id": topic, "round": 1, "doc_id": list(q),
                                   "probability": list(q.values())}))
    pool = Pool.from_runs([Run.from_frame(pd.concat(parts), name)
                           for name, parts in runs.items()])
    sample = Sample("importance", pd.concat(frame), draws=pd.concat(draws),
                    round_probs=pd.concat(probs))
    return pool, sample


# Topic 1: run r ranks a b c d; a and c relevant; Q = .4 .3 .2 .1; draws a, c, a.
# Topic 2: run r ranks f e g; f and g relevant; Q = .5 .25 .25 (e f g); draws f, e.
TOPIC_1 = ({"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}, {"r": ["a", "b", "c", "d"]},
           {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}, ["a", "c", "a"])
TOPIC_2 = ({"e": 0.0, "f": 1.0, "g": 1.0}, {"r": ["f", "e", "g"]},
           {"e": 0.5, "f": 0.25, "g": 0.25}, ["f", "e"])


def run_is(pool: Pool, sample: Sample, measure: str, interval: str = "normal",
           ci: float = 0.95) -> pd.DataFrame:
    estimate = partial(imp.estimate_is, interval=interval)
    out = estimate(pool.run_names, topic_views(pool, sample), sample, parse_estimate(measure),
                   1.0, ci)
    return out.set_index("query_id")


def test_precision_by_hand_clt_and_mean_over_topics() -> None:
    pool, sample = toy({"1": TOPIC_1, "2": TOPIC_2})
    out = run_is(pool, sample, "P@2~is")
    # eq. 4, topic 1: lambda = 1/2 on a, b; terms a: .5/.4 = 1.25, c: 0, a: 1.25 -> 5/6;
    # sample variance ((5/12)^2 + (5/6)^2 + (5/12)^2) / 2 = 75/144; eq. 16 half-width
    # z sqrt(75/144 / 3) = z 5/12.
    assert out.loc["1", "value"] == pytest.approx(5 / 6)
    assert out.loc["1", "hi"] - out.loc["1", "value"] == pytest.approx(Z95 * 5 / 12)
    # topic 2: terms f: .5/.25 = 2, e: 0 -> 1, variance 2, half z sqrt(2/2) = z.
    assert out.loc["2", "value"] == pytest.approx(1.0)
    assert out.loc["2", "value"] - out.loc["2", "lo"] == pytest.approx(Z95)
    # mean 11/12; variances add: z sqrt(25/144 + 1) / 2 = z 13/24.
    assert out.loc["all", "value"] == pytest.approx(11 / 12)
    assert out.loc["all", "hi"] - out.loc["all", "value"] == pytest.approx(Z95 * 13 / 24)


def test_dcg_by_hand_hoeffding_and_bernstein() -> None:
    pool, sample = toy({"1": TOPIC_1, "2": TOPIC_2})
    # DCG@2, topic 1: terms a: 1/.4 = 2.5, c: 0, a: 2.5 -> 5/3, sample variance 25/12;
    # range b = max(1 * 1/.4, (1/log2 3) / .3) = 2.5 (largest grade 1).
    # topic 2: terms f: 1/.25 = 4, e: 0 -> 2, variance 8; b = max(1/.25, (1/log2 3)/.5) = 4.
    hoeffding = run_is(pool, sample, "DCG@2~is", "hoeffding")
    half_1 = 2.5 * math.sqrt(LN40 / (2 * 3))  # eq. 17
    assert hoeffding.loc["1", "value"] == pytest.approx(5 / 3)
    assert hoeffding.loc["1", "hi"] == pytest.approx(5 / 3 + half_1)
    assert hoeffding.loc["1", "lo"] == 0.0  # 5/3 - 1.96 clipped at 0
    # mean 11/6: sqrt(ln(2/delta)/2 * sum_t w_t^2 b_t^2 / n_t), w = 1/2
    half_mean = math.sqrt(LN40 / 2 * (2.5**2 / 3 + 4**2 / 2) / 4)
    assert hoeffding.loc["all", "hi"] == pytest.approx(11 / 6 + half_mean)
    bernstein = run_is(pool, sample, "DCG@2~is", "bernstein")
    # topic 1: sigma = min(sqrt(25/12) + 2.5 sqrt(2 ln(3/delta) / 2), 2.5/2) = 1.25
    half_1 = math.sqrt(2 * LN60 * 1.25**2 / 3) + LN60 * 2.5 / (3 * 3)
    assert bernstein.loc["1", "hi"] == pytest.approx(5 / 3 + half_1)
    # mean: both sigmas at b/2 (the slack uses ln(3T/delta), T = 2), w = 1/2
    spread = (1.25**2 / 3 + 2.0**2 / 2) / 4
    half_mean = math.sqrt(2 * LN60 * spread) + LN60 / 3 * max(2.5 / 2 / 3, 4 / 2 / 2)
    assert bernstein.loc["all", "hi"] == pytest.approx(11 / 6 + half_mean)


def test_recall_and_ndcg_by_hand() -> None:
    pool, sample = toy({"1": TOPIC_1})
    # R@2: numerator terms 1[top 2] rel/Q: 2.5, 0, 2.5 -> 5/3; R terms rel/Q: 2.5, 5, 2.5
    # -> 10/3; ratio 1/2 (the truth here: a of a, c in the top 2).
    assert run_is(pool, sample, "R@2~is").loc["1", "value"] == pytest.approx(0.5)
    # nDCG@2: DCG-hat 5/3; grade-1 count N-hat = 10/3 fills both ranks of the ideal:
    # 1 + 1/log2 3; the estimate 5/3 / (1 + 1/log2 3) = 1.0219 may exceed 1.
    ndcg = run_is(pool, sample, "nDCG@2~is").loc["1", "value"]
    assert ndcg == pytest.approx((5 / 3) / (1 + 1 / math.log2(3)))
    # without a cutoff the count is not rounded (the plug-in of sec. 3, where the engine's
    # nDCG rounds as sample_eval does): DCG-hat terms a: 1/.4, c: (1/log2 4)/.2, a -> 5/2;
    # 10/3 documents of grade 1 fill ranks 1-3 and a third of rank 4
    ideal = 1 + 1 / math.log2(3) + 1 / 2 + (1 / 3) / math.log2(5)
    assert run_is(pool, sample, "nDCG~is").loc["1", "value"] == pytest.approx(2.5 / ideal)


def test_ideal_dcg_with_fractional_counts() -> None:
    # grades 2, 1 with counts 1.5, 1, cutoff 3: rank 1 gains 2, rank 2 half 2 and half 1
    # (1.5 / log2 3), rank 3 half 1 (0.5 / 2).
    ideal, grad = imp.ideal_dcg(np.array([2.0, 1.0]), np.array([1.5, 1.0]), 3)
    assert ideal == pytest.approx(2 + 1.5 / math.log2(3) + 0.25)
    # d/dN_2 = (2-1) w(1.5) + (1-0) w(2.5) = 1/log2 3 + 1/2; d/dN_1 = w(2.5) = 1/2
    assert grad == pytest.approx([1 / math.log2(3) + 0.5, 0.5])
    step = 1e-7
    bumped = imp.ideal_dcg(np.array([2.0, 1.0]), np.array([1.5 + step, 1.0]), 3)[0]
    assert (bumped - ideal) / step == pytest.approx(grad[0], rel=1e-5)
    # integer counts without a cutoff: trec_eval's ideal, every judged grade in order
    ideal, _ = imp.ideal_dcg(np.array([2.0, 1.0]), np.array([1.0, 2.0]), None)
    assert ideal == pytest.approx(2 + 1 / math.log2(3) + 1 / 2)


def test_ratio_box_intervals() -> None:
    spec = parse_estimate("R@5~is")
    stats = imp.TopicStats(value=np.array([0.5]), means=np.array([[0.6], [1.2]]), variances=np.array([[0.1], [0.2]]),
                           bounds=np.array([[1.0], [2.0]]), n=100, grades=np.array([]))
    out = imp.intervals(spec, [stats, stats], np.ones((2, 1), dtype=bool), "hoeffding", 0.95)
    # each mean at delta/2: eps = b sqrt(ln(2/(delta/2)) / 200); ratio over the box
    eps = math.sqrt(math.log(80) / 200)
    assert out["lo"][0, 0] == pytest.approx((0.6 - eps) / (1.2 + 2 * eps))
    assert out["hi"][0, 0] == pytest.approx((0.6 + eps) / (1.2 - 2 * eps))
    # the mean over two topics: a union over their 4 means, delta/4 each
    eps = math.sqrt(math.log(160) / 200)
    assert out["mean_lo"][0] == pytest.approx((0.6 - eps) / (1.2 + 2 * eps))


def test_fractional_labels_stay_unbiased_for_the_expected_label() -> None:
    # Schnabel et al. sec. 7: three documents judged by four binary assessors; the label is
    # their mean. Run ranks a b c; P@2 of the expected labels: (.75 + .25) / 2 = .5.
    votes = np.array([[1, 1, 0, 1], [0, 0, 1, 0], [1, 1, 1, 1]], dtype=float)
    q = np.array([0.5, 0.3, 0.2])
    weights = at_rank(rank_weights("P", 2, 3), np.array([[1, 2, 3]]))
    spec = parse_estimate("P@2~is")
    every = np.arange(3)
    mean_label = imp.draw_terms(spec, 1.0, weights, every, votes.mean(axis=1), q, np.array([]))
    assert (mean_label[0, 0] * q).sum() == pytest.approx(0.5)
    # each draw judged by one assessor at random: the same expectation
    one_vote = [imp.draw_terms(spec, 1.0, weights, every, votes[:, a], q, np.array([]))
                for a in range(4)]
    assert np.mean([(t[0, 0] * q).sum() for t in one_vote]) == pytest.approx(0.5)
    # graded assessors at level 2: grades {1, 2} average to 1 + (share of 2s), and rel is
    # that share, the expected binary vote
    assert imp.relevance(np.array([1.0, 1.25, 2.0]), 2.0) == pytest.approx([0.0, 0.25, 1.0])


def test_a_judged_grade_no_draw_holds_still_widens_ndcg_s_bounded_intervals() -> None:
    # d is judged 2 but never drawn: the bounded intervals keep a grade-2 count (eq. 4's
    # estimate 0, its range 1/Q(d) > 0), so the ideal DCG may be larger and nDCG lower than
    # when d is unjudged; the value and the normal interval do not change.
    labels = {"a": 1.0, "b": 0.0, "c": 1.0, "d": 2.0}
    topic = (labels, {"r": ["a", "b", "c", "d"]}, {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1},
             ["a", "c", "a", "b"] * 400)
    unjudged = ({**labels, "d": np.nan}, *topic[1:])
    for kind in imp.INTERVALS:
        judged = run_is(*toy({"1": topic}), "nDCG@3~is", kind).loc["all"]
        unseen = run_is(*toy({"1": unjudged}), "nDCG@3~is", kind).loc["all"]
        assert judged["value"] == pytest.approx(unseen["value"], rel=1e-12)
        if kind == "normal":
            assert judged["lo"] == pytest.approx(unseen["lo"], rel=1e-12)
        else:
            assert judged["lo"] < unseen["lo"] - 0.05


def test_sampling_distributions_by_hand() -> None:
    lam = np.array([1.0, 0.5])  # lambda at ranks 1, 2
    prior = np.array([0.64, 0.16])  # u~ at ranks 1, 2
    one = np.array([1, 2, 0])  # the system ranks x, y; z not retrieved
    # eq. 8: u~ lambda + eps = .64 + .3, .08 + .3, .3 (eps on the unnormalised weights)
    weights = np.array([0.94, 0.38, 0.3])
    assert priors.single_system_q(prior, one, 0.3, lam) == pytest.approx(weights / weights.sum())
    # form=sqrt: sqrt(u~) lambda = .8, .2, 0
    assert priors.single_system_q(prior, one, 0.0, lam, "sqrt") == pytest.approx([0.8, 0.2, 0])
    two = np.array([[1, 2, 0], [2, 0, 1]])
    # u~ averaged over both systems, 0 where one did not retrieve: x .4, y .08, z .32
    u = np.array([0.4, 0.08, 0.32])
    weights = u * np.sqrt(np.array([1.25, 0.25, 1.0]))  # eq. 11
    assert priors.sqrt_q(prior, two, 0.0, lam) == pytest.approx(weights / weights.sum())
    weights = u * np.array([0.5, 0.5, 1.0])  # eq. 13: |lambda_1 - lambda_2|
    assert priors.pairwise_q(prior, two, 0.0, lam) == pytest.approx(weights / weights.sum())
    # eq. 15 over two systems: sqrt(2 (d/2)^2) = |d| / sqrt(2), the same Q as eq. 13
    assert priors.krel_q(prior, two, 0.0, lam) == pytest.approx(
        priors.pairwise_q(prior, two, 0.0, lam))
    assert priors.krel_q(prior, two, 0.0, lam, baseline=0) == pytest.approx(
        priors.pairwise_q(prior, two, 0.0, lam))
    weights = u * np.array([1.5, 0.5, 1.0])  # MEAN: u~ sum_j lambda_j
    assert priors.mean_q(prior, two, 0.0, lam) == pytest.approx(weights / weights.sum())
    assert priors.sqrt_q(prior, one[None], 0.0, lam) == pytest.approx(
        priors.single_system_q(prior, one, 0.0, lam))
    assert priors.named_prior("trec", 3) == pytest.approx([16 / 35, 16 / 36, 16 / 37])
    assert priors.named_prior("synth", 2001)[[0, 1999, 2000]] == pytest.approx(
        [4 * 1999 / 2000, 0.0, 0.0])


def test_hoeffding_by_name_by_hand() -> None:
    """The ``interval`` option of the family (``P@2~is(interval=hoeffding)``): eq. 17 with
    the range b = max lambda / Q over the frame. Topic 1: lambda = 1/2 on a, b, so
    b = max(.5/.4, .5/.3) = 5/3 and the half-width is b sqrt(ln(2/delta) / (2n)), n = 3."""
    pool, sample = toy({"1": TOPIC_1})
    spec = parse_estimate("P@2~is(interval=hoeffding)")
    assert spec.option("interval") == "hoeffding"
    out = imp.estimate_is(pool.run_names, topic_views(pool, sample), sample, spec, 1.0,
                          0.95).set_index("query_id")
    half = 5 / 3 * math.sqrt(LN40 / 6)  # > 5/6, so the interval is clipped to [0, 1]
    assert out.loc["1", "lo"] == pytest.approx(max(5 / 6 - half, 0.0))
    assert out.loc["1", "hi"] == pytest.approx(min(5 / 6 + half, 1.0))
    dcg = imp.estimate_is(pool.run_names, topic_views(pool, sample), sample,
                          parse_estimate("DCG@2~is(interval=hoeffding)"), 1.0, 0.95)
    # DCG@2: lambda = 1, 1/log2(3) on a, b; b = max(1/.4, (1/log2 3)/.3) with the largest
    # judged grade 1; terms a: 2.5, c: 0, a: 2.5 -> 5/3; DCG's range is [0, inf)
    b = max(1 / 0.4, 1 / math.log2(3) / 0.3)
    assert dcg["hi"].iloc[0] - 5 / 3 == pytest.approx(b * math.sqrt(LN40 / 6))
    with pytest.raises(UsageError, match="interval"):
        parse_estimate("P@2~is(interval=wald)")


def test_rank_prior_by_hand() -> None:
    # ranks 1, 2 over two runs: rank 1 judged 2x (1 relevant), rank 2 judged 1x (relevant),
    # overall 2/3; one pseudo-judgment: (1 + 2/3) / 3, (1 + 2/3) / 2
    labels = [np.array([[1.0, np.nan], [0.0, 2.0]])]
    assert priors.fitted_prior(labels, level=1.0, strength=1.0) == pytest.approx([5 / 9, 5 / 6])


def test_errors() -> None:
    pool, sample = toy({"1": TOPIC_1})
    views = topic_views(pool, sample)
    spec = parse_estimate("P@2~is")
    census = Sample("census", sample.frame.assign(inclusion=1.0))
    with pytest.raises(UsageError, match="importance sample"):
        imp.estimate_is(pool.run_names, views, census, spec, 1.0, 0.95)
    bare = Sample("importance", sample.frame, draws=sample.draws)
    with pytest.raises(UsageError, match="round_probs"):
        imp.estimate_is(pool.run_names, views, bare, spec, 1.0, 0.95, interval="hoeffding")
    unjudged = Sample("importance", sample.frame.assign(relevance=np.nan), draws=sample.draws)
    with pytest.raises(UsageError, match="no judgment"):
        imp.estimate_is(pool.run_names, topic_views(pool, unjudged), unjudged, spec, 1.0, 0.95)
    with pytest.raises(UsageError, match="unknown interval"):
        imp.estimate_is(pool.run_names, views, sample, spec, 1.0, 0.95, interval="wald")


# -- real data ---------------------------------------------------------------------------------


def sqrt_distribution(view: TopicView, prior: np.ndarray) -> np.ndarray:
    """SQRT-Q (eq. 11) for DCG@10 over every run, eps = 0.05."""
    ranks = view.rank_of(np.arange(len(view.sample.docnos)))
    return priors.sqrt_q(prior, ranks, 0.05, rank_weights("DCG", 10, len(prior)))


@pytest.mark.shared
def test_exact_expectation_equals_the_truth(
        round5_census: tuple[Qrels, Pool, list[TopicView]]) -> None:
    """E_Q[U-hat] = sum_x Q(x) term(x) = the measure, for every run and topic; ratios:
    their components' expectations give trec_eval's R@10, nDCG@10 and nDCG."""
    qrels, pool, views = round5_census
    prior = priors.fitted_prior([v.labels_at_rank() for v in views])
    exact = evaluate(qrels, pool, ["P@10", "R@10", "nDCG@10", "nDCG"]).set_index(
        ["query_id", "measure", "run"])["value"].sort_index()
    worst = 0.0
    for view in views:
        n_docs = len(view.sample.docnos)
        q = sqrt_distribution(view, prior)
        ranks = view.rank_of(np.arange(n_docs))
        labels = view.sample.labels
        grades = np.unique(labels[labels > 0])[::-1]
        present = view.pool.present
        for name in ["P@10", "DCG@10", "R@10", "nDCG@10", "nDCG"]:
            spec = parse_estimate(f"{name}~is")
            weights = at_rank(rank_weights(spec.base, spec.cutoff, 100), ranks)
            terms = imp.draw_terms(spec, 1.0, weights, np.arange(n_docs), labels, q, grades)
            value = imp.measure_value(spec, grades, (terms * q).sum(axis=-1))
            if name == "DCG@10":
                truth = weights @ labels
            else:
                truth = exact.loc[(view.pool.topic, name)].reindex(pool.run_names).to_numpy()
            worst = max(worst, float(np.abs(value - truth)[present].max()))
    assert worst < 1e-9


def clt(stats: list[imp.TopicStats], present: np.ndarray) -> dict[str, np.ndarray]:
    """Eq. 16 by hand for a linear measure (its one component's terms are its linearised
    ones): value -+ z sqrt(s^2 / n), the mean's variances added over the topics."""
    values = np.stack([s.value for s in stats])
    extra = (1,) * (values.ndim - 2)
    weight = present.reshape(present.shape + extra) / present.sum(axis=0).reshape(
        (-1, *extra))
    var = np.stack([s.variances[0] / s.n for s in stats])
    half, mean = Z95 * np.sqrt(var), (weight * values).sum(axis=0)
    mean_half = Z95 * np.sqrt((weight**2 * var).sum(axis=0))
    return {"value": values, "lo": values - half, "hi": values + half, "mean": mean,
            "mean_lo": mean - mean_half, "mean_hi": mean + mean_half}


@pytest.mark.shared
def test_sample_entry_agrees_with_the_array_core(
        round5_census: tuple[Qrels, Pool, list[TopicView]]) -> None:
    """An importance Sample of 20 SQRT draws per topic: estimate_is gives what the array
    functions give, for the two bounded interval kinds, and its normal interval (the engine's
    per-draw form) is the sample variance of the per-draw terms over n (eq. 16)."""
    _, pool, views = round5_census
    prior = priors.fitted_prior([v.labels_at_rank() for v in views])
    rng = np.random.default_rng(5)
    frame, draws, probs, stats = [], [], [], []
    spec = parse_estimate("DCG@10~is")
    for view in views:
        docnos, labels = view.sample.docnos, view.sample.labels
        q = sqrt_distribution(view, prior)
        x = rng.choice(len(docnos), size=20, p=q)
        frame.append(pd.DataFrame({"query_id": view.pool.topic, "doc_id": docnos,
                                   "relevance": labels, "stratum": "", "inclusion": np.nan}))
        draws.append(pd.DataFrame({"query_id": view.pool.topic, "round": np.arange(20),
                                   "doc_id": docnos[x], "probability": q[x]}))
        probs.append(pd.DataFrame({"query_id": view.pool.topic, "round": 0, "doc_id": docnos,
                                   "probability": q}))
        weights = at_rank(rank_weights("DCG", 10, 100),
                              view.rank_of(np.arange(len(docnos))))
        bounds = imp.term_bounds(spec, weights, q, np.array([]), 2.0)
        stats.append(imp.topic_stats(spec, 1.0, weights, x, labels[x], q[x], bounds,
                                     np.array([])))
    sample = Sample("importance", pd.concat(frame), draws=pd.concat(draws),
                    round_probs=pd.concat(probs))
    present = np.array([v.pool.present for v in views])
    for kind in imp.INTERVALS:
        out = imp.estimate_is(pool.run_names, topic_views(pool, sample), sample, spec, 1.0, 0.95,
                              interval=kind)
        core = clt(stats, present) if kind == "normal" else imp.intervals(spec, stats, present,
                                                                           kind, 0.95)
        means = out[out["query_id"] == "all"].set_index("run").loc[list(pool.run_names)]
        assert means["value"].to_numpy() == pytest.approx(core["mean"])
        assert means["lo"].to_numpy() == pytest.approx(core["mean_lo"])
        assert means["hi"].to_numpy() == pytest.approx(core["mean_hi"])


@pytest.mark.slow
@pytest.mark.shared
def test_monte_carlo_bias_and_coverage(
        round5_census: tuple[Qrels, Pool, list[TopicView]]) -> None:
    """1000 trials of 20 SQRT draws per topic: the mean over topics is unbiased (within 3 SE
    for >= 95% of runs) and the 95% CLT interval covers it 85-98% of the time. With the
    paper's Q (eps = 0.05 on the unnormalised weights, about half of Q's mass on round 5's
    pools of ~8000 documents) the per-draw terms are skewed and 20 draws give 0.88 for P@10
    (the CLT is asymptotic); Hoeffding and Bernstein keep >= 0.95."""
    _, _, views = round5_census
    start = time.perf_counter()
    prior = priors.fitted_prior([v.labels_at_rank() for v in views])
    rng = np.random.default_rng(2016)
    trials, n = 1000, 20
    present = np.array([v.pool.present for v in views])
    for name in ["P@10", "DCG@10"]:
        spec = parse_estimate(f"{name}~is")
        stats, truth = [], []
        for view in views:
            labels = view.sample.labels
            q = sqrt_distribution(view, prior)
            weights = at_rank(rank_weights(spec.base, spec.cutoff, 100),
                                  view.rank_of(np.arange(len(labels))))
            truth.append(weights @ (imp.relevance(labels, 1.0) if spec.base == "P" else labels))
            x = rng.choice(len(labels), size=(trials, n), p=q)
            bounds = imp.term_bounds(spec, weights, q, np.array([]), 2.0)
            stats.append(imp.topic_stats(spec, 1.0, weights, x, labels[x], q[x], bounds,
                                         np.array([])))
        true_topic = np.array(truth)
        true_mean = (true_topic * present).sum(axis=0) / present.sum(axis=0)
        for kind in imp.INTERVALS:
            out = (clt(stats, present) if kind == "normal"
                   else imp.intervals(spec, stats, present, kind, 0.95))
            covered = (out["mean_lo"] <= true_mean[:, None]) & (true_mean[:, None]
                                                                <= out["mean_hi"])
            per_topic = ((out["lo"] <= true_topic[..., None])
                         & (true_topic[..., None] <= out["hi"]))[present]
            width = float((out["mean_hi"] - out["mean_lo"]).mean())
            print(f"{name} {kind}: coverage of the mean {covered.mean():.3f}, per topic "
                  f"{per_topic.mean():.3f}, mean width {width:.3f}")
            if kind == "normal":
                bias = out["mean"].mean(axis=1) - true_mean
                se = out["mean"].std(axis=1, ddof=1) / math.sqrt(trials)
                within = np.mean(np.abs(bias) <= 3 * se)
                print(f"{name}: mean bias {bias.mean():+.5f}, within 3 SE for {within:.3f}")
                assert within >= 0.95
                assert 0.85 <= covered.mean() <= 0.98
            else:
                assert covered.mean() >= 0.95
    print(f"Monte Carlo: {time.perf_counter() - start:.1f} s")
