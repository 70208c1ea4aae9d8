"""The prediction-powered family ``~ppi`` and the engine's units, tuning and corrections:
machine predictions for every frame document, corrected by the judged sample's residuals
(``P@10~ppi``, ``AP~ppi`` ...).

A measure linear in the labels is a total over the topic's frame U, T = sum_{i in U} w_i y_i
(w_i the run's rank weight). With predictions f_i of every frame document, the difference
(model-assisted) estimator (Sarndal, Swensson & Wretman, *Model Assisted Survey Sampling*,
1992, ch. 6; "prediction-powered inference", Angelopoulos et al., Science 2023; for IR
measures Oosterhuis et al., KDD 2024) is

    T-hat(lam) = lam sum_{i in U} w_i f_i + sum_{k in S} W_k w_k (y_k - lam f_k),

over the sample's units S with weights W_k: in the ``ht`` form the judged documents with
W_k = 1/pi_k, in the ``draws`` form the n draws with W_k = 1/(n p_k(d_k)) (unbiased under
adaptive draw probabilities, :mod:`.hansen_hurwitz`). For any lam fixed before the sample,
E[T-hat(lam)] = T whatever the predictions: they only move the variance. Ratio measures
(AP, R@k, Rprec, nDCG) are ratios of such estimates; AP's numerator is a sum over pairs,
estimated with the pair weights W_kl (1/pi_kl, or a U-statistic over pairs of draws). With
predictions all 0 the ``ht`` form is ``~ht`` and the ``draws`` form ``~hh``
(tests/contracts/test_equivalences.py). :func:`sample_form` chooses the form by design (option
``form``).

Variance: each estimate is linearised (Taylor; Sarndal et al. 1992, ch. 5) into per-unit
values, u = u^y - lam u^f, with the design's bilinear form (:class:`Units`); the linear
measures take by default the anticipated variance (:mod:`.anticipated`, ``variance``).
Power tuning (PPI++: Angelopoulos, Duchi & Zrnic, arXiv 2311.01453, 2023): lam minimises the
variance, lam = G^-1 c over the predictions' forms, summed over the runs; cross-fitted over
the other topics for the linear measures, plug-in for the ratios (``tuning``; :func:`tuned`),
clipped to [0, 1]. A ratio whose denominator estimate is impossible (below what the sample
shows) takes lam = 0 for that topic and run. Ratio bias (``bias`` for AP, ``correction`` for
R@k, Rprec and nDCG): taylor (the first-order term, Cochran 1977, ch. 6), jackknife
(stratified, (1 - pi)-weighted or over the draws; Quenouille 1956, Jones 1974),
taylor-jackknife (stratified only), design (AP's default: taylor-jackknife on stratified
samples, jackknife over draws, taylor elsewhere), none; ``interval=bias-aware`` widens AP's
interval by the estimated remaining bias; ``few`` floors AP's variance
(:mod:`sampleval.estimation.result`). Every option value, the variance of a difference of
two runs (:func:`ppi_differences`, for ``compare``) and the per-topic parts
(:func:`ppi_parts`) come from :func:`ppi_values`.

Imputed share: 0 (the predictions enter only through a correction whose expectation is 0).
Labels and predictions are mapped alike (``base.relevance`` for binary measures, the value
as gain for DCG and nDCG); a frame document without a prediction predicts 0. The
measurements behind every default, with their commands: docs/research/ppi.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.estimation.engine.anticipated import (
    Population,
    anticipated_variance,
    draws_population,
    label_model,
    population,
)
from sampleval.estimation.engine.estimands import _contrast, _delta, _run_docs, rank_cut
from sampleval.estimation.engine.kernels import stratum_spreads
from sampleval.estimation.engine.replicates import stratum_jackknife, stratum_rows
from sampleval.estimation.engine.views import (
    TopicView,
    gain,
    rank_coefficients,
    relevance,
    topic_draws,
)
from sampleval.estimation.families.ht import TAKE_CORRECTION
from sampleval.estimation.families.importance import ideal_dcg
from sampleval.estimation.family import Base, EstimatorFamily, register_family
from sampleval.estimation.result import FEW_OPTION, TopicParts, corrected, rows
from sampleval.estimation.spec import EstimateSpec, draws_reach_every_document

FORMS = ("ht", "draws")
TUNINGS = ("by-measure", "cross-fit", "plug-in", "none")
GAPS = ("jackknife", "taylor")  # the two first-order corrections a draws interval compares
CORRECTED = ("AP", *TAKE_CORRECTION)  # the ratios corrected (``bias``, ``correction``)
_GRADED = ("DCG", "nDCG")


@dataclass(frozen=True)
class Units:
    """What a topic's estimate sums over: the judged documents (``ht``), the draws
    (``draws``) or the frame's documents all weighing 1 (``census``, for the predictions'
    frame totals). ``index``: each unit's frame position; ``weight``: W_k; ``pair``: W_kl
    (``[m, m]``, diagonal unused; None: ``factor``'s, or 1 for every pair); ``factor``: a_k
    with W_kl = a_k a_l for units of two different documents (draws; two draws of one
    document are never a pair of AP's sum, which takes documents ranked strictly above);
    ``delta``: the HT variance weights 1 - pi_k pi_l / pi_kl (``ht`` only); ``strata``: on a
    stratified sample (``ht``), each unit's stratum, the strata's sizes N_h and numbers of
    judged documents n_h (what the stratified jackknife re-weights)."""

    kind: str
    index: np.ndarray
    weight: np.ndarray
    pair: np.ndarray | None = None
    delta: np.ndarray | None = None
    factor: np.ndarray | None = None
    strata: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def forms(self, vectors: list[np.ndarray]) -> np.ndarray:
        """``[k, k, n_runs]``: the design's variance form of every pair of the per-unit values
        ``vectors`` (each ``[n_runs, m]``): Var(a) on the diagonal, Cov(a, b) off it."""
        stacked = np.stack(vectors)
        k, n_runs, m = stacked.shape
        if self.kind == "draws":
            if m < 2:
                return np.full((k, k, n_runs), np.nan)
            centred = stacked - stacked.mean(axis=-1, keepdims=True)
            return m * np.einsum("irm,jrm->ijr", centred, centred) / (m - 1)
        if self.kind != "ht" or self.delta is None:
            return np.zeros((k, k, n_runs))
        used = np.flatnonzero((stacked != 0).any(axis=(0, 1)))  # the rest adds nothing
        if not len(used):
            return np.zeros((k, k, n_runs))
        x = np.ascontiguousarray(stacked[..., used])
        delta = self.delta[np.ix_(used, used)]
        applied = (x.reshape(k * n_runs, len(used)) @ delta).reshape(x.shape)
        # sum_m applied[i, r, m] x[j, r, m], as one batched matmul over the runs
        return np.matmul(applied.transpose(1, 0, 2), x.transpose(1, 2, 0)).transpose(1, 2, 0)


@dataclass(frozen=True)
class FrameData:
    """The frame documents with a non-zero prediction (``units``, a census), their
    predictions and ``[n_runs, m]`` ranks, and the predictions' frame totals once computed
    (``totals``, by measure: they do not depend on the sample, so a simulation that draws
    many samples from one frame computes them once)."""

    units: Units
    predicted: np.ndarray
    ranks: np.ndarray
    totals: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class TopicData:
    """One topic, ready for any measure: the sample's units with their raw labels and
    predictions, ``[n_runs, m]`` ranks (0: not retrieved) and the first unit of each distinct
    document (``distinct``), and the predictions' frame (:class:`FrameData`). ``geometry``
    caches what AP's pair sums take from the units and ranks alone, ``label_sums`` the
    labels' own pair sums (both shared by every predictor estimated on the same units and
    labels); ``view``, ``sample`` (its draw probabilities) and ``frame_predicted`` (every
    frame document's prediction): what the anticipated variance reads (:meth:`population`)."""

    units: Units
    labels: np.ndarray
    predicted: np.ndarray
    ranks: np.ndarray
    distinct: np.ndarray
    frame: FrameData
    view: TopicView
    sample: Sample
    frame_predicted: np.ndarray
    geometry: dict[int | None, tuple[np.ndarray, ...]] = field(default_factory=dict,
                                                              compare=False)
    label_sums: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, compare=False)
    shared_population: list[Population | None] = field(default_factory=list, compare=False)

    def population(self) -> Population | None:
        """The topic's :class:`~.anticipated.Population`: on a stratified sample in the
        ``ht`` form, or in the ``draws`` form where the sample records every frame
        document's p-bar (None elsewhere); made on first use and shared by the
        predictors (``shared_population`` holds it once made)."""
        if not self.shared_population:
            self.shared_population.append(
                population(self.view) if self.units.strata is not None
                else draws_population(self.view, self.sample) if self.units.kind == "draws"
                else None)
        return self.shared_population[0]


class PPIResult(NamedTuple):
    """Per-topic estimates and their variances (``[topics, n_runs]``), the lam each used
    (``[topics, 2, n_runs]``: in the numerator, in the denominator) and the estimates
    before the ratio-bias correction (``uncorrected``: ``bias=none``'s, with the same lam
    and variance; equal to ``value`` where no correction was asked for); with
    ``bias=taylor-jackknife``, ``remaining``: the jackknife's estimate b of the bias the
    Taylor-corrected estimate keeps (``[topics, n_runs]``; ``bias=taylor``'s estimate is
    ``value + remaining``, :func:`ap_taylor_jackknife`); over draws with a bias-aware
    interval, the jackknife-corrected estimate less the Taylor-corrected one; else None;
    ``pair_variance`` (with ``pairs``): the variance of each pair's difference of estimates,
    ``[topics, P]``;
    ``checked``: where the check on the sample gave the topic and run lam = 0 (an
    impossible ratio or jackknife replicate; ``[topics, n_runs]``)."""

    value: np.ndarray
    variance: np.ndarray
    lam: np.ndarray
    uncorrected: np.ndarray
    checked: np.ndarray
    remaining: np.ndarray | None = None  # what widens a bias-aware interval
    pair_variance: np.ndarray | None = None  # with pairs: each difference's [topics, P]


# -- units of each form ---------------------------------------------------------------------

LINEAR = ("NumRel", "P", "DCG")


def sample_form(sample: Sample, base: str | None = None) -> str:
    """The form ``base`` (a measure's base name; None: a linear one) takes on ``sample`` by
    default: ``ht`` for every design with inclusion probabilities, except that on
    with-replacement samples drawn without a uniform share (``active:uniform=0``, the
    paper's active sampling) only the linear measures take it, so that lam = 0 is ``~ht``'s
    estimate there (their default); the ratio measures take ``draws`` there, as do
    importance samples, with-replacement samples with draws but no rounds, and every
    measure on active samples with a share (``active``'s default).

    Why, on active samples without a share: the per-draw form stays unbiased under adaptive
    draws, where ``~ht``'s is not (provided every round can draw every document: the
    paper's ``floor=0`` lets a later round give a few documents probability 0), but for P@10
    its rms error is 1.2-3.9 times ``~ht``'s at 5% with the poorer predictors (draws spread
    over the whole pool; power tuning cannot do better than lam = 0, the per-draw estimate; 200
    trials: 93-99% of the runs' mean P@10 within 3 standard errors of the truth, against
    0-42% for the ``ht`` form; with ``active``'s ``floor=0.05`` 98-100% at 0.5-1.5 times
    ``~ht``'s rms), while for AP, whose ``~ht`` estimate is biased there by +0.02-0.03, the
    per-draw form's rms is 0.5-0.7 of ``~ht``'s (docs/predictions.md, "Active sampling").
    R, Rprec and nDCG are ratios with the same adaptive denominator as AP and follow it.
    With predictions all 0 (``~hh``, 200 trials) that holds for R@k and Rprec, not for
    nDCG@10, whose per-draw rms is 1.5-1.8 times ``~ht``'s (docs/predictions.md, "Active
    sampling: AP~hh and the defaults"); not measured with predictions.

    Active samples drawn with a uniform share (``active:uniform=a``, a > 0, as the Sample's
    metadata records; ``active``'s default is 0.2) take ``draws`` for every measure, as
    ``~hh`` is there the default of every measure: each draw can reach every pooled
    document there, which the per-draw form's unbiasedness needs, and its rms is no longer
    the price (``uniform=0.2``, 200 trials: P@10~ppi's mean within 3 standard errors of the
    truth for 98-100% of the runs at 5% and 10% with every predictor, against 1-49% for the
    ``ht`` form; rms 0.53-0.99 of ``P@10~ht``'s; docs/predictions.md, "A uniform
    share")."""
    if not has_inclusion(sample):
        return "draws"
    if sample.design.has_draws and (  # past has_inclusion: with-replacement draws
            draws_reach_every_document(sample) or (base is not None and base not in LINEAR)):
        return "draws"
    return "ht"


def has_inclusion(sample: Sample) -> bool:
    """Whether ``sample`` has the inclusion probabilities the ``ht`` form needs: every
    design but importance draws and with-replacement draws without their rounds."""
    return sample.design.inclusion_known(sample)


def chosen_form(sample: Sample, spec: EstimateSpec) -> str:
    """The form ``spec``'s ``form`` option asks for on ``sample``: ``design`` as
    :func:`sample_form` says; ``draws`` wherever the sample records its draws and ``ht``
    wherever it has inclusion probabilities, each the other form on a sample that lacks what
    it needs (a census has no draws, importance draws no inclusion probabilities), so that
    one request applies to samples of every design."""
    option = spec.option("form")
    default = sample_form(sample, spec.base)
    if option == "draws" and sample.draws is not None:
        return "draws"
    if option == "ht" and has_inclusion(sample):
        return "ht"
    return default


def topic_data(view: TopicView, sample: Sample, form: str) -> TopicData:
    """The units of ``view``'s topic in ``form`` (``ht`` or ``draws``) and its frame totals."""
    if view.predictions is None:
        raise UsageError("the prediction-powered estimators need predictions")
    return topic_datas(view, sample, form, [view.predictions])[0]


def frame_data(view: TopicView, predicted: np.ndarray) -> FrameData:
    """The frame documents of ``view``'s topic that ``predicted`` (one value per frame
    document) predicts above 0."""
    docs = np.flatnonzero(predicted > 0)
    return FrameData(Units("census", docs, np.ones(len(docs))), predicted[docs],
                     view.rank_of(docs))


def topic_datas(view: TopicView, sample: Sample, form: str, predictions: list[np.ndarray],
                frames: list[FrameData] | None = None) -> list[TopicData]:
    """:func:`topic_data` for several predictors at once (each of ``predictions`` a value per
    frame document; ``frames`` their :func:`frame_data`, made here when not given): one set
    of units (in the ``ht`` form the judged documents that a label or any of the predictions
    makes count), shared with AP's pair geometry, so that every predictor is estimated on the
    same units at the cost of one."""
    if form == "draws":
        units = _draw_units(sample, view)
    elif form == "ht":
        judged = np.flatnonzero(view.sample.judged)
        counts = view.sample.labels[judged] > 0
        for predicted in predictions:
            counts |= predicted[judged] > 0
        design = judged_design(sample, view.sample, judged[counts])  # the rest adds nothing
        pair = np.divide(1.0, design.pi_joint, out=np.zeros(design.pi_joint.shape),
                         where=design.pi_joint > 0)
        strata = None
        if sample.design.has_strata:
            sizes, n_sampled = view.sample.strata()
            strata = (view.sample.stratum[design.index], sizes, n_sampled)
        units = Units("ht", design.index, 1.0 / design.pi, pair,
                      _delta(design.pi, design.pi_joint), strata=strata)
    else:
        raise UsageError(f"unknown form {form!r} (one of {', '.join(FORMS)})")
    if frames is None:
        frames = [frame_data(view, predicted) for predicted in predictions]
    distinct = np.unique(units.index, return_index=True)[1]  # a document drawn twice: once
    labels, ranks = view.sample.labels[units.index], view.rank_of(units.index)
    geometry: dict[int | None, tuple[np.ndarray, ...]] = {}
    label_sums: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}
    shared: list[Population | None] = []
    return [TopicData(units, labels, predicted[units.index], ranks, distinct, frame, view,
                      sample, predicted, geometry, label_sums, shared)
            for predicted, frame in zip(predictions, frames, strict=True)]


