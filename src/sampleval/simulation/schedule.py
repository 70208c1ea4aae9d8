"""Which trials run next: every cell's missing trials, cut into tasks on demand and handed
out longest first, so that the workers finish together.

Cells cost very different amounts (on TREC-COVID round 5 at 10%, a stratified trial takes
1.3 s, a depth-k one 0.2 s): giving each cell's trials to one worker leaves the others idle
while the last expensive cell finishes (1.38x from one worker to two). The backends ask for
a task whenever a worker has fewer than two waiting, and the :class:`Schedule` answers with

- the cell whose trials are estimated to take longest (longest processing time first). A
  cell's cost per trial is the mean time of its finished trials; a cell with none finished
  yet is tried first, one trial at a time, so its cost is soon known (before any trial
  finished, larger budgets go first);
- as many of that cell's next consecutive missing trials as fit in a quarter of one
  worker's share of the estimated work left (guided self-scheduling, Polychronopoulos &
  Kuck 1987), at least one and at most :data:`TASK_TRIALS`: long tasks at first (few
  files, little overhead), single trials at the end.

Only where and when a trial runs depends on this, never its result (each trial draws from
its own seed, :mod:`.seeds`), so the output is the same whatever the number of workers, the
backend or the timings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sampleval.simulation.trial import Task

if TYPE_CHECKING:
    from sampleval.simulation.grid import Cell, Grid
    from sampleval.simulation.trial import CellResult

TASK_TRIALS = 10
"""Trials per task at most: what a worker computes, and a part holds, at a time (a Ctrl-C
loses at most this much per worker)."""

SHARE = 4
"""A task takes at most 1/SHARE of one worker's share of the estimated work left."""


class Schedule:
    """The trials still to run, by cell (see the module docstring); ``workers``: how many
    run at once."""

    def __init__(self, missing: dict[Cell, list[int]], grid: Grid, workers: int) -> None:
        self.missing = {cell: sorted(trials) for cell, trials in missing.items() if trials}
        self.workers = max(1, workers)
        self.total = sum(len(t) for t in self.missing.values())
        self._seconds: dict[Cell, tuple[float, int]] = {}
        self._running: dict[Cell, int] = {}
        size = {b: i for i, b in enumerate(sorted(grid.budgets, key=lambda b: (
            b.rate or 0, b.count or 0)))}
        order = {cell: i for i, cell in enumerate(grid.cells())}
        self._first = {cell: (-size[cell.budget], order[cell]) for cell in self.missing}

    def __bool__(self) -> bool:
        return bool(self.missing)

    def cost(self, cell: Cell) -> float | None:
        """Seconds per trial of ``cell``: the mean of its finished trials (None before)."""
        seconds, trials = self._seconds.get(cell, (0.0, 0))
        return seconds / trials if trials else None

    def next(self) -> Task | None:
        """The next task (None when every trial has been handed out)."""
        if not self.missing:
            return None
        known = {cell: c for cell in self.missing if (c := self.cost(cell)) is not None}
        probes = [cell for cell in self.missing if cell not in known
                  and not self._running.get(cell)]
        if probes:  # unknown cost: one trial, to learn it
            cell = min(probes, key=lambda c: self._first[c])
            size = 1
        elif known:
            cell = max(known, key=lambda c: (known[c], -self._first[c][1]))
            left = sum(len(self.missing[c]) * cost for c, cost in known.items())
            fits = left / (SHARE * self.workers) / max(known[cell], 1e-9)
            size = max(1, min(TASK_TRIALS, math.floor(fits)))
        else:  # every cell left is being probed: more single trials of the first one
            cell = min(self.missing, key=lambda c: self._first[c])
            size = 1
        trials = _leading_stretch(self.missing[cell], size)
        rest = self.missing[cell][len(trials):]
        if rest:
            self.missing[cell] = rest
        else:
            del self.missing[cell]
        self._running[cell] = self._running.get(cell, 0) + 1
        return Task(cell, tuple(trials))

    def finished(self, result: CellResult) -> None:
        """Learn the cost of ``result``'s cell from its trials' times."""
        cell = result.task.cell
        self._running[cell] -= 1
        seconds, trials = self._seconds.get(cell, (0.0, 0))
        per_trial = result.stats.drop_duplicates("trial")["seconds"]
        self._seconds[cell] = (seconds + float(per_trial.sum()), trials + len(per_trial))

    def tasks(self) -> Iterable[Task]:
        """Every task in turn, for a caller that runs them one after another."""
        while (task := self.next()) is not None:
            yield task


def _leading_stretch(trials: Sequence[int], size: int) -> list[int]:
    """The first ``size`` trials at most, consecutive (a part holds a range of trials)."""
    out = [trials[0]]
    for trial in trials[1:size]:
        if trial != out[-1] + 1:
            break
        out.append(trial)
    return out
