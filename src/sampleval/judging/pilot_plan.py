"""The judgments judge-until-confident's committed rule is forecast to use after a pilot
sample: the rule's own plan from that pilot (``sampleval plan``'s ``committed`` row). Apart
from :mod:`sampleval.judging.planning`, whose models the rule itself reads, so that neither
module imports the other's reader."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from sampleval.errors import UsageError
from sampleval.judging.planning import Forecast

COMMITTED_METHODS = ("stratified", "strata", "uniform")
"""The methods whose committed phases :func:`committed_forecast` can lay out."""


def committed_forecast(sample: Any, runs: Any, target: Any, *, ci: float = 0.95,
                       level: float = 1, depth: Any = None, cap: int | None = None,
                       rng: np.random.Generator, replicates: int = 200,
                       coverage: float = 0.9) -> Forecast:
    """The judgments judge-until-confident's committed rule (``sample --target``) is
    forecast to use after the pilot ``sample`` (a stratified sample of the ``runs``' pool,
    e.g. ``sampleval sample stratified ... -n 20``): the rule's own plan from that pilot
    (:meth:`~sampleval.judging.confident.ConfidentJudging.from_pilot`) at the pooled level
    of the topics' variances (:meth:`~sampleval.judging.confident.ConfidentJudging.
    forecast`), with its ``coverage`` interval. Its next phases are laid out by the method
    that made the sample (``stratified`` for a sample that does not say), ``cap``
    judgments per topic at most (default: its pool); its least phase is the pilot's median
    judgments per topic."""
    from sampleval.core.pool import Pool
    from sampleval.estimation.estimates import SAMPLE_DEPTH
    from sampleval.estimation.setup import estimation_depth
    from sampleval.io.coerce import as_runs, as_sample
    from sampleval.judging.confident import ConfidentJudging
    from sampleval.selection import METHODS, Budget

    sample = as_sample(sample)
    method = sample.meta.get("method", "stratified")
    if method not in COMMITTED_METHODS:
        raise UsageError(f"the committed rule's forecast needs a pilot laid out in strata "
                         f"({', '.join(COMMITTED_METHODS)}), not {method}")
    with warnings.catch_warnings():  # the caller's estimate has said what the depth means
        warnings.simplefilter("ignore")
        cut = estimation_depth(sample, SAMPLE_DEPTH if depth is None else depth)
        pool = Pool.from_runs(as_runs(runs), depth=cut)
    params = dict(sample.meta.get("params", {}))
    selector = METHODS[method](pool, Budget(rate=1.0) if cap is None else Budget(count=cap),
                               rng, **params)
    judged = sample.frame.groupby("query_id")["relevance"].count()
    start = max(1, int(np.median(judged[judged > 0]))) if (judged > 0).any() else 1
    judging = ConfidentJudging.from_pilot(selector, target, sample, start=start, ci=ci,
                                          level=level)
    with warnings.catch_warnings():  # estimate's notes on sparse topics
        warnings.simplefilter("ignore")
        needed, lo, hi = judging.forecast(rng, coverage, replicates)
    return Forecast("committed", int(judging.judged.sum()), needed, lo, hi)
