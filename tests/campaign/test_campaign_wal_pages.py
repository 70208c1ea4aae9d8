"""The pages a judgment writes on a SQLite store (issue 30, item 8): each judgment's commit
writes every page it changes, whole, to the WAL, so the bytes a judgment costs the disk are
its pages times the page size (``campaign/store.py``: pages; ``models.py``: indexes).
Counted from the WAL's frames, not timed: the same on a busy machine."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import column, inspect, select, table, text

from campaign_support import collection
from sampleval.campaign import models as m
from sampleval.campaign.organise import Design, add_person, create_campaign, parse_grades
from sampleval.campaign.schema import migrate
from sampleval.campaign.simulation import judge_in_turn
from sampleval.campaign.store import Store
from sampleval.campaign.walstat import page_owners, pages_by_owner, read_wal
from sampleval.selection import Budget

# the most WAL bytes and pages per judgment, judged one at a time (a transaction each);
# before this change: strata 25.1 KiB (6.1 pages of 4 KiB), mtf 43.9 KiB (10.9 pages)
MOST_BYTES = {"strata": 8 * 1024, "mtf": 14 * 1024}
NEEDLESS = {"ix_judgments_assessor", "ix_items_topic_batch", "sqlite_autoindex_leases_1"}


def _judged(directory: Path, method: str) -> tuple[int, int, dict[str, int]]:
    """Judgments made, WAL bytes they wrote and pages by table or index, for a campaign of
    ``method`` on the tests' collection judged in full, one judgment at a time."""
    c = collection()
    url = f"sqlite:///{directory}/w.db"
    store = Store(url)
    create_campaign(store, Design("c", method, Budget(12), depth=30, seed=5,
                                  grades=tuple(parse_grades("0,1,2"))), c.runs)
    with store.read() as session:
        qids = list(session.scalars(select(m.Topic.qid).order_by(m.Topic.position)))
    tokens = [add_person(store, "c", f"a{i}", [qid])[0] for i, qid in enumerate(qids)]
    store.close()
    store = Store(url, checkpoint_every=1e9)  # the server's settings, no checkpoint round
    try:
        wal = Path(f"{directory}/w.db-wal")
        before = len(read_wal(wal).pages)
        made = judge_in_turn(store, tokens, c.oracle, seed=3)
        written = read_wal(wal).since(before)
        owners = page_owners(f"{directory}/w.db")
    finally:
        store.close()
    return made, len(written.pages) * written.frame_bytes, dict(pages_by_owner(written, owners))


@pytest.mark.parametrize("method", ["strata", "mtf"])
def test_a_judgment_writes_few_pages(tmp_path: Path, method: str) -> None:
    made, written, pages = _judged(tmp_path, method)
    assert made == 4 * 12
    assert written / made <= MOST_BYTES[method], (
        f"{written / made / 1024:.1f} KiB per judgment: "
        f"{ {name: round(count / made, 2) for name, count in pages.items()} } pages")
    assert not NEEDLESS & set(pages), "an index no hot query uses was written"


def _rows(store: Store) -> dict[str, list[str]]:
    """Every table's rows (column -> value, whatever the columns' order), sorted (but
    Alembic's own table)."""
    with store.engine.connect() as connection:
        names = [n for n in inspect(connection).get_table_names() if n != "alembic_version"]
        return {n: sorted(repr(sorted(row.items())) for row in connection.execute(
            select(table(n, *[column(c["name"]) for c in inspect(connection).get_columns(n)]))
        ).mappings()) for n in names}


def test_revision_0005_keeps_every_row_both_ways(store_url: str) -> None:
    """Revision 0005 (the unused indexes dropped; on SQLite ``leases`` without rowid,
    ``selector_states`` with its state last) and its downgrade keep every row, leases and
    selector states included."""
    c = collection()
    store = Store(store_url)
    try:
        create_campaign(store, Design("c", "mtf", Budget(12), depth=30, seed=5,
                                      grades=tuple(parse_grades("0,1,2"))), c.runs)
        tokens = [add_person(store, "c", f"a{i}", [qid])[0]
                  for i, qid in enumerate(["1", "2"])]
        assert judge_in_turn(store, tokens, c.oracle, seed=3, limit=9) == 9
        before = _rows(store)
        assert len(before["leases"]) >= 2 and before["selector_states"]
        migrate(store.engine, "0004")
        assert _rows(store) == before
        indexes = {i["name"] for i in inspect(store.engine).get_indexes("judgments")}
        assert "ix_judgments_assessor" in indexes
        migrate(store.engine, "head")
        assert _rows(store) == before
        indexes = {i["name"] for i in inspect(store.engine).get_indexes("judgments")}
        assert "ix_judgments_assessor" not in indexes
        if store.is_sqlite:
            with store.connect() as connection:
                sql = connection.scalar(text(
                    "SELECT sql FROM sqlite_schema WHERE name = 'leases'"))
            assert "WITHOUT ROWID" in sql
    finally:
        store.close()
