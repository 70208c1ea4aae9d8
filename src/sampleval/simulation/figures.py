"""The figures of a simulation, drawn from its tables (matplotlib, no display needed).

- :func:`rms_tau`: rms (solid, left axis) and Kendall's tau (dotted, right axis) against the
  budget, one line per method, one panel per measure (Li & Kanoulas, Fig. 5; with the
  left-out runs' rms, Fig. 7);
- :func:`scatter`: estimated against true mean scores of every run in one trial per method
  (their Fig. 3);
- :func:`bias_variance`: the mse of each method split into squared bias and variance (their
  Fig. 4, per method rather than per run);
- :func:`r_ranges`: per topic, the range and mean of the estimated R over the trials against
  the true R (Voorhees, Fig. 1).

Each writes ``STEM.png`` and ``STEM.svg`` and returns the PNG's path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

PANEL = (4.2, 3.2)  # inches per panel


def _colours(methods: Sequence[str]) -> dict[str, str]:
    palette = [f"C{i}" for i in range(10)]
    return {m: palette[i % len(palette)] for i, m in enumerate(methods)}


def _grid(count: int, columns: int = 3) -> tuple[int, int]:
    columns = max(1, min(columns, count))
    return -(-count // columns), columns


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _save(figure: Figure, stem: Path) -> Path:
    stem.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(stem.with_suffix(".png"), dpi=110)
    figure.savefig(stem.with_suffix(".svg"))
    return stem.with_suffix(".png")


def budget_axis(summary: pd.DataFrame) -> tuple[str, str]:
    """The column the budget is read from (``rate`` or ``budget``) and its axis label."""
    if summary["rate"].notna().any():
        return "rate", "share of each topic's pool judged"
    return "budget", "documents judged per topic"


def rms_tau(summary: pd.DataFrame, stem: Path, rms_column: str = "rms",
            title: str = "") -> Path:
    """rms and tau against the budget (see the module docstring)."""
    column, label = budget_axis(summary)
    measures = list(dict.fromkeys(summary["measure"]))
    methods = list(dict.fromkeys(summary["method"]))
    colour = _colours(methods)
    rows, columns = _grid(len(measures))
    figure = _figure(PANEL[0] * columns, PANEL[1] * rows + 0.6)
    for k, measure in enumerate(measures):
        ax = figure.add_subplot(rows, columns, k + 1)
        twin = ax.twinx()
        for method in methods:
            part = summary[(summary["measure"] == measure) & (summary["method"] == method)]
            part = part.sort_values(column)
            ax.plot(part[column], part[rms_column], "-o", ms=3, color=colour[method],
                    label=method)
            twin.plot(part[column], part["tau"], ":", color=colour[method])
        ax.set_title(measure)
        ax.set_xlabel(label)
        ax.set_ylabel(f"{rms_column} (solid)")
        twin.set_ylabel("Kendall's tau (dotted)")
        twin.set_ylim(min(0.0, float(np.nanmin(summary["tau"], initial=0.0))), 1.0)
        if column == "rate":
            ax.set_xscale("log")
            budgets = sorted(summary[column].dropna().unique())
            ax.set_xticks(budgets, [f"{b:g}" for b in budgets], fontsize="x-small")
            ax.minorticks_off()
    figure.legend(*figure.axes[0].get_legend_handles_labels(), loc="outside lower center",
                  ncols=min(len(methods), 8), fontsize="small")
    if title:
        figure.suptitle(title)
    return _save(figure, stem)


def scatter(means: pd.DataFrame, stem: Path, title: str = "") -> Path:
    """Estimated against true mean scores, one trial per method (rows: one trial's topic
    ``all`` rows of trials.parquet). Left-out runs are drawn in red."""
    measures = list(dict.fromkeys(means["measure"]))
    methods = list(dict.fromkeys(means["method"]))
    figure = _figure(2.6 * len(methods) + 0.5, 2.6 * len(measures) + 0.5)
    for i, measure in enumerate(measures):
        for j, method in enumerate(methods):
            ax = figure.add_subplot(len(measures), len(methods), i * len(methods) + j + 1)
            part = means[(means["measure"] == measure) & (means["method"] == method)]
            inside = part["contributed"].to_numpy(dtype=bool)
            ax.scatter(part["truth"][inside], part["estimate"][inside], s=6, color="C0")
            ax.scatter(part["truth"][~inside], part["estimate"][~inside], s=8, color="C3",
                       label="left out")
            values = np.concatenate([part["truth"], part["estimate"]])
            values = values[np.isfinite(values)]
            if len(values):
                low, high = float(values.min()), float(values.max())
                ax.plot([low, high], [low, high], "k-", lw=0.6)
            if i == 0:
                ax.set_title(method, fontsize="small")
            if j == 0:
                ax.set_ylabel(f"{measure} estimated")
            if i == len(measures) - 1:
                ax.set_xlabel("true")
            ax.tick_params(labelsize="x-small")
    if title:
        figure.suptitle(title)
    return _save(figure, stem)


def bias_variance(summary: pd.DataFrame, stem: Path, title: str = "") -> Path:
    """Each method's mse as squared bias (dark) plus variance (light), one panel per
    measure; the signed bias is written above each bar."""
    measures = list(dict.fromkeys(summary["measure"]))
    rows, columns = _grid(len(measures))
    figure = _figure(PANEL[0] * columns, PANEL[1] * rows + 0.4)
    for k, measure in enumerate(measures):
        ax = figure.add_subplot(rows, columns, k + 1)
        part = summary[summary["measure"] == measure]
        x = np.arange(len(part))
        squared = part["bias_squared"].to_numpy(dtype=np.float64)
        spread = part["variance"].to_numpy(dtype=np.float64)
        ax.bar(x, squared, color="C0", label="bias²")
        ax.bar(x, spread, bottom=squared, color="C1", alpha=0.6, label="variance")
        for xi, top, signed in zip(x, squared + spread, part["bias"], strict=True):
            ax.annotate(f"{signed:+.3f}", (xi, top), ha="center", va="bottom",
                        fontsize="x-small")
        ax.set_xticks(x, part["method"].astype(str), rotation=45, ha="right",
                      fontsize="small")
        ax.set_title(f"{measure}: mse = bias² + variance")
        ax.legend(fontsize="x-small")
    if title:
        figure.suptitle(title)
    return _save(figure, stem)


def r_ranges(topics: pd.DataFrame, stem: Path, title: str = "") -> Path:
    """Per method, each topic's estimated R over the samples (line: min to max; x: mean)
    against the true R (circle), topics ordered by true R. ``topics``: columns ``method,
    topic, num_rel, num_rel_estimate``, one row per (sample, topic)."""
    methods = list(dict.fromkeys(topics["method"]))
    rows, columns = _grid(len(methods))
    figure = _figure(PANEL[0] * columns, PANEL[1] * rows + 0.4)
    for k, method in enumerate(methods):
        ax = figure.add_subplot(rows, columns, k + 1)
        part = topics[topics["method"] == method]
        stats = part.groupby("topic", observed=True).agg(
            true=("num_rel", "first"), low=("num_rel_estimate", "min"),
            high=("num_rel_estimate", "max"), mean=("num_rel_estimate", "mean"))
        stats = stats.sort_values("true")
        x = np.arange(len(stats))
        ax.vlines(x, stats["low"], stats["high"], color="C0", lw=0.8)
        ax.plot(x, stats["mean"], "x", color="C0", ms=4, label="estimated (mean)")
        ax.plot(x, stats["true"], "o", mfc="none", color="C3", ms=4, label="true")
        ax.set_title(method, fontsize="small")
        ax.set_xlabel("topics, by true R")
        ax.set_ylabel("R")
        ax.set_xticks([])
        ax.legend(fontsize="x-small")
    if title:
        figure.suptitle(title)
    return _save(figure, stem)
