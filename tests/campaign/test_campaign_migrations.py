"""Migrating the campaign store loses no row (``campaign.schema``): the shipped downgrade to
0001 and a throwaway migration that rebuilds ``campaigns`` (written here, never shipped)
keep every row on SQLite and PostgreSQL; a SQLite store is backed up before; a migration
that would leave dangling foreign keys is refused and changes nothing."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import Engine, func, inspect, select, table
from sqlalchemy import text as sa_text

from campaign_support import collection
from sampleval.campaign.organise import Design, add_person, create_campaign, parse_grades
from sampleval.campaign.schema import alembic_config, migrate
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.errors import UsageError
from sampleval.selection import Budget

REBUILD = '''"""Throwaway (tests only): rebuild campaigns, as batch mode does on SQLite."""
import sqlalchemy as sa
from alembic import op

revision = "t9001"
down_revision = {head!r}
branch_labels = None
depends_on = None


def _rebuild(length: int) -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    with op.batch_alter_table("campaigns", recreate="always" if sqlite else "auto") as t:
        t.alter_column("name", type_=sa.String(length), existing_nullable=False)


def upgrade() -> None:
    _rebuild(96)


def downgrade() -> None:
    _rebuild(64)
'''

ORPHANS = '''"""Throwaway (tests only): delete every campaign without its rows."""
from alembic import op

revision = "t9002"
down_revision = {head!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM campaigns")


def downgrade() -> None:
    pass
'''


def judged_store(url: str) -> Store:
    """A store at the newest revision with a campaign half judged by two assessors."""
    store = Store(url)
    create_campaign(store, Design("c1", "strata", Budget(12), depth=30, seed=7,
                                  grades=tuple(parse_grades("0,1,2"))), collection().runs)
    service = CampaignService(store)
    oracle = collection().oracle
    for name in ("alice", "bob"):
        token, topics, _ = add_person(store, "c1", name)
        person = service.person_by_token(token)
        assert person is not None
        for n in range(10):
            qid = topics[n % len(topics)]
            offer = service.next_document(person, qid)
            assert offer.status == "judge"
            service.judge(person, qid, offer.docno, oracle(qid, [offer.docno])[offer.docno],
                          2.0, uuid.uuid4().hex)
    service.close()
    return store


def counts(engine: Engine) -> dict[str, int]:
    """Every table's rows (but Alembic's own)."""
    names = [n for n in inspect(engine).get_table_names() if n != "alembic_version"]
    with engine.connect() as connection:
        return {n: int(connection.scalar(select(func.count()).select_from(table(n))) or 0)
                for n in names}


LATER_TABLES = {"leases", "topic_states"}
"""Tables newer revisions add (0003: open leases, selector states per topic folded back into
the whole state on the way down): not 0001's, so a downgrade to it drops them."""


def shipped_head() -> str:
    from alembic.script import ScriptDirectory

    head: str = ScriptDirectory.from_config(alembic_config()).get_current_head()
    return head


def throwaway(folder: Path, text: str) -> object:
    """A configuration with one more revision after the shipped head."""
    folder.mkdir()
    (folder / "throwaway.py").write_text(text.format(head=shipped_head()))
    return alembic_config([folder])


def test_the_shipped_downgrade_keeps_every_judgment(store_url: str) -> None:
    """Down to 0001 and up again: every row of every table kept (before: SQLite's
    rebuilt ``campaigns`` cascade-deleted topics, items, judgments, people, runs and
    selector states), and on SQLite a backup made first."""
    store = judged_store(store_url)
    before = counts(store.engine)
    assert before["judgments"] == 20 and before["topics"] == 4
    saved = migrate(store.engine, "0001")
    kept = counts(store.engine)  # 0001's tables; 0003's leases and topic states go down
    assert set(before) - set(kept) <= LATER_TABLES
    assert kept == {t: n for t, n in before.items() if t in kept}
    assert migrate(store.engine, "head") is not None or not store.is_sqlite
    assert {t: n for t, n in counts(store.engine).items() if t in kept} == kept
    if store.is_sqlite:
        assert saved is not None and saved.exists()
        copy = Store(f"sqlite:///{saved}", migrate=False)
        assert counts(copy.engine) == before
        copy.close()
    else:
        assert saved is None
    store.close()


def test_a_migration_that_rebuilds_campaigns_keeps_every_row(store_url: str,
                                                            tmp_path: Path) -> None:
    store = judged_store(store_url)
    before = counts(store.engine)
    config = throwaway(tmp_path / "versions", REBUILD)
    migrate(store.engine, "t9001", config)
    assert counts(store.engine) == before
    columns = {c["name"]: c for c in inspect(store.engine).get_columns("campaigns")}
    assert columns["name"]["type"].length == 96
    migrate(store.engine, shipped_head(), config)
    assert counts(store.engine) == before
    columns = {c["name"]: c for c in inspect(store.engine).get_columns("campaigns")}
    assert columns["name"]["type"].length == 64
    store.close()


def test_a_migration_leaving_dangling_rows_is_refused(tmp_path: Path) -> None:
    store = judged_store(f"sqlite:///{tmp_path}/s.db")
    before = counts(store.engine)
    config = throwaway(tmp_path / "versions", ORPHANS)
    with pytest.raises(UsageError, match=r"foreign keys point nowhere.*nothing was changed"):
        migrate(store.engine, "t9002", config)
    assert counts(store.engine) == before
    store.close()


def test_revision_0008_downgrade_refuses_a_key_of_two_documents(store_url: str) -> None:
    """Since revision 0008 a key is unique per document; down to 0007 (unique per campaign)
    with one key on judgments of two documents fails whole: the store stays at 0008 with
    every row (and 0008 moved through both ways keeps every row)."""
    from sqlalchemy.exc import IntegrityError

    store = judged_store(store_url)
    before = counts(store.engine)
    migrate(store.engine, "0007")
    assert "ix_judgments_item" in {i["name"] for i in inspect(store.engine).get_indexes(
        "judgments")}
    migrate(store.engine, "head")
    assert counts(store.engine) == before
    with store.write() as session:
        session.execute(sa_text("UPDATE judgments SET key = 'shared-key' WHERE id IN "
                                "(SELECT id FROM judgments ORDER BY id LIMIT 2)"))
    with pytest.raises(IntegrityError):
        migrate(store.engine, "0007")
    assert counts(store.engine) == before
    with store.engine.connect() as connection:
        assert connection.scalar(sa_text("SELECT version_num FROM alembic_version")) == "0008"
    store.close()
