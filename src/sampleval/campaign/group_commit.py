"""Group commit: writes from many request threads share transactions.

A durable commit costs a flush to disk (an fsync, a few milliseconds here), and SQLite
commits one writer at a time, so committing each judgment alone caps a store at a few
hundred judgments per second whatever the number of clients. :class:`GroupCommit` hands
every write to one thread, which takes all the writes waiting at that moment and applies
them in one transaction: one commit, one flush, for the lot. Each caller blocks until the
transaction holding its write has committed, so nothing is acknowledged before it is on
disk. If a shared transaction fails, its writes are retried one by one, so one bad write
cannot fail the others. The thread keeps its connection from one transaction to the next
(:meth:`.Store.writer`), and takes a new one after a transaction that failed.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from typing import Generic, TypeVar

from sqlalchemy import Connection

from sampleval.campaign.store import Store

R = TypeVar("R")
T = TypeVar("T")
Apply = Callable[[Connection, list[R]], list[T]]


class GroupCommit(Generic[R, T]):
    """Apply writes of type ``R`` in shared transactions; ``apply(connection, records)`` returns
    one result (or raises for the whole group) per record, in order."""

    def __init__(self, store: Store, apply: Apply[R, T], max_batch: int = 256) -> None:
        self.store = store
        self.apply = apply
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[tuple[R, Future[T]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self._connection: Connection | None = None

    def submit(self, record: R) -> T:
        """Write ``record``; return its result once committed (or raise its error)."""
        return self.enqueue(record).result()

    def enqueue(self, record: R) -> Future[T]:
        """Queue ``record`` and return at once: its result, once committed, is the future's.
        Records are applied in the order they are queued."""
        self._ensure_thread()
        done: Future[T] = Future()
        self._queue.put((record, done))
        return done

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _ensure_thread(self) -> None:
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="group-commit",
                                                    daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        try:
            self._serve()
        finally:
            self._drop_connection()

    def _serve(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            self._write(batch)
            if stop:
                return

    def _write(self, batch: list[tuple[R, Future[T]]]) -> None:
        try:
            if self._connection is None:
                self._connection = self.store.writer()
            with self.store.transaction(self._connection) as connection:
                results = self.apply(connection, [record for record, _ in batch])
        except BaseException as exc:
            self._drop_connection()  # (it may be broken: a lost server, a full disk)
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
            else:
                for one in batch:
                    self._write([one])
            return
        for (_, done), result in zip(batch, results, strict=True):
            done.set_result(result)

    def _drop_connection(self) -> None:
        if self._connection is not None:
            with suppress(Exception):
                self._connection.close()
            self._connection = None
