"""The campaign store and service layer on SQLite and on a real PostgreSQL server: the
migrations, campaigns judged through the service giving the very sample of an
uninterrupted simulation, idempotent judgments, recovery after a crash between a
judgment's commit and its batch, concurrent assessors, re-judgments and the label rules."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import func, select

from campaign_support import assert_same_sample, collection, reference
from sampleval.campaign import models as m
from sampleval.campaign.organise import (
    Design,
    add_person,
    campaign_status,
    create_campaign,
    export_sample,
    judgment_log,
    parse_grades,
)
from sampleval.campaign.service import (
    CampaignService,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Person,
)
from sampleval.campaign.store import Store
from sampleval.errors import UsageError
from sampleval.selection import METHODS, Budget

GRADES = tuple(parse_grades("0,1,2"))


def new_campaign(url: str, method: str = "active", budget: int = 12, seed: int = 7,
                 overlap: float = 0.0, rejudge: bool = False, **params: str) -> Store:
    store = Store(url)
    create_campaign(store, Design("c1", method, Budget(budget), params, depth=30, seed=seed,
                                  grades=GRADES, overlap=overlap, rejudge=rejudge),
                    collection().runs)
    return store


def judge_all(service: CampaignService, token: str, topics: list[str],
              label_of=None, stop_after: int | None = None) -> int:
    """Judge every offered document of ``topics`` with the oracle; return how many."""
    oracle = collection().oracle
    person = service.person_by_token(token)
    assert person is not None
    done = 0
    for qid in topics:
        while stop_after is None or done < stop_after:
            offer = service.next_document(person, qid)
            if offer.status != "judge":
                assert offer.status == "done"
                break
            label = (label_of or (lambda q, d: oracle(q, [d])[d]))(qid, offer.docno)
            service.judge(person, qid, offer.docno, label, 2.0, uuid.uuid4().hex)
            done += 1
    return done


def test_migrations_match_the_models(store_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    store = Store(store_url)
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), m.Base.metadata)
    store.close()
    assert differences == []


def test_a_campaign_judged_through_the_service_is_the_simulation(store_url: str) -> None:
    store = new_campaign(store_url)
    token, topics, _ = add_person(store, "c1", "alice")
    service = CampaignService(store)
    assert judge_all(service, token, topics) == 4 * 12
    exported, fallback = export_sample(store, "c1")
    c = collection()
    assert fallback == 0
    assert exported.meta["seed"] == 7 and exported.meta["label"] == "latest"
    assert_same_sample(exported, reference(c.runs, "active", Budget(12), 30, 7, c.oracle))
    status = campaign_status(store, "c1")
    assert status.judged == status.budget == 48 and all(t.done for t in status.topics)
    service.close()
    store.close()


QUICKER = {"dynamic": {"strategy": "D50"}}  # parameters that shorten a method's campaign


@pytest.mark.parametrize("method", [n for n in METHODS.names()  # audit: needs machine labels
                                    if n != "active" and not METHODS[n].needs_predictions])
def test_every_method_follows_the_simulation(tmp_path, method: str) -> None:
    params = QUICKER.get(method, {})
    store = new_campaign(f"sqlite:///{tmp_path}/s.db", method, 10, 5, **params)
    token, topics, _ = add_person(store, "c1", "alice")
    service = CampaignService(store)
    judge_all(service, token, topics)
    c = collection()
    assert_same_sample(export_sample(store, "c1")[0],
                       reference(c.runs, method, Budget(10), 30, 5, c.oracle, **params))
    service.close()
    store.close()


def test_a_budget_in_draws_is_counted_in_draws(tmp_path) -> None:
    """importance counts its budget in draws (Selector.budget_unit): a document drawn twice
    is judged once, so its topics end with fewer judgments than their budgets, and the
    progress says so (the bars end full)."""
    from sampleval.campaign.api import topic_out

    store = new_campaign(f"sqlite:///{tmp_path}/s.db", "importance", 30, 5)
    token, topics, _ = add_person(store, "c1", "alice")
    service = CampaignService(store)
    person = service.person_by_token(token)
    state = service.runtime(person.campaign_id).topics[topics[0]]
    judge_all(service, token, topics[:1], stop_after=2)
    early = topic_out(state)
    assert (early.budget_unit, early.budget, early.goal, early.judged) == ("draws", 30, 30, 2)
    assert early.progress == "2 judged (budget: 30 draws)" and not early.done
    judge_all(service, token, topics)
    status = campaign_status(store, "c1")
    exported = export_sample(store, "c1")[0]
    assert status.campaign.budget_unit == "draws" and status.done
    assert status.budget == 4 * 30
    assert status.judged == status.goal == len(exported.judged()) < status.budget
    assert status.progress() == f"{status.judged} judged (done; budget: 120 draws)"
    assert (exported.draws.groupby("query_id").size() == 30).all()  # every draw made
    for t in status.topics:
        assert t.goal == t.judged <= t.budget
    done = topic_out(state)
    assert done.done and done.goal == done.judged < 30
    c = collection()
    assert_same_sample(exported, reference(c.runs, "importance", Budget(30), 30, 5, c.oracle))
    service.close()
    store.close()


def test_the_selector_state_is_saved_with_every_batch(tmp_path) -> None:
    store = new_campaign(f"sqlite:///{tmp_path}/s.db")
    token, topics, _ = add_person(store, "c1", "alice")
    service = CampaignService(store)
    person = service.person_by_token(token)
    runtime = service.runtime(person.campaign_id)
    state = runtime.topics[topics[0]]
    for version in (1, 2, 3):  # active's rounds on the first topic: a batch each
        assert runtime.version == version
        batch = list(state.open)
        assert 1 <= len(batch) <= 4  # int(12 / 3) draws, a document drawn twice once
        for _ in batch:
            assert runtime.version == version  # the selector moves only on a whole batch
            offer = service.next_document(person, topics[0])
            assert offer.docno in batch
            service.judge(person, topics[0], offer.docno, 0.0, None, uuid.uuid4().hex)
        assert runtime.version == version + 1 and state.open != batch
    saved = service.saved_state(person.campaign_id)
    assert saved == runtime.selector.state()  # the RNG included
    assert saved["topics"][topics[0]]["rng"] == runtime.selector.state()["topics"][
        topics[0]]["rng"]
    service.close()
    store.close()


def test_a_judgment_is_committed_before_it_is_acknowledged(store_url: str) -> None:
    """The store's durable settings (SQLite: WAL, synchronous=FULL; PostgreSQL:
    synchronous_commit=on), and each acknowledged judgment visible at once to another
    connection of another engine (another process would see it the same way)."""
    store = new_campaign(store_url)
    token, topics, _ = add_person(store, "c1", "alice")
    service = CampaignService(store)
    person = service.person_by_token(token)
    other = Store(store_url, migrate=False)
    with other.engine.connect() as connection:
        if other.is_sqlite:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        else:
            assert connection.exec_driver_sql("SHOW synchronous_commit").scalar() == "on"
    for _ in range(5):
        offer = service.next_document(person, topics[0])
        key = uuid.uuid4().hex
        service.judge(person, topics[0], offer.docno, 1.0, 3.0, key)
        with other.read() as session:
            assert session.scalar(select(func.count()).select_from(m.Judgment)
                                  .where(m.Judgment.key == key)) == 1
    other.close()
    service.close()
    store.close()


def test_a_retried_judgment_is_stored_once(store_url: str) -> None:
    store = new_campaign(store_url, "uniform")
    token, topics, _ = add_person(store, "c1", "alice")
    service = CampaignService(store)
    person = service.person_by_token(token)
    offer = service.next_document(person, topics[0])
    key = uuid.uuid4().hex
    first = service.judge(person, topics[0], offer.docno, 1.0, 3.0, key)
    again = service.judge(person, topics[0], offer.docno, 1.0, 3.0, key)
    assert not first.replayed and again.replayed and again.key == key
    with pytest.raises(Conflict):
        service.judge(person, topics[0], offer.docno, 2.0, 3.0, key)
    racing = uuid.uuid4().hex
    offer = service.next_document(person, topics[0])
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: service.judge(person, topics[0], offer.docno, 0.0,
                                                         1.0, racing), range(8)))
    assert sum(not r.replayed for r in results) == 1
    with store.read() as session:
        counts = dict(session.execute(select(m.Judgment.key, func.count()).group_by(
            m.Judgment.key)).all())
    assert counts == {key: 1, racing: 1}
    # a key names a judgment of its document (revision 0008): used again for another
    # document, it is that document's judgment, not a replay of the first
    offer = service.next_document(person, topics[0])
    assert not service.judge(person, topics[0], offer.docno, 0.0, 1.0, key).replayed
    with store.read() as session:
        assert session.scalar(select(func.count()).select_from(m.Judgment)
                              .where(m.Judgment.key == key)) == 2
    service.close()
    store.close()


def test_bad_judgments_are_refused(tmp_path) -> None:
    store = new_campaign(f"sqlite:///{tmp_path}/s.db", "uniform")
    alice, _, _ = add_person(store, "c1", "alice", ["1"])
    organiser, _, _ = add_person(store, "c1", "boss", role="organiser")
    service = CampaignService(store)
    person = service.person_by_token(alice)
    offer = service.next_document(person, "1")
    with pytest.raises(Invalid):
        service.judge(person, "1", offer.docno, 0.5, None, uuid.uuid4().hex)
    with pytest.raises(NotFound):
        service.judge(person, "1", "not-in-the-pool", 1.0, None, uuid.uuid4().hex)
    with pytest.raises(Forbidden):
        service.next_document(person, "2")
    with pytest.raises(NotFound):
        service.next_document(person, "no-such-topic")
    with pytest.raises(Forbidden):
        service.next_document(service.person_by_token(organiser), "1")
    assert service.person_by_token("wrong") is None
    with pytest.raises(UsageError, match="no topic"):
        add_person(store, "c1", "bob", ["99"])
    with pytest.raises(UsageError, match="exists already"):
        new_campaign(f"sqlite:///{tmp_path}/s.db")
    service.close()
    store.close()


def complete_unobserved(store: Store, monkeypatch: pytest.MonkeyPatch
                        ) -> tuple[str, list[str], Person]:
    """Alice judges active's first round on topic 1 without the batch being observed, then
    the service "crashes": her token, her topics and her person."""
    token, topics, _ = add_person(store, "c1", "alice")
    crashing = CampaignService(store)
    monkeypatch.setattr(CampaignService, "_batch_labels",
                        lambda self, state, pending=None: None)
    person = crashing.person_by_token(token)
    assert person is not None
    for _ in crashing.runtime(person.campaign_id).topics[topics[0]].open:
        offer = crashing.next_document(person, topics[0])
        assert offer.status == "judge" and offer.docno is not None
        crashing.judge(person, topics[0], offer.docno,
                       collection().oracle(topics[0], [offer.docno])[offer.docno], None,
                       uuid.uuid4().hex)
    crashing.close()
    monkeypatch.undo()
    return token, topics, person


def test_a_crash_between_a_judgment_and_its_batch_loses_nothing(store_url: str,
                                                                 monkeypatch) -> None:
    """The judgment completing a batch is committed without the batch's observation (as a
    server before the two shared a transaction could leave it), then the process dies: the
    next start observes it, and the campaign ends as the simulation."""
    store = new_campaign(store_url)
    token, topics, person = complete_unobserved(store, monkeypatch)
    restarted = CampaignService(store)
    restarted.load_all()
    assert restarted.runtime(person.campaign_id).version == 2  # observed at start
    judge_all(restarted, token, topics)
    c = collection()
    assert_same_sample(export_sample(store, "c1")[0],
                       reference(c.runs, "active", Budget(12), 30, 7, c.oracle))
    restarted.close()
    store.close()


def test_a_batch_failing_at_start_raises_instead_of_hanging(tmp_path: Path,
                                                            monkeypatch) -> None:
    """A batch left complete (as above) whose write fails when the next start observes it:
    loading the campaign raises (the server's start fails and says why) instead of waiting
    forever on the lock it holds."""
    store = new_campaign(f"sqlite:///{tmp_path}/s.db")
    complete_unobserved(store, monkeypatch)

    def broken(session: object, batches: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(CampaignService, "_store_batches", staticmethod(broken))
    restarted = CampaignService(store)
    raised: list[str] = []

    def start() -> None:
        try:
            restarted.load_all()
        except RuntimeError as exc:
            raised.append(str(exc))

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    thread.join(60)
    assert raised == ["disk full"], "the start hung" if thread.is_alive() else raised
    restarted.close()
    store.close()


def test_concurrent_assessors_give_the_simulated_sample(store_url: str) -> None:
    """Eight assessors at once, two per topic (shared topics: leases keep them apart)."""
    store = new_campaign(store_url, budget=15)
    tokens = [add_person(store, "c1", f"a{i}", [str(1 + i % 4)])[0] for i in range(8)]
    service = CampaignService(store)
    oracle = collection().oracle
    errors: list[BaseException] = []

    def work(token: str) -> None:
        try:
            person = service.person_by_token(token)
            qid = service.topics_of(person)[0].qid
            while True:
                offer = service.next_document(person, qid)
                if offer.status == "done":
                    return
                if offer.status == "wait":
                    threading.Event().wait(0.005)
                    continue
                service.judge(person, qid, offer.docno, oracle(qid, [offer.docno])[
                    offer.docno], 1.0, uuid.uuid4().hex)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    c = collection()
    got = export_sample(store, "c1")[0]
    assert_same_sample(got, reference(c.runs, "active", Budget(15), 30, 7, c.oracle))
    with store.read() as session:
        per_item = session.execute(select(func.count()).select_from(m.Judgment).group_by(
            m.Judgment.item_id)).scalars().all()
    assert len(per_item) == 60 and max(per_item) == 1  # leases keep them apart
    service.close()
    store.close()


def test_rejudgments_and_disagreements_are_kept_and_counted_by_the_label_rule(
        store_url: str) -> None:
    store = new_campaign(store_url, "uniform", budget=6, overlap=1.0, rejudge=True)
    ann, _, _ = add_person(store, "c1", "ann", ["1"])
    ben, _, _ = add_person(store, "c1", "ben", ["1"])
    cat, _, _ = add_person(store, "c1", "cat", ["1"])
    service = CampaignService(store)
    judged = {name: {} for name in ("ann", "ben", "cat")}
    grades = {"ann": 2.0, "ben": 1.0, "cat": 1.0}
    for name, token in (("ann", ann), ("ben", ben), ("cat", cat)):
        person = service.person_by_token(token)
        while (offer := service.next_document(person, "1")).status == "judge":
            service.judge(person, "1", offer.docno, grades[name], 1.0, uuid.uuid4().hex)
            judged[name][offer.docno] = grades[name]
    assert set(judged["ann"]) == set(judged["ben"]) == set(judged["cat"])  # overlap 1
    docs = sorted(judged["ann"])
    person = service.person_by_token(cat)
    service.judge(person, "1", docs[0], 0.0, 1.0, uuid.uuid4().hex)  # cat changes her mind
    undone, again = service.undo(person, "1")  # ... and takes it back
    assert undone.docno == docs[0] and again.docno == docs[0]
    service.judge(person, "1", docs[1], 2.0, 1.0, uuid.uuid4().hex)  # a re-judgment

    def labels(rule: str) -> dict[str, float]:
        sample, _ = export_sample(store, "c1", rule)
        frame = sample.judged()
        return dict(zip(frame[frame["query_id"] == "1"]["doc_id"],
                        frame[frame["query_id"] == "1"]["relevance"], strict=True))

    latest = labels("latest")
    assert latest[docs[0]] == 1.0  # cat's undone 0 does not count: her 1 came last
    assert latest[docs[1]] == 2.0 and latest[docs[2]] == 1.0
    majority = labels("majority")
    assert majority[docs[0]] == 1.0 and majority[docs[2]] == 1.0
    assert majority[docs[1]] == 2.0  # ann 2, ben 1, cat now 2
    mean = labels("mean")
    assert mean[docs[2]] == pytest.approx(4 / 3) and mean[docs[1]] == pytest.approx(5 / 3)
    assert set(labels("ann").values()) == {2.0}
    log = judgment_log(store, "c1")
    assert len(log) == 3 * 6 + 2 and sum(j["retracted_at"] is not None for j in log) == 1
    assert {j["assessor"] for j in log} == {"ann", "ben", "cat"}
    service.close()
    store.close()


def test_tokens_are_replaced_not_kept(tmp_path) -> None:
    store = new_campaign(f"sqlite:///{tmp_path}/s.db", "uniform")
    old, _, new = add_person(store, "c1", "alice", ["1"])
    fresh, topics, again = add_person(store, "c1", "alice", ["2"])
    assert new and not again and topics == ["1", "2"]
    service = CampaignService(store)
    assert service.person_by_token(old) is None
    assert service.person_by_token(fresh).name == "alice"
    with store.read() as session:
        hashes = session.scalars(select(m.Person.token_hash)).all()
    assert fresh not in hashes and all(len(h) == 64 for h in hashes)
    service.close()
    store.close()


def test_grades_and_names_are_checked() -> None:
    assert [g.value for g in parse_grades("0:no, 1:yes ,2")] == [0.0, 1.0, 2.0]
    assert parse_grades("0:not relevant,1:relevant")[0].label == "not relevant"
    for bad in ("1", "0,0", "0,x", "0,nan", ",".join(map(str, range(11)))):
        with pytest.raises(UsageError):
            parse_grades(bad)
    with pytest.raises(UsageError, match="campaign name"):
        create_campaign(Store("sqlite://"), Design("bad name", "uniform", Budget(1)),
                        collection().runs)
