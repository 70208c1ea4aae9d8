"""Estimating measures from a Sample: one entry point, :func:`estimate`, over every family.

Families (see ``names.py`` for the measure names and the README for what each assumes):
``trec_eval`` (infAP), ``nist`` (xinfAP, infNDCG, iP@k, inum_rel, inum_rel_ret).
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
from sampleval.estimators.inferred import estimate_nist, estimate_trec_eval
from sampleval.estimators.names import EstimateSpec, parse_estimate

# (run names, aligned topics, sample, the family's requested measures, level, ci) -> rows
Family = Callable[[tuple[str, ...], list[TopicView], Sample, list[EstimateSpec], float, float],
                  pd.DataFrame]

FAMILY_FUNCTIONS: dict[str, Family] = {
    "trec_eval": estimate_trec_eval,
    "nist": estimate_nist,
}
# sample_eval (Perl) compares scores as doubles; trec_eval as floats.
_SCORE_TYPE = {"nist": np.float64}

# what `sampleval estimate` computes when no measure is named, by the sample's design
DEFAULT_ESTIMATES: dict[str, tuple[str, ...]] = {
    "census": ("xinfAP", "infNDCG", "iP@10", "inum_rel"),
    "stratified": ("xinfAP", "infNDCG", "iP@10", "inum_rel"),
}

__all__ = ["MEAN_TOPIC", "default_estimates", "estimate"]


def default_estimates(sample: Sample) -> tuple[str, ...]:
    """The measures estimated by default for ``sample``: by its design, with trec_eval's
    infAP first when every topic is one uniformly sampled stratum (infAP's own design)."""
    if sample.design not in DEFAULT_ESTIMATES:
        raise UsageError(f"no estimator is available yet for a {sample.design} sample; "
                         "name one with --measure")
    single = sample.frame.groupby("query_id")["stratum"].nunique().max() <= 1
    return (("infAP",) if single else ()) + DEFAULT_ESTIMATES[sample.design]


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
