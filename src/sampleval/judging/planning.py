"""A budget planner from a pilot sample (issue 32): how many judgments a target needs.

From a pilot (for example 20 judgments per topic) the target's estimator gives each topic
t and run r a variance V_tr (``estimate``'s interval: ((hi - lo) / 2z)^2) from n_t
judgments of the topic's N_t pooled documents. As judge-until-confident plans
(:mod:`sampleval.judging.confident`), a topic's variance is taken to fall as simple random
sampling's, V_tr(n) = u_tr g(n) with g(n) = 1/n - 1/N_t and u_tr = V_tr / g(n_t); a topic
where the pilot found fewer than :data:`FOUND` relevant documents gets each run's median u
over the other topics: with none its variance says nothing of what is unseen, and with one
AP's variance is a floor (``few=``) that falls once a second is found, not as g(n). The variance of run r's mean over its T_r topics
is then sum_t u_tr g(n_t) / T_r^2, and the judgments needed are the least sum_t n_t at which
every targeted run's variance is at most the variance the rule stops at:

- ``fixed``: a design of sizes fixed in advance, judged then estimated once, with the
  ordinary interval: (h / z)^2;
- ``anytime``: the anytime rule (``stop=anytime``), whose confidence sequence tuned for
  the target has half-width h at :func:`~sampleval.estimation.anytime.target_variance`.

With ``model="active"`` the rest of the judging is taken to be active sampling (its
default uniform share): with-replacement draws from p_t = 0.2 / N_t + 0.8 q_t (q_t the
topic's AP-prior, :func:`~sampleval.core.ap_prior.document_prior`, over equal run
weights), whose per-draw estimates' variance falls as 1/d in the draws d while the judgments
are the distinct documents drawn, n(d) = sum_j 1 - (1 - p_j)^d: g(n) = 1 / d(n), which falls
faster than 1/n as the likely documents are drawn again and again.

The allocation is Neyman's for ``fixed`` (n_t proportional to sqrt(max_r u_tr / T_r^2)) and
equal for ``anytime`` (the anytime rule's pooled allocation, which reads no topic's own
variance, gives every topic the same number), each between its
pilot and its cap (the topic's pool, or ``caps``), scaled by bisection until the variances
meet the target. The interval of the forecast resamples the topics (a bootstrap over
topics, ``replicates`` times, from the generator given): it reflects how much the topics'
variances vary, not the error of the g(n) model.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
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
    the interval of the forecast (None: the caps cannot reach the target); ``capped``: the
    model forecast more than the judgeable documents and was cut to them (judging them all
    gives the exact measure)."""

    rule: str
    judged: int
    needed: int | None
    lo: int | None
    hi: int | None
    capped: bool = False


MODELS = ("srs", "active")
ACTIVE_SHARE = 0.2
"""The uniform share of active sampling's draws (its default, ``active:uniform=0.2``)."""
GRID = 160
LOOK_SPAN = 0.5
"""A forecast from the looks fits the decay over the looks since this share of the latest
look's judgments (:func:`forecast_from_looks`)."""


class Shape:
    """g_t(n), the variance of topic t's estimate after n judgments relative to one unit
    (module docstring): simple random sampling's 1/n - 1/N_t, or, given each topic's draw
    distribution, 1 / d_t(n) (with-replacement draws). Index it with topic indices for a
    resample of the topics."""

    def __init__(self, size: np.ndarray, draws: list[np.ndarray] | None = None,
                 rows: np.ndarray | None = None, table: np.ndarray | None = None) -> None:
        self.size = np.asarray(size, dtype=np.float64)
        self.steps = np.geomspace(1.0, 1e7, GRID)
        self.table = table
        """[T, GRID]: distinct documents expected after each number of draws in steps."""
        if draws is not None:
            self.table = np.stack([
                -np.expm1(np.log1p(-np.minimum(p, 1 - 1e-12))[:, None] * self.steps[None, :]
                          ).sum(axis=0) for p in draws])
        if rows is not None and self.table is not None:
            self.table = self.table[rows]

    def __getitem__(self, rows: np.ndarray) -> Shape:
        return Shape(self.size[rows], table=self.table, rows=rows)

    def __call__(self, n: np.ndarray) -> np.ndarray:
        n = np.asarray(n, dtype=np.float64)
        if self.table is None:
            return np.maximum(1.0 / np.maximum(n, 1.0) - 1.0 / np.maximum(self.size, 1), 0.0)
        table = self.table
        k = np.minimum((table < n[:, None]).sum(axis=1), GRID - 1)
        low = np.maximum(k - 1, 0)
        rows = np.arange(len(n))
        a, b = table[rows, low], table[rows, k]
        share = np.clip(np.where(b > a, (n - a) / np.where(b > a, b - a, 1.0), 1.0), 0, 1)
        steps = np.log(self.steps)
        d = np.exp(steps[low] + share * (steps[k] - steps[low]))
        return np.where(n >= self.size, 0.0, 1.0 / d)


