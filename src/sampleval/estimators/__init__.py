"""Estimating measures from a Sample: one entry point, :func:`estimate`, over every family.

Families (see ``names.py`` for the measure names and the README for what each assumes):
``trec_eval`` (infAP), ``nist`` (xinfAP, infNDCG, iP@k, inum_rel, inum_rel_ret), ``ht``
(Horvitz-Thompson), ``is`` (importance sampling), ``stat`` (statAP).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators.base import COLUMNS, MEAN_TOPIC, TopicView, topic_views
from sampleval.estimators.hansen_hurwitz import estimate_hh
from sampleval.estimators.horvitz_thompson import estimate_ht
from sampleval.estimators.importance import estimate_is
from sampleval.estimators.inferred import estimate_nist, estimate_trec_eval
from sampleval.estimators.names import EstimateSpec, parse_estimate
from sampleval.estimators.statap import estimate_statap

# (run names, aligned topics, sample, the family's requested measures, level, ci) -> rows
Family = Callable[[tuple[str, ...], list[TopicView], Sample, list[EstimateSpec], float, float],
                  pd.DataFrame]

OneMeasure = Callable[[tuple[str, ...], list[TopicView], Sample, EstimateSpec, float, float],
                      pd.DataFrame]


def _each(one: OneMeasure) -> Family:
    """A family from an estimator of one measure at a time."""
    def family(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
               specs: list[EstimateSpec], level: float, ci: float) -> pd.DataFrame:
        return pd.concat([one(run_names, views, sample, spec, level, ci) for spec in specs],
                         ignore_index=True)
    return family


FAMILY_FUNCTIONS: dict[str, Family] = {
    "trec_eval": estimate_trec_eval,
    "nist": estimate_nist,
    "ht": _each(estimate_ht),
    "hh": _each(estimate_hh),
    "is": _each(estimate_is),
    "stat": _each(estimate_statap),
}
# sample_eval (Perl) compares scores as doubles; trec_eval as floats.
_SCORE_TYPE = {"nist": np.float64}

# what `sampleval estimate` computes when no measure is named, by the sample's design
_HT = ("AP~ht", "nDCG@10~ht", "P@10~ht", "NumRel~ht")
DEFAULT_ESTIMATES: dict[str, tuple[str, ...]] = {
    "census": ("xinfAP", "infNDCG", "iP@10", "inum_rel"),
    "stratified": ("xinfAP", "infNDCG", "iP@10", "AP~ht", "P@10~ht"),
    "poisson": _HT,
    "inclusion": ("statAP", *_HT),
    "with-replacement": _HT,
    "importance": ("P@10~is", "DCG@10~is", "nDCG@10~is"),
}

__all__ = ["MEAN_TOPIC", "default_estimates", "estimate"]


def default_estimates(sample: Sample) -> tuple[str, ...]:
    """The measures estimated by default for ``sample``: by its design, with trec_eval's
    infAP first when every topic is one uniformly sampled stratum (infAP's own design)."""
    if sample.design == "pooled":
        raise UsageError("a pooled (deterministic) sample supports no design-based estimator: "
                         "evaluate its judgments exactly with 'sampleval evaluate' instead")
    if sample.design not in DEFAULT_ESTIMATES:
        raise UsageError(f"no estimator is available yet for a {sample.design} sample; "
                         "name one with --measure")
    uniform = sample.design in ("stratified", "census") and (
        sample.frame.groupby("query_id")["stratum"].nunique().max() <= 1)
    return (("infAP",) if uniform else ()) + DEFAULT_ESTIMATES[sample.design]


def estimate(sample: Sample, runs: Sequence[Run], measures: Sequence[str], *,
             depth: int | None = None, level: float = 1, ci: float = 0.95) -> pd.DataFrame:
    """Estimate ``measures`` for ``runs`` from ``sample``.

    Returns columns ``run, query_id, measure, value, lo, hi`` (``lo``/``hi``: the ``ci``
    confidence interval, NaN where the estimator gives none); the mean over the topics each
    run retrieved for has ``query_id == "all"``. Only topics the sample has are estimated.
    """
    if not 0 < ci < 1:
        raise UsageError(f"the confidence level must lie in (0, 1), not {ci}")
    specs = [parse_estimate(m) for m in measures]
    unknown = [s.name for s in specs if s.family not in FAMILY_FUNCTIONS]
    if unknown:
        raise UsageError(f"not available: {', '.join(unknown)}")
    run_names = tuple(r.name for r in runs)
    pools: dict[type[np.floating], Pool] = {}
    frames = []
    for family in dict.fromkeys(s.family for s in specs):
        score_type = _SCORE_TYPE.get(family, np.float32)
        if score_type not in pools:
            pools[score_type] = Pool.from_runs(runs, depth=depth, topics=sample.topics,
                                               score_type=score_type)
        views = topic_views(pools[score_type], sample)
        if not views:
            raise UsageError("the sample and the runs have no topic in common")
        mine = [s for s in specs if s.family == family]
        frames.append(FAMILY_FUNCTIONS[family](run_names, views, sample, mine, level, ci))
    order = {s.name: i for i, s in enumerate(specs)}
    out = pd.concat(frames, ignore_index=True)[COLUMNS]
    return out.sort_values("measure", key=lambda m: m.map(order), kind="stable").reset_index(
        drop=True)
