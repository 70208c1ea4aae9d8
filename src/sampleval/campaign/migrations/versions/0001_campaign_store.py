"""The campaign store: campaigns, runs, topics, documents, people, assignments, items,
judgments, selector states, estimates and sessions (models.py describes each).

Revision ID: 0001
Revises: none
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer(), primary_key=True)


def _campaign() -> sa.Column:
    return sa.Column("campaign_id", sa.Integer(),
                     sa.ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False)


def _when(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "campaigns", _id(),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("budget_count", sa.Integer()),
        sa.Column("budget_rate", sa.Float()),
        sa.Column("depth", sa.Integer()),
        sa.Column("seed", sa.String(64), nullable=False),
        sa.Column("grades", sa.JSON(), nullable=False),
        sa.Column("overlap", sa.Float(), nullable=False),
        _when("created_at"))
    op.create_table(
        "runs", _id(), _campaign(),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.UniqueConstraint("campaign_id", "name"),
        sa.UniqueConstraint("campaign_id", "position"))
    op.create_table(
        "topics", _id(), _campaign(),
        sa.Column("qid", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("narrative", sa.Text(), nullable=False),
        sa.Column("pool_size", sa.Integer(), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.UniqueConstraint("campaign_id", "qid"))
    op.create_table(
        "documents", _id(), _campaign(),
        sa.Column("docno", sa.String(256), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.UniqueConstraint("campaign_id", "docno"))
    op.create_table(
        "assessors", _id(), _campaign(),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        _when("created_at"),
        sa.UniqueConstraint("campaign_id", "name"))
    op.create_table(
        "assignments", _id(),
        sa.Column("assessor_id", sa.Integer(),
                  sa.ForeignKey("assessors.id", ondelete="CASCADE"), nullable=False),
        sa.Column("topic_id", sa.Integer(), sa.ForeignKey("topics.id", ondelete="CASCADE"),
                  nullable=False),
        sa.UniqueConstraint("assessor_id", "topic_id"))
    op.create_table(
        "items", _id(),
        sa.Column("topic_id", sa.Integer(), sa.ForeignKey("topics.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("batch", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("docno", sa.String(256), nullable=False),
        sa.Column("overlap", sa.Boolean(), nullable=False),
        sa.Column("label", sa.Float()),
        _when("observed_at", nullable=True),
        sa.UniqueConstraint("topic_id", "docno"))
    op.create_index("ix_items_topic_batch", "items", ["topic_id", "batch"])
    op.create_table(
        "judgments", _id(), _campaign(),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("assessor_id", sa.Integer(),
                  sa.ForeignKey("assessors.id", ondelete="CASCADE"), nullable=False),
        sa.Column("label", sa.Float(), nullable=False),
        sa.Column("seconds", sa.Float()),
        sa.Column("key", sa.String(64), nullable=False),
        _when("created_at"),
        _when("retracted_at", nullable=True),
        sa.UniqueConstraint("campaign_id", "key"))
    op.create_index("ix_judgments_item", "judgments", ["item_id"])
    op.create_index("ix_judgments_assessor", "judgments", ["assessor_id", "id"])
    op.create_table(
        "selector_states",
        sa.Column("campaign_id", sa.Integer(),
                  sa.ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=False),
        _when("saved_at"))
    op.create_table(
        "estimates",
        sa.Column("campaign_id", sa.Integer(),
                  sa.ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("judgments", sa.Integer(), nullable=False),
        _when("computed_at"),
        sa.Column("rows", sa.JSON(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False))
    op.create_table(
        "sessions", _id(),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("assessor_id", sa.Integer(),
                  sa.ForeignKey("assessors.id", ondelete="CASCADE"), nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        _when("created_at"),
        _when("expires_at"))


def downgrade() -> None:
    for table in ("sessions", "estimates", "selector_states", "judgments", "items",
                  "assignments", "assessors", "documents", "topics", "runs", "campaigns"):
        op.drop_table(table)
