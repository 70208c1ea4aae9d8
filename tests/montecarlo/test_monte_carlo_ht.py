"""Monte Carlo check of the Horvitz-Thompson estimators on TREC-COVID round 5.

Truth: the round 5 qrels (unjudged = not relevant), the 126 runs cut to depth 100, and the frame
is the depth-100 pool of all runs. For each design with known, fixed inclusion probabilities
(Poisson, stratified SRS, with replacement), 2000 independent samples per topic are drawn
(seeded) and estimated at once through the array-level core of
``sampleval.estimation.families.ht``: each trial is the frame's relevant documents with
y = 0 where the trial did not sample them (non-relevant documents add nothing to any estimate
or variance, so they are left out). P@10, DCG@10 and R are simulated on all 50 topics; the
slower ratio estimators AP, Rprec and nDCG on every 3rd topic (17 topics) and the first 500
trials: they are only printed, and they took three quarters of the module's time at 2000.

Checked: the mean of the P@10 estimates (per run, averaged over topics) and of R-hat (per
topic) lies within 3 standard errors of the truth for at least 95% of runs / topics (HT is
unbiased); the 95% normal intervals of the mean P@10 and DCG@10 over topics (the ``all`` rows
of ``estimate_ht``) cover the truth in 90-98% of trials on average over runs. Printed (run
pytest with -s): the bias of the ratio estimators AP, Rprec, nDCG (mean estimate - truth,
averaged over runs, of the mean over topics) and the coverage of P@10, DCG@10, AP (mean over
topics, averaged over runs) and R (per topic, averaged over topics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from ht_reference import (
    HTEstimate,
    average_precision,
    dcg,
    ndcg,
    num_rel,
    precision,
    r_precision,
)
from sampleval.core.pool import PAD, Pool, TopicPool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.measures.exact import RankedGrades, compute
from sampleval.measures.names import Measure

pytestmark = [pytest.mark.shared, pytest.mark.slow]

TRIALS = 2000
CHUNK = 250  # trials estimated at once
DEPTH = 100
Z95 = 1.959963984540054
SEED = 20171106
RATIO_STEP = 3  # AP, Rprec, nDCG on every 3rd topic (17 of 50), for time
RATIO_TRIALS = 500  # and on the first 500 trials (printed only, never asserted)
# strata by best rank across runs (1-10, 11-30, 31-100) and their sampling rates
STRATA = (10, 30)
RATES = (0.5, 0.2, 0.05)
POISSON_BUDGET = 300.0  # expected sample size before clipping pi to [0.05, 1]
DRAWS = (100, 100, 100)  # with replacement: draws per round, fixed distribution

Sampler = Callable[[np.random.Generator, int], np.ndarray]


@dataclass(frozen=True)
class Topic:
    """One topic: the frame's best ranks, its relevant documents, their ranks and grades."""

    best: np.ndarray  # [frame size] best rank of each frame document over the runs
    relevant: np.ndarray  # frame positions of the relevant documents
    ranks: np.ndarray  # [n_runs, n_relevant]
    labels: np.ndarray  # [n_relevant] true grades (> 0)
    truth: dict[str, np.ndarray]  # measure -> [n_runs]
    ratios: bool  # whether the (slower) ratio estimators are simulated on this topic


@dataclass(frozen=True)
class Design:
    """One topic's design restricted to its relevant documents."""

    pi: np.ndarray
    pi_joint: np.ndarray
    draw: Sampler  # (rng, trials) -> [trials, n_relevant] sampled flags


def frame_ranks(tp: TopicPool) -> np.ndarray:
    """``[n_runs, pool size]`` 1-based rank of each pooled document (0: not retrieved)."""
    ranks = np.zeros((tp.ranking.shape[0], tp.size), dtype=np.int64)
    runs, cols = np.nonzero(tp.ranking != PAD)
    ranks[runs, tp.ranking[runs, cols]] = cols + 1
    return ranks


def ap_prior(rank: np.ndarray) -> np.ndarray:
    """Aslam et al.'s AP prior of a rank r <= DEPTH: (1 + sum_{k=r}^{DEPTH} 1/k) / (2 DEPTH)."""
    tail = np.cumsum((1.0 / np.arange(1, DEPTH + 1))[::-1])[::-1]
    return (1.0 + tail[np.clip(rank, 1, DEPTH) - 1]) / (2 * DEPTH)


def truth(tp: TopicPool) -> dict[str, np.ndarray]:
    """The exact measures (trec_eval semantics) of every run, the frame as the qrels."""
    grades = tp.labels_at_ranks()
    judged = np.nan_to_num(tp.labels, nan=0.0)
    g = RankedGrades(grades, tp.lengths, judged)
    gains = np.nan_to_num(np.clip(grades[:, :10], 0, None), nan=0.0)
    return {
        "P@10": compute(Measure("P", 10), g, 1),
        "DCG@10": gains @ (1.0 / np.log2(np.arange(2, gains.shape[1] + 2))),
        "AP": compute(Measure("AP"), g, 1),
        "Rprec": compute(Measure("Rprec"), g, 1),
        "nDCG": compute(Measure("nDCG"), g, 1),
        "R": np.full(len(tp.lengths), float(np.count_nonzero(judged >= 1))),
    }


