"""Judgments bound to offers (issue 30): through the API a judgment is accepted only of a
document offered to its assessor (or offered again after an undo), 409 with the reason
otherwise, re-judging only where the organiser allowed it; labels are numbers of the scale;
leases are stored, so a restarted server hands no leased document to a second assessor; an
undo and a judgment on one topic serialise."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from campaign_support import artifacts, assert_same_sample, collection, reference
from sampleval.campaign import models as m
from sampleval.campaign.organise import (
    Design,
    add_person,
    create_campaign,
    export_sample,
    parse_grades,
)
from sampleval.campaign.server import ServerProcess
from sampleval.campaign.service import CampaignService
from sampleval.campaign.simulation import drive, oracle_assessors
from sampleval.campaign.store import Store
from sampleval.selection import Budget

GRADES = tuple(parse_grades("0,1,2"))


def key() -> str:
    return uuid.uuid4().hex


def open_items(url: str, qid: str) -> list[str]:
    """The docnos of topic ``qid``'s items (whatever their batch), in proposal order."""
    store = Store(url, migrate=False)
    with store.read() as session:
        found = list(session.scalars(select(m.Item.docno).join(m.Topic).where(
            m.Topic.qid == qid).order_by(m.Item.batch, m.Item.position)))
    store.close()
    return found


@contextmanager
def app(url: str, rejudge: bool = False, overlap: float = 0.0, method: str = "uniform"
        ) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    """A campaign (uniform, 6 documents on each of 4 topics) with ann and ben on topic 1,
    ann also on topic 2, served in process; yields the client and each one's headers."""
    from sampleval.campaign.app import create_app

    store = Store(url)
    create_campaign(store, Design("c1", method, Budget(6), depth=30, seed=2, grades=GRADES,
                                  overlap=overlap, rejudge=rejudge), collection().runs)
    tokens = {"ann": add_person(store, "c1", "ann", ["1", "2"])[0],
              "ben": add_person(store, "c1", "ben", ["1"])[0]}
    store.close()
    with TestClient(create_app(url, live=False), base_url="http://127.0.0.1:8000") as client:
        yield client, {n: {"Authorization": f"Bearer {t}"} for n, t in tokens.items()}


JUDGE = "/api/campaigns/c1/topics/{}/judgments"
NEXT = "/api/campaigns/c1/topics/{}/next"


