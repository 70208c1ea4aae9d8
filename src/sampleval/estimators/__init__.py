"""Estimating measures from a Sample: one entry point, :func:`estimate`, over every family.

The families declare themselves in their own modules (:mod:`.family`); the registry
:data:`~sampleval.estimators.family.FAMILIES` lists them (``sampleval methods`` prints them).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators.base import COLUMNS, MEAN_TOPIC, topic_views
from sampleval.estimators.family import FAMILIES
from sampleval.estimators.names import EstimateSpec, estimator_for, parse_estimate

# the plain measures `sampleval estimate` estimates when none is named, each with the
# estimator its sample's design prefers (names.estimator_for)
DEFAULT_MEASURES: tuple[tuple[str, int | None], ...] = (
    ("AP", None), ("nDCG", 10), ("P", 10), ("NumRel", None))

__all__ = ["MEAN_TOPIC", "default_estimates", "estimate", "largest_grade", "requested"]


def largest_grade(sample: Sample) -> float:
    """The top of the judgments' scale: the sample's largest label, at least 1 (so that
    probabilities of relevance always fit)."""
    labels = sample.frame["relevance"].to_numpy(dtype=np.float64)
    return max(1.0, float(np.nanmax(labels, initial=0.0)))


def default_estimates(sample: Sample) -> tuple[str, ...]:
    """The measures estimated by default for ``sample``: each of :data:`DEFAULT_MEASURES` by
    the estimator its design prefers, with trec_eval's infAP first when every topic is one
    uniformly sampled stratum (infAP's own design)."""
    if sample.design == "pooled":
        raise UsageError("a pooled (deterministic) sample supports no design-based estimator: "
                         "evaluate its judgments exactly with 'sampleval evaluate' instead")
    specs = [estimator_for(base, cut, sample.design) for base, cut in DEFAULT_MEASURES]
    names = [s.name for s in specs if s is not None]
    if not names:
        raise UsageError(f"no estimator is available for a {sample.design} sample; "
                         "name one with --measure")
    uniform = sample.design in ("stratified", "census") and (
        sample.frame.groupby("query_id")["stratum"].nunique().max() <= 1)
    return tuple(dict.fromkeys((["infAP"] if uniform else []) + names))


def requested(sample: Sample, measures: Sequence[str],
              with_predictions: bool = False) -> list[EstimateSpec]:
    """The estimated measures named, each checked to apply to the sample's design and to
    have the predictions it needs (UsageError, before any run is read)."""
    specs = list(dict.fromkeys(parse_estimate(m) for m in measures))
    for spec in specs:
        family = FAMILIES[spec.family]
        if sample.design not in family.designs:
            raise UsageError(f"{spec.name} needs a {' or '.join(family.designs)} sample, "
                             f"not a {sample.design} one")
        if family.needs_predictions and not with_predictions:
            raise UsageError(f"{spec.name} needs predictions of relevance (--predictions "
                             "FILE; in the library, predictions=)")
    return specs


def _check_predictions(predictions: Predictions, sample: Sample) -> None:
    """Predictions on the judgments' scale that name some of the sample's documents (a
    warning says how many of them lack one)."""
    predictions.check_scale(largest_grade(sample))
    share = predictions.coverage(sample.frame)
    where = f" in {predictions.source}" if predictions.source else ""
    if share == 0:
        raise UsageError(f"the predictions{where} name none of the sample's documents (do "
                         "their topic ids and docnos match the sample's?)")
    if share < 1:
        warnings.warn(f"the predictions{where} cover {share:.1%} of the sample's frame "
                      "documents; the others predict 0 (unbiased, but without the "
                      "predictions' gain; see docs/predictions.md)", stacklevel=3)


def estimate(sample: Sample, runs: Sequence[Run], measures: Sequence[str], *,
             depth: int | None = None, level: float = 1, ci: float = 0.95,
             predictions: Predictions | pd.DataFrame | None = None) -> pd.DataFrame:
    """Estimate ``measures`` for ``runs`` from ``sample``.

    Returns columns ``run, query_id, measure, value, lo, hi`` (``lo``/``hi``: the ``ci``
    confidence interval, NaN where the estimator gives none); the mean over the topics each
    run retrieved for has ``query_id == "all"``. Only topics the sample has are estimated.
    ``predictions`` (a :class:`~sampleval.core.predictions.Predictions` or a DataFrame
    ``query_id, doc_id, prediction``) feed the families that use them (``P@10~ppi``); their
    values must not exceed the sample's largest grade (or 1).
    """
    if not 0 < ci < 1:
        raise UsageError(f"the confidence level must lie in (0, 1), not {ci}")
    specs = requested(sample, measures, predictions is not None)
    if isinstance(predictions, pd.DataFrame):
        predictions = Predictions.from_frame(predictions)
    if predictions is not None and any(FAMILIES[s.family].needs_predictions for s in specs):
        _check_predictions(predictions, sample)
    run_names = tuple(r.name for r in runs)
    pools: dict[type[np.floating], Pool] = {}
    frames = []
    for name in dict.fromkeys(s.family for s in specs):
        family = FAMILIES[name]
        if family.score_type not in pools:
            pools[family.score_type] = Pool.from_runs(runs, depth=depth, topics=sample.topics,
                                                      score_type=family.score_type)
        views = topic_views(pools[family.score_type], sample,
                            predictions if family.needs_predictions else None)
        if not views:
            raise UsageError("the sample and the runs have no topic in common")
        mine: list[EstimateSpec] = [s for s in specs if s.family == name]
        frames.append(family.compute(run_names, views, sample, mine, level, ci))
    order = {s.name: i for i, s in enumerate(specs)}
    out = pd.concat(frames, ignore_index=True)[COLUMNS]
    return out.sort_values("measure", key=lambda m: m.map(order), kind="stable").reset_index(
        drop=True)
