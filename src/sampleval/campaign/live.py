"""Live estimates: the leaderboard recomputed in the background while a campaign runs.

Each stored judgment marks its campaign dirty; one thread of the server recomputes dirty
campaigns at most once per ``interval`` seconds each (so per batch or more often, whatever
the method's batch size). The computation, which reads the runs, restores the selector and
runs the estimators, happens in a separate worker process: the server's process only waits
for the answer on that thread and stores it, so assessors' requests never wait for
estimators, nor compete with them for the interpreter. Exports also run in the worker.

The worker reads the store itself (its own connections); it keeps each campaign's runs
and pool between computations, and exits when the server's process is gone. It runs at a
lower CPU priority (nice 10), so that on a busy machine the assessors' requests get a CPU
before the leaderboard does.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import suppress
from typing import Any, TypeVar

from sampleval.campaign.store import Store

T = TypeVar("T")


class LiveEstimates:
    """The background recomputation (see the module docstring)."""

    def __init__(self, store: Store, interval: float = 2.0,
                 on_stop: Callable[[int, str], None] | None = None) -> None:
        self.store = store
        self.interval = interval
        self.on_stop = on_stop or (lambda _campaign, _why: None)
        """Told when a campaign's target is met (it stops handing out documents)."""
        self._dirty: set[int] = set()
        self._last: dict[int, float] = {}
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._executor: Executor | None = None

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._executor = ProcessPoolExecutor(1, mp_context=context, initializer=_worker_init,
                                             initargs=(os.getpid(),))
        self._executor.submit(_warm_up)
        self._thread = threading.Thread(target=self._run, name="live-estimates", daemon=True)
        self._thread.start()

    def poke(self, campaign_id: int) -> None:
        """New judgments in ``campaign_id``: recompute soon."""
        with self._wake:
            self._dirty.add(campaign_id)
            self._wake.notify()

    def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` in the worker process and return its result."""
        if self._executor is None:
            return function(*args)
        return self._executor.submit(function, *args).result()

    def close(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        from sampleval.campaign.organise import save_estimates

        while True:
            with self._wake:
                while not self._dirty and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                campaign_id = min(self._dirty, key=lambda c: self._last.get(c, 0.0))
                delay = self._last.get(campaign_id, 0.0) + self.interval - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                self._dirty.discard(campaign_id)
            self._last[campaign_id] = time.monotonic()
            confidence: dict[str, Any] | None = None
            try:
                rows, note, count, confidence = self.run(compute, self.store.url, campaign_id)
            except Exception as exc:  # an estimator failing must not stop the campaign
                rows, note, count = [], f"estimates failed: {type(exc).__name__}: {exc}", -1
            stopped = None
            with suppress(Exception):  # a failed save: the next judgment brings another try
                stopped = save_estimates(self.store, campaign_id, rows, note, count,
                                         confidence)
            if stopped is not None:
                self.on_stop(campaign_id, stopped)


# -- in the worker process ----------------------------------------------------------------------

_STORES: dict[str, Store] = {}
_POOLS: dict[tuple[str, int], Any] = {}


def _worker_init(parent: int) -> None:
    """Yield the CPU to the server (nice 10); exit when the server's process is gone (a
    killed server leaves no worker behind)."""
    with suppress(OSError, AttributeError):
        os.nice(10)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _warm_up() -> None:
    import sampleval.estimators  # noqa: F401 - loads the compiled kernels once


def _store(url: str) -> Store:
    if url not in _STORES:
        _STORES[url] = Store(url, migrate=False)
    return _STORES[url]


def compute(url: str, campaign_id: int
            ) -> tuple[list[dict[str, Any]], str, int, dict[str, Any] | None]:
    """The campaign's leaderboard now: rows, note, the judgments it reflects, and the
    target's status (None without a target; :mod:`.target`)."""
    from sampleval.campaign import models as m
    from sampleval.campaign.organise import (
        CampaignInfo,
        build_pool,
        confidence_now,
        judgment_count,
        leaderboard,
        load_runs,
    )

    store = _store(url)
    with store.read() as session:
        row = session.get(m.Campaign, campaign_id)
        if row is None:
            return [], "no such campaign", 0, None
        info = CampaignInfo.of(row)
        key = (url, campaign_id)
        if key not in _POOLS:
            runs = load_runs(session, campaign_id)
            _POOLS[key] = (runs, build_pool(info, runs))
        runs, pool = _POOLS[key]
        count = judgment_count(session, campaign_id)
        sample, confidence = confidence_now(session, info, pool)
    rows, note = leaderboard(sample, runs)
    return rows, note, count, confidence


def export_archive(url: str, campaign: str, rule: str) -> tuple[bytes, int]:
    """The campaign's export (``--label`` ``rule``) as a zip of the sample directory, and
    how many documents fell back to ``latest``."""
    import io
    import tempfile
    import zipfile
    from pathlib import Path

    from sampleval.campaign.organise import export_sample

    sample, fallback = export_sample(_store(url), campaign, rule)
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp:
        folder = sample.save(Path(tmp) / campaign)
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.iterdir()):
                archive.write(path, f"{campaign}/{path.name}")
    return buffer.getvalue(), fallback