def poisson(topic: Topic) -> Design:
    """Independent inclusion, pi_i = clip(budget * w_i / sum w, 0.05, 1), w_i the AP prior of
    document i's best rank."""
    weight = ap_prior(topic.best)
    pi = np.clip(POISSON_BUDGET * weight / weight.sum(), 0.05, 1.0)[topic.relevant]
    joint = np.outer(pi, pi)
    np.fill_diagonal(joint, pi)
    return Design(pi, joint, lambda rng, n: rng.random((n, len(pi))) < pi)


def stratified(topic: Topic) -> Design:
    """SRS without replacement within strata of best rank; pi_i = n_h/N_h, pi_ij = n_h(n_h-1)/
    (N_h(N_h-1)) within a stratum, pi_i pi_j across."""
    stratum = np.digitize(topic.best, np.array(STRATA) + 0.5)
    sizes = np.bincount(stratum, minlength=len(RATES))
    taken = np.minimum(np.maximum(np.round(np.array(RATES) * sizes), 2), sizes).astype(int)
    h = stratum[topic.relevant]
    big_n, n = sizes[h].astype(float), taken[h].astype(float)
    pi = n / big_n
    within = n * (n - 1) / np.maximum(big_n * (big_n - 1), 1)
    joint = np.where(h[:, None] == h[None, :], within[:, None], np.outer(pi, pi))
    np.fill_diagonal(joint, pi)

    def draw(rng: np.random.Generator, trials: int) -> np.ndarray:
        chosen = np.zeros((trials, len(topic.best)), dtype=bool)
        for s, count in enumerate(taken):
            members = np.flatnonzero(stratum == s)
            keys = rng.random((trials, len(members)))
            cut = np.partition(keys, count - 1, axis=1)[:, count - 1:count]
            chosen[:, members] = keys <= cut
        return chosen[:, topic.relevant]

    return Design(pi, joint, draw)


def with_replacement(topic: Topic) -> Design:
    """Draws in rounds from a fixed p proportional to the AP prior of each document's best
    rank: pi_i = 1 - (1 - p_i)^N, pi_ij = pi_i + pi_j - [1 - (1 - p_i - p_j)^N] (Li &
    Kanoulas 2017, sec. 3), N the total number of draws."""
    weight = ap_prior(topic.best)
    p = weight / weight.sum()
    q = p[topic.relevant]
    pi = -np.expm1(sum(DRAWS) * np.log1p(-q))
    both_missed = np.exp(sum(DRAWS) * np.log1p(-(q[:, None] + q[None, :])))
    joint = pi[:, None] + pi[None, :] - (1.0 - both_missed)
    np.fill_diagonal(joint, pi)
    position = np.full(len(p), len(q))  # non-relevant draws land in a spare column
    position[topic.relevant] = np.arange(len(q))

    def draw(rng: np.random.Generator, trials: int) -> np.ndarray:
        flags = np.zeros((trials, len(q) + 1), dtype=bool)
        for size in DRAWS:
            picked = position[rng.choice(len(p), size=(trials, size), p=p)]
            flags[np.arange(trials)[:, None], picked] = True
        return flags[:, :-1]

    return Design(pi, joint, draw)


DESIGNS: dict[str, Callable[[Topic], Design]] = {
    "poisson": poisson, "stratified": stratified, "with-replacement": with_replacement,
}
TOTALS = ("P@10", "DCG@10")  # simulated on every topic
RATIOS = ("AP", "Rprec", "nDCG")  # on every RATIO_STEP-th topic
MEASURES = TOTALS + RATIOS


def estimates(topic: Topic, design: Design, flags: np.ndarray, ratios: bool
              ) -> dict[str, HTEstimate]:
    """HT estimates for a block of trials (``flags``: [trials, n_relevant]); the ratio
    estimators too with ``ratios``."""
    y = flags * 1.0
    gain = flags * topic.labels
    args = (design.pi, design.pi_joint, topic.ranks)
    found = {"P@10": precision(y, *args, 10), "DCG@10": dcg(gain, *args, 10),
             "R": num_rel(y, *args)}
    if ratios:
        found.update({"AP": average_precision(y, *args), "Rprec": r_precision(y, *args),
                      "nDCG": ndcg(gain, *args)})
    return found


@dataclass
class Tally:
    """Per measure, trial and run: the mean over topics of the estimates, the variance of that
    mean (sum of variances / T^2) and the truth; per topic, R-hat's mean, SE and coverage."""

    value: dict[str, np.ndarray]
    variance: dict[str, np.ndarray]
    truth: dict[str, np.ndarray]
    r_mean: list[float]
    r_se: list[float]
    r_truth: list[float]
    r_covered: list[float]


