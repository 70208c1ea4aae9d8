"""The tests' own PostgreSQL (``campaign.devdb.LocalPostgres``) when another server already
listens on the port it picked: two test sessions at once (a developer's and CI's, or a
fresh clone's beside a worktree's) could race for one free port, and the second server
then either failed to bind or, worse, had its tests connect to the first one's cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from campaign_support import have_postgres, need
from sampleval.campaign.devdb import LocalPostgres


def _data_directory(server: LocalPostgres) -> Path:
    import psycopg

    with psycopg.connect(f"host=127.0.0.1 port={server.port} user=sampleval "
                         "dbname=postgres") as connection:
        row = connection.execute("SHOW data_directory").fetchone()
    assert row is not None
    return Path(str(row[0])).resolve()


def test_a_second_server_on_a_taken_port_moves_to_another(postgres: LocalPostgres) -> None:
    need(have_postgres(), "PostgreSQL server binaries (Debian package postgresql)")
    second = LocalPostgres(fsync=False)
    second.port = postgres.port  # the race lost: the port picked is the first one's
    try:
        second.start()
        assert second.port != postgres.port
        assert _data_directory(second) == (second.root / "data").resolve()
        assert _data_directory(postgres) == (postgres.root / "data").resolve()
        assert f":{second.port}/" in second.url
    finally:
        second.stop()
