"""The prediction-powered family ``~ppi``: machine predictions for every frame document,
corrected by the judged sample's residuals (``P@10~ppi``, ``AP~ppi`` ...), a preset over the
engine (:mod:`sampleval.estimation.engine`).

The estimate is the difference (model-assisted) estimator (Sarndal, Swensson & Wretman,
*Model Assisted Survey Sampling*, 1992, ch. 6; "prediction-powered inference", Angelopoulos
et al., Science 2023; for IR measures Oosterhuis et al., KDD 2024),

    T-hat(lam) = lam sum_{i in U} w_i f_i + sum_{k in S} W_k w_k (y_k - lam f_k),

over the sample's units S (:mod:`~sampleval.estimation.engine.units`: the judged documents,
form ``ht``, or the draws, form ``draws``; the option ``weights``), lam power-tuned
(:mod:`~sampleval.estimation.engine.tuning`, option ``tuning``), ratios corrected for their
bias (:mod:`~sampleval.estimation.engine.corrections`, option ``bias``);
``interval=bias-aware`` widens AP's interval by the estimated remaining bias; ``few`` floors
AP's variance (:mod:`sampleval.estimation.result`). With predictions all 0 the ``ht`` form is
``~ht`` and the ``draws`` form ``~hh`` (tests/contracts/test_equivalences.py).

Imputed share: 0 (the predictions enter only through a correction whose expectation is 0). A
frame document without a prediction predicts 0. The measurements behind every default, with
their commands: docs/research/ppi.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.tuning import TUNINGS
from sampleval.estimation.engine.units import FORMS, TopicData, chosen_form, topic_data
from sampleval.estimation.engine.values import PPIResult, ppi_values
from sampleval.estimation.engine.views import TopicView
from sampleval.estimation.families.ppi_unseen import UNSEEN, takes_unseen, unseen_variance
from sampleval.estimation.family import Base, EstimatorFamily, register_family
from sampleval.estimation.options import RATIO_BIAS, pick
from sampleval.estimation.result import (
    FEW_OPTION_POOLED,
    TopicParts,
    corrected,
    estimated_rows,
    shared_strata,
)
from sampleval.estimation.spec import EstimateSpec


def _topics(views: list[TopicView], sample: Sample, spec: EstimateSpec, form: str | None,
            made: dict[str, list[TopicData]]) -> list[TopicData]:
    """Each topic's units in ``form`` (None: ``spec``'s ``weights`` option on the sample,
    :func:`~sampleval.estimation.engine.units.chosen_form`), made once per form into ``made``."""
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


def _parts(spec: EstimateSpec, result: PPIResult, topics: list[TopicData], level: float
           ) -> TopicParts:
    """The rows' parts of ``result``: AP's bias-aware interval widened by ``remaining``
    (:func:`~sampleval.estimation.result.corrected` drops it where it does not widen); the
    variance with the unseen disagreements' share where ``unseen`` asks for it
    (:mod:`.ppi_unseen`)."""
    aware = spec.base == "AP" and spec.option("interval") == "bias-aware"
    biases = result.remaining if aware and result.remaining is not None else None
    variance = result.variance + (unseen_variance(topics, level, result.value, result.lam)
                                  if takes_unseen(spec) else 0.0)
    return TopicParts(result.value, variance,
                      np.zeros_like(result.value) if biases is None else biases)


def ppi_parts(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
              spec: EstimateSpec, level: float) -> TopicParts:
    """Per topic and run: the prediction-powered estimate of ``spec``, its variance and the
    bias that widens its interval (:func:`~sampleval.estimation.engine.values.ppi_values`; AP's ``few`` floor applied)."""
    topics = _topics(views, sample, spec, None, {})
    return corrected(spec, views, level, _parts(spec, ppi_values(
        spec, topics, level, spec.option("tuning")), topics, level))


def ppi_differences(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                    spec: EstimateSpec, level: float, pairs: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and pair (a, b) of run indices (``pairs`` ``[P, 2]``): the estimated
    difference ``spec``_a - ``spec``_b and the variance of that difference, both
    ``[topics, P]`` (:func:`~sampleval.estimation.engine.values.ppi_values`' ``pair_variance``: with good predictions smaller
    than ``~ht``'s, equal to it with predictions all 0)."""
    topics = _topics(views, sample, spec, None, {})
    result = ppi_values(spec, topics, level, spec.option("tuning"), pairs=pairs)
    extra = (unseen_variance(topics, level, result.value, result.lam, pairs)
             if takes_unseen(spec) else 0.0)
    values, variances = result.differences(pairs)
    return values, variances + extra


def estimate_ppi(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                 specs: list[EstimateSpec], level: float, ci: float, *,
                 form: str | None = None) -> pd.DataFrame:
    """Prediction-powered estimates of ``specs`` for every run and topic (and their mean),
    with normal intervals at level ``ci`` (AP's bias-aware as ``interval`` says); the form
    is ``form`` if given, else each spec's ``weights`` option (``by-design``: by the sample's
    design, :func:`~sampleval.estimation.engine.units.sample_form`), and each spec's ``tuning`` option as the module docstring
    says. The measures share each form's units."""
    made: dict[str, list[TopicData]] = {}
    frames = []
    shared = shared_strata(views, level)  # the few terms' strata, built once for every AP
    for spec in specs:
        topics = _topics(views, sample, spec, form, made)
        result = ppi_values(spec, topics, level, spec.option("tuning"))
        frames.append(estimated_rows(run_names, views, spec, corrected(
            spec, views, level, _parts(spec, result, topics, level), shared), ci, level,
            shared))
    return pd.concat(frames, ignore_index=True)


register_family(EstimatorFamily(
    name="ppi", title="prediction-powered (difference) estimators: predictions for every "
                      "document, corrected by the sample's residuals; power-tuned",
    reference="Sarndal et al. 1992, ch. 6; Angelopoulos et al. 2023 (PPI, PPI++)",
    bases=tuple(Base(name, cutoff, options=("tuning", "weights", *extra))
                for name, cutoff, extra in (
                    ("AP", "optional", ("bias", "interval", "few", "unseen")),
                    ("P", "required", ("variance",)),
                    ("R", "required", (RATIO_BIAS,)),
                    ("Rprec", "no", ("cut", RATIO_BIAS)),
                    ("nDCG", "optional", (RATIO_BIAS,)),
                    ("DCG", "optional", ("variance",)), ("NumRel", "no", ("variance",)))),
    requires=("is_probability_design",), estimands=("total",),
    compute=estimate_ppi, parts=ppi_parts, differences=ppi_differences,
    plain_bias=("none",),  # the others widen on some design (taylor, jackknife over draws)
    needs_predictions=True,
    options=(pick("tuning", TUNINGS, "by-measure"),
             pick("bias", ("by-design", "taylor", "taylor-jackknife", "jackknife", "none"),
                  "by-design"),
             pick("interval", ("bias-aware", "normal"), "bias-aware"),
             pick("weights", ("by-design", *FORMS), "by-design"),
             pick("variance", ("anticipated", "design"), "anticipated"),
             pick("cut", ("floor", "round"), "floor"), FEW_OPTION_POOLED,
             pick("unseen", UNSEEN, "none"))))
