"""A budget planner from a pilot sample (issue 32): how many judgments a target needs.

From a pilot (for example 20 judgments per topic) the target's estimator gives each topic
t and run r a variance V_tr (``estimate``'s interval: ((hi - lo) / 2z)^2) from n_t
judgments of the topic's N_t pooled documents. As judge-until-confident plans
(:mod:`sampleval.confident`), a topic's variance is taken to fall as simple random
sampling's, V_tr(n) = u_tr g(n) with g(n) = 1/n - 1/N_t and u_tr = V_tr / g(n_t); a topic
where the pilot found fewer than :data:`FOUND` relevant documents gets each run's median u
over the other topics: with none its variance says nothing of what is unseen, and with one
AP's variance is a floor (``few=``) that falls once a second is found, not as g(n). The variance of run r's mean over its T_r topics
is then sum_t u_tr g(n_t) / T_r^2, and the judgments needed are the least sum_t n_t at which
every targeted run's variance is at most the variance the rule stops at:

- ``fixed``: a design of sizes fixed in advance, judged then estimated once, with the
  ordinary interval: (h / z)^2;
- ``anytime``: the anytime rule (``stop=anytime``), whose confidence sequence tuned for
  the target has half-width h at :func:`~sampleval.estimators.anytime.target_variance`.

The allocation is Neyman's: n_t proportional to sqrt(max_r u_tr / T_r^2), each between its
pilot and its cap (the topic's pool, or ``caps``), scaled by bisection until the variances
meet the target. The interval of the forecast resamples the topics (a bootstrap over
topics, ``replicates`` times, from the generator given): it reflects how much the topics'
variances vary, not the error of the g(n) model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sampleval.errors import UsageError

RULES = ("fixed", "anytime")
FOUND = 2
"""Relevant documents a topic's pilot must hold for its own variance to be extrapolated."""


@dataclass(frozen=True)
class Forecast:
    """The judgments in all (the pilot's included) that ``rule`` is forecast to need, and
    the interval of the forecast (None: the caps cannot reach the target)."""

    rule: str
    judged: int
    needed: int | None
    lo: int | None
    hi: int | None


def unit_variances(variance: np.ndarray, judged: np.ndarray, size: np.ndarray,
                   found: np.ndarray) -> np.ndarray:
    """``[T, R]`` u_tr = V_tr / g(n_t) (module docstring); NaN stays NaN (a run absent from
    a topic); a topic not ``found`` (fewer than :data:`FOUND` relevant documents) takes each
    run's median u over the others (0 where no topic has one)."""
    g = 1.0 / np.maximum(judged, 1) - 1.0 / np.maximum(size, 1)
    unit = np.where(g[:, None] > 0, variance / np.where(g > 0, g, 1.0)[:, None], 0.0)
    unit = np.where(np.isnan(variance), np.nan, unit)
    blank = ~found & (judged < size)
    if (~blank).any() and blank.any():
        known = unit[~blank]
        with np.errstate(all="ignore"):
            typical = np.array([np.nanmedian(c) if np.isfinite(c).any() else 0.0
                                for c in known.T])
        unit[blank] = np.where(np.isnan(unit[blank]), np.nan, typical[None, :])
    return unit


def needed(unit: np.ndarray, judged: np.ndarray, cap: np.ndarray, size: np.ndarray,
           variance: float) -> int | None:
    """The least total judgments (module docstring's allocation) at which every run's
    variance of its mean, sum_t u_tr (1/n_t - 1/N_t) / T_r^2, is at most ``variance``;
    None when the caps cannot reach it."""
    present = ~np.isnan(unit)
    u = np.where(present, unit, 0.0)
    count = np.maximum(present.sum(axis=0), 1).astype(np.float64)
    low = np.minimum(judged, cap).astype(np.float64)
    high = np.maximum(cap, low).astype(np.float64)
    weight = np.sqrt((u / count[None, :] ** 2).max(axis=1, initial=0.0))

    def sizes(scale: float) -> np.ndarray:
        return np.clip(scale * weight, low, high)

    def meets(n: np.ndarray) -> bool:
        g = np.maximum(1.0 / np.maximum(n, 1.0) - 1.0 / np.maximum(size, 1), 0.0)
        return bool(((u * g[:, None]).sum(axis=0) / count ** 2 <= variance * (1 + 1e-9)).all())

    if meets(low):
        return int(low.sum())
    if not meets(high):
        return None
    lo_s, hi_s = 0.0, 1.0
    while not meets(sizes(hi_s)):
        hi_s *= 2.0
        if hi_s > 1e15:
            return int(high.sum())
    for _ in range(60):
        mid = (lo_s + hi_s) / 2
        lo_s, hi_s = (lo_s, mid) if meets(sizes(mid)) else (mid, hi_s)
    return int(np.ceil(sizes(hi_s)).sum())


