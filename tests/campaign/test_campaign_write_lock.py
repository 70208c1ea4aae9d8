"""The store's write lock is held for a write's statements only (``campaign.store``, module
docstring: writes): a write waiting for a connection from the pool, or flushing the WAL,
holds up no other writer of the process. Before, ``Store.write`` took the lock first, then
waited for the pool (up to its 30 s timeout) and committed with ``synchronous=FULL`` (the
flush inside the lock), so that the live estimates' save, waiting or flushing at a
server's start, held up every judgment: the start-up stall of benchmarks/README.md."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

from sampleval.campaign import store as store_module
from sampleval.campaign.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(f"sqlite:///{tmp_path}/lock.db", migrate=False)
    with opened.write() as session:
        session.execute(text("CREATE TABLE t (v INTEGER)"))
    try:
        yield opened
    finally:
        opened.close()


def test_a_write_waiting_for_the_pool_holds_up_no_other_writer(store: Store) -> None:
    held = store.writer()  # the judgments' group commit keeps its connection
    taken: list[Connection] = []
    with ExitStack() as stack:
        stack.callback(held.close)
        stack.callback(lambda: [c.close() for c in taken])
        pool = store.engine.pool
        while pool.checkedout() < pool.size() + pool._max_overflow:  # type: ignore[attr-defined]
            taken.append(store.engine.connect())  # every other connection out (readers)

        def save() -> None:  # the live estimates' save, say
            with store.write() as session:
                session.execute(text("INSERT INTO t (v) VALUES (1)"))

        saver = threading.Thread(target=save)
        saver.start()
        time.sleep(0.3)  # the save is waiting for a connection
        started = time.perf_counter()
        with store.transaction(held) as connection:  # a judgment
            connection.execute(text("INSERT INTO t (v) VALUES (2)"))
        waited = time.perf_counter() - started
        time.sleep(1.0 - min(waited, 1.0))
        for connection in taken:
            connection.close()
        saver.join(10)
    assert not saver.is_alive()
    assert waited < 0.5, f"a judgment waited {waited:.2f} s for a write waiting for the pool"
    with store.connect() as reader:
        assert reader.execute(text("SELECT count(*) FROM t")).scalar() == 2


def test_a_write_flushes_the_wal_once_the_lock_is_let_go(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    flushes: list[tuple[str, bool]] = []
    real = os.fdatasync

    def fdatasync(descriptor: int) -> None:
        flushes.append((os.readlink(f"/proc/self/fd/{descriptor}"),
                        store._write_lock.locked()))
        real(descriptor)

    monkeypatch.setattr(store_module.os, "fdatasync", fdatasync)
    with store.write() as session:
        session.execute(text("INSERT INTO t (v) VALUES (1)"))
        # the commit under the lock writes the WAL without flushing it
        assert session.execute(text("PRAGMA synchronous")).scalar() == 1
    assert flushes == [(str(store.wal), False)]  # flushed before returning, lock free
    with store.engine.connect() as pooled:  # FULL again in the pool
        assert pooled.exec_driver_sql("PRAGMA synchronous").scalar() == 2


def test_postgresql_and_memory_writes_flush_in_the_commit() -> None:
    memory = Store("sqlite://", migrate=False)
    try:
        with memory.write() as session:
            session.execute(text("CREATE TABLE t (v INTEGER)"))
            session.execute(text("INSERT INTO t (v) VALUES (1)"))
        with memory.connect() as reader:
            assert reader.execute(text("SELECT count(*) FROM t")).scalar() == 1
    finally:
        memory.close()
