"""How per-topic estimates become rows and intervals, for every estimator family (issue 28).

A design-based family computes, per topic and run, an estimate, its variance and an estimated
bias (:class:`TopicParts`, each ``[topics, runs]``); this module turns them into the rows
every family returns (``run, query_id, measure, value, lo, hi``; the mean over topics, or the
sum for counts, as ``query_id == "all"``), with

- normal intervals, z standard errors either side (:func:`summarise`; topics sampled
  independently, so Var(mean) = sum Var / T^2);
- bias-aware intervals, widened by |bias| per topic and by |sum of the biases| / T for the
  mean (Armstrong & Kolesar, Quantitative Economics 2020, the conservative form);
- the small-sample floor of AP's variance on topics whose sample holds at most one relevant
  document (the ``few`` option, :func:`few_relevant_variance`), applied alike to every
  family whose AP declares it (:func:`floored`).
- under ``few=completed``, an allowance that widens only the upper side of AP's intervals
  for the topics whose sample found no relevant document (:func:`upper_allowance`,
  :func:`summarise`'s ``upper``);
- under ``few=posterior``, the estimate of the topics with few relevant documents judged
  replaced by the completion model's posterior AP (:func:`corrected`);
- under ``few=assisted`` (``~ht``), the difference estimate with the completion model
  cross-fitted over the topics, its variance anticipated under that model (:func:`assisted`).

Families with intervals of another kind (importance sampling's Hoeffding and Bernstein
bounds) build their own ``lo``/``hi`` on :func:`summarise`'s rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from sampleval.estimation.engine.unseen import FORMS as UNSEEN_FORMS
from sampleval.estimation.engine.unseen import (
    SampleStrata,
    anticipated_ap_variance,
    completion_gap,
    posterior_ap,
    posterior_topics,
    unseen_variance,
)
from sampleval.estimation.options import pick
from sampleval.measures.aggregation import aggregate_of, over_topics, topic_sums

if TYPE_CHECKING:
    from sampleval.core.sample import Sample, TopicSample
    from sampleval.estimation.engine.views import TopicView
    from sampleval.estimation.spec import EstimateSpec

MEAN_TOPIC = "all"
COLUMNS = ["run", "query_id", "measure", "value", "lo", "hi"]
FEW_VALUES = ("moment", "bernoulli", "scaled", "bound", *UNSEEN_FORMS, "none")
ALLOWED_FORMS = ("completed",)
"""The ``few`` values whose intervals :func:`upper_allowance` widens (on the families whose
rows it reaches: ``~ht`` and ``~ppi``, :data:`FEW_OPTION_POOLED`)."""
VALUE_FORMS = ("posterior",)
"""The ``few`` values that replace the estimate itself on some topics (:func:`corrected`; on
the families whose parts reach it: ``~ht`` and ``~ppi``, :data:`FEW_OPTION_POOLED`)."""
FEW_OPTION = pick("few", tuple(f for f in FEW_VALUES if f not in (*ALLOWED_FORMS, *VALUE_FORMS)),
                  "moment")
"""AP's ``few`` option, as the AP families that take it declare it (``~ht`` and ``~ppi``:
:data:`FEW_OPTION_POOLED`)."""
ASSISTED = "assisted"
"""The ``few`` value that estimates AP by the difference estimator with the completion model
fitted on the other topics (``~ht`` only: :func:`sampleval.estimation.families.ht.
assisted_topics`), its variance anticipated under that model (:func:`corrected`)."""
FEW_OPTION_POOLED = pick("few", FEW_VALUES, "completed")
"""``~ht``'s ``few`` option, and ``~ppi``'s (which at zero predictions is ``~ht``):
``completed`` by default, ``pooled``'s variance with the upper side of the interval widened
by :func:`upper_allowance` (issue 29: ``pooled``, the default before, leaves the mean's bias
from the topics whose sample finds nothing uncovered; measured in docs/research/calibration.md,
section 13). On samples without partly-sampled strata its numbers are ``moment``'s."""
FEW_OPTION_HT = pick("few", (*FEW_VALUES, ASSISTED), "completed")
"""``~ht``'s ``few`` option: :data:`FEW_OPTION_POOLED`'s values and :data:`ASSISTED`."""


