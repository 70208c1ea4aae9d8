"""The server's SQLite store checkpoints its WAL on a thread of its own, never inside a
commit (store.py's module docstring: a commit that crossed SQLite's automatic checkpoint
threshold used to copy the WAL into the database file, and flush it, before answering)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import Column, Integer, LargeBinary, MetaData, Table, func, insert, select

from sampleval.campaign.app import create_app
from sampleval.campaign.store import Store
from sampleval.campaign.walstat import read_wal

BLOBS = Table("blobs", MetaData(), Column("id", Integer, primary_key=True),
              Column("data", LargeBinary))


def _write_pages(store: Store, pages: int) -> None:
    """About ``pages`` 4 KiB pages committed, ten per transaction."""
    BLOBS.create(store.engine, checkfirst=True)
    for _ in range(pages // 10):
        with store.transaction() as connection:
            connection.execute(insert(BLOBS), {"data": bytes(40_000)})


def test_commits_do_not_checkpoint_and_the_thread_does(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = Store(str(path), checkpoint_every=3600.0)  # no round during the writes
    try:
        with store.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        size = path.stat().st_size
        _write_pages(store, 1500)  # past SQLite's automatic threshold of 1,000 pages
        assert path.stat().st_size == size, "a commit copied the WAL into the database"
        wal = Path(f"{path}-wal").stat().st_size
        assert wal > 1500 * 4000
    finally:
        store.close()  # the thread's last round
    assert path.stat().st_size > size + 1500 * 4000


def test_the_thread_checkpoints_every_interval(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = Store(str(path), checkpoint_every=0.05)
    try:
        size = path.stat().st_size
        _write_pages(store, 300)
        deadline = time.monotonic() + 10
        checkpoints = store._checkpoints
        assert checkpoints is not None
        # the file grows while a checkpoint copies pages, before the thread counts it done
        while ((path.stat().st_size <= size + 300 * 4000 or not checkpoints.done)
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert path.stat().st_size > size + 300 * 4000
        assert checkpoints.done > 0
    finally:
        store.close()


def test_a_store_without_it_checkpoints_as_sqlite_does(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "c.db"))
    try:
        with store.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000
        assert store._checkpoints is None
    finally:
        store.close()


def test_the_server_checkpoints_off_the_commit_path(tmp_path: Path) -> None:
    app = create_app(str(tmp_path / "s.db"), live=False)
    store = app.state.service.store
    try:
        with store.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        assert store._checkpoints is not None
    finally:
        store.close()


def test_the_wal_restarts_whatever_the_load(tmp_path: Path) -> None:
    """Under commits that never stop, with readers beside them (short ones as the server's,
    longer ones as the estimates worker's), a round that finds the WAL past its bound
    makes it restart (or tries again soon), so the WAL holds a fraction of the frames
    written, whatever the pace of commits and rounds (before: the passive checkpoint was
    always overtaken by a commit, and the WAL held every frame since the store opened)."""
    path = tmp_path / "c.db"
    bound = 64 * 1024
    store = Store(str(path), checkpoint_every=0.01, wal_bytes=bound)
    BLOBS.create(store.engine)
    stop = threading.Event()

    def read(hold: float) -> None:
        while not stop.is_set():
            with store.read() as session:  # a read transaction, held ``hold`` seconds
                session.execute(select(func.count()).select_from(BLOBS)).scalar()
                time.sleep(hold)

    readers = [threading.Thread(target=read, args=(hold,)) for hold in (0.0, 0.005)]
    for reader in readers:
        reader.start()
    commits = 3000
    try:
        for _ in range(commits):  # about one 1 KiB page each
            with store.transaction() as connection:
                connection.execute(insert(BLOBS), {"data": bytes(500)})
        checkpoints = store._checkpoints
        assert checkpoints is not None
        over, restarted = checkpoints.over, checkpoints.restarted
        frames = read_wal(f"{path}-wal")
        size = Path(f"{path}-wal").stat().st_size
    finally:
        stop.set()
        for reader in readers:
            reader.join()
        store.close()
    assert over > 0 and restarted > 0, (over, restarted)
    assert len(frames.pages) < commits / 3 and size < commits * frames.frame_bytes / 3, (
        f"the WAL holds {len(frames.pages)} frames, {size} bytes, after {commits} commits")
