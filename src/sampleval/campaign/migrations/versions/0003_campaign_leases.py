"""Judgments bound to offers and selector states saved by topic: the leases of offered
documents (so that a restart hands none to a second assessor), whether assessors may judge
again a document they judged (``campaigns.rejudge``), and each topic's part of a selector
state that splits by topic (``topic_states``).

Only new tables and one column added in place (no table is rebuilt, so SQLite's foreign keys
cannot cascade); the downgrade drops them (the column with ``ALTER TABLE ... DROP COLUMN``,
SQLite >= 3.35), after folding the topics' parts back into ``selector_states`` so that the
0002 code finds the state it expects.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import json
import zlib

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("campaigns", sa.Column("rejudge", sa.Boolean(), nullable=False,
                                         server_default="0"))
    op.create_table(
        "leases",
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("items.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("assessor_id", sa.Integer(),
                  sa.ForeignKey("assessors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False))
    op.create_table(
        "topic_states",
        sa.Column("topic_id", sa.Integer(), sa.ForeignKey("topics.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("state", sa.LargeBinary(), nullable=False))


def downgrade() -> None:
    _fold_topic_states()
    op.drop_table("topic_states")
    op.drop_table("leases")
    op.drop_column("campaigns", "rejudge")


def _fold_topic_states() -> None:
    """Put each topic's saved part back into its campaign's whole state (the encoding of
    :func:`sampleval.campaign.organise.encode_state`, repeated here: a migration must not
    change with the code)."""
    bind = op.get_bind()
    topic_states = sa.table("topic_states", sa.column("topic_id", sa.Integer()),
                            sa.column("state", sa.LargeBinary()))
    topics = sa.table("topics", sa.column("id", sa.Integer()),
                      sa.column("campaign_id", sa.Integer()), sa.column("qid", sa.String()))
    states = sa.table("selector_states", sa.column("campaign_id", sa.Integer()),
                      sa.column("state", sa.LargeBinary()))
    parts: dict[int, dict[str, object]] = {}
    for campaign_id, qid, data in bind.execute(
            sa.select(topics.c.campaign_id, topics.c.qid, topic_states.c.state)
            .join(topics, topics.c.id == topic_states.c.topic_id)):
        parts.setdefault(campaign_id, {})[qid] = json.loads(zlib.decompress(data))
    for campaign_id, mine in parts.items():
        data = bind.execute(sa.select(states.c.state).where(
            states.c.campaign_id == campaign_id)).scalar_one()
        whole = json.loads(zlib.decompress(data))
        whole["topics"] = {**whole.get("topics", {}), **mine}
        encoded = zlib.compress(json.dumps(whole, separators=(",", ":")).encode(), 1)
        bind.execute(states.update().where(states.c.campaign_id == campaign_id)
                     .values(state=encoded))
