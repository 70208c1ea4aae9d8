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

# the most WAL bytes per judgment, 4 topics x 40 judged one at a time (a transaction
# each); 4 KiB pages and every index: strata 25.1 KiB, mtf 43.9 KiB (4 x 12); 1 KiB pages,
# the unused indexes dropped: 5.34 and 9.98 KiB; the leases in force only, their ends in
# seconds: 5.03 and 9.65 KiB; the key unique per document (revision 0008: no campaign-wide
# index of random keys): 3.99 and 8.53 KiB (the keys are random: their index's splits vary)
MOST_BYTES = {"strata": 4.3 * 1024, "mtf": 8.9 * 1024}
BUDGET = 40
MOST_LEASE_PAGES = 1.1
"""Pages of ``leases`` per judgment: the one its transaction changes (before revision 0006
and the judged documents' leases ended: 1.31 strata, 1.33 mtf, the table split as it grew
by a row per judgment)."""
NEEDLESS = {"ix_judgments_assessor", "ix_items_topic_batch", "sqlite_autoindex_leases_1",
            "sqlite_autoindex_judgments_1", "ix_judgments_item"}


def _judged(directory: Path, method: str, budget: int = 12
            ) -> tuple[int, int, dict[str, int], int]:
    """Judgments made, WAL bytes they wrote, pages by table or index and the leases stored
    at the end, for a campaign of ``method`` on the tests' collection judged in full, one
    judgment at a time."""
    c = collection()
    url = f"sqlite:///{directory}/w.db"
    store = Store(url)
    create_campaign(store, Design("c", method, Budget(budget), depth=30, seed=5,
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
        with store.connect() as connection:
            leases = int(connection.execute(text("SELECT count(*) FROM leases")).scalar_one())
    finally:
        store.close()
    return (made, len(written.pages) * written.frame_bytes,
            dict(pages_by_owner(written, owners)), leases)


@pytest.mark.parametrize("method", ["strata", "mtf"])
def test_a_judgment_writes_few_pages(tmp_path: Path, method: str) -> None:
    made, written, pages, leases = _judged(tmp_path, method, BUDGET)
    assert made == 4 * BUDGET
    assert pages["leases"] / made <= MOST_LEASE_PAGES
    # every document is judged: no lease is in force (before: a row per judgment, 48)
    assert leases == 0
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


def _judge_some(store: Store, method: str, judgments: int) -> None:
    """A campaign ``c`` of ``method`` on the tests' collection, two assessors (topics 1 and
    2), ``judgments`` made in turn (their next documents leased)."""
    c = collection()
    create_campaign(store, Design("c", method, Budget(12), depth=30, seed=5,
                                  grades=tuple(parse_grades("0,1,2"))), c.runs)
    tokens = [add_person(store, "c", f"a{i}", [qid])[0] for i, qid in enumerate(["1", "2"])]
    assert judge_in_turn(store, tokens, c.oracle, seed=3, limit=judgments) == judgments


def test_revision_0005_keeps_every_row_both_ways(store_url: str) -> None:
    """Revision 0005 (the unused indexes dropped; on SQLite ``leases`` without rowid,
    ``selector_states`` with its state last) and its downgrade keep every row, leases and
    selector states included."""
    store = Store(store_url)
    try:
        _judge_some(store, "mtf", 9)
        before = _rows(store)
        assert len(before["leases"]) >= 2 and before["selector_states"]
        migrate(store.engine, "0004")
        after = _rows(store)  # (before revision 0006 a lease's end is a timestamp)
        assert [_lease_key(r) for r in after.pop("leases")] == [
            _lease_key(r) for r in before["leases"]]
        assert after == {n: rows for n, rows in before.items() if n != "leases"}
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


def _lease_key(row: str) -> str:
    """A lease's row from :func:`_rows` without its end."""
    return row.split("('expires_at'")[0] + row.split("), ('item_id'")[1]


def test_revision_0006_keeps_leases_in_force_to_the_second(store_url: str) -> None:
    """Revision 0006: a lease's end in whole seconds, rounded up, and back; the leases of
    documents judged since (a standing judgment) deleted, the others kept."""
    store = Store(store_url)
    try:
        _judge_some(store, "strata", 4)
        migrate(store.engine, "0005")
        with store.engine.begin() as connection:
            judged = connection.execute(text(
                "SELECT item_id, assessor_id FROM judgments ORDER BY id LIMIT 1")).one()
            # a judged document's lease, as the server kept it before; a fraction of a second
            connection.execute(text(
                "INSERT INTO leases (item_id, assessor_id, expires_at) VALUES (:i, :a, "
                "'2030-01-02 03:04:05.250000')"), {"i": judged[0], "a": judged[1]})
            connection.execute(text("UPDATE leases SET expires_at = "
                                    "'2030-01-02 03:04:05.250000' WHERE item_id != :i"),
                               {"i": judged[0]})
            in_force = connection.execute(text(
                "SELECT item_id, assessor_id FROM leases WHERE item_id != :i "
                "ORDER BY item_id"), {"i": judged[0]}).all()
        assert len(in_force) == 2
        migrate(store.engine, "head")
        with store.connect() as connection:
            rows = connection.execute(text(
                "SELECT item_id, assessor_id, expires_at FROM leases ORDER BY item_id")).all()
        second = 1893553446  # 2030-01-02 03:04:06 UTC: 05.25 rounded up
        assert rows == [(i, a, second) for i, a in in_force]
        migrate(store.engine, "0005")
        migrate(store.engine, "head")
        with store.connect() as connection:
            assert connection.execute(text(
                "SELECT item_id, assessor_id, expires_at FROM leases ORDER BY item_id")
            ).all() == rows
    finally:
        store.close()