def forecast_arrays(variance: np.ndarray, judged: np.ndarray, size: np.ndarray,
                    found: np.ndarray, half_width: float, *, ci: float = 0.95,
                    cap: np.ndarray | None = None, rng: np.random.Generator,
                    replicates: int = 200, coverage: float = 0.9) -> list[Forecast]:
    """:func:`forecast` from ``[T, R]`` pilot variances (NaN: run absent), per-topic
    judgments, pool sizes and whether the pilot found :data:`FOUND` relevant documents."""
    from sampleval.estimators.anytime import target_variance
    from sampleval.estimators.base import z_value

    cap = size if cap is None else np.minimum(cap, size)
    unit = unit_variances(variance, judged, size, found)
    aims = {"fixed": (half_width / z_value(ci)) ** 2,
            "anytime": target_variance(half_width, ci)}
    out = []
    topics = len(judged)
    draws = [rng.integers(0, topics, topics) for _ in range(replicates)]
    tail = (1 - coverage) / 2
    for rule in RULES:
        point = needed(unit, judged, cap, size, aims[rule])
        boot = np.array([np.inf if (n := needed(unit[d], judged[d], cap[d], size[d],
                                                aims[rule])) is None else float(n)
                         for d in draws])
        lo, hi = (np.quantile(boot, [tail, 1 - tail], method="inverted_cdf") if replicates
                  else (np.nan, np.nan))
        out.append(Forecast(rule, int(judged.sum()), point,
                            int(lo) if np.isfinite(lo) else None,
                            int(np.ceil(hi)) if np.isfinite(hi) else None))
    return out


def forecast(sample: Any, runs: Any, target: Any, *, ci: float = 0.95, level: float = 1,
             depth: Any = None, caps: Mapping[str, int] | None = None,
             rng: np.random.Generator, replicates: int = 200,
             coverage: float = 0.9) -> list[Forecast]:
    """The judgments ``target`` (a :class:`~sampleval.confident.Target`) is forecast to
    need from the pilot ``sample`` of ``runs`` (as :func:`sampleval.estimators.estimate`
    takes them, at ``depth``: by default the sample's), for each rule of :data:`RULES`,
    with a ``coverage`` interval from ``replicates`` bootstrap resamples of the topics.
    ``caps``: judgments per topic at most (default: its pool)."""
    from sampleval.estimators import SAMPLE_DEPTH, estimate
    from sampleval.estimators.base import MEAN_TOPIC, z_value
    from sampleval.inputs import as_sample

    sample = as_sample(sample)
    spec = target.spec(sample.design)
    rows = estimate(sample, runs, [spec.name], depth=SAMPLE_DEPTH if depth is None else depth,
                    level=level, ci=ci)
    rows = rows[rows["query_id"] != MEAN_TOPIC]
    if rows["lo"].isna().all():
        raise UsageError(f"{spec.name} gives no interval: a forecast needs an estimator "
                         "with a variance")
    names = list(dict.fromkeys(rows["run"]))
    wanted = names if target.runs is None else list(target.runs)
    unknown = [r for r in wanted if r not in names]
    if unknown:
        raise UsageError(f"target run(s) not among the runs: {', '.join(unknown)}")
    topics = [t for t in sample.topics if t in set(rows["query_id"])]
    half = (rows["hi"] - rows["lo"]) / 2 / z_value(ci)
    table = (half ** 2).to_frame("v").assign(query_id=rows["query_id"], run=rows["run"]
                                              ).pivot(index="query_id", columns="run",
                                                      values="v")
    variance = table.reindex(index=topics, columns=wanted).to_numpy(dtype=np.float64)
    frame = sample.frame
    by_topic = frame.groupby("query_id", sort=False)
    size = by_topic.size().reindex(topics).to_numpy(dtype=np.float64)
    judged = by_topic["relevance"].count().reindex(topics).to_numpy(dtype=np.float64)
    found = (frame[frame["relevance"] >= level].groupby("query_id").size()
             .reindex(topics, fill_value=0).to_numpy() >= FOUND)
    cap = None if caps is None else np.array([caps.get(t, np.inf) for t in topics])
    return forecast_arrays(variance, judged, size, found, target.half_width, ci=ci, cap=cap,
                           rng=rng, replicates=replicates, coverage=coverage)


