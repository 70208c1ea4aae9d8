"""The anticipated variance of a linear prediction-powered estimate (``P@10~ppi``,
``DCG@10~ppi``, ``NumRel~ppi``; option ``variance=anticipated``, their default) on a
stratified sample and over draws with replacement (active samples with a uniform share,
importance samples).

The design variance's expectation under a working model of the labels (Isaki & Fuller,
JASA 1982; Sarndal, Swensson & Wretman 1992, sec. 12.2), so that it does not hinge on which
rare residuals the sample happened to hold: a logistic model of relevance given the
prediction, the best rank, the number of runs that retrieved the document and the topic's
prevalence, fitted on every topic's judged documents with design weights (one model per grade
for DCG). Where it cannot be fitted (fewer than ``MIN_JUDGED`` judged documents, one class
only, fractional grades; a topic lacking p-bar of a frame document) the design's variance
stands. The model and the two forms (:class:`Strata`, :class:`Draws`):
docs/guide/estimators.md#the-anticipated-variance; coverage and width: docs/research/predictions.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import expit

from sampleval.core.sample import Sample
from sampleval.estimation.engine.views import TopicView, gain, rank_coefficients, relevance

MIN_JUDGED = 30  # judged documents (over the topics) below which no model is fitted
RIDGE = 1e-8  # per unit of (normalised) weight: keeps collinear covariates solvable
ITERATIONS = 100


class Strata(NamedTuple):
    """A stratified design over a population's documents: ``stratum`` (0..H-1,
    non-decreasing over the documents), the strata's sizes N_h and judged counts n_h."""

    stratum: np.ndarray
    sizes: np.ndarray
    sampled: np.ndarray

    def variance(self, mean: np.ndarray, spread: np.ndarray) -> np.ndarray:
        """The design's variance of the Horvitz-Thompson total of independent values with
        means ``mean`` and variances ``spread`` (``[runs, docs]``), expected over the
        values: sum_h N_h^2 (1 - n_h/N_h) E S_h^2 / n_h, E S_h^2 = [(1 - 1/N_h) sum v_i +
        sum (m_i - mbar_h)^2] / (N_h - 1) (``[runs]``)."""
        if not len(self.sizes):
            return np.zeros(mean.shape[0])
        starts = np.searchsorted(self.stratum, np.arange(len(self.sizes)))

        def by_stratum(values: np.ndarray) -> np.ndarray:  # [runs, docs] -> [runs, H]
            return np.add.reduceat(values, starts, axis=1)

        sizes, sampled = self.sizes, self.sampled
        within = ((1.0 - 1.0 / sizes) * by_stratum(spread) + by_stratum(mean * mean)
                  - by_stratum(mean) ** 2 / sizes)
        partial = sampled < sizes
        expected_s2 = np.divide(within, sizes - 1.0, out=np.zeros(within.shape),
                                where=partial & (sizes > 1))
        factor = np.where(partial, sizes**2 * (1.0 - sampled / sizes) / sampled, 0.0)
        return np.asarray((expected_s2 * factor).sum(axis=1))


class Draws(NamedTuple):
    """n draws with replacement over a population's documents, draw k from p_k (active
    sampling's rounds, or importance sampling's one Q): ``inverse`` = sum_k 1/p_k(d) of each
    document (``[docs]``, n / p-bar(d), p-bar its harmonic mean draw probability) and
    ``n``."""

    inverse: np.ndarray
    n: float

    def variance(self, mean: np.ndarray, spread: np.ndarray) -> np.ndarray:
        """The variance of the per-draw mean (1/n) sum_k e_{d_k}/p_k(d_k) of independent
        values e_d with means ``mean`` and variances ``spread`` (``[runs, docs]``), expected
        over the values: (1/n^2) sum_k [sum_d (m_d^2 + v_d)/p_k(d) - (sum_d m_d)^2 - sum_d
        v_d] (``[runs]``; each term a draw's variance given the draws before it, the draws
        being martingale differences), = (1/n^2) [sum_d (m_d^2 + v_d) inverse_d - n ((sum_d
        m_d)^2 + sum_d v_d)]."""
        if self.n <= 0:
            return np.zeros(mean.shape[0])
        total = mean.sum(axis=1) ** 2 + spread.sum(axis=1)
        return ((mean * mean + spread) @ self.inverse - self.n * total) / self.n**2


