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
size, which Poisson and with-replacement samples lack); AP's default (``AP~ht(var=...)``) is a
delete-one jackknife instead, of the estimate as reported (:func:`replicate_jackknife`; of
AP-hat before the bias correction, ``var=jackknife-uncorrected``:
:func:`stratified_average_precision` on stratified samples, :func:`average_precision_jackknife`
on the others), which covers best. Coverage of AP~ht's 95%
intervals (per topic and run / of each run's mean over topics), TREC-COVID round 5, depth-100
pool of the 126 runs, 100 samples, ``python -m sampleval.experiments.interval_coverage``
(measured before the ``bias`` option, so with ``bias=none``):

    design                                        jackknife       linear
    strata (1-10 all, 11-30 at 30%, 31- at 10%)   0.851 / 0.950   0.847 / 0.943
    uniform 10%                                   0.652 / 0.847   0.637 / 0.815
    active 10% (uniform=0, its defaults then)     0.840 / 0.309   0.826 / 0.275

Active sampling's mean is biased (+0.019 in mean AP; ``ap=paper``: +0.029), which no
variance covers (docs/guide/estimating.md, "The command, its defaults and every estimator").

Ratio bias (``AP~ht(bias=...)``): AP-hat = N-hat/R-hat is a ratio of two unbiased estimates,
biased by about (AP V(R-hat) - C(N-hat, R-hat))/R^2 (Cochran, Sampling Techniques, 1977, ch.
6), which shows when R-hat is noisy. ``taylor`` subtracts that first-order bias estimated
with the HT (co)variances (:func:`_ratio`); ``jackknife`` the delete-one jackknife's bias
estimate (Quenouille 1956, Tukey 1958; stratified, Jones 1974: :func:`stratified_average_
precision`; (1 - pi)-weighted on the other designs: :func:`average_precision_jackknife`);
``none`` leaves AP-hat as it is. Mean over topics of each run's AP, TREC-COVID round 5, coverage
of the 95% interval / bias / rms (``python -m sampleval.experiments.interval_coverage
--designs D [--rate R] --trials N --measures 'AP~ht;AP~ht(bias=jackknife);AP~ht(bias=taylor)'``):

    design (trials)           none                  jackknife             taylor
    strata (100)              0.950 +0.0007 0.0034  0.949 +0.0001 0.0034  0.950 +0.0001 0.0034
    uniform 10% (100)         0.847 -0.0150 0.0301  0.886 -0.0050 0.0291  0.883 -0.0077 0.0283
    stratified method 3% (60) 0.758 +0.0173 0.0251  0.841 +0.0124 0.0223  0.890 +0.0087 0.0192
    active 10% (100)          0.309 +0.0187 0.0231  0.412 +0.0153 0.0197  0.396 +0.0158 0.0202

Under active sampling most of the bias is not the ratio's (it stays 2.3 standard deviations
after either correction): the adaptive run weights make the computed pi_i larger than the
true chance of inclusion (docs/methods.md). ``taylor`` is the default: lowest rms wherever
the bias matters, a tie elsewhere; at 5% (50 trials) none / jackknife / taylor cover 0.768 /
0.850 / 0.873 with rms 0.0184 / 0.0155 / 0.0145.

