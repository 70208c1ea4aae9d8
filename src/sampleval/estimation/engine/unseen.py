"""The unseen relevant documents of a stratified sample: a variance term for AP that is not
computed from the judged values alone (issue 29, item 1; docs/research/calibration.md,
section 11).

Where a partly-sampled stratum h (0 < n_h < N_h) of a topic holds no judged relevant
document, every variance computed from the judged values (the stratified jackknife, the
linearised variance) gets nothing from it; and where a run retrieved none of the topic's
judged relevant documents, its AP-hat and all its replicates are 0, whatever was found.
On such (topic, run) rows an interval can have zero width while the truth is not 0
(calibration.md, sections 9 and 10). This module adds, for each such stratum and run, the
posterior expected squared error of the estimate's implicit assumption that the
stratum's M_h = N_h - n_h unjudged documents hold no relevant document beyond the rate found:

* the relevance rate p_h of the stratum has a Beta(a_h, b_h) prior; after x_h relevant in
  n_h draws without replacement its posterior is Beta(a_h + x_h, b_h + n_h - x_h) (the
  beta-binomial model of a finite population: Gelman et al., Bayesian Data Analysis, 3rd
  ed. 2013, sec. 2.4 and 5.3, eq. 5.8 for the beta-binomial's moments);
* an unjudged document d of h, relevant with probability p_h given p_h (exchangeable),
  would change the run's AP-hat by g_d, the one-document difference of the plug-in ratio
  AP = S / R (S = sum_i y_i / r_i sum_{j: r_j <= r_i} y_j, R = sum_i y_i, judged y weighted
  by 1/pi_i): g_d = (dS_d - AP-hat) / (R-tilde + 1), dS_d = (1 + sum_{j above d} y_j/pi_j)/r_d
  + sum_{i below d} y_i/(pi_i r_i) for a document the run retrieved at rank r_d, 0 for one it
  did not (the linearisation of the ratio, Cochran 1977 sec. 6.2, taken as a finite step
  of one document, at R-tilde = R-hat + sum_h M_h E[p_h] over the partly-sampled strata
  where nothing relevant was found (which R-hat counts as holding none; R-hat's weights
  1/pi already expand what the other strata found), so that it is defined at R-hat = 0
  and does not count every unseen relevant document as the first);
* the error E_h = sum_{d unjudged in h} u_d g_d (u_d ~ Bernoulli(p_h)) has posterior second
  moment E[E_h^2] = E[p] sum_d g_d^2 + E[p^2] ((sum_d g_d)^2 - sum_d g_d^2); their sum over
  the strata, at most max(AP-hat, 1 - AP-hat)^2 (AP lies in [0, 1]), is added to the
  variance of the row.

The term applies, for a run, to the strata with no judged relevant document, and to every
partly-sampled stratum where the run retrieved none of the topic's judged relevant documents
(its AP-hat is 0 however many were found). Census strata (n_h = N_h) and strata with no draw
have no unjudged document the design can speak for; on samples without strata the term is
not defined (0). The ``moment`` floor of topics with at most one relevant document judged
(:func:`sampleval.estimation.result.few_relevant_variance`) applies after the term.

Priors (the ``few`` option's values, :data:`FORMS`):

* ``jeffreys``: a_h = b_h = 1/2 (Jeffreys' prior for a binomial rate; Brown, Cai & DasGupta,
  Statistical Science 16, 2001, sec. 4.1.2).
* ``pooled``: a prior centred on a rate pooled over the topics by stratum depth and
  scaled to the topic, p_th = min(1, kappa theta_t pi_h) (the design's pi_h = n_h / N_h is
  proportional to the documents' prior relevance, which ranks the strata by depth; theta_t
  the topic's multiplier, shrunk to 1 by what its strata found), of strength a_h + b_h = c
  estimated from the same strata (:func:`pooled_prior`): an empirical-Bayes beta-binomial.
* ``completed``: ``pooled``'s term; and, for the interval's upper side (not the variance),
  the completion gap (:func:`completion_gap`): how far each estimate would rise were the
  strata where nothing relevant was judged completed by a model of their unjudged
  documents (:func:`model_rates`), which
  :func:`sampleval.estimation.result.upper_allowance` turns into a one-sided allowance
  (issue 29; docs/research/calibration.md, section 13).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sampleval.core.relevance import relevance

if TYPE_CHECKING:
    from sampleval.estimation.engine.views import TopicView

FORMS = ("jeffreys", "pooled", "completed")
"""The ``few`` values this module implements (``completed``: ``pooled``'s term, with the
allowance of :func:`completion_gap`)."""

STRENGTH = (1.0, 1000.0)
"""The range of the pooled prior's strength a + b (``pooled``)."""


