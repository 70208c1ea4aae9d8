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

On a SQLite file the flush is taken out of the transaction and given a thread of its own
(``flushed apart``): the writing thread commits without flushing (``synchronous=NORMAL``:
the WAL written, SQLite's lock released) and hands the batch to the flushing thread, which
takes every batch committed so far, flushes the WAL (``fdatasync``) and only then answers
their callers. So a write queued while a flush is under way is written during it, and its
caller waits for the flush that starts once that flush ends, not for a flush queued behind
the statements of its transaction. That next flush starts as soon as the writes queued
before the previous flush ended are committed (at once, when the writing thread kept up),
with everything committed by then; so no write waits for more than the flush under way
when it was queued and the next one. While a flush is under way the writing thread commits
once: the writes queued after that commit wait for the flush's end and are committed
together, in one transaction, before the next flush (which waits for them either way).
So a slow flush gathers the writes queued during it into two transactions, not one each:
fewer pages written, since the writes of one transaction share the pages they change
(a judgment's lease, the judgments table's last page, ...). Durability is the same as SQLite's
``synchronous=FULL`` (which flushes the WAL at each commit): nothing is answered before a
flush that began after its commit. One thing differs: other connections may read a commit
in the moment between it and its flush (with ``FULL`` they saw it once flushed), so a read
can count a write whose caller has not been answered yet and that a crash of the machine
in that moment would lose; that caller, never answered, sends it again (the key makes the
retry store it once). On PostgreSQL the server flushes inside the commit, as before.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from typing import Generic, TypeVar

from sqlalchemy import Connection

from sampleval.campaign.store import Store, flush_file

R = TypeVar("R")
T = TypeVar("T")
Apply = Callable[[Connection, list[R]], list[T]]
Outcome = tuple[Future[T], T]


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
        self.wal = store.wal
        """The WAL the flushing thread flushes (None: each commit flushes)."""
        self._written: queue.SimpleQueue[list[Outcome[T]] | None] = queue.SimpleQueue()
        self._flusher: threading.Thread | None = None
        self._counted = threading.Condition()
        self._queued = 0
        """Records queued so far."""
        self._handled = 0
        """Records committed (or failed) so far, the first ``_handled`` of those queued."""
        self._flushing = False
        """Whether the flushing thread is flushing (guarded by ``_counted``)."""
        self.transactions = 0
        """Transactions committed so far (each one commit: a group, or a record retried
        alone)."""
        self.flushes = 0
        """Flushes of the WAL so far (one per transaction where the commit flushes)."""

    def counts(self) -> dict[str, int]:
        """Records committed (or failed), transactions and WAL flushes so far."""
        return {"writes": self._handled, "transactions": self.transactions,
                "flushes": self.flushes}

    def submit(self, record: R) -> T:
        """Write ``record``; return its result once committed (or raise its error)."""
        return self.enqueue(record).result()

    def enqueue(self, record: R) -> Future[T]:
        """Queue ``record`` and return at once: its result, once committed, is the future's.
        Records are applied in the order they are queued."""
        self._ensure_thread()
        done: Future[T] = Future()
        with self._counted:
            self._queued += 1
            self._queue.put((record, done))
        return done

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._flusher is not None:
            self._written.put(None)
            self._flusher.join()
            self._flusher = None

    def _ensure_thread(self) -> None:
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    if self.wal is not None:
                        self._flusher = threading.Thread(target=self._flush, daemon=True,
                                                         name="group-commit-flush")
                        self._flusher.start()
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
            batch, stop = _take(self._queue, self.max_batch)
            if batch:
                self._write(batch)
                with self._counted:
                    self._handled += len(batch)
                    self._counted.notify_all()
                    while self._flushing and not stop:  # one commit per flush under way
                        self._counted.wait()
            if stop:
                return

    def _write(self, batch: list[tuple[R, Future[T]]]) -> None:
        try:
            if self._connection is None:
                self._connection = self.store.writer(flushed_apart=self.wal is not None)
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
        self.transactions += 1
        outcomes = [(done, result) for (_, done), result in zip(batch, results, strict=True)]
        if self.wal is None:
            self.flushes += 1
            _answer(outcomes)
        else:
            self._written.put(outcomes)

    def _flush(self) -> None:
        """The flushing thread: flush the WAL for every batch committed since the last
        flush began, then answer their callers (an error flushing fails them all); then
        wait for the writes queued until then to be committed (module docstring)."""
        flushed: int | None = None  # the WAL's inode once its directory entry is flushed
        while True:
            batches, stop = _take(self._written)
            outcomes = [outcome for batch in batches for outcome in batch]
            if not outcomes:
                return
            with self._counted:
                self._flushing = True
            try:
                assert self.wal is not None
                flushed = flush_file(self.wal, flushed)
                self.flushes += 1
            except BaseException as exc:
                for done, _ in outcomes:
                    done.set_exception(exc)
            else:
                _answer(outcomes)
            finally:
                with self._counted:
                    self._flushing = False
                    self._counted.notify_all()
            if stop:
                return
            with self._counted:
                queued = self._queued
                while self._handled < queued:
                    self._counted.wait()

    def _drop_connection(self) -> None:
        if self._connection is not None:
            with suppress(Exception):
                self._connection.close()
            self._connection = None


def _take(waiting: queue.SimpleQueue[T | None], most: int | None = None
          ) -> tuple[list[T], bool]:
    """The items in ``waiting`` (blocking for the first), up to ``most``, and whether the
    stop mark (None) came among them."""
    first = waiting.get()
    if first is None:
        return [], True
    items = [first]
    while most is None or len(items) < most:
        try:
            more = waiting.get_nowait()
        except queue.Empty:
            break
        if more is None:
            return items, True
        items.append(more)
    return items, False


def _answer(outcomes: list[Outcome[T]]) -> None:
    for done, result in outcomes:
        done.set_result(result)
