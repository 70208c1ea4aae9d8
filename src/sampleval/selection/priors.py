"""Importance sampling's distributions Q over a topic's pool (Schnabel, Swaminathan, Frazier &
Joachims, "Unbiased Comparative Evaluation of Ranking Functions", ICTIR 2016, sec. 3-4): the
prior expected relevance u~ (by rank, :func:`named_prior`, :func:`fitted_prior`, or by
document, :class:`DocumentPrior`) and the Q designers of eq. 8, 11, 13 and 15 and sec. 4.2's
MEAN, which :mod:`sampleval.selection.importance` draws from. The AP-prior of ``active`` and
``stratified`` is :mod:`sampleval.core.ap_prior`.

An importance sample records Q of every frame document (``round_probs``, round 0), which is
all its estimator (``~is``) reads: estimation never calls these designers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from sampleval.core.relevance import judged_relevance
from sampleval.errors import UsageError
from sampleval.measures.weights import at_rank


def fitted_prior(labels_at_rank: Sequence[np.ndarray], level: float = 1.0,
                 strength: float = 1.0) -> np.ndarray:
    """The rank-based prior u~(r): the relevance rate of the judged documents at rank r over
    every run and topic (``labels_at_rank``: per topic ``[n_runs, width]`` labels, NaN when
    unjudged), smoothed toward the overall rate p by ``strength`` pseudo-judgments:
    (relevant_r + strength p) / (judged_r + strength). Any other prior array may be given to
    the distributions below instead."""
    width = max((a.shape[1] for a in labels_at_rank), default=0)
    judged, relevant = np.zeros(width), np.zeros(width)
    for labels in labels_at_rank:
        w = labels.shape[1]
        judged[:w] += (~np.isnan(labels)).sum(axis=0)
        relevant[:w] += judged_relevance(labels, level).sum(axis=0)
    overall = relevant.sum() / max(judged.sum(), 1.0)
    return (relevant + strength * overall) / (judged + strength)


TREC_PRIOR = "trec"
SYNTH_PRIOR = "synth"
FORMS = ("paper", "sqrt")


def named_prior(name: str, width: int) -> np.ndarray:
    """u~(r), r = 1..width, of Schnabel et al. sec. 3.3: ``trec`` 16/(r + 34), the average
    label at rank r over TREC-8's systems; ``synth`` 4 (1 - r/2000) (0 past rank 2000), for
    SYNTH's grades 0-4."""
    ranks = np.arange(1, width + 1, dtype=np.float64)
    if name == TREC_PRIOR:
        return 16.0 / (ranks + 34.0)
    if name == SYNTH_PRIOR:
        return np.maximum(4.0 * (1.0 - ranks / 2000.0), 0.0)
    raise UsageError(f"unknown prior {name!r} (trec, synth, or numbers u1,u2,...)")


@dataclass(frozen=True)
class DocumentPrior:
    """u~(y) given for each document (pool order) instead of by rank: predicted relevance
    in the prior slot of sec. 3.3 (``importance --param prior=predictions``)."""

    values: np.ndarray


Prior: TypeAlias = "np.ndarray | DocumentPrior"
"""u~: by rank (u~ at ranks 1, 2, ...) or by document."""


def expected_relevance(prior_u: Prior, ranks: np.ndarray) -> np.ndarray:
    """u~(y) of each document: u~ at its rank averaged over all the systems (sec. 4.2), a
    system that did not retrieve it counting 0 (``ranks``: ``[n_docs]`` or ``[k, n_docs]``,
    1-based, 0 = not retrieved); a :class:`DocumentPrior` as it is."""
    if isinstance(prior_u, DocumentPrior):
        return prior_u.values
    return at_rank(prior_u, np.atleast_2d(ranks)).mean(axis=0)


