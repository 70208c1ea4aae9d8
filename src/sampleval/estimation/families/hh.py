"""The per-draw (Hansen-Hurwitz) family ``~hh``, for with-replacement designs, adaptive ones
included.

T-hat = (1/n) sum_k z_{d_k} / p_k(d_k) over n draws with replacement (Hansen & Hurwitz, Ann.
Math. Stat. 1943), unbiased for a fixed n whenever p_k(d) > 0 wherever z_d != 0, even where
p_k depends on the draws before (active sampling, Li & Kanoulas, CIKM 2017; importance
sampling, Schnabel et al., ICTIR 2016, eq. 4); its variance s^2/n of the per-draw terms.
Ratios (AP, R@k, Rprec, nDCG) are ratios of such estimates, AP's numerator a U-statistic over
pairs of draws (Hoeffding 1948). The martingale argument: docs/guide/estimators.md#per-draw-estimates.

``X~hh`` is ``X~ppi(weights=draws,variance=design)`` with predictions all 0
(:func:`sampleval.estimation.engine.values.without_predictions`). Options: AP's ``bias``
(jackknife, the default, Quenouille 1956; taylor; none: Cochran 1977, sec. 6.8),
``interval`` (bias-aware: widened by the gap between the jackknife's and the Taylor
correction) and ``few``; R@k's, Rprec's and nDCG's ``bias``; Rprec's ``cut``. Which designs
take ``~hh`` by default, and the measurements behind it: docs/research/hh.md."""

from __future__ import annotations

import numpy as np

from sampleval.core.sample import Sample
from sampleval.estimation.engine.values import without_predictions
from sampleval.estimation.engine.views import TopicView
from sampleval.estimation.family import Base, EstimatorFamily, register_family
from sampleval.estimation.options import RATIO_BIAS, pick
from sampleval.estimation.result import FEW_OPTION, TopicParts, floored, rows_of
from sampleval.estimation.spec import EstimateSpec


def hh_parts(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
             spec: EstimateSpec, level: float) -> TopicParts:
    """Per topic and run: the estimate, its variance and the bias estimate that widens its
    interval (AP's ``interval=bias-aware``: the difference between the jackknife's and the
    Taylor correction, module docstring; 0 elsewhere), each ``[topics, runs]``: the
    prediction-powered engine's ``draws`` form with every prediction 0
    (:func:`~sampleval.estimation.engine.values.without_predictions`)."""
    return without_predictions(spec, views, sample, level).parts()


def hh_differences(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                   spec: EstimateSpec, level: float, pairs: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and pair (a, b) of run indices (``pairs`` ``[P, 2]``): the estimated
    difference ``spec``_a - ``spec``_b and the variance of that difference over the draws,
    both ``[topics, P]``."""
    return without_predictions(spec, views, sample, level, pairs).differences(pairs)


PARTS = floored(hh_parts)

register_family(EstimatorFamily(
    name="hh", title="per-draw (Hansen-Hurwitz) mean of z/p_t over all draws; unbiased under "
                     "adaptive draw probabilities for totals, ratios over per-draw totals",
    reference="Hansen & Hurwitz 1943; a martingale argument; pairs of draws as a U-statistic "
              "(docs/guide/estimators.md#per-draw-estimates)",
    bases=(Base("P", "required"), Base("DCG", "optional"),
           Base("NumRel"), Base("AP", "optional", options=("bias", "interval", "few")),
           Base("R", "required", options=(RATIO_BIAS,)),
           Base("Rprec", options=("cut", RATIO_BIAS)),
           Base("nDCG", "optional", options=(RATIO_BIAS,))),
    requires=("has_draws",), estimands=("total",),
    compute=rows_of(PARTS), parts=PARTS, differences=hh_differences,
    plain_bias=("none",),  # taylor and jackknife widen by the gap between the two
    options=(pick("bias", ("taylor", "jackknife", "none"), "jackknife"),
             pick("interval", ("bias-aware", "normal"), "bias-aware"),
             pick("cut", ("floor", "round"), "floor"), FEW_OPTION)))