class TopicStrata:
    """One topic's partly-sampled strata: per frame document its stratum (-1 outside them)
    and judged relevance y (NaN: unjudged), and per stratum N_h, n_h and x_h (relevant
    found)."""

    def __init__(self, view: TopicView, level: float) -> None:
        sample = view.sample
        sizes, drawn = sample.strata()
        partly = (drawn > 0) & (drawn < sizes)
        code = sample.stratum
        inside = code >= 0
        self.stratum = np.where(inside, code, -1)
        self.stratum[inside] = np.where(partly[code[inside]], code[inside], -1)
        judged = sample.judged
        self.y = np.where(judged, relevance(np.nan_to_num(sample.labels), level), np.nan)
        self.pi = sample.inclusion
        self.sizes, self.drawn = sizes, drawn
        found = judged & inside & (np.nan_to_num(self.y) > 0)
        self.found = np.bincount(code[found], minlength=len(sizes)) if len(sizes) else (
            np.zeros(0, dtype=np.int64))
        self.partly = partly


class PooledPrior(NamedTuple):
    """The ``pooled`` prior's parameters (:func:`pooled_prior`): the rate per unit of pi
    ``kappa``, the topic multipliers' Gamma(alpha, alpha) shape ``alpha``, each topic's
    posterior mean multiplier ``theta`` and the strata's Beta strength ``strength``."""

    kappa: float
    alpha: float
    theta: np.ndarray
    strength: float

    def rates(self, t: int, s: TopicStrata, strata: np.ndarray) -> np.ndarray:
        """The prior mean rate of topic ``t``'s ``strata``: min(1, kappa theta_t pi_h)."""
        return np.minimum(1.0, self.kappa * self.theta[t] * s.drawn[strata] / s.sizes[strata])


