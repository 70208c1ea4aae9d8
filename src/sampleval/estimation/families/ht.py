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
paper's PC(r(i))), ``few`` (:func:`sampleval.estimation.result.few_relevant_variance`;
``assisted``: the difference estimator on cross-fitted completion rates, :func:`assisted_topics`) and
``interval`` (bias-aware, the default with taylor and taylor-jackknife: widened by the
jackknife's estimate of the bias the Taylor correction leaves, Armstrong & Kolesar 2020; or
normal); R@k's, Rprec's and nDCG's ``bias`` (taylor, the default, or none); Rprec's
``cut``. Intervals and rows: :mod:`sampleval.estimation.result`. The coverage, bias and rms
that chose these defaults, with the commands that measured them: docs/research/ht.md.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pandas as pd

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.corrections import (
    _per,
    ap_double_jackknife,
    ap_jackknife,
    ap_taylor_jackknife,
    taylor_bias,
)
from sampleval.estimation.engine.difference import Parts, topic_estimate
from sampleval.estimation.engine.estimands import average_precision
from sampleval.estimation.engine.replicates import (
    average_precision_jackknife,
    double_jackknife,
    stratified_average_precision,
    taylor_jackknife,
    taylor_jackknife_independent,
)
from sampleval.estimation.engine.units import FrameData, TopicData, Units, topic_datas
from sampleval.estimation.engine.unseen import SampleStrata
from sampleval.estimation.engine.values import ppi_values
from sampleval.estimation.engine.views import TopicView, relevance
from sampleval.estimation.family import Base, EstimatorFamily, register_family
from sampleval.estimation.options import RATIO_BIAS, pick
from sampleval.estimation.result import (
    FEW_OPTION_HT,
    TopicParts,
    corrected,
    estimated_rows,
    floored,
    shared_strata,
)
from sampleval.estimation.spec import EstimateSpec

BIASES = ("taylor", "taylor-jackknife", "jackknife", "none")
VARIANCES = ("jackknife", "jackknife-uncorrected", "linear")


def ht_topics(views: list[TopicView], sample: Sample) -> list[TopicData]:
    """Each topic's judged documents as the engine's ``ht`` units, every prediction 0."""
    return [ht_topic(view, sample, np.zeros(len(view.sample.docnos))) for view in views]


def ht_topic(view: TopicView, sample: Sample, predicted: np.ndarray) -> TopicData:
    """The topic's judged documents that a label or ``predicted`` (a value per frame
    document) makes count, as the engine's ``ht`` units, without the predictions' frame
    totals (:func:`~sampleval.estimation.engine.units.topic_datas`)."""
    nothing = np.zeros(0)
    frame = FrameData(Units("census", nothing.astype(np.int64), nothing), nothing,
                      np.zeros((view.n_runs, 0), dtype=np.int64))
    return topic_datas(view, sample, "ht", [predicted], [frame])[0]


def assisted_topics(views: list[TopicView], sample: Sample, level: float,
                    shared: SampleStrata | None = None) -> list[TopicData]:
    """Each topic's judged documents as the engine's ``ht`` units, every frame document
    predicted relevant with its cross-fitted completion rate (``shared.assisted_rates``,
    :func:`~sampleval.estimation.engine.unseen.cross_fitted_rates`, on the labels' scale at
    ``level``), with the predictions' frame totals: ``few=assisted``'s difference estimator
    (:mod:`sampleval.estimation.engine.difference` at lam = 1). ``shared``: the sample's
    strata (:func:`~sampleval.estimation.result.shared_strata`), made here if not given."""
    shared = SampleStrata(views, level) if shared is None else shared
    rates = shared.assisted_rates
    out = []
    for t, view in enumerate(views):
        p = rates[shared.offsets[t]:shared.offsets[t + 1]]
        out.append(topic_datas(view, sample, "ht", [np.where(p > 0, p + level - 1.0, 0.0)])[0])
    return out


def _assisted(spec: EstimateSpec) -> bool:
    """Whether ``spec`` is AP under ``few=assisted`` (:func:`assisted_topics`)."""
    if spec.base != "AP" or spec.option("few") != "assisted":
        return False
    if spec.option("ap") == "paper":
        raise UsageError(f"{spec.name}: few=assisted takes the engine's AP-hat (ap=ours), "
                         "not the paper's")
    return True


