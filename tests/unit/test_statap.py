"""statAP (Aslam, Pavlu & Yilmaz, SIGIR 2006): hand-made cases, exact unbiasedness of its
numerator and R-hat by enumerating samples, AP on a census, and a Monte Carlo study."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
import pytest

from sampleval.core.ap_prior import prior_at_ranks
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.views import TopicView, relevance, topic_views, z_value
from sampleval.estimation.families.statap import estimate_statap, statap_core
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.evaluation import evaluate

STATAP = parse_estimate("statAP")


def one_run(docs: list[str]) -> Pool:
    return Pool.from_runs([Run.from_frame(pd.DataFrame(
        {"query_id": "1", "doc_id": docs, "score": np.arange(len(docs), 0, -1.0)}), "r")])


def statap_of(pool: Pool, sample: Sample) -> pd.Series:
    out = estimate_statap(pool.run_names, topic_views(pool, sample), sample, STATAP, 1.0, 0.95)
    return out.set_index("query_id").loc["1"]


def test_prels_by_hand() -> None:
    # judged: d1 rel pi .5, d2 non-rel pi 1, d3 rel pi .25, d4 rel pi .5; the run ranks
    # d1 d2 d3 (d4 not retrieved). y/pi: 2, 0, 4, 2; R-hat = 8.
    # prec-hat(d1) = (1 + 0)/1 = 1; prec-hat(d3) = (1 + 2 + 0)/3 = 1; statAP = (2 + 4)/8.
    prels = pd.DataFrame({"query_id": "1", "doc_id": ["d1", "d2", "d3", "d4"],
                          "relevance": [1.0, 0.0, 1.0, 1.0], "probability": [0.5, 1, 0.25, 0.5]})
    row = statap_of(one_run(["d1", "d2", "d3"]), Sample.from_prels(prels))
    assert row["value"] == pytest.approx(0.75)
    # delta method: g = y (prec + sum_{j below} y_j/(pi_j rank_j) - AP): d1 1 + 4/3 - 3/4 =
    # 19/12, d3 1/4, d4 -3/4; sum (1-pi)/pi^2 g^2 = 2 (19/12)^2 + 12/16 + 2 (9/16) = 62/9;
    # pair d1 d3: c = 1/3, (1-pi)(1-pi')/(pi^2 pi'^2) = 24, so 24/9; Var = (86/9) / 8^2.
    half = z_value(0.95) * math.sqrt(86 / 9 / 64)
    assert row["hi"] - row["value"] == pytest.approx(half)


# Six documents; the run ranks b1 a1 a2 b2 a3; relevant a1 a3 b1 b2: R = 4 and
# AP R = 1/1 + 2/2 + 3/4 + 4/5 = 3.55.
DOCS = ["a1", "a2", "a3", "b1", "b2", "b3"]
LABELS = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
RANKING = ["b1", "a1", "a2", "b2", "a3"]


def test_numerator_and_r_exactly_unbiased_under_poisson() -> None:
    pi = np.array([0.9, 0.3, 0.5, 0.6, 0.4, 0.2])
    pool = one_run(RANKING)
    mean_num = mean_r = 0.0
    for picked in itertools.product([False, True], repeat=6):
        chosen = np.array(picked)
        prob = np.prod(np.where(chosen, pi, 1 - pi))
        frame = pd.DataFrame({"query_id": "1", "doc_id": DOCS,
                              "relevance": np.where(chosen, LABELS, np.nan),
                              "stratum": "", "inclusion": pi})
        r_hat = (LABELS / pi)[chosen].sum()
        mean_num += prob * statap_of(pool, Sample("poisson", frame))["value"] * r_hat
        mean_r += prob * r_hat
    assert mean_r == pytest.approx(4.0)
    assert mean_num == pytest.approx(3.55)


def test_numerator_and_r_exactly_unbiased_under_stratified_sampling() -> None:
    # strata a*, b*; two of three documents drawn from each (pi_i = 2/3, pi_ij = 1/3 within a
    # stratum): the pair terms use pi_d / pi_jd, not 1 / pi_j
    pool = one_run(RANKING)
    mean_num = mean_r = 0.0
    samples = list(itertools.product(itertools.combinations(range(3), 2), repeat=2))
    for in_a, in_b in samples:
        chosen = np.isin(np.arange(6), [*in_a, *(3 + i for i in in_b)])
        table = pd.DataFrame({"query_id": "1", "doc_id": DOCS, "stratum": [d[0] for d in DOCS],
                              "relevance": np.where(chosen, LABELS, -1.0)})
        r_hat = LABELS[chosen].sum() * 1.5
        mean_num += statap_of(pool, Sample.from_sample_qrels(table))["value"] * r_hat
        mean_r += r_hat
    assert mean_r / len(samples) == pytest.approx(4.0)
    assert mean_num / len(samples) == pytest.approx(3.55)


# -- real data ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.shared
def test_census_is_exact_ap(
        round5_census: tuple[Qrels, Pool, list[TopicView]]) -> None:
    qrels, pool, views = round5_census
    census = Sample("census", pd.concat([pd.DataFrame({
        "query_id": v.pool.topic, "doc_id": v.sample.docnos, "relevance": v.sample.labels,
        "stratum": "", "inclusion": 1.0}) for v in views]))
    for name, measure in [("statAP", "AP"), ("statAP@10", "AP@10")]:
        ours = estimate_statap(pool.run_names, views, census, parse_estimate(name), 1.0, 0.95)
        exact = evaluate(qrels, pool, [measure])
        both = ours.merge(exact, on=["run", "query_id"])
        assert len(both) == len(ours) == len(exact)
        assert np.abs(both["value_x"] - both["value_y"]).max() < 1e-9
        assert (both["hi"] == both["lo"]).all()  # pi = 1: no variance


def inclusion_for(weights: np.ndarray, expected: float) -> np.ndarray:
    """pi = min(1, c w) with sum pi = expected (c by bisection)."""
    low, high = 0.0, expected / weights.min()
    for _ in range(100):
        c = (low + high) / 2
        low, high = (c, high) if np.minimum(1.0, c * weights).sum() < expected else (low, c)
    return np.minimum(1.0, low * weights)


@pytest.mark.slow
@pytest.mark.shared
def test_monte_carlo_bias(
        round5_census: tuple[Qrels, Pool, list[TopicView]]) -> None:
    """500 Poisson samples of ~100 documents per topic, pi from the AP-prior (90%) and the
    uniform distribution (10%): statAP's bias, averaged over runs, is under 0.02."""
    qrels, pool, views = round5_census
    start = time.perf_counter()
    exact = evaluate(qrels, pool, ["AP"])
    per_topic = exact[exact["query_id"] != "all"].pivot(index="query_id", columns="run",
                                                        values="value")
    rng = np.random.default_rng(2006)
    trials, chunk = 500, 100
    estimates, variances, truth = [], [], []
    for view in views:
        n_docs = len(view.sample.docnos)
        prior = prior_at_ranks(view.rank_of(np.arange(n_docs)))
        pi = inclusion_for(0.9 * prior / prior.sum() + 0.1 / n_docs, 100.0)
        y = relevance(view.sample.labels, 1.0)
        at_rank = np.where(view.frame_at_rank >= 0, view.frame_at_rank, n_docs)
        pi_rank = np.append(pi, 1.0)[at_rank]
        values, spreads = [], []
        for _ in range(trials // chunk):
            y_sampled = np.where(rng.random((chunk, n_docs)) < pi, y, 0.0)
            r_hat = (y_sampled / pi).sum(axis=1, keepdims=True)
            spread = (y_sampled**2 * (1 - pi) / pi**2).sum(axis=1, keepdims=True)
            y_rank = np.append(y_sampled, np.zeros((chunk, 1)), axis=1)[:, at_rank]
            value, variance = statap_core(y_rank, pi_rank, r_hat, spread)
            values.append(value)
            spreads.append(variance)
        estimates.append(np.concatenate(values))
        variances.append(np.concatenate(spreads))
        truth.append(per_topic.loc[view.pool.topic, list(pool.run_names)].to_numpy())
    est, var, true = np.array(estimates), np.array(variances), np.array(truth)
    map_est, map_true = est.mean(axis=0), true.mean(axis=0)  # [trials, runs], [runs]
    bias = map_est.mean(axis=0) - map_true
    half = z_value(0.95) * np.sqrt(var.sum(axis=0)) / len(views)
    coverage = np.mean(np.abs(map_est - map_true) <= half)
    topic_coverage = np.mean(np.abs(est - true[:, None]) <= z_value(0.95) * np.sqrt(var))
    print(f"statAP bias: mean over runs {bias.mean():+.4f} (relative "
          f"{(bias / map_true).mean():+.3f}), largest {np.abs(bias).max():.4f}; coverage of "
          f"the 95% interval: MAP {coverage:.3f}, per topic {topic_coverage:.3f}; "
          f"{time.perf_counter() - start:.1f} s")
    assert abs(bias.mean()) < 0.02