def active_draws(pool: Any, topics: list[str]) -> list[np.ndarray]:
    """Each topic's draw distribution under active sampling's default (module docstring)."""
    from sampleval.core.ap_prior import document_prior

    out = []
    for t in topics:
        q = document_prior(pool[t])
        q = q / q.sum() if q.sum() > 0 else np.full(len(q), 1.0 / max(len(q), 1))
        out.append(ACTIVE_SHARE / max(len(q), 1) + (1 - ACTIVE_SHARE) * q)
    return out


def unit_variances(variance: np.ndarray, judged: np.ndarray, size: np.ndarray,
                   found: np.ndarray, shape: Shape | None = None) -> np.ndarray:
    """``[T, R]`` u_tr = V_tr / g(n_t) (module docstring); NaN stays NaN (a run absent from
    a topic); a topic not ``found`` (fewer than :data:`FOUND` relevant documents) takes each
    run's median u over the others (0 where no topic has one)."""
    g = (Shape(size) if shape is None else shape)(judged)
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
           variance: float, shape: Shape | None = None, equal: bool = False) -> int | None:
    """The least total judgments (module docstring's allocation; ``equal``: the same number
    of every topic, as the anytime rule's pooled allocation gives) at which every run's
    variance of its mean, sum_t u_tr g_t(n_t) / T_r^2 (``shape``; default simple random
    sampling's 1/n - 1/N_t), is at most ``variance``; None when the caps cannot reach it."""
    shape = Shape(size) if shape is None else shape
    present = ~np.isnan(unit)
    u = np.where(present, unit, 0.0)
    count = np.maximum(present.sum(axis=0), 1).astype(np.float64)
    low = np.minimum(judged, cap).astype(np.float64)
    high = np.maximum(cap, low).astype(np.float64)
    weight = np.sqrt((u / count[None, :] ** 2).max(axis=1, initial=0.0))
    if equal:
        weight = (weight > 0).astype(np.float64)

    def sizes(scale: float) -> np.ndarray:
        return np.clip(scale * weight, low, high)

    def meets(n: np.ndarray) -> bool:
        g = shape(n)
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
    for _ in range(40):
        mid = (lo_s + hi_s) / 2
        lo_s, hi_s = (lo_s, mid) if meets(sizes(mid)) else (mid, hi_s)
    return int(np.ceil(sizes(hi_s)).sum())


def forecast_arrays(variance: np.ndarray, judged: np.ndarray, size: np.ndarray,
                    found: np.ndarray, half_width: float, *, ci: float = 0.95,
                    cap: np.ndarray | None = None, rng: np.random.Generator,
                    replicates: int = 200, coverage: float = 0.9,
                    draws: list[np.ndarray] | None = None) -> list[Forecast]:
    """:func:`forecast` from ``[T, R]`` pilot variances (NaN: run absent), per-topic
    judgments, pool sizes and whether the pilot found :data:`FOUND` relevant documents;
    ``draws``: each topic's draw distribution for the with-replacement model (None: simple
    random sampling's)."""
    from sampleval.estimation.anytime import target_variance
    from sampleval.estimation.engine.views import z_value

    cap = size if cap is None else np.minimum(cap, size)
    shape = Shape(size, draws)
    unit = unit_variances(variance, judged, size, found, shape)
    aims = {"fixed": (half_width / z_value(ci)) ** 2,
            "anytime": target_variance(half_width, ci)}
    out = []
    topics = len(judged)
    resamples = [rng.integers(0, topics, topics) for _ in range(replicates)]
    tail = (1 - coverage) / 2
    for rule in RULES:
        equal = rule == "anytime"
        point = needed(unit, judged, cap, size, aims[rule], shape, equal)
        boot = np.array([np.inf if (n := needed(unit[d], judged[d], cap[d], size[d],
                                                aims[rule], shape[d], equal)) is None
                         else float(n) for d in resamples])
        lo, hi = (np.quantile(boot, [tail, 1 - tail], method="inverted_cdf") if replicates
                  else (np.nan, np.nan))
        out.append(Forecast(rule, int(judged.sum()), point,
                            int(lo) if np.isfinite(lo) else None,
                            int(np.ceil(hi)) if np.isfinite(hi) else None))
    return out


