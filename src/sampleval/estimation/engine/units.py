"""The units a topic's design-based estimate sums over, and the sums over them (issue 28's one
engine; ``~ht``, ``~hh``, ``~is`` and ``~ppi`` are presets over it).

A measure linear in the labels is a total over the topic's frame U, T = sum_{i in U} w_i y_i
(w_i the run's rank weight), estimated by sum_{k in S} W_k w_k y_k over the sample's units S
with weights W_k: in the ``ht`` form the judged documents with W_k = 1/pi_k (Horvitz &
Thompson 1952), in the ``draws`` form the n draws with W_k = 1/(n p_k(d_k)) (Hansen & Hurwitz
1943; unbiased under adaptive draw probabilities); AP's numerator is a sum over pairs,
estimated with the pair weights W_kl (1/pi_kl, or a U-statistic over pairs of draws). Each
form carries the design's bilinear variance form (:meth:`Units.forms`; Sarndal, Swensson &
Wretman, *Model Assisted Survey Sampling*, 1992, ch. 2-5). :func:`sample_form` chooses the
form by design; labels and predictions are mapped alike (``views.relevance`` for binary
measures, the value as gain for DCG and nDCG).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.anticipated import Population, draws_population, population
from sampleval.estimation.engine.estimands import _delta, _run_docs
from sampleval.estimation.engine.kernels import bilinear_forms
from sampleval.estimation.engine.views import TopicView, topic_draws
from sampleval.estimation.spec import EstimateSpec, draws_reach_every_document
from sampleval.measures.names import estimand_of

FORMS = ("ht", "draws")
def is_total(base: str) -> bool:
    """Whether the measure ``base`` declares a total as its estimand (NumRel, P@k, DCG@k:
    linear in the labels; :attr:`sampleval.measures.names.MeasureSpec.estimand`)."""
    spec = estimand_of(base)
    return spec is not None and spec.estimand == "total"


def is_graded(base: str) -> bool:
    """Whether the measure ``base`` sums gains (the grades) rather than relevance (DCG,
    nDCG: :attr:`sampleval.measures.names.MeasureSpec.graded`)."""
    spec = estimand_of(base)
    return spec is not None and spec.graded


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
        return bilinear_forms(np.ascontiguousarray(stacked, dtype=np.float64), self.delta)


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


def sample_form(sample: Sample, base: str | None = None) -> str:
    """The form ``base`` (a measure's base name; None: a linear one) takes on ``sample`` by
    default: ``ht`` for every design with inclusion probabilities, except that on
    with-replacement samples drawn without a uniform share (``active:uniform=0``, the
    paper's active sampling) only the linear measures take it, so that lam = 0 is ``~ht``'s
    estimate there (their default); the ratio measures take ``draws`` there, as do
    importance samples, with-replacement samples with draws but no rounds, and every
    measure on active samples with a share (``active``'s default).

    The per-draw form stays unbiased under adaptive draws where every draw can reach every
    pooled document (a uniform share, ``active:uniform=a``, a > 0), which ``~ht``'s is not;
    why the linear measures keep ``ht`` without a share: docs/research/predictions.md,
    "Active sampling", "Active sampling: AP~hh and the defaults" and "A uniform share"."""
    if not has_inclusion(sample):
        return "draws"
    if sample.design.has_draws and (  # past has_inclusion: with-replacement draws
            draws_reach_every_document(sample) or (base is not None and not is_total(base))):
        return "draws"
    return "ht"


def has_inclusion(sample: Sample) -> bool:
    """Whether ``sample`` has the inclusion probabilities the ``ht`` form needs: every
    design but importance draws and with-replacement draws without their rounds."""
    return sample.design.inclusion_known(sample)


def chosen_form(sample: Sample, spec: EstimateSpec) -> str:
    """The form ``spec``'s ``weights`` option asks for on ``sample``: ``by-design`` as
    :func:`sample_form` says; ``draws`` wherever the sample records its draws and ``ht``
    wherever it has inclusion probabilities, each the other form on a sample that lacks what
    it needs (a census has no draws, importance draws no inclusion probabilities), so that
    one request applies to samples of every design."""
    option = spec.option("weights")
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


def _frame_pairs(data: TopicData, frame_f: np.ndarray, cut: int | None, level: float
                 ) -> np.ndarray:
    """The predictions' pair sum over the frame (AP's predicted numerator, ``[n_runs]``),
    made once per frame, cutoff and level."""
    if not len(data.frame.units.index):  # nothing predicted above 0: every pair sum is 0
        return np.zeros(data.ranks.shape[0])
    key = ("pairs", "AP", cut, level)
    if key not in data.frame.totals:
        data.frame.totals[key] = _pair_sums(frame_f[None], frame_f[None], data.frame.ranks,
                                            data.frame.units, cut)[0][0]
    return data.frame.totals[key]