def is_census(topic: TopicSample) -> bool:
    """Whether every judged document of the topic's sample has inclusion probability 1."""
    judged = topic.judged
    return bool(judged.any()) and bool((topic.inclusion[judged] >= 1.0).all())


def judged_relevant(topic: TopicSample, level: float) -> int:
    """The number of relevant documents (label >= ``level``) the topic's sample judged."""
    return int(np.count_nonzero(topic.judged & (topic.labels >= level)))


def bias_widens(topic: TopicSample, level: float) -> bool:
    """Whether a bias-aware interval is widened by the estimated bias on this topic: its
    sample holds more than one judged document of non-zero relevance (a label above
    ``level`` - 1, so that a vote share counts, as the estimators sum it). With one or none,
    the jackknife's estimate of AP-hat's bias is degenerate (the replicate without the one
    relevant document is 0, so b is about -AP-hat) and the ``few`` floor stands for the
    topic's error instead (issue 29; docs/research/calibration.md, section 1); as
    degenerate is the gap between the jackknife's and the Taylor correction (``AP~hh``,
    ``AP~ppi`` over draws) where the one relevant document was drawn once. Applied by
    :func:`corrected` to every family whose AP takes ``few``."""
    return int(np.count_nonzero(topic.labels[topic.judged] > level - 1.0)) > 1


def few_relevant_variance(values: np.ndarray, variances: np.ndarray, views: list[TopicView],
                          relevant: np.ndarray, few: str) -> np.ndarray:
    """AP's ``variances[topic, run]`` where the topic's sample holds ``relevant[topic]`` <= 1
    relevant documents and is not a census, raised to a floor F_tr under the ``few`` option
    (:data:`FEW_OPTION`, issues 9 and 29): ``moment`` (``~hh``'s and the inferred family's
    default; ``~ht``'s and ``~ppi``'s, ``pooled``, add :func:`few_floor`'s term first), (1 -
    f_t) times the run's mean squared clipped estimate over the topics with a relevant document
    judged (1/4 where none); ``bernoulli`` (the Bhatia-Davis bound); ``scaled`` ((1 - f_t)/4);
    ``bound`` (1/4, Popoviciu); ``none``. Why, and each floor: docs/guide/estimators.md#few-relevant-documents-judged;
    measured: docs/research/calibration.md."""
    if few == "none":
        return variances
    share = np.array([float(v.sample.judged.mean()) if v.sample.judged.size else 1.0
                      for v in views])
    census = np.array([is_census(v.sample) for v in views], dtype=bool)
    few_topics = (np.asarray(relevant) <= 1) & ~census
    if not few_topics.any():
        return variances
    unjudged = (1.0 - share)[:, None]
    if few == "bound":
        floor = np.full(values.shape, 0.25)
    elif few == "scaled":
        floor = np.broadcast_to(0.25 * unjudged, values.shape)
    else:
        clipped = np.clip(np.nan_to_num(values), 0.0, 1.0)
        present = np.array([v.pool.present for v in views], dtype=bool).reshape(values.shape)
        seen = (np.asarray(relevant) >= 1)[:, None] & present  # the run retrieved there
        count = seen.sum(axis=0)
        m1 = np.divide(np.where(seen, clipped, 0.0).sum(axis=0), count,
                       out=np.full(values.shape[1], 0.5), where=count > 0)
        m2 = np.divide(np.where(seen, clipped**2, 0.0).sum(axis=0), count,
                       out=np.full(values.shape[1], 0.25), where=count > 0)
        level = m2 if few == "moment" else m1 * (1.0 - m1)
        floor = unjudged * level[None, :]
    return np.where(few_topics[:, None], np.maximum(variances, floor), variances)


def z_value(ci: float) -> float:
    """The two-sided normal quantile for confidence level ``ci`` (1.96 for 0.95)."""
    from scipy.stats import norm  # here: scipy.stats takes longer to import than many commands

    return float(norm.ppf(0.5 + ci / 2.0))