def pooled_prior(strata: list[TopicStrata]) -> PooledPrior:
    """The ``pooled`` prior from every topic's partly-sampled strata (x_h found in n_h of
    N_h, pi_h = n_h / N_h): the rate p_th = min(1, kappa theta_t pi_h), kappa = sum x / sum n
    pi; the topic's multiplier theta_t ~ Gamma(alpha, alpha), its posterior mean (alpha +
    X_t) / (alpha + E_t) from the found X_t = sum_h x_h and expected E_t = kappa sum_h n_h
    pi_h, 1/alpha = [sum (X - E)^2 - sum E] / sum E^2 (the negative binomial's moments:
    Cameron & Trivedi, Regression Analysis of Count Data, 1998, sec. 3.2); the strata's
    Beta strength c = 1/rho - 1, rho = [sum (x - n p)^2 - sum n p (1 - p)] / sum n (n - 1)
    p (1 - p) (Kleinman, JASA 68, 1973, sec. 2). alpha and c are clipped to
    :data:`STRENGTH`."""
    low, high = STRENGTH
    parts = [(s.found[s.partly].astype(float), s.drawn[s.partly].astype(float),
              s.sizes[s.partly].astype(float)) for s in strata]
    n_all = np.concatenate([n for _, n, _ in parts]) if parts else np.zeros(0)
    if not n_all.size:
        return PooledPrior(0.0, high, np.ones(len(strata)), high)
    x_all = np.concatenate([x for x, _, _ in parts])
    pi_all = n_all / np.concatenate([big for _, _, big in parts])
    kappa = float(x_all.sum() / max((n_all * pi_all).sum(), 1e-12))
    found = np.array([x.sum() for x, _, _ in parts])
    expected = np.array([kappa * (n * n / big).sum() for _, n, big in parts])
    spread = ((found - expected) ** 2 - expected).sum()
    inverse = spread / (expected**2).sum() if (expected > 0).any() else 0.0
    alpha = 1.0 / min(max(inverse, 1.0 / high), 1.0 / low)
    theta = (alpha + found) / (alpha + expected)
    p = np.minimum(1.0, kappa * np.concatenate(
        [np.full(n.size, th) for (_, n, _), th in zip(parts, theta, strict=True)]) * pi_all)
    pairs = (n_all * (n_all - 1.0) * p * (1.0 - p)).sum()
    rho = ((x_all - n_all * p) ** 2).sum() - (n_all * p * (1.0 - p)).sum()
    rho = rho / pairs if pairs > 0 else 1.0
    c = 1.0 / min(max(rho, 1.0 / (high + 1.0)), 1.0 / (low + 1.0)) - 1.0
    return PooledPrior(kappa, float(alpha), theta, float(c))


def one_document_change(strata: TopicStrata, ranks: np.ndarray, ap: np.ndarray,
                        docs: np.ndarray, unseen: float) -> np.ndarray:
    """``[runs, len(docs)]`` g_d: the change of each run's AP-hat (``ap`` ``[runs]``) were
    frame document d relevant (module docstring), from ``ranks`` ``[runs, frame]`` (1-based,
    0: not retrieved) and the topic's judged relevant documents weighted by 1/pi, the ratio
    linearised at R-hat + ``unseen`` (the expected relevant documents not seen)."""
    rel = np.flatnonzero(np.nan_to_num(strata.y) > 0)
    w = strata.y[rel] / strata.pi[rel]
    r_hat = float(w.sum())
    width = int(ranks.max(initial=0)) + 2
    run_of = np.arange(len(ranks))[:, None]
    runs, cols = np.nonzero(ranks[:, rel] > 0)  # every (run, judged relevant) retrieved
    rank_rel = ranks[runs, rel[cols]]
    keys = runs * width + rank_rel  # sorted by run, then rank
    order = np.argsort(keys)
    keys = keys[order]
    cum_w = np.r_[0.0, np.cumsum(w[cols][order])]
    cum_wr = np.r_[0.0, np.cumsum((w[cols] / rank_rel)[order])]
    rank_d = ranks[:, docs]
    start = np.searchsorted(keys, run_of * width)
    stop = np.searchsorted(keys, (run_of + 1) * width)
    at = np.searchsorted(keys, run_of * width + rank_d)
    above = cum_w[at] - cum_w[start]
    below = cum_wr[stop] - cum_wr[at]
    retrieved = rank_d > 0
    ds = np.where(retrieved, (1.0 + above) / np.maximum(rank_d, 1) + below, 0.0)
    return (ds - ap[:, None]) / (r_hat + unseen + 1.0)


