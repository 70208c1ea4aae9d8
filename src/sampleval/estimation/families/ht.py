"""The Horvitz-Thompson family ``~ht``: IR measures from a sample with known pi_i and pi_ij.

Li & Kanoulas, "Active Sampling for Large-scale Information Retrieval Evaluation", CIKM 2017,
sec. 3: each measure is written as a sum over the documents of the frame (AP: over pairs of
documents), and the sum is estimated from the judged sample S by weighting each judged document
by 1/pi_i and each judged pair by 1/pi_ij (Horvitz & Thompson, JASA 1952). Measures that divide
by R (recall, AP, Rprec) or by the ideal DCG (nDCG) are ratios of such estimates
(:mod:`sampleval.estimation.engine.estimands`; AP's jackknives
:mod:`sampleval.estimation.engine.replicates`).

Conventions (trec_eval's where they apply): binary measures (NumRel, P, R, AP, Rprec) use
y_i = base.relevance(label_i, level); DCG and nDCG gain the label itself; a document outside
the frame, or unjudged, is never in S and counts as not relevant; a ratio whose denominator
estimate is 0 is 0.

Options (each measure's declared ones, below): AP's ``variance`` (jackknife of the estimate as
reported, the default; jackknife-uncorrected, deprecated; linear), ``bias`` (taylor, the default: less
the ratio's first-order bias (AP V(R-hat) - C(N-hat, R-hat))/R^2, Cochran 1977, ch. 6;
taylor-jackknife; jackknife, Quenouille 1956 / Jones 1974; none), ``ap`` (ours, or the
paper's PC(r(i))), ``few`` (:func:`sampleval.estimation.result.few_relevant_variance`) and
``interval`` (bias-aware, the default with taylor and taylor-jackknife: widened by the
jackknife's estimate of the bias the Taylor correction leaves, Armstrong & Kolesar 2020; or
normal); R@k's, Rprec's and nDCG's ``bias`` (taylor, the default, or none); Rprec's
``cut``. Intervals and rows: :mod:`sampleval.estimation.result`. The coverage, bias and rms
that chose these defaults, with the commands that measured them: docs/research/ht.md.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.estimation.engine.estimands import (
    TAKE_CORRECTION,
    Estimator,
    HTEstimate,
    _contrast,
    average_precision,
    dcg,
    ndcg,
    num_rel,
    precision,
    r_precision,
    recall,
    weighted_total,
)
from sampleval.estimation.engine.replicates import (
    Corrected,
    average_precision_jackknife,
    double_jackknife,
    replicate_jackknife,
    stratified_average_precision,
    taylor_jackknife,
    taylor_jackknife_independent,
)
from sampleval.estimation.engine.units import is_graded
from sampleval.estimation.engine.views import TopicView, gain, relevance
from sampleval.estimation.family import Base, EstimatorFamily, register_family
from sampleval.estimation.options import RATIO_BIAS, pick
from sampleval.estimation.result import FEW_OPTION_POOLED, TopicParts, floored, rows_of
from sampleval.estimation.spec import EstimateSpec

BIASES = ("taylor", "taylor-jackknife", "jackknife", "none")
VARIANCES = ("jackknife", "jackknife-uncorrected", "linear")


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
    intervals (AP's ``interval=bias-aware``: :func:`~sampleval.estimation.engine.views.summarise`;
    0 elsewhere)."""

    value: np.ndarray
    variance: np.ndarray
    bias: np.ndarray


def _topic_estimate(view: TopicView, sample: Sample, spec: EstimateSpec,
                    level: float, pairs: np.ndarray | None = None) -> TopicEstimate:
    """One topic's estimate for every run (``pairs``: for every pair's difference), from its
    judged documents."""
    estimator, graded = ESTIMATORS.get(spec.base) or (weighted_total(spec.base),
                                                      is_graded(spec.base))
    judged = np.flatnonzero(view.sample.judged)
    labels = view.sample.labels[judged]
    y = gain(labels) if graded else relevance(labels, level)
    contributing = y != 0  # a document with y = 0 adds nothing to a sum, its variance or R-hat
    index = judged[contributing]
    if spec.base == "AP":
        return _topic_ap(view, sample, spec, level, y[contributing], index, pairs)
    design = judged_design(sample, view.sample, index)
    options: dict[str, Any] = {}  # the options of the measures that take them
    if spec.base in TAKE_CORRECTION:
        options["taylor"] = spec.option("bias") == "taylor"
    if spec.base == "Rprec":
        options["cut"] = spec.option("cut")
    total = estimator(y[contributing], design.pi, design.pi_joint, view.rank_of(index),
                      spec.cutoff, pairs=pairs, **options)
    return TopicEstimate(total.value, total.variance, np.zeros_like(total.value))


def _topic_ap(view: TopicView, sample: Sample, spec: EstimateSpec, level: float,
              y: np.ndarray, index: np.ndarray, pairs: np.ndarray | None = None
              ) -> TopicEstimate:
    """AP-hat of one topic for every run (``pairs``: every pair's difference) by its
    options: the value less the bias estimate of ``bias``, the variance of ``variance`` (the
    jackknives are stratified on stratified samples: :func:`stratified_average_precision`,
    :func:`replicate_jackknife`), and the bias that widens the interval (``interval``)."""
    paper, bias, var = spec.option("ap") == "paper", spec.option("bias"), spec.option("variance")
    aware = (pairs is None and spec.option("interval") == "bias-aware"
             and bias in ("taylor", "taylor-jackknife"))
    ranks = view.rank_of(index)
    stratified = sample.design.has_strata
    strata = None
    if stratified:
        sizes, n_sampled = view.sample.strata()
        strata = (view.sample.stratum[index], sizes, n_sampled)

    @functools.cache
    def remaining() -> Corrected:  # the Taylor estimate's remaining bias
        if strata is None:
            design = judged_design(sample, view.sample, index)
            return taylor_jackknife_independent(
                y, ranks, spec.cutoff, paper, design.pi, design.pi_joint, pairs)
        return taylor_jackknife(y, ranks, spec.cutoff, paper, strata, pairs)

    def widened(out: HTEstimate) -> TopicEstimate:  # (result.corrected drops the bias
        # where it does not widen: at most one relevant document judged)
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
            return widened(double_jackknife(y, ranks, spec.cutoff, paper,
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
    bases=(Base("AP", "optional", options=("variance", "bias", "ap", "few", "interval")),
           Base("P", "required"),
           Base("R", "required", options=(RATIO_BIAS,)),
           Base("Rprec", options=("cut", RATIO_BIAS)),
           Base("nDCG", "optional", options=(RATIO_BIAS,)),
           Base("DCG", "optional"), Base("NumRel")),
    requires=("has_joint_probabilities",), estimands=("total",),
    compute=rows_of(PARTS), differences=differences_ht, parts=PARTS,
    options=(pick("variance", VARIANCES, "jackknife"), pick("bias", BIASES, "taylor"),
             pick("ap", ("ours", "paper"), "ours"), FEW_OPTION_POOLED,
             pick("interval", ("bias-aware", "normal"), "bias-aware"),
             pick("cut", ("floor", "round"), "floor"))))