def _draw_units(sample: Sample, view: TopicView) -> Units:
    """The draws as units: W_k = 1/(n p_k); W_kl = 1/(n (n-1) p_k p_l) = a_k a_l for two
    draws of different documents (0 for two draws of one document, which share a rank)."""
    if sample.draws is None:
        raise UsageError("the per-draw form needs the sample's draws with their probabilities")
    x, probs = topic_draws(sample, view)
    n = len(x)
    return Units("draws", x, 1.0 / (n * probs),
                 factor=1.0 / (np.sqrt(max(n * (n - 1), 1)) * probs))


# -- sums over units --------------------------------------------------------------------------

def _linear(coef: np.ndarray | float, values: np.ndarray, units: Units
            ) -> tuple[np.ndarray, np.ndarray]:
    """sum_k W_k coef_k v_k per run, and each unit's share (``[n_runs, m]``)."""
    share = coef * (units.weight * values)
    return share.sum(axis=-1), share


def _pair_sums(values: np.ndarray, diagonal: np.ndarray, ranks: np.ndarray, units: Units,
               cutoff: int | None, geometry: dict[int | None, tuple[np.ndarray, ...]] | None
               = None) -> tuple[np.ndarray, np.ndarray]:
    """AP's numerator sum_{k, l} W_kl x_kl, x_kl = v_k v_l 1{rank_l < rank_k}/rank_k and
    x_kk = diagonal_k/rank_k (within ``cutoff``), for each of the ``[c, m]`` ``values``
    (``[c, n_runs]``), and each unit's linearised value W_kk x_kk + sum_{l != k} W_kl (x_kl +
    x_lk) (``[c, n_runs, m]``; zeros for a census). ``geometry``: a cache, by cutoff, of what
    comes from ``ranks`` and ``units`` alone (for callers that sum other values over the
    same units and ranks)."""
    cached = None if geometry is None else geometry.get(cutoff)
    if cached is None:
        cached = _pair_geometry(ranks, units, cutoff)
        if geometry is not None:
            geometry[cutoff] = cached
    doc, real, inverse, own_weight, arranged, *groups = cached
    v = np.where(real, values[:, doc], 0.0)  # [c, n_runs, K]
    own = own_weight * diagonal[:, doc]
    shares = np.zeros((len(values), *ranks.shape))
    if units.pair is None and units.factor is None:  # a census: every pair weighs 1
        order = arranged[None]
        ranked = np.take_along_axis(v, order, axis=2)
        above = np.empty_like(ranked)
        np.put_along_axis(above, order, np.cumsum(ranked, axis=2) - ranked, axis=2)
        return (own + v * inverse * above).sum(axis=2), shares
    if units.factor is not None:  # W_kl = a_k a_l: sums over the units ranked above, below
        start, end = groups
        a = np.where(real, units.factor[doc], 0.0)
        off = v * inverse * a * _ranked_sums(a * v, arranged, start, end, above=True)
        below = a * _ranked_sums(a * v * inverse, arranged, start, end, above=False)
    else:
        weights = arranged
        off = v * inverse * np.moveaxis(weights @ np.moveaxis(v, 0, -1), -1, 0)
        below = np.moveaxis(np.swapaxes(weights, 1, 2) @ np.moveaxis(v * inverse, 0, -1),
                            -1, 0)
    for j in range(len(values)):
        np.put_along_axis(shares[j], doc, np.where(real, own[j] + off[j] + v[j] * below[j],
                                                   0.0), axis=1)
    return (own + off).sum(axis=2), shares


