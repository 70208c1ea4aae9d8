"""A campaign's target (judge until confident): the target, the runs it concerns and the
judgments each topic receives before it may stop the campaign; when and why the campaign
stopped handing out documents; the latest target status beside the live estimates.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("campaigns") as table:
        table.add_column(sa.Column("target", sa.String(128)))
        table.add_column(sa.Column("target_runs", sa.JSON()))
        table.add_column(sa.Column("target_start", sa.Integer()))
        table.add_column(sa.Column("stopped", sa.Text()))
        table.add_column(sa.Column("stopped_at", sa.DateTime(timezone=True)))
    with op.batch_alter_table("estimates") as table:
        table.add_column(sa.Column("confidence", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("estimates") as table:
        table.drop_column("confidence")
    with op.batch_alter_table("campaigns") as table:
        for column in ("stopped_at", "stopped", "target_start", "target_runs", "target"):
            table.drop_column(column)
