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
run concurrently under row locks and unique constraints.

Pages. A SQLite transaction writes every page it changes, whole, to the WAL (and a
checkpoint writes it again into the database file), so what a judgment costs the disk is
the pages its commit changes (one per table or index it touches: ``models.py``) times the
page size. A new SQLite store is created with pages of :data:`PAGE_SIZE` (1 KiB) rather
than SQLite's 4 KiB: a judgment's rows are some tens of bytes, so the smaller pages cut
the bytes written per judgment by about three (benchmarks/README.md, campaign section:
``benchmarks/campaign_wal.py``). The page size of an existing store stays what it is
(SQLite changes it only by a ``VACUUM`` outside WAL mode).

Checkpoints. SQLite copies the WAL's pages back into the database file (a checkpoint, with
its own flush) by default inside the commit that grows the WAL past 1,000 pages, so that
one commit in a thousand pages' worth waits for it, and every judgment queued behind that
commit with it. A store opened with ``checkpoint_every`` (the server's) turns that off
(``wal_autocheckpoint=0`` on its connections) and runs a passive checkpoint on a thread of
its own every ``checkpoint_every`` seconds instead: it copies what was committed, waits for
no reader or writer, and a writer is never made to wait for it. Durability does not depend on
it: a commit is on disk once the WAL is flushed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from sampleval.errors import UsageError

PAGE_SIZE = 1024
"""Bytes per page of a new SQLite store (module docstring: pages)."""

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
                 checkpoint_every: float | None = None) -> None:
        self.url = database_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        database = make_url(self.url).database if self.is_sqlite else None
        background = (checkpoint_every is not None and bool(database)
                      and database != ":memory:")
        self.engine = _engine(self.url, autocheckpoint=not background)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock: Any = threading.Lock() if self.is_sqlite else None
        if migrate:
            from sampleval.campaign.schema import upgrade

            upgrade(self.engine)
        self._checkpoints: _Checkpoints | None = None
        if background:
            assert checkpoint_every is not None
            self._checkpoints = _Checkpoints(self.engine, checkpoint_every)

    def read(self) -> Session:
        """A session for reading (use as a context manager)."""
        return self._sessions()

    def connect(self) -> Connection:
        """A plain connection for quick reads (use as a context manager): Core statements
        without the ORM's bookkeeping; on SQLite each statement reads on its own."""
        return self.engine.connect().execution_options(sv_read=True)

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
        """A session whose transaction commits when the block ends (rolls back on error)."""
        with self._write_lock or nullcontext(), self._sessions() as session:
            session.connection(execution_options={"sv_write": True})
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.stop()
        self.engine.dispose()


class _Checkpoints:
    """A thread running ``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection every
    ``every`` seconds until stopped (the module docstring), and once more when stopped."""

    def __init__(self, engine: Engine, every: float) -> None:
        self.engine = engine
        self.every = every
        self.done = 0
        """Checkpoints run so far."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with self.engine.connect().execution_options(sv_read=True) as connection:
            while True:
                stopping = self._stop.wait(self.every)
                try:
                    connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except OperationalError:
                    pass  # (the database busy or gone: the next round tries again)
                else:
                    self.done += 1
                if stopping:
                    return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _engine(url: str, autocheckpoint: bool = True) -> Engine:
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
        cursor.execute("PRAGMA busy_timeout=30000")
        if not autocheckpoint:  # a thread of the store checkpoints (module docstring)
            cursor.execute("PRAGMA wal_autocheckpoint=0")
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
