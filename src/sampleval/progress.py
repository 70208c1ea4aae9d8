"""Progress bars on standard error for long work (rich), shown only when asked for: the
command line asks when standard error is a terminal, so piped or logged output stays clean."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def steps(total: int, description: str, enabled: bool) -> Iterator[Callable[[str], None]]:
    """A bar of ``total`` steps; the context gives ``step(text)``, called as each step starts
    (the one before it is then done). Nothing is shown unless ``enabled``."""
    if not enabled:
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        started = 0

        def step(text: str) -> None:
            nonlocal started
            bar.update(task, completed=started, description=text)
            started += 1

        yield step