def simulate(topics: list[Topic], make: Callable[[Topic], Design], seed: int) -> Tally:
    rng = np.random.default_rng(seed)
    runs = topics[0].ranks.shape[0]
    shape = {m: (TRIALS if m in TOTALS else RATIO_TRIALS, runs) for m in MEASURES}
    tally = Tally({m: np.zeros(shape[m]) for m in MEASURES},
                  {m: np.zeros(shape[m]) for m in MEASURES}, {}, [], [], [], [])
    for topic in topics:
        design = make(topic)
        r_hat, r_var = np.zeros(TRIALS), np.zeros(TRIALS)
        for start in range(0, TRIALS, CHUNK):
            block = slice(start, start + CHUNK)
            ratios = topic.ratios and start < RATIO_TRIALS
            found = estimates(topic, design, design.draw(rng, CHUNK), ratios)
            for m in MEASURES if ratios else TOTALS:
                tally.value[m][block] += found[m].value
                tally.variance[m][block] += found[m].variance
            r_hat[block], r_var[block] = found["R"].value[:, 0], found["R"].variance[:, 0]
        r_true = topic.truth["R"][0]
        tally.r_mean.append(r_hat.mean())
        tally.r_se.append(r_hat.std() / np.sqrt(TRIALS))
        tally.r_truth.append(r_true)
        tally.r_covered.append(np.mean(np.abs(r_hat - r_true) <= Z95 * np.sqrt(r_var)))
    for m in MEASURES:
        used = [t for t in topics if t.ratios or m in TOTALS]
        tally.value[m] /= len(used)
        tally.variance[m] /= len(used) ** 2
        tally.truth[m] = sum(t.truth[m] for t in used) / len(used)
    return tally


@pytest.fixture(scope="module")
def topics(round5_runs: list[Run], round5_qrels: Qrels) -> list[Topic]:
    pool = Pool.from_runs(round5_runs, depth=DEPTH, qrels=round5_qrels)
    out = []
    for i, tp in enumerate(pool):
        labels = np.nan_to_num(tp.labels, nan=0.0)
        relevant = np.flatnonzero(labels > 0)
        out.append(Topic(tp.best_rank(), relevant, frame_ranks(tp)[:, relevant],
                         labels[relevant], truth(tp), i % RATIO_STEP == 0))
    return out


@pytest.fixture(scope="module")
def tallies(topics: list[Topic]) -> dict[str, Tally]:
    return {name: simulate(topics, make, SEED + i) for i, (name, make) in
            enumerate(DESIGNS.items())}


def coverage(tally: Tally, measure: str) -> float:
    """Mean over runs of the fraction of trials whose interval covers the truth."""
    half = Z95 * np.sqrt(np.maximum(tally.variance[measure], 0.0))
    return float(np.mean(np.abs(tally.value[measure] - tally.truth[measure]) <= half))


def bias(tally: Tally, measure: str) -> float:
    """Mean over runs of (mean estimate - truth)."""
    return float(np.mean(tally.value[measure].mean(axis=0) - tally.truth[measure]))


def p10_within_3se(tally: Tally) -> float:
    """Fraction of runs whose mean P@10 estimate is within 3 SE of the truth."""
    p10 = tally.value["P@10"]
    se = p10.std(axis=0) / np.sqrt(TRIALS)
    return float(np.mean(np.abs(p10.mean(axis=0) - tally.truth["P@10"]) <= 3.0 * se))


def r_within_3se(tally: Tally) -> float:
    """Fraction of topics whose mean R-hat is within 3 SE of the truth."""
    gap = np.abs(np.array(tally.r_mean) - np.array(tally.r_truth))
    return float(np.mean(gap <= 3.0 * np.array(tally.r_se)))


def test_report(tallies: dict[str, Tally]) -> None:
    lines = [f"{'design':<17}{'P@10 3se':>9}{'R 3se':>7}{'bias AP':>9}{'bias Rprec':>11}"
             f"{'bias nDCG':>10}{'cov P@10':>9}{'cov DCG@10':>11}{'cov AP':>8}{'cov R':>7}"]
    for name, t in tallies.items():
        lines.append(f"{name:<17}{p10_within_3se(t):9.3f}{r_within_3se(t):7.3f}"
                     f"{bias(t, 'AP'):+9.4f}{bias(t, 'Rprec'):+11.4f}{bias(t, 'nDCG'):+10.4f}"
                     f"{coverage(t, 'P@10'):9.3f}{coverage(t, 'DCG@10'):11.3f}"
                     f"{coverage(t, 'AP'):8.3f}{np.mean(t.r_covered):7.3f}")
    print("\n" + "\n".join(lines))


@pytest.mark.parametrize("design", list(DESIGNS))
def test_ht_is_unbiased(tallies: dict[str, Tally], design: str) -> None:
    assert p10_within_3se(tallies[design]) >= 0.95
    assert r_within_3se(tallies[design]) >= 0.95


@pytest.mark.parametrize("design", list(DESIGNS))
def test_intervals_cover(tallies: dict[str, Tally], design: str) -> None:
    assert 0.90 <= coverage(tallies[design], "P@10") <= 0.98
    assert 0.90 <= coverage(tallies[design], "DCG@10") <= 0.98
