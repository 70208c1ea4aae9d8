"""Horvitz-Thompson estimators of IR measures from a sample with known pi_i and pi_ij.

Li & Kanoulas, "Active Sampling for Large-scale Information Retrieval Evaluation", CIKM 2017,
sec. 3: each measure is written as a sum over the documents of the frame (AP: over pairs of
documents), and the sum is estimated from the judged sample S by weighting each judged document
by 1/pi_i and each judged pair by 1/pi_ij (Horvitz & Thompson, JASA 1952). Measures that divide
by R (recall, AP, Rprec) or by the ideal DCG (nDCG) are ratios of such estimates.

Conventions (trec_eval's where they apply):

- binary measures (NumRel, P, R, AP, Rprec) use y_i = base.relevance(label_i, level):
  1{label_i >= level} on integer grades, the share of "relevant" votes for a label that is the
  mean of binary votes; DCG and nDCG gain the label itself (fractional labels gain their
  value, level 0 or below gains nothing);
- a document a run retrieved that is outside the frame, or unjudged, is never in S, so it adds
  nothing: documents outside the frame count as not relevant;
- a ratio whose denominator estimate is 0 is 0.

Variances use the HT variance estimator (not Sen-Yates-Grundy, which assumes a fixed sample
size, which Poisson and with-replacement samples lack):
V-hat(sum_S z_i/pi_i) = sum_{i,j in S} (pi_ij - pi_i pi_j)/pi_ij (z_i/pi_i)(z_j/pi_j), pi_ii = pi_i
(unbiased when every pi_ij > 0; it can be negative, and ``summarise`` clips it at 0); for a
ratio Q-hat = A-hat/B-hat the Taylor-linearised (delta-method) variance, the HT variance
of the residuals u_i = (a_i - Q-hat b_i)/B-hat (Sarndal, Swensson & Wretman, Model Assisted
Survey Sampling, 1992, on Taylor linearisation). Intervals are normal (``base.summarise``).

The array-level core (:func:`num_rel` ... :func:`ndcg`) takes the judged documents' values
``y`` (``[..., m]``: leading dimensions, e.g. Monte Carlo trials, are allowed; a document with
y = 0 contributes nothing, so a frame-wide ``y`` that is 0 where a trial did not sample is the
same as that trial's sample), their ``pi`` (``[m]``) and ``pi_joint`` (``[m, m]``), and the
``[n_runs, m]`` rank matrix (1-based, 0 where a run did not retrieve the document). Each
returns ``HTEstimate(value, variance)``, both ``[..., n_runs]``. :func:`estimate_ht` calls it
per topic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators.base import TopicView, gain, relevance, summarise
from sampleval.estimators.family import Base, EstimatorFamily, each_measure, register_family
from sampleval.estimators.names import EstimateSpec


class HTEstimate(NamedTuple):
    """An estimate per run and its estimated variance, both ``[..., n_runs]``."""

    value: np.ndarray
    variance: np.ndarray


class _RunDocs(NamedTuple):
    """Each run's retrieved judged documents (within the cutoff), compacted: ``doc``
    ``[n_runs, K]`` indexes the judged documents, ``rank`` ``[n_runs, K, 1]`` holds their
    1-based ranks (0: padding).

    Inside the core, per-run values are ``[n_runs, K, B]``: the leading (batch) dimensions of
    ``y`` flattened into B columns, so that per-run matrices multiply all trials at once.
    """

    doc: np.ndarray
    rank: np.ndarray


Estimator = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int | None], HTEstimate]


# -- the array-level core ------------------------------------------------------------------

def num_rel(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
            cutoff: int | None = None) -> HTEstimate:
    """R-hat = sum_S y_i/pi_i, the HT estimate of the number of relevant documents in the
    frame (Li & Kanoulas 2017, sec. 3); the same for every run (``cutoff`` must be None)."""
    _no_cutoff("NumRel", cutoff)
    x = _flat(y) / pi
    total = x.sum(axis=-1)
    variance = (x * (x @ _delta(pi, pi_joint))).sum(axis=-1)
    runs = (ranks.shape[0], len(total))
    return _shaped(np.broadcast_to(total, runs), np.broadcast_to(variance, runs), y)


def precision(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
              cutoff: int | None) -> HTEstimate:
    """P@k-hat = (1/k) sum_{i in S, rank_i <= k} y_i/pi_i (Li & Kanoulas 2017, sec. 3), with
    its HT variance."""
    k = _needs_cutoff("P", cutoff)
    docs = _run_docs(ranks, k)
    return _total(_columns(y, docs) / k, docs, pi, pi_joint, y)


def dcg(gain: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
        cutoff: int | None = None) -> HTEstimate:
    """DCG@k-hat = sum_{i in S, rank_i <= k} gain_i/(pi_i log2(rank_i + 1)) (the HT estimator
    of Li & Kanoulas 2017, sec. 3, applied to DCG's sum), with its HT variance."""
    docs = _run_docs(ranks, cutoff)
    return _total(_columns(gain, docs) * _discount(docs.rank), docs, pi, pi_joint, gain)


def recall(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
           cutoff: int | None) -> HTEstimate:
    """R@k-hat = (sum_{i in S, rank_i <= k} y_i/pi_i) / R-hat, a ratio estimator (Li &
    Kanoulas 2017, sec. 3), with its linearised variance."""
    docs = _run_docs(ranks, _needs_cutoff("R", cutoff))
    a = _columns(y, docs)
    return _ratio(_ht_sum(a, docs, pi), a, docs, y, (y / pi).sum(axis=-1), pi, pi_joint)


def r_precision(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                cutoff: int | None = None) -> HTEstimate:
    """Rprec-hat = (sum_{i in S, rank_i <= c} y_i/pi_i) / R-hat with c = int(R-hat + 0.5):
    precision at rank R as a ratio estimator (Li & Kanoulas 2017, sec. 3); the linearised
    variance takes the cut c as fixed."""
    _no_cutoff("Rprec", cutoff)
    r_hat = (y / pi).sum(axis=-1)
    docs = _run_docs(ranks, None)
    a = _columns(y, docs) * (docs.rank <= np.floor(np.reshape(r_hat, -1) + 0.5))
    return _ratio(_ht_sum(a, docs, pi), a, docs, y, r_hat, pi, pi_joint)


def average_precision(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                      cutoff: int | None = None) -> HTEstimate:
    """AP-hat = (1/R-hat) sum_{i in S} (y_i/pi_i) prec-hat_i (Li & Kanoulas 2017, sec. 3; the
    shape of statAP, Pavlu & Aslam), for the documents i the run retrieved (within ``cutoff``),
    with prec-hat_i = (1/rank_i) (y_i + sum_{j in S, rank_j < rank_i} y_j pi_i/pi_ij).

    AP = (1/R) sum_i sum_j x_ij with x_ij = y_i y_j 1{rank_j <= rank_i}/rank_i is a sum over
    pairs, estimated by weighting pair (i, j) by 1/pi_ij (1/pi_i when j = i); factoring out
    1/pi_i gives the form above. On a census every pi is 1 and prec-hat_i is the precision at
    rank_i. Linearised variance: the pair sum moves with each document k's weight through
    its row and its column, e_k = y_k (prec-hat_k + sum_{i in S below k} (y_i/rank_i)
    pi_k/pi_ik); u_k = (e_k - AP-hat y_k)/R-hat.
    """
    docs = _run_docs(ranks, cutoff)
    y_run = _columns(y, docs)
    rank = docs.rank[..., 0]
    above = (rank[:, None, :] > 0) & (rank[:, None, :] < rank[:, :, None])  # [r, k, l]: l above k
    pair = pi_joint[docs.doc[:, :, None], docs.doc[:, None, :]]
    given = pi[docs.doc][:, :, None] / np.where(pair > 0, pair, 1.0)  # pi_k / pi_kl
    prec = _over_rank(y_run + np.where(above, given, 0.0) @ y_run, docs)
    below = np.where(np.swapaxes(above, 1, 2), given, 0.0) @ _over_rank(y_run, docs)
    return _ratio(_ht_sum(y_run * prec, docs, pi), y_run * (prec + below), docs, y,
                  (y / pi).sum(axis=-1), pi, pi_joint)


def ndcg(gain: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
         cutoff: int | None = None) -> HTEstimate:
    """nDCG@k-hat = DCG@k-hat / IDCG@k-hat (ratio estimator; DCG-hat as in :func:`dcg`).

    The ideal DCG ranks N_g-hat documents of each grade g > 0 (best first), with
    N_g-hat = sum_S 1{gain_i = g}/pi_i rounded as NIST's sample_eval rounds it, int(x + 0.5);
    its linearisation gives document i the weight d IDCG / d N_g at g = gain_i.
    """
    docs = _run_docs(ranks, cutoff)
    ideal, influence = _ideal_dcg(gain, pi, cutoff)
    a = _columns(gain, docs) * _discount(docs.rank)
    return _ratio(_ht_sum(a, docs, pi), a, docs, influence, ideal, pi, pi_joint)


# -- helpers of the core --------------------------------------------------------------------

def _no_cutoff(name: str, cutoff: int | None) -> None:
    if cutoff is not None:
        raise UsageError(f"{name}~ht takes no cutoff")


def _needs_cutoff(name: str, cutoff: int | None) -> int:
    if cutoff is None:
        raise UsageError(f"{name}~ht needs a cutoff, e.g. {name}@10~ht")
    return cutoff


def _flat(values: np.ndarray) -> np.ndarray:
    """``[..., m]`` as ``[B, m]``."""
    shape = np.shape(values)
    return np.reshape(values, (math.prod(shape[:-1]), shape[-1]))


def _shaped(value: np.ndarray, variance: np.ndarray, like: np.ndarray) -> HTEstimate:
    """``[n_runs, B]`` results as ``[..., n_runs]``, the batch shape of ``like`` (``[..., m]``)."""
    batch = np.shape(like)[:-1]
    return HTEstimate(value.T.reshape(*batch, -1), variance.T.reshape(*batch, -1))


def _delta(pi: np.ndarray, pi_joint: np.ndarray) -> np.ndarray:
    """The HT variance weights (pi_ij - pi_i pi_j) / pi_ij (1 - pi_i on the diagonal)."""
    return 1.0 - np.outer(pi, pi) / pi_joint


def _run_docs(ranks: np.ndarray, cutoff: int | None) -> _RunDocs:
    """Compact each run's row to the judged documents it retrieved within the cutoff."""
    kept = ranks > 0 if cutoff is None else (ranks > 0) & (ranks <= cutoff)
    width = int(kept.sum(axis=1).max(initial=0))
    order = np.argsort(~kept, axis=1, kind="stable")[:, :width]
    rank = np.where(np.take_along_axis(kept, order, axis=1),
                    np.take_along_axis(ranks, order, axis=1), 0)
    return _RunDocs(order, rank[:, :, None])


def _columns(values: np.ndarray, docs: _RunDocs) -> np.ndarray:
    """``[..., m]`` per-document values at each run's documents, ``[n_runs, K, B]`` (0 at
    padding)."""
    return np.where(docs.rank > 0, _flat(values).T[docs.doc], 0.0)


def _over_rank(values: np.ndarray, docs: _RunDocs) -> np.ndarray:
    """``values / rank`` on each run's documents (0 at padding)."""
    return np.divide(values, docs.rank, out=np.zeros(values.shape), where=docs.rank > 0)


def _discount(rank: np.ndarray) -> np.ndarray:
    """trec_eval's DCG discount 1/log2(rank + 1), 0 where rank is 0 (padding)."""
    return np.divide(1.0, np.log2(rank + 1.0), out=np.zeros(rank.shape), where=rank > 0)


def _ht_sum(a: np.ndarray, docs: _RunDocs, pi: np.ndarray) -> np.ndarray:
    """sum_S a_i/pi_i per run: ``[n_runs, B]``."""
    return (a / pi[docs.doc][:, :, None]).sum(axis=1)


def _quadratic(x: np.ndarray, docs: _RunDocs, delta: np.ndarray) -> np.ndarray:
    """sum_{k,l} x_k delta_kl x_l over each run's documents: ``[n_runs, B]``."""
    blocks = delta[docs.doc[:, :, None], docs.doc[:, None, :]]
    return ((blocks @ x) * x).sum(axis=1)


def _total(a: np.ndarray, docs: _RunDocs, pi: np.ndarray, pi_joint: np.ndarray,
           like: np.ndarray) -> HTEstimate:
    """The HT estimate sum_S a_i/pi_i per run and its HT variance."""
    x = a / pi[docs.doc][:, :, None]
    return _shaped(x.sum(axis=1), _quadratic(x, docs, _delta(pi, pi_joint)), like)


def _ratio(numerator: np.ndarray, a: np.ndarray, docs: _RunDocs, b: np.ndarray,
           denominator: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray) -> HTEstimate:
    """Q-hat = numerator / denominator per run, with the linearised variance.

    ``a`` (``[n_runs, K, B]``, on each run's documents) and ``b`` (``[..., m]``) are each
    judged document's linearised contributions to the numerator and the denominator:
    u_i = (a_i - Q-hat b_i) / B-hat, so V-hat(Q-hat) = (a'Da - 2 Q-hat a'Db + Q-hat^2 b'Db) /
    B-hat^2 on x_i = z_i/pi_i, D the HT weights.
    """
    delta = _delta(pi, pi_joint)
    x_a = a / pi[docs.doc][:, :, None]
    x_b = _flat(b) / pi
    delta_b = x_b @ delta
    denom = np.reshape(denominator, -1)
    q = np.divide(numerator, denom, out=np.zeros(numerator.shape), where=denom > 0)
    cross = (x_a * delta_b.T[docs.doc]).sum(axis=1)
    own = (x_b * delta_b).sum(axis=-1)
    spread = _quadratic(x_a, docs, delta) - 2.0 * q * cross + q * q * own
    variance = np.divide(spread, denom * denom, out=np.zeros(q.shape), where=denom > 0)
    return _shaped(q, variance, b)


def _ideal_dcg(gain: np.ndarray, pi: np.ndarray,
               cutoff: int | None) -> tuple[np.ndarray, np.ndarray]:
    """IDCG-hat ``[...]`` from the rounded N_g-hat, and each document's linearised weight
    ``[..., m]`` (d IDCG / d N_g at its grade g: the documents it pushes down one rank).

    With grades g_1 < ... < g_G, c_g = sum_{g' >= g} N_g' and D(n) = sum_{r <= min(n, k)}
    1/log2(r + 1): IDCG = sum_g (g - g_prev) D(c_g), and d IDCG / d N_h = sum_{g <= h}
    (g - g_prev) D'(c_g) with D'(c) = 1/log2(c + 2) when c < k, else 0.
    """
    grades = np.unique(gain[gain > 0])
    counts = ((gain[..., None] == grades) / pi[:, None]).sum(axis=-2)
    at_least = np.cumsum(np.floor(counts + 0.5)[..., ::-1], axis=-1)[..., ::-1]
    step = np.diff(grades, prepend=0.0)
    limit = np.inf if cutoff is None else cutoff
    ideal = (step * _cumulative_discount(np.minimum(at_least, limit))).sum(axis=-1)
    next_rank = at_least + 1.0
    marginal = step * np.where(next_rank <= limit, 1.0 / np.log2(next_rank + 1.0), 0.0)
    per_grade = np.concatenate([np.zeros((*marginal.shape[:-1], 1)),
                                np.cumsum(marginal, axis=-1)], axis=-1)
    position = np.searchsorted(grades, gain, side="right")
    return ideal, np.take_along_axis(per_grade, position, axis=-1)


def _cumulative_discount(n: np.ndarray) -> np.ndarray:
    """D(n) = sum_{r=1}^{n} 1/log2(r + 1) for integer-valued ``n``."""
    top = int(n.max(initial=0))
    table = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, top + 2)))])
    return table[n.astype(np.int64)]


