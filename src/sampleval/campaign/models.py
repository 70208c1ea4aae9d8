"""The campaign store's tables (SQLAlchemy 2 declarative models).

One database holds any number of campaigns; every other row belongs to exactly one campaign
(directly or through its topic), so nothing is shared across campaigns.

- ``campaigns``: the design (method, parameters, budget, pool depth, seed, grade scale,
  overlap share, and an optional target: ``MEASURE:HALF_WIDTH``, the runs it concerns, the
  judgments per topic before it may stop the campaign) and whether an assessor may judge
  again a document they judged (``rejudge``) fixed at creation; when the target is met,
  why and when the campaign stopped handing out documents;
- ``runs``: the runs the pool was built from, stored whole (Arrow IPC, compressed), so the
  pool and the live leaderboard need no files after creation;
- ``topics``: the pool's topics with their statement (title, description, narrative) and
  the topic's budget;
- ``documents``: texts of pooled documents found in the corpus (a docno without a row is
  shown by its docno alone);
- ``assessors``: people, assessors or organisers, with the SHA-256 of their login token;
- ``assignments``: which topics an assessor judges;
- ``items``: the documents the selector proposed, batch by batch; ``label`` is the label the
  selector observed (set when the batch was handed to ``observe``);
- ``judgments``: every judgment ever made, never updated except to mark it retracted (undo);
  each has the client's idempotency key, unique among its document's judgments;
- ``leases``: each document offered to an assessor (item, assessor) and not judged by them
  since, with the moment its lease ends, so that a restarted server hands no leased
  document to a second assessor and accepts a judgment only of a document offered to its
  assessor (on SQLite a table ``WITHOUT ROWID``: the row lives in its primary key's b-tree,
  so a lease written with a judgment changes one page, not a table's and its key's); the
  judgment's transaction deletes its document's lease (an undo writes one again), and the
  end is whole seconds since the epoch (some 12 bytes a row), so the table holds the leases
  in force in a page or two, which the lease a judgment writes and the one it ends share,
  rather than a row per judgment ever made, split again and again (revision 0006);
- ``selector_states``: the selector's ``state()`` (its random generator included) after the
  latest batch, with a version counting the batches handed out; for a method whose state
  splits by topic (``Selector.splits_state``) each topic's part as saved with its latest
  batch is in ``topic_states`` instead, and overrides the one in ``selector_states``;
- ``estimates``: the latest live estimates (leaderboard rows) and what they reflect, with
  the target's status (half-widths, projection) when the campaign has a target;
- ``sessions``: browser sessions (SHA-256 of the cookie) with their CSRF token.

Indexes. Every index of a table is a b-tree of its own, and a transaction writes each page
it changes in full to the WAL, so each index on ``judgments``, ``items`` or ``leases`` adds a
page to every judgment's commit. These tables have only the indexes their hot queries use:
``judgments`` ``(item_id, key)`` (a batch's labels, the votes; the key's idempotency), ``items``
``(topic_id, docno)`` (a topic's items); queries that are rare (an undo, ``campaign
status``) find their rows through these (``benchmarks/README.md``: pages per judgment).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def now() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


def aware(moment: datetime) -> datetime:
    """A time read from the store, timezone-aware: SQLite returns naive datetimes for the
    UTC times stored (PostgreSQL aware ones), and an answer must not depend on which."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def aware_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else aware(moment)


class Base(DeclarativeBase):
    pass


class Campaign(Base):
    __tablename__ = "campaigns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    method: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    budget_count: Mapped[int | None] = mapped_column(Integer)
    budget_rate: Mapped[float | None] = mapped_column(Float)
    depth: Mapped[int | None] = mapped_column(Integer)
    seed: Mapped[str] = mapped_column(String(64))
    grades: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    overlap: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    target: Mapped[str | None] = mapped_column(String(128))
    target_runs: Mapped[list[str] | None] = mapped_column(JSON)
    target_start: Mapped[int | None] = mapped_column(Integer)
    target_stop: Mapped[str] = mapped_column(String(16), default="committed",
                                             server_default="committed")
    """How the target may stop the campaign (:data:`sampleval.judging.confident.STOP_MODES`)."""
    stopped: Mapped[str | None] = mapped_column(Text)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    rejudge: Mapped[bool] = mapped_column(default=False, server_default="0")
    """Whether an assessor may judge again a document they judged (without undoing it)."""


