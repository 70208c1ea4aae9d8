"""Results as people and programs read them: a leaderboard table, TSV, JSON, trec_eval's text."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from sampleval.measures.names import parse_measure
from sampleval.measures.results import MEAN_TOPIC, format_number, is_count

FORMATS = ("table", "tsv", "json", "trec")


ESTIMATE_NUMBERS = ("value", "lo", "hi", "frame_share", "imputed", "coverage")
ESTIMATE_TEXTS = ("estimator",)
"""The text columns of estimates in TSV and JSON: the fully resolved estimator."""
"""The numeric columns of ``estimate``'s results, in the order TSV and JSON give them
(``coverage``: ``frame_share``'s old name, kept for one release)."""


def to_tsv(results: pd.DataFrame, numbers: Sequence[str] = ("value",),
           texts: Sequence[str] = ()) -> str:
    """``run topic measure`` and the ``numbers`` columns (``value``; estimates add ``lo hi
    frame_share imputed coverage``), then the ``texts`` columns as they are (estimates:
    ``estimator``), one row per (run, topic, measure), with a header."""
    header = ["run", "topic", "measure", *numbers, *texts]
    labels = [results[c].astype(str).tolist() for c in ("run", "query_id", "measure")]
    count = {m: is_count(m) for m in set(labels[2])}  # once per measure, not per row
    cells = [[format_number(v, column == "value" and count[m]) for v, m in zip(
        results[column].to_numpy(dtype=np.float64).tolist(), labels[2], strict=True)]
        for column in numbers]
    extra = [results[c].astype(str).tolist() for c in texts]
    lines = ["\t".join(header), *map("\t".join, zip(*labels, *cells, *extra, strict=True))]
    return "\n".join(lines) + "\n"


def _rows(results: pd.DataFrame, numbers: list[str]) -> list[tuple[Any, ...]]:
    """(run, topic, measure, *numbers) tuples of a results frame, as plain Python values."""
    columns: list[list[Any]] = [results[c].astype(str).tolist()
                                for c in ("run", "query_id", "measure")]
    columns += [results[c].astype(float).tolist() for c in numbers]
    return list(zip(*columns, strict=True))


def to_json(results: pd.DataFrame, numbers: Sequence[str] = ("value",),
            texts: Sequence[str] = ()) -> str:
    """``{run: {topic: {measure: value}}}``, as pytrec_eval nests results (topic ``all``:
    the mean); with more ``numbers`` than the value, each cell is ``{"value": v, "lo": l,
    ...}`` (null where a number does not apply), with the ``texts`` columns beside them
    (estimates: ``estimator``)."""
    nested: dict[str, dict[str, dict[str, Any]]] = {}
    extra = [results[c].astype(str).tolist() for c in texts]
    for i, (run, topic, measure, *values) in enumerate(_rows(results, list(numbers))):
        cell: Any = values[0]
        if len(numbers) > 1:
            cell = {k: (None if math.isnan(v) else v) for k, v in zip(numbers, values,
                                                                       strict=True)}
            cell.update({k: column[i] for k, column in zip(texts, extra, strict=True)})
        nested.setdefault(run, {}).setdefault(topic, {})[measure] = cell
    return json.dumps(nested, indent=1) + "\n"


def to_trec(results: pd.DataFrame) -> str:
    """trec_eval's text output: ``measure<TAB>topic<TAB>value``, one block per run, headed
    by its ``runid`` line; values with four decimals, counts as integers. A measure with a
    relevance level or parameters of its own (``P(rel=2)@5``), which trec_eval's names cannot
    say, prints under its library name."""
    lines = []
    for run, rows in results.groupby("run", sort=False):
        lines.append(f"{'runid':<22}\t{MEAN_TOPIC}\t{run}")
        per_topic = rows[rows["query_id"] != MEAN_TOPIC]
        ordered = pd.concat([per_topic, rows[rows["query_id"] == MEAN_TOPIC]])
        for _, topic, name, value in _rows(ordered, ["value"]):
            measure = parse_measure(name)
            text = str(int(value)) if measure.aggregate == "sum" else f"{value:.4f}"
            # trec_eval's name cannot say a level or parameters of the measure's own
            shown = measure.trec_name if measure.rel is None and not measure.params else name
            lines.append(f"{shown:<22}\t{topic}\t{text}")
    return "\n".join(lines) + "\n"


def print_table(results: pd.DataFrame, console: Console, title: str = "Leaderboard") -> None:
    """A readable table: runs ranked by the first measure's mean, four decimals; per-topic
    rows (when present) listed under their run. Estimates show ``± half`` their interval,
    their run's frame share, ``*`` when more than half of the value is imputed and ``!`` on
    a per-topic value outside the measure's range (kept: docs/guide/estimating.md)."""
    from sampleval.estimation.estimates import OUTSIDE_DOC, outside_range
    from sampleval.estimation.imputation import MOSTLY

    measures = list(dict.fromkeys(results["measure"]))

    values = results.pivot_table(index=["run", "query_id"], columns="measure", values="value",
                                 sort=False)[measures]

    def wide(column: str) -> pd.DataFrame:
        """Another column, aligned with ``values`` (NaN kept: no interval, say)."""
        return results.pivot_table(index=["run", "query_id"], columns="measure",
                                   values=column, sort=False, dropna=False,
                                   aggfunc="first").reindex(index=values.index,
                                                            columns=measures)

    half = (wide("hi") - wide("lo")) / 2 if "lo" in results.columns else None
    imputed = wide("imputed") if "imputed" in results.columns else None
    share = wide("frame_share")[measures[0]] if "frame_share" in results.columns else None
    outside = pd.DataFrame({m: outside_range(m, values[m].to_numpy(np.float64))
                            for m in measures}, index=values.index) if share is not None else (
        None)
    ranks = ((wide("rank_lo")[measures[0]], wide("rank_hi")[measures[0]])
             if "rank_lo" in results.columns else None)  # estimate --ranks
    means = values.xs(MEAN_TOPIC, level="query_id")[measures[0]]
    order = means.sort_values(ascending=False, kind="stable").index
    has_topics = (results["query_id"] != MEAN_TOPIC).any()
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("run")
    if has_topics:
        table.add_column("topic")
    if share is not None:
        table.add_column("frame share", justify="right")
    if ranks is not None:
        table.add_column(f"ranks ({measures[0]})", justify="right")
    for m in measures:
        table.add_column(m, justify="right")
    for position, run in enumerate(order, start=1):
        block = values.loc[run]
        topics = [t for t in block.index if t != MEAN_TOPIC] + [MEAN_TOPIC]
        for topic in topics if has_topics else [MEAN_TOPIC]:
            key = (run, topic)
            cells = [_cell(block.loc[topic, m], m,
                           None if half is None else half.loc[key, m],
                           imputed is not None and imputed.loc[key, m] > MOSTLY,
                           outside is not None and bool(outside.loc[key, m]))
                     for m in measures]
            lead = [str(position) if topic == MEAN_TOPIC else "", run]
            lead += [topic] if has_topics else []
            lead += [] if share is None else [f"{share.loc[key]:.0%}"]
            lead += [] if ranks is None else [
                f"{ranks[0].loc[key]:.0f}-{ranks[1].loc[key]:.0f}" if topic == MEAN_TOPIC
                and not math.isnan(ranks[0].loc[key]) else ""]
            table.add_row(*lead, *cells)
    console.print(table)
    if imputed is not None and (imputed.to_numpy() > MOSTLY).any():
        console.print(f"* more than {MOSTLY:.0%} of the value is the estimator's imputation")
    if has_topics and outside is not None and outside.to_numpy().any():
        console.print(f"! outside the measure's range: kept, as the unbiased estimator gives it "
                      f"({OUTSIDE_DOC})")


def _cell(value: float, measure: str, half: float | None = None,
          flagged: bool = False, outside: bool = False) -> str:
    """A value as the table shows it: four decimals (counts as integers), ``± half`` the
    confidence interval's width when there is one, ``*`` when ``flagged`` (mostly
    imputed), ``!`` when ``outside`` the measure's range."""
    mark = ("*" if flagged else "") + ("!" if outside else "")
    if half is not None and not math.isnan(half):
        return f"{value:.4f} ±{half:.4f}{mark}"
    if is_count(measure):
        return str(int(value)) + mark
    return f"{value:.4f}{mark}"


