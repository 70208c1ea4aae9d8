"""Where a judging request's time goes: the durations a ``Server-Timing`` header reports.

A judging endpoint (:mod:`.api`: ``next``, ``judgments``, ``undo``) opens a
:func:`request_timing` in its worker thread; the steps it calls add their durations with
:func:`span` (or :func:`since`), which cost nothing measurable outside such a request
(one context-variable look-up). :meth:`Timings.header` writes them as ``Server-Timing``
metrics, milliseconds (the names are listed in ``docs/guide/campaigns.md``, section
Performance): the endpoint's own wall time (``handler``) and CPU time (``cpu``, its
thread's), and within them ``auth``, ``lock``, ``labels``, ``observe``, ``propose``,
``save``, ``commit`` and ``offer``; the time ready to run without running (waiting for the
interpreter lock or for a CPU) is about ``handler`` less ``cpu`` and the waits named
(``lock``, ``commit``). :func:`parse` reads such a header back (the load benchmark).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar

from starlette.responses import Response

_current: ContextVar[Timings | None] = ContextVar("sampleval_timings", default=None)


class Timings:
    """The named durations (seconds) of one request, in the order first seen."""

    def __init__(self) -> None:
        self.spans: dict[str, float] = {}
        self._wall = time.perf_counter()
        self._cpu = time.thread_time()

    def add(self, name: str, seconds: float) -> None:
        self.spans[name] = self.spans.get(name, 0.0) + seconds

    def finish(self) -> None:
        """Record the handler's wall and CPU time so far (``handler``, ``cpu``)."""
        self.spans["handler"] = time.perf_counter() - self._wall
        self.spans["cpu"] = time.thread_time() - self._cpu

    def header(self) -> str:
        return ", ".join(f"{name};dur={seconds * 1000:.2f}"
                         for name, seconds in self.spans.items())

    def attach(self, response: Response) -> Response:
        """``response`` with the ``Server-Timing`` header of these durations."""
        self.finish()
        response.headers.append("server-timing", self.header())
        return response


@contextmanager
def request_timing() -> Iterator[Timings]:
    """The durations of the request running in this thread, collected while inside."""
    timings = Timings()
    token = _current.set(timings)
    try:
        yield timings
    finally:
        _current.reset(token)


@contextmanager
def span(name: str) -> Iterator[None]:
    """Add the time spent inside to the current request's ``name`` (if any)."""
    begun = time.perf_counter()
    try:
        yield
    finally:
        since(name, begun)


def since(name: str, begun: float) -> None:
    """Add the time from ``begun`` (``time.perf_counter()``) to now to the current
    request's ``name`` (nothing outside a request)."""
    timings = _current.get()
    if timings is not None:
        timings.add(name, time.perf_counter() - begun)


def parse(header: str | None) -> dict[str, float]:
    """The metrics of a ``Server-Timing`` header (several joined by commas, as HTTP joins
    repeated headers): name -> seconds (metrics without a ``dur`` are left out)."""
    out: dict[str, float] = {}
    for metric in (header or "").split(","):
        name, *params = (p.strip() for p in metric.split(";"))
        for param in params:
            key, _, value = param.partition("=")
            if key == "dur" and name:
                with suppress(ValueError):
                    out[name] = out.get(name, 0.0) + float(value) / 1000
    return out