Variance of the corrected estimate (``AP~ht(var=...)``): the Taylor correction is itself
estimated from the sample, so the corrected AP-hat varies more than AP-hat, and the
jackknife of the uncorrected AP-hat misses it (per topic and run, at ``stratified`` 3%:
mean estimated variance 0.75 of the corrected estimates' variance over the samples, 0.83
for ``bias=none``'s own). ``jackknife`` (the default) is the delete-one jackknife of the
estimate as reported, each replicate recomputing AP-hat and its correction
(:func:`replicate_jackknife`; Wolter 2007, sec. 4.5); ``jackknife-uncorrected`` the
jackknife of AP-hat before the correction (the default before; the same with
``bias=none``); ``linear`` the linearised variance. Mean over topics, coverage / se/spread
(docs/methods.md, "Variance of the corrected estimate", for the commands):

    design (trials)              jackknife (default)   jackknife-uncorrected
    strata (60)                  0.957 / 1.03          0.953 / 1.01
    uniform 10% (70)             0.886 / 1.00          0.871 / 0.93
    stratified method 3% (40)    0.928 / 1.05          0.893 / 0.95
    stratified method 5% (40)    0.918 / 0.95          0.884 / 0.87

Left after the Taylor correction (issue 9, docs/methods.md, "Residual bias, and topics with
at most one relevant judged"): ``bias=taylor-jackknife`` subtracts the stratified
jackknife's estimate of the Taylor-corrected estimate's own bias (:mod:`.ap_replicates`);
it removes the bias left at ``stratified`` 3% (+0.005 -> -0.001, 10 samples) but adds
variance the jackknife misses (the mean covers 0.933 against 0.957), so ``taylor`` stays
the default. With ``bias=jackknife``, ``var=jackknife`` is the double jackknife. ``few``: a
topic whose sample holds at most one relevant document gets a variance of at least
(1 - f) m2 (``moment``, the default; f the share of its frame judged, m2 the run's mean
squared AP-hat over the topics where a relevant document was judged), (1 - f) m (1 - m)
(``bernoulli``), (1 - f)/4 (``scaled``, the default before), 1/4 (``bound``) or as computed
(``none``) (:func:`~sampleval.estimators.base.few_relevant_variance`; measured on dense and
sparse collections in docs/research/calibration.md).

Bias-aware interval (``AP~ht(interval=...)``, issue 9, item 2): what the intervals of the
mean still missed after the Taylor correction was that correction's remaining bias (bias/sd
0.4-0.66 at ``stratified`` 3-5%) and variance the jackknife does not see (se/sd 0.93-0.96).
``bias-aware`` (the default with ``bias=taylor`` or ``taylor-jackknife``) widens the
interval beyond z standard errors by |b|, b the jackknife's estimate of the bias the Taylor
correction leaves (the difference between ``bias=taylor`` and ``bias=taylor-jackknife``,
from the replicates the variance already computes, so at no extra cost); for the mean over
T topics by |sum_t b_t| / T (:func:`~sampleval.estimators.base.summarise`). It is the
conservative form of an interval for an estimator with bias at most B, est +- (z se + B)
(Armstrong & Kolesar, "Simple and honest confidence intervals in nonparametric
regression", Quantitative Economics 2020, give the exact critical value for a known B; with
B estimated, the conservative form is the one that covers here: the exact one reached
0.926 / 0.918 at 5% / 10%). b is 0 at a census and shrinks as the sample grows.
``normal`` is z standard errors either side. Coverage of the mean over topics, TREC-COVID
round 5, depth 100 (``python -m sampleval.experiments.interval_coverage --designs D --rate R
--trials 50 --seed S --measures 'AP~ht;AP~ht(interval=normal)'``, chunks pooled):

    design (samples)            bias-aware   normal   mean half-width, bias-aware / normal
    strata (100)                0.956        0.953    0.0066 / 0.0065
    uniform 10% (100)           0.908        0.896    0.0556 / 0.0515
    stratified method 3% (100)  0.948        0.921    0.0372 / 0.0318
    stratified method 5% (200)  0.944        0.913    0.0274 / 0.0236
    stratified method 10% (200) 0.932        0.912    0.0163 / 0.0147

R@k, Rprec and nDCG (``correction``) carry the same first-order ratio bias, and ``taylor``
(their default) subtracts it as for AP (:func:`_ratio`; nDCG's IDCG-hat linearised in the
grade counts); ``none`` is the paper's plain ratio. TREC-COVID round 5, ``stratified`` 5%,
200 samples (docs/methods.md, "R@k and Rprec: the ratio's bias"): bias of the mean +0.0169
-> +0.0068 (R@100), +0.0120 -> +0.0021 (Rprec), coverage 0.62 -> 0.82 and 0.75 -> 0.89;
full-depth nDCG, 100 samples ("nDCG: the same correction"), +0.0122 -> +0.0062, coverage 0.76
-> 0.87 (nDCG@10: less than 0.0002 either way); on ``uniform`` samples R@k's and Rprec's
estimated term is exactly 0 (binary labels, one simple random sample), so nothing changes
there.

The linearised form:
V-hat(sum_S z_i/pi_i) = sum_{i,j in S} (pi_ij - pi_i pi_j)/pi_ij (z_i/pi_i)(z_j/pi_j), pi_ii = pi_i
(unbiased when every pi_ij > 0; it can be negative, and ``summarise`` clips it at 0); for a
ratio Q-hat = A-hat/B-hat the Taylor-linearised (delta-method) variance, the HT variance
of the residuals u_i = (a_i - Q-hat b_i)/B-hat (Sarndal, Swensson & Wretman, Model Assisted
Survey Sampling, 1992, on Taylor linearisation). Intervals are normal (``base.summarise``),
AP's widened as above.

The array-level core (:func:`num_rel` ... :func:`ndcg`) takes the judged documents' values
``y`` (``[..., m]``: leading dimensions, e.g. Monte Carlo trials, are allowed; a document with
y = 0 contributes nothing, so a frame-wide ``y`` that is 0 where a trial did not sample is the
same as that trial's sample), their ``pi`` (``[m]``) and ``pi_joint`` (``[m, m]``), and the
``[n_runs, m]`` rank matrix (1-based, 0 where a run did not retrieve the document). Each
returns ``HTEstimate(value, variance)``, both ``[..., n_runs]``. :func:`estimate_ht` calls it
per topic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.result import FEW_OPTION, TopicParts, floored, rows_of
from sampleval.estimators._ht_kernels import (
    ap_contributions,
    deleted_pair_sums,
    quadratic,
    stratum_design_sums,
    stratum_pair_sums,
)
from sampleval.estimators.base import TopicView, gain, relevance
from sampleval.estimators.family import Base, EstimatorFamily, register_family
from sampleval.estimators.names import EstimateSpec
from sampleval.params import Param


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


BIASES = ("taylor", "taylor-jackknife", "jackknife", "none")
VARIANCES = ("jackknife", "jackknife-uncorrected", "linear")


TAKE_CORRECTION = ("R", "Rprec", "nDCG")
"""The ratios besides AP that take the ``correction`` option (their core's ``taylor``)."""


class Estimator(Protocol):
    """A core estimator: (y, pi, pi_joint, ranks, cutoff) -> per run; with ``pairs``, per
    pair's difference."""

    def __call__(self, y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray,
                 ranks: np.ndarray, cutoff: int | None, /, *,
                 pairs: np.ndarray | None = None) -> HTEstimate: ...


# -- the array-level core ------------------------------------------------------------------

def num_rel(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
            cutoff: int | None = None, pairs: np.ndarray | None = None) -> HTEstimate:
    """R-hat = sum_S y_i/pi_i, the HT estimate of the number of relevant documents in the
    frame (Li & Kanoulas 2017, sec. 3); the same for every run (``cutoff`` must be None), so
    every difference of runs (``pairs``) is 0."""
    _no_cutoff("NumRel", cutoff)
    x = _flat(y) / pi
    total = x.sum(axis=-1)
    if pairs is not None:
        zero = np.zeros((len(pairs), len(total)))
        return _shaped(zero, zero, y)
    variance = (x * (x @ _delta(pi, pi_joint))).sum(axis=-1)
    runs = (ranks.shape[0], len(total))
    return _shaped(np.broadcast_to(total, runs), np.broadcast_to(variance, runs), y)


def precision(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
              cutoff: int | None, pairs: np.ndarray | None = None) -> HTEstimate:
    """P@k-hat = (1/k) sum_{i in S, rank_i <= k} y_i/pi_i (Li & Kanoulas 2017, sec. 3), with
    its HT variance."""
    k = _needs_cutoff("P", cutoff)
    docs = _run_docs(ranks, k)
    return _total(_columns(y, docs) / k, docs, pi, pi_joint, y, pairs)


def dcg(gain: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
        cutoff: int | None = None, pairs: np.ndarray | None = None) -> HTEstimate:
    """DCG@k-hat = sum_{i in S, rank_i <= k} gain_i/(pi_i log2(rank_i + 1)) (the HT estimator
    of Li & Kanoulas 2017, sec. 3, applied to DCG's sum), with its HT variance."""
    docs = _run_docs(ranks, cutoff)
    return _total(_columns(gain, docs) * _discount(docs.rank), docs, pi, pi_joint, gain,
                  pairs)


def recall(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
           cutoff: int | None, pairs: np.ndarray | None = None,
           taylor: bool = False) -> HTEstimate:
    """R@k-hat = (sum_{i in S, rank_i <= k} y_i/pi_i) / R-hat, a ratio estimator (Li &
    Kanoulas 2017, sec. 3), with its linearised variance; ``taylor``: less its estimated
    first-order bias (:func:`_ratio`)."""
    docs = _run_docs(ranks, _needs_cutoff("R", cutoff))
    a = _columns(y, docs)
    return _ratio(_ht_sum(a, docs, pi), a, docs, y, (y / pi).sum(axis=-1), pi, pi_joint,
                  taylor=taylor, pairs=pairs)


def r_precision(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                cutoff: int | None = None, cut: str = "floor",
                pairs: np.ndarray | None = None, taylor: bool = False) -> HTEstimate:
    """Rprec-hat = (sum_{i in S, rank_i <= c} y_i/pi_i) / R-hat: precision at rank R as a ratio
    estimator (Li & Kanoulas 2017, sec. 3), the cut c = floor(R-hat) (``cut="floor"``, the
    paper's r(i) <= R-hat) or c = int(R-hat + 0.5) (``cut="round"``, sampleval's before: the
    rank nearest R-hat). They measure the same on TREC-COVID round 5 at 10% (mean Rprec bias
    +0.0009 and rms 0.0037 both under strata; +0.0250 / +0.0252 under active sampling;
    ``interval_coverage --designs strata,active:uniform=0 --measures
    'Rprec~ht;Rprec~ht(cut=round)'``, 30 trials); the linearised variance takes c as fixed;
    ``taylor``: less the ratio's estimated first-order bias (:func:`_ratio`), c fixed too."""
    _no_cutoff("Rprec", cutoff)
    r_hat = (y / pi).sum(axis=-1)
    docs = _run_docs(ranks, None)
    shift = 0.5 if cut == "round" else 0.0
    a = _columns(y, docs) * (docs.rank <= rank_cut(np.reshape(r_hat, -1) + shift))
    return _ratio(_ht_sum(a, docs, pi), a, docs, y, r_hat, pi, pi_joint, taylor=taylor,
                  pairs=pairs)


class APTerms(NamedTuple):
    """AP-hat's parts per run (batch ``B`` of y flattened, as in the core): ``num`` ``[n_runs,
    B]`` the pair total, ``contribution`` ``[n_runs, K, B]`` each retrieved judged document's
    share of it (its row and column of pairs, x_k (prec-hat_k + below_k)), ``docs`` the
    run's documents."""

    num: np.ndarray
    contribution: np.ndarray
    docs: _RunDocs


def ap_terms(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
             cutoff: int | None = None, paper: bool = False) -> APTerms:
    """AP-hat's numerator sum_{i, j in S, rank_j <= rank_i} y_i y_j / (rank_i pi_ij) and each
    document's share of it (:func:`average_precision`); ``paper``: the pair weights of the
    paper's PC(r(i)), 1/(pi_i pi_j), the document itself at 1/pi_i^2."""
    docs = _run_docs(ranks, cutoff)
    contribution, num = ap_contributions(_columns(y, docs), docs.rank[..., 0], docs.doc, pi,
                                         pi_joint, paper)
    return APTerms(num, contribution, docs)


def average_precision(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                      cutoff: int | None = None, paper: bool = False,
                      taylor: bool = False, pairs: np.ndarray | None = None) -> HTEstimate:
    """AP-hat = (1/R-hat) sum_{i in S} (y_i/pi_i) prec-hat_i (Li & Kanoulas 2017, sec. 3; the
    shape of statAP, Pavlu & Aslam), for the documents i the run retrieved (within ``cutoff``),
    with prec-hat_i = (1/rank_i) (y_i + sum_{j in S, rank_j < rank_i} y_j pi_i/pi_ij).

    AP = (1/R) sum_i sum_j x_ij with x_ij = y_i y_j 1{rank_j <= rank_i}/rank_i is a sum over
    pairs, estimated by weighting pair (i, j) by 1/pi_ij (1/pi_i when j = i); factoring out
    1/pi_i gives the form above. On a census every pi is 1 and prec-hat_i is the precision at
    rank_i. ``paper``: the paper's literal AP-hat, whose PC(r(i)) = (1/r(i)) sum_{j in S,
    r(j) <= r(i)} y_j/pi_j weights pair (i, j) by 1/(pi_i pi_j) and document i itself by
    1/pi_i^2 (biased upward: E[1{i in S}/pi_i^2] = 1/pi_i). Linearised variance: the pair sum
    moves with each document k's weight through its row and its column, e_k = y_k (prec-hat_k
    + sum_{i in S below k} (y_i/rank_i) pi_k/pi_ik); u_k = (e_k - AP-hat y_k)/R-hat.
    ``taylor``: less the ratio's estimated first-order bias (:func:`_ratio`).
    """
    terms = ap_terms(y, pi, pi_joint, ranks, cutoff, paper)
    return _ratio(terms.num, terms.contribution * pi[terms.docs.doc][:, :, None], terms.docs,
                  y, (y / pi).sum(axis=-1), pi, pi_joint, taylor, pairs)


def average_precision_jackknife(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray,
                                ranks: np.ndarray, cutoff: int | None = None,
                                paper: bool = False, correct: bool = False,
                                pairs: np.ndarray | None = None) -> HTEstimate:
    """AP-hat (:func:`average_precision`) with the delete-one jackknife variance of a design
    with (nearly) independent inclusions (Poisson, prels, with-replacement rounds):
    v = sum_{k in S} (1 - pi_k) (AP-hat_(k) - AP-hat)^2, AP-hat_(k) the estimate without k
    (its pairs and its 1/pi_k in R-hat removed). For a total this is the Poisson HT variance
    sum (1 - pi_k) y_k^2/pi_k^2; for the ratio it keeps AP's curvature, which the
    linearisation drops (the module docstring has the figures).

    ``correct``: less the jackknife estimate of the ratio's bias. Deleting k moves the
    numerator by its contribution c_k and R-hat by x_k = y_k/pi_k, so AP-hat_(k) - AP-hat =
    -(c_k - AP-hat x_k)/(R-hat - x_k): a first-order part -(c_k - AP-hat x_k)/R-hat, which
    under Poisson-type sampling does not sum to 0 as it does in Quenouille's equal-weight
    jackknife, plus a second-order part. The bias estimate keeps the second-order part:
    b = sum_{k in S} (1 - pi_k) [AP-hat_(k) - AP-hat + (c_k - AP-hat x_k)/R-hat]
      = sum_{k in S} (1 - pi_k) x_k (AP-hat x_k - c_k) / (R-hat (R-hat - x_k)),
    which to first order is (AP-hat V-hat(R-hat) - C-hat(N-hat, R-hat))/R-hat^2 with the
    Poisson variance estimators, the classical bias of a ratio estimate (Cochran, Sampling
    Techniques, 3rd ed., 1977, ch. 6, the bias of the ratio estimate to order 1/n; Sarndal,
    Swensson & Wretman 1992, sec. 7.3.1).

    ``pairs``: per pair (a, b) of runs, the difference AP-hat_a - AP-hat_b and its
    jackknife variance, from the differences of their replicates."""
    terms = ap_terms(y, pi, pi_joint, ranks, cutoff, paper)
    x = _flat(y) / pi  # [B, m]
    r_hat = x.sum(axis=-1)  # [B]
    value = np.divide(terms.num, r_hat, out=np.zeros(terms.num.shape), where=r_hat > 0)
    # num without k: [n_runs, m, B]; k not retrieved by the run leaves it unchanged
    num_wo = np.repeat(terms.num[:, None, :], len(pi), axis=1)
    n_runs, width = terms.docs.doc.shape
    run_idx = np.repeat(np.arange(n_runs), width)
    kept = terms.docs.rank[..., 0].reshape(-1) > 0
    np.subtract.at(num_wo, (run_idx[kept], terms.docs.doc.reshape(-1)[kept]),
                   terms.contribution.reshape(n_runs * width, num_wo.shape[-1])[kept])
    r_wo = r_hat[None, :] - x.T  # [m, B]
    replicate = np.divide(num_wo, r_wo[None], out=np.zeros(num_wo.shape), where=r_wo[None] > 0)
    moved = replicate - value[:, None, :]
    variance = ((1.0 - pi)[None, :, None] * (
        moved if pairs is None else _contrast(moved, pairs)) ** 2).sum(axis=1)
    if correct:
        share = np.zeros(num_wo.shape)  # c_k per run and document
        np.add.at(share, (run_idx[kept], terms.docs.doc.reshape(-1)[kept]),
                  terms.contribution.reshape(n_runs * width, num_wo.shape[-1])[kept])
        linear = np.divide(share - value[:, None, :] * x.T[None], r_hat[None, None, :],
                           out=np.zeros(share.shape), where=r_hat[None, None, :] > 0)
        step = np.where(r_wo[None] > 0, replicate - value[:, None, :] + linear, 0.0)
        value = value - ((1.0 - pi)[None, :, None] * step).sum(axis=1)
    return _shaped(value if pairs is None else _contrast(value, pairs), variance, y)


def stratified_average_precision(y: np.ndarray, strata: np.ndarray, sizes: np.ndarray,
                                 n_sampled: np.ndarray, ranks: np.ndarray,
                                 cutoff: int | None = None, paper: bool = False,
                                 correct: bool = False,
                                 pairs: np.ndarray | None = None) -> HTEstimate:
    """AP-hat (:func:`average_precision`) on a stratified sample, with the stratified
    delete-one jackknife variance (Wolter, Introduction to Variance Estimation, 2007, sec.
    4.5): v = sum_h (1 - n_h/N_h) (n_h - 1)/n_h sum_{j in S_h} (AP-hat_(j) - mean_h)^2, where
    AP-hat_(j) is the estimate with j left out of the sample and its stratum's weights
    N_h/(n_h - 1) (strata with n_h < 2 add nothing).

    ``y`` ``[m]``: the judged documents with y != 0 (the others change a replicate only
    through their stratum's weight, so each stratum's are one replicate counted n_h - m_h
    times), their ``strata``, ``ranks`` ``[n_runs, m]``; ``sizes`` N_h and ``n_sampled`` n_h
    (every judged document). Under stratified sampling pair weights depend only on the two
    strata: 1/pi_i = a_h = N_h/n_h, 1/pi_ij = a_g a_h across strata and c_h = N_h (N_h - 1)/
    (n_h (n_h - 1)) within one (``paper``: a_g a_h for every pair, a_h^2 for the document
    itself). So the numerator is sum_{i, j above i} a_g(i) a_g(j) y_i y_j / rank_i, plus
    sum_h (c_h - a_h^2) P_hh (the pairs within stratum h) and the documents themselves; a
    replicate changes one stratum's a (a correction through that stratum's row and column
    sums) and loses the left-out document's pairs (through running sums over the run, all
    weighted by a and within its stratum): O(runs x documents) in all.

    ``correct``: less the stratified jackknife estimate of the bias (Quenouille, Biometrika
    1956; Tukey 1958; for strata Jones, JASA 1974, as in Wolter 2007, sec. 4.5, with the
    finite-population factor of sampling without replacement): b = sum_h (1 - n_h/N_h)
    (n_h - 1) (mean_h - AP-hat), mean_h the mean of the stratum's replicates. It removes the
    O(1/n) bias of the ratio (Cochran 1977, ch. 6: Quenouille's less-biased ratio estimate);
    a census (n_h = N_h) is left exact.

    ``pairs``: per pair (a, b) of runs, AP-hat_a - AP-hat_b and its jackknife variance, from
    the differences of their replicates (both runs' replicates leave out the same document,
    so what they share cancels).
    """
    n_runs, n_strata = ranks.shape[0], len(sizes)
    docs = _run_docs(ranks, cutoff)
    rank = docs.rank[..., 0].astype(np.float64)
    order = np.argsort(np.where(rank > 0, rank, np.inf), axis=1, kind="stable")
    rank = np.take_along_axis(rank, order, axis=1)
    doc = np.take_along_axis(docs.doc, order, axis=1)
    kept = rank > 0
    yy = np.where(kept, y[doc], 0.0)
    g = np.where(kept, strata[doc], 0)
    per_rank = np.divide(yy, rank, out=np.zeros_like(yy), where=kept)

    def weights(n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """a_h, the weight of a document itself, and the excess within-stratum pair weight
        c_h - a_h^2 (0 under ``paper``)."""
        a = np.divide(sizes, n, out=np.zeros(len(n)), where=n > 0)
        within = np.divide(sizes * (sizes - 1.0), n * (n - 1.0), out=np.zeros(len(n)),
                           where=n > 1)
        return a, (a * a if paper else a), (np.zeros(len(n)) if paper else within - a * a)

    a, w, excess = weights(n_sampled.astype(np.float64))
    ay = a[g] * yy
    above_a = np.cumsum(ay, axis=1) - ay  # sum of a y over the documents above
    below_a = a[g] * per_rank
    below_a = np.cumsum(below_a[:, ::-1], axis=1)[:, ::-1] - below_a  # a y/rank below
    above_own, below_own = _within_strata(g, kept, yy, per_rank)
    diag = yy * per_rank

    def by_stratum(values: np.ndarray) -> np.ndarray:  # [runs, K] -> [runs, strata]
        out = np.zeros((n_runs, n_strata))
        np.add.at(out, (np.nonzero(kept)[0], g[kept]), values[kept])
        return out

    s_h = by_stratum(diag)
    p_hh = by_stratum(per_rank * above_own)  # pairs within each stratum
    row = by_stratum(per_rank * above_a)  # sum_h' a_h' P_{h h'}
    col = by_stratum(yy * below_a)  # sum_h' a_h' P_{h' h}
    cross = (a[g] * per_rank * above_a).sum(axis=1)  # sum_{g,h} a_g a_h P_gh
    num = s_h @ w + cross + p_hh @ excess
    totals = np.bincount(strata, weights=y, minlength=n_strata)
    r_hat = float(totals @ a)
    value = num / r_hat if r_hat > 0 else np.zeros(n_runs)
    position = np.full((n_runs, len(y)), -1)
    rows, cols = np.nonzero(kept)
    position[rows, doc[rows, cols]] = cols
    units = np.arange(len(y))

    def per(values: np.ndarray) -> np.ndarray:  # per run, or per pair's difference
        return values if pairs is None else _contrast(values, pairs)

    variance = np.zeros(n_runs if pairs is None else len(pairs))
    bias = np.zeros_like(variance)
    for h in range(n_strata):
        n_h = int(n_sampled[h])
        if n_h < 2 or n_h >= sizes[h]:
            continue
        less = n_sampled.astype(np.float64)
        less[h] -= 1
        a2, w2, excess2 = weights(less)
        delta = a2[h] - a[h]
        base = (num + (w2[h] - w[h]) * s_h[:, h] + delta * (row[:, h] + col[:, h])
                + (delta**2 + excess2[h] - excess[h]) * p_hh[:, h])
        r_base = r_hat + delta * totals[h]
        members = units[strata == h]
        reps = np.empty((n_runs, len(members)))
        for i, j in enumerate(members):
            found = np.flatnonzero(position[:, j] >= 0)
            k = position[found, j]
            mine = below_own[found, k] + above_own[found, k] / rank[found, k]
            others = below_a[found, k] + above_a[found, k] / rank[found, k] + delta * mine
            loss = np.zeros(n_runs)
            loss[found] = w2[h] * diag[found, k] + yy[found, k] * (
                a2[h] * others + excess2[h] * mine)
            r_j = r_base - a2[h] * y[j]
            reps[:, i] = (base - loss) / r_j if r_j > 0 else 0.0
        others_n = n_h - len(members)  # judged documents with y = 0: one replicate each
        rest = per(base / r_base if r_base > 0 else np.zeros(n_runs))
        reps = per(reps)
        mean = (reps.sum(axis=1) + others_n * rest) / n_h
        spread = ((reps - mean[:, None]) ** 2).sum(axis=1) + others_n * (rest - mean) ** 2
        variance += (1.0 - n_h / sizes[h]) * (n_h - 1) / n_h * spread
        bias += (1.0 - n_h / sizes[h]) * (n_h - 1) * (mean - per(value))
    return HTEstimate(per(value) - bias if correct else per(value), variance)


def replicate_jackknife(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                        taylor: bool, pi: np.ndarray, pi_joint: np.ndarray,
                        strata: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                        pairs: np.ndarray | None = None) -> np.ndarray:
    """The delete-one jackknife variance of AP-hat *as reported* (:func:`average_precision`,
    ``taylor``: less its first-order bias), each replicate recomputing the whole estimate,
    the bias correction included, without one judged document; ``[n_runs]``.

    ``strata`` = (each document's stratum, N_h, n_h), for stratified SRS: the stratified
    delete-one jackknife (Wolter, Introduction to Variance Estimation, 2nd ed., 2007, sec.
    4.5; Sarndal, Swensson & Wretman 1992, sec. 11.5), v = sum_h (1 - n_h/N_h) (n_h - 1)/n_h
    sum_{j in S_h} (theta_(hj) - mean_h)^2, the replicate theta_(hj) computed with j left out
    and stratum h's design at n_h - 1 (pi_i = (n_h - 1)/N_h, pi_ij within h
    (n_h - 1)(n_h - 2)/(N_h (N_h - 1))); strata with n_h < 2, and a census, add nothing.
    Without ``strata`` (designs with independent inclusions, ``pi`` and ``pi_joint`` as
    given): v = sum_{k in S} (1 - pi_k) (theta_(k) - theta-hat)^2, as
    :func:`average_precision_jackknife`. With ``taylor=False`` both equal the jackknives of
    :func:`stratified_average_precision` and :func:`average_precision_jackknife`; with it,
    the variance includes what the estimated bias correction adds, which the jackknife of
    the uncorrected AP-hat leaves out (docs/methods.md, "Variance of the corrected estimate").

    ``y`` ``[m]``: the judged documents with y != 0 (deleting one with y = 0 changes only its
    stratum's design, so each stratum's are one replicate counted n_h - m_h times); ``ranks``
    ``[n_runs, m]``. ``pairs``: the variance of each pair's difference AP-hat_a - AP-hat_b,
    from the differences of their replicates.

    No replicate is recomputed: each updates the full sample's sums (deleting j removes its
    row and column of AP-hat's pairs and its term of R-hat and of the HT (co)variances),
    :func:`general_replicates` in O(runs x K^2 + runs x K x m) for every replicate, and on
    stratified samples :func:`stratified_replicates`, where pi_ij depends only on the two
    strata, in O(runs x K^2 + runs x K x strata), where recomputing costs O(runs x K^2) per
    replicate (K: a run's judged relevant documents, m: the topic's).
    ``tests/test_ap_kernels.py`` checks both against the recomputation (1e-12 relative).
    """
    n_runs, m = ranks.shape[0], len(y)
    variance = np.zeros(n_runs if pairs is None else len(pairs))
    if m == 0:
        return variance

    def per(values: np.ndarray) -> np.ndarray:  # [rows, n_runs] -> per run or pair
        return values if pairs is None else _contrast(values.T, pairs).T

    if strata is None:
        value, reps = general_replicates(y, pi, pi_joint, ranks, cutoff, paper, taylor)
        return ((1.0 - pi)[:, None] * (per(reps) - per(value[None])) ** 2).sum(axis=0)
    reps, rest = stratified_replicates(y, strata, ranks, cutoff, paper, taylor)
    return stratum_jackknife(strata, lambda h, rows: per(stratum_rows(reps, rest, h, rows)),
                             len(variance))[0]


def stratum_jackknife(strata: tuple[np.ndarray, np.ndarray, np.ndarray],
                      replicates: Callable[[int, np.ndarray], np.ndarray], width: int,
                      value: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The stratified delete-one jackknife (Wolter, Introduction to Variance Estimation, 2nd
    ed., 2007, sec. 4.5; Jones 1974) of an estimate of ``width`` values, from its
    replicates: ``replicates(h, rows)`` ``[len(rows), width]`` re-estimates without each
    judged document of ``rows`` (stratum h's documents with y != 0; -1 stands for h's
    n_h - m_h judged documents with y = 0, which share one replicate), stratum h's design at
    n_h - 1. Returns (v, b): v = sum_h (1 - f_h) (n_h - 1)/n_h sum_{j in S_h}
    (theta_(hj) - mean_h)^2, and the bias estimate b = sum_h (1 - f_h) (n_h - 1)
    (mean_h - ``value``) (zeros without ``value``), f_h = n_h/N_h. Strata with n_h < 2, a
    census of h, and strata without a document with y != 0 (whose replicates all equal the
    estimate) add nothing. ``strata`` = (each document's stratum, N_h, n_h)."""
    stratum, sizes, n_sampled = strata
    variance, bias = np.zeros(width), np.zeros(width)
    for h, (big_n, n_h) in enumerate(zip(sizes, n_sampled, strict=True)):
        members = np.flatnonzero(stratum == h)
        if n_h < 2 or n_h >= big_n or not len(members):
            continue
        others = int(n_h) - len(members)  # judged documents of h with y = 0
        shared = [-1] if others else []  # one replicate for h's documents with y = 0
        block = replicates(h, np.r_[members, shared].astype(np.int64))
        weight = np.r_[np.ones(len(members)), [others] if others else []]
        mean = weight @ block / n_h
        fpc = 1.0 - n_h / big_n
        variance += fpc * (n_h - 1) / n_h * (weight @ (block - mean) ** 2)
        if value is not None:
            bias += fpc * (n_h - 1) * (mean - value)
    return variance, bias


def stratum_rows(reps: np.ndarray, rest: np.ndarray, h: int, rows: np.ndarray) -> np.ndarray:
    """The replicates of ``rows`` of stratum h (:func:`stratum_jackknife`) from
    :func:`stratified_replicates`' two arrays: ``reps[j]`` for a document, ``rest[h]`` for
    -1."""
    return np.vstack([reps[rows[rows >= 0]], rest[h:h + 1][:int((rows < 0).sum())]])


def _corrected(num: np.ndarray, r_hat: np.ndarray, own: np.ndarray, cross: np.ndarray,
               taylor: bool) -> np.ndarray:
    """AP-hat = num/R-hat (0 where R-hat is 0), with ``taylor`` less (AP-hat V-hat(R-hat) -
    C-hat(N-hat, R-hat))/R-hat^2 (``own`` = V-hat(R-hat), ``cross`` = C-hat), as
    :func:`_ratio` computes it."""
    r_hat = np.broadcast_to(r_hat, num.shape)
    q = np.divide(num, r_hat, out=np.zeros(num.shape), where=r_hat > 0)
    if not taylor:
        return q
    return q - np.divide(q * own - cross, r_hat * r_hat, out=np.zeros(num.shape),
                         where=r_hat > 0)


def general_replicates(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                       cutoff: int | None, paper: bool, taylor: bool
                       ) -> tuple[np.ndarray, np.ndarray]:
    """AP-hat as :func:`average_precision` computes it (``[n_runs]``) and its delete-one
    replicates (``[m, n_runs]``, row j: y_j set to 0), each by updating the full sample's
    sums rather than recomputing them.

    AP-hat's numerator is sum_{k, l: rank_l <= rank_k} P_kl over each run's documents,
    P_kl = y_k y_l/(max(rank_k, rank_l) pi_kl) (P_kk = y_k^2/(rank_k pi_k); ``paper``:
    1/(pi_k pi_l), 1/pi_k^2 on the diagonal); document k's linearised contribution is its
    row sum c_k. Deleting j removes its row and column: num_(j) = num - c_j, c_k(j) =
    c_k - P_kj, x_(j) = x with x_j = y_j/pi_j at 0. The Taylor correction's HT (co)variances
    V-hat(R-hat) = x'Dx and C-hat = sum_k c_k (Dx)_k (D the HT weights, :func:`_delta`)
    change by the rank-one terms of x_j and the column P_.j: O(runs x K^2 + runs x m^2) for
    all replicates instead of O(runs x K^2 x m)."""
    docs = _run_docs(ranks, cutoff)
    m, (n_runs, width) = len(y), docs.doc.shape
    rank = docs.rank[..., 0]
    inside = rank > 0
    y_run = np.where(inside, y[docs.doc], 0.0)
    itself = 1.0 / (pi * pi) if paper else 1.0 / pi
    diag = np.divide(y_run * y_run * itself[docs.doc], rank, out=np.zeros(rank.shape),
                     where=inside)  # P_kk
    delta = _delta(pi, pi_joint)
    x = y / pi
    dx = x @ delta  # (x'D)_k
    c, p_dx, p_delta, c_delta = deleted_pair_sums(y_run, rank, docs.doc, pi, pi_joint,
                                                  paper, dx, delta)  # c_delta: sum_k c_k D_jk
    num = 0.5 * (c.sum(axis=1) + diag.sum(axis=1))
    xd = delta @ x  # (Dx)_k
    own = float(x @ dx)
    r_hat = float(x.sum())
    dx_run = np.where(inside, dx[docs.doc], 0.0)
    cross = (c * dx_run).sum(axis=1)
    value = _corrected(num, np.asarray(r_hat), np.asarray(own), cross, taylor)
    # per run and deleted document j (frame order); j outside the run: no pair term
    rows = np.repeat(np.arange(n_runs), width)[inside.ravel()]
    at = docs.doc[inside]
    own_j = own - x * (dx + xd) + x * x * np.diagonal(delta)
    pos_terms = p_dx - x[docs.doc] * p_delta + (c - diag) * (
        dx[docs.doc] - x[docs.doc] * np.diagonal(delta)[docs.doc])
    num_j = np.broadcast_to(num[:, None], (n_runs, m)).copy()
    num_j[rows, at] -= c[inside]
    cross_j = cross[:, None] - x[None, :] * c_delta
    cross_j[rows, at] -= pos_terms[inside]
    reps = _corrected(num_j, r_hat - x, own_j, cross_j, taylor)
    return value, reps.T


class _StratumDesign(NamedTuple):
    """Per stratum, under stratified SRS with n_h of N_h sampled (Sarndal, Swensson &
    Wretman 1992, ch. 3, stratified sampling): pi_i = n_h/N_h, pi_ij = n_h (n_h - 1)/(N_h
    (N_h - 1)) within h, pi_i pi_j across strata. ``a`` = 1/pi_i; ``within`` the pair
    weight 1/pi_ij of two documents of h (1/(pi_i pi_j) when n_h < 2, as
    :func:`stratified_inclusion`, and under ``paper``); ``itself`` a document's own weight
    (1/pi_i; ``paper``: 1/pi_i^2); the HT variance weights (pi_ij - pi_i pi_j)/pi_ij of a
    document with itself (``own``) and of two documents of h (``pair``; 0 across
    strata)."""

    a: np.ndarray
    within: np.ndarray
    itself: np.ndarray
    own: np.ndarray
    pair: np.ndarray


def _stratum_design(sizes: np.ndarray, n: np.ndarray, paper: bool) -> _StratumDesign:
    big_n, n = sizes.astype(np.float64), n.astype(np.float64)
    pi = np.divide(n, big_n, out=np.zeros(len(n)), where=big_n > 0)
    a = np.divide(1.0, pi, out=np.zeros(len(n)), where=pi > 0)
    joint = np.where(n > 1, np.divide(n * (n - 1), big_n * (big_n - 1), out=np.ones(len(n)),
                                      where=big_n > 1), pi * pi)
    within = a * a if paper else np.divide(1.0, joint, out=np.zeros(len(n)), where=joint > 0)
    own = 1.0 - np.divide(pi * pi, pi, out=np.zeros(len(n)), where=pi > 0)
    pair = 1.0 - np.divide(pi * pi, joint, out=np.ones(len(n)), where=joint > 0)
    return _StratumDesign(a, within, a * a if paper else a, own, pair)


def stratified_replicates(y: np.ndarray, strata: tuple[np.ndarray, np.ndarray, np.ndarray],
                          ranks: np.ndarray, cutoff: int | None, paper: bool, taylor: bool
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The replicates of :func:`replicate_jackknife` on a stratified sample: ``[m, n_runs]``,
    row j AP-hat (``taylor``: corrected) with y_j at 0 and j's stratum h at n_h - 1, and
    ``[strata, n_runs]``, row h with only h at n_h - 1 (a deleted document with y = 0).

    Under stratified SRS a pair's weight depends only on the two strata (:class:`_
    StratumDesign`), so with Q_kl = y_k y_l/max(rank_k, rank_l) and B_kg = sum_{l in g,
    l != k} Q_kl (one pass over each run's pairs, ``_ht_kernels.stratum_pair_sums``; no
    ``[K, K]`` matrix of pi_ij), document k's contribution is
    c_k = itself_g(k) y_k^2/rank_k + sum_g W(g(k), g) B_kg, and stratum h's design at
    n_h - 1 changes only the weights involving h: c_k, AP-hat's numerator, R-hat and the HT
    (co)variances of the Taylor correction (whose weights are block-diagonal by stratum)
    follow in O(runs x K x strata) for every h at once. Deleting j then updates them as in
    :func:`general_replicates`, its column of pairs summed by stratum."""
    stratum, sizes, n_sampled = strata
    docs = _run_docs(ranks, cutoff)
    n_runs, n_strata = docs.doc.shape[0], len(sizes)
    full = _stratum_design(sizes, n_sampled, paper)
    less = _stratum_design(sizes, n_sampled - 1, paper)  # row h: stratum h's replicate design
    rank = docs.rank[..., 0]
    inside = rank > 0
    y_run = np.where(inside, y[docs.doc], 0.0)
    g_run = np.where(inside, stratum[docs.doc], 0)
    # frame level: x = y/pi, (Dx)_j = own_g x_j + pair_g (T_g - x_j), full and h's design
    y_total = np.bincount(stratum, weights=y, minlength=n_strata)
    x, x_less = y * full.a[stratum], y * less.a[stratum]
    t_full, t_less = y_total * full.a, y_total * less.a
    dx = full.own[stratum] * x + full.pair[stratum] * (t_full[stratum] - x)
    dx_less = less.own[stratum] * x_less + less.pair[stratum] * (t_less[stratum] - x_less)
    r_hat = float(x.sum())
    own_total = float(x @ dx)
    r_h = r_hat + t_less - t_full  # [strata]: R-hat under h's design
    own_h = own_total + np.bincount(stratum, weights=x_less * dx_less - x * dx,
                                    minlength=n_strata)
    dx_run = np.where(inside, dx[docs.doc], 0.0)
    dx_less_run = np.where(inside, dx_less[docs.doc], 0.0)
    by_g, weighted, weighted_dx, mine, mine_dx, mine_dx_less = stratum_pair_sums(
        y_run, rank, g_run, full.a, dx_run, dx_less_run, n_strata)
    diag = np.divide(y_run * y_run, rank, out=np.zeros(rank.shape), where=inside)
    a_k, a_less_k = full.a[g_run], less.a[g_run]
    rest_a = weighted - a_k * mine
    c = full.itself[g_run] * diag + a_k * rest_a + full.within[g_run] * mine
    # under h's design: h != g(k) rescales k's pairs with h; h = g(k) all of k's weights
    c_mine = less.itself[g_run] * diag + a_less_k * rest_a + less.within[g_run] * mine
    c_total, cross_h, mine_total, diag_h = stratum_design_sums(
        c, c_mine, dx_run, dx_less_run, diag, g_run, rank, by_g, a_k, less.a - full.a)
    diag_sum = (full.itself[g_run] * diag).sum(axis=1)
    num_h = 0.5 * (c_total + diag_sum[:, None] + (less.itself - full.itself) * diag_h)
    rest = _corrected(num_h, r_h, own_h, cross_h, taylor).T
    # delete j (stratum h, h's design): at its position p in each run that retrieved it
    h = stratum
    xl = x_less
    num_j = num_h[:, h].copy()  # [r, m]
    cross_j = cross_h[:, h] - xl * less.pair[h] * mine_total[:, h]
    g_in = g_run[inside]
    xl_p = xl[docs.doc][inside]
    p_jj = less.itself[g_in] * diag[inside]
    c_p = c_mine[inside]
    others = weighted_dx[inside] - full.a[g_in] * mine_dx[inside]
    p_dx = (p_jj * dx_less[docs.doc][inside] + less.a[g_in] * others
            + less.within[g_in] * mine_dx_less[inside])
    p_d = p_jj * less.own[g_in] + less.pair[g_in] * less.within[g_in] * mine[inside]
    c_d = (less.own[g_in] - less.pair[g_in]) * c_p  # the k = j part of sum_k c_k D_jk
    at = (np.repeat(np.arange(n_runs), rank.shape[1])[inside.ravel()], docs.doc[inside])
    num_j[at] -= c_p
    cross_j[at] -= (xl_p * c_d + p_dx - xl_p * p_d
                    + (c_p - p_jj) * (dx_less[docs.doc][inside] - less.own[g_in] * xl_p))
    own_j = own_h[h] - 2.0 * xl * dx_less + xl * xl * less.own[h]
    # R-hat without j, exactly 0 when j was the only relevant document (as recomputed)
    r_others = np.where(np.eye(n_strata, dtype=bool), 0.0, t_full).sum(axis=1)
    r_j = r_others[h] + less.a[h] * (y_total[h] - y)
    reps = _corrected(num_j, r_j, own_j, cross_j, taylor).T
    return reps, rest


def _within_strata(g: np.ndarray, kept: np.ndarray, y: np.ndarray, per_rank: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per run, at each document (``[runs, K]`` in rank order, stratum ``g``): the sum of y
    over the documents above it in its own stratum, and of y/rank over those below."""
    n_runs, width = g.shape
    run = np.repeat(np.arange(n_runs), width)
    order = np.lexsort((np.tile(np.arange(width), n_runs), g.ravel(), run))
    group = np.stack([run[order], g.ravel()[order]])
    start = np.r_[True, (group[:, 1:] != group[:, :-1]).any(axis=0)]
    first = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))

    def exclusive(values: np.ndarray, reverse: bool) -> np.ndarray:
        v = np.where(kept, values, 0.0).ravel()[order]
        if reverse:
            last = np.r_[start[1:], True]
            rev_first = np.minimum.accumulate(
                np.where(last, np.arange(len(order)), len(order))[::-1])[::-1]
            total = np.cumsum(v[::-1])[::-1]
            tail = np.append(total, 0.0)[rev_first + 1]
            out = total - v - tail
        else:
            total = np.cumsum(v)
            out = total - v - np.append(0.0, total)[first]
        back = np.empty(len(order))
        back[order] = out
        return back.reshape(n_runs, width)

    return exclusive(y, False), exclusive(per_rank, True)


def ndcg(gain: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
         cutoff: int | None = None, pairs: np.ndarray | None = None,
         taylor: bool = False) -> HTEstimate:
    """nDCG@k-hat = DCG@k-hat / IDCG@k-hat (ratio estimator; DCG-hat as in :func:`dcg`).

    The ideal DCG ranks N_g-hat documents of each grade g > 0 (best first), with
    N_g-hat = sum_S 1{gain_i = g}/pi_i rounded as NIST's sample_eval rounds it, int(x + 0.5);
    its linearisation gives document i the weight d IDCG / d N_g at g = gain_i. ``taylor``:
    less the ratio's estimated first-order bias (:func:`_ratio`), IDCG-hat linearised.
    """
    docs = _run_docs(ranks, cutoff)
    ideal, influence = _ideal_dcg(gain, pi, cutoff)
    a = _columns(gain, docs) * _discount(docs.rank)
    return _ratio(_ht_sum(a, docs, pi), a, docs, influence, ideal, pi, pi_joint, taylor=taylor,
                  pairs=pairs)


# -- helpers of the core --------------------------------------------------------------------

def rank_cut(r_hat: np.ndarray) -> np.ndarray:
    """floor(R-hat) for Rprec's cut, an R-hat within 1e-9 below a whole number taken as it:
    the rounding of the estimate's sums must not move the cut a rank (with predictions equal
    to the labels, ``~ppi``'s R-hat is 8 - 1e-15 where R is 8)."""
    return np.floor(r_hat + 1e-9)


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
    return quadratic(np.ascontiguousarray(x, dtype=np.float64), docs.doc, delta)


def _total(a: np.ndarray, docs: _RunDocs, pi: np.ndarray, pi_joint: np.ndarray,
           like: np.ndarray, pairs: np.ndarray | None = None) -> HTEstimate:
    """The HT estimate sum_S a_i/pi_i per run and its HT variance (per pair of runs, of
    their difference, with ``pairs``)."""
    x = a / pi[docs.doc][:, :, None]
    if pairs is not None:
        diff = _contrast(_on_frame(x, docs, len(pi)), pairs)
        return _shaped(diff.sum(axis=1), _frame_quadratic(diff, _delta(pi, pi_joint)), like)
    return _shaped(x.sum(axis=1), _quadratic(x, docs, _delta(pi, pi_joint)), like)


def _contrast(values: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per pair (a, b) of run indices (``pairs`` ``[P, 2]``), ``values[a] - values[b]``
    along the first (run) axis."""
    return values[pairs[:, 0]] - values[pairs[:, 1]]


def _on_frame(x: np.ndarray, docs: _RunDocs, m: int) -> np.ndarray:
    """Per-run values on each run's documents (``[n_runs, K, B]``) spread over the judged
    documents, ``[n_runs, m, B]`` (0 where the run did not retrieve the document), so that
    two runs' values line up document by document."""
    out = np.zeros((x.shape[0], m, x.shape[2]))
    runs = np.repeat(np.arange(x.shape[0]), x.shape[1])
    np.add.at(out, (runs, docs.doc.reshape(-1)), np.where(docs.rank > 0, x, 0.0).reshape(
        runs.size, x.shape[2]))
    return out


def _frame_quadratic(x: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """sum_{k,l} x_k delta_kl x_l for ``x`` ``[P, m, B]`` on the judged documents:
    ``[P, B]``."""
    return np.einsum("pkb,kl,plb->pb", x, delta, x, optimize=True)


def _ratio(numerator: np.ndarray, a: np.ndarray, docs: _RunDocs, b: np.ndarray,
           denominator: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray,
           taylor: bool = False, pairs: np.ndarray | None = None) -> HTEstimate:
    """Q-hat = numerator / denominator per run, with the linearised variance.

    ``a`` (``[n_runs, K, B]``, on each run's documents) and ``b`` (``[..., m]``) are each
    judged document's linearised contributions to the numerator and the denominator:
    u_i = (a_i - Q-hat b_i) / B-hat, so V-hat(Q-hat) = (a'Da - 2 Q-hat a'Db + Q-hat^2 b'Db) /
    B-hat^2 on x_i = z_i/pi_i, D the HT weights. ``taylor``: Q-hat less its estimated
    first-order bias (Q-hat b'Db - a'Db)/B-hat^2 = (Q-hat V-hat(B-hat) - C-hat(A-hat,
    B-hat))/B-hat^2, the second-order Taylor bias of a ratio of two unbiased estimates
    (Cochran, Sampling Techniques, 1977, ch. 6; Sarndal, Swensson & Wretman 1992, sec. 7.3),
    with the design's HT (co)variance estimators.

    ``pairs``: per pair (a, b) of runs, Q-hat_a - Q-hat_b over the shared denominator and
    its variance, the HT variance of the difference of their residuals u^a_i - u^b_i (the
    documents both runs weight alike cancel; the difference's linearisation, since the
    denominator is common).
    """
    delta = _delta(pi, pi_joint)
    x_a = a / pi[docs.doc][:, :, None]
    x_b = _flat(b) / pi
    delta_b = x_b @ delta
    denom = np.reshape(denominator, -1)
    q = np.divide(numerator, denom, out=np.zeros(numerator.shape), where=denom > 0)
    cross = (x_a * delta_b.T[docs.doc]).sum(axis=1)
    own = (x_b * delta_b).sum(axis=-1)
    if pairs is None:
        spread = _quadratic(x_a, docs, delta) - 2.0 * q * cross + q * q * own
    else:  # the residuals' differences, document by document
        residual = _on_frame(x_a, docs, len(pi)) - q[:, None, :] * x_b.T[None]
        spread = _frame_quadratic(_contrast(residual, pairs), delta)
    variance = np.divide(spread, denom * denom, out=np.zeros(spread.shape), where=denom > 0)
    if taylor:
        q = q - np.divide(q * own - cross, denom * denom, out=np.zeros(q.shape),
                          where=denom > 0)
    return _shaped(q if pairs is None else _contrast(q, pairs), variance, b)


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


def topic_parts(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                spec: EstimateSpec, level: float) -> TopicParts:
    """Per topic and run: the estimate, its variance and the estimated bias that widens
    its interval (AP's ``interval=bias-aware``; 0 elsewhere), each ``[topics, runs]``
    (AP's ``few`` floor is :mod:`sampleval.estimation.result`'s, applied at registration)."""
    values = np.zeros((len(views), len(run_names)))
    variances = np.zeros_like(values)
    biases = np.zeros_like(values)
    for t, view in enumerate(views):
        values[t], variances[t], biases[t] = _topic_estimate(view, sample, spec, level)
    return TopicParts(values, variances, biases)


def differences_ht(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                   spec: EstimateSpec, level: float,
                   pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and pair (a, b) of run indices (``pairs`` ``[P, 2]``), the estimated
    difference ``spec``_a - ``spec``_b and its estimated variance, both ``[topics, P]``:
    the estimator applied to the difference of the two runs' weights from the one sample
    they share, with the variance of that difference (not of either run alone)."""
    values = np.zeros((len(views), len(pairs)))
    variances = np.zeros_like(values)
    for t, view in enumerate(views):
        values[t], variances[t], _ = _topic_estimate(view, sample, spec, level, pairs)
    return values, variances


class TopicEstimate(NamedTuple):
    """One topic's estimates, their variances and the estimated bias that widens their
    intervals (AP's ``interval=bias-aware``: :func:`~sampleval.estimators.base.summarise`;
    0 elsewhere)."""

    value: np.ndarray
    variance: np.ndarray
    bias: np.ndarray


def _topic_estimate(view: TopicView, sample: Sample, spec: EstimateSpec,
                    level: float, pairs: np.ndarray | None = None) -> TopicEstimate:
    """One topic's estimate for every run (``pairs``: for every pair's difference), from its
    judged documents."""
    estimator, graded = ESTIMATORS[spec.base]
    judged = np.flatnonzero(view.sample.judged)
    labels = view.sample.labels[judged]
    y = gain(labels) if graded else relevance(labels, level)
    contributing = y != 0  # a document with y = 0 adds nothing to a sum, its variance or R-hat
    index = judged[contributing]
    if spec.base == "AP":
        out = _topic_ap(view, sample, spec, y[contributing], index, pairs)
        if pairs is not None:
            return out
        return out
    design = judged_design(sample, view.sample, index)
    options: dict[str, Any] = {}  # the options of the measures that take them
    if spec.base in TAKE_CORRECTION:
        options["taylor"] = spec.option("correction") == "taylor"
    if spec.base == "Rprec":
        options["cut"] = spec.option("cut")
    total = estimator(y[contributing], design.pi, design.pi_joint, view.rank_of(index),
                      spec.cutoff, pairs=pairs, **options)
    return TopicEstimate(total.value, total.variance, np.zeros_like(total.value))


def _topic_ap(view: TopicView, sample: Sample, spec: EstimateSpec, y: np.ndarray,
              index: np.ndarray, pairs: np.ndarray | None = None) -> TopicEstimate:
    """AP-hat of one topic for every run (``pairs``: every pair's difference) by its
    options: the value less the bias estimate of ``bias``, the variance of ``var`` (the
    jackknives are stratified on stratified samples: :func:`stratified_average_precision`,
    :func:`replicate_jackknife`), and the bias that widens the interval (``interval``)."""
    from sampleval.estimators import ap_replicates  # it builds on this module

    paper, bias, var = spec.option("ap") == "paper", spec.option("bias"), spec.option("var")
    aware = (pairs is None and spec.option("interval") == "bias-aware"
             and bias in ("taylor", "taylor-jackknife"))
    ranks = view.rank_of(index)
    stratified = sample.design in ("stratified", "census")
    strata = None
    if stratified:
        sizes, n_sampled = view.sample.strata()
        strata = (view.sample.stratum[index], sizes, n_sampled)

    @functools.cache
    def remaining() -> ap_replicates.Corrected:  # the Taylor estimate's remaining bias
        if strata is None:
            design = judged_design(sample, view.sample, index)
            return ap_replicates.taylor_jackknife_independent(
                y, ranks, spec.cutoff, paper, design.pi, design.pi_joint, pairs)
        return ap_replicates.taylor_jackknife(y, ranks, spec.cutoff, paper, strata, pairs)

    def widened(out: HTEstimate) -> TopicEstimate:
        return TopicEstimate(out.value, out.variance, remaining().bias if aware
                             else np.zeros_like(out.value))

    def jackknife() -> HTEstimate:
        if strata is not None:
            return stratified_average_precision(y, strata[0], strata[1], strata[2], ranks,
                                                spec.cutoff, paper, bias == "jackknife",
                                                pairs)
        design = judged_design(sample, view.sample, index)
        return average_precision_jackknife(y, design.pi, design.pi_joint, ranks, spec.cutoff,
                                           paper, bias == "jackknife", pairs)

    if bias == "taylor" and var == "jackknife":  # the replicates recompute the correction
        if aware:  # the same replicates give the variance and the remaining bias
            corrected = remaining()
            return widened(HTEstimate(corrected.value + corrected.bias, corrected.variance))
        design = judged_design(sample, view.sample, index)
        value = average_precision(y, design.pi, design.pi_joint, ranks, spec.cutoff, paper,
                                  True).value
        return widened(HTEstimate(value if pairs is None else _contrast(value, pairs),
                                  replicate_jackknife(y, ranks, spec.cutoff, paper, True,
                                                      design.pi, design.pi_joint, strata,
                                                      pairs)))

    def linear() -> HTEstimate:
        design = judged_design(sample, view.sample, index)
        return average_precision(y, design.pi, design.pi_joint, ranks, spec.cutoff, paper,
                                 bias == "taylor", pairs)

    if bias == "taylor-jackknife" or (bias == "jackknife" and var == "jackknife"):
        if bias == "jackknife":  # the double jackknife
            design = judged_design(sample, view.sample, index)
            return widened(ap_replicates.double_jackknife(y, ranks, spec.cutoff, paper,
                                                          strata, design.pi, design.pi_joint,
                                                          pairs))
        corrected = remaining()
        if var == "jackknife":
            return widened(HTEstimate(corrected.value, corrected.variance))
        # var=jackknife-uncorrected or linear: the variance of AP-hat before any correction
        first = linear if var == "linear" else jackknife
        return widened(HTEstimate(corrected.value, first().variance))
    first, other = (linear, jackknife) if var == "linear" else (jackknife, linear)
    out = first()
    if bias != "none" and (bias == "jackknife") != (first is jackknife):
        return widened(HTEstimate(other().value, out.variance))  # the value from the other
    return widened(out)


PARTS = floored(topic_parts)

register_family(EstimatorFamily(
    name="ht", title="Horvitz-Thompson totals and ratio estimators, HT variances with pi_ij",
    reference="Li & Kanoulas, CIKM 2017, sec. 3",
    bases=(Base("AP", "optional", options=("var", "bias", "ap", "few", "interval")), Base("P", "required"),
           Base("R", "required", options=("correction",)),
           Base("Rprec", options=("cut", "correction")),
           Base("nDCG", "optional", options=("correction",)),
           Base("DCG", "optional"), Base("NumRel")),
    designs=("census", "stratified", "poisson", "inclusion", "with-replacement"),
    compute=rows_of(PARTS), differences=differences_ht, parts=PARTS,
    options=(
        Param("var", str, "jackknife", "AP's variance: jackknife (delete-one, of the "
              "estimate as reported: each replicate recomputes it, its bias correction "
              "included; stratified on stratified samples, with (1 - pi) weights on the "
              "others), jackknife-uncorrected (the same jackknife of AP-hat before the bias "
              "correction, the default before) or linear (linearised ratio, HT variance with "
              "pi_ij)", choices=VARIANCES),
        Param("bias", str, "taylor", "AP's ratio bias: taylor (less the ratio's "
              "first-order bias, (AP V(R) - C(N, R))/R^2, with HT (co)variances), jackknife "
              "(less the delete-one jackknife's bias estimate: stratified on stratified "
              "samples, Quenouille/Jones) or none (AP-hat as it is)", choices=BIASES),
        Param("ap", str, "ours", "AP-hat: ours (pairs weighted by 1/pi_ij, each document "
              "itself by 1/pi_i) or paper (Li & Kanoulas's PC(r(i)) with the document itself "
              "at 1/pi_i, so 1/pi_i^2 on the diagonal)", choices=("ours", "paper")),
        FEW_OPTION,
        Param("interval", str, "bias-aware", "AP's interval: bias-aware (z standard errors "
              "either side, widened by the jackknife's estimate of the bias the Taylor "
              "correction leaves, |b|; with bias=taylor or taylor-jackknife, normal with the "
              "others) or normal (z standard errors either side)",
              choices=("bias-aware", "normal")),
        Param("cut", str, "floor", "Rprec's cut: floor (the paper's r(i) <= R-hat) or "
              "round (rank int(R-hat + 0.5))", choices=("floor", "round")),
        Param("correction", str, "taylor", "R@k's, Rprec's and nDCG's ratio bias: taylor "
              "(less the ratio's first-order bias, (Q V(R) - C(N, R))/R^2, with HT "
              "(co)variances, as AP's bias=taylor; nDCG's denominator IDCG linearised) or none "
              "(the plain ratio, the paper's for R@k and Rprec)", choices=("taylor", "none")),
    )))
