"""The idempotency key is unique among a document's judgments, not within the campaign
(issue 30, item 8): the campaign-wide unique index on ``(campaign_id, key)`` put each new
judgment's random key on a random leaf of its own b-tree (1.8 pages of 1 KiB per judgment
on SQLite, a third of what a judgment wrote); ``ix_judgments_item`` becomes a unique index
on ``(item_id, key)``, which a retry finds its judgment through and which the batch's
labels already used. See ``models.py``'s module docstring.

On SQLite the campaign-wide constraint is part of the table (an automatic index), so
``judgments`` is rebuilt, its rows copied (no table refers to it, and migrations run with
foreign keys off: ``campaign/schema.py``). The downgrade puts the campaign-wide constraint
back; it fails, changing nothing, if a client has since used one key for judgments of two
documents.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_judgments_item", table_name="judgments")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_judgments(campaign_key=False)
    else:
        op.drop_constraint(_campaign_key_constraint(), "judgments", type_="unique")
    op.create_index("ix_judgments_item_key", "judgments", ["item_id", "key"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_judgments_item_key", table_name="judgments")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_judgments(campaign_key=True)
    else:
        op.create_unique_constraint(None, "judgments", ["campaign_id", "key"])
    op.create_index("ix_judgments_item", "judgments", ["item_id"])


def _campaign_key_constraint() -> str:
    """The name PostgreSQL gave revision 0001's unique constraint on (campaign_id, key)."""
    for constraint in sa.inspect(op.get_bind()).get_unique_constraints("judgments"):
        if constraint["column_names"] == ["campaign_id", "key"] and constraint["name"]:
            return str(constraint["name"])
    raise RuntimeError("judgments has no unique constraint on (campaign_id, key)")


def _rebuild_judgments(campaign_key: bool) -> None:
    """``judgments`` as in revision 0001, with or without its campaign-wide key constraint,
    its rows copied."""
    columns: list[sa.Column[object]] = [
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("campaign_id", sa.Integer(),
                  sa.ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("assessor_id", sa.Integer(),
                  sa.ForeignKey("assessors.id", ondelete="CASCADE"), nullable=False),
        sa.Column("label", sa.Float(), nullable=False),
        sa.Column("seconds", sa.Float()),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("retracted_at", sa.DateTime(timezone=True)),
    ]
    constraints = [sa.UniqueConstraint("campaign_id", "key")] if campaign_key else []
    op.create_table("judgments_new", *columns, *constraints)
    names = ", ".join(c.name for c in columns)
    op.execute(f"INSERT INTO judgments_new ({names}) SELECT {names} FROM judgments")
    op.drop_table("judgments")
    op.rename_table("judgments_new", "judgments")
