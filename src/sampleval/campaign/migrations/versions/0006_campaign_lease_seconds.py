"""Leases in a few pages (issue 30, item 8): ``leases.expires_at`` as whole seconds since
the epoch (an integer, rounded up: a lease never ends sooner) instead of a timestamp (26
characters on SQLite), and the leases of documents their assessor has judged since (a
standing judgment) deleted, as the server now deletes them in the judgment's transaction.
The table then holds the leases in force, a row of some 12 bytes each, so that on SQLite
the lease a judgment writes and the one it ends share a page or two instead of splitting
a table that grew by a row per judgment (``models.py``'s module docstring). Nothing reads a
deleted lease: a restarted server skipped the leases of documents their assessor had
judged. The downgrade turns the seconds back into timestamps.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_JUDGED = ("DELETE FROM leases WHERE EXISTS (SELECT 1 FROM judgments j WHERE "
           "j.item_id = leases.item_id AND j.assessor_id = leases.assessor_id AND "
           "j.retracted_at IS NULL)")


def upgrade() -> None:
    op.execute(_JUDGED)
    if op.get_bind().dialect.name == "sqlite":
        # 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC): whole seconds, plus one when a fraction
        _rebuild_leases(sa.BigInteger(), "CAST(strftime('%s', expires_at) AS INTEGER) "
                                         "+ (CAST(substr(expires_at, 21) AS INTEGER) > 0)")
    else:
        op.execute("ALTER TABLE leases ALTER COLUMN expires_at TYPE bigint "
                   "USING ceil(extract(epoch FROM expires_at))::bigint")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_leases(sa.DateTime(timezone=True),
                        "strftime('%Y-%m-%d %H:%M:%S.000000', expires_at, 'unixepoch')")
    else:
        op.execute("ALTER TABLE leases ALTER COLUMN expires_at TYPE timestamp with time zone "
                   "USING to_timestamp(expires_at)")


def _rebuild_leases(kind: Any, value: str) -> None:
    """``leases`` (as revision 0005 made it on SQLite: without rowid) with ``expires_at``
    of type ``kind``, each row's set to the SQL expression ``value`` of the old one."""
    op.create_table(
        "leases_new",
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("assessor_id", sa.Integer(),
                  sa.ForeignKey("assessors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("expires_at", kind, nullable=False),
        sqlite_with_rowid=False)
    op.execute("INSERT INTO leases_new (item_id, assessor_id, expires_at) "
               f"SELECT item_id, assessor_id, {value} FROM leases")
    op.drop_table("leases")
    op.rename_table("leases_new", "leases")
