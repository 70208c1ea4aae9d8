"""Stopping at any look (issue 32): the anytime rule against the naive rule and the
committed phases, on TREC-COVID round 5 or Cranfield (a sparse collection).

    python -m studies.anytime --collection covid --trials 30 --target 0.03 \
        --out /tmp/anytime-covid.csv

The truth is the pool judged in full (TREC-COVID: the depth-``--depth`` pool of the 126
round-5 runs, unjudged = not relevant; Cranfield: the depth-``--depth`` pool of the
``cran-*`` retrieval runs of :func:`~sampleval.datasets.retrieval.cranfield_runs`, its
judgments, unjudged = not relevant). Every trial (seed ``--seed`` + i) judges with each
topic's cap ``--ceiling`` of its pool three ways, each until every run's 95%
half-width of its mean ``--measure`` is at most ``--target``:

- ``committed``: :class:`~sampleval.judging.confident.ConfidentJudging`'s committed phases of
  ``--method``;
- ``anytime``: :class:`~sampleval.judging.confident.AnytimeJudging` over ``--anytime-method``, a
  look after every batch,
  stopping on the anytime-valid half-widths, which are the intervals reported;
- ``naive``: the same looks and allocation, stopping on (and reporting) ordinary intervals;
- ``phases``: the anytime rule on ``--method``'s committed phases (``AnytimeJudging(
  committed=True)``: the committed rule's plan, a look after every batch within the phases);
- ``naive-phases``: the same, stopping on (and reporting) ordinary intervals;
- ``plan-ends``: the anytime rule on committed phases stopping only where a plan ends, on the
  plan-end boundary (``AnytimeJudging(committed=True, spend="plan-ends")``; not run by
  default);
- ``matched``: the same with the spending matched to the plan ends forecast from the pilot
  (``spend="matched"``; not run by default);
- ``neyman``: the anytime rule with Neyman's shares fixed by the pilot, whose rounds the later
  estimates leave out (``AnytimeJudging(allocation="neyman")``; not run by default);
- ``mixture``: the anytime rule with the normal-mixture sequence (``ratio=None``), the
  boundary before the range boundary became the default (not run by default).

and, with ``--plan`` (or only that, ``--plan-only``), forecasts the anytime and committed
judgments from the trial's own first ``--start`` judgments per topic
(:func:`forecast_from_pilot`); with ``--plan-only``, the rules in committed phases also
record their own plan's projection after the pilot (``projection``,
:func:`projection_from_pilot`), which the summary turns into a forecast with a factor
learnt from the other campaigns (:func:`learnt_projections`, ``projection_`` columns), and
the planner's forecast from that state with its interval, ``--campaigns`` campaigns
simulated from the rule's plan (``plan``, ``sampleval plan``'s ``committed`` row, or its
``anytime`` row for ``phases``; :func:`plan_forecasts`, ``plan_`` columns;
``--no-pilot-forecast`` skips the variance model's forecasts). Each row of ``--out`` (CSV, one
per trial and rule, written as they finish): the seed, judgments used, why judging stopped, the widest half-width, the share
of runs whose interval holds the true mean (coverage at the stopping time), the mean error
over runs, the plans laid out after the pilot (committed phases; ``matched``: the plan ends
forecast and the planner's forecast over the first plan's projection), the looks ((judgments, widest half-width), JSON), and the forecast with its
interval, the wall-clock and the processor seconds the campaign took (``seconds``,
``cpu_seconds``: on a shared machine only the latter measures its cost), and the boundary
of its intervals. The summary (printed at the end, or ``--summarise`` over several files,
campaigns paired by seed): per rule, the mean judgments, coverage with its standard error over trials
(the runs of one trial share a sample), the share of trials whose widest interval met the
target, the judgments against the committed rule's (mean of the per-seed ratios, their
standard deviation and 10% and 90% quantiles), the pilot
forecasts' median ratio to the judgments used, share within 15% and share whose interval
holds them, and the same for the forecasts from the looks (:func:`look_forecast`) made at
the first look after 2, 3 and 4 times the pilot's judgments (``x2_``, ``x3_``, ``x4_``),
and, over the campaigns that met the target, from the same look with the decay exponent
learnt from the other campaigns (``x2_learnt_``...; :func:`learnt_forecasts`; ``x1_learnt_``:
from the first look, the pilot's, as ``sampleval plan --exponent`` forecasts), with the share
of campaigns whose 90% interval from the other campaigns' exponents holds the judgments used
and the interval's median width over the forecast.

With ``--fixed-rates R,R,...`` the study judges instead fixed per-topic budgets of ``--method``
(``--trials`` samples per rate, seeds ``--seed`` + i; :func:`studies.confident_judging.fixed`)
and prints the *fixed budget whose rms meets* ``--target``: the judgments at which z times
the rms error of the widest run's mean falls to the target, interpolated log-linearly
between the rates (:func:`studies.confident_judging.fixed_budget`); issue 29 item 4 compares
the committed rule's judgments with it (``--summarise ... --fixed-budget N``: each rule's
``vs_fixed``, its mean judgments over N).

With ``--rests K`` each trial's campaign is run K times after the same pilot (the rest drawn
from generators seeded 0..K-1, :func:`run_from_pilot`), and the summary is :func:`spread`:
how far campaigns that share a pilot lie from their own median, which no forecast from the
pilot can beat.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.estimation.anytime import RANGE
from sampleval.judging.confident import INTERIM, AnytimeJudging, ConfidentJudging, Target
from sampleval.judging.pilot_plan import CAMPAIGNS
from sampleval.selection import METHODS, Budget, qrels_oracle
from studies._cli import read_round5, simulation_parser
from studies.compare_accuracy import exact_per_topic, pool_truth

RULES = ("committed", "anytime", "naive", "phases", "naive-phases", "neyman", "mixture",
         "plan-ends", "matched")


def collection(name: str, data: Path, depth: int) -> tuple[list[Run], Qrels]:
    """The runs and the judgments of ``name`` (``covid`` from ``data``, ``cranfield`` from
    ``data``'s sibling ``cranfield``)."""
    if name == "covid":
        return read_round5(data)
    from sampleval.datasets.cranfield import read_qrels
    from sampleval.datasets.retrieval import cranfield_runs

    where = data.parent / "cranfield"
    return cranfield_runs(where, depth), read_qrels(where)


def judging_for(rule: str, pool: Pool, seed: int, *, method: str, anytime_method: str,
                ceiling: float, target: Target, start: int, batch: int,
                every: int | None, allocation: str = "pooled",
                interim: float = INTERIM) -> ConfidentJudging:
    """The judging of ``rule`` (module docstring) over a fresh selector seeded ``seed``."""
    phased = rule in ("committed", "phases", "naive-phases", "plan-ends", "matched")
    name = method if phased else anytime_method
    params: dict[str, Any] = {"batch": batch} if name == "active" else {}
    selector = METHODS[name](pool, Budget(rate=ceiling), np.random.default_rng(seed),
                             **params)
    if rule == "committed":
        return ConfidentJudging(selector, target, start=start, batch=batch, interim=interim)
    if phased:
        return AnytimeJudging(selector, target, start=start, batch=batch, every=every,
                              committed=True, interval="fixed" if rule == "naive-phases"
                              else "anytime", spend=rule if rule in ("plan-ends", "matched")
                              else None)
    return AnytimeJudging(selector, target, start=start, batch=batch, every=every,
                          interval="fixed" if rule == "naive" else "anytime",
                          allocation="neyman" if rule == "neyman" else allocation,
                          ratio=None if rule == "mixture" else RANGE)


def reseed(judging: ConfidentJudging, rest: int) -> None:
    """Give the rest of ``judging``'s campaign generators seeded by ``rest`` (every draw
    from here on: active's per-topic draws, a committed phase's layout and order)."""
    selector = judging.selector
    selector.rng = np.random.default_rng([rest, 0])
    for k, draws in enumerate(getattr(selector, "_topics", {}).values()):
        draws.rng = np.random.default_rng([rest, k + 1])


def run_from_pilot(judging: ConfidentJudging, oracle: Any, rest: int | None) -> Any:
    """Judge with ``oracle`` until judging is over; with ``rest``, the campaign after its
    pilot (every topic's first judgments, or the committed rule's first phase laid out)
    draws from generators seeded by ``rest`` (:func:`reseed`): the same pilot, another
    campaign after it."""
    if rest is None:
        return judging.run(oracle)
    if isinstance(judging, AnytimeJudging) and not judging.committed:
        while ((judging.handed < judging.first) & ~judging.exhausted).any() and (
                batch := judging.next_batch()) is not None:
            judging.observe(batch[0], oracle(*batch))
        reseed(judging, rest)
    elif (batch := judging.next_batch()) is not None:  # lays the pilot out
        reseed(judging, rest)
        judging.observe(batch[0], oracle(*batch))
    return judging.run(oracle)


def one(rule: str, pool: Pool, oracle: Any, truth: np.ndarray, seed: int,
        rest: int | None = None, **options: Any) -> dict[str, Any]:
    """One trial of ``rule``: judgments, reason, widest half-width, coverage, error
    (``rest``: the campaign after the pilot seeded by it, :func:`run_from_pilot`)."""
    judging = judging_for(rule, pool, seed, **options)
    status = run_from_pilot(judging, oracle, rest)
    mean, lo, hi = np.array(list(judging.intervals().values())).T  # the targeted runs'
    half = judging.half_widths()
    runs = judging.runs
    error = mean - truth[runs]
    ratio = getattr(judging, "ratio", None)
    return {"rule": rule, "judged": status.judged, "reason": status.reason,
            "boundary": "fixed" if rule in ("committed", "naive", "naive-phases") else (
                rule if rule in ("plan-ends", "matched") else
                "mixture" if ratio is None else f"range {ratio:g}"),
            "widest": float(half.max()), "coverage": float(np.mean((lo <= truth[runs]) & (truth[runs] <= hi))),
            "error": float(error.mean()), "plans": judging.plans if isinstance(judging, AnytimeJudging) else (
                max(map(len, judging.phases), default=1) - 1 if judging.committed else None),
            "forecast_plans": getattr(judging, "forecast_plans", None),
            "forecast_ratio": getattr(judging, "forecast_ratio", None),
            "looks": json.dumps([[n, round(w, 6)] for n, w in getattr(judging, "looks", [])]),
            "look_widths": json.dumps([np.round(w, 6).tolist()
                                       for w in getattr(judging, "look_widths", [])])}


def forecast_from_pilot(pool: Pool, oracle: Any, seed: int, replicates: int = 200,
                        **options: Any) -> dict[str, dict[str, Any]]:
    """The planner's forecasts (:func:`sampleval.judging.planning.forecast_arrays`) from the
    anytime rule's own pilot in this trial (its first judgments of every topic), keyed by
    the rule they forecast: the committed rule's is ``fixed`` under simple random
    sampling's variance model, the anytime rule's ``anytime`` under the model of its
    method (``active``'s with-replacement draws; else simple random sampling's), the naive
    rule's ``fixed`` under that model."""
    from sampleval.judging.planning import Forecast, active_draws, forecast_arrays

    judging, variance, cap, found = pilot(pool, oracle, seed, **options)

    def made(draws: list[np.ndarray] | None) -> dict[str, Forecast]:
        return {f.rule: f for f in forecast_arrays(
            variance, judging.judged.astype(np.float64), judging.pool_size, found,
            options["target"].half_width, cap=cap, rng=np.random.default_rng(seed),
            draws=draws, replicates=replicates)}

    srs = made(None)
    then = (made(active_draws(pool, judging.topics)) if options["anytime_method"] == "active"
            else srs)
    return {rule: {"": f.needed, "_lo": f.lo, "_hi": f.hi}
            for rule, f in (("committed", srs["fixed"]), ("anytime", then["anytime"]),
                            ("naive", then["fixed"]))}


PHASED = ("committed", "phases", "naive-phases")
"""The rules that judge in committed phases (their plan after the pilot projects the judgments
needed: :func:`projection_from_pilot`)."""


def projection_from_pilot(rule: str, pool: Pool, oracle: Any, seed: int,
                          campaigns: int = CAMPAIGNS, **options: Any) -> dict[str, Any]:
    """The judgments in all that ``rule``'s own plan projects once every topic's pilot is
    judged (``projection``: the pilot's judgments plus :attr:`Status.projected_needed`; None
    where the plan cannot reach the target), as the campaign page shows it, and the
    planner's forecast from that state with its 90% interval (``plan``, ``plan_lo``,
    ``plan_hi``: :func:`~sampleval.judging.pilot_plan.campaign_forecast` over ``campaigns``
    simulated campaigns from a generator seeded ``seed``, what ``sampleval plan`` prints as
    ``committed``; ``plan_seconds``: its processor seconds). The campaign seeded ``seed``
    is the same up to that point."""
    from sampleval.judging.pilot_plan import campaign_forecast

    judging = judging_for(rule, pool, seed, **options)
    while not (any(judging.phases) and not judging._awaiting()
               and not any(p[-1].open for p in judging.phases if p)):
        batch = judging.next_batch()
        if batch is None:
            return dict.fromkeys(("projection", "plan", "plan_lo", "plan_hi"))
        judging.observe(batch[0], oracle(*batch))
    status = judging.status()
    cpu = time.process_time()
    made = campaign_forecast(judging, np.random.default_rng(seed), campaigns=campaigns)
    return {"projection": None if status.projected_needed is None
            else status.judged + status.projected_needed,
            "plan": made.needed, "plan_lo": made.lo, "plan_hi": made.hi,
            "plan_seconds": time.process_time() - cpu}


def learnt_projections(part: pd.DataFrame, within: float = 0.15) -> dict[str, Any]:
    """The forecast from the pilot of each campaign of one rule with the factor learnt from
    the others: its plan's projection (:func:`projection_from_pilot`) times the median over
    the other campaigns of judged / projection. The campaigns' median forecast / judged, the
    share within ``within`` of the judgments used, and its binomial 95% interval."""
    from scipy.stats import binomtest

    known = part[part["projection"].notna() & part["judged"].notna()]
    ratio = (known["judged"] / known["projection"]).to_numpy(dtype=np.float64)
    if len(ratio) < 2:
        return {}
    factor = np.array([np.median(np.delete(ratio, i)) for i in range(len(ratio))])
    off = factor / ratio  # forecast / judged
    hits = int((np.abs(off - 1) <= within).sum())
    interval = binomtest(hits, len(off)).proportion_ci(0.95, method="exact")
    return {"projection_n": len(off), "projection_median": float(np.median(off)),
            f"projection_within_{within:.0%}": hits / len(off),
            "projection_within_lo": interval.low, "projection_within_hi": interval.high}


def plan_forecasts(part: pd.DataFrame, within: float = 0.15) -> dict[str, Any]:
    """The planner's forecasts from the rule's own plan at the pooled level (``plan``,
    :func:`projection_from_pilot`) against the judgments used, over one rule's campaigns: the
    median forecast / judged, the share within ``within`` with its binomial 95% interval,
    the share whose interval holds the judgments used and the interval's median width over
    the forecast."""
    from scipy.stats import binomtest

    known = part[part["plan"].notna() & part["judged"].notna()]
    if known.empty:
        return {}
    off = (known["plan"] / known["judged"]).to_numpy(dtype=np.float64)
    hits = int((np.abs(off - 1) <= within).sum())
    interval = binomtest(hits, len(off)).proportion_ci(0.95, method="exact")
    holds = (known["plan_lo"] <= known["judged"]) & (known["judged"] <= known["plan_hi"])
    return {"plan_n": len(off), "plan_median": float(np.median(off)),
            f"plan_within_{within:.0%}": hits / len(off), "plan_within_lo": interval.low,
            "plan_within_hi": interval.high, "plan_interval_holds": float(holds.mean()),
            "plan_interval_width": float(((known["plan_hi"] - known["plan_lo"])
                                          / known["plan"]).median())}


def pilot(pool: Pool, oracle: Any, seed: int, **options: Any
          ) -> tuple[AnytimeJudging, np.ndarray, np.ndarray, np.ndarray]:
    """The anytime rule's pilot in trial ``seed`` (its first judgments of every topic),
    estimated: the judging, the targeted runs' variances ``[T, R']`` (NaN: run absent),
    each topic's cap and whether its pilot found
    :data:`~sampleval.judging.planning.FOUND` relevant documents."""
    from sampleval.judging.planning import FOUND

    judging = judging_for("anytime", pool, seed, **options)
    assert isinstance(judging, AnytimeJudging)
    while ((judging.handed < judging.first) & ~judging.exhausted).any():
        batch = judging.next_batch()
        if batch is None:
            break
        judging.observe(batch[0], oracle(*batch))
    judging._refresh()
    variance = np.where(judging.present, judging.variance, np.nan)[:, judging.runs]
    cap = np.minimum(judging.capacity, judging.pool_size)
    judged = judging.sample().judged()
    relevant = judged[judged["relevance"] >= judging.level].groupby("query_id").size()
    found = relevant.reindex(judging.topics, fill_value=0).to_numpy() >= FOUND
    return judging, variance, cap, found


def neyman_gain(pool: Pool, oracle: Any, seed: int, **options: Any) -> dict[str, Any]:
    """What Neyman shares could save the anytime rule, in the planner's model
    (:func:`sampleval.judging.planning.needed`) from trial ``seed``'s pilot: the judgments
    to the anytime stopping variance with equal shares (the pooled allocation's) and with
    Neyman's, under the model of ``--anytime-method`` (``active``'s with-replacement draws;
    else simple random sampling's); None where the caps cannot reach it."""
    from sampleval.estimation.anytime import target_variance
    from sampleval.judging.planning import Shape, active_draws, needed, unit_variances

    judging, variance, cap, found = pilot(pool, oracle, seed, **options)
    shape = Shape(judging.pool_size, active_draws(pool, judging.topics)
                  if options["anytime_method"] == "active" else None)
    judged = judging.judged.astype(np.float64)
    unit = unit_variances(variance, judged, judging.pool_size, found, shape)
    aim = target_variance(options["target"].half_width, judging.ci)
    equal, neyman = (needed(unit, judged, cap, judging.pool_size, aim, shape, same)
                     for same in (True, False))
    return {"seed": seed, "equal": equal, "neyman": neyman,
            "ratio": neyman / equal if equal and neyman else None}


LOOK_POINTS = (2, 3, 4)
"""The looks a forecast from the looks is measured at: the first with at least this many
times the first look's judgments (the pilot's)."""


def interval_kind(rule: str, boundary: Any = None) -> str:
    """The intervals a row of ``rule`` was judged with, as
    :func:`~sampleval.judging.planning.widest_variance` reads them: ``fixed`` (naive),
    ``mixture`` (the normal mixture: the ``mixture`` rule, and anytime rows recorded before
    the ``boundary`` column) or ``anytime`` (the range boundary)."""
    if rule in ("naive", "naive-phases"):
        return "fixed"
    if rule == "mixture" or not isinstance(boundary, str) or boundary == "mixture":
        return "mixture"
    return "anytime"


def look_forecast(looks: str, target: float, kind: str, times: float,
                  widths: str | None = None) -> tuple[float, float, float] | None:
    """The forecast from the looks (:func:`sampleval.judging.planning.forecast_from_looks`, the
    half-widths of the intervals ``kind``, :func:`interval_kind`) made at the first look with at least ``times`` the first look's
    judgments, from the ``looks`` column (JSON) and, where given, the ``look_widths``
    column (every run's half-widths at each look: the exponent pooled over the runs);
    None when judging stopped before it."""
    from sampleval.judging.planning import forecast_from_looks

    seen = json.loads(looks) if isinstance(looks, str) else []
    each = json.loads(widths) if isinstance(widths, str) else None
    at = next((k for k, (n, _) in enumerate(seen) if n >= times * seen[0][0]), None)
    if at is None or at < 1 or at == len(seen) - 1:
        return None
    made = forecast_from_looks(seen[:at + 1], target, kind, widths=None if not each else
                               each[:at + 1])
    if made is None or made.needed is None:
        return (np.inf, np.nan, np.nan)
    return (float(made.needed), np.nan if made.lo is None else float(made.lo),
            np.inf if made.hi is None else float(made.hi))


def learnt_forecasts(part: pd.DataFrame, target: float, kind: str, times: float,
                     coverage: float = 0.9) -> list[tuple[float, float, float, float]]:
    """(forecast, judgments used, interval's low end, high end) for each campaign of
    ``part`` (one rule's rows, judged with the intervals ``kind``, :func:`interval_kind`)
    that met the target: the forecast from its first look with at least ``times`` the first
    look's judgments, with the decay exponent learnt from the *other* campaigns (the median
    of their :func:`~sampleval.judging.planning.decay_exponent` at the same point: leave one
    campaign out), and its ``coverage`` interval from the same look with the other
    campaigns' exponents at their quantiles (1 -/+ coverage) / 2 (the steeper decay gives
    the low end)."""
    from sampleval.judging.planning import decay_exponent, forecast_from_exponents

    met = part[part["reason"] == "target met"]
    seen = [json.loads(x) if isinstance(x, str) else [] for x in met["looks"]]
    judged = met["judged"].to_numpy(dtype=np.float64)
    b = np.array([np.nan if not looks else (decay_exponent(looks, n, target, kind, times=times)
                                            or np.nan) for looks, n in zip(seen, judged,
                                                                           strict=True)])
    out = []
    for c, (looks, n) in enumerate(zip(seen, judged, strict=True)):
        others = np.delete(b, c)
        if np.isnan(b[c]) or not np.isfinite(others).any():
            continue
        at = next(k for k, (m, _) in enumerate(looks) if m >= times * looks[0][0])
        made = forecast_from_exponents(looks[:at + 1], target, others, kind,
                                       coverage=coverage)
        if made is not None and made.needed is not None:
            ends = [np.nan if e is None else float(e) for e in (made.lo, made.hi)]
            out.append((float(made.needed), float(n), ends[0], ends[1]))
    return out


def combined(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The rows of several ``--out`` files, one per rule and seed: the rows of a
    ``--plan-only`` file give their forecasts to the judged rows of the same rule and seed."""
    table = pd.concat(tables, ignore_index=True)
    judged = table[table["judged"].notna()].drop_duplicates(["rule", "seed"], keep="first")
    plans = table[table["judged"].isna()].drop_duplicates(["rule", "seed"], keep="first")
    if plans.empty:
        return judged.reset_index(drop=True)
    columns = [c for c in ("forecast", "forecast_lo", "forecast_hi", "projection", "plan",
                           "plan_lo", "plan_hi") if c in plans]
    merged = judged.merge(plans[["rule", "seed", *columns]], on=["rule", "seed"],
                          how="left", suffixes=("", "_plan"))
    for c in columns:  # a forecast made with the judging stands
        merged[c] = merged[c].combine_first(merged.pop(f"{c}_plan"))
    return merged


def spread(table: pd.DataFrame, within: float = 0.15) -> pd.DataFrame:
    """Per rule, over the campaigns run after the same pilots (``--rests``): how far the
    judgments of campaigns that share a pilot spread around their own median (the pilot's),
    pooled over the pilots: the share of campaigns beyond ``within`` of it, the median and
    the largest |judged / the pilot's median - 1|, and the sd of log judged within a pilot.
    A forecast made from the pilot alone is one number for all of them: if more than 20% lie
    beyond 15% of their own median, no forecast from that pilot is within 15% in 80% of
    campaigns."""
    rows = []
    for (target, rule), part in table.groupby(["target", "rule"], sort=False):
        median = part.groupby("seed")["judged"].transform("median")
        off = (part["judged"] / median - 1).abs()
        logs = part["judged"].astype(np.float64).map(np.log)
        rows.append({"target": target, "rule": rule, "pilots": part["seed"].nunique(),
                     "campaigns": len(part), "judged": part["judged"].mean(),
                     f"beyond_{within:.0%}": float((off > within).mean()),
                     "median_off": float(off.median()), "max_off": float(off.max()),
                     "sd_log_within": float(np.sqrt(
                         (logs - logs.groupby(part["seed"]).transform("mean")).pow(2).sum()
                         / max(len(part) - part["seed"].nunique(), 1))),
                     "coverage": part["coverage"].mean()})
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame, target: float, fixed: float | None = None) -> pd.DataFrame:
    """Per rule: the module docstring's summary (campaigns paired by seed); with ``fixed``
    (the fixed budget whose rms meets the target), ``vs_fixed``, the mean judgments over it."""
    rows = []
    base = table[table["rule"] == "committed"].set_index("seed")["judged"]
    for rule, part in table.groupby("rule", sort=False):
        part = part.set_index("seed")
        ratio = (part["judged"] / base.reindex(part.index)).dropna()
        row = {"rule": rule, "trials": len(part), "judged": part["judged"].mean(),
               "judged_sd": part["judged"].std(ddof=1),
               "coverage": part["coverage"].mean(),
               "coverage_se": part["coverage"].std(ddof=1) / np.sqrt(len(part)),
               "met": float((part["widest"] <= target + 1e-12).mean()),
               "paired": len(ratio),
               "vs_committed": float(ratio.mean()) if len(ratio) else np.nan,
               "vs_committed_sd": float(ratio.std(ddof=1)) if len(ratio) > 1 else np.nan,
               "vs_committed_10%": float(ratio.quantile(0.1)) if len(ratio) else np.nan,
               "vs_committed_90%": float(ratio.quantile(0.9)) if len(ratio) else np.nan,
               "error": part["error"].mean()}
        if fixed:
            row["vs_fixed"] = part["judged"].mean() / fixed
        if "forecast" in part and part["forecast"].notna().any():
            known = part[part["forecast"].notna()]
            rel = (known["forecast"] - known["judged"]).abs() / known["judged"]
            row["pilot_n"] = len(known)
            row["pilot_median"] = float((known["forecast"] / known["judged"]).median())
            row["pilot_within_15%"] = float((rel <= 0.15).mean())
            row["pilot_interval_holds"] = float(
                ((known["forecast_lo"] <= known["judged"])
                 & (known["judged"] <= known["forecast_hi"])).mean())
        if "projection" in part:
            row.update(learnt_projections(part))
        if "plan" in part:
            row.update(plan_forecasts(part))
        if rule not in ("committed", "plan-ends", "matched") and "looks" in part:  # (no
            # boundary of planning's reads its looks' half-widths back)
            widths = (part["look_widths"] if "look_widths" in part
                      else pd.Series(None, index=part.index, dtype=object))
            kind = interval_kind(str(rule), part["boundary"].iloc[0] if "boundary" in part
                                 else None)  # a rule's rows share their intervals
            for times in LOOK_POINTS:
                made = [(f, n) for looks, each, n in zip(part["looks"], widths, part["judged"],
                                                         strict=True)
                        if (f := look_forecast(looks, target, kind, times, each))
                        is not None]
                if not made:
                    continue
                ratio_at = np.array([f[0] / n for f, n in made])
                row[f"x{times}_n"] = len(made)
                row[f"x{times}_median"] = float(np.median(ratio_at))
                row[f"x{times}_within_15%"] = float(np.mean(np.abs(ratio_at - 1) <= 0.15))
                row[f"x{times}_interval_holds"] = float(np.mean(
                    [f[1] <= n <= f[2] for f, n in made]))
            for times in (1, *LOOK_POINTS):  # 1: from the first look, the pilot's
                learnt = np.array(learnt_forecasts(part, target, kind, times))
                if len(learnt):
                    ratio_at = learnt[:, 0] / learnt[:, 1]
                    row[f"x{times}_learnt_n"] = len(learnt)
                    row[f"x{times}_learnt_median"] = float(np.median(ratio_at))
                    row[f"x{times}_learnt_within_15%"] = float(
                        np.mean(np.abs(ratio_at - 1) <= 0.15))
                    row[f"x{times}_learnt_interval_holds"] = float(np.mean(
                        (learnt[:, 2] <= learnt[:, 1]) & (learnt[:, 1] <= learnt[:, 3])))
                    row[f"x{times}_learnt_interval_width"] = float(np.median(
                        (learnt[:, 3] - learnt[:, 2]) / learnt[:, 0]))
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=30)
    parser.add_argument("--collection", choices=("covid", "cranfield"), default="covid",
                        help="TREC-COVID round 5 (default) or Cranfield (sparse)")
    parser.add_argument("--target", type=float, default=0.03,
                        help="target 95%% half-width of every run's mean (default 0.03)")
    parser.add_argument("--measure", default="AP", help="the targeted measure (default AP)")
    parser.add_argument("--method", default="stratified",
                        help="selection method of the committed rule (default stratified)")
    parser.add_argument("--anytime-method", default="active",
                        help="selection method of the anytime and naive rules (default "
                             "active, with rounds of --batch draws: every round ends a valid "
                             "sample, where a stratified layout needs about half its budget "
                             "to reach every stratum)")
    parser.add_argument("--ceiling", type=float, default=0.5,
                        help="each topic's cap, as a share of its pool (default 0.5)")
    parser.add_argument("--start", type=int, default=20,
                        help="each topic's first judgments (default 20)")
    parser.add_argument("--batch", type=int, default=5, help="documents per batch")
    parser.add_argument("--every", type=int,
                        help="judgments at least between looks (default: a look after every "
                             "batch)")
    parser.add_argument("--allocation", default="pooled",
                        help="which variances the anytime and naive rules' plan reads: "
                             "pooled (default) or own (AnytimeJudging's allocation)")
    parser.add_argument("--interim", type=float, default=INTERIM,
                        help="the committed rule's interim phase, a share of the pilot's plan "
                             f"(default {INTERIM}: none; 0.5 the default before, "
                             "docs/guide/anytime.md)")
    parser.add_argument("--rules", default=",".join(RULES[:3]),
                        help=f"rules to run, of {', '.join(RULES)} (default the first "
                             "three)")
    parser.add_argument("--plan", action="store_true",
                        help="also forecast the judgments from each trial's pilot")
    parser.add_argument("--plan-only", action="store_true",
                        help="only the forecasts from each trial's pilot, one row per rule "
                             "of --rules without judging (--summarise pairs them with the "
                             "judged rows of the same rule and seed)")
    parser.add_argument("--replicates", type=int, default=200,
                        help="bootstrap replicates of a forecast's interval (default 200)")
    parser.add_argument("--campaigns", type=int, default=CAMPAIGNS,
                        help="campaigns simulated by the committed rule's forecast "
                             f"(--plan-only; default {CAMPAIGNS})")
    parser.add_argument("--no-pilot-forecast", action="store_true",
                        help="with --plan-only: skip the old planner's forecasts from the "
                             "anytime rule's pilot (forecast_ columns)")
    parser.add_argument("--neyman-gain", action="store_true",
                        help="only print, per trial, the judgments the planner's model gives "
                             "the anytime rule from the trial's pilot with equal shares and "
                             "with Neyman's (neyman_gain)")
    parser.add_argument("--rests", type=int, default=0,
                        help="run each trial's campaign RESTS times after the same pilot, the "
                             "rest seeded 0..RESTS-1 (the spread no forecast from that pilot "
                             "can beat; summary: spread())")
    parser.add_argument("--fixed-rates", metavar="R,R,...",
                        help="only judge fixed per-topic budgets of --method at these shares "
                             "of each topic's pool (--trials samples each) and print the "
                             "fixed budget whose rms meets --target")
    parser.add_argument("--fixed-budget", type=float, metavar="N",
                        help="with --summarise: the fixed budget whose rms meets the target "
                             "(--fixed-rates' figure), for each rule's vs_fixed")
    parser.add_argument("--out", type=Path, help="CSV of the per-trial rows")
    parser.add_argument("--summarise", type=Path, metavar="CSV", nargs="+",
                        help="only print the summary of --out files (of runs stopped early, "
                             "or split over seeds; one row per rule and seed is kept)")
    args = parser.parse_args(argv)
    if args.summarise is not None:
        missing = [str(f) for f in args.summarise if not f.is_file()]
        if missing:
            parser.error(f"no such file: {', '.join(missing)}")
        tables = [pd.read_csv(f) for f in args.summarise]
        if any("rest" in t for t in tables):
            table = pd.concat(tables, ignore_index=True).drop_duplicates(
                ["rule", "seed", "rest"])
            print(spread(table).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
            return 0
        table = combined(tables)
        for width in sorted(table["target"].unique()):
            part = table[table["target"] == width]
            print(f"target {width}, {part['seed'].nunique()} seeds")
            print(summary(part, float(width), args.fixed_budget).to_string(
                index=False, float_format=lambda x: f"{x:.4f}"))
        return 0
    began = time.perf_counter()
    runs, qrels = collection(args.collection, args.data, args.depth)
    pool = Pool.from_runs(runs, depth=args.depth, qrels=qrels)
    truth_qrels = pool_truth(pool)
    truth = exact_per_topic(truth_qrels, runs, args.measure, args.depth).reindex(
        list(pool.topics)).fillna(0.0)
    present = np.array([pool[t].present for t in pool.topics])
    truth = np.where(present, truth.to_numpy(), 0.0).sum(axis=0) / np.maximum(
        present.sum(axis=0), 1)
    oracle = qrels_oracle(truth_qrels)
    target = Target(args.measure, args.target)
    options = {"method": args.method, "anytime_method": args.anytime_method,
               "ceiling": args.ceiling, "target": target, "start": args.start, "batch": args.batch, "every": args.every,
               "allocation": args.allocation, "interim": args.interim}
    if args.fixed_rates:
        from studies.confident_judging import fixed, fixed_budget

        spec = target.spec(METHODS[args.method].design)
        table = pd.DataFrame([fixed(pool, truth_qrels, truth, float(rate), method=args.method,
                                    trials=args.trials, seed=args.seed, measure=spec.name)
                              for rate in args.fixed_rates.split(",") if rate.strip()])
        if args.out:
            table.to_csv(args.out, index=False)
        print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        meets = fixed_budget(table, [args.target]).get(args.target)
        print(f"fixed budget whose rms meets {args.target}: "
              f"{'not bracketed by the rates' if meets is None else round(meets)} judgments")
        return 0
    if args.neyman_gain:
        gains = pd.DataFrame([neyman_gain(pool, oracle, args.seed + trial, **options)
                              for trial in range(args.trials)])
        print(gains.to_string(index=False))
        known = gains["ratio"].dropna()
        print(f"Neyman / equal: median {known.median():.3f}, range {known.min():.3f}-"
              f"{known.max():.3f} over {len(known)} of {len(gains)} pilots (the others: the "
              "caps cannot reach the target in the model)")
        return 0
    rules = [r for r in args.rules.split(",") if r.strip()]
    rows: list[dict[str, Any]] = []
    writer = None
    handle = args.out.open("w", newline="") if args.out else None
    try:
        for trial in range(args.trials):
            seed = args.seed + trial
            forecast: dict[str, Any] = {}
            tic = time.perf_counter()
            if args.plan or (args.plan_only and not args.no_pilot_forecast):
                forecast = forecast_from_pilot(pool, oracle, seed, args.replicates,
                                               **options)
            for rule, rest in ((r, k) for r in rules
                               for k in (range(args.rests) if args.rests else [None])):
                row = {"collection": args.collection, "target": args.target, "trial": trial,
                       "seed": seed, **({} if rest is None else {"rest": rest})}
                if args.plan_only:
                    row.update({"rule": rule, "judged": None, "reason": "forecast only",
                                "widest": np.nan, "coverage": np.nan, "error": np.nan,
                                "looks": "[]", "look_widths": "[]"})
                    if rule in PHASED:
                        row.update(projection_from_pilot(rule, pool, oracle, seed,
                                                         args.campaigns, **options))
                else:
                    tic = time.perf_counter()
                    cpu = time.process_time()
                    row.update(one(rule, pool, oracle, truth, seed, rest, **options))
                    row["cpu_seconds"] = time.process_time() - cpu
                if rule in forecast:
                    row.update({f"forecast{k}": v for k, v in forecast[rule].items()})
                row["seconds"] = time.perf_counter() - tic
                rows.append(row)
                print(f"trial {trial} {rule}: {row['judged']} judgments, {row['reason']}, "
                      f"forecast {row.get('forecast')}, "
                      f"widest {row['widest']:.4f}, coverage {row['coverage']:.3f}, "
                      f"{row['seconds']:.0f} s ({row.get('cpu_seconds', 0):.0f} CPU-s)",
                      file=sys.stderr, flush=True)
                if handle is not None:
                    if writer is None:
                        writer = csv.DictWriter(handle, fieldnames=list(row) + [
                            k for k in ("forecast", "forecast_lo", "forecast_hi")
                            if k not in row], extrasaction="ignore")
                        writer.writeheader()
                    writer.writerow(row)
                    handle.flush()
    finally:
        if handle is not None:
            handle.close()
    if args.plan_only:
        return 0
    table = pd.DataFrame(rows)
    if args.rests:
        print(spread(table).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        return 0
    print(f"{args.collection}: {len(runs)} runs, {len(pool.topics)} topics, depth "
          f"{args.depth}, {args.method} / {args.anytime_method} (ceiling {args.ceiling}, "
          f"allocation {args.allocation}), {args.measure} target {args.target}, start {args.start}, batch {args.batch}, looks every "
          f"{args.every or args.batch}, {args.trials} trials, "
          f"{time.perf_counter() - began:.0f} s")
    print(summary(table, args.target).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