def widest_variance(widths: np.ndarray | float, half_width: float, rule: str = "anytime",
                    ci: float = 0.95) -> np.ndarray:
    """The variance of a run's mean whose half-width under ``rule`` is ``widths``: the
    anytime rule's sequence placed by the target ``half_width``
    (:func:`~sampleval.estimation.anytime.variance_for`; ``anytime``: the default range
    boundary, ``mixture``: the normal mixture of the rule before it), or the fixed
    interval's (widths / z)^2. Any estimated bias in the half-width is counted as variance."""
    from sampleval.estimation.anytime import RANGE, target_variance, variance_for
    from sampleval.estimation.engine.views import z_value

    if rule not in (*RULES, "mixture"):
        raise UsageError(f"rule must be one of {', '.join(RULES)} or mixture, not {rule!r}")
    w = np.asarray(widths, dtype=np.float64)
    if rule == "fixed":
        return (w / z_value(ci)) ** 2
    ratio = None if rule == "mixture" else RANGE
    return variance_for(w, target_variance(half_width, ci, ratio), ci, ratio)


def forecast_from_looks(looks: Sequence[Sequence[float]], half_width: float,
                        rule: str = "anytime", *, ci: float = 0.95, span: float = LOOK_SPAN,
                        coverage: float = 0.9,
                        widths: Sequence[Sequence[float]] | None = None,
                        exponent: float | None = None) -> Forecast | None:
    """The judgments in all at which the widest half-width is forecast to reach
    ``half_width``, from the ``looks`` so far ((judgments, widest half-width of ``rule``),
    oldest first; :attr:`~sampleval.judging.confident.AnytimeJudging.looks`, a campaign's)
    and, where known, ``widths``: every targeted run's half-width at each look
    (:attr:`~sampleval.judging.confident.AnytimeJudging.look_widths`).

    Model: between looks the variance V of a run's mean falls as a power of the judgments,
    V(n) = V_k (n / n_k)^(-b), b fitted by least squares on log V against log n over the
    looks since ``span`` times the latest look's judgments (the decay's recent rate: AP's
    variance falls faster than 1/n as the likely documents get judged, and the rate changes
    as judging goes on); V is read from each half-width (:func:`widest_variance`), so that
    the anytime sequence's changing multiplier does not pass for a change of rate. With
    ``widths``, log V is the mean over the runs (those with a variance at every look in the
    span) of each run's log V: one exponent b common to the runs, each with its own level
    (the within-run least-squares fit), which a jump of one run's variance (a relevant
    document of small draw probability found) moves by its share only; else the widest
    run's. The forecast is the latest look's judgments times (V_k / V*)^(1/b), V_k the
    widest run's variance there and V* the variance whose half-width is the target. Its
    interval (``coverage``) takes b at the ends of its t-interval from the fit, the looks
    as the observations (three looks or more in the span; else none). None with fewer than
    two looks in the span or no decrease; the latest look's judgments once the target is
    met.

    With ``exponent`` (b learnt from earlier campaigns of the same kind,
    :func:`decay_exponent`) the latest look alone gives the forecast, n_k (V_k / V*)^(1/b),
    without an interval: a fit over a few looks is noisy where the variance jumps when a
    relevant document of small draw probability is found (``docs/guide/anytime.md``,
    "The planner")."""
    from scipy import stats

    if len(looks) and looks[-1][1] <= half_width:
        done = int(looks[-1][0])
        return Forecast(rule, done, done, done, done)
    if exponent is not None:
        if not exponent > 0:
            raise UsageError(f"the decay exponent must be positive, not {exponent}")
        if not len(looks):
            return None
        v_k = float(widest_variance(looks[-1][1], half_width, rule, ci))
        aim_k = float(widest_variance(half_width, half_width, rule, ci))
        needed = math.ceil(looks[-1][0] * (v_k / aim_k) ** (1.0 / exponent))
        return Forecast(rule, int(looks[-1][0]), needed, None, None)
    if len(looks) < 2:
        return None
    n = np.array([x[0] for x in looks], dtype=np.float64)
    v = widest_variance(np.array([x[1] for x in looks]), half_width, rule, ci)
    keep = (n >= span * n[-1]) & (n > 0) & (v > 0)
    keep[-2:] = (n[-2:] > 0) & (v[-2:] > 0)  # at least the last two looks
    if keep.sum() < 2:
        return None
    y = np.log(np.where(keep, v, 1.0))[keep]
    if widths is not None:
        if len(widths) != len(looks):
            raise UsageError(f"{len(widths)} looks' half-widths for {len(looks)} looks")
        each = widest_variance(np.array(widths, dtype=np.float64)[keep], half_width, rule,
                               ci)  # [looks kept, runs]
        runs = (each > 0).all(axis=0)
        if runs.any():
            y = np.log(each[:, runs]).mean(axis=1)
    x = np.log(n[keep])
    dx = x - x.mean()
    if not (dx ** 2).sum() > 0:
        return None
    slope = float((dx * (y - y.mean())).sum() / (dx ** 2).sum())
    if not slope < 0:
        return None
    aim = float(widest_variance(half_width, half_width, rule, ci))
    gap = math.log(v[-1] / aim)

    def at(b: float) -> int:
        return math.ceil(n[-1] * math.exp(gap / b))

    lo = hi = None
    if keep.sum() >= 3:
        residual = y - y.mean() - slope * dx
        se = math.sqrt((residual ** 2).sum() / (keep.sum() - 2) / (dx ** 2).sum())
        t = float(stats.t.ppf(0.5 + coverage / 2, keep.sum() - 2))
        steep, shallow = slope - t * se, slope + t * se
        lo = at(-steep)
        hi = at(-shallow) if shallow < 0 else None
    return Forecast(rule, int(n[-1]), at(-slope), lo, hi)