# -- the Sample-level entry -----------------------------------------------------------------

# base measure -> (core estimator, graded: gains the label rather than 1{label >= level})
ESTIMATORS: dict[str, tuple[Estimator, bool]] = {
    "NumRel": (num_rel, False),
    "P": (precision, False),
    "R": (recall, False),
    "AP": (average_precision, False),
    "Rprec": (r_precision, False),
    "DCG": (dcg, True),
    "nDCG": (ndcg, True),
}


def estimate_ht(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                spec: EstimateSpec, level: float, ci: float) -> pd.DataFrame:
    """HT estimates of ``spec`` for every run and topic (and their mean), with normal
    intervals at level ``ci``; relevance is ``label >= level`` for the binary measures."""
    values = np.zeros((len(views), len(run_names)))
    variances = np.zeros_like(values)
    for t, view in enumerate(views):
        values[t], variances[t] = _topic_estimate(view, sample, spec, level)
    return summarise(run_names, views, spec.name, values, variances, ci)


def _topic_estimate(view: TopicView, sample: Sample, spec: EstimateSpec,
                    level: float) -> HTEstimate:
    """One topic's estimate for every run, from its judged documents."""
    estimator, graded = ESTIMATORS[spec.base]
    judged = np.flatnonzero(view.sample.judged)
    labels = view.sample.labels[judged]
    y = gain(labels) if graded else relevance(labels, level)
    contributing = y != 0  # a document with y = 0 adds nothing to a sum, its variance or R-hat
    design = judged_design(sample, view.sample, judged[contributing])
    return estimator(y[contributing], design.pi, design.pi_joint, view.rank_of(design.index),
                     spec.cutoff)


register_family(EstimatorFamily(
    name="ht", title="Horvitz-Thompson totals and ratio estimators, HT variances with pi_ij",
    reference="Li & Kanoulas, CIKM 2017, sec. 3",
    bases=(Base("AP", "optional"), Base("P", "required"), Base("R", "required"),
           Base("Rprec"), Base("nDCG", "optional"), Base("DCG", "optional"),
           Base("NumRel", penalty=3)),
    designs={"census": 2, "stratified": 2, "poisson": 1, "inclusion": 2, "with-replacement": 1},
    compute=each_measure(estimate_ht)))
