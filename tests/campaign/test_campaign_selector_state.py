"""The selector state a campaign saves with each batch (issue 30, item 8): a method whose
state splits by topic (``Selector.splits_state``: mtf, mab, active, dynamic, importance)
saves only the observed topic's part, so a batch of one document does not rewrite every
topic's state; the saved parts put together are ``state()``, and a restarted server
continues to the simulation's sample."""

from __future__ import annotations

import threading
import time
import uuid

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import func, select

from campaign_support import assert_same_sample, collection, reference
from sampleval.campaign import models as m
from sampleval.campaign.organise import (
    Design,
    add_person,
    create_campaign,
    export_sample,
    parse_grades,
)
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.core.pool import Pool
from sampleval.selection import METHODS, Budget

SPLIT = [n for n in METHODS.names() if METHODS[n].splits_state]


def test_the_methods_that_split_their_state() -> None:
    assert {"mtf", "mab", "active", "dynamic", "importance"} <= set(SPLIT)


@pytest.mark.parametrize("method", SPLIT)
def test_a_topic_state_is_its_part_of_the_state(method: str) -> None:
    """``topic_state(t)`` is ``state()["topics"][t]``, and the state first saved with every
    topic's latest part put in restores the selector that goes on as the uninterrupted one."""
    c = collection()
    pool = Pool.from_runs(c.runs, depth=30)
    selector = METHODS[method](pool, Budget(10), np.random.default_rng(4))
    first = {t: selector.propose(t, selector.batch_size(t)) for t in pool.topics}
    saved = selector.state()
    parts = {}
    for topic in pool.topics[:2]:
        proposed = first[topic]
        for _ in range(4):
            selector.observe(topic, c.oracle(topic, proposed))
            proposed = selector.propose(topic, selector.batch_size(topic))
            parts[topic] = selector.topic_state(topic)
    whole = selector.state()
    assert all(whole["topics"][t] == part for t, part in parts.items())
    assert {k: v for k, v in whole.items() if k != "topics"} == {
        k: v for k, v in saved.items() if k != "topics"}  # the rest never changes
    restored = METHODS[method].restore(pool, {**saved, "topics": {**saved["topics"], **parts}})
    assert restored.state() == whole


@pytest.mark.parametrize("method", ["mtf", "mab", "active", "dynamic", "importance"])
def test_a_batch_saves_its_topic_only(store_url: str, method: str) -> None:
    c = collection()
    store = Store(store_url)
    create_campaign(store, Design("c1", method, Budget(10), depth=30, seed=6,
                                  grades=tuple(parse_grades("0,1,2"))), c.runs)
    token, topics, _ = add_person(store, "c1", "ann")
    with store.read() as session:
        created = session.scalar(select(m.SelectorState.state))
    service = CampaignService(store)
    person = service.person_by_token(token)
    assert person is not None

    def judge(qid: str, count: int) -> None:
        for _ in range(count):
            offer = service.next_document(person, qid)
            if offer.status != "judge":
                return
            assert offer.docno is not None
            service.judge(person, qid, offer.docno,
                          c.oracle(qid, [offer.docno])[offer.docno], None, uuid.uuid4().hex)

    judge(topics[0], 100)  # the whole topic
    with store.read() as session:
        version, kept = session.execute(select(m.SelectorState.version,
                                               m.SelectorState.state)).one()
        parts = session.scalar(select(func.count()).select_from(m.TopicSelectorState))
        batches = session.scalar(select(func.count(func.distinct(m.Item.batch))).join(
            m.Topic).where(m.Topic.qid == topics[0], m.Item.label.is_not(None)))
    assert batches >= 1
    # one topic's part, saved with each of its batches; the whole state as created
    assert version == 1 + batches and kept == created and parts == 1
    assert service.saved_state(person.campaign_id) == service.runtime(
        person.campaign_id).selector.state()
    judge(topics[1], 3)
    service.close()
    service = CampaignService(store)  # a restart: the state put together from its parts
    for qid in topics:
        judge(qid, 100)
    service.close()
    exported, _ = export_sample(store, "c1")
    store.close()
    assert_same_sample(exported, reference(c.runs, method, Budget(10), 30, 6, c.oracle))


@pytest.mark.parametrize("method,alone", [("mtf", True), ("dynamic", True),
                                          ("strata", False)])
def test_a_slow_selector_step_holds_up_other_topics_only_when_the_state_is_shared(
        tmp_path, method: str, alone: bool) -> None:
    """While one topic's selector proposes (``dynamic``'s classifier fit can take tens of
    milliseconds), a judgment that completes another topic's batch goes through when the
    method's state splits by topic (the campaign-wide lock is not held for the fit), and
    waits for it when the state is shared (the lock guards the selector)."""
    c = collection()
    store = Store(str(tmp_path / "c.db"))
    create_campaign(store, Design("c1", method, Budget(6), depth=30, seed=6,
                                  grades=tuple(parse_grades("0,1,2"))), c.runs)
    first: list[float] = []
    second: list[float] = []
    token_a, topics, _ = add_person(store, "c1", "ann")
    service = CampaignService(store)
    try:
        person = service.person_by_token(token_a)
        assert person is not None
        slow, fast = topics[0], topics[1]
        runtime = service.runtime(person.campaign_id)

        def complete_batch(qid: str) -> None:
            """Judge ``qid``'s open batch but its last document."""
            while True:
                offer = service.next_document(person, qid)
                assert offer.status == "judge" and offer.docno is not None
                state = runtime.topics[qid]
                if sum(1 for d in state.open if not state.judges.get(d)) == 1:
                    return
                service.judge(person, qid, offer.docno, c.oracle(qid, [offer.docno])[
                    offer.docno], 1.0, uuid.uuid4().hex)

        complete_batch(slow)
        complete_batch(fast)
        batches = {t: runtime.topics[t].batch for t in (slow, fast)}
        proposing, other_done = threading.Event(), threading.Event()
        saw: list[bool] = []
        propose = runtime.selector.propose

        def slow_propose(topic: str, n: int) -> list[str]:
            if topic == slow and not saw:
                proposing.set()
                saw.append(other_done.wait(3.0))  # the other topic's batch meanwhile
            return propose(topic, n)

        runtime.selector.propose = slow_propose  # type: ignore[method-assign]

        def last(qid: str, out: list[float]) -> None:
            offer = service.next_document(person, qid)
            assert offer.docno is not None
            service.judge(person, qid, offer.docno, c.oracle(qid, [offer.docno])[
                offer.docno], 1.0, uuid.uuid4().hex)
            out.append(time.monotonic())

        a = threading.Thread(target=last, args=(slow, first))
        a.start()
        assert proposing.wait(10)
        def other() -> None:
            last(fast, second)
            other_done.set()

        b = threading.Thread(target=other)
        b.start()
        a.join(10)
        b.join(10)
        assert first and second
        assert saw == [alone]
        assert all(runtime.topics[t].batch == b + 1 for t, b in batches.items())
    finally:
        service.close()
        store.close()