def forecast_from_exponents(looks: Sequence[Sequence[float]], half_width: float,
                            exponents: Sequence[float] | np.ndarray, rule: str = "anytime", *,
                            ci: float = 0.95, coverage: float = 0.9) -> Forecast | None:
    """:func:`forecast_from_looks` with the decay exponents learnt from earlier campaigns of
    the same kind (:func:`decay_exponent`, one per campaign; NaN: none learnt): the forecast
    at their median, and its ``coverage`` interval at their quantiles (1 -/+ coverage) / 2
    (the steeper decay, the higher quantile, gives the low end). With one exponent, the
    forecast without an interval (how often the interval held, leave one campaign out:
    ``docs/research/anytime.md``, "The learnt exponent's interval")."""
    b = np.asarray(exponents, dtype=np.float64)
    b = b[np.isfinite(b)]
    if not len(b):
        raise UsageError("no decay exponent to forecast with")
    if len(b) == 1:
        return forecast_from_looks(looks, half_width, rule, ci=ci, exponent=float(b[0]))
    tail = (1 - coverage) / 2
    shallow, steep = np.quantile(b, [tail, 1 - tail])
    made, low, high = (forecast_from_looks(looks, half_width, rule, ci=ci, exponent=float(e))
                       for e in (np.median(b), steep, shallow))
    if made is None:
        return None
    return Forecast(rule, made.judged, made.needed, None if low is None else low.needed,
                    None if high is None else high.needed)


def decay_exponent(looks: Sequence[Sequence[float]], judged: float, half_width: float,
                   rule: str = "anytime", *, ci: float = 0.95, times: float = 2.0) -> float | None:
    """The exponent b of the decay V(n) proportional to n^-b that a *finished* campaign showed
    from its first look with at least ``times`` the first look's judgments to where it met
    the target at ``judged`` judgments: log(V_k / V*) / log(judged / n_k), V_k the widest
    run's variance at that look (:func:`widest_variance`) and V* the one whose half-width is
    the target (the campaign stopped at the first look at or below it). None when no such
    look precedes the stop or the variance there is already at V*. Learnt over earlier
    campaigns of the same kind, it is the ``exponent`` of :func:`forecast_from_looks`."""
    at = next((k for k, (n, _) in enumerate(looks) if n >= times * looks[0][0]), None)
    if at is None or not looks[at][0] < judged:
        return None
    v = float(widest_variance(looks[at][1], half_width, rule, ci))
    aim = float(widest_variance(half_width, half_width, rule, ci))
    if not v > aim:
        return None
    return math.log(v / aim) / math.log(judged / looks[at][0])


