"""How a campaign's target may stop it (``campaign create --stop``, issue 32):
``campaigns.target_stop``, ``committed`` (the rule before this revision, the default for
every existing campaign) or ``anytime``.

One column added in place (no table is rebuilt, so SQLite's foreign keys cannot cascade);
the downgrade drops it (``ALTER TABLE ... DROP COLUMN``, SQLite >= 3.35). A downgraded
anytime campaign keeps its target under the committed rule.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("campaigns", sa.Column("target_stop", sa.String(16), nullable=False,
                                         server_default="committed"))


def downgrade() -> None:
    op.drop_column("campaigns", "target_stop")