def summarise(run_names: tuple[str, ...], views: list[TopicView], measure: str,
              values: np.ndarray, variances: np.ndarray | None, ci: float,
              bias: np.ndarray | None = None, upper: np.ndarray | None = None
              ) -> pd.DataFrame:
    """Rows for per-topic estimates ``values[topic, run]`` and their mean over the topics each
    run retrieved for (their sum for counts: :mod:`sampleval.measures.aggregation`), with normal
    intervals from ``variances[topic, run]`` (topics sampled independently: Var(mean) =
    sum Var / T^2, Var(sum) = sum Var). Without variances, lo and hi are NaN.

    ``bias[topic, run]``, an estimate of each estimate's bias, widens its interval beyond z
    standard errors by |bias|, the mean's by |sum of the topics' biases| / T (a bias-aware
    interval: ``AP~ht(interval=bias-aware)``).

    ``upper[topic, run]``, an estimate of how far each estimate lies below its truth,
    widens only the upper side: each topic's hi by max(upper, 0), the mean's by max(sum of
    the topics' upper, 0) / T (a one-sided bias allowance: :func:`upper_allowance`)."""
    from sampleval.estimation.spec import parse_estimate

    present = np.array([v.pool.present for v in views]).reshape(len(views), len(run_names))
    aggregate = aggregate_of(parse_estimate(measure).base)
    mean = over_topics(values, present, aggregate)
    z = z_value(ci)
    if variances is None:
        half_topic = up_topic = np.full(values.shape, np.nan)
        half_mean = up_mean = np.full(len(run_names), np.nan)
    else:
        half_topic = z * np.sqrt(np.maximum(variances, 0.0))
        if bias is not None:
            half_topic = half_topic + np.abs(bias)
        up_topic = half_topic if upper is None else half_topic + np.maximum(upper, 0.0)
        half_mean, up_mean = mean_sides(
            topic_sums(np.maximum(variances, 0.0), present), z,
            None if bias is None else topic_sums(bias, present),
            None if upper is None else topic_sums(upper, present),
            1 if aggregate == "sum" else np.maximum(present.sum(axis=0), 1))
    t_idx, r_idx = np.nonzero(present)
    topics = np.array([v.pool.topic for v in views], dtype=object)
    names = np.asarray(run_names, dtype=object)
    per_topic = pd.DataFrame({
        "run": names[r_idx], "query_id": topics[t_idx], "measure": measure,
        "value": values[t_idx, r_idx],
        "lo": values[t_idx, r_idx] - half_topic[t_idx, r_idx],
        "hi": values[t_idx, r_idx] + up_topic[t_idx, r_idx],
    })
    overall = pd.DataFrame({"run": names, "query_id": MEAN_TOPIC, "measure": measure,
                            "value": mean, "lo": mean - half_mean, "hi": mean + up_mean})
    return pd.concat([per_topic, overall], ignore_index=True)[COLUMNS]