def topic_parts(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                spec: EstimateSpec, level: float,
                topics: list[TopicData] | None = None,
                shared: SampleStrata | None = None) -> TopicParts:
    """Per topic and run: the estimate, its variance and the estimated bias that widens
    its interval (AP's ``interval=bias-aware``; 0 elsewhere), each ``[topics, runs]``
    (AP's ``few`` floor is :mod:`sampleval.estimation.result`'s, applied at registration);
    ``topics``: :func:`ht_topics`, ``shared``: the sample's strata, if already made. Under
    ``few=assisted`` each topic's AP is the difference estimator with the completion model
    fitted on the other topics' folds (:func:`assisted_topics`): it reads the other topics'
    samples too, so a caller that re-estimates some topics alone (judging until confident's
    looks) gets predictions fitted on those topics only, not the numbers ``estimate``
    gives."""
    assisted = _assisted(spec)
    if assisted:
        topics = assisted_topics(views, sample, level, shared)
    topics = ht_topics(views, sample) if topics is None else topics
    if spec.base != "AP":
        return ppi_values(spec, topics, level, tuning="none", anticipated=False).parts()
    values = np.zeros((len(views), len(run_names)))
    variances, biases = np.zeros_like(values), np.zeros_like(values)
    for t, (view, data) in enumerate(zip(views, topics, strict=True)):
        values[t], variances[t], biases[t] = _topic_ap(view, sample, spec, level, data,
                                                       assisted=assisted)
    return TopicParts(values, variances, biases)


