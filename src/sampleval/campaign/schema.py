"""Migrating the campaign store: the Alembic migrations shipped in
``sampleval/campaign/migrations``, run so that no migration can lose a row.

On SQLite, Alembic's batch mode rebuilds a table to alter it (a copy, the old table
dropped, the copy renamed). With foreign keys enforced, dropping a parent table such as
``campaigns`` cascade-deletes every child row (topics, items, judgments ...), so here
migrations run with ``PRAGMA foreign_keys=OFF`` (it can only be changed outside a
transaction), in one ``BEGIN IMMEDIATE`` transaction, and ``PRAGMA foreign_key_check``
must find no dangling reference before it commits; otherwise nothing is changed. Before any
migration of an existing SQLite store, the file is copied with SQLite's online backup
(:func:`backup`, the ``.backup`` of the ``sqlite3`` shell) beside it, as
``FILE.before-REVISION-YYYYmmddTHHMMSS``, and the path is said on standard error.

On PostgreSQL, DDL is transactional and dropping a referenced table is refused rather than
cascaded: migrations run in one transaction, without a copy (``pg_dump`` backs a store up).
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from sampleval.errors import UsageError

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(extra_versions: Sequence[Path] = ()) -> Any:
    """Alembic's configuration for the shipped migrations (and ``extra_versions``
    directories of further revisions: the tests' throwaway ones)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if extra_versions:
        config.set_main_option("path_separator", "os")
        config.set_main_option("version_locations", ":".join(
            str(p) for p in [MIGRATIONS / "versions", *extra_versions]))
    return config


def upgrade(engine: Engine) -> Path | None:
    """Apply the shipped migrations up to the newest revision; the backup made, if any."""
    return migrate(engine, "head")


def migrate(engine: Engine, revision: str, config: Any = None) -> Path | None:
    """Upgrade or downgrade the store to ``revision`` (see the module docstring); returns
    the backup of a SQLite store made first (None: nothing to migrate, a new store, or
    PostgreSQL)."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = config or alembic_config()
    script = ScriptDirectory.from_config(config)
    with engine.connect() as probe:
        current = MigrationContext.configure(probe).get_current_revision()
    wanted = script.get_current_head() if revision == "head" else revision
    if wanted is None:
        raise UsageError("no migration to apply: the migrations directory has no revision")
    if current == wanted:
        return None
    older = current in {r.revision for r in script.walk_revisions("base", wanted)}
    sqlite = engine.dialect.name == "sqlite"
    saved = backup(engine, current) if sqlite and current is not None else None
    if saved is not None:
        sys.stderr.write(f"sampleval: backed up the campaign store to {saved} before "
                         f"migrating it from revision {current} to {wanted}\n")
    with engine.connect() as connection:
        raw = connection.connection.dbapi_connection
        if sqlite and raw is not None:  # outside a transaction, or SQLite ignores it
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            connection = connection.execution_options(sv_write=True)
            with connection.begin():
                config.attributes["connection"] = connection
                if current is None or older:
                    command.upgrade(config, wanted)
                else:
                    command.downgrade(config, wanted)
                if sqlite:
                    _check_foreign_keys(connection, saved)
        finally:
            if sqlite and raw is not None:
                raw.execute("PRAGMA foreign_keys=ON")
    return saved


def _check_foreign_keys(connection: Any, saved: Path | None) -> None:
    """Refuse (and so roll back) a migration that leaves a row pointing nowhere."""
    dangling = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if dangling:
        tables = sorted({str(row[0]) for row in dangling})
        raise UsageError(f"the store's migration would leave {len(dangling)} rows whose "
                         f"foreign keys point nowhere (tables {', '.join(tables)}); nothing "
                         f"was changed" + (f" (a backup is at {saved})" if saved else ""))


def backup(engine: Engine, revision: str) -> Path | None:
    """Copy a SQLite store beside itself (SQLite's online backup, safe while others read
    and write it); its path (None for an in-memory store)."""
    database = make_url(str(engine.url)).database
    if not database or database == ":memory:":
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = Path(f"{database}.before-{revision}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = Path(f"{database}.before-{revision}-{stamp}-{n}")
    source = sqlite3.connect(database)
    try:
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            copy.close()
    finally:
        source.close()
    return target