class RunData(Base):
    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("campaign_id", "name"),
                      UniqueConstraint("campaign_id", "position"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(256))
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Topic(Base):
    __tablename__ = "topics"
    __table_args__ = (UniqueConstraint("campaign_id", "qid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    qid: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text, default="")
    description: Mapped[str] = mapped_column(Text, default="")
    narrative: Mapped[str] = mapped_column(Text, default="")
    pool_size: Mapped[int] = mapped_column(Integer)
    budget: Mapped[int] = mapped_column(Integer)
    done: Mapped[bool] = mapped_column(default=False)
    """Set once the selector proposes nothing more for the topic."""


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("campaign_id", "docno"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    docno: Mapped[str] = mapped_column(String(256))
    title: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text, default="")


class Person(Base):
    __tablename__ = "assessors"
    __table_args__ = (UniqueConstraint("campaign_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("assessor_id", "topic_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assessor_id: Mapped[int] = mapped_column(ForeignKey("assessors.id", ondelete="CASCADE"))
    topic_id: Mapped[int] = mapped_column(ForeignKey("topics.id", ondelete="CASCADE"))


class Item(Base):
    __tablename__ = "items"
    __table_args__ = (UniqueConstraint("topic_id", "docno"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    topic_id: Mapped[int] = mapped_column(ForeignKey("topics.id", ondelete="CASCADE"))
    batch: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)
    docno: Mapped[str] = mapped_column(String(256))
    overlap: Mapped[bool] = mapped_column(default=False)
    label: Mapped[float | None] = mapped_column(Float)
    observed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Judgment(Base):
    __tablename__ = "judgments"
    __table_args__ = (Index("ix_judgments_item_key", "item_id", "key", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    assessor_id: Mapped[int] = mapped_column(ForeignKey("assessors.id", ondelete="CASCADE"))
    label: Mapped[float] = mapped_column(Float)
    seconds: Mapped[float | None] = mapped_column(Float)
    key: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    retracted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Lease(Base):
    __tablename__ = "leases"
    __table_args__ = ({"sqlite_with_rowid": False},)

    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"),
                                         primary_key=True)
    assessor_id: Mapped[int] = mapped_column(ForeignKey("assessors.id", ondelete="CASCADE"),
                                             primary_key=True)
    expires_at: Mapped[int] = mapped_column(BigInteger)
    """When the lease ends: whole seconds since the epoch, rounded up (revision 0006)."""


class TopicSelectorState(Base):
    __tablename__ = "topic_states"

    topic_id: Mapped[int] = mapped_column(ForeignKey("topics.id", ondelete="CASCADE"),
                                          primary_key=True)
    state: Mapped[bytes] = mapped_column(LargeBinary)


class SelectorState(Base):
    __tablename__ = "selector_states"

    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"),
                                             primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    saved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    state: Mapped[bytes] = mapped_column(LargeBinary)
    """Last: a batch that moves ``version`` only changes the row's first page on SQLite."""


class Estimate(Base):
    __tablename__ = "estimates"

    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"),
                                             primary_key=True)
    judgments: Mapped[int] = mapped_column(Integer)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    rows: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    note: Mapped[str] = mapped_column(Text, default="")
    confidence: Mapped[dict[str, Any] | None] = mapped_column(JSON)


JUDGMENTS: Table = Judgment.__table__  # type: ignore[assignment]
ITEMS: Table = Item.__table__  # type: ignore[assignment]
LEASES: Table = Lease.__table__  # type: ignore[assignment]
TOPIC_STATES: Table = TopicSelectorState.__table__  # type: ignore[assignment]
SELECTOR_STATES: Table = SelectorState.__table__  # type: ignore[assignment]
TOPICS: Table = Topic.__table__  # type: ignore[assignment]
"""Tables for Core statements (the hot path)."""


class Session(Base):
    __tablename__ = "sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    assessor_id: Mapped[int] = mapped_column(ForeignKey("assessors.id", ondelete="CASCADE"))
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
