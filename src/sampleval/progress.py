"""Progress bars on standard error for long work (rich), shown only when asked for: the
command line asks when standard error is a terminal, so piped or logged output stays clean.
The one implementation every command uses: :class:`Bar` for counted work (with its rate and
the time left when asked), :func:`steps` for a few named steps, :func:`track` for an
iterable."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


class Bar:
    """A bar of ``total`` units on standard error, or nothing unless ``enabled``.

    ``unit`` names what is counted (shown as ``done/total unit``); ``timing`` adds the rate
    (units per second), the time spent and the time left; ``transient`` removes the bar when
    done. Use as a context manager; :meth:`advance` counts and may change the description.
    """

    def __init__(self, total: int, description: str, enabled: bool, *, unit: str = "",
                 timing: bool = False, transient: bool = True) -> None:
        self.total, self.description, self.enabled = total, description, enabled
        self.unit, self.timing, self.transient = unit, timing, transient
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Bar:
        if not self.enabled:
            return self
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns: list[ProgressColumn | str] = [TextColumn("{task.description}"), BarColumn()]
        if self.unit:
            columns += [MofNCompleteColumn(), TextColumn(self.unit)]
        else:
            columns.append(TaskProgressColumn())
        if self.timing:
            columns += [TextColumn("{task.fields[speed]}"), TimeElapsedColumn(),
                        TextColumn("left"), TimeRemainingColumn()]
        self._progress = Progress(*columns, console=Console(stderr=True),
                                  transient=self.transient)
        self._progress.__enter__()
        self._task = self._progress.add_task(self.description, total=self.total, speed="")
        return self

    def advance(self, units: float = 1, description: str | None = None) -> None:
        """Count ``units`` more done (and show ``description`` from now on)."""
        if self._progress is None:
            return
        self._progress.advance(self._task, units)
        fields: dict[str, Any] = {}
        if self.timing:
            task = self._progress.tasks[0]
            speed = task.speed
            fields["speed"] = "" if speed is None else f"{speed:.2f} {self.unit or 'steps'}/s"
        if description is not None:
            fields["description"] = description
        self._progress.update(self._task, **fields)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None


@contextmanager
def steps(total: int, description: str, enabled: bool) -> Iterator[Callable[[str], None]]:
    """A bar of ``total`` steps; the context gives ``step(text)``, called as each step starts
    (the one before it is then done). Nothing is shown unless ``enabled``."""
    with Bar(total, description, enabled) as bar:
        started = 0

        def step(text: str) -> None:
            nonlocal started
            bar.advance(1 if started else 0, description=text)
            started += 1

        yield step


def track(items: Iterable[T], total: int, description: str, enabled: bool) -> Iterator[T]:
    """``items`` as they come, counted on a bar of ``total`` (nothing shown unless
    ``enabled``)."""
    with Bar(total, description, enabled) as bar:
        for item in items:
            yield item
            bar.advance()
