"""``sampleval report``: the figures and a one-page HTML report, drawn from a simulation's
files alone (summary.csv, trials.parquet, experiment.json), so they can be redrawn at any
budget without running a trial.

Figures go to ``OUTDIR/figures/`` (PNG and SVG); ``OUTDIR/report.html`` holds the settings,
the summary at the chosen budget, every figure (embedded, so the page is one file that opens
in any browser) and the whole summary.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sampleval.errors import UsageError
from sampleval.estimation.engine.views import MEAN_TOPIC
from sampleval.simulation import figures
from sampleval.simulation.store import TRIALS, Store
from sampleval.simulation.summary import unreachable_notes

SUMMARY = "summary.csv"
REPORT = "report.html"
DEFAULT_RATE = 0.1
SHOWN = ["method", "measure", "estimator", "rms", "bias", "variance", "tau", "tau_ap",
         "sig_accuracy", "r_corr", "coverage", "judged", "seconds_per_trial", "unreachable",
         "reaching_budget"]
LEFT_OUT = ["rms_contributed", "rms_left_out", "bias_left_out", "variance_left_out"]


def render(directory: str | Path, rate: float | None = None,
           budget: int | None = None) -> Path:
    """Draw the figures and write report.html for the simulation in ``directory`` at the
    budget ``rate`` (or ``budget`` documents; default: 10% when the grid has it, else its
    middle budget); returns the report's path."""
    store = Store(directory)
    manifest = store.manifest()
    path = store.directory / SUMMARY
    if not path.exists():
        raise UsageError(f"{path} is missing: run 'sampleval simulate' into "
                         f"{store.directory} first")
    summary = pd.read_csv(path)
    column, _ = figures.budget_axis(summary)
    chosen = _chosen(summary, column, rate if column == "rate" else budget)
    here = summary[np.isclose(summary[column], chosen)]
    label = f"{chosen:g}" if column == "rate" else f"{int(chosen)} documents"
    out = store.directory / "figures"
    drawn = [figures.rms_tau(summary, out / "rms_tau", title="rms and Kendall's tau, all "
                                                             "runs")]
    if "rms_left_out" in summary:
        drawn.append(figures.rms_tau(summary, out / "rms_tau_left_out", "rms_left_out",
                                     "rms of the left-out runs, tau of all runs"))
    drawn.append(figures.bias_variance(here, out / "bias_variance",
                                       f"bias and variance at {column} {label}"))
    means = store.read_means(filters=[(column, "==", chosen)])
    first = means[(means["trial"] == means["trial"].min()) & (means["split"] == 0)]
    drawn.append(figures.scatter(first, out / "scatter",
                                 f"estimated vs true, trial {int(first['trial'].min())} "
                                 f"at {column} {label}"))
    topics = _r_rows(store.directory / TRIALS, column, chosen, str(summary["measure"][0]))
    if topics is not None:
        drawn.append(figures.r_ranges(topics, out / "r_ranges",
                                      f"estimated R per topic at {column} {label} "
                                      f"(estimators of {summary['measure'][0]})"))
    report = store.directory / REPORT
    report.write_text(_page(manifest, summary, here, label, column, drawn))
    return report


def _chosen(summary: pd.DataFrame, column: str, wanted: float | None) -> float:
    values = sorted(set(summary[column].dropna().astype(float)))
    if wanted is not None:
        near = [v for v in values if np.isclose(v, wanted)]
        if not near:
            raise UsageError(f"the simulation has no {column} {wanted:g} (it has "
                             f"{', '.join(f'{v:g}' for v in values)})")
        return near[0]  # the stored value, so the parquet filters match it exactly
    near = [v for v in values if column == "rate" and np.isclose(v, DEFAULT_RATE)]
    return near[0] if near else values[len(values) // 2]


def _r_rows(path: Path, column: str, chosen: float, measure: str) -> pd.DataFrame | None:
    """One row per (sample, topic) of the estimated and true R beside ``measure``'s
    estimates at the chosen budget (None without per-topic rows or R estimates)."""
    rows = pd.read_parquet(path, columns=["method", column, "measure", "trial", "split",
                                          "topic", "num_rel", "num_rel_estimate"],
                           filters=[(column, "==", chosen), ("topic", "!=", MEAN_TOPIC),
                                    ("measure", "==", measure)])  # a budget's row groups only
    rows = rows.drop_duplicates(["method", "trial", "split", "topic"])
    rows = rows[rows["num_rel_estimate"].notna()]
    return rows if len(rows) else None


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4f}",
                         border=0, classes="summary")


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(path.stem)}">'
            f"<figcaption>{html.escape(path.name)} (SVG beside it)</figcaption></figure>")


def _page(manifest: dict[str, Any], summary: pd.DataFrame, here: pd.DataFrame, label: str,
          column: str, drawn: list[Path]) -> str:
    inputs, grid, about = (manifest.get(k, {}) for k in ("inputs", "grid", "about"))
    settings = {
        "runs": about.get("runs", ""), "topics": about.get("topics", ""),
        "depth": inputs.get("depth"), "measures": ", ".join(inputs.get("measures", [])),
        "methods": ", ".join(grid.get("methods", [])),
        "budgets": ", ".join(grid.get("budgets", [])), "trials": grid.get("trials"),
        "leave out": inputs.get("leave_out"), "splits": grid.get("splits"),
        "seed": inputs.get("seed"),
    }
    shown = [c for c in SHOWN + LEFT_OUT if c in here]
    notes = unreachable_notes(here) if "unreachable" in here else []
    unreachable = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in settings.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sampleval simulation</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
th, td {{ padding: 2px 8px; text-align: right; border-bottom: 1px solid #ddd; }}
th {{ background: #f4f4f4; }}
img {{ max-width: 100%; }}
figure {{ margin: 1.5em 0; }}
</style></head><body>
<h1>Simulation report</h1>
<table>{rows}</table>
<h2>Summary at {html.escape(column)} {html.escape(label)}</h2>
<p>rms: mean over samples of each sample's root mean squared error over runs (Li &amp;
Kanoulas, sec. 4.2); bias: mean signed error; variance: mean over runs of the variance over
samples (mse = bias² + variance); tau: Kendall's tau-b; tau_ap: Yilmaz et al.'s AP
correlation; sig_accuracy: Voorhees' accuracy of significantly different pairs (paired
t-test, 0.05); r_corr: Pearson's correlation of estimated and true R per topic; coverage:
share of the mean's 95% intervals that contain the truth; unreachable: share of the pooled
documents with inclusion probability 0 (counted as not relevant), reaching_budget: the
per-topic budget that reaches every stratum.</p>
{f"<p>Designs that leave part of the pool unreachable:</p><ul>{unreachable}</ul>" if notes
 else ""}
{_table(here[shown])}
<h2>Figures</h2>
{"".join(_image(p) for p in drawn)}
<details><summary>The whole summary</summary>{_table(summary)}</details>
</body></html>
"""