def test_only_offered_documents_are_judged(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with app(url) as (client, who):
        ann, ben = who["ann"], who["ben"]
        mine = client.get(NEXT.format(1), headers=ann).json()["document"]["docno"]
        others = [d for d in open_items(url, "1") if d != mine]

        def judge(person: dict[str, str], docno: str, label: object = 1,
                  qid: str = "1", k: str | None = None) -> tuple[int, str]:
            answer = client.post(JUDGE.format(qid), headers=person,
                                 json={"docno": docno, "label": label, "key": k or key()})
            return answer.status_code, str(answer.json().get("detail", ""))

        # leased to a colleague; never offered
        status, why = judge(ben, mine)
        assert status == 409 and "leased to another assessor" in why
        status, why = judge(ann, others[0])
        assert status == 409 and "not offered to you" in why
        # labels: numbers of the scale only
        for bad in ("1", True, 0.5, 3, None):
            assert judge(ann, mine, bad)[0] == 422, bad
        first = key()
        assert judge(ann, mine, 1.0, k=first)[0] == 201
        assert judge(ann, mine, 1.0, k=first)[0] == 200  # a retry: the same judgment
        status, why = judge(ann, mine, 2)
        assert status == 409 and "judged" in why and "already" in why
        status, why = judge(ben, mine)
        assert status == 409 and "judged by another assessor" in why
        # after an undo, offered again
        undone = client.post("/api/campaigns/c1/topics/1/undo", headers=ann, json={})
        assert undone.status_code == 200 and undone.json()["next"]["document"]["docno"] == mine
        assert judge(ann, mine, 2)[0] == 201
        # a finished topic
        while (offer := client.get(NEXT.format(2), headers=ann).json())["status"] == "judge":
            assert judge(ann, offer["document"]["docno"], 0, qid="2")[0] == 201
        assert offer["status"] == "done"
        status, why = judge(ann, open_items(url, "2")[0], 1, qid="2")
        assert status == 409 and "judged" in why
    store = Store(url)
    with store.read() as session:
        labels = dict(session.execute(
            select(m.Item.docno, m.Judgment.label).join(m.Item)
            .where(m.Judgment.retracted_at.is_(None))).all())
    store.close()
    assert labels[mine] == 2.0 and len(labels) == 1 + 6


def test_a_finished_topic_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with app(url) as (client, who):
        while (offer := client.get(NEXT.format(1), headers=who["ann"]).json())[
                "status"] == "judge":
            client.post(JUDGE.format(1), headers=who["ann"], json={
                "docno": offer["document"]["docno"], "label": 0, "key": key()})
        answer = client.post(JUDGE.format(1), headers=who["ben"], json={
            "docno": open_items(url, "1")[0], "label": 1, "key": key()})
        assert answer.status_code == 409 and "is finished" in answer.json()["detail"]


def test_the_organiser_may_allow_rejudging(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with app(url, rejudge=True) as (client, who):
        ann, ben = who["ann"], who["ben"]
        docno = client.get(NEXT.format(1), headers=ann).json()["document"]["docno"]
        for label in (1, 2, 0):
            assert client.post(JUDGE.format(1), headers=ann, json={
                "docno": docno, "label": label, "key": key()}).status_code == 201
        # but still only one's own documents
        assert client.post(JUDGE.format(1), headers=ben, json={
            "docno": docno, "label": 1, "key": key()}).status_code == 409
    sample, _ = export_sample(Store(url), "c1")
    judged = sample.judged()
    assert judged[judged["doc_id"] == docno]["relevance"].tolist() == [0.0]  # the latest


def test_overlap_documents_are_offered_to_every_assessor(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with app(url, overlap=1.0) as (client, who):
        judged: dict[str, list[str]] = {"ann": [], "ben": []}
        for name in ("ann", "ben"):
            while (offer := client.get(NEXT.format(1), headers=who[name]).json())[
                    "status"] == "judge":
                docno = offer["document"]["docno"]
                assert client.post(JUDGE.format(1), headers=who[name], json={
                    "docno": docno, "label": 1, "key": key()}).status_code == 201
                judged[name].append(docno)
        assert sorted(judged["ann"]) == sorted(judged["ben"]) and len(judged["ann"]) == 6


# -- one commit per judgment ----------------------------------------------------------------

@pytest.mark.parametrize("method", ["uniform", "mtf"])
def test_a_judgment_is_one_commit_with_its_batch_and_next_lease(tmp_path: Path,
                                                                method: str) -> None:
    """A judgment, the batch it completes (mtf: every judgment) and the lease of the
    document offered next are written in one transaction: one commit, one flush to disk,
    per judgment; the lease is stored when the answer offering its document arrives."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    url = f"sqlite:///{tmp_path}/s.db"
    commits: list[int] = []

    def count(_connection: object) -> None:
        commits.append(1)

    with app(url, method=method) as (client, who):
        ann = who["ann"]
        offer = client.get(NEXT.format(1), headers=ann).json()
        event.listen(Engine, "commit", count)
        try:
            per_judgment = []
            while offer["status"] == "judge":
                commits.clear()
                answer = client.post(JUDGE.format(1), headers=ann, json={
                    "docno": offer["document"]["docno"], "label": 1, "key": key()})
                assert answer.status_code == 201
                per_judgment.append(len(commits))
                offer = answer.json()["next"]
                if offer["status"] == "judge":  # its lease is stored already
                    store = Store(url, migrate=False)
                    with store.read() as session:
                        leased = session.scalar(select(func.count()).select_from(m.Lease)
                                                .join(m.Item).join(m.Person).where(
                            m.Item.docno == offer["document"]["docno"],
                            m.Person.name == "ann"))
                    store.close()
                    assert leased == 1
        finally:
            event.remove(Engine, "commit", count)
    assert offer["status"] == "done" and len(per_judgment) == 6
    assert per_judgment == [1] * 6


# -- leases across a restart ----------------------------------------------------------------

@pytest.mark.slow
def test_a_restart_hands_no_leased_document_to_a_second_assessor(store_url: str) -> None:
    """Two assessors per topic; the server is killed between one's offer and its judgment,
    then the other asks for a document: never the leased one. The campaign then runs to its
    end: no document judged twice, the sample the simulation's."""
    c = collection()
    store = Store(store_url)
    create_campaign(store, Design("two", "uniform", Budget(8), depth=30, seed=4,
                                  grades=GRADES), c.runs)
    team = oracle_assessors(store, "two", 8)  # 4 topics: two assessors each
    store.close()
    kind = store_url.split(":")[0].split("+")[0]
    log = artifacts() / f"leases-{kind}.log"
    log.unlink(missing_ok=True)
    server = ServerProcess(store_url, refresh=60.0, log=log).start()

    def call(token: str, path: str, body: dict[str, object] | None = None
             ) -> dict[str, object]:
        answer = httpx.request("GET" if body is None else "POST", server.url + path, json=body,
                               headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert answer.status_code < 300, answer.text
        found: dict[str, object] = answer.json()
        return found

    try:
        for restart in range(1):  # one: a server that forgets its leases fails it
            first, second = team[restart], team[restart + 4]  # the same topic
            assert first.topics == second.topics
            path = f"/api/campaigns/two/topics/{first.topics[0]}"
            offered = call(first.token, f"{path}/next")
            server.kill()
            server = ServerProcess(store_url, port=server.port, refresh=60.0, log=log).start()
            other = call(second.token, f"{path}/next")
            docno = str(offered["document"]["docno"])  # type: ignore[index]
            assert other["status"] != "judge" or other["document"]["docno"] != docno  # type: ignore[index]
            label = c.oracle(first.topics[0], [docno])[docno]
            call(first.token, f"{path}/judgments", {"docno": docno, "label": label,
                                                    "key": key()})
        drive(server.url, "two", team, c.oracle, deadline=300)
    finally:
        server.stop()
    store = Store(store_url)
    with store.read() as session:
        per_item = session.execute(select(func.count()).select_from(m.Judgment)
                                   .group_by(m.Judgment.item_id)).scalars().all()
    exported, _ = export_sample(store, "two")
    store.close()
    assert len(per_item) == 4 * 8 and max(per_item) == 1  # 0 duplicate judgments
    assert_same_sample(exported, reference(c.runs, "uniform", Budget(8), 30, 4, c.oracle))


def test_leases_outlive_the_service(tmp_path: Path) -> None:
    """The same in process, many times: a new service on the store (a restart) keeps every
    lease, so the second assessor of a topic is never handed the first one's document."""
    url = f"sqlite:///{tmp_path}/s.db"
    store = Store(url)
    create_campaign(store, Design("c1", "mtf", Budget(10), depth=30, seed=3, grades=GRADES),
                    collection().runs)
    ann = add_person(store, "c1", "ann", ["1"])[0]
    ben = add_person(store, "c1", "ben", ["1"])[0]
    oracle = collection().oracle
    service = CampaignService(store)
    for _ in range(10):
        a = service.person_by_token(ann)
        offer = service.next_document(a, "1")
        assert offer.status == "judge"
        service.close()
        service = CampaignService(store)  # restart
        b = service.person_by_token(ben)
        other = service.next_document(b, "1")
        assert other.docno != offer.docno  # "wait": mtf proposes one at a time
        service.judge(a, "1", offer.docno, oracle("1", [offer.docno])[offer.docno], None,
                      key())
    service.close()
    with store.read() as session:
        assert session.scalar(select(func.count(func.distinct(m.Judgment.item_id)))) == \
            session.scalar(select(func.count(m.Judgment.id))) == 10
    store.close()


# -- undo against judge -------------------------------------------------------------------

def test_an_undo_and_a_judgment_on_one_topic_serialise(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ann undoes her judgment of an overlap document while Ben judges it: whatever the
    order, the server's record of who judged it is the store's (Ben). The undo's write is
    held open a moment after it commits, the window in which a judgment landed before."""
    url = f"sqlite:///{tmp_path}/s.db"
    store = Store(url)
    create_campaign(store, Design("c1", "uniform", Budget(8), depth=30, seed=2, grades=GRADES,
                                  overlap=1.0), collection().runs)
    ann = add_person(store, "c1", "ann", ["1"])[0]
    ben = add_person(store, "c1", "ben", ["1"])[0]
    service = CampaignService(store)
    a, b = service.person_by_token(ann), service.person_by_token(ben)
    state = service.runtime(a.campaign_id).topics["1"]
    keys = {}
    while (offer := service.next_document(a, "1")).status == "judge":
        assert offer.docno is not None
        keys[offer.docno] = key()
        service.judge(a, "1", offer.docno, 1.0, None, keys[offer.docno])
    write = Store.write

    @contextmanager
    def slow_write(self: Store) -> Iterator[object]:
        with write(self) as session:
            yield session
        time.sleep(0.02)

    monkeypatch.setattr(Store, "write", slow_write)
    wrong = []
    for _ in keys:
        docno = service.next_document(b, "1").docno  # overlap: offered to Ben too
        assert docno is not None
        barrier = threading.Barrier(2)

        def undo(docno: str = docno, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            service.undo(a, "1", keys[docno])

        def judge(docno: str = docno, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            time.sleep(0.005)  # once the undo has begun its write
            service.judge(b, "1", docno, 0.0, None, key())

        threads = [threading.Thread(target=undo), threading.Thread(target=judge)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with store.read() as session:
            standing = set(session.scalars(select(m.Judgment.assessor_id).join(m.Item).where(
                m.Item.docno == docno, m.Judgment.retracted_at.is_(None))))
        assert standing == {b.id}
        wrong.append(state.judges.get(docno, set()) != standing)
    assert len(wrong) == 8
    assert not any(wrong), f"{sum(wrong)} of {len(wrong)} undos lost a judgment in memory"
    service.close()
    store.close()


# -- migration 0003 ---------------------------------------------------------------------------

TABLES_0002 = ("campaigns", "runs", "topics", "documents", "assessors", "assignments",
               "items", "judgments", "selector_states", "estimates", "sessions")


def migrate(store: Store, revision: str) -> None:
    """The store migrated to ``revision`` the way the server migrates it
    (:func:`sampleval.campaign.schema.migrate`: SQLite's foreign keys off, a backup first)."""
    from sampleval.campaign.schema import migrate as run

    run(store.engine, revision)


def rows(store: Store, tables: tuple[str, ...]) -> dict[str, int]:
    from sqlalchemy import text

    with store.engine.connect() as connection:
        return {t: int(connection.execute(text(f"SELECT count(*) FROM {t}")).scalar_one())
                for t in tables}


def test_migration_0003_keeps_every_row_both_ways(store_url: str) -> None:
    """A campaign half judged (mtf: its topics' states saved apart; a lease open) goes down
    to 0002 and up again: every row of 0002's tables kept both ways, 0002's whole selector
    state holding the topics' parts, and the campaign ends with the simulation's sample."""
    from sqlalchemy import inspect

    from sampleval.campaign.organise import decode_state

    c = collection()
    store = Store(store_url)
    create_campaign(store, Design("c1", "mtf", Budget(10), depth=30, seed=3, grades=GRADES),
                    c.runs)
    ann = add_person(store, "c1", "ann", ["1", "2"])[0]
    ben = add_person(store, "c1", "ben", ["3", "4"])[0]
    service = CampaignService(store)
    a, b = service.person_by_token(ann), service.person_by_token(ben)
    for qid in ("1", "2"):
        for _ in range(5):
            offer = service.next_document(a, qid)
            assert offer.docno is not None
            service.judge(a, qid, offer.docno, c.oracle(qid, [offer.docno])[offer.docno],
                          None, key())
    leased = service.next_document(b, "3").docno
    whole = service.runtime(a.campaign_id).selector.state()
    service.close()
    before = rows(store, TABLES_0002)
    # the lease open (ben's): the judged documents' leases ended with their judgments
    assert before["judgments"] == 10 and rows(store, ("leases", "topic_states")) == {
        "leases": 1, "topic_states": 2}
    migrate(store, "0002")
    tables = set(inspect(store.engine).get_table_names())
    assert not tables & {"leases", "topic_states"}
    assert "rejudge" not in {col["name"] for col in inspect(store.engine).get_columns(
        "campaigns")}
    assert rows(store, TABLES_0002) == before
    with store.read() as session:
        saved = session.scalar(select(m.SelectorState.state))
    assert decode_state(saved) == whole  # what the 0002 code restores
    migrate(store, "head")
    assert rows(store, TABLES_0002) == before
    service = CampaignService(store)
    # 0002 has no leases: the lease went, but the open document is still the one to judge
    assert service.next_document(b, "3").docno == leased
    for token in (ann, ben):
        person = service.person_by_token(token)
        for topic in service.topics_of(person):
            while (offer := service.next_document(person, topic.qid)).status == "judge":
                assert offer.docno is not None
                service.judge(person, topic.qid, offer.docno,
                              c.oracle(topic.qid, [offer.docno])[offer.docno], None, key())
    service.close()
    exported, _ = export_sample(store, "c1")
    store.close()
    assert_same_sample(exported, reference(c.runs, "mtf", Budget(10), 30, 3, c.oracle))


# -- the labels the selector sees -----------------------------------------------------------

def test_a_batch_is_observed_with_the_stored_labels_read_from_memory(tmp_path: Path) -> None:
    """The judgment completing a batch hands the selector each item's latest non-retracted
    label without reading the batch's judgments back from the store (before: one query per
    batch on the request's path), and those labels are the store's: after a colleague's
    later judgment (the latest counts) and after their undo (the earlier one counts again)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    url = f"sqlite:///{tmp_path}/s.db"
    store = Store(url)
    create_campaign(store, Design("c1", "uniform", Budget(8), depth=30, seed=2, grades=GRADES,
                                  overlap=1.0), collection().runs)
    ann = add_person(store, "c1", "ann", ["1"])[0]
    ben = add_person(store, "c1", "ben", ["1"])[0]
    service = CampaignService(store)
    a, b = service.person_by_token(ann), service.person_by_token(ben)
    assert a is not None and b is not None
    batch = list(service.runtime(a.campaign_id).topics["1"].open)
    assert len(batch) == 8  # one batch: observed once all eight are judged
    for docno in batch[:7]:
        assert service.next_document(a, "1").docno == docno
        service.judge(a, "1", docno, 1.0, None, key())
    assert service.next_document(a, "1").docno == batch[7]  # leased to her: not ben's
    ben_keys = {}
    for _ in range(2):  # overlap: ann's documents are offered to ben too
        docno = service.next_document(b, "1").docno
        assert docno in batch[:7]
        ben_keys[docno] = key()
        service.judge(b, "1", docno, 2.0, None, ben_keys[docno])
    kept, undone = ben_keys
    service.undo(b, "1", ben_keys[undone])
    statements: list[str] = []

    def record(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(Engine, "before_cursor_execute", record)
    try:
        service.judge(a, "1", batch[7], 0.0, None, key())
    finally:
        event.remove(Engine, "before_cursor_execute", record)
    service.close()
    read_back = [s for s in statements if s.startswith("SELECT judgments.item_id, "
                                                      "judgments.label")]
    assert not read_back, read_back
    with store.read() as session:
        observed = dict(session.execute(select(m.Item.docno, m.Item.label).join(m.Topic)
                                        .where(m.Topic.qid == "1", m.Item.batch == 1)).all())
    store.close()
    assert observed == {**dict.fromkeys(batch[:7], 1.0), kept: 2.0, batch[7]: 0.0}