def differences_ht(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                   spec: EstimateSpec, level: float,
                   pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and pair (a, b) of run indices (``pairs`` ``[P, 2]``), the estimated
    difference ``spec``_a - ``spec``_b and its estimated variance, both ``[topics, P]``:
    the estimator applied to the difference of the two runs' weights from the one sample
    they share, with the variance of that difference (not of either run alone)."""
    assisted = _assisted(spec)
    topics = assisted_topics(views, sample, level) if assisted else ht_topics(views, sample)
    if spec.base != "AP":
        return ppi_values(spec, topics, level, tuning="none", anticipated=False,
                          pairs=pairs).differences(pairs)
    values = np.zeros((len(views), len(pairs)))
    variances = np.zeros_like(values)
    for t, (view, data) in enumerate(zip(views, topics, strict=True)):
        values[t], variances[t], _ = _topic_ap(view, sample, spec, level, data, pairs,
                                               assisted)
    return values, variances


class TopicEstimate(NamedTuple):
    """One topic's estimates, their variances and the estimated bias that widens their
    intervals (AP's ``interval=bias-aware``; 0 elsewhere)."""

    value: np.ndarray
    variance: np.ndarray
    bias: np.ndarray


def _topic_ap(view: TopicView, sample: Sample, spec: EstimateSpec, level: float,
              data: TopicData, pairs: np.ndarray | None = None,
              assisted: bool = False) -> TopicEstimate:
    """AP-hat of one topic for every run (``pairs``: every pair's difference) by its
    options: the value less the bias estimate of ``bias``, the variance of ``variance`` and
    the bias that widens the interval (``interval``). Each part comes from the engine
    (:mod:`~sampleval.estimation.engine.corrections`: the Taylor term, the jackknife, on
    stratified samples the taylor-jackknife) where it has it, and from
    :mod:`~sampleval.estimation.engine.replicates` for what only ``~ht`` offers: the paper's
    AP-hat (``ap=paper``), the double jackknife without strata, and the taylor-jackknife on
    designs with independent inclusions. ``assisted``: ``data``'s predictions at lam = 1 (the
    difference estimator, :func:`_assisted_lam`) on stratified samples."""
    paper, bias, var = spec.option("ap") == "paper", spec.option("bias"), spec.option("variance")
    aware = (pairs is None and spec.option("interval") == "bias-aware"
             and bias in ("taylor", "taylor-jackknife"))
    stratified = data.units.strata is not None
    n_runs = data.ranks.shape[0]
    lam = (_assisted_lam(spec, level, data) if assisted and stratified
           else np.zeros((2, n_runs)))

    @functools.cache
    def arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                          tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """The judged documents with y != 0 as the array-level replicates take them: y,
        pi, pi_ij, ranks and on stratified samples (stratum, N_h, n_h)."""
        judged = np.flatnonzero(view.sample.judged)
        y = relevance(view.sample.labels[judged], level)
        index = judged[y != 0]
        design = judged_design(sample, view.sample, index)
        strata = None
        if stratified:
            sizes, n_sampled = view.sample.strata()
            strata = (view.sample.stratum[index], sizes, n_sampled)
        return y[y != 0], design.pi, design.pi_joint, view.rank_of(index), strata

    @functools.cache
    def parts() -> Parts:
        return topic_estimate(spec, level, data)(lam)

    def plain() -> tuple[np.ndarray, np.ndarray]:  # AP-hat and its linearised variance
        if paper:
            y, pi, joint, ranks, _ = arrays()
            out = average_precision(y, pi, joint, ranks, spec.cutoff, True, False, pairs)
            return out.value, out.variance
        return _per(parts().value, pairs), data.units.forms([_per(linearised(), pairs)])[0, 0]

    def by_taylor() -> np.ndarray:  # AP-hat less the Taylor term
        if paper:
            y, pi, joint, ranks, _ = arrays()
            return _per(average_precision(y, pi, joint, ranks, spec.cutoff, True, True).value,
                        pairs)
        den = parts().den
        assert den is not None
        return _per(parts().value - taylor_bias(data.units, linearised(),
                                                den[0] - lam[1][:, None] * den[1]), pairs)

    def linearised() -> np.ndarray:  # u = u^y - lam u^f (the labels' alone at lam = 0)
        u_f = parts().u_f
        return parts().u_y - lam[0][:, None] * u_f[0] - lam[1][:, None] * u_f[1]

    @functools.cache
    def jackknife() -> tuple[np.ndarray, np.ndarray]:  # jackknife-corrected, its variance
        if paper:
            y, pi, joint, ranks, strata = arrays()
            out = (average_precision_jackknife(y, pi, joint, ranks, spec.cutoff, True, True,
                                               pairs) if strata is None
                   else stratified_average_precision(y, *strata, ranks, spec.cutoff, True,
                                                     True, pairs))
            return out.value, out.variance
        jack = ap_jackknife(spec, level, data, lam, pairs)
        return _per(jack.value, pairs), jack.variance

    @functools.cache
    def taylor_jack() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The Taylor-corrected AP-hat less the jackknife's estimate b of its remaining
        bias, the jackknife variance of the Taylor-corrected AP-hat, and b."""
        if stratified and not paper:
            out = ap_taylor_jackknife(spec, level, data, lam, pairs)
            return _per(out.value, pairs), out.variance, _per(out.remaining, pairs)
        y, pi, joint, ranks, strata = arrays()
        both = (taylor_jackknife(y, ranks, spec.cutoff, paper, strata, pairs)
                if strata is not None else
                taylor_jackknife_independent(y, ranks, spec.cutoff, paper, pi, joint, pairs))
        return both.value, both.variance, both.remaining

    if bias == "taylor-jackknife":
        value = taylor_jack()[0]
    elif bias == "taylor":
        value = (taylor_jack()[0] + taylor_jack()[2] if aware and var == "jackknife"
                 else by_taylor())
    elif bias == "jackknife":
        value = jackknife()[0]
    else:
        value = plain()[0]
    if var == "linear":
        variance = plain()[1]
    elif var == "jackknife-uncorrected" or bias == "none":
        variance = jackknife()[1]
    elif bias == "jackknife" and stratified and not paper:  # the double jackknife
        variance = ap_double_jackknife(spec, level, data, lam, pairs)
    elif bias == "jackknife":
        y, pi, joint, ranks, strata = arrays()
        variance = double_jackknife(y, ranks, spec.cutoff, paper, strata, pi, joint,
                                    pairs).variance
    else:
        variance = taylor_jack()[1]
    return TopicEstimate(value, variance, taylor_jack()[2] if aware else np.zeros_like(value))


def _assisted_lam(spec: EstimateSpec, level: float, data: TopicData) -> np.ndarray:
    """lam = 1 on the predictions (``[2, n_runs]``), 0 for a run where the difference
    estimate or a replicate of its stratified jackknife is not defined (R-hat below the
    relevant documents judged: the design-based estimate there, as ``~ppi`` does,
    :func:`~sampleval.estimation.engine.values.ppi_values`)."""
    lam = np.ones((2, data.ranks.shape[0]))
    lam[:, ~topic_estimate(spec, level, data)(lam).defined] = 0.0
    lam[:, ~ap_taylor_jackknife(spec, level, data, lam).possible] = 0.0
    return lam


def estimate_ht(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                specs: list[EstimateSpec], level: float, ci: float) -> pd.DataFrame:
    """The rows of every measure of ``specs``, each topic's units made once for all."""
    topics = ht_topics(views, sample)
    shared = shared_strata(views, level)  # the few terms' strata, built once for every AP
    return pd.concat([estimated_rows(run_names, views, spec, corrected(
        spec, views, level, topic_parts(run_names, views, sample, spec, level, topics,
                                        shared), shared), ci, level, shared) for spec in specs], ignore_index=True)


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
    compute=estimate_ht, differences=differences_ht, parts=PARTS,
    plain_bias=("jackknife", "none"),  # taylor and taylor-jackknife widen by what they leave
    options=(pick("variance", VARIANCES, "jackknife"), pick("bias", BIASES, "taylor"),
             pick("ap", ("ours", "paper"), "ours"), FEW_OPTION_HT,
             pick("interval", ("bias-aware", "normal"), "bias-aware"),
             pick("cut", ("floor", "round"), "floor"))))
