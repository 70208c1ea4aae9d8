"""The selector state a campaign saves with each batch (issue 30, item 8): a method whose
state splits by topic (``Selector.splits_state``: mtf, mab, active, dynamic, importance)
saves only the observed topic's part, so a batch of one document does not rewrite every
topic's state; the saved parts put together are ``state()``, and a restarted server
continues to the simulation's sample."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

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
    decode_state,
    encode_state,
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


class _TwoBatches:
    """A campaign whose first two topics each have one document left to judge in their
    open batch, judged through the service (one assessor on every topic)."""

    def __init__(self, tmp_path, method: str) -> None:
        self.c = collection()
        self.store = Store(str(tmp_path / "c.db"))
        create_campaign(self.store, Design("c1", method, Budget(6), depth=30, seed=6,
                                           grades=tuple(parse_grades("0,1,2"))), self.c.runs)
        token, topics, _ = add_person(self.store, "c1", "ann")
        self.service = CampaignService(self.store)
        person = self.service.person_by_token(token)
        assert person is not None
        self.person = person
        self.topics = topics[0], topics[1]
        self.runtime = self.service.runtime(person.campaign_id)
        for qid in self.topics:
            while True:
                offer = self.service.next_document(person, qid)
                assert offer.status == "judge" and offer.docno is not None
                state = self.runtime.topics[qid]
                if sum(1 for d in state.open if not state.judges.get(d)) == 1:
                    break
                self.judge(qid, offer.docno)
        self.batches = {t: self.runtime.topics[t].batch for t in self.topics}

    def judge(self, qid: str, docno: str) -> None:
        self.service.judge_and_offer(self.person, qid, docno,
                                     self.c.oracle(qid, [docno])[docno], 1.0,
                                     uuid.uuid4().hex)

    def last(self, qid: str) -> None:
        """Judge the last document of ``qid``'s open batch (completing it)."""
        offer = self.service.next_document(self.person, qid)
        assert offer.docno is not None
        self.judge(qid, offer.docno)

    def race(self, hold: Callable[[Callable[[], bool]], None]) -> None:
        """Complete the first topic's batch in a thread, and the second's in another once
        the first calls ``hold(other_done)`` (patched in by the caller), which may wait
        for the second to finish."""
        other_done = threading.Event()
        held = threading.Event()

        def waiting() -> bool:
            held.set()
            return other_done.wait(1.0)

        hold(waiting)

        def other() -> None:
            self.last(self.topics[1])
            other_done.set()

        a = threading.Thread(target=self.last, args=(self.topics[0],))
        a.start()
        assert held.wait(10)
        b = threading.Thread(target=other)
        b.start()
        a.join(10)
        b.join(10)
        assert all(self.runtime.topics[t].batch == n + 1 for t, n in self.batches.items())

    def close(self) -> None:
        self.service.close()
        self.store.close()


@pytest.mark.parametrize("method,alone", [("mtf", True), ("dynamic", True),
                                          ("strata", False)])
def test_a_slow_selector_step_holds_up_other_topics_only_when_the_state_is_shared(
        tmp_path, method: str, alone: bool) -> None:
    """While one topic's selector proposes (``dynamic``'s classifier fit can take tens of
    milliseconds), a judgment that completes another topic's batch goes through when the
    method's state splits by topic (the campaign-wide lock is not held for the fit), and
    waits for it when the state is shared (the lock guards the selector)."""
    run = _TwoBatches(tmp_path, method)
    try:
        saw: list[bool] = []
        selector = run.runtime.selector
        propose = selector.propose

        def hold(waiting: Callable[[], bool]) -> None:
            def slow_propose(topic: str, n: int) -> list[str]:
                if topic == run.topics[0] and not saw:
                    saw.append(waiting())  # the other topic's batch meanwhile?
                return propose(topic, n)

            selector.propose = slow_propose  # type: ignore[method-assign]

        run.race(hold)
        assert saw == [alone]
    finally:
        run.close()


@pytest.mark.parametrize("method", ["strata", "mtf"])
def test_the_saved_state_is_the_selector_after_concurrent_batches(tmp_path,
                                                                  method: str) -> None:
    """Two topics' batches observed at once: the state saved last is the selector's (for a
    state that does not split, one topic's whole state saved after another's that already
    holds its move would drop that move), and a restart continues from it."""
    run = _TwoBatches(tmp_path, method)
    try:
        service = run.service
        pick = service._pick
        armed: list[Callable[[], bool]] = []

        def hold(waiting: Callable[[], bool]) -> None:
            armed.append(waiting)

        def slow_pick(state, person, now, open=None):  # type: ignore[no-untyped-def]
            if state.qid == run.topics[0] and open is not None and armed:
                armed.pop()()  # between the selector's step and the queueing of its writes
            return pick(state, person, now, open)

        service._pick = slow_pick  # type: ignore[method-assign]
        run.race(hold)
        saved = service.saved_state(run.person.campaign_id)
        assert saved == decode_state(encode_state(run.runtime.selector.state()))
    finally:
        run.close()
