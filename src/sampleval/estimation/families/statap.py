"""statAP (Aslam, Pavlu & Yilmaz, "A statistical method for system evaluation using incomplete
judgments", SIGIR 2006; the TREC Million Query track's estimator) for any design with
inclusion probabilities pi_i and pi_ij (:func:`sampleval.core.inclusion.judged_design`).

statAP = (1 / R-hat) sum_{d in S retrieved} y_d prec-hat(d) / pi_d, each pair of AP's
numerator estimated by Horvitz-Thompson with its joint inclusion probability (the MQ track
script's refinement: the numerator exactly unbiased); a ratio, consistent; AP exactly on a
census. y = clip(label - level + 1, 0, 1). Variance by the delta method. The derivation:
docs/guide/estimators.md#statap."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.estimation.engine.views import TopicView, relevance, summarise
from sampleval.estimation.family import Base, EstimatorFamily, each_measure, register_family
from sampleval.estimation.spec import EstimateSpec

_CHUNK = 1 << 22  # rank-pair matrix entries per chunk of runs


@dataclass(frozen=True)
class PairCorrection:
    """Dependence between inclusions, e_dj = pi_d pi_j / pi_dj - 1 (0 under independence and on
    the diagonal): ``at_ranks [..., W, W]`` between the documents at ranks r and s;
    ``weighted [..., W]`` sum_{j in S} e_dj y_j / pi_j for the document d at each rank;
    ``total [...]`` sum_{d, j in S} e_dj y_d y_j / (pi_d pi_j)."""

    at_ranks: np.ndarray
    weighted: np.ndarray
    total: np.ndarray


def statap_core(y: np.ndarray, pi: np.ndarray, r_hat: np.ndarray, spread: np.ndarray,
                pairs: PairCorrection | None = None) -> tuple[np.ndarray, np.ndarray]:
    """statAP and its delta-method variance for rankings ``y [..., W]`` (relevance of the
    judged document at each rank, 0 where none) with ``pi [..., W]`` (1 where none);
    ``r_hat [...]`` = sum_{d in S} y_d / pi_d and ``spread [...]`` = sum_{d in S} (1 - pi_d)
    y_d^2 / pi_d^2 over every judged document; ``pairs`` for dependent designs."""
    ranks = np.arange(1, y.shape[-1] + 1, dtype=np.float64)
    miss = (1.0 - pi) / pi**2
    weighted = y / pi
    above = np.cumsum(weighted, axis=-1) - weighted
    per_rank = weighted / ranks
    below = np.cumsum(per_rank[..., ::-1], axis=-1)[..., ::-1] - per_rank
    spread_rank = y**2 * miss
    pair_spread = np.cumsum(spread_rank, axis=-1) - spread_rank
    if pairs is not None:
        later = np.triu(pairs.at_ranks, 1)
        above = above + np.einsum("...rs,...s->...r", np.tril(pairs.at_ranks, -1), weighted)
        below = below + np.einsum("...rs,...s->...r", later, per_rank)
        pair_spread = pair_spread + np.einsum("...rs,...r->...s", later, spread_rank)
    precision = (y + above) / ranks
    value = np.divide((weighted * precision).sum(axis=-1), r_hat,
                      out=np.zeros(np.broadcast_shapes(y.shape[:-1], np.shape(r_hat))),
                      where=r_hat > 0)
    theta = value[..., None]
    retrieved = y * (precision + below)
    # (1 - pi)/pi^2 [g^2 - (theta y)^2] at each rank, g = retrieved - theta y
    first = value**2 * spread + (miss * retrieved * (retrieved - 2.0 * theta * y)).sum(axis=-1)
    if pairs is not None:
        scaled = retrieved / pi
        first = first - (np.einsum("...r,...rs,...s->...", scaled, pairs.at_ranks, scaled)
                         - 2.0 * value * (scaled * pairs.weighted).sum(axis=-1)
                         + value**2 * pairs.total)
    second = (spread_rank / ranks**2 * pair_spread).sum(axis=-1)
    variance = np.divide(first + second, r_hat**2, out=np.zeros_like(value), where=r_hat > 0)
    return value, variance


def _topic(view: TopicView, sample: Sample, cutoff: int | None, level: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """statAP and its variance for every run on one topic."""
    ts = view.sample
    design = judged_design(sample, ts)
    y = relevance(ts.labels[design.index], level)
    pi = design.pi
    lookup = np.full(len(ts.docnos) + 1, -1)
    lookup[design.index] = np.arange(len(design.index))
    at_rank = lookup[view.frame_at_rank][:, :cutoff]
    y_rank, pi_rank = np.append(y, 0.0)[at_rank], np.append(pi, 1.0)[at_rank]
    r_hat = np.asarray((y / pi).sum())
    spread = np.asarray((y**2 * (1.0 - pi) / pi**2).sum())
    outer = np.outer(pi, pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        dependence = np.where(design.pi_joint > 0, outer / design.pi_joint - 1.0, 0.0)
    np.fill_diagonal(dependence, 0.0)
    if not dependence.any():
        return statap_core(y_rank, pi_rank, r_hat, spread)
    weighted = dependence @ (y / pi)
    padded = np.pad(dependence, ((0, 1), (0, 1)))
    step = max(1, _CHUNK // max(at_rank.shape[1] ** 2, 1))
    parts = []
    for start in range(0, len(at_rank), step):
        rows = at_rank[start:start + step]
        pairs = PairCorrection(padded[rows[:, :, None], rows[:, None, :]],
                               np.append(weighted, 0.0)[rows], np.asarray(y / pi @ weighted))
        parts.append(statap_core(y_rank[start:start + step], pi_rank[start:start + step],
                                 r_hat, spread, pairs))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def estimate_statap(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                    spec: EstimateSpec, level: float, ci: float) -> pd.DataFrame:
    """statAP (AP@k with a cutoff) per topic and its mean, with normal intervals from the
    delta-method variance (module docstring); any design with pi_i and pi_ij."""
    values = np.zeros((len(views), len(run_names)))
    variances = np.zeros_like(values)
    for t, view in enumerate(views):
        values[t], variances[t] = _topic(view, sample, spec.cutoff, level)
    return summarise(run_names, views, spec.name, values, variances, ci)


register_family(EstimatorFamily(
    name="stat", title="statAP: HT pair totals over R-hat, delta-method variance",
    reference="Aslam, Pavlu & Yilmaz, SIGIR 2006",
    bases=(Base("AP", "optional", alias="statAP"),),
    requires=("has_joint_probabilities",),
    compute=each_measure(estimate_statap)))
