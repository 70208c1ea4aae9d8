"""summary.csv: one row per (method, budget, measure) over every trial and split.

A sample set S (Li & Kanoulas, sec. 4.2) is one trial of one split. From the mean-over-topics
rows (each run's estimate and truth per sample) come rms, bias, squared bias, variance and
mse (:mod:`.metaeval`; with ``--leave-out`` also over the contributing and over the left-out
runs alone); from the per-trial statistics (trial_stats.parquet) the means over samples of
Kendall's tau, tau_AP, Voorhees' significant-pair accuracy (with its minimum and maximum,
her Table 2 layout) and the correlation of estimated and true R (her Table 3), the share of
intervals that contain the truth (pooled over samples), documents judged per topic and
seconds per trial.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.simulation import metaeval

KEYS = ["method", "rate", "budget", "measure"]
GROUP = ["method", "_budget", "measure"]
COLUMNS = ["method", "rate", "budget", "measure", "estimator", "trials", "samples", "rms",
           "bias", "variance", "bias_squared", "mse", "tau", "tau_ap", "sig_accuracy",
           "sig_accuracy_min", "sig_accuracy_max", "r_corr", "coverage", "coverage_topic",
           "judged", "seconds_per_trial", "unreachable", "reaching_budget", "reaching_rate"]
AUDIT_COLUMNS = ["audit_power", "audit_false_alarm", "rank_coverage"]
"""With an audit: the means over samples of ``audit_favoured_flagged``,
``audit_others_flagged`` and ``rank_covered`` (trial_stats.parquet)."""
AUDIT_SOURCES = ("audit_favoured_flagged", "audit_others_flagged", "rank_covered")
SPLIT_COLUMNS = [f"{stat}_{part}" for part in ("contributed", "left_out")
                 for stat in ("rms", "bias", "variance")]


def summarise(means: pd.DataFrame, stats: pd.DataFrame, leave_out: bool) -> pd.DataFrame:
    """The summary (:data:`COLUMNS`, and :data:`SPLIT_COLUMNS` when ``leave_out``) from the
    topic-``all`` rows of trials.parquet and the rows of trial_stats.parquet, in the order the
    cells first appear in ``stats``."""
    rows = []
    audited = AUDIT_SOURCES[0] in stats and bool(stats[AUDIT_SOURCES[0]].notna().any()
                                                  or stats[AUDIT_SOURCES[2]].notna().any())
    grouped = _with_cell(means).groupby(GROUP, sort=False, observed=True)
    for key, part in _with_cell(stats).groupby(GROUP, sort=False, observed=True):
        first = part.iloc[0]
        row: dict[str, object] = {k: first[k] for k in KEYS}
        row["estimator"] = str(first["estimator"])
        row["trials"] = int(part["trial"].nunique())
        row["samples"] = len(part)
        estimate, truth, contributed = _samples_by_runs(grouped.get_group(key))
        row.update(_errors(estimate, truth))
        if leave_out:
            for name, mask in (("contributed", contributed), ("left_out", ~contributed)):
                errors = _errors(estimate, truth, mask)
                row.update({f"{s}_{name}": errors[s] for s in ("rms", "bias", "variance")})
        for column in ("tau", "tau_ap", "r_corr", "judged"):
            row[column] = _mean(part[column])
        accuracy = part["sig_accuracy"].astype(np.float64)
        row["sig_accuracy"] = _mean(accuracy)
        row["sig_accuracy_min"] = float(accuracy.min()) if accuracy.notna().any() else np.nan
        row["sig_accuracy_max"] = float(accuracy.max()) if accuracy.notna().any() else np.nan
        row["coverage"] = _share(part["covered"], part["intervals"])
        row["coverage_topic"] = _share(part["covered_topic"], part["intervals_topic"])
        row["seconds_per_trial"] = _mean(part["seconds"])
        for column in ("unreachable", "reaching_budget", "reaching_rate"):
            values = part[column].to_numpy(dtype=np.float64) if column in part else [np.nan]
            row[column] = (_mean(part[column]) if column == "unreachable"
                           else float(np.nanmax(values)) if np.isfinite(values).any()
                           else np.nan)
        if audited:
            row.update({c: _mean(part[s]) for c, s in zip(AUDIT_COLUMNS, AUDIT_SOURCES,
                                                          strict=True)})
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS + (SPLIT_COLUMNS if leave_out else [])
                        + (AUDIT_COLUMNS if audited else []))


def unreachable_notes(summary: pd.DataFrame) -> list[str]:
    """One sentence per (method, budget) whose design left part of the pool unreachable
    (inclusion probability 0), with the budget that reaches every stratum (issue 29)."""
    notes = []
    cells = summary.drop_duplicates(["method", "rate", "budget"])
    for row in cells[cells["unreachable"].fillna(0) > 0].to_dict("records"):
        rate, budget, reaching = (float(row[k]) for k in ("rate", "budget", "reaching_budget"))
        given = f"rate {rate:g}" if np.isfinite(rate) else f"budget {budget:g}"
        reach = ("" if not np.isfinite(reaching) else
                 f"; a budget of {reaching:.0f} documents per topic (rate "
                 f"{float(row['reaching_rate']):.3g}) reaches every stratum some budget "
                 "reaches")
        notes.append(f"{row['method']} at {given}: {float(row['unreachable']):.1%} of the "
                     "pooled documents unreachable (inclusion probability 0, counted as not "
                     f"relevant){reach}")
    return notes


def _with_cell(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a column naming its cell's budget (the rate, else the count), so that
    groups have no NaN key."""
    return frame.assign(_budget=frame["rate"].fillna(frame["budget"]))


def _samples_by_runs(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``[samples, runs]`` estimates, truths and contributed flags (a sample: trial, split)."""
    def wide(column: str) -> np.ndarray:
        table = rows.pivot(index=["trial", "split"], columns="run", values=column)
        return table.to_numpy(dtype=np.float64)

    return wide("estimate"), wide("truth"), wide("contributed").astype(bool)


def _errors(estimate: np.ndarray, truth: np.ndarray,
            mask: np.ndarray | None = None) -> dict[str, float]:
    return {"rms": metaeval.rms(estimate, truth, mask),
            "bias": metaeval.bias(estimate, truth, mask),
            "variance": metaeval.variance(estimate, mask),
            "bias_squared": metaeval.bias_squared(estimate, truth, mask),
            "mse": metaeval.mse(estimate, truth, mask)}


def _mean(column: pd.Series) -> float:
    values = column.to_numpy(dtype=np.float64)
    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


def _share(hits: pd.Series, counts: pd.Series) -> float:
    total = float(counts.sum())
    return float(hits.sum()) / total if total > 0 else float("nan")