def unseen_variance(values: np.ndarray, views: list[TopicView], level: float,
                    form: str) -> np.ndarray:
    """``[topics, runs]``: the term E[E^2] summed over the strata it applies to (module
    docstring), under the prior ``form`` (:data:`FORMS`); 0 on topics without strata."""
    strata = [TopicStrata(v, level) for v in views]
    prior = pooled_prior(strata) if form != "jeffreys" else None
    out = np.zeros(values.shape)
    ap = np.clip(np.nan_to_num(values), 0.0, 1.0)
    for t, (view, s) in enumerate(zip(views, strata, strict=True)):
        docs = np.flatnonzero((s.stratum >= 0) & np.isnan(s.y))
        if not docs.size:
            continue
        ranks = view.rank_of(np.arange(len(s.y)))
        rel = np.flatnonzero(np.nan_to_num(s.y) > 0)
        blind = ~(ranks[:, rel] > 0).any(axis=1) if rel.size else np.zeros(len(ranks), bool)
        applies = blind | ~s.found[s.partly].any()
        if not applies.any():
            continue
        h_of = s.stratum[docs]
        strata_h = np.unique(h_of)
        if prior is not None:
            rate = prior.rates(t, s, strata_h)
            a, b = prior.strength * rate, prior.strength * (1.0 - rate)
        else:
            a = b = np.full(strata_h.size, 0.5)
        a, b = a + s.found[strata_h], b + s.drawn[strata_h] - s.found[strata_h]
        mean = a / (a + b)
        square = a * (a + 1.0) / ((a + b) * (a + b + 1.0))
        missed = s.found[strata_h] == 0  # R-hat's 1/pi expands what the others found
        unseen = float((mean * (s.sizes[strata_h] - s.drawn[strata_h]))[missed].sum())
        g = one_document_change(s, ranks, ap[t], docs, unseen)  # [runs, D]
        term = np.zeros(len(ranks))
        for k, h in enumerate(strata_h):
            gh = g[:, h_of == h]
            sum_g, sum_g2 = gh.sum(axis=1), (gh**2).sum(axis=1)
            term += mean[k] * sum_g2 + square[k] * (sum_g**2 - sum_g2)
        largest = np.maximum(ap[t], 1.0 - ap[t]) ** 2  # AP in [0, 1] bounds its error
        out[t] = np.where(applies, np.minimum(term, largest), 0.0)
    return out


def power_fit(found: np.ndarray, prior: np.ndarray) -> tuple[float, float]:
    """(kappa, beta) of found ~ Poisson(kappa prior^beta) by maximum likelihood (Newton's
    method on log kappa and beta; ``prior`` > 0)."""
    log_prior = np.log(prior)
    beta, log_kappa = 1.0, np.log(max(found.sum(), 1e-9) / prior.sum())
    for _ in range(100):
        mu = np.exp(log_kappa + beta * log_prior)
        gradient = np.array([(found - mu).sum(), ((found - mu) * log_prior).sum()])
        hessian = np.array([[mu.sum(), (mu * log_prior).sum()],
                            [(mu * log_prior).sum(), (mu * log_prior**2).sum()]])
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        log_kappa, beta = log_kappa + step[0], beta + step[1]
        if np.abs(step).max() < 1e-10:
            break
    return float(np.exp(log_kappa)), float(beta)


def model_rates(strata: list[TopicStrata],
                priors: list[np.ndarray]) -> tuple[list[np.ndarray], float, np.ndarray]:
    """Per topic, each frame document's modelled relevance rate r_d = min(1, kappa theta_t
    prior_d^beta), ``priors`` the documents' AP-prior (each > 0 where a run retrieved the
    document): kappa and beta by Poisson maximum likelihood (:func:`power_fit`) on every
    topic's judged documents of partly-sampled strata, theta_t the topic's Gamma(alpha, alpha)
    multiplier's posterior mean (alpha + X_t) / (alpha + E_t) from what its judged documents
    found against what kappa prior^beta expects (alpha by the negative binomial's moments, as
    :func:`pooled_prior`); with beta, and each topic's R predicted without its own labels (the
    sum of min(1, kappa prior_d^beta) over its frame)."""
    judged = [np.flatnonzero(~np.isnan(s.y) & (s.stratum >= 0)) for s in strata]
    found = [np.nan_to_num(s.y)[j] > 0 for s, j in zip(strata, judged, strict=True)]
    weight = [p[j] for p, j in zip(priors, judged, strict=True)]
    every = np.concatenate(weight) if weight else np.zeros(0)
    keep = every > 0
    hits = np.concatenate(found).astype(float)[keep] if weight else np.zeros(0)
    if not keep.any() or not hits.any():
        return [np.zeros(p.shape) for p in priors], 1.0, np.zeros(len(priors))
    kappa, beta = power_fit(hits, every[keep])
    seen = np.array([f.sum() for f in found], dtype=float)
    expected = np.array([kappa * (w[w > 0] ** beta).sum() for w in weight])
    spread = ((seen - expected) ** 2 - expected).sum() / max((expected**2).sum(), 1e-12)
    alpha = 1.0 / min(max(spread, 1e-3), 1.0)
    theta = (alpha + seen) / (alpha + expected)
    powered = [np.where(p > 0, np.maximum(p, 1e-300) ** beta, 0.0) for p in priors]
    return ([np.minimum(1.0, kappa * th * w) for w, th in zip(powered, theta, strict=True)],
            beta, np.array([np.minimum(1.0, kappa * w).sum() for w in powered]))


