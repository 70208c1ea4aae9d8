"""The simulation's schedule: every missing trial handed out once, in consecutive stretches;
cells of unknown cost tried first (larger budgets first), then the costliest cell first, with
tasks shrinking to single trials at the end."""

from __future__ import annotations

import pandas as pd

from sampleval.simulation.grid import BudgetSpec, Grid, parse_method
from sampleval.simulation.schedule import TASK_TRIALS, Schedule
from sampleval.simulation.trial import CellResult, Task

COST = {"stratified": 6.0, "depth-k": 1.0}
"""Seconds per trial of each method in this made-up grid."""


def _result(task: Task) -> CellResult:
    seconds = COST[task.cell.method.name] * (task.cell.budget.rate or 0) * 10
    stats = pd.DataFrame({"trial": list(task.trials) * 2,  # two targets per trial
                          "seconds": [seconds] * (2 * len(task.trials))})
    return CellResult(task, pd.DataFrame(), stats, pd.DataFrame())


def _grid(trials: int) -> Grid:
    return Grid((parse_method("depth-k"), parse_method("stratified")),
                (BudgetSpec(rate=0.05), BudgetSpec(rate=0.1)), trials)


def test_every_missing_trial_once_costliest_first_shrinking_at_the_end() -> None:
    grid = _grid(30)
    done = {0, 1, 2, 20}  # trials a part already holds, in every cell
    missing = {cell: [t for t in range(30) if t not in done] for cell in grid.cells()}
    schedule = Schedule(missing, grid, workers=2)
    assert schedule.total == 4 * 26
    handed: list[Task] = []
    while (task := schedule.next()) is not None:
        handed.append(task)
        schedule.finished(_result(task))
    # probes: one trial of each cell, the larger budget first
    assert [(t.cell.budget.rate, len(t.trials)) for t in handed[:4]] == [
        (0.1, 1), (0.1, 1), (0.05, 1), (0.05, 1)]
    # then the costliest cell (stratified at 10%) in the largest tasks
    assert handed[4].cell.method.name == "stratified" and handed[4].cell.budget.rate == 0.1
    # its share: 25 trials left x (6 + 3 + 1 + 0.5) s / (4 x 2 workers) / 6 s = 5 trials
    assert handed[4].trials == (4, 5, 6, 7, 8)
    assert max(len(t.trials) for t in handed) <= TASK_TRIALS
    assert [len(t.trials) for t in handed[-3:]] == [1, 1, 1]
    assert handed[-1].cell.method.name == "depth-k"  # the cheapest last
    for cell, trials in missing.items():
        got = sorted(t for task in handed if task.cell == cell for t in task.trials)
        assert got == trials
    for task in handed:
        assert list(task.trials) == list(range(task.trials[0], task.trials[-1] + 1))
        assert not set(task.trials) & done


def test_cells_being_probed_get_more_single_trials() -> None:
    grid = _grid(3)
    schedule = Schedule({cell: [0, 1, 2] for cell in grid.cells()}, grid, workers=8)
    handed = [schedule.next() for _ in range(12)]  # nothing finished yet
    assert all(t is not None and len(t.trials) == 1 for t in handed)
    assert schedule.next() is None and not schedule