def _pair_geometry(ranks: np.ndarray, units: Units, cutoff: int | None
                   ) -> tuple[np.ndarray, ...]:
    """What :func:`_pair_sums` takes from the ranks and units: each run's documents within
    the cutoff (``[n_runs, K]`` unit index), which are real (not padding), 1/rank, W_kk/rank,
    and the pair weights W_kl of l ranked above k (``[n_runs, K, K]``); or, where the pair
    weights factor (a census, draws), each run's documents in rank order, and for draws the
    first and last position in that order of each rank's group (the draws of one
    document)."""
    docs = _run_docs(ranks, cutoff)
    rank = docs.rank[..., 0]
    real = rank > 0
    inverse = np.divide(1.0, rank, out=np.zeros(rank.shape), where=real)
    own_weight = np.where(real, units.weight[docs.doc], 0.0) * inverse
    if units.pair is None:
        padded = np.where(real, rank, np.iinfo(np.int64).max)
        order = np.argsort(padded, axis=1, kind="stable")
        if units.factor is None:
            return docs.doc, real, inverse, own_weight, order
        ranked = np.take_along_axis(padded, order, axis=1)
        positions = np.broadcast_to(np.arange(ranked.shape[1]), ranked.shape)
        first = np.ones(ranked.shape, dtype=bool)
        first[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
        last = np.ones(ranked.shape, dtype=bool)
        last[:, :-1] = first[:, 1:]
        start = np.maximum.accumulate(np.where(first, positions, 0), axis=1)
        end = np.minimum.accumulate(np.where(last, positions, ranked.shape[1])[:, ::-1],
                                    axis=1)[:, ::-1]
        return docs.doc, real, inverse, own_weight, order, start, end
    weights = units.pair[docs.doc[:, :, None], docs.doc[:, None, :]]
    upper = real[:, None, :] & (rank[:, None, :] < rank[:, :, None])  # [r, k, l]: l above k
    return docs.doc, real, inverse, own_weight, np.where(upper, weights, 0.0)


def _ranked_sums(values: np.ndarray, order: np.ndarray, start: np.ndarray, end: np.ndarray,
                 above: bool) -> np.ndarray:
    """For each run's documents (``values [c, n_runs, K]``): the sum of ``values`` over the
    documents ranked strictly above (``above``) or strictly below, through cumulative sums
    in rank order (``order``; ``start``, ``end``: the first and last position of each
    position's rank in that order, so that draws of one document, which share a rank, are
    never each other's pair)."""
    cumulative = np.cumsum(np.take_along_axis(values, order[None], axis=2), axis=2)
    if above:
        ranked = np.where(start > 0, np.take_along_axis(
            cumulative, np.maximum(start - 1, 0)[None], axis=2), 0.0)
    else:
        ranked = cumulative[..., -1:] - np.take_along_axis(cumulative, end[None], axis=2)
    out = np.empty_like(ranked)
    np.put_along_axis(out, np.broadcast_to(order[None], ranked.shape), ranked, axis=2)
    return out


class Parts(NamedTuple):
    """One topic's estimate per run; the linearised per-unit values of the labels' part
    (``u_y``, ``[n_runs, m]``) and of the predictions' parts in the numerator and in the
    denominator (``u_f``, ``[2, n_runs, m]``; zero in the denominator for linear measures):
    the variance is form(u_y - lam_N u_f[0] - lam_R u_f[1]); and whether the estimate is
    defined (a ratio's denominator estimate is positive and not below what the sample
    already shows)."""

    value: np.ndarray
    u_y: np.ndarray
    u_f: np.ndarray
    defined: np.ndarray
    den: np.ndarray | None = None  # a ratio's R per-unit values over R: labels', predictions'


def _ratio(numerator: np.ndarray, denominator: np.ndarray, num_y: np.ndarray,
           num_f: np.ndarray, den_y: np.ndarray, den_f: np.ndarray,
           possible: np.ndarray) -> Parts:
    """Q = N/R per run (0 where R <= 0) and the linearised u_y = (iota^N_y - Q iota^R_y)/R,
    u_f = (iota^N_f, -Q iota^R_f)/R; defined where R is positive and not below its known
    lower bound (``possible``), whatever Q (module docstring: a Q outside [0, 1] is kept)."""
    ok = denominator > 0
    q = np.divide(numerator, denominator, out=np.zeros(numerator.shape), where=ok)
    scale = np.where(ok, 1.0 / np.where(ok, denominator, 1.0), 0.0)[:, None]
    u_f = np.stack(np.broadcast_arrays(num_f * scale, -q[:, None] * den_f * scale))
    return Parts(q, (num_y - q[:, None] * den_y) * scale, u_f, ok & possible,
                 np.stack(np.broadcast_arrays(den_y * scale, den_f * scale)))


# -- the measures -------------------------------------------------------------------------------

Estimate = Callable[[np.ndarray], Parts]


def topic_estimate(spec: EstimateSpec, level: float, data: TopicData) -> Estimate:
    """The estimate of ``spec`` for every run of one topic as a function of lam
    (``[2, n_runs]``: the predictions' coefficients in the numerator and in the denominator
    of a ratio; a linear measure uses the first), with its linearised per-unit values
    (:class:`Parts`). The sums that do not depend on lam are made once, here."""
    graded = spec.base in _GRADED
    value: Callable[[np.ndarray], np.ndarray] = (
        gain if graded else (lambda v: relevance(v, level)))
    y, f, frame_f = value(data.labels), value(data.predicted), value(data.frame.predicted)
    units, ranks, frame_ranks, cut = data.units, data.ranks, data.frame.ranks, spec.cutoff
    n_runs = ranks.shape[0]

    def frame_total(name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """A total of the predictions over the frame, made once per frame and measure."""
        key = (name, spec.base, cut, level)
        if key not in data.frame.totals:
            data.frame.totals[key] = compute()
        return data.frame.totals[key]

    if spec.base in LINEAR:
        coef = rank_coefficients(spec.base, ranks, cut)
        total_y, share_y = _linear(coef, y, units)
        total_f, share_f = _linear(coef, f, units)
        frame_linear = frame_total("linear", lambda: (
            rank_coefficients(spec.base, frame_ranks, cut) * frame_f).sum(axis=-1))
        u_f = np.stack([share_f, np.zeros(share_f.shape)])
        defined = np.ones(n_runs, dtype=bool)
        return lambda lam: Parts(total_y - lam[0] * (total_f - frame_linear), share_y, u_f,
                                 defined)
    if spec.base == "nDCG":
        return _ndcg(y, f, frame_f, data, cut)
    r_y, den_y = _linear(1.0, y, units)  # R: the same for every run
    r_f, den_f = _linear(1.0, f, units)
    frame_r = frame_f.sum()
    found = y[data.distinct].sum()  # the relevant documents judged: R is at least that
    if spec.base == "AP":
        key = ("AP", cut, level)
        if key not in data.label_sums:  # the same for every predictor
            sums, shares = _pair_sums(y[None], (y * y)[None], ranks, units, cut, data.geometry)
            data.label_sums[key] = (sums[0], shares[0])
        n_y, num_y = data.label_sums[key]
        (n_f,), (num_f,) = _pair_sums(f[None], f[None], ranks, units, cut, data.geometry)
        frame_n = _frame_pairs(data, frame_f, cut, level)
    elif spec.base == "R":
        top = (ranks > 0) & (ranks <= cut)
        (n_y, num_y), (n_f, num_f) = _linear(top, y, units), _linear(top, f, units)
        frame_n = frame_total("top", lambda: (
            ((frame_ranks > 0) & (frame_ranks <= cut)) * frame_f).sum(axis=-1))

    def at(lam: np.ndarray) -> Parts:
        r_hat = r_y - lam[1] * (r_f - frame_r)
        if spec.base == "Rprec":  # the relevant retrieved within k = floor(R-hat [+ 0.5])
            k = rank_cut(r_hat + (0.5 if spec.option("cut") == "round" else 0.0))[:, None]
            top = (ranks > 0) & (ranks <= k)
            (n_y_, num_y_), (n_f_, num_f_) = _linear(top, y, units), _linear(top, f, units)
            frame_n_ = (((frame_ranks > 0) & (frame_ranks <= k)) * frame_f).sum(axis=-1)
        else:
            n_y_, num_y_, n_f_, num_f_, frame_n_ = n_y, num_y, n_f, num_f, frame_n
        return _ratio(n_y_ - lam[0] * (n_f_ - frame_n_), r_hat, num_y_, num_f_, den_y, den_f,
                      r_hat >= found - 1e-9)
    return at


def _frame_pairs(data: TopicData, frame_f: np.ndarray, cut: int | None, level: float
                 ) -> np.ndarray:
    """The predictions' pair sum over the frame (AP's predicted numerator, ``[n_runs]``),
    made once per frame, cutoff and level."""
    key = ("pairs", "AP", cut, level)
    if key not in data.frame.totals:
        data.frame.totals[key] = _pair_sums(frame_f[None], frame_f[None], data.frame.ranks,
                                            data.frame.units, cut)[0][0]
    return data.frame.totals[key]


def _ndcg(y: np.ndarray, f: np.ndarray, frame_f: np.ndarray, data: TopicData,
          cutoff: int | None) -> Estimate:
    """nDCG = DCG-hat / IDCG(rounded N-hat_g): each grade's count a difference estimate, the
    predicted indicator of grade g linear in f between integer grades."""
    units = data.units
    coef = rank_coefficients("DCG", data.ranks, cutoff)
    d_y, num_y = _linear(coef, y, units)
    d_f, num_f = _linear(coef, f, units)
    frame_d = (rank_coefficients("DCG", data.frame.ranks, cutoff) * frame_f).sum(axis=-1)
    top = float(np.ceil(max(f.max(initial=0.0), frame_f.max(initial=0.0))))
    grades = np.union1d(y[y > 0], np.arange(1.0, top + 1.0))[::-1]  # decreasing
    is_grade = (y[None, :] == grades[:, None]).astype(np.float64)  # [G, m]
    share = _grade_shares(f, grades)
    count_y = (is_grade * units.weight).sum(axis=1)[:, None]
    count_f = ((share * units.weight).sum(axis=1) - _grade_shares(frame_f, grades).sum(axis=1)
               )[:, None]
    found = is_grade[:, data.distinct].sum(axis=1)[:, None]  # each grade judged so far
    n_runs = data.ranks.shape[0]

    def at(lam: np.ndarray) -> Parts:
        counts = count_y - lam[1][None, :] * count_f  # [G, n_runs]
        possible = (counts >= found - 1e-9).all(axis=0)
        counts = np.maximum(np.floor(counts + 0.5), 0.0)  # rounded as sample_eval rounds
        if len(grades):
            ideal, slope = ideal_dcg(grades, counts, cutoff)  # [n_runs], [G, n_runs]
        else:
            ideal, slope = np.zeros(n_runs), np.zeros((0, n_runs))
        den_y = (slope.T @ is_grade) * units.weight
        den_f = (slope.T @ share) * units.weight
        return _ratio(d_y - lam[0] * (d_f - frame_d), ideal, num_y, num_f, den_y, den_f,
                      possible)
    return at


def _grade_shares(values: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """``[G, n]``: how much of grade g each value predicts, linear between integer grades
    (1.3: 0.7 of grade 1, 0.3 of grade 2; a value below 1 that share of grade 1; above the
    top grade, all of it). Only integer grades receive shares."""
    top = grades.max(initial=0.0)
    clipped = np.minimum(values, top)
    low = np.floor(clipped)
    frac = clipped - low
    return ((grades[:, None] == low[None, :]) * (1.0 - frac)
            + (grades[:, None] == low[None, :] + 1.0) * frac)


# -- power tuning and the family ------------------------------------------------------------------

def predictions_alone(spec: EstimateSpec, level: float, data: TopicData) -> np.ndarray:
    """The measure of the predictions alone, with no sample (every label replaced by its
    prediction; biased wherever they are): ``[n_runs]``, for contrast in experiments."""
    blind = replace(data, labels=data.predicted, label_sums={})
    return topic_estimate(spec, level, blind)(np.ones((2, data.ranks.shape[0]))).value


def ppi_values(spec: EstimateSpec, topics: list[TopicData], level: float,
               tuning: str = "by-measure", bias: str | None = None,
               anticipated: bool | None = None, pairs: np.ndarray | None = None
               ) -> PPIResult:
    """Per-topic estimates of ``spec`` and their variances for every run, with lam tuned as
    ``tuning`` says (``by-measure``, ``cross-fit``, ``plug-in``, ``none``; the module
    docstring);
    ``bias`` (None: AP's ``bias`` option, ``design`` resolved, or R@k's, Rprec's and nDCG's
    ``correction``, by :func:`design_bias`; ``none`` for the other measures): ``taylor``, a
    ratio less its estimated first-order bias (:func:`taylor_bias`), ``jackknife``,
    ``taylor-jackknife`` (AP). ``remaining``
    holds the bias estimate that widens a bias-aware interval: taylor-jackknife's b, or
    over draws (AP with ``bias`` jackknife or taylor and ``interval=bias-aware``) the
    jackknife's estimate less the Taylor-corrected one. ``anticipated``: whether a linear
    measure takes the anticipated variance (None: as its ``variance`` option says).
    ``pairs`` (``[P, 2]`` run indices): also the variance of each pair's difference, the same
    variance estimator applied to the difference of the two runs' linearised values (or
    replicates, or anticipated residuals) at each run's final lam."""
    if bias is None:
        bias = (design_bias(spec, topics[0].units) if spec.base in CORRECTED and topics
                else "none")
    if tuning not in TUNINGS:
        raise UsageError(f"unknown tuning {tuning!r} (one of {', '.join(TUNINGS)})")
    if tuning == "by-measure":
        tuning = by_measure(spec.base)
    n_runs = topics[0].ranks.shape[0] if topics else 0
    estimates = [topic_estimate(spec, level, data) for data in topics]
    lam = np.ones((len(topics), 2, n_runs))
    if tuning != "none":
        gram = np.zeros((len(topics), 2, 2))
        cross = np.zeros((len(topics), 2))
        for t, (data, at) in enumerate(zip(topics, estimates, strict=True)):
            parts = at(np.zeros((2, n_runs)))  # linearised where the predictions play no part
            forms = np.nan_to_num(data.units.forms([parts.u_y, parts.u_f[0], parts.u_f[1]]))
            cross[t] = forms[0, 1:].sum(axis=-1)  # summed over the runs
            gram[t] = forms[1:, 1:].sum(axis=-1)
        lam[:] = tuned(gram, cross, tuning)[:, :, None]
    values, variances = np.zeros((len(topics), n_runs)), np.zeros((len(topics), n_runs))
    corrected = np.zeros((len(topics), n_runs))
    gap = (spec.base == "AP" and bias in GAPS and spec.option("interval") == "bias-aware"
           and bool(topics) and topics[0].units.kind == "draws")
    remaining = (np.zeros((len(topics), n_runs)) if bias == "taylor-jackknife" or gap
                 else None)
    checked = np.zeros((len(topics), n_runs), dtype=bool)
    pair_variance = None if pairs is None else np.zeros((len(topics), len(pairs)))
    for t, (data, at) in enumerate(zip(topics, estimates, strict=True)):
        parts = at(lam[t])
        if not parts.defined.all():  # the correction went astray: ~ht's estimate there
            lam[t] = np.where(parts.defined, lam[t], 0.0)
            checked[t] = ~parts.defined
            parts = at(lam[t])
        one = _corrections(spec, level, data, lam[t], parts, bias, gap)
        if not one.possible.all():  # a jackknife replicate went astray: lam = 0 there too
            lam[t] = np.where(one.possible, lam[t], 0.0)
            checked[t] |= ~one.possible
            parts = at(lam[t])
            one = _corrections(spec, level, data, lam[t], parts, bias, gap)
        values[t], corrected[t], variances[t] = parts.value, one.value, one.variance
        if pair_variance is not None and pairs is not None:
            pair_variance[t] = _pair_variance(spec, level, data, lam[t], parts, bias, pairs)
        if remaining is not None:
            remaining[t] = one.remaining
    if takes_anticipated(spec) if anticipated is None else anticipated:
        variances = anticipated_variances(spec, level, topics, lam[:, 0], variances)
        if pair_variance is not None:
            pair_variance = anticipated_variances(spec, level, topics, lam[:, 0],
                                                  pair_variance, pairs)
    return PPIResult(corrected, variances, lam, values, checked, remaining, pair_variance)


def by_measure(base: str) -> str:
    """``tuning=by-measure``, the default: ``cross-fit`` for the linear measures (exactly
    unbiased), ``plug-in`` for the ratios (not exactly unbiased anyway; the module
    docstring, "Power tuning", says why with the figures)."""
    return "cross-fit" if base in LINEAR else "plug-in"


def takes_anticipated(spec: EstimateSpec) -> bool:
    """Whether ``spec`` asks for the anticipated variance: a linear measure with
    ``variance=anticipated`` (the default)."""
    return spec.base in LINEAR and spec.option("variance") == "anticipated"


def anticipated_variances(spec: EstimateSpec, level: float, topics: list[TopicData],
                          lam: np.ndarray, design: np.ndarray,
                          pairs: np.ndarray | None = None) -> np.ndarray:
    """Each topic's anticipated variance at its ``lam`` (``[topics, n_runs]``) under the
    relevance model learnt from the judged documents of every topic whose design it can
    anticipate (:mod:`.anticipated`: a stratified sample, or draws with every frame
    document's p-bar recorded); the ``design`` variances of the other topics, and of all
    where no model can be fitted; with ``pairs``, of each pair's difference
    (``[topics, P]``)."""
    graded = spec.base in _GRADED
    known = [(t, pop) for t, pop in enumerate(data.population() for data in topics)
             if pop is not None]
    predicted = [topics[t].frame_predicted[pop.docs] for t, pop in known]
    predicted = [gain(f) if graded else relevance(f, level) for f in predicted]
    model = label_model([pop for _, pop in known], predicted, level, graded)
    if model is None:
        return design
    out = design.copy()
    for (t, pop), f in zip(known, predicted, strict=True):
        out[t] = anticipated_variance(pop, f, spec.base, spec.cutoff, level, lam[t], model,
                                      pairs)
    return out


class Corrected(NamedTuple):
    """One topic's estimate per run after its ``bias`` correction, its variance, the bias
    estimate a bias-aware interval adds (0 where none), and whether every jackknife
    replicate behind it is possible (R-hat(lam) at or above the relevant documents it
    holds; True where no jackknife was taken)."""

    value: np.ndarray
    variance: np.ndarray
    remaining: np.ndarray
    possible: np.ndarray


def _corrections(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                 parts: Parts, bias: str, gap: bool) -> Corrected:
    """:func:`ppi_values` for one topic at ``lam`` (``[2, n_runs]``), from its ``parts``:
    the estimate less the ``bias`` correction, its variance, and what widens the interval
    (taylor-jackknife's b, or with ``gap`` the jackknife's estimate less the
    Taylor-corrected one)."""
    zero = np.zeros(parts.value.shape)
    if bias == "taylor-jackknife" and spec.base == "AP":  # with its own variance
        both = ap_taylor_jackknife(spec, level, data, lam)
        return Corrected(both.value, both.variance, both.remaining, both.possible)
    u = parts.u_y - lam[0][:, None] * parts.u_f[0] - lam[1][:, None] * parts.u_f[1]
    variance = data.units.forms([u])[0, 0]
    by_taylor = parts.value
    if bias in GAPS and parts.den is not None:
        by_taylor = parts.value - taylor_bias(data.units, u, parts.den[0]
                                              - lam[1][:, None] * parts.den[1])
    if not (spec.base == "AP" and (bias == "jackknife" or gap)):
        return Corrected(by_taylor if bias == "taylor" else parts.value, variance, zero,
                         np.ones(zero.shape, dtype=bool))
    jack = ap_jackknife(spec, level, data, lam)
    if bias == "jackknife":
        value = jack.value
        variance = np.where(np.isfinite(jack.variance), jack.variance, variance)
    else:
        value = by_taylor
    # what the two estimates of the first-order bias disagree on
    return Corrected(value, variance, jack.value - by_taylor if gap else zero, jack.possible)


def without_predictions(spec: EstimateSpec, views: list[TopicView], sample: Sample,
                        level: float, pairs: np.ndarray | None = None) -> PPIResult:
    """``spec`` in the ``draws`` form with every prediction 0, where lam has no part: the
    per-draw (Hansen-Hurwitz) estimate and its design variance, AP's with its ``bias``
    option and R@k's, Rprec's and nDCG's with their ``correction`` (``~hh``,
    :mod:`.hansen_hurwitz`); equal to ``~ppi(form=draws,variance=design)`` with predictions
    all 0. Needs no predictions."""
    topics = [topic_datas(view, sample, "draws", [np.zeros(len(view.sample.docnos))])[0]
              for view in views]
    return ppi_values(spec, topics, level, tuning="none", anticipated=False, pairs=pairs)


def _pair_variance(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                   parts: Parts, bias: str, pairs: np.ndarray) -> np.ndarray:
    """The variance of each pair's difference of one topic's estimates (``[P]``), by the
    estimator :func:`_corrections` gives each run's: the taylor-jackknife's or the
    jackknife's replicates differenced run against run, else the design's form of the
    difference of the two runs' linearised values."""
    if bias == "taylor-jackknife" and spec.base == "AP":
        return ap_taylor_jackknife(spec, level, data, lam, pairs).variance
    u = parts.u_y - lam[0][:, None] * parts.u_f[0] - lam[1][:, None] * parts.u_f[1]
    linear = data.units.forms([_per(u, pairs)])[0, 0]
    if not (spec.base == "AP" and bias == "jackknife"):
        return linear
    jack = ap_jackknife(spec, level, data, lam, pairs)
    return np.where(np.isfinite(jack.variance), jack.variance, linear)


def design_bias(spec: EstimateSpec, units: Units) -> str:
    """The ratio's correction for a topic's ``units``: R@k's, Rprec's and nDCG's ``correction``
    option (taylor or none); AP's ``bias`` option with ``design`` resolved,
    taylor-jackknife on stratified samples (the ``ht`` form with strata), jackknife over
    draws, taylor on the other designs (module docstring, "Ratio bias")."""
    if spec.base != "AP":
        return str(spec.option("correction"))
    bias = str(spec.option("bias"))
    if bias != "design":
        return bias
    if units.strata is not None:
        return "taylor-jackknife"
    return "jackknife" if units.kind == "draws" else "taylor"


def taylor_bias(units: Units, u: np.ndarray, den: np.ndarray) -> np.ndarray:
    """The first-order bias of a ratio Q-hat = N-hat/R-hat of two unbiased (difference)
    estimates, (Q V(R-hat) - C(N-hat, R-hat))/R^2 = -C(u, R-hat)/R with u its linearised
    per-unit values (Cochran, Sampling Techniques, 1977, ch. 6; Sarndal, Swensson &
    Wretman 1992, sec. 7.3), estimated by the design's form of u and ``den``, R-hat's
    per-unit values over R-hat (``[n_runs, m]``); as ``AP~ht(bias=taylor)``."""
    return -np.nan_to_num(units.forms([u, den])[0, 1])


class Jackknife(NamedTuple):
    """:func:`ap_jackknife` for one topic (``[n_runs]`` each): the corrected estimate, the
    jackknife variance, and whether every replicate that enters keeps R-hat(lam) at or
    above the relevant documents it holds."""

    value: np.ndarray
    variance: np.ndarray
    possible: np.ndarray


def _possible(r_reps: np.ndarray, found: np.ndarray | float, enters: np.ndarray
              ) -> np.ndarray:
    """Per run (``r_reps [n_runs, k]``, replicates' R-hat): every replicate that ``enters``
    (``[k]``) has R-hat at or above the relevant documents it holds (``found``, ``[k]``)."""
    return ((r_reps >= found - 1e-9) | ~enters).all(axis=1)


def ap_jackknife(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                 pairs: np.ndarray | None = None) -> Jackknife:
    """AP-hat(lam) (``lam [2, n_runs]``, as :func:`topic_estimate`) less the delete-one
    jackknife estimate of its ratio bias, and the jackknife variance of the replicates
    (``[n_runs]`` each; NaN variance where the sample has too few units), with whether
    every replicate's R-hat(lam) is possible (:class:`Jackknife`). Each replicate
    leaves one unit out and recomputes N-hat(lam)/R-hat(lam) in closed form, lam fixed (it
    is learnt from the other topics) and the predictions' frame totals unchanged:

    - stratified samples (Jones, JASA 1974; Wolter, Introduction to Variance Estimation,
      2007, sec. 4.5; as ``AP~ht(bias=jackknife)``): the replicate without j of stratum h
      re-weights h at n_h - 1 (1/pi = N_h/(n_h - 1), within-stratum pairs
      N_h (N_h - 1)/((n_h - 1)(n_h - 2))) and loses j's row and column of pairs;
      b = sum_h (1 - n_h/N_h)(n_h - 1)(mean_h - AP-hat), v = sum_h (1 - n_h/N_h)
      (n_h - 1)/n_h sum_j (AP-hat_(hj) - mean_h)^2 (the judged documents that are not
      units, with label and predictions 0, change only the weights: one replicate each);
    - other designs with inclusion probabilities (independent inclusions): AP-hat_(k) =
      (N-hat - c_k)/(R-hat - d_k), c_k and d_k unit k's shares; b = sum_k (1 - pi_k)
      [AP-hat_(k) - AP-hat + (c_k - AP-hat d_k)/R-hat] (its second-order part, as
      ``horvitz_thompson.average_precision_jackknife``), v = sum_k (1 - pi_k)
      (AP-hat_(k) - AP-hat)^2;
    - draws (Quenouille, Biometrika 1956): the replicate without draw k re-weights the
      others to n - 1 draws (1/((n - 1) p) each, pairs 1/((n - 1)(n - 2) p_k p_l));
      b = (n - 1)(mean_k AP-hat_(k) - AP-hat), v = (n - 1)/n sum_k (AP-hat_(k) - mean)^2.
    """
    y, f = relevance(data.labels, level), relevance(data.predicted, level)
    frame_f = relevance(data.frame.predicted, level)
    units, ranks, cut = data.units, data.ranks, spec.cutoff
    n_runs, m = ranks.shape
    lam_n, lam_r = lam[0], lam[1]
    fixed_n = lam_n * _frame_pairs(data, frame_f, cut, level)  # the frame's parts
    fixed_r = lam_r * frame_f.sum()
    t = units.weight * (y[None, :] - lam_r[:, None] * f[None, :])  # R-hat's shares [r, m]

    def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        return np.divide(num, den, out=np.zeros(np.broadcast_shapes(num.shape, den.shape)),
                         where=den > 0)

    found = y[data.distinct].sum()
    if units.strata is not None:
        return _stratified_jackknife(y, f, lam, data, cut, fixed_n, fixed_r, ratio, found,
                                     pairs)
    sums, shares = _pair_sums(np.stack([y, f]), np.stack([y * y, f]), ranks, units, cut,
                              data.geometry)
    n_s = sums[0] - lam_n * sums[1]
    share = shares[0] - lam_n[:, None] * shares[1]  # [r, m]
    r_s = t.sum(axis=1)
    value = ratio(n_s + fixed_n, r_s + fixed_r)
    if units.kind == "draws":
        if m < 3:
            return Jackknife(value, np.full(len(_per(value, pairs)), np.nan),
                             np.ones(n_runs, dtype=bool))
        within = (ranks > 0) if cut is None else (ranks > 0) & (ranks <= cut)
        inverse = np.divide(1.0, ranks, out=np.zeros(ranks.shape), where=within)
        own = units.weight * (y * y - lam_n[:, None] * f) * inverse  # W_k x_kk
        diagonal = own.sum(axis=1)
        r_reps = m / (m - 1) * (r_s[:, None] - t) + fixed_r[:, None]
        reps = ratio(m / (m - 1) * (diagonal[:, None] - own)
                     + m / (m - 2) * (n_s - diagonal)[:, None] - m / (m - 2) * (share - own)
                     + fixed_n[:, None], r_reps)
        mean = reps.mean(axis=1)
        _, doc_of, draws = np.unique(units.index, return_inverse=True, return_counts=True)
        alone = draws[doc_of] == 1  # the draw's document leaves the replicate with it
        spread = _per(reps, pairs) - _per(mean, pairs)[:, None]
        return Jackknife(value - (m - 1) * (mean - value),
                         (m - 1) / m * (spread ** 2).sum(axis=1),
                         _possible(r_reps, found - np.where(alone, y, 0.0),
                                   np.ones(m, dtype=bool)))
    pi = 1.0 / units.weight
    den = r_s + fixed_r
    rest = den[:, None] - t
    reps = ratio(n_s[:, None] + fixed_n[:, None] - share, rest)
    moved = reps - value[:, None]
    step = np.where(rest > 0, moved + ratio(share - value[:, None] * t, den[:, None]), 0.0)
    return Jackknife(value - ((1.0 - pi) * step).sum(axis=1),
                     ((1.0 - pi) * _per(moved, pairs)**2).sum(axis=1), _possible(rest, found - y, pi < 1.0))


def _stratified_jackknife(y: np.ndarray, f: np.ndarray, lam: np.ndarray, data: TopicData,
                          cut: int | None, fixed_n: np.ndarray, fixed_r: np.ndarray,
                          ratio: Callable[[np.ndarray, np.ndarray], np.ndarray], found: float,
                          pairs: np.ndarray | None = None) -> Jackknife:
    """:func:`ap_jackknife` on a stratified sample. The sample's numerator by strata:
    N_S = sum_g a_g S_g + sum_{g != g'} a_g a_g' P_gg' + sum_g c_g P_gg, with a_g = N_g/n_g,
    c_g = N_g (N_g - 1)/(n_g (n_g - 1)), S_g the diagonal terms x_kk of stratum g and P_gg'
    the pair terms x_kl (l ranked above k) with k in g and l in g'. Leaving out j of stratum
    h moves a_h to a_h' = N_h/(n_h - 1) and c_h to c_h' (at n_h - 1), so N_S moves by
    (a_h' - a_h)(S_h + sum_{g != h} a_g (P_hg + P_gh)) + (c_h' - c_h) P_hh, and j takes away
    a_h' x_jj and its row and column of pairs: its pairs with stratum g weigh a_h' a_g,
    within h c_h'. Every replicate at once: O(runs x documents x strata)."""
    units, ranks = data.units, data.ranks
    assert units.strata is not None
    stratum, sizes, n_sampled = units.strata
    n_runs, m = ranks.shape
    lam_n, lam_r = lam[0], lam[1]
    n_strata = len(sizes)
    docs = _run_docs(ranks, cut)
    rank = docs.rank[..., 0].astype(np.float64)
    real = rank > 0
    inverse = np.divide(1.0, rank, out=np.zeros(rank.shape), where=real)
    order = np.argsort(np.where(real, rank, np.inf), axis=1, kind="stable")
    doc = np.take_along_axis(docs.doc, order, axis=1)
    real, inverse = np.take_along_axis(real, order, axis=1), np.take_along_axis(inverse, order,
                                                                               axis=1)
    g = np.where(real, stratum[doc], 0)
    counts = n_sampled.astype(np.float64)
    a = np.divide(sizes, counts, out=np.zeros(n_strata), where=counts > 0)
    within = np.divide(sizes * (sizes - 1.0), counts * (counts - 1.0),
                       out=np.zeros(n_strata), where=counts > 1)
    a_run = np.where(real, a[g], 0.0)
    segments = _Segments(g)

    def blocks(v: np.ndarray, diagonal: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each run's documents' pair terms with the documents ranked above (their row)
        and below (their column): summed over every stratum with weights a_g, and over
        their own stratum only; and their diagonal terms (each ``[r, K]``)."""
        vv = np.where(real, v[doc], 0.0)
        per = vv * inverse
        weighted = a_run * vv
        above_a = np.cumsum(weighted, axis=1) - weighted
        weighted = a_run * per
        below_a = np.cumsum(weighted[:, ::-1], axis=1)[:, ::-1] - weighted
        above_own, below_own = segments.above(vv), segments.below(per)
        return (per * above_a, vv * below_a, per * above_own, vv * below_own,
                np.where(real, diagonal[doc], 0.0) * inverse)

    parts_y, parts_f = blocks(y, y * y), blocks(f, f)
    rows_a, cols_a, own_rows, own_cols, own = (
        p_y - lam_n[:, None] * p_f for p_y, p_f in zip(parts_y, parts_f, strict=True))

    def by_stratum(values: np.ndarray) -> np.ndarray:  # [r, K] -> [r, H]
        out = np.zeros((n_runs, n_strata))
        np.add.at(out, (np.nonzero(real)[0], g[real]), values[real])
        return out

    diagonal = by_stratum(own)  # S_h
    own_pairs = by_stratum(own_rows)  # P_hh
    across = by_stratum(rows_a + cols_a) - 2.0 * a * own_pairs  # sum_{g != h} a_g (P_hg + P_gh)
    numerator = diagonal @ a + 0.5 * (across * a).sum(axis=1) + own_pairs @ within
    per_unit = y[None, :] - lam_r[:, None] * f[None, :]  # R's unit values [r, m] (weight a_h)
    totals = np.zeros((n_runs, n_strata))
    np.add.at(totals.T, stratum, per_unit.T)
    used = replicated(counts, sizes)
    fewer = counts - 1.0
    a2 = np.divide(sizes, fewer, out=np.zeros(n_strata), where=used)
    within2 = np.divide(sizes * (sizes - 1.0), fewer * (fewer - 1.0), out=np.zeros(n_strata),
                        where=used & (fewer > 1))
    r_sample = totals @ a
    value = ratio(numerator + fixed_n, r_sample + fixed_r)
    base = (numerator[:, None] + (a2 - a) * (diagonal + across) + (within2 - within) * own_pairs
            + fixed_n[:, None])  # [r, H]: stratum h at n_h - 1, no document left out
    r_base = r_sample[:, None] + (a2 - a) * totals + fixed_r[:, None]
    # what j takes away, at its stratum's new weights
    a_new, w_new, a_old = a2[g], within2[g], a[g]
    loss = a_new * (own + rows_a + cols_a - a_old * (own_rows + own_cols)) + w_new * (
        own_rows + own_cols)
    lost = np.zeros((n_runs, m))
    lost[np.arange(n_runs)[:, None], doc] = np.where(real, loss, 0.0)
    r_reps = r_base[:, stratum] - a2[stratum] * per_unit
    reps = ratio(base[:, stratum] - lost, r_reps)
    others = ratio(base, r_base)  # the judged documents that are not units: weights only
    variance, bias = _stratum_jackknife(reps, others, value, stratum, sizes, counts)
    if pairs is not None:  # the jackknife of the pairs' differences, replicate by replicate
        variance = _stratum_jackknife(_per(reps, pairs), _per(others, pairs),
                                      _per(value, pairs), stratum, sizes, counts)[0]
    possible = (_possible(r_reps, found - y, used[stratum])
                & _possible(r_base, np.full(n_strata, found), used))
    return Jackknife(value - bias, variance, possible)


def _per(values: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """Per run (``[n_runs, ...]``), or with ``pairs`` (``[P, 2]`` run indices) each pair's
    difference ``values[a] - values[b]``."""
    return values if pairs is None else _contrast(values, pairs)


def replicated(counts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The strata whose delete-one replicates enter the stratified jackknife: 2 <= n_h < N_h
    (one judged document leaves no replicate; a census stratum's replicates do not differ)."""
    return (counts >= 2) & (counts < sizes)


def _stratum_jackknife(reps: np.ndarray, others: np.ndarray, value: np.ndarray,
                       stratum: np.ndarray, sizes: np.ndarray, counts: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The stratified delete-one jackknife (:func:`~sampleval.estimation.engine.replicates.
    stratum_jackknife`) from each unit's replicate ``reps`` ``[r, m]`` (unit j left out,
    its stratum at n_h - 1) and each stratum's one replicate for its judged documents that
    are not units ``others`` ``[r, H]`` (only the weights change): (v, b) per run."""
    return stratum_jackknife((stratum, sizes, counts),
                             lambda h, rows: stratum_rows(reps.T, others.T, h, rows),
                             len(value), value)


class TaylorJackknife(NamedTuple):
    """``AP~ppi(bias=taylor-jackknife)`` for one topic (``[n_runs]`` each): the corrected
    estimate theta_T - b, its variance (the jackknife variance of the replicates of
    theta_T), and b, the jackknife's estimate of the bias that theta_T (``bias=taylor``'s
    estimate) keeps, so that theta_T = ``value`` + ``remaining``; ``possible``: whether every
    replicate's R-hat(lam) is at least the relevant documents it holds."""

    value: np.ndarray
    variance: np.ndarray
    remaining: np.ndarray
    possible: np.ndarray


def ap_taylor_jackknife(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                        pairs: np.ndarray | None = None) -> TaylorJackknife:
    """The Taylor-corrected AP-hat(lam) theta_T = Q + (C(iN, iR) - Q V(iR))/R-hat^2
    (``bias=taylor``, :func:`taylor_bias`) less the stratified delete-one jackknife's
    estimate of its remaining bias, b = sum_h (1 - n_h/N_h)(n_h - 1)(mean_h theta_T(hj) -
    theta_T), as ``AP~ht(bias=taylor-jackknife)`` (:mod:`sampleval.estimation.engine.replicates`; Quenouille 1956,
    Jones 1974, Wolter 2007, sec. 4.5). Each replicate theta_T(hj) leaves out one judged
    document j of stratum h, h's design at n_h - 1, and recomputes AP-hat(lam) *and* its
    Taylor term: the HT (co)variances of the linearised numerator iN = iN^y - lam_N iN^f
    and denominator iR = W (y - lam_R f), prediction parts included. lam (``[2, n_runs]``)
    is held at the full sample's value in every replicate (it is learnt from the other
    topics, or fixed where the ratio went astray) and the predictions' frame totals stay
    as they are. The variance: sum_h (1 - f_h)(n_h - 1)/n_h sum_j (theta_T(hj) -
    mean_h)^2.

    Closed form, all replicates at once (per topic O(runs x (K x strata + strata^2)), K the
    units a run retrieved; the per-stratum pair sums compiled, :mod:`sampleval.estimation.engine.kernels`): under
    stratified SRS the pair weight W_gg' (a_g a_g', or N_g (N_g - 1)/(n_g (n_g - 1)) within
    g) and the HT form, per stratum (1 - f_g)[sum_k a_k b_k - (A_g B_g - sum_k a_k b_k)/(n_g - 1)], depend
    on the strata alone, so every quantity is a function of per-stratum sums:
    U_gg' = sum_{k in g, l in g', l != k} Z_kl and T_gg' = the same weighted by r_k =
    y_k - lam_R f_k, Z_kl = x_kl + x_lk = (y_k y_l - lam_N f_k f_l)/max(rank_k, rank_l); the
    diagonal terms X_kk = (y_k^2 - lam_N f_k)/rank_k; and R's sums of r and r^2. Leaving j
    out subtracts its row and column (its sums by stratum, Z_j. and sum_l r_l Z_lj) and
    re-weights stratum h.

    ``possible`` says per run whether every replicate that enters keeps R-hat' at or above
    the relevant documents it holds; :func:`ppi_values` gives a run where one does not lam =
    0 for the whole topic (giving lam = 0 to that replicate alone, lam mixed within one
    jackknife, raised the rms of the mean AP by 5% and lowered its coverage from 0.921 to
    0.908: TREC-COVID round 5, ``stratified`` 5%, noise predictions, the same 50 samples).
    A replicate's AP-hat' outside [0, 1] is taken as it comes. On topics with a handful of
    judged documents (about
    6 per topic, of which one or two relevant) the Taylor term and its replicates can be far
    outside [0, 1], and b with them (tests/unit/test_ppi.py's Monte Carlo test runs without
    predictions for that reason). Measured on TREC-COVID in docs/predictions.md, "AP's
    remaining bias".

    Only samples whose units carry strata (the ``ht`` form on stratified SRS: ``uniform``,
    ``strata``, ``stratified``, a census) are supported: a design with independent inclusions
    (Poisson) or per-draw units (with-replacement, importance) raise a UsageError (the
    replicates of a per-draw U-statistic would need their own derivation; not built)."""
    units = data.units
    if units.strata is None:
        raise UsageError("bias=taylor-jackknife needs a stratified sample (uniform, strata, "
                         f"stratified, a census), not units of the {units.kind} form "
                         "without strata")
    stratum, sizes, n_sampled = units.strata
    value, reps, others, possible = _taylor_replicates(spec, level, data, lam)
    counts = n_sampled.astype(np.float64)
    variance, remaining = _stratum_jackknife(reps, others, value, stratum, sizes, counts)
    if pairs is not None:  # the jackknife of the pairs' differences, replicate by replicate
        variance = _stratum_jackknife(_per(reps, pairs), _per(others, pairs),
                                      _per(value, pairs), stratum, sizes, counts)[0]
    return TaylorJackknife(value - remaining, variance, remaining, possible)


def _taylor_replicates(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`ap_taylor_jackknife`'s theta_T (``[n_runs]``), its replicates without each
    unit (``[n_runs, m]``) and without a judged document that is not a unit (``[n_runs,
    H]``, only stratum h's weights change), and per run whether every replicate that enters
    the jackknife keeps R-hat(lam) at or above the relevant documents it holds."""
    units = data.units
    assert units.strata is not None
    y, f = relevance(data.labels, level), relevance(data.predicted, level)
    frame_f = relevance(data.frame.predicted, level)
    cut, ranks = spec.cutoff, data.ranks
    stratum, sizes, n_sampled = units.strata
    n_runs, m = ranks.shape
    n_strata = len(sizes)
    lam_n, lam_r = lam[0], lam[1]
    fixed_n = lam_n * _frame_pairs(data, frame_f, cut, level)
    fixed_r = lam_r * frame_f.sum()
    r = y[None, :] - lam_r[:, None] * f[None, :]  # R's unit values [runs, m], weight a_g

    # each run's documents in rank order
    docs = _run_docs(ranks, cut)
    rank = docs.rank[..., 0].astype(np.float64)
    order = np.argsort(np.where(rank > 0, rank, np.inf), axis=1, kind="stable")
    doc = np.take_along_axis(docs.doc, order, axis=1)
    real = np.take_along_axis(rank > 0, order, axis=1)
    inverse = np.divide(1.0, np.take_along_axis(rank, order, axis=1),
                        out=np.zeros(real.shape), where=real)
    onehot = ((stratum[doc][..., None] == np.arange(n_strata)) & real[..., None]).astype(
        np.float64)  # [r, K, H]
    gather = np.ascontiguousarray(onehot.transpose(0, 2, 1))  # sums by stratum: [r, H, K] @
    y_k, f_k = np.where(real, y[doc], 0.0), np.where(real, f[doc], 0.0)
    r_k = np.where(real, np.take_along_axis(r, doc, axis=1), 0.0)

    spreads = stratum_spreads(np.stack([y_k, f_k, r_k * y_k, r_k * f_k]), inverse,
                              np.where(real, stratum[doc], 0), n_strata)  # [4, r, K, H]
    lam_k = lam_n[:, None, None]
    z_row = y_k[..., None] * spreads[0] - lam_k * f_k[..., None] * spreads[1]
    z_col = y_k[..., None] * spreads[2] - lam_k * f_k[..., None] * spreads[3]
    x_kk = (y_k * y_k - lam_n[:, None] * f_k) * inverse
    u_full = gather @ z_row  # U_gg' [r, H, H]
    t_full = gather @ (r_k[..., None] * z_row)  # T_gg'
    xd = (gather @ x_kk[..., None])[..., 0]  # [r, H]
    xd_r = (gather @ (r_k * x_kk)[..., None])[..., 0]
    member = np.zeros((m, n_strata))
    member[np.arange(m), stratum] = 1.0
    r_g, rr_g = r @ member, (r * r) @ member  # [r, H]

    def design(counts: np.ndarray) -> tuple[np.ndarray, ...]:
        """a_g, N_g (N_g - 1)/(n_g (n_g - 1)) and the HT form's (1 - f_g) and 1/(n_g - 1)
        at ``counts`` (``[H]``)."""
        a = np.divide(sizes, counts, out=np.zeros(counts.shape), where=counts > 0)
        within = np.divide(sizes * (sizes - 1.0), counts * (counts - 1.0),
                           out=np.zeros(counts.shape), where=counts > 1)
        fpc = np.divide(sizes - counts, sizes, out=np.zeros(counts.shape), where=sizes > 0)
        inv = np.divide(1.0, counts - 1.0, out=np.zeros(counts.shape), where=counts > 1)
        return a, within, fpc, inv

    def corrected(num: np.ndarray, den: np.ndarray, c_nr: np.ndarray, v_r: np.ndarray
                  ) -> np.ndarray:
        """theta_T = Q + (C(iN, iR) - Q V(iR))/R-hat^2 from the sample's N, R-hat and the
        HT forms (0 where R-hat is not positive, as :func:`_ratio`)."""
        q = np.divide(num, den, out=np.zeros(den.shape), where=den > 0)
        return q + np.divide(c_nr - q * v_r, den * den, out=np.zeros(den.shape), where=den > 0)

    # the HT form per stratum, (1 - f_g)[sum_k a_k b_k - (A_g B_g - sum_k a_k b_k)/(n_g - 1)]:
    # C(iN, iR)'s term is kappa_g SNR_g - beta_g SN_g R_g, V(iR)'s fpc a^2 ((1 + inv) RR - inv R^2)
    counts = n_sampled.astype(np.float64)
    a, within, fpc, inv = design(counts)
    pair = np.outer(a, a)  # W_gg'
    diagonal = np.arange(n_strata)
    pair[diagonal, diagonal] = within
    s_u, s_t = (pair * u_full).sum(axis=2), (pair * t_full).sum(axis=2)  # sum_g' W_gg' U_gg'
    sn, snr = s_u + a * xd, s_t + a * xd_r  # SN_g, SNR_g [r, H]
    alpha, beta = fpc * a * (1.0 + inv), fpc * a * inv
    c_terms = alpha * snr - beta * sn * r_g  # [r, H]
    v_terms = fpc * a * a * ((1.0 + inv) * rr_g - inv * r_g * r_g)
    r_sample = (a * r_g).sum(axis=1)
    n_sample = (a * xd).sum(axis=1) + 0.5 * s_u.sum(axis=1)
    value = corrected(n_sample + fixed_n, r_sample + fixed_r, c_terms.sum(axis=1),
                      v_terms.sum(axis=1))

    # stratum h at n_h - 1, no document left out ([r, h]). Only the weights involving h
    # change: a'_h, W'_gh = a_g a'_h (g != h) and W'_hh; so for g != h, SN'_g = SN_g + a_g
    # (a'_h - a_h) U_gh (SNR'_g with T), and for g = h, SN'_h = a'_h (sum_g' a_g' U_hg' -
    # a_h U_hh) + W'_hh U_hh + a'_h Xd_h
    a_less, within_less, fpc_less, inv_less = design(counts - 1.0)
    step = a_less - a
    u_own, t_own = u_full[:, diagonal, diagonal], t_full[:, diagonal, diagonal]
    sn_less = (a_less * ((u_full @ a) - a * u_own) + within_less * u_own + a_less * xd)
    snr_less = (a_less * ((t_full @ a) - a * t_own) + within_less * t_own + a_less * xd_r)
    kappa = alpha * a  # the other strata's terms move by step_h (kappa_g T_gh - ...)
    moved = (kappa @ t_full) - ((beta * a * r_g)[:, None, :] @ u_full)[:, 0]  # [r, h]
    moved -= kappa * t_own - beta * a * r_g * u_own  # g = h is not among them
    c_rest = c_terms.sum(axis=1)[:, None] - c_terms + step * moved  # sum over g != h
    v_rest = v_terms.sum(axis=1)[:, None] - v_terms
    r_rest = r_sample[:, None] - a * r_g
    n_less = (n_sample[:, None] + step * xd + 0.5 * (
        step * ((a @ u_full) - a * u_own) - s_u + sn_less - a_less * xd))

    def own_terms(sn_h: np.ndarray, snr_h: np.ndarray, rg_h: np.ndarray, rrg_h: np.ndarray,
                  h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stratum h's terms of C(iN, iR) and V(iR) at n_h - 1."""
        a_h, fpc_h, inv_h = a_less[h], fpc_less[h], inv_less[h]
        return (fpc_h * a_h * ((1.0 + inv_h) * snr_h - inv_h * sn_h * rg_h),
                fpc_h * a_h * a_h * ((1.0 + inv_h) * rrg_h - inv_h * rg_h * rg_h))

    c_h, v_h = own_terms(sn_less, snr_less, r_g, rr_g, diagonal)
    others = corrected(n_less + fixed_n[:, None], r_rest + a_less * r_g + fixed_r[:, None],
                       c_rest + c_h, v_rest + v_h)

    # leaving out unit j of stratum h also takes its row and column of pairs: from stratum
    # g != h, W'_hg Z_jg in SN'_g and W'_hg sum_l r_l Z_lj in SNR'_g, W'_hg = a'_h a_g; so
    # the other strata's terms lose a'_h (sum_g kappa_g Zc_jg - beta_g a_g R_g Z_jg), dot
    # products taken where the run retrieved j ([r, K]; elsewhere 0)
    h_pos = np.where(real, stratum[doc], 0)  # [r, K]
    z_own = np.take_along_axis(z_row, h_pos[..., None], axis=2)[..., 0]
    zc_own = np.take_along_axis(z_col, h_pos[..., None], axis=2)[..., 0]
    a_pos = a[h_pos]
    row_dot = a_less[h_pos] * (z_row @ a - a_pos * z_own) + within_less[h_pos] * z_own
    weights = (beta * a * r_g)[:, :, None]  # [r, H, 1]
    d_col = a_less[h_pos] * ((z_col @ kappa) - kappa[h_pos] * zc_own)
    d_row = a_less[h_pos] * ((z_row @ weights)[..., 0]
                             - np.take_along_axis(weights[..., 0], h_pos, axis=1) * z_own)

    def by_unit(values: np.ndarray) -> np.ndarray:  # [r, K] -> [r, m], 0 where not retrieved
        out = np.zeros((n_runs, m))
        out[np.nonzero(real)[0], doc[real]] = values[real]
        return out

    row_dot, d_col, d_row, z_own, zc_own, x_j = (by_unit(v) for v in (
        row_dot, d_col, d_row, z_own, zc_own, x_kk))
    h = stratum
    taken = row_dot + a_less[h] * x_j  # what j takes from N-hat and from SN'_h
    c_own, v_own = own_terms(sn_less[:, h] - taken - within_less[h] * z_own,
                             snr_less[:, h] - r * taken - within_less[h] * zc_own,
                             r_g[:, h] - r, rr_g[:, h] - r * r, h)
    r_reps = r_rest[:, h] + a_less[h] * (r_g[:, h] - r) + fixed_r[:, None]
    reps = corrected(n_less[:, h] - taken + fixed_n[:, None], r_reps,
                     c_rest[:, h] - d_col + d_row + c_own, v_rest[:, h] + v_own)
    found = y[data.distinct].sum()  # the ht form's units are distinct documents
    used = replicated(counts, sizes)
    possible = (_possible(r_reps, found - y, used[h])
                & _possible(r_rest + a_less * r_g + fixed_r[:, None], np.full(n_strata, found),
                            used))
    return value, reps, others, possible


def _last(per_run: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A ``[n_runs]`` array shaped to broadcast against ``like`` (``[n_runs, ...]``)."""
    return per_run.reshape(per_run.shape + (1,) * (like.ndim - 1))


class _Segments:
    """Sums within each run's groups (``groups [r, K]``, the documents in rank order): for
    each document, the sum over the documents of its group before it, or after it."""

    def __init__(self, groups: np.ndarray) -> None:
        width = groups.shape[1]
        positions = np.broadcast_to(np.arange(width), groups.shape)
        self.order = np.argsort(groups * width + positions, axis=1, kind="stable")
        grouped = np.take_along_axis(groups, self.order, axis=1)
        start = np.ones(groups.shape, dtype=bool)
        start[:, 1:] = grouped[:, 1:] != grouped[:, :-1]
        end = np.ones(groups.shape, dtype=bool)
        end[:, :-1] = start[:, 1:]
        self.first = np.maximum.accumulate(np.where(start, positions, 0), axis=1)
        self.last = np.minimum.accumulate(np.where(end, positions, width)[:, ::-1],
                                          axis=1)[:, ::-1]

    def _sums(self, values: np.ndarray, before: bool) -> np.ndarray:
        v = np.take_along_axis(values, self.order, axis=1)
        total = np.cumsum(v, axis=1)
        ahead = np.take_along_axis(total - v, self.first, axis=1)  # sums before the group
        out_sorted = (total - v - ahead if before
                      else np.take_along_axis(total, self.last, axis=1) - total)
        out = np.empty_like(out_sorted)
        np.put_along_axis(out, self.order, out_sorted, axis=1)
        return out

    def above(self, values: np.ndarray) -> np.ndarray:
        return self._sums(values, True)

    def below(self, values: np.ndarray) -> np.ndarray:
        return self._sums(values, False)


def tuned(gram: np.ndarray, cross: np.ndarray, tuning: str) -> np.ndarray:
    """Each topic's lam (``[T, 2]``) from every topic's forms summed over the runs
    (``gram [T, 2, 2]``, ``cross [T, 2]``): cross-fitted (the other topics' sums) and shrunk
    by their uncertainty, or ``plug-in`` (every topic's, as is); clipped to [0, 1].

    The shrinkage: lam-hat_t = G^-1 C over the other topics s has, by the delta method over
    them (independent topics), Var = sum_s d_s d_s', d_s = G^-1 (c_s - g_s lam-hat_t); the
    excess variance of using k lam-hat instead of lam* is (k lam-hat - lam*)^2 V(u^f), whose
    expectation is smallest at k = lam*^2 / (lam*^2 + Var), estimated with lam-hat for lam*.
    A useless predictor's lam-hat is noise around 0 and is shrunk to about 0; a good one's
    is kept."""
    if tuning == "plug-in" or len(gram) == 1:
        return np.broadcast_to(np.clip(minimising(gram.sum(axis=0), cross.sum(axis=0)),
                                       0.0, 1.0), cross.shape).copy()
    others_gram, others_cross = gram.sum(axis=0) - gram, cross.sum(axis=0) - cross
    lam = minimising(others_gram, others_cross)  # [t, 2]
    residual = cross[None, :, :] - np.einsum("sjk,tk->tsj", gram, lam)  # [t, s, 2]
    residual[np.arange(len(gram)), np.arange(len(gram))] = 0.0  # topic t itself is left out
    influence = np.einsum("tjk,tsk->tsj", np.linalg.pinv(others_gram), residual)
    var = (influence**2).sum(axis=1)
    keep = np.divide(lam**2, lam**2 + var, out=np.ones(lam.shape), where=lam**2 + var > 0)
    return np.clip(lam * keep, 0.0, 1.0)


def minimising(gram: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """lam = G^-1 c (``gram [..., 2, 2]``, ``cross [..., 2]``), which minimises
    V - 2 c'lam + lam'G lam; a coefficient whose variance is not positive (nothing learnt)
    is 1 and the other is tuned given it, and nearly collinear parts share one coefficient."""
    lam = np.ones(cross.shape)
    var = np.diagonal(gram, axis1=-2, axis2=-1)
    usable = var > np.maximum(1e-9 * var.max(axis=-1, keepdims=True), 1e-15)  # not rounding
    det = var[..., 0] * var[..., 1] - gram[..., 0, 1] * gram[..., 1, 0]
    both = usable.all(axis=-1) & (det > 1e-9 * var[..., 0] * var[..., 1])
    if both.any():
        lam[both] = np.linalg.solve(gram[both], cross[both][..., None])[..., 0]
    shared = usable.all(axis=-1) & ~both
    total = gram[shared].sum(axis=(-2, -1))
    lam[shared] = np.divide(cross[shared].sum(axis=-1), total, out=np.ones(total.shape),
                            where=total > 0)[:, None]
    alone = usable & ~usable.all(axis=-1, keepdims=True)  # the other coefficient stays 1
    other = gram[..., 0, 1]
    lam[alone] = (cross[alone] - np.broadcast_to(other[..., None], cross.shape)[alone]
                  ) / var[alone]
    return lam


def _topics(views: list[TopicView], sample: Sample, spec: EstimateSpec, form: str | None,
            made: dict[str, list[TopicData]]) -> list[TopicData]:
    """Each topic's units in ``form`` (None: ``spec``'s ``form`` option on the sample,
    :func:`chosen_form`), made once per form into ``made``."""
    chosen = form or chosen_form(sample, spec)
    if (spec.base == "AP" and spec.option("bias") == "taylor-jackknife"
            and (chosen != "ht" or not sample.design.has_strata)):
        raise UsageError(f"{spec.name}: bias=taylor-jackknife needs a stratified sample "
                         "(uniform, strata, stratified, a census), not this "
                         f"{sample.design} sample"
                         + (" in the per-draw form" if chosen == "draws" else ""))
    if chosen not in made:
        made[chosen] = [topic_data(view, sample, chosen) for view in views]
    return made[chosen]


def _parts(spec: EstimateSpec, result: PPIResult, views: list[TopicView], level: float
           ) -> TopicParts:
    """The rows' parts of ``result``: AP's bias-aware interval widened by ``remaining``,
    except on topics whose sample holds at most one relevant document, where the
    jackknife's bias estimate is degenerate (about -AP-hat) and the ``few`` floor stands
    for the error instead (as ``~ht``'s; docs/research/calibration.md, section 1)."""
    aware = spec.base == "AP" and spec.option("interval") == "bias-aware"
    if not aware or result.remaining is None:
        return TopicParts(result.value, result.variance, np.zeros_like(result.value))
    measured = np.array([np.count_nonzero(relevance(v.sample.labels[v.sample.judged], level)) > 1
                         for v in views])  # as ~ht's y != 0: vote shares count
    return TopicParts(result.value, result.variance,
                      np.where(measured[:, None], result.remaining, 0.0))


def ppi_parts(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
              spec: EstimateSpec, level: float) -> TopicParts:
    """Per topic and run: the prediction-powered estimate of ``spec``, its variance and the
    bias that widens its interval (:func:`ppi_values`; AP's ``few`` floor applied)."""
    topics = _topics(views, sample, spec, None, {})
    return corrected(spec, views, level, _parts(spec, ppi_values(
        spec, topics, level, spec.option("tuning")), views, level))


def ppi_differences(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                    spec: EstimateSpec, level: float, pairs: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and pair (a, b) of run indices (``pairs`` ``[P, 2]``): the estimated
    difference ``spec``_a - ``spec``_b and the variance of that difference, both
    ``[topics, P]`` (:func:`ppi_values`' ``pair_variance``: with good predictions smaller
    than ``~ht``'s, equal to it with predictions all 0)."""
    topics = _topics(views, sample, spec, None, {})
    result = ppi_values(spec, topics, level, spec.option("tuning"), pairs=pairs)
    assert result.pair_variance is not None
    return _per(result.value.T, pairs).T, result.pair_variance


def estimate_ppi(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                 specs: list[EstimateSpec], level: float, ci: float, *,
                 form: str | None = None) -> pd.DataFrame:
    """Prediction-powered estimates of ``specs`` for every run and topic (and their mean),
    with normal intervals at level ``ci`` (AP's bias-aware as ``interval`` says); the form
    is ``form`` if given, else each spec's ``form`` option (``design``: by the sample's
    design, :func:`sample_form`), and each spec's ``tuning`` option as the module docstring
    says. The measures share each form's units."""
    made: dict[str, list[TopicData]] = {}
    frames = []
    for spec in specs:
        result = ppi_values(spec, _topics(views, sample, spec, form, made), level,
                            spec.option("tuning"))
        frames.append(rows(run_names, views, spec,
                           corrected(spec, views, level, _parts(spec, result, views, level)), ci))
    return pd.concat(frames, ignore_index=True)


register_family(EstimatorFamily(
    name="ppi", title="prediction-powered (difference) estimators: predictions for every "
                      "document, corrected by the sample's residuals; power-tuned",
    reference="Sarndal et al. 1992, ch. 6; Angelopoulos et al. 2023 (PPI, PPI++)",
    bases=tuple(Base(name, cutoff, options=("tuning", "form", *extra))
                for name, cutoff, extra in (
                    ("AP", "optional", ("bias", "interval", "few")),
                    ("P", "required", ("variance",)),
                    ("R", "required", ("correction",)),
                    ("Rprec", "no", ("cut", "correction")),
                    ("nDCG", "optional", ("correction",)),
                    ("DCG", "optional", ("variance",)), ("NumRel", "no", ("variance",)))),
    designs=("census", "stratified", "poisson", "inclusion", "with-replacement",
             "importance"),
    compute=estimate_ppi, parts=ppi_parts, differences=ppi_differences,
    needs_predictions=True,
    options=(
        Param("tuning", str, "by-measure", "the coefficient lam on the predictions: "
              "by-measure (cross-fit for P@k, DCG and NumRel, plug-in for the ratios AP, "
              "R@k, Rprec and nDCG), cross-fit (power-tuned on the other topics, shrunk, in "
              "[0, 1]), plug-in (on every topic, in [0, 1]) or none (lam = 1, the plain "
              "difference estimator)", choices=TUNINGS),
        Param("bias", str, "design", "AP's ratio bias: design (taylor-jackknife on "
              "stratified samples, jackknife over draws, taylor on the other designs), taylor "
              "(less the ratio's first-order bias, (AP V(R) - C(N, R))/R^2), jackknife (less "
              "the delete-one jackknife's bias estimate, stratified on stratified samples, "
              "over the draws for the per-draw form, with the jackknife variance), "
              "taylor-jackknife (taylor, less the stratified jackknife's estimate of the bias "
              "it keeps, each replicate with its own Taylor term; stratified samples only) "
              "or none",
              choices=("design", "taylor", "taylor-jackknife", "jackknife", "none")),
        Param("correction", str, "taylor", "R@k's, Rprec's and nDCG's ratio bias: taylor "
              "(less its first-order bias, (Q V(R) - C(N, R))/R^2, as AP's bias=taylor) or "
              "none (the plain ratio, as ~ht(correction=none))", choices=("taylor", "none")),
        Param("interval", str, "bias-aware", "AP's interval: bias-aware (z standard errors "
              "either side, widened by an estimate |b| of the bias the correction leaves: "
              "with taylor-jackknife the jackknife's b, as AP~ht's; over draws, with "
              "jackknife or taylor, the gap between the two corrections, as AP~hh's; normal "
              "elsewhere) or normal (z standard errors either side)",
              choices=("bias-aware", "normal")),
        Param("form", str, "design", "design (Horvitz-Thompson wherever the design has "
              "inclusion probabilities, but per-draw for importance samples, for ratio "
              "measures on active samples, and for every measure on active samples drawn "
              "with a uniform share), ht (wherever the sample has inclusion "
              "probabilities), or draws (the per-draw form wherever the sample records its "
              "draws: unbiased under adaptive draws; for P@k on active samples a much higher "
              "variance)",
              choices=("design", *FORMS)),
        Param("variance", str, "anticipated", "P@k's, DCG@k's and NumRel's variance on "
              "stratified samples and over draws (active samples with a uniform share, "
              "importance samples): anticipated (the design's variance expected under a model "
              "of the labels learnt from every topic's judged documents: stable where good "
              "predictions leave rare residuals; the design's where no model can be fitted) "
              "or design (the design's variance estimator, as ~ht's; on the other designs "
              "always)", choices=("anticipated", "design")),
        Param("cut", str, "floor", "Rprec's cut, as Rprec~ht's: floor (rank floor(R-hat)) "
              "or round (int(R-hat + 0.5))", choices=("floor", "round")),
        FEW_OPTION,
    )))
