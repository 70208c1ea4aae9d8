"""``dynamic``'s classifier fits in a process of the server's own, so that a batch's fit does
not hold the server's interpreter lock (:data:`sampleval.selection.dynamic.Fit`).

A judgment that completes a ``dynamic`` batch fits the topic's learner before the next batch
is proposed: about half of that judgment's CPU, all of it holding the interpreter lock
under which every other request of the server waits (docs/research/campaign-load.md,
fourteenth round). :class:`FitProcess` sends the fit's arrays down a pipe to a child process
and waits for the scores, the lock let go meanwhile; the child runs the same function on the
same arrays (BLAS on one thread, as the server), so the scores, and the samples, are the
ones an in-process fit gives, bit for bit. One fit at a time (a lock; the others wait
without the interpreter lock). Should the child fail (killed, out of memory), the fit is
made in process and the child is started again at the next one. The child follows the
server's priority (its nice, read before each fit), since it does the server's work, and
ends when the server does (its pipe closes).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np

from sampleval.selection.dynamic import Features, logistic_scores


class FitProcess:
    """A callable with :func:`logistic_scores`' signature, computing in a child process
    (module docstring). Shared, not copied (``copy.deepcopy`` returns it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self.fits = 0
        """Fits made in the child (the others, if any, in process after a failure)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> FitProcess:
        return self

    def __call__(self, x: Features, y: np.ndarray, weight: np.ndarray,
                 score: Features) -> np.ndarray:
        with self._lock:
            try:
                connection = self._started()
                connection.send((x, y, weight, score))
                answer = connection.recv()
            except (OSError, EOFError, ValueError):
                self._stop()
                return logistic_scores(x, y, weight, score)
            if isinstance(answer, BaseException):
                raise answer
            self.fits += 1
            return np.asarray(answer)

    def start(self) -> None:
        """Start the child now (at load, not inside the first fit)."""
        with self._lock:
            self._started()

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _started(self) -> Connection:
        if self._connection is None:
            context = multiprocessing.get_context("spawn")
            parent, child = context.Pipe()
            process = context.Process(target=_serve, args=(child,), daemon=True,
                                      name="sampleval-fits")
            process.start()
            child.close()
            self._process, self._connection = process, parent
        return self._connection

    def _stop(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(OSError):
                self._connection.close()
        if self._process is not None:
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(5)
        self._process = self._connection = None


def _serve(connection: Connection) -> None:
    """The child: fit what arrives until the pipe closes, at the parent's priority."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    parent = os.getppid()
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        with contextlib.suppress(OSError):  # (raising it needs the privilege the parent had)
            nice = os.getpriority(os.PRIO_PROCESS, parent)
            if nice != os.getpriority(os.PRIO_PROCESS, 0):
                os.setpriority(os.PRIO_PROCESS, 0, nice)
        try:
            answer: Any = logistic_scores(*request)
        except Exception as exc:  # the caller raises it
            answer = exc
        connection.send(answer)
