"""The engine's one driver: per-topic estimates, variances and biases of a measure for every run
(:func:`ppi_values`), from the units (:mod:`.units`), the estimate as a function of lam
(:mod:`.difference`), lam's tuning (:mod:`.tuning`) and the corrections
(:mod:`.corrections`); the linear measures take by default the anticipated variance
(:mod:`.anticipated`). Every option value, the variance of a difference of two runs (for
``compare``) and the per-topic parts come from it; :func:`without_predictions` is the plain
design-based estimate (every prediction 0, lam without a part), ``~hh``'s.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.anticipated import anticipated_variance, label_model
from sampleval.estimation.engine.corrections import (
    CORRECTED,
    GAPS,
    _corrections,
    _per,
    ap_jackknife,
    ap_taylor_jackknife,
    design_bias,
)
from sampleval.estimation.engine.difference import Parts, topic_estimate
from sampleval.estimation.engine.estimands import _contrast
from sampleval.estimation.engine.tuning import TUNINGS, by_measure, tuned
from sampleval.estimation.engine.units import TopicData, is_graded, is_total, topic_datas
from sampleval.estimation.engine.views import TopicView, gain, relevance
from sampleval.estimation.result import TopicParts
from sampleval.estimation.spec import EstimateSpec


class PPIResult(NamedTuple):
    """Per-topic estimates and their variances (``[topics, n_runs]``), the lam each used
    (``[topics, 2, n_runs]``: in the numerator, in the denominator) and the estimates
    before the ratio-bias correction (``uncorrected``: ``bias=none``'s, with the same lam
    and variance; equal to ``value`` where no correction was asked for); with
    ``bias=taylor-jackknife``, ``remaining``: the jackknife's estimate b of the bias the
    Taylor-corrected estimate keeps (``[topics, n_runs]``; ``bias=taylor``'s estimate is
    ``value + remaining``, :func:`~.corrections.ap_taylor_jackknife`); over draws with a bias-aware
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

    def parts(self) -> TopicParts:
        """The rows' parts: the estimates, their variances and what widens a bias-aware
        interval (``remaining``; 0 where none)."""
        return TopicParts(self.value, self.variance, np.zeros_like(self.value)
                          if self.remaining is None else self.remaining)

    def differences(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per topic and pair (a, b) of run indices (``pairs``, as computed with): the
        difference of the estimates and its variance, both ``[topics, P]``."""
        assert self.pair_variance is not None
        return _contrast(self.value.T, pairs).T, self.pair_variance


def ppi_values(spec: EstimateSpec, topics: list[TopicData], level: float,
               tuning: str = "by-measure", bias: str | None = None,
               anticipated: bool | None = None, pairs: np.ndarray | None = None,
               rounded: bool = True) -> PPIResult:
    """Per-topic estimates of ``spec`` and their variances for every run, with lam tuned as
    ``tuning`` says (``by-measure``, ``cross-fit``, ``plug-in``, ``none``; the module
    docstring);
    ``bias`` (None: the ``bias`` option, AP's ``by-design`` resolved, by
    :func:`~.corrections.design_bias`; ``none`` for the other measures): ``taylor``, a
    ratio less its estimated first-order bias (:func:`~.corrections.taylor_bias`), ``jackknife``,
    ``taylor-jackknife`` (AP). ``remaining``
    holds the bias estimate that widens a bias-aware interval: taylor-jackknife's b, or
    over draws (AP with ``bias`` jackknife or taylor and ``interval=bias-aware``) the
    jackknife's estimate less the Taylor-corrected one. ``anticipated``: whether a linear
    measure takes the anticipated variance (None: as its ``variance`` option says).
    ``pairs`` (``[P, 2]`` run indices): also the variance of each pair's difference, the same
    variance estimator applied to the difference of the two runs' linearised values (or
    replicates, or anticipated residuals) at each run's final lam. ``rounded``:
    :func:`~.difference.topic_estimate`'s."""
    if bias is None:
        bias = (design_bias(spec, topics[0].units) if spec.base in CORRECTED and topics
                else "none")
    if tuning not in TUNINGS:
        raise UsageError(f"unknown tuning {tuning!r} (one of {', '.join(TUNINGS)})")
    if tuning == "by-measure":
        tuning = by_measure(spec.base)
    n_runs = topics[0].ranks.shape[0] if topics else 0
    estimates = [topic_estimate(spec, level, data, rounded) for data in topics]
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


def takes_anticipated(spec: EstimateSpec) -> bool:
    """Whether ``spec`` asks for the anticipated variance: a linear measure with
    ``variance=anticipated`` (the default)."""
    return is_total(spec.base) and spec.option("variance") == "anticipated"


def anticipated_variances(spec: EstimateSpec, level: float, topics: list[TopicData],
                          lam: np.ndarray, design: np.ndarray,
                          pairs: np.ndarray | None = None) -> np.ndarray:
    """Each topic's anticipated variance at its ``lam`` (``[topics, n_runs]``) under the
    relevance model learnt from the judged documents of every topic whose design it can
    anticipate (:mod:`.anticipated`: a stratified sample, or draws with every frame
    document's p-bar recorded); the ``design`` variances of the other topics, and of all
    where no model can be fitted; with ``pairs``, of each pair's difference
    (``[topics, P]``)."""
    graded = is_graded(spec.base)
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


def _pair_variance(spec: EstimateSpec, level: float, data: TopicData, lam: np.ndarray,
                   parts: Parts, bias: str, pairs: np.ndarray) -> np.ndarray:
    """The variance of each pair's difference of one topic's estimates (``[P]``), by the
    estimator :func:`~.corrections._corrections` gives each run's: the taylor-jackknife's or the
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


def without_predictions(spec: EstimateSpec, views: list[TopicView], sample: Sample,
                        level: float, pairs: np.ndarray | None = None,
                        bias: str | None = None, rounded: bool = True) -> PPIResult:
    """``spec`` in the ``draws`` form with every prediction 0, where lam has no part: the
    per-draw (Hansen-Hurwitz) estimate and its design variance, AP's with its ``bias``
    option and R@k's, Rprec's and nDCG's with theirs (``~hh``,
    :mod:`sampleval.estimation.families.hh`), or with ``bias`` (``~is``: none, and
    ``rounded`` False); equal to ``~ppi(weights=draws,variance=design)`` with predictions
    all 0. Needs no predictions; a UsageError without the sample's draws."""
    if sample.draws is None:
        raise UsageError(f"{spec.name} needs the sample's draws with their probabilities")
    topics = [topic_datas(view, sample, "draws", [np.zeros(len(view.sample.docnos))])[0]
              for view in views]
    return ppi_values(spec, topics, level, tuning="none", bias=bias, anticipated=False,
                      pairs=pairs, rounded=rounded)