def completion_gap(values: np.ndarray, views: list[TopicView], level: float) -> np.ndarray:
    """``[topics, runs]``: how far each run's AP-hat (``values``) would rise were the
    partly-sampled strata where nothing relevant was judged completed by a model of their
    unjudged documents, c_t - AP-hat_t (``few=completed``'s allowance; issue 29,
    docs/research/calibration.md section 13).

    The model (:func:`model_rates`, fitted on every topic's judged documents): document d
    relevant with rate r_d = min(1, kappa theta_t prior_d^beta), prior_d its AP-prior
    (:func:`~sampleval.core.ap_prior.prior_at_ranks`), shrunk by the stratum's
    none-in-n_h draws to q_d = c r_d / (c + n_h) (the Beta posterior mean, c the strength of
    :func:`pooled_prior`). The completed estimate adds the expected relevant documents to the
    ratio: c_t = clip((AP-hat R-hat + sum_d q_d dS_d) / (R-hat + sum_d q_d), 0, 1), dS_d the
    change of the numerator were d relevant (:func:`one_document_change`), the ratio of
    expectations (Cochran 1977, sec. 6.2, first order). Where nothing relevant was judged it
    is the AP the model expects (AP-hat = 0 there); where something was, the ratio falls as
    R grows (the ratio's compensation for the topics that found nothing is counted). 0 on
    topics without partly-sampled strata."""
    from sampleval.core.ap_prior import prior_at_ranks

    strata = [TopicStrata(v, level) for v in views]
    out = np.zeros(values.shape)
    if not any(s.partly.any() for s in strata):
        return out
    strength = pooled_prior(strata).strength
    ranks = [v.rank_of(np.arange(len(s.y))) for v, s in zip(views, strata, strict=True)]
    rates, _, _ = model_rates(strata, [prior_at_ranks(r, "aslam") for r in ranks])
    ap = np.nan_to_num(values)
    for t, (s, rank, r_d) in enumerate(zip(strata, ranks, rates, strict=True)):
        docs = np.flatnonzero((s.stratum >= 0) & np.isnan(s.y))
        docs = docs[s.found[s.stratum[docs]] == 0]
        if not docs.size:
            continue
        q = strength * r_d[docs] / (strength + s.drawn[s.stratum[docs]])
        y = np.nan_to_num(s.y)
        relevant = np.flatnonzero(y > 0)
        r_hat = float((y[relevant] / s.pi[relevant]).sum())
        if r_hat + q.sum() <= 0:
            continue
        # one_document_change's step times its denominator: dS_d - AP-hat
        step = one_document_change(s, rank, ap[t], docs, 0.0) * (r_hat + 1.0)
        completed = ap[t] + step @ q / (r_hat + q.sum())
        out[t] = np.clip(completed, 0.0, 1.0) - ap[t]
    return out