def _q(relevance_prior: np.ndarray, weight: np.ndarray, eps: float, form: str) -> np.ndarray:
    """Q(y) proportional to u~(y) weight(y) + eps (eq. 7-8: eps added to the unnormalised
    weights), or with ``form="sqrt"`` to sqrt(u~(y)) weight(y) + eps."""
    u = relevance_prior if form == "paper" else np.sqrt(relevance_prior)
    if eps == 0 and np.any((u <= 0) & (weight > 0)):
        raise UsageError("importance: eps=0 needs a prior above 0 wherever the runs' "
                         "weights differ (a document there with prior 0 could never be "
                         "drawn); give eps > 0")
    unnormalised = u * weight + eps
    total = unnormalised.sum()
    return unnormalised / total if total > 0 else np.full(len(weight), 1.0 / max(len(weight), 1))


def single_system_q(prior_u: Prior, ranks: np.ndarray, eps: float, lam: np.ndarray,
                    form: str = "paper") -> np.ndarray:
    """Q for one system h (Schnabel et al. eq. 8): Q(y) ∝ u~(y) lambda_h(y) + eps, the
    variance-optimal Q* ∝ u P of eq. 5 with u~ for the unknown u. ``ranks``: ``[n_docs]``;
    ``lam``: lambda per rank. ``form="sqrt"``: sqrt(u~) in place of u~, which minimises the
    expected variance when rel(y) is 0/1 with P(rel = 1) = u~ (E[rel^2] = u~)."""
    return _q(expected_relevance(prior_u, ranks), at_rank(lam, ranks), eps, form)


def sqrt_q(prior_u: Prior, ranks: np.ndarray, eps: float, lam: np.ndarray,
           form: str = "paper") -> np.ndarray:
    """Q for k systems at once (Schnabel et al. eq. 11, SQRT): minimising sum_j Var(U-hat_j)
    gives Q(y) ∝ u~(y) sqrt(sum_j lambda_j(y)^2), + eps as in eq. 8. ``ranks``: ``[k,
    n_docs]``."""
    lam_docs = at_rank(lam, np.atleast_2d(ranks))
    return _q(expected_relevance(prior_u, ranks), np.sqrt((lam_docs**2).sum(axis=0)), eps,
              form)


def mean_q(prior_u: Prior, ranks: np.ndarray, eps: float, lam: np.ndarray,
           form: str = "paper") -> np.ndarray:
    """The MEAN heuristic (sec. 4.2, after Yilmaz et al.): Q(y) ∝ u~(y) sum_j lambda_j(y) +
    eps. ``ranks``: ``[k, n_docs]``."""
    lam_docs = at_rank(lam, np.atleast_2d(ranks))
    return _q(expected_relevance(prior_u, ranks), lam_docs.sum(axis=0), eps, form)


def pairwise_q(prior_u: Prior, ranks: np.ndarray, eps: float, lam: np.ndarray,
               form: str = "paper") -> np.ndarray:
    """Q for the difference U(h) - U(h') of two systems (Schnabel et al. eq. 13):
    Q(y) ∝ u~(y) |lambda_h(y) - lambda_h'(y)| + eps. ``ranks``: ``[2, n_docs]``."""
    lam_docs = at_rank(lam, np.atleast_2d(ranks))
    return _q(expected_relevance(prior_u, ranks), np.abs(lam_docs[0] - lam_docs[1]), eps,
              form)


def krel_q(prior_u: Prior, ranks: np.ndarray, eps: float, lam: np.ndarray,
           baseline: int | None = None, form: str = "paper") -> np.ndarray:
    """Q for the k systems' performances relative to their mean (Schnabel et al. eq. 15,
    KREL): Q(y) ∝ u~(y) sqrt(sum_j (lambda_j(y) - mean_j lambda_j(y))^2) + eps; with a
    ``baseline`` system b (ours: each system against b), sqrt(sum_j (lambda_j - lambda_b)^2).
    ``ranks``: ``[k, n_docs]``."""
    lam_docs = at_rank(lam, np.atleast_2d(ranks))
    centre = lam_docs.mean(axis=0) if baseline is None else lam_docs[baseline]
    spread = np.sqrt(((lam_docs - centre) ** 2).sum(axis=0))
    return _q(expected_relevance(prior_u, ranks), spread, eps, form)
