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

The worker is supervised. When it dies (out of memory, a crash), the stored estimates of
every campaign are marked stale, with the time it stopped (:func:`.organise.mark_stale`:
the organiser page and ``campaign status`` say so), and it is restarted after
:data:`RESTART_DELAYS` (back-off: each failed restart waits longer). Exports never wait for
it: while it is down they run in the server's process. After :data:`GIVE_UP_AFTER` failed
restarts in a row the leaderboard and the target checks also run in the server's process
(slower for the assessors, but a campaign with a target still stops at it), and restarts
go on being tried at the longest delay.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from datetime import datetime
from typing import Any, TypeVar

from sampleval.campaign import models as m
from sampleval.campaign.store import Store

T = TypeVar("T")


RESTART_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
"""Seconds before the first, second, ... restart of a dead worker (the last one repeats)."""
GIVE_UP_AFTER = 3
"""Failed restarts in a row after which the estimates are computed in the server's process."""
WARM_UP_TIMEOUT = 120.0
"""Seconds a restarted worker has to start and load the estimators."""
HEARTBEAT = 1.0
"""Seconds between two checks, while idle, that the worker process is alive."""


class WorkerDown(Exception):
    """The worker process is not running (dead, or not restarted yet)."""


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
        self._started = False
        self.down_since: datetime | None = None
        """When the worker stopped (None: it runs, or was never started)."""
        self.failed_restarts = 0
        self.restarts = 0
        """Successful restarts since the server started."""
        self._next_restart = 0.0
        self._stale_said = False
        self.worker_pid: int | None = None
        """The worker's process id, once it has started."""

    def start(self) -> None:
        self._executor = self._new_worker()
        self._executor.submit(_warm_up).add_done_callback(self._started_worker)
        self._started = True
        self._thread = threading.Thread(target=self._run, name="live-estimates", daemon=True)
        self._thread.start()

    def _new_worker(self) -> Executor:
        """A worker process (not started until its first task)."""
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(1, mp_context=context, initializer=_worker_init,
                                   initargs=(os.getpid(),))

    def _started_worker(self, future: Future[int]) -> None:
        with suppress(Exception):
            self.worker_pid = future.result()

    def _check_worker(self) -> None:
        """Notice a worker that died while idle (no task failed yet)."""
        executor, pid = self._executor, self.worker_pid
        if executor is None or pid is None:
            return
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            self._lost(executor)
        except OSError:
            pass

    def poke(self, campaign_id: int) -> None:
        """New judgments in ``campaign_id``: recompute soon."""
        with self._wake:
            self._dirty.add(campaign_id)
            self._wake.notify()

    def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` in the worker process and return its result; in this
        process when the worker is down (exports never wait for a restart)."""
        try:
            return self._in_worker(function, *args)
        except WorkerDown:
            return function(*args)

    @property
    def in_process(self) -> bool:
        """Whether the leaderboard is computed in this process: the worker could not be
        restarted :data:`GIVE_UP_AFTER` times in a row."""
        return self.failed_restarts >= GIVE_UP_AFTER

    def _in_worker(self, function: Callable[..., T], *args: Any) -> T:
        executor = self._executor
        if executor is None:
            if self._started:
                raise WorkerDown
            return function(*args)  # not started (tests, one-off use): in this process
        try:
            return executor.submit(function, *args).result()
        except BrokenProcessPool:
            self._lost(executor)
            raise WorkerDown from None

    def _lost(self, executor: Executor) -> None:
        """The worker died: schedule its restart, and have the loop mark estimates stale."""
        with self._wake:
            if self._executor is not executor:
                return  # already seen
            self._executor = None
            self.down_since = m.now()
            self.worker_pid = None
            self._stale_said = False
            self._next_restart = time.monotonic() + RESTART_DELAYS[0]
            self._wake.notify()
        executor.shutdown(wait=False, cancel_futures=True)

    def _restart(self) -> None:
        """Try to start a new worker; on failure wait longer before the next try."""
        executor = self._new_worker()
        try:
            pid = executor.submit(_warm_up).result(WARM_UP_TIMEOUT)
        except Exception:  # any failure to start is a failed restart
            executor.shutdown(wait=False, cancel_futures=True)
            self.failed_restarts += 1
            delay = RESTART_DELAYS[min(self.failed_restarts, len(RESTART_DELAYS) - 1)]
            self._next_restart = time.monotonic() + delay
            return
        with self._wake:
            self._executor = executor
            self.worker_pid = pid
            self.down_since = None
            self.failed_restarts = 0
            self.restarts += 1
            self._dirty.update(self._last)  # every campaign's estimates afresh

    def close(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        from sampleval.campaign.organise import mark_stale

        while True:
            self._check_worker()
            with self._wake:
                if self._stopping:
                    return
                down = self._executor is None
            if down and time.monotonic() >= self._next_restart:
                self._restart()
                continue
            if down and not self._stale_said:
                self._stale_said = True
                since = self.down_since.strftime("%H:%M:%S UTC") if self.down_since else "?"
                with self._wake:
                    known = set(self._last) | self._dirty
                for campaign_id in known:
                    with suppress(Exception):  # a failed save: said at the next failure
                        mark_stale(self.store, campaign_id, since)
            with self._wake:
                if self._stopping:
                    return
                if down and not self.in_process:  # wait for the restart
                    self._wake.wait(max(0.0, self._next_restart - time.monotonic()))
                    continue
                if not self._dirty:
                    self._wake.wait(HEARTBEAT if not down else
                                    max(0.0, self._next_restart - time.monotonic()))
                    continue
                campaign_id = min(self._dirty, key=lambda c: self._last.get(c, 0.0))
                delay = self._last.get(campaign_id, 0.0) + self.interval - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                self._dirty.discard(campaign_id)
            self._last[campaign_id] = time.monotonic()
            self._recompute(campaign_id, in_process=down)

    def _recompute(self, campaign_id: int, in_process: bool) -> None:
        """Compute and store one campaign's estimates (and stop it at its target)."""
        from sampleval.campaign.organise import save_estimates

        confidence: dict[str, Any] | None = None
        try:
            if in_process:
                rows, note, count, confidence = compute(self.store.url, campaign_id)
                note = (f"{note}; computed in the server's process: the estimates worker "
                        f"could not be restarted ({self.failed_restarts} tries)")
            else:
                rows, note, count, confidence = self._in_worker(compute, self.store.url,
                                                                campaign_id)
        except WorkerDown:  # the worker died computing: it is restarted, then this again
            with self._wake:
                self._dirty.add(campaign_id)
            return
        except Exception as exc:  # an estimator failing must not stop the campaign
            rows, note, count = [], f"estimates failed: {type(exc).__name__}: {exc}", -1
        stopped = None
        with suppress(Exception):  # a failed save: the next judgment brings another try
            stopped = save_estimates(self.store, campaign_id, rows, note, count, confidence)
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


def _warm_up() -> int:
    """Load the compiled kernels once; the worker's process id."""
    import sampleval.estimation.estimates  # noqa: F401

    return os.getpid()


def _store(url: str) -> Store:
    if url not in _STORES:
        _STORES[url] = Store(url, migrate=False)
    return _STORES[url]


def compute(url: str, campaign_id: int
            ) -> tuple[list[dict[str, Any]], str, int, dict[str, Any] | None]:
    """The campaign's leaderboard now: rows, note, the judgments it reflects, and the
    target's status (None without a target; :mod:`.target`)."""
    from sampleval.campaign.organise import (
        CampaignInfo,
        build_pool,
        confidence_now,
        judgment_count,
        leaderboard,
        load_runs,
        waiting,
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
        waits = waiting(session, info, sample)
    rows, note = leaderboard(sample, runs, waits)
    return rows, note, count, confidence


def export_archive(url: str, campaign: str, rule: str) -> tuple[bytes, int]:
    """The campaign's export (the API's ``label`` ``rule``) as a zip of the sample
    directory, and how many documents fell back to ``latest``."""
    import io
    import tempfile
    import zipfile
    from pathlib import Path

    from sampleval.campaign.organise import export_sample

    sample, fallback = export_sample(_store(url), campaign, rule,
                                     option="the label parameter")
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp:
        folder = sample.save(Path(tmp) / campaign)
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.iterdir()):
                archive.write(path, f"{campaign}/{path.name}")
    return buffer.getvalue(), fallback
