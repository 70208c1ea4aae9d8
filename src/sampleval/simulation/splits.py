"""Which runs take part in the selection: the splits of a reusability experiment.

Every run is evaluated in every split; only the contributing ones pool documents for the
selection methods (``--leave-out``):

- ``none``: one split, every run contributes;
- ``group``: one split per group of runs, each leaving that group out (Li & Kanoulas, CIKM
  2017, sec. 5.3: a group's runs differ little, so leaving them all out makes them novel);
  groups come from the ``team`` column of a CSV (``--groups``), else from the run tag's
  leading letters (``UPrrf93-wt-r5`` -> ``UPrrf``);
- ``contributed``: one split, the runs whose ``contributed judgments`` column in the CSV says
  yes (TREC's own judged and unjudged runs);
- ``half``: ``splits`` random halves of the runs, the same for every method (Voorhees, SIGIR
  2014: 50 halves).

The CSV names runs in a column ``run`` or ``tag`` (``leaderboard.csv`` has ``tag``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sampleval.errors import InputError, UsageError
from sampleval.simulation.seeds import split_rng

LEAVE_OUT = ("none", "group", "contributed", "half")
RUN_COLUMNS = ("run", "tag", "runid", "run_id")
TEAM_COLUMNS = ("team", "group")
CONTRIBUTED_COLUMNS = ("contributed judgments", "contributed")
_YES = {"yes", "y", "true", "1"}
_NO = {"no", "n", "false", "0"}


@dataclass(frozen=True)
class Split:
    """Split ``index``: ``contributing[k]`` says whether run k selects; ``left_out`` names
    what is left out (a group, or nothing)."""

    index: int
    contributing: tuple[bool, ...]
    left_out: str = ""

    def mask(self) -> np.ndarray:
        return np.array(self.contributing, dtype=bool)


def make_splits(run_names: Sequence[str], mode: str, groups: str | Path | None = None,
                n_splits: int = 50, seed: int = 0) -> list[Split]:
    """The splits of ``mode`` (see the module docstring) for runs ``run_names``."""
    n = len(run_names)
    if mode == "none":
        return [Split(0, (True,) * n)]
    if mode == "group":
        teams = (read_column(groups, run_names, TEAM_COLUMNS) if groups is not None
                 else {r: tag_prefix(r) for r in run_names})
        names = sorted(set(teams.values()))
        if len(names) < 2:
            raise UsageError(f"leaving one group out needs at least two groups; the runs form "
                             f"one ({names[0] if names else 'none'})")
        return [Split(i, tuple(teams[r] != g for r in run_names), g)
                for i, g in enumerate(names)]
    if mode == "contributed":
        if groups is None:
            raise UsageError("--leave-out contributed needs --groups CSV with a 'contributed "
                             "judgments' column")
        flags = read_column(groups, run_names, CONTRIBUTED_COLUMNS)
        contributing = tuple(_yes_no(flags[r], groups, r) for r in run_names)
        if not any(contributing):
            raise UsageError(f"{groups}: no run contributed judgments")
        return [Split(0, contributing, "non-contributing runs")]
    if mode == "half":
        if n < 2:
            raise UsageError("splitting the runs in half needs at least two runs")
        splits = []
        for i in range(n_splits):
            chosen = split_rng(seed, mode, i).permutation(n)[: n // 2]
            mask = np.zeros(n, dtype=bool)
            mask[chosen] = True
            splits.append(Split(i, tuple(bool(m) for m in mask), f"half {i}"))
        return splits
    raise UsageError(f"--leave-out must be one of {', '.join(LEAVE_OUT)}, not {mode!r}")


def tag_prefix(run: str) -> str:
    """A run's group when no CSV names it: the tag's leading letters (the whole tag when it
    starts otherwise)."""
    match = re.match(r"[A-Za-z]+", run)
    return match.group(0) if match else run


def read_column(path: str | Path, run_names: Sequence[str],
                columns: Sequence[str]) -> dict[str, str]:
    """Each run's value in the first of ``columns`` that the CSV at ``path`` has (InputError
    naming the file when it lacks the columns, repeats a run or misses one of ours)."""
    import pandas as pd

    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise InputError(path, None, f"cannot read the CSV: {exc}") from None
    run_column = _column(table, RUN_COLUMNS, path)
    value_column = _column(table, columns, path)
    repeated = table[run_column][table[run_column].duplicated()]
    if len(repeated):
        line = int(repeated.index[0]) + 2  # the header is line 1
        raise InputError(path, line, f"run {repeated.iloc[0]!r} is listed twice")
    values = dict(zip(table[run_column].str.strip(), table[value_column].str.strip(),
                      strict=True))
    missing = [r for r in run_names if r not in values]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InputError(path, None, f"{len(missing)} run(s) not listed in column "
                                     f"{run_column!r}: {shown}")
    return {r: values[r] for r in run_names}


def _column(table: object, names: Sequence[str], path: str | Path) -> str:
    columns = [str(c) for c in getattr(table, "columns", [])]
    lowered = {c.strip().lower(): c for c in columns}
    for name in names:
        if name in lowered:
            return lowered[name]
    raise InputError(path, 1, f"no column {' or '.join(repr(n) for n in names)} (columns: "
                              f"{', '.join(columns)})")


def _yes_no(value: str, path: str | Path, run: str) -> bool:
    text = value.strip().lower()
    if text in _YES | _NO:
        return text in _YES
    raise InputError(path, None, f"run {run}: contributed must be yes or no, not {value!r}")