def mean_sides(total: np.ndarray, z: float | np.ndarray, bias: np.ndarray | None,
               upper: np.ndarray | None, count: int | np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper half-widths of a mean (or, ``count`` 1, a sum) over topics, per
    run, as :func:`summarise` reports them: from the topics' summed variance ``total``, z
    standard errors (``z``: one multiplier, or one per run: an anytime-valid sequence's,
    :mod:`sampleval.estimation.anytime`), plus |``bias``| (the summed estimated bias: a
    bias-aware interval) on both sides, divided by ``count``; the upper side widened by
    max(``upper``, 0) / ``count`` (``upper``: the summed one-sided allowance,
    :func:`upper_allowance`). The one home of a mean's interval: ``estimate``'s rows and
    judging until confident's target checks and projections (:mod:`sampleval.judging.
    confident`) both read it here. Where the two sides differ, the interval's half-width is
    their mean, (hi - lo) / 2."""
    down = z * np.sqrt(total)
    if bias is not None:
        down = down + np.abs(bias)
    down = down / count
    if upper is None:
        return down, down
    return down, down + np.maximum(upper, 0.0) / count


class TopicParts(NamedTuple):
    """Per topic and run (each ``[topics, runs]``): the estimate, its variance and the
    estimated bias that widens its interval (0: a normal interval)."""

    value: np.ndarray
    variance: np.ndarray
    bias: np.ndarray


# (run names, aligned topics, sample, one measure, level) -> its TopicParts
PartsFunction = Callable[
    [tuple[str, ...], "list[TopicView]", "Sample", "EstimateSpec", float], TopicParts]


def few_floor(values: np.ndarray, variances: np.ndarray, views: list[TopicView],
              level: float, few: str, shared: SampleStrata | None = None) -> np.ndarray:
    """:func:`few_relevant_variance` with each topic's judged relevant documents counted at
    ``level``; ``few`` in :data:`~sampleval.estimation.engine.unseen.FORMS` (``jeffreys``,
    ``pooled``): the variance plus the unseen relevant documents' term of
    :func:`~sampleval.estimation.engine.unseen.unseen_variance` (0 on samples without
    strata), then ``moment``'s floor. ``shared``: the sample's strata, built once for every
    measure (:func:`shared_strata`)."""
    relevant = np.array([judged_relevant(v.sample, level) for v in views])
    if few in UNSEEN_FORMS:
        variances = variances + unseen_variance(values, views, level, few, shared)
        few = "moment"
    return few_relevant_variance(values, variances, views, relevant, few)


def takes_few(spec: EstimateSpec) -> bool:
    """Whether ``spec`` is an AP estimate whose family declares the ``few`` option for it."""
    from sampleval.estimation.family import FAMILIES

    declared = FAMILIES[spec.family].base(spec.base)
    return spec.base == "AP" and declared is not None and "few" in declared.options


def shared_strata(views: list[TopicView], level: float) -> SampleStrata:
    """What the ``few`` terms of every AP measure on one sample share (its strata, ranks,
    pooled prior and rank tables, each built when first asked): a family that estimates
    several measures passes it to :func:`corrected` and :func:`estimated_rows`."""
    return SampleStrata(views, level)


def corrected(spec: EstimateSpec, views: list[TopicView], level: float,
              parts: TopicParts, shared: SampleStrata | None = None) -> TopicParts:
    """``parts`` with the corrections of this module, where the family's AP takes the
    ``few`` option (:func:`takes_few`): the ``few`` floor of the variance, and no widening
    by the estimated bias on the topics where it does not widen (:func:`bias_widens`), for
    which that floor stands instead. Under ``few=posterior`` the value of the topics
    :func:`~sampleval.estimation.engine.unseen.posterior_topics` names is
    :func:`~sampleval.estimation.engine.unseen.posterior_ap`'s (no bias widening there; the
    variance is ``pooled``'s, of the design-based estimate). ``shared``:
    :func:`shared_strata`."""
    if not takes_few(spec):
        return parts
    few = spec.option("few")
    if few == ASSISTED and views:
        return assisted(spec, views, level, parts,
                        SampleStrata(views, level) if shared is None else shared)
    widens = np.array([bias_widens(v.sample, level) for v in views], dtype=bool)
    value = parts.value
    if few in VALUE_FORMS and views:
        shared = SampleStrata(views, level) if shared is None else shared
        use = posterior_topics(shared)
        if use.any():
            value = np.where(use[:, None] & ~np.isnan(value),
                             posterior_ap(shared, cutoff=spec.cutoff), value)
            widens &= ~use
    return TopicParts(value, few_floor(parts.value, parts.variance, views, level, few, shared),
                      np.where(widens.reshape(-1, *([1] * (parts.bias.ndim - 1))),
                               parts.bias, 0.0))


def assisted(spec: EstimateSpec, views: list[TopicView], level: float, parts: TopicParts,
             shared: SampleStrata) -> TopicParts:
    """``few=assisted``'s rows: the difference estimate as the family made it, its variance
    the design's anticipated under the cross-fitted completion model
    (:func:`~sampleval.estimation.engine.unseen.anticipated_ap_variance` of the residuals;
    issue 29, docs/research/calibration.md section 18), no bias widening. A topic the model
    predicts nothing for (a sample without partly-sampled strata, or a fold whose other
    topics found nothing relevant) keeps ``pooled``'s variance of its (then design-based)
    estimate."""
    rates = shared.assisted_rates
    modelled = np.bincount(shared.frame.topic, weights=rates, minlength=len(views)) > 0
    pooled = few_floor(parts.value, parts.variance, views, level, "pooled", shared)
    if modelled.any():
        pooled = np.where(modelled[:, None], anticipated_ap_variance(
            shared, rates, cutoff=spec.cutoff), pooled)
    return TopicParts(parts.value, pooled, np.zeros_like(parts.bias))


def floored(parts: PartsFunction) -> PartsFunction:
    """``parts`` with :func:`corrected` applied to what it returns. ``parts`` must estimate
    each topic from its own sample alone (:data:`UNFLOORED`)."""
    def applied(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                spec: EstimateSpec, level: float) -> TopicParts:
        return corrected(spec, views, level, parts(run_names, views, sample, spec, level))
    applied.__module__, applied.__qualname__ = parts.__module__, parts.__qualname__
    applied.__doc__ = parts.__doc__
    UNFLOORED[applied] = parts
    return applied


UNFLOORED: dict[Callable[..., Any], PartsFunction] = {}
"""``floored(parts)`` -> ``parts``: a family's parts before the floor, each topic's read from
its own sample alone, so that a caller who re-estimates only the topics whose samples changed
(``judging.confident``'s looks) gets the same numbers by applying :func:`corrected` over every
topic's parts (the floor is the only step that pools topics)."""


def upper_allowance(spec: EstimateSpec, views: list[TopicView], level: float,
                    values: np.ndarray, shared: SampleStrata | None = None
                    ) -> np.ndarray | None:
    """``[topics, runs]``, the one-sided allowance that widens the upper side of AP's
    intervals under ``few=completed`` (:func:`summarise`'s ``upper``), from the completion gap
    (:func:`~sampleval.estimation.engine.unseen.completion_gap`): a topic whose sample holds no
    relevant document, its gap; any other, its gap where negative, 0 where positive. None for
    every other ``few`` value. ``shared``: :func:`shared_strata`. Why each:
    docs/guide/estimators.md#few-relevant-documents-judged."""
    if not takes_few(spec) or spec.option("few") not in ALLOWED_FORMS:
        return None
    gap = completion_gap(values, views, level, shared)
    nothing = np.array([judged_relevant(v.sample, level) == 0 and not is_census(v.sample)
                        for v in views], dtype=bool)
    return np.where(nothing[:, None], gap, np.minimum(gap, 0.0))


def rows(run_names: tuple[str, ...], views: list[TopicView], spec: EstimateSpec,
         parts: TopicParts, ci: float, upper: np.ndarray | None = None) -> pd.DataFrame:
    """The rows of one measure from its :class:`TopicParts` (:func:`summarise`), the upper
    side widened by ``upper`` (:func:`upper_allowance`)."""
    return summarise(run_names, views, spec.name, parts.value, parts.variance, ci, parts.bias,
                     upper)


def estimated_rows(run_names: tuple[str, ...], views: list[TopicView], spec: EstimateSpec,
                   parts: TopicParts, ci: float, level: float,
                   shared: SampleStrata | None = None) -> pd.DataFrame:
    """:func:`rows` with the upper side widened by :func:`upper_allowance` (AP under
    ``few=completed``), for relevance at ``level``; ``shared``: :func:`shared_strata`."""
    return rows(run_names, views, spec, parts, ci,
                upper_allowance(spec, views, level, parts.value, shared))


def rows_of(parts: PartsFunction) -> Callable[..., pd.DataFrame]:
    """A family's ``compute`` (every requested measure's rows) from its parts function."""
    def compute(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                specs: list[EstimateSpec], level: float, ci: float) -> pd.DataFrame:
        return pd.concat([estimated_rows(run_names, views, spec,
                                         parts(run_names, views, sample, spec, level), ci,
                                         level) for spec in specs], ignore_index=True)
    compute.__module__, compute.__qualname__ = parts.__module__, parts.__qualname__
    return compute
