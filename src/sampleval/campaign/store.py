"""Opening the campaign store: the engine, its migrations, and write transactions.

A store is a database URL: SQLite (the default, one file beside the campaign, in WAL mode
with ``synchronous=FULL``, so a committed judgment survives a crash of the process and of
the machine; the group commit's connection flushes the WAL itself after each commit,
:meth:`Store.writer`) or PostgreSQL (``postgresql://...``, driven by psycopg 3; its sessions set
``synchronous_commit=on``, so a commit returns once the server has flushed it). A plain path is
taken as a SQLite file. Opening a store applies the Alembic migrations shipped in
``sampleval/campaign/migrations`` up to the newest, so an older database is upgraded in
place and a new one is created (:mod:`.schema`: a SQLite store is backed up first and
migrated with foreign keys off, so that rebuilding a table deletes nothing).

Writes go through :meth:`Store.write`: on SQLite a process-wide lock and ``BEGIN
IMMEDIATE`` serialise writers without SQLite's busy-wait retries (other processes, such as
a command run while the server runs, wait on the busy timeout); on PostgreSQL transactions
run concurrently under row locks and unique constraints. A writer holds the process-wide
lock for its statements only: it takes its connection from the pool before the lock (the
pool's wait, up to 30 s when every connection is out, would otherwise hold up every other
writer, the judgments among them), and on a SQLite file it commits without flushing the WAL
(``synchronous=NORMAL``) and flushes it once the lock is let go, before returning, so that
a slow flush of, say, the live estimates' save holds up no judgment (the judgments' group
commit flushes apart the same way: :mod:`.group_commit`).

Pages. A SQLite transaction writes every page it changes, whole, to the WAL (and a
checkpoint writes it again into the database file), so what a judgment costs the disk is
the pages its commit changes (one per table or index it touches: ``models.py``) times the
page size. A new SQLite store is created with pages of :data:`PAGE_SIZE` (1 KiB) rather
than SQLite's 4 KiB: a judgment's rows are some tens of bytes, so the smaller pages cut
the bytes written per judgment by about three (benchmarks/README.md, campaign section:
``benchmarks/campaign_wal.py``). The page size of an existing store stays what it is
(SQLite changes it only by a ``VACUUM`` outside WAL mode).

Fast reads. Every request looks up its person (its token's or session's), a one-row
read. Through SQLAlchemy (a connection from the pool, its execution context, its result,
the pool's reset) that costs some 70 microseconds of the interpreter's time, as much as
the rest of an ordinary judgment's handler; :meth:`Store.first` runs such a statement,
compiled once, on a plain ``sqlite3`` connection each thread keeps (autocommit, read only),
in about 7. It reads the store as :meth:`Store.connect` does (the latest commit, nothing
cached: a token reissued by another process stops working at once). On PostgreSQL it reads
through SQLAlchemy (the round trip to the server costs more than the library).

Checkpoints. SQLite copies the WAL's pages back into the database file (a checkpoint, with
its own flush) by default inside the commit that grows the WAL past 1,000 pages, so that
one commit in a thousand pages' worth waits for it, and every judgment queued behind that
commit with it. A store opened with ``checkpoint_every`` (the server's) turns that off
(``wal_autocheckpoint=0`` on its connections) and runs a passive checkpoint on a thread of
its own every ``checkpoint_every`` seconds instead: it copies what was committed, waits for
no reader or writer, and a writer is never made to wait for it. Durability does not depend on
it: a commit is on disk once the WAL is flushed.

The WAL's size. SQLite writes the WAL from its start again only when a writer begins once a
checkpoint has copied every frame and no reader still reads an older snapshot from it;
under steady commits one always lands while the passive checkpoint runs, so the WAL would
never restart and would grow by every page written for as long as the server runs. So when
a round finds more than ``wal_bytes`` (:data:`WAL_BYTES`) in the WAL, the thread takes the
store's write lock (commits wait) and runs a ``RESTART`` checkpoint: it copies the few
frames committed since the passive one and waits for the readers of older snapshots to end
(new readers read the database file), so that the next writer restarts the WAL; SQLite then
truncates a larger file to ``wal_bytes`` (``journal_size_limit``). The wait for readers
lasts at most :data:`READERS_WAIT_MS`, in short polls tried again (a reader may let go of
its snapshot and take a new one between two of SQLite's polls); when it runs out the lock is
let go and the restart is tried again 10 ms later. So the WAL stays near ``wal_bytes``, the
commits wait for one short checkpoint per ``wal_bytes`` written, and only a reader that
holds one snapshot for ever (none of the server's) could keep the WAL growing.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Connection, Engine, Select, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.compiler import SQLCompiler

from sampleval.errors import UsageError

PAGE_SIZE = 1024
"""Bytes per page of a new SQLite store (module docstring: pages)."""

WAL_BYTES = 16 * 2**20
"""The WAL's bound on a server's store (module docstring: the WAL's size)."""
READERS_WAIT_MS = 50
"""Milliseconds a restart of the WAL waits for readers of older snapshots (commits wait
meanwhile)."""
BUSY_TIMEOUT_MS = 30_000
"""Milliseconds a connection waits for another process's lock before giving up."""

DEFAULT_DB = "sampleval-campaigns.db"
"""The SQLite file ``--db`` names by default, in the working directory."""


def database_url(text: str | None) -> str:
    """A SQLAlchemy URL from ``--db``: a URL as given (``postgresql://`` means psycopg 3), a
    path as a SQLite file, nothing as :data:`DEFAULT_DB` in the working directory."""
    if not text:
        text = DEFAULT_DB
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    try:
        url = make_url(text)
    except ArgumentError:
        raise UsageError(f"--db: {text!r} is not a database URL") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise UsageError(f"--db: only SQLite and PostgreSQL are supported, not "
                         f"{url.get_backend_name()!r}")
    return url.render_as_string(hide_password=False)


class Store:
    """An open campaign database (see the module docstring)."""

    def __init__(self, url: str, migrate: bool = True,
                 checkpoint_every: float | None = None, wal_bytes: int = WAL_BYTES) -> None:
        self.url = database_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        database = make_url(self.url).database if self.is_sqlite else None
        background = (checkpoint_every is not None and bool(database)
                      and database != ":memory:")
        self.engine = _engine(self.url, autocheckpoint=not background, wal_bytes=wal_bytes)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock: Any = threading.Lock() if self.is_sqlite else None
        self._flushed: int | None = None
        """The WAL's inode once :meth:`write` has flushed its directory entry."""
        if migrate:
            from sampleval.campaign.schema import upgrade

            upgrade(self.engine)
        self._readers = _Readers(database) if self.is_sqlite and database and (
            database != ":memory:") else None
        self._compiled: dict[Select[Any], tuple[str, tuple[str, ...]]] = {}
        self._checkpoints: _Checkpoints | None = None
        if background:
            assert checkpoint_every is not None
            with self.engine.connect() as connection:
                page = int(connection.exec_driver_sql("PRAGMA page_size").scalar() or 1)
            self._checkpoints = _Checkpoints(self.engine, checkpoint_every, self._write_lock,
                                             max(1, wal_bytes // page))

    def read(self) -> Session:
        """A session for reading (use as a context manager)."""
        return self._sessions()

    def connect(self) -> Connection:
        """A plain connection for quick reads (use as a context manager): Core statements
        without the ORM's bookkeeping; on SQLite each statement reads on its own."""
        return self.engine.connect().execution_options(sv_read=True)

    def first(self, statement: Select[Any], params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The first row of a Core ``statement`` reading plain values (numbers, texts: no
        type converts them), or None: as :meth:`connect` would read it, at a tenth of the
        cost on a SQLite file (each request's look-up of its person: module docstring,
        fast reads)."""
        if self._readers is None:
            with self.connect() as connection:
                row = connection.execute(statement, params).first()
            return None if row is None else tuple(row)
        sql, names = self._compiled.get(statement) or self._compile(statement)
        cursor = self._readers.get().execute(sql, [params[n] for n in names])
        try:
            found: tuple[Any, ...] | None = cursor.fetchone()
        finally:
            cursor.close()  # (ends the statement: no snapshot is held)
        return found

    def _compile(self, statement: Select[Any]) -> tuple[str, tuple[str, ...]]:
        compiled = cast(SQLCompiler, statement.compile(dialect=self.engine.dialect))
        found = self._compiled[statement] = (compiled.string,
                                             tuple(compiled.positiontup or ()))
        return found

    @contextmanager
    def transaction(self, held: Connection | None = None) -> Iterator[Connection]:
        """A plain connection in a write transaction, as :meth:`write` but without the ORM
        (the hot path: judgments); ``held``: a connection from :meth:`writer` to use
        instead of one from the pool."""
        with (self._write_lock or nullcontext(),
              nullcontext(held) if held is not None else self.writer() as connection,
              connection.begin()):
            yield connection

    def writer(self, flushed_apart: bool = False) -> Connection:
        """A connection for :meth:`transaction` that a thread writing often keeps (its
        checkout from the pool, and the pool's reset when it is returned, cost more than
        a judgment's statements); close it when done.

        ``flushed_apart`` (SQLite files only, see :attr:`wal`): its commits write the WAL
        without flushing it (``synchronous=NORMAL``); the caller flushes the WAL itself
        (:class:`.GroupCommit`) before it says anything committed is stored. Returned to
        the pool, the connection flushes its commits again (``synchronous=FULL``)."""
        connection = self.engine.connect().execution_options(sv_write=True)
        if flushed_apart:
            if self.wal is None:
                raise ValueError("only a SQLite file's commits can be flushed apart")
            pooled = connection.connection
            assert pooled.dbapi_connection is not None
            pooled.dbapi_connection.execute("PRAGMA synchronous=NORMAL")
            pooled.info["sv_flushed_apart"] = True
        return connection

    @property
    def wal(self) -> Path | None:
        """The write-ahead log of a SQLite file store (None: PostgreSQL, in memory)."""
        if not self.is_sqlite:
            return None
        database = make_url(self.url).database
        if not database or database == ":memory:":
            return None
        return Path(f"{database}-wal")

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits when the block ends (rolls back on error).

        It holds the store's write lock (every other writer of the process, the judgments'
        group commit among them, waits for it) only from ``BEGIN IMMEDIATE`` to the commit:
        the connection is taken from the pool before (a wait for one holds up nobody), and
        on a SQLite file the commit writes the WAL without flushing it, the flush
        (:func:`flush_file`) coming once the lock is let go, before the block returns
        (module docstring: writes). Durability as ``synchronous=FULL``."""
        apart = self.wal is not None
        connection = self.writer(flushed_apart=apart)
        try:
            with self._write_lock or nullcontext(), self._sessions(bind=connection) as session:
                try:
                    yield session
                    session.commit()
                except BaseException:
                    session.rollback()
                    raise
            if apart:
                assert self.wal is not None
                self._flushed = flush_file(self.wal, self._flushed)
        finally:
            connection.close()

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.stop()
        if self._readers is not None:
            self._readers.close()
        self.engine.dispose()


class _Readers:
    """Per thread, a plain ``sqlite3`` connection to the store's file for :meth:`Store.first`
    (autocommit: each statement reads the latest commit on its own and holds no snapshot
    once done), opened at the thread's first read and kept until the store closes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def get(self) -> sqlite3.Connection:
        found: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if found is None:
            found = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                    timeout=BUSY_TIMEOUT_MS / 1000)
            found.execute("PRAGMA query_only=ON")
            with self._lock:
                self._all.append(found)
            self._local.connection = found
        return found

    def close(self) -> None:
        with self._lock:
            for connection in self._all:
                with suppress(sqlite3.Error):
                    connection.close()
            self._all.clear()
        self._local = threading.local()


class _Checkpoints:
    """A thread running ``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection every
    ``every`` seconds until stopped, and once more when stopped; a round that finds more
    than ``bound`` pages in the WAL makes it restart under ``lock``, the store's write lock
    (the module docstring: the WAL's size)."""

    def __init__(self, engine: Engine, every: float, lock: Any, bound: int) -> None:
        self.engine = engine
        self.every = every
        self.lock = lock
        self.bound = bound
        self.done = 0
        """Checkpoints run so far."""
        self.over = 0
        """Rounds that found the WAL past its bound."""
        self.restarted = 0
        """Of those, rounds that made it restart (the others found a reader in the way)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with self.engine.connect().execution_options(sv_read=True) as connection:
            wait = self.every
            while True:
                stopping = self._stop.wait(wait)
                wait = self.every
                # (the database busy or gone: the next round tries again)
                with suppress(OperationalError):
                    if not self._round(connection):  # a restart refused: tried again soon
                        wait = min(self.every, 0.01)
                if stopping:
                    return

    def _round(self, connection: Connection) -> bool:
        """A checkpoint, and a restart of the WAL when past its bound; False when the WAL
        is past its bound still (a reader was in the way)."""
        _, frames, _ = connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()
        self.done += 1
        if frames <= self.bound:
            return True
        self.over += 1
        with self.lock:  # no commit until the WAL restarts (module docstring)
            # short waits, tried again: a reader may let go of its snapshot and take a new
            # one between two of SQLite's polls, so one long wait can miss every gap
            connection.exec_driver_sql("PRAGMA busy_timeout=5")
            give_up = time.monotonic() + READERS_WAIT_MS / 1000
            try:
                while True:
                    busy, _, _ = connection.exec_driver_sql(
                        "PRAGMA wal_checkpoint(RESTART)").one()
                    if not busy or time.monotonic() > give_up:
                        break
            finally:
                connection.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if not busy:
            self.restarted += 1
        return not busy

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _engine(url: str, autocheckpoint: bool = True, wal_bytes: int = WAL_BYTES) -> Engine:
    if not url.startswith("sqlite"):
        # commits wait for the server's WAL flush, whatever the server's default says
        return create_engine(url, pool_size=10, max_overflow=40, pool_pre_ping=True,
                             connect_args={"options": "-c synchronous_commit=on"})
    path = make_url(url).database
    memory = not path or path == ":memory:"
    if path and not memory:
        parent = Path(path).parent
        if not parent.is_dir():
            raise UsageError(f"--db: the directory {parent} does not exist")
    pooling: dict[str, Any] = ({"poolclass": StaticPool} if memory
                               else {"pool_size": 20, "max_overflow": 60})
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                           **pooling)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions begin below, not in pysqlite
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA page_size={PAGE_SIZE}")  # (a new file only: module docstring)
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if not autocheckpoint:  # a thread of the store checkpoints (module docstring)
            cursor.execute("PRAGMA wal_autocheckpoint=0")
            cursor.execute(f"PRAGMA journal_size_limit={wal_bytes}")
        cursor.close()

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_connection: Any, record: Any) -> None:
        if record.info.pop("sv_flushed_apart", False) and dbapi_connection is not None:
            dbapi_connection.execute("PRAGMA synchronous=FULL")  # (Store.writer)

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        options = connection.get_execution_options()
        if options.get("sv_read"):
            return  # autocommit reads: each statement sees the latest commit
        connection.exec_driver_sql("BEGIN IMMEDIATE" if options.get("sv_write") else "BEGIN")

    return engine


def flush_file(path: Path, known: int | None = None) -> int:
    """Flush ``path``'s written data to disk (``fdatasync``) and, unless it is the file
    ``known`` (an inode number: one whose directory entry a flush already saved), its
    directory too, so that a file just created is found after a crash. Returns the file's
    inode number."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(descriptor)
        inode = os.fstat(descriptor).st_ino
    finally:
        os.close(descriptor)
    if inode != known:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    return inode