def forecast(sample: Any, runs: Any, target: Any, *, ci: float = 0.95, level: float = 1,
             depth: Any = None, caps: Mapping[str, int] | None = None,
             rng: np.random.Generator, replicates: int = 200,
             coverage: float = 0.9, model: str = "srs",
             exponent: float | Sequence[float] | None = None) -> list[Forecast]:
    """The judgments ``target`` (a :class:`~sampleval.judging.confident.Target`) is forecast to
    need from the pilot ``sample`` of ``runs`` (as :func:`sampleval.estimation.estimates.estimate`
    takes them, at ``depth``: by default the sample's), for each rule of :data:`RULES`,
    with a ``coverage`` interval from ``replicates`` bootstrap resamples of the topics.
    ``caps``: judgments per topic at most (default: its pool); ``model``: how a topic's
    variance falls, ``srs`` or ``active`` (module docstring). With ``exponent`` (the decay
    exponent b learnt from earlier campaigns of the same kind, :func:`decay_exponent`, or
    one per earlier campaign), each rule's forecast is instead the pilot taken as the
    campaign's first look: :func:`forecast_from_exponents` from the widest targeted run's
    variance of its mean, n (V / V*)^(1/b) at the exponents' median, with the ``coverage``
    interval at their quantiles (none from one exponent; ``docs/guide/anytime.md``, "The
    planner")."""
    if model not in MODELS:
        raise UsageError(f"model must be one of {', '.join(MODELS)}, not {model!r}")
    from sampleval.estimation.engine.views import MEAN_TOPIC, z_value
    from sampleval.estimation.estimates import SAMPLE_DEPTH, estimate
    from sampleval.io.coerce import as_sample

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
    if exponent is not None:
        made = _from_pilot_look(variance, float(judged.sum()), target.half_width,
                                np.atleast_1d(np.asarray(exponent, dtype=np.float64)), ci,
                                coverage)
        judgeable = size if cap is None else np.minimum(size, cap)
        return [_within(f, int(judgeable.sum()), census=bool((judgeable >= size).all()))
                for f in made]
    draws = None
    if model == "active":
        from sampleval.core.pool import Pool
        from sampleval.estimation.setup import estimation_depth
        from sampleval.io.coerce import as_runs

        with warnings.catch_warnings():  # estimate above has said what the depth means
            warnings.simplefilter("ignore")
            cut = estimation_depth(sample, SAMPLE_DEPTH if depth is None else depth)
        pool = Pool.from_runs(as_runs(runs), depth=cut)
        draws = active_draws(pool, topics)
        size = np.array([pool[t].size for t in topics], dtype=np.float64)
    return forecast_arrays(variance, judged, size, found, target.half_width, ci=ci, cap=cap,
                           rng=rng, replicates=replicates, coverage=coverage, draws=draws)


def _within(made: Forecast, judgeable: int, census: bool) -> Forecast:
    """``made`` with every figure at most the ``judgeable`` documents (``capped`` where one
    was above); where the caps stop short of the pool (not ``census``), a forecast above
    them is not reachable (None)."""
    figures = [made.needed, made.lo, made.hi]
    if not any(x is not None and x > judgeable for x in figures):
        return made
    if not census and made.needed is not None and made.needed > judgeable:
        return Forecast(made.rule, made.judged, None, None, None)
    lo, needed, hi = (None if x is None else min(x, judgeable)
                      for x in (made.lo, made.needed, made.hi))
    return Forecast(made.rule, made.judged, needed, lo, hi, capped=True)


def _from_pilot_look(variance: np.ndarray, judged: float, half_width: float,
                     exponents: np.ndarray, ci: float, coverage: float) -> list[Forecast]:
    """Each rule's :func:`forecast_from_exponents` from one look: the pilot's
    ``judged`` judgments and the widest targeted run's variance of its mean from the
    ``[T, R]`` pilot variances (NaN: run absent), read as that rule's half-width."""
    from sampleval.estimation.anytime import half_width as anytime_half_width
    from sampleval.estimation.anytime import target_variance
    from sampleval.estimation.engine.views import z_value

    count = (~np.isnan(variance)).sum(axis=0)
    mean = np.nansum(variance, axis=0) / np.maximum(count, 1) ** 2
    widest = float(mean[count > 0].max(initial=0.0))
    out = []
    for rule in RULES:
        width = (z_value(ci) * math.sqrt(widest) if rule == "fixed" else float(
            anytime_half_width(widest, target_variance(half_width, ci), ci)))
        made = forecast_from_exponents([(judged, width)], half_width, exponents, rule,
                                       ci=ci, coverage=coverage)
        out.append(made if made is not None else Forecast(rule, int(judged), None, None, None))
    return out