@dataclass(frozen=True)
class Population:
    """One topic's documents that its design could have judged, and what the model reads of
    them: ``docs`` (frame positions), ``shape`` (each document's log best rank and log(1 +
    runs that retrieved it)), ``judged`` (a mask over ``docs``), ``weight`` (1/pi_i),
    ``labels`` (the grades, NaN unjudged), ``ranks`` (``[n_runs, len(docs)]``) and
    ``design`` (:class:`Strata` or :class:`Draws`), whose variance the model anticipates."""

    docs: np.ndarray
    shape: np.ndarray
    judged: np.ndarray
    weight: np.ndarray
    labels: np.ndarray
    ranks: np.ndarray
    design: Strata | Draws

    def logit_prevalence(self, level: float) -> float:
        """The logit of the topic's share of documents relevant at ``level``, estimated from
        its sample (Horvitz-Thompson over ``docs``), clipped to [1/(2N), 1 - 1/(2N)]."""
        size = max(len(self.docs), 1)
        judged = self.judged
        share = float((relevance(self.labels[judged], level) * self.weight[judged]).sum()) / size
        share = min(max(share, 0.5 / size), 1.0 - 0.5 / size)
        return float(np.log(share / (1.0 - share)))


def _shape(view: TopicView, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranks of ``docs`` (``[runs, docs]``, int32: half int64's memory) and their shape
    (log best rank, log(1 + runs that retrieved it))."""
    ranks = view.rank_of(docs).astype(np.int32)
    retrieved = ranks > 0
    unranked = ranks.shape[1] + 1  # a frame document no run retrieved: below every rank
    best = np.where(retrieved, ranks, unranked).min(axis=0, initial=unranked)
    shape = np.column_stack([np.log(best.astype(np.float64)),
                             np.log1p(retrieved.sum(axis=0).astype(np.float64))])
    return ranks, shape


def population(view: TopicView) -> Population | None:
    """The :class:`Population` of ``view``'s topic on a stratified sample (the documents
    of its sampled strata, in stratum order), None when its sample has no strata."""
    ts = view.sample
    if (ts.stratum < 0).all():
        return None
    sizes, sampled = ts.strata()
    inside = np.flatnonzero((ts.stratum >= 0) & (sampled[np.maximum(ts.stratum, 0)] > 0))
    docs = inside[np.argsort(ts.stratum[inside], kind="stable")]
    codes, stratum = np.unique(ts.stratum[docs], return_inverse=True)
    ranks, shape = _shape(view, docs)
    pi = sampled[codes][stratum] / sizes[codes][stratum]
    design = Strata(stratum, sizes[codes].astype(np.float64), sampled[codes].astype(np.float64))
    return Population(docs, shape, ts.judged[docs], 1.0 / pi, ts.labels[docs], ranks, design)


def draws_population(view: TopicView, sample: Sample) -> Population | None:
    """The :class:`Population` of ``view``'s topic drawn with replacement (active sampling's
    rounds, importance sampling's draws from Q): every frame document, with its harmonic
    mean draw probability p-bar(d) from ``round_probs``' round 0 (importance: Q) and weight
    1/pi_i (the frame's pi_i where it records one, as for an active sample's drawn
    documents; else 1 - (1 - p-bar(d))^n, exact for one Q). None when the sample does not
    record p-bar of every frame document (samples written before 2026-11) or some round
    cannot draw one (p-bar = 0), where the per-draw form is not unbiased."""
    if sample.round_probs is None or sample.draws is None:
        return None
    ts, topic = view.sample, view.pool.topic
    rows = sample.rows("round_probs", topic)
    rows = rows[rows["round"].to_numpy() == 0]
    where = ts.locate(rows["doc_id"].to_numpy(dtype=object).astype(str))
    harmonic = np.full(len(ts.docnos), np.nan)
    harmonic[where[where >= 0]] = rows["probability"].to_numpy(dtype=np.float64)[where >= 0]
    n = float(len(sample.rows("draws", topic)))
    if not n or not (harmonic > 0).all():
        return None
    docs = np.arange(len(ts.docnos))
    ranks, shape = _shape(view, docs)
    recorded = ts.inclusion > 0  # an active sample's drawn documents (NaN is not > 0)
    pi = np.where(recorded, ts.inclusion, -np.expm1(n * np.log1p(-np.minimum(harmonic, 1.0))))
    return Population(docs, shape, ts.judged, 1.0 / pi, ts.labels, ranks,
                      Draws(n / harmonic, n))


def features(f: np.ndarray, shape: np.ndarray, logit_prevalence: float) -> np.ndarray:
    """The model's covariates x_i (module docstring) of documents with predictions ``f``."""
    log_rank, log_runs = shape[:, 0], shape[:, 1]
    prevalence = np.full(len(f), logit_prevalence)
    return np.column_stack([np.ones(len(f)), f, f * f, log_rank, f * log_rank, log_runs,
                            f * log_runs, prevalence, f * prevalence])


def probability(x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """mu = logistic(x'beta), x'beta clipped to [-30, 30] (mu(1 - mu) stays positive)."""
    return np.asarray(expit(np.clip(x @ beta, -30.0, 30.0)))


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The weighted logistic regression of ``y`` (in [0, 1]) on ``x``: beta by Newton's
    method (IRLS), the weights scaled to sum to the number of rows, with a ridge of
    ``RIDGE`` times that number on every coefficient (labels that the covariates separate
    send mu to 0 and 1, as far as the iterations and the clipping of x'beta at 30 go)."""
    beta = np.zeros(x.shape[1])
    weight = weight * (len(weight) / weight.sum())
    ridge = RIDGE * len(weight) * np.eye(x.shape[1])
    for _ in range(ITERATIONS):
        mu = probability(x, beta)
        hessian = x.T @ ((weight * mu * (1.0 - mu))[:, None] * x) + ridge
        step = np.linalg.solve(hessian, x.T @ (weight * (y - mu)) - ridge @ beta)
        beta += step
        if np.abs(step).max() < 1e-8:
            break
    return beta


class LabelModel(NamedTuple):
    """P(value >= k) = logistic(x' beta_k), one ``betas`` for each k: the binary label at
    the level (one), or each grade k = 1..G of a graded label (DCG's gain)."""

    betas: tuple[np.ndarray, ...]

    def moments(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """E[value] and E[value^2] of documents with covariates ``x``: sum_k P_k and
        sum_k (2k - 1) P_k over the grades k (P_k made non-increasing in k)."""
        probs = np.minimum.accumulate(np.array([probability(x, b) for b in self.betas]),
                                      axis=0)
        odd = 2.0 * np.arange(1, len(self.betas) + 1) - 1.0
        return probs.sum(axis=0), (odd[:, None] * probs).sum(axis=0)


def label_model(populations: list[Population], predicted: list[np.ndarray], level: float,
                graded: bool) -> LabelModel | None:
    """The model fitted on every topic's judged documents (``predicted``: each population's
    predictions as the measure reads them): of relevance at ``level``, or of each grade of
    the gain (``graded``); None where it cannot be fitted (module docstring; graded labels
    must be whole grades)."""
    rows, labels, weights = [], [], []
    for pop, f in zip(populations, predicted, strict=True):
        judged = pop.judged
        rows.append(features(f[judged], pop.shape[judged], pop.logit_prevalence(level)))
        labels.append(gain(pop.labels[judged]) if graded
                      else relevance(pop.labels[judged], level))
        weights.append(pop.weight[judged])
    y = np.concatenate(labels) if labels else np.zeros(0)
    if len(y) < MIN_JUDGED or (graded and not np.array_equal(y, np.round(y))):
        return None
    targets = ([(y >= k).astype(np.float64) for k in range(1, int(y.max(initial=0)) + 1)]
               if graded else [y])
    if not targets or any(not (t > 0).any() or not (t < 1).any() for t in targets):
        return None
    x, w = np.vstack(rows), np.concatenate(weights)
    return LabelModel(tuple(fit(x, t, w) for t in targets))


def anticipated_variance(pop: Population, f: np.ndarray, base: str, cutoff: int | None,
                         level: float, lam: np.ndarray, model: LabelModel,
                         pairs: np.ndarray | None = None) -> np.ndarray:
    """Each run's anticipated variance (``[n_runs]``) of the difference estimate of
    ``base@cutoff`` with coefficients ``lam`` (``[n_runs]``) under ``model`` (``f``: the
    population's predictions as the measure reads them); with ``pairs`` (``[P, 2]`` run
    indices), that of each pair's difference of estimates (``[P]``): its residuals' means
    differenced run against run, their variances (w_a - w_b)^2 Var(y), the label being
    shared."""
    first, second = model.moments(features(f, pop.shape, pop.logit_prevalence(level)))
    w = rank_coefficients(base, pop.ranks, cutoff)  # [runs, docs]
    mean = w * (first[None, :] - lam[:, None] * f[None, :])
    if pairs is not None:
        mean = mean[pairs[:, 0]] - mean[pairs[:, 1]]
        w = w[pairs[:, 0]] - w[pairs[:, 1]]
    return pop.design.variance(mean, w * w * (second - first * first)[None, :])
