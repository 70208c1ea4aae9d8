"""Comparing runs on sampled judgments: the difference of two runs' means, its interval, a
paired test over topics, and multiple-comparison correction (``sampleval compare``; the
argument and its measurements: docs/guide/compare.md, docs/research/compare.md).

The per-topic difference is estimated from the one sample both runs share. Every estimator
family is, per topic, linear in a run's per-document weights (the Horvitz-Thompson totals,
Li & Kanoulas, CIKM 2017, sec. 3; the importance estimator, Schnabel et al., ICTIR 2016,
eq. 4) or a ratio whose denominator does not depend on the run (AP-hat, R@k, Rprec over
R-hat; nDCG over IDCG-hat; xinfAP, infAP and statAP over their estimated R), so the
difference of the two runs' estimates *is* the estimator applied to the difference of their
weights (on an importance sample, Schnabel et al.'s pairwise estimate): :func:`compare`
subtracts the per-topic estimates :func:`sampleval.estimation.estimates.estimate` returns.

The interval is mean(d-hat) +- t s / sqrt(T) over the T topics: with d-hat_t = d_t + e_t,
e_t centred and independent across topics, s^2 estimates Var(d_t) + E[Var(e_t | t)]
(two-stage sampling's "ultimate cluster" variance, topics as first-stage units;
conservative for the fixed topics at hand). Degrees of freedom (``df``): Satterthwaite's
approximation (Biometrics Bulletin 2, 1946) of s^2 = x'Mx/(T-1), M = I - J/T, x independent
with variances w_t,

    nu = ((T-1)/T sum_t w_t)^2 / ((1 - 2/T) sum_t w_t^2 + (sum_t w_t)^2 / T^2),

w_t = tau-hat^2 + v-hat_t, tau-hat^2 = max(0, s^2 - mean v-hat_t), v-hat_t the family's
variance of topic t's difference (``EstimatorFamily.differences``: ``ht``, ``hh``, ``ppi``,
``is``); nu = T-1 when the w_t are equal (a census), towards 1 as one topic dominates. Other
families keep T-1; ``df="topics"`` asks for T-1 everywhere.

Corrections: Holm's step-down (family-wise error) and Benjamini-Hochberg (false discovery
rate, ``scipy.stats.false_discovery_control``), over the pairs compared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sampleval.errors import UsageError
from sampleval.estimation.setup import SAMPLE_DEPTH
from sampleval.measures.aggregation import over_topics

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from sampleval.io.coerce import MeasuresLike, PredictionsLike, RunsLike, SampleLike

CORRECTIONS = ("holm", "bh", "none")
DF_RULES = ("satterthwaite", "topics")
COLUMNS = ["run_a", "run_b", "measure", "topics", "mean_a", "mean_b", "diff", "lo", "hi",
           "t", "df", "p", "p_adjusted", "significant"]


def compare(sample: SampleLike, runs: RunsLike, measure: MeasuresLike | None = None, *,
            baseline: str | None = None, correction: str = "holm", alpha: float = 0.05,
            ci: float = 0.95, depth: int | str | None = SAMPLE_DEPTH, level: float = 1,
            df: str = "satterthwaite", predictions: PredictionsLike | None = None
            ) -> pd.DataFrame:
    """Every pair of ``runs`` (or every run against ``baseline``) compared on ``measure``
    estimated from ``sample``: the columns of :func:`paired_differences`, and ``estimator``,
    the estimator's fully resolved name (every option at its value). ``measure``: one
    estimator's name or plain measure (``AP``: the design's preferred estimator), default
    :func:`~sampleval.estimation.setup.compare_default`; the depth (default: the sample's
    pool depth) and the estimator are :func:`~sampleval.estimation.setup.setup_for`'s, so
    each run's mean is the one :func:`~sampleval.estimation.estimates.estimate` gives. ``df``:
    ``satterthwaite`` (the effective degrees of freedom where the estimator gives the
    variance of a difference, module docstring) or ``topics`` (T - 1, the textbook paired
    t-test). ``predictions`` feed the estimators that read them (``AP~ppi``: the per-topic
    differences and their variances then use the predictions as control variates)."""
    if df not in DF_RULES:
        raise UsageError(f"unknown degrees-of-freedom rule {df!r} (one of "
                         f"{', '.join(DF_RULES)})")
    from sampleval.estimation.estimates import MEAN_TOPIC, estimate, estimate_differences
    from sampleval.estimation.setup import compare_default, estimated_topics
    from sampleval.io.coerce import as_runs, as_sample
    from sampleval.measures.names import as_measures

    sample = estimated_topics(as_sample(sample))
    given = None if measure is None else [str(m) for m in as_measures(measure)]
    if given is not None and len(given) != 1:
        raise UsageError("compare takes one measure; call it once per measure")
    name = compare_default(sample) if given is None else given[0]
    runs = as_runs(runs)
    names = [r.name for r in runs]
    if baseline is not None and baseline not in names:
        raise UsageError(f"the baseline {baseline!r} is not among the runs "
                         f"({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})")
    rows = estimate(sample, runs, [name], depth=depth, level=level, ci=ci,
                    predictions=predictions)
    resolved, full_name = str(rows["measure"].iloc[0]), str(rows["estimator"].iloc[0])
    rows = rows[rows["query_id"] != MEAN_TOPIC]
    per_topic = rows.pivot(index="query_id", columns="run", values="value")
    per_topic = per_topic.reindex(columns=[n for n in names if n in per_topic.columns])
    pairs = pair_order(per_topic, baseline)
    variances = None if df == "topics" else estimate_differences(
        sample, [r for r in runs if r.name in per_topic.columns], resolved, pairs,
        depth=depth, level=level, predictions=predictions)
    return paired_differences(per_topic, resolved, baseline=baseline,
                              correction=correction, alpha=alpha, ci=ci, pairs=pairs,
                              sampling_variance=None if variances is None
                              else variances.reindex(per_topic.index).to_numpy()
                              ).assign(estimator=full_name)


def pair_order(per_topic: pd.DataFrame, baseline: str | None = None,
               ranked: bool = True) -> list[tuple[str, str]]:
    """The pairs :func:`paired_differences` compares (see there), in its order."""
    names = [str(n) for n in per_topic.columns]
    if baseline is not None:
        if baseline not in names:
            raise UsageError(f"the baseline {baseline!r} has no estimate on the sample's topics")
        return [(n, baseline) for n in names if n != baseline]
    order = (per_topic.mean(axis=0).sort_values(ascending=False, kind="stable").index
             if ranked else per_topic.columns)
    return [(str(a), str(b)) for i, a in enumerate(order) for b in order[i + 1:]]


def paired_differences(per_topic: pd.DataFrame, measure: str, *, baseline: str | None = None,
                       correction: str = "holm", alpha: float = 0.05,
                       ci: float = 0.95, ranked: bool = True,
                       pairs: list[tuple[str, str]] | None = None,
                       sampling_variance: np.ndarray | None = None) -> pd.DataFrame:
    """Paired comparisons from per-topic values (``[topics, runs]``, NaN: the run has no
    value on that topic; each pair uses the topics both have).

    Pairs: with ``baseline``, every other run minus the baseline; otherwise every pair, the
    runs ordered by their mean over all their topics (best first; ``ranked=False``: in column
    order) and each pair written as the earlier run minus the later one (``pairs``: these
    pairs, as :func:`pair_order` gives them). Columns: ``run_a, run_b, measure, topics`` (the
    number paired), ``mean_a, mean_b`` (over the paired topics), ``diff`` (mean_a - mean_b),
    ``lo, hi`` (the ``ci`` interval mean +- t_df s / sqrt(T)), ``t``, ``df`` (T - 1, or
    with ``sampling_variance`` (``[topics, pairs]``, the variance of each estimated
    per-topic difference) Satterthwaite's effective degrees of freedom, module docstring),
    ``p`` (two-sided), ``p_adjusted`` (by ``correction``) and ``significant`` (p_adjusted <
    ``alpha``).
    """
    from scipy import stats

    check_test_options(correction, alpha, ci)
    if per_topic.shape[1] < 2:
        raise UsageError("comparing needs at least two runs with estimates on the sample's "
                         "topics")
    names = list(per_topic.columns)
    if pairs is None:
        pairs = pair_order(per_topic, baseline, ranked)
    values = per_topic.to_numpy(dtype=np.float64)
    column = {n: i for i, n in enumerate(names)}
    a_idx = np.array([column[a] for a, _ in pairs])
    b_idx = np.array([column[b] for _, b in pairs])
    diff = values[:, a_idx] - values[:, b_idx]  # [topics, pairs]
    both = ~np.isnan(diff)
    n = both.sum(axis=0)
    if (n < 2).any():
        bad = int(np.flatnonzero(n < 2)[0])
        raise UsageError(f"runs {pairs[bad][0]} and {pairs[bad][1]} share fewer than two "
                         "topics with estimates: no paired test is possible")
    mean, sd = _mean_sd(diff, both, n)
    se = sd / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean / np.where(se > 0, se, 1.0),
                     np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
    df = (n - 1.0 if sampling_variance is None
          else effective_df(sd, both, n, np.asarray(sampling_variance, dtype=np.float64)))
    p = 2.0 * stats.t.sf(np.abs(t), df)
    half = stats.t.ppf(0.5 + ci / 2.0, df) * se
    adjusted = adjust(p, correction)
    mean_a = over_topics(values[:, a_idx], both, "mean")  # estimate()'s rule, to the digit
    mean_b = over_topics(values[:, b_idx], both, "mean")
    return pd.DataFrame({
        "run_a": [a for a, _ in pairs], "run_b": [b for _, b in pairs], "measure": measure,
        "topics": n, "mean_a": mean_a, "mean_b": mean_b, "diff": mean, "lo": mean - half,
        "hi": mean + half, "t": t, "df": df, "p": p, "p_adjusted": adjusted,
        "significant": adjusted < alpha,
    })[COLUMNS]


def check_test_options(correction: str, alpha: float, ci: float) -> None:
    """UsageError unless ``correction`` is known and ``alpha`` and ``ci`` lie in (0, 1)."""
    if correction not in CORRECTIONS:
        raise UsageError(f"unknown correction {correction!r} (one of {', '.join(CORRECTIONS)})")
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must lie in (0, 1), not {alpha}")
    if not 0 < ci < 1:
        raise UsageError(f"the confidence level must lie in (0, 1), not {ci}")


def _mean_sd(diff: np.ndarray, both: np.ndarray, n: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """Per column, the mean and the sample standard deviation (ddof 1) of the present
    values."""
    filled = np.where(both, diff, 0.0)
    mean = filled.sum(axis=0) / n
    spread = np.where(both, diff - mean, 0.0)
    return mean, np.sqrt((spread ** 2).sum(axis=0) / (n - 1))


def effective_df(sd: np.ndarray, both: np.ndarray, n: np.ndarray,
                 sampling_variance: np.ndarray) -> np.ndarray:
    """Per pair, Satterthwaite's degrees of freedom of s^2 (module docstring) with topic
    variances w_t = tau-hat^2 + v-hat_t over the topics the pair has (``both``), v-hat_t the
    estimated sampling variance of topic t's difference (``[topics, pairs]``) and tau-hat^2 =
    max(0, s^2 - mean v-hat); between 1 and T - 1, T - 1 when every w_t is equal."""
    v = np.where(both, np.maximum(np.nan_to_num(sampling_variance), 0.0), 0.0)
    tau2 = np.maximum(sd * sd - v.sum(axis=0) / n, 0.0)
    w = np.where(both, tau2 + v, 0.0)
    total, squares = w.sum(axis=0), (w * w).sum(axis=0)
    numerator = ((n - 1.0) / n * total) ** 2
    denominator = (1.0 - 2.0 / n) * squares + (total / n) ** 2
    df = np.divide(numerator, denominator, out=n - 1.0, where=denominator > 0)
    return np.clip(df, 1.0, n - 1.0)


def adjust(p: np.ndarray, correction: str) -> np.ndarray:
    """p-values adjusted for the number compared: ``holm`` (Holm's step-down, controls the
    family-wise error rate), ``bh`` (Benjamini-Hochberg, controls the false discovery rate
    under independence or positive dependence), ``none``."""
    from scipy import stats

    p = np.asarray(p, dtype=np.float64)
    if correction == "none" or len(p) == 0:
        return p.copy()
    if correction == "bh":
        return np.asarray(stats.false_discovery_control(p, method="bh"))
    if correction != "holm":
        raise UsageError(f"unknown correction {correction!r} (one of {', '.join(CORRECTIONS)})")
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty(len(p))
    out[order] = np.minimum(stepped, 1.0)
    return out


def adjusted_intervals(table: pd.DataFrame, ci: float = 0.95) -> tuple[np.ndarray,
                                                                       np.ndarray]:
    """Each pair's interval (``table``: :func:`paired_differences`' columns, its ``lo, hi``
    at level ``ci``) widened by the multiplicity adjustment of its p-value: at level
    1 - (1 - ci) p / p_adjusted, the per-pair level the adjustment implies (Bonferroni's
    1 - (1 - ci) / m for ``holm``'s first step, 1 - (1 - ci) k / m for ``bh``'s k-th
    smallest p). With ``ci`` = 1 - alpha, an interval excludes 0 exactly when its pair is
    significant (p_adjusted < alpha), so a plot's intervals and its markers agree; with
    ``correction=none`` they are ``lo, hi``."""
    from scipy import stats

    diff = table["diff"].to_numpy(dtype=np.float64)
    half = (table["hi"].to_numpy(dtype=np.float64) - table["lo"].to_numpy(dtype=np.float64)) / 2
    df = table["df"].to_numpy(dtype=np.float64)
    p = table["p"].to_numpy(dtype=np.float64)
    adjusted = table["p_adjusted"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where((p > 0) & (adjusted > 0), p / adjusted, 1.0)
    level = 1.0 - (1.0 - ci) * np.clip(share, 0.0, 1.0)
    scale = stats.t.ppf(0.5 + level / 2, df) / stats.t.ppf(0.5 + ci / 2, df)
    wide = half * np.where(np.isfinite(scale), scale, 1.0)
    return diff - wide, diff + wide


def forest_plot(table: pd.DataFrame, path: str, title: str | None = None,
                ci: float = 0.95) -> None:
    """A forest plot of ``table`` (:func:`paired_differences`' columns, intervals at level
    ``ci``): one line per pair, its difference and its interval adjusted for multiplicity as
    its p-value is (:func:`adjusted_intervals`), significant pairs filled; written to
    ``path`` (the format from its suffix: png, pdf, svg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(table)
    fig, ax = plt.subplots(figsize=(7.0, max(2.0, 0.28 * n + 1.2)))
    y = np.arange(n)[::-1]
    sig = table["significant"].to_numpy(dtype=bool)
    diff = table["diff"].to_numpy(dtype=np.float64)
    lo, hi = adjusted_intervals(table, ci)
    err = np.vstack([diff - lo, hi - diff])
    ax.errorbar(diff, y, xerr=err, fmt="none", ecolor="0.35", elinewidth=1.2, capsize=2)
    ax.scatter(diff[sig], y[sig], color="C3", zorder=3, label="significant")
    ax.scatter(diff[~sig], y[~sig], facecolor="white", edgecolor="0.2", zorder=3,
               label="not significant")
    ax.axvline(0.0, color="0.6", linewidth=0.8, linestyle="--")
    ax.set_yticks(y, [f"{a} - {b}" for a, b in zip(table["run_a"], table["run_b"],
                                                   strict=True)], fontsize=7)
    measure = str(table["measure"].iloc[0]) if n else ""
    ax.set_xlabel(f"difference in mean {measure} ({ci:.0%} intervals adjusted for "
                  "multiplicity as the p-values)")
    ax.set_title(title or f"{measure}: paired differences", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    save_figure(fig, path)


def save_figure(fig: Figure, path: str) -> None:
    """Lay out ``fig``, write it to ``path`` (the format from its suffix) and close it;
    UsageError when it cannot be written."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        fig.savefig(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot write the plot to {path}: {exc}") from None
    finally:
        plt.close(fig)
