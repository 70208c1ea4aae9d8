"""Where a simulation's tasks run: this process, local worker processes, or a Dask cluster.

Every backend takes the :class:`~.trial.Setup` once and sends it once to each worker (the
process pool's initializer; Dask's ``scatter(broadcast=True)``), then asks the
:class:`~.schedule.Schedule` for tasks, keeping two per worker submitted (one running, one
waiting, so no worker waits for this process), and yields each task's
:class:`~.trial.CellResult` as it finishes, in whatever order, after telling the schedule.
Results do not depend on the backend or the number of workers: each trial draws from its
own seed (:mod:`.seeds`). Closing the generator (Ctrl-C in the caller) stops the workers at
once.

Local workers are started with ``spawn`` (a fresh interpreter that unpickles the Setup, as a
Dask worker does), not ``fork``, which is unsafe once Arrow's and numba's threads run.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sampleval.errors import UsageError
from sampleval.simulation.schedule import Schedule
from sampleval.simulation.trial import CellResult, Setup, Task, Worker

BACKENDS = ("local", "dask")

_WORKER: Worker | None = None
"""This process' Worker (in a worker process, or a Dask worker)."""

AHEAD = 2
"""Tasks submitted per worker at a time."""


def check_backend(backend: str, scheduler: str | None) -> None:
    """UsageError for an unknown backend, or a scheduler without Dask."""
    if backend not in BACKENDS:
        raise UsageError(f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if scheduler is not None and backend != "dask":
        raise UsageError("--scheduler is for --backend dask")


def run_tasks(setup: Setup, schedule: Schedule, *, backend: str = "local", jobs: int = 1,
              scheduler: str | None = None) -> Iterator[CellResult]:
    """Each task's result as it finishes (see the module docstring)."""
    check_backend(backend, scheduler)
    if backend == "local":
        return _local(setup, schedule, jobs)
    return _dask(setup, schedule, jobs, scheduler)


def _local(setup: Setup, schedule: Schedule, jobs: int) -> Iterator[CellResult]:
    if jobs <= 1 or schedule.total <= 1:
        worker = Worker(setup)
        for task in schedule.tasks():
            result = worker.run(task)
            schedule.finished(result)
            yield result
        return
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    workers = schedule.workers = min(jobs, schedule.total)
    executor = ProcessPoolExecutor(max_workers=workers,
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(setup,))
    try:
        pending: set[Future[CellResult]] = set()

        def submit() -> None:
            while len(pending) < AHEAD * workers and (task := schedule.next()) is not None:
                pending.add(executor.submit(_run, task))

        with _sigint_held():  # the workers start here
            submit()
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                result = future.result()
                schedule.finished(result)
                submit()
                yield result
    except BrokenProcessPool:
        raise UsageError("the worker processes stopped before finishing (out of memory? "
                         "When calling simulate() with jobs > 1 from a script, guard its "
                         "top level with: if __name__ == '__main__')") from None
    finally:
        _stop(executor)


def _stop(executor: object) -> None:
    """Shut a process pool down now: cancel what has not started and end the workers
    (``terminate_workers`` from Python 3.14; before, the pool's own process table, read
    before ``shutdown``, which forgets it: ending no worker, the interpreter's exit waited
    for the running tasks to finish)."""
    terminate = getattr(executor, "terminate_workers", None)
    if terminate is not None:
        terminate()  # shuts the pool down (cancelling what has not started), then ends them
        return
    processes = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    executor.shutdown(wait=False, cancel_futures=True)  # type: ignore[attr-defined]
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
    if manager is None:
        return
    # a worker ended while sending its result leaves the manager thread reading a message
    # that never ends, and the interpreter's exit waits for that thread for ever: with every
    # worker gone, this process holds the pipe's last writing end, whose closing ends the read
    if writer is not None:
        writer.close()
    manager.join(10.0)  # it closes its pipe as it sees them gone: before the exit's handler
    # writes to that pipe (else "Bad file descriptor")


@contextmanager
def _sigint_held() -> Iterator[None]:
    """SIGINT blocked in this thread meanwhile: one that comes is delivered at the end, not
    lost, and processes started meanwhile begin with it blocked (a signal mask is inherited
    across fork and exec) until :func:`_start_worker` ignores it. So a Ctrl-C in a terminal,
    which reaches the whole process group, finds a worker still starting (unpickling the
    Setup) deaf to it, not raising KeyboardInterrupt with a traceback; the main process acts
    on it once the workers have started, and stops them itself."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _start_worker(setup: Setup) -> None:
    """Process-pool initializer: keep the Setup; leave Ctrl-C to the main process, which
    stops the workers itself."""
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked until now (_sigint_held)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _exit_with_parent()
    _WORKER = Worker(setup)


def _exit_with_parent() -> None:
    """End this worker process as soon as the main process is gone, however it went (a
    worker the main process was still starting when Ctrl-C stopped it is not one it can
    stop: without this it would wait for tasks forever, holding the terminal)."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="sampleval-parent", daemon=True).start()


def _run(task: Task) -> CellResult:
    assert _WORKER is not None, "the worker was not initialised"
    return _WORKER.run(task)


def _run_with(setup: Setup, task: Task) -> CellResult:
    """A Dask task: the worker's Worker for this Setup (made at its first task)."""
    global _WORKER
    if _WORKER is None or _WORKER.setup is not setup:
        _WORKER = Worker(setup)
    return _WORKER.run(task)


def _dask(setup: Setup, schedule: Schedule, jobs: int,
          scheduler: str | None) -> Iterator[CellResult]:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UsageError("--backend dask needs Dask: in the repository's clone, "
                         ".venv/bin/pip install -e '.[dask]'") from None
    import logging

    cluster = None
    if scheduler is None:
        with _sigint_held():  # its processes start with Ctrl-C blocked: cluster.close() ends them
            cluster = LocalCluster(n_workers=max(jobs, 1), threads_per_worker=1,
                                   processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=30)
        except OSError as exc:
            raise UsageError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    futures: set[object] = set()
    try:
        shared = client.scatter(setup, broadcast=True)
        if cluster is not None:
            client.wait_for_workers(max(jobs, 1))
        workers = schedule.workers = max(1, len(client.scheduler_info().get("workers", {})))
        running = as_completed()

        def submit() -> None:
            while len(futures) < AHEAD * workers and (task := schedule.next()) is not None:
                future = client.submit(_run_with, shared, task, pure=False)
                futures.add(future)
                running.add(future)

        submit()
        for future in running:
            futures.discard(future)
            result = future.result()
            schedule.finished(result)
            submit()
            yield result
    finally:
        if futures:
            client.cancel(list(futures))
        client.close()
        if cluster is not None:
            cluster.close()
