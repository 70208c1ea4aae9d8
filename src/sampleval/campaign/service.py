"""The assessors' side of the service layer: who is asking, what to judge next, judging,
undo, and moving the selector on batch by batch.

Each campaign the server serves has a :class:`Runtime` in memory: its selector (restored
from the state saved with the latest batch), and per topic the items of the open batch and
who has judged each item. The store is the truth; the runtime is rebuilt from it at start
(and for a campaign created while the server runs, on first use).

Durability. A judgment is one row, committed before the request is answered; the client's
idempotency key is unique among the judgments of its document, so a retried request finds
its row and creates no second one. When every item of a topic's open batch has a judgment, the batch is
observed: in one transaction the items get the labels the selector saw, the next batch is
proposed and stored, and the selector's state (its random generator included) is saved,
guarded by a version number: for a method whose state splits by topic
(``Selector.splits_state``: ``mtf``, ``mab``, ``active``, ``dynamic``, ``importance``)
only the topic's part (``Selector.topic_state``), else the whole ``state()``. A judgment
made through :meth:`CampaignService.judge_and_offer` (the API's) is written in one
transaction with the batch it completes and the lease of the next offer, so each judgment
costs one commit (one flush, shared with the judgments arriving together). Should a
judgment's commit come without its batch's observation (a server older than this one, or
an observation that failed), nothing is lost: at restart the runtime finds the batch
complete and observes it then, with the same labels, so the selector continues exactly as
it would have.

The label the selector sees. Each item's latest non-retracted judgment when its batch is
observed: the label the default export rule (``--label latest``) gives the document at that
moment, and the one the live estimates take for the judged part of an open batch
(:func:`.organise.current_selector`), so that the sample the selector holds, the live
estimates and the default export agree; judgments made after the batch is observed are kept
and count in the export (``--label``), not in the selector. The designs stay what the
estimators assume either way: an adaptive method records each document's inclusion
probability when it draws it, whatever labels steered the draw.

Offers. A document is offered to an assessor with a lease (:data:`LEASE_SECONDS`), stored
(``leases``) before the offer is answered, so that a restarted server hands no leased
document to a second assessor. Open items are leased to one assessor at a time; items
chosen for the campaign's overlap share are also offered to every other assessor of the
topic once judged, for agreement studies. A judgment is accepted only of a document offered
to its assessor (or offered again after an undo) and not since leased to or judged by
another (409 with the reason otherwise); a campaign created with ``rejudge`` also accepts a
judgment of a document its assessor judged before.

Locks. Each topic's in-memory state has its own lock, held by judging, undoing and offering
on the topic from the check to the commit and the in-memory update, so they serialise (an
undo cannot overwrite a concurrent judgment's record); requests on other topics do not wait.
The runtime's lock guards the selector (shared by all topics) from a
batch's observation until its writes are queued, unless the selector's state splits by
topic (then the topic's lock does: ``observe`` and ``propose`` on a topic change its part
only), and the saved state's version while the batch's writes are queued. A topic's lock
is always taken before the runtime's.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from sampleval.campaign import models as m
from sampleval.campaign.group_commit import GroupCommit
from sampleval.campaign.organise import (
    CampaignInfo,
    build_pool,
    encode_state,
    item_rows,
    load_runs,
    restore_selector,
    saved_state,
)
from sampleval.campaign.store import Store
from sampleval.campaign.target import PlanSelector
from sampleval.campaign.timing import since, span
from sampleval.campaign.tokens import digest, new_secret
from sampleval.selection.base import Selector

LEASE_SECONDS = 600.0
SESSION_DAYS = 7

# the statements of the hot path, built once (building SQL expressions per request costs
# more than running them)
_PERSON = (select(m.Person.id, m.Person.name, m.Person.role, m.Campaign.id, m.Campaign.name)
           .join(m.Campaign))
_BY_TOKEN = _PERSON.where(m.Person.token_hash == bindparam("digest"))
_BY_ID = _PERSON.where(m.Person.id == bindparam("person"))
_SESSION = select(m.Session.assessor_id, m.Session.csrf, m.Session.expires_at).where(
    m.Session.token_hash == bindparam("digest"))
_ASSIGNED = select(m.Assignment.id).where(m.Assignment.assessor_id == bindparam("person"),
                                          m.Assignment.topic_id == bindparam("topic"))
_DOCUMENT = select(m.Document.title, m.Document.text).where(
    m.Document.campaign_id == bindparam("campaign"), m.Document.docno == bindparam("docno"))
_KNOWN_KEYS = select(m.Judgment.item_id, m.Judgment.key, m.Judgment.assessor_id,
                     m.Judgment.label, m.Judgment.created_at).where(
    m.Judgment.item_id.in_(bindparam("items", expanding=True)))
_INSERT_JUDGMENTS = insert(m.JUDGMENTS)


def _upserts(table: Any, keys: tuple[str, ...], column: str) -> dict[str, Any]:
    """Per dialect (SQLite, PostgreSQL): insert a row of ``table``, or set ``column`` of the
    row with the same ``keys``."""
    from sqlalchemy.dialects import postgresql, sqlite

    out = {}
    for name, dialect in (("sqlite", sqlite), ("postgresql", postgresql)):
        statement = dialect.insert(table)
        out[name] = statement.on_conflict_do_update(
            index_elements=[table.c[k] for k in keys],
            set_={column: statement.excluded[column]})
    return out


_UPSERT_LEASE = _upserts(m.LEASES, ("item_id", "assessor_id"), "expires_at")
_END_LEASE = delete(m.LEASES).where(m.LEASES.c.item_id == bindparam("item"),
                                    m.LEASES.c.assessor_id == bindparam("person"))
_STATES = m.SELECTOR_STATES
_MOVE_SELECTOR = (update(_STATES)
                  .where(_STATES.c.campaign_id == bindparam("campaign"),
                         _STATES.c.version == bindparam("version"))
                  .values(version=bindparam("next"), saved_at=bindparam("when"),
                          state=func.coalesce(bindparam("state"), _STATES.c.state)))
_UPSERT_TOPIC_STATE = _upserts(m.TOPIC_STATES, ("topic_id",), "state")
_INSERT_ITEMS = insert(m.ITEMS).returning(m.ITEMS.c.docno, m.ITEMS.c.id, m.ITEMS.c.overlap,
                                          sort_by_parameter_order=True)
_TOPIC_DONE = update(m.TOPICS).where(m.TOPICS.c.id == bindparam("topic")).values(done=True)
_TOPIC_OPEN = update(m.TOPICS).where(m.TOPICS.c.id == bindparam("topic")).values(done=False)
_OBSERVED = (update(m.ITEMS).where(m.ITEMS.c.id == bindparam("item"))
             .values(label=bindparam("value"), observed_at=bindparam("when")))


class ServiceError(Exception):
    """A request the service refuses; ``status`` is the HTTP status it maps to."""

    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ServiceError):
    status = 404


class Forbidden(ServiceError):
    status = 403


class Conflict(ServiceError):
    status = 409


class Invalid(ServiceError):
    status = 422


@dataclass(frozen=True)
class Person:
    """Who is asking: a person of one campaign."""

    id: int
    name: str
    role: str
    campaign_id: int
    campaign: str


@dataclass
class TopicState:
    """One topic of a runtime: its items (docno -> item id, batch, overlap), the open
    batch, who judged each item (non-retracted) and the label of its latest non-retracted
    judgment (the label the selector sees: module docstring), and the leases (docno ->
    assessor -> when the lease ends, in seconds since the epoch) of documents offered and
    not yet judged by their assessor."""

    id: int
    qid: str
    title: str
    description: str
    narrative: str
    budget: int
    budget_unit: str = "judgments"
    batch: int = 0
    done: bool = False
    items: dict[str, tuple[int, int, bool]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    judges: dict[str, set[int]] = field(default_factory=dict)
    latest: dict[str, float] = field(default_factory=dict)
    leases: dict[str, dict[int, float]] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def judged(self) -> int:
        return sum(1 for d in self.order if self.judges.get(d))

    def complete(self) -> bool:
        return bool(self.open) and all(self.judges.get(d) for d in self.open)

    def leased_to_other(self, docno: str, person: int, now: float) -> bool:
        return any(who != person and until > now
                   for who, until in self.leases.get(docno, {}).items())

    def finished(self) -> bool:
        """Whether the selector proposes nothing more and every item is judged."""
        return self.done and not self.open

    def refusal(self, docno: str, person: int, rejudge: bool, now: float) -> str | None:
        """Why ``person`` may not judge ``docno`` now (None: they may; module docstring)."""
        judges = self.judges.get(docno, set())
        if person in judges:
            return None if rejudge else (
                f"you have judged {docno!r} already: undo your judgment to judge it again "
                "(the organiser may allow re-judging: campaign create --rejudge)")
        offered = person in self.leases.get(docno, {})
        if not offered and self.finished():
            return f"topic {self.qid!r} is finished: {docno!r} was not offered to you"
        if not self.items[docno][2]:  # not an overlap item: one assessor only
            if self.leased_to_other(docno, person, now):
                return f"{docno!r} is leased to another assessor" + (
                    " (your lease ended)" if offered else "")
            if judges:
                return f"{docno!r} was judged by another assessor" + (
                    " (your lease ended)" if offered else "")
        return None if offered else f"{docno!r} was not offered to you"


@dataclass
class Runtime:
    """A served campaign (see the module docstring)."""

    info: CampaignInfo
    selector: Selector
    version: int
    topics: dict[str, TopicState]
    lock: threading.RLock = field(default_factory=threading.RLock)
    assigned: set[tuple[int, str]] = field(default_factory=set)
    stopped: str | None = None
    """Why the campaign stopped handing out documents (its target is met), or None."""
    texts: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    """Documents' (title, text) as read from the store, kept once read: texts never change
    after a campaign is created."""
    with_text: frozenset[str] = frozenset()
    """The docnos that have a text in the store (read at load: the others need no query)."""

    @property
    def grade_values(self) -> set[float]:
        return {g.value for g in self.info.grades}


@dataclass(frozen=True)
class Offer:
    """What an assessor sees next on a topic: a document to judge (``status`` ``judge``),
    nothing yet while others finish the open batch (``wait``), or nothing more (``done``)."""

    status: str
    topic: TopicState
    docno: str | None = None
    title: str = ""
    text: str = ""
    has_text: bool = False
    judged: int = 0
    mine: int = 0
    note: str = ""
    """Why there is nothing more, when the campaign stopped early (its target is met)."""


@dataclass(frozen=True)
class Judged:
    """A stored judgment (``replayed``: the request was a retry of one stored earlier)."""

    key: str
    docno: str
    label: float
    created_at: datetime
    replayed: bool


@dataclass(frozen=True)
class _NewJudgment:
    person: Person
    item_id: int
    docno: str
    label: float
    seconds: float | None
    key: str


@dataclass(frozen=True)
class _Move:
    """The writes of an observed batch (:meth:`CampaignService._observe_batch`) but the
    version of the saved state they follow."""

    campaign_id: int
    topic_id: int
    batch: int
    """The new batch's number."""
    when: datetime
    labels: list[dict[str, Any]]
    items: list[dict[str, Any]]
    state: bytes
    split: bool
    """Whether ``state`` is the topic's part (else the whole state)."""


@dataclass(frozen=True)
class _Observed(_Move):
    """The writes of an observed batch with the version of the saved state they follow
    (:meth:`CampaignService._next_version`)."""

    version: int


_Written = list[tuple[str, int, bool]] | ServiceError
"""An observed batch's new items (docno, item id, overlap), or why it was not stored."""


@dataclass(frozen=True)
class _NewLease:
    item_id: int | None
    """The item leased; None: the document ``docno`` of the batch observed in the same
    :class:`_Judging` (its item is created in that transaction)."""
    person: int
    until: float
    """When the lease ends, in seconds since the epoch."""
    docno: str = ""


@dataclass(frozen=True)
class _Judging:
    """A new judgment with what it sets off, written in its transaction: the observation of
    the batch it completes, and the lease of the document offered next to its assessor;
    neither is written unless the judgment is."""

    judgment: _NewJudgment
    observed: _Observed | None
    lease: _NewLease | None


_Write = _NewJudgment | _NewLease | _Observed | _Judging
_Result = Judged | ServiceError | _Written | tuple[Judged | ServiceError, _Written | None] | None


class CampaignService:
    """The service the web app calls (one per server process)."""

    def __init__(self, store: Store, on_judgment: Callable[[int], None] | None = None) -> None:
        self.store = store
        self.on_judgment = on_judgment or (lambda _campaign: None)
        self._runtimes: dict[int, Runtime] = {}
        # reentrant: a batch that fails while a runtime loads drops it (_reload) in the
        # loading thread, which then raises instead of waiting for itself
        self._loading = threading.RLock()
        self._writer: GroupCommit[_Write, _Result] = GroupCommit(store, self._store_writes)

    def close(self) -> None:
        self._writer.close()

    def write_counts(self) -> dict[str, int]:
        """The group commit's writes (judgments, leases, batches), transactions and WAL
        flushes since the server started (:meth:`.GroupCommit.counts`)."""
        return self._writer.counts()

    # -- who is asking --------------------------------------------------------------------

    def person_by_token(self, token: str) -> Person | None:
        return self._person(_BY_TOKEN, {"digest": digest(token)})

    def _person(self, query: Any, params: dict[str, Any]) -> Person | None:
        row = self.store.first(query, params)  # (every request's: the cheap read)
        return None if row is None else Person(*row)

    def start_session(self, person: Person) -> tuple[str, str]:
        """A new browser session: its cookie value and its CSRF token."""
        cookie, csrf = new_secret(), new_secret()
        with self.store.write() as session:
            session.execute(delete(m.Session).where(m.Session.expires_at < m.now()))
            session.add(m.Session(token_hash=digest(cookie), assessor_id=person.id, csrf=csrf,
                                  expires_at=m.now() + timedelta(days=SESSION_DAYS)))
        return cookie, csrf

    def session_person(self, cookie: str) -> tuple[Person, str] | None:
        """The person and CSRF token of a live session cookie."""
        with self.store.connect() as connection:
            row = connection.execute(_SESSION, {"digest": digest(cookie)}).first()
        if row is None or m.aware(row.expires_at) < m.now():
            return None
        person = self._person(_BY_ID, {"person": row.assessor_id})
        return None if person is None else (person, row.csrf)

    def end_session(self, cookie: str) -> None:
        with self.store.write() as session:
            session.execute(delete(m.Session).where(
                m.Session.token_hash == digest(cookie)))

    # -- runtimes ---------------------------------------------------------------------------

    def load_all(self) -> None:
        """Load every campaign of the store (and observe any batch completed before a
        crash)."""
        for campaign_id in self.campaign_ids():
            self.runtime(campaign_id)

    def campaign_ids(self) -> list[int]:
        with self.store.read() as session:
            return list(session.scalars(select(m.Campaign.id)))

    def runtime(self, campaign_id: int) -> Runtime:
        found = self._runtimes.get(campaign_id)
        if found is not None:
            return found
        with self._loading:
            if campaign_id not in self._runtimes:
                self._runtimes[campaign_id] = self._load(campaign_id)
        return self._runtimes[campaign_id]

    def _load(self, campaign_id: int) -> Runtime:
        with self.store.read() as session:
            row = session.get(m.Campaign, campaign_id)
            if row is None:
                raise NotFound("no such campaign")
            info = CampaignInfo.of(row)
            pool = build_pool(info, load_runs(session, info.id))
            selector, version = restore_selector(session, info, pool)
            topics: dict[str, TopicState] = {}
            by_id: dict[int, TopicState] = {}
            for t in session.scalars(select(m.Topic).where(m.Topic.campaign_id == info.id)
                                     .order_by(m.Topic.position)):
                state = TopicState(t.id, t.qid, t.title, t.description, t.narrative,
                                   t.budget, info.budget_unit, done=t.done)
                topics[t.qid] = by_id[t.id] = state
            items: dict[int, tuple[TopicState, str]] = {}
            for item_id, topic_id, batch, docno, overlap, label in session.execute(
                    select(m.Item.id, m.Item.topic_id, m.Item.batch, m.Item.docno,
                           m.Item.overlap, m.Item.label)
                    .join(m.Topic).where(m.Topic.campaign_id == info.id)
                    .order_by(m.Item.topic_id, m.Item.batch, m.Item.position)):
                state = by_id[topic_id]
                state.items[docno] = (item_id, batch, overlap)
                state.order.append(docno)
                state.batch = max(state.batch, batch)
                if label is None:
                    state.open.append(docno)
                items[item_id] = (state, docno)
            for item_id, person_id, label in session.execute(
                    select(m.Judgment.item_id, m.Judgment.assessor_id, m.Judgment.label)
                    .where(m.Judgment.campaign_id == info.id,
                           m.Judgment.retracted_at.is_(None))
                    .order_by(m.Judgment.id)):
                state, docno = items[item_id]
                state.judges.setdefault(docno, set()).add(person_id)
                state.latest[docno] = float(label)
            for item_id, person_id, until in session.execute(
                    select(m.Lease.item_id, m.Lease.assessor_id, m.Lease.expires_at)
                    .join(m.Item).join(m.Topic).where(m.Topic.campaign_id == info.id)):
                state, docno = items[item_id]
                if person_id not in state.judges.get(docno, ()):
                    state.leases.setdefault(docno, {})[person_id] = float(until)
            with_text = frozenset(session.scalars(select(m.Document.docno).where(
                m.Document.campaign_id == info.id)))
        runtime = Runtime(info, selector, version, topics, stopped=info.stopped,
                          with_text=with_text)
        for state in topics.values():
            self._advance(runtime, state)
        warm_up(selector, max(g.value for g in info.grades))
        return runtime

    def stop(self, campaign_id: int, why: str) -> None:
        """Hand out no more documents in the campaign (its target is met; the store has
        recorded it). Judgments of documents already shown are still accepted."""
        found = self._runtimes.get(campaign_id)
        if found is not None:
            found.stopped = why

    def _reload(self, runtime: Runtime) -> None:
        """Replace a runtime whose selector may no longer match the store."""
        with self._loading:
            self._runtimes.pop(runtime.info.id, None)

    # -- judging ----------------------------------------------------------------------------

    def topic(self, person: Person, qid: str) -> tuple[Runtime, TopicState]:
        """The runtime and topic ``person`` may judge (NotFound / Forbidden otherwise)."""
        runtime = self.runtime(person.campaign_id)
        state = runtime.topics.get(qid)
        if state is None:
            raise NotFound(f"campaign {person.campaign!r} has no topic {qid!r}")
        if person.role != "assessor":
            raise Forbidden("only assessors judge documents")
        if (person.id, qid) not in runtime.assigned:
            with self.store.connect() as connection:
                found = connection.scalar(_ASSIGNED, {"person": person.id, "topic": state.id})
            if found is None:
                raise Forbidden(f"topic {qid!r} is not assigned to {person.name!r}")
            runtime.assigned.add((person.id, qid))
        return runtime, state

    def topics_of(self, person: Person) -> list[TopicState]:
        """The topics ``person`` judges (all topics for an organiser, to watch)."""
        runtime = self.runtime(person.campaign_id)
        if person.role == "organiser":
            return list(runtime.topics.values())
        with self.store.read() as session:
            mine = set(session.scalars(select(m.Topic.qid).join(m.Assignment).where(
                m.Assignment.assessor_id == person.id)))
        return [t for t in runtime.topics.values() if t.qid in mine]

    def next_document(self, person: Person, qid: str) -> Offer:
        """The document ``person`` should judge next on topic ``qid`` (leased to them)."""
        runtime, state = self.topic(person, qid)
        if runtime.stopped is not None:
            return self._offer("done", runtime, state, person)
        asked = time.perf_counter()
        with state.lock:
            since("lock", asked)
            if state.complete() or self._reopens(runtime, state):
                # a batch left complete by an earlier failure, or a phase the plan gave since
                self._advance(runtime, state)
            now = time.time()
            docno = self._pick(state, person.id, now)
            if docno is not None:
                self._lease(state, docno, person.id, now)
            waiting = self._waits(runtime, state)
        if docno is None:
            return self._offer("wait" if waiting else "done", runtime, state, person)
        return self._offer("judge", runtime, state, person, docno)

    def _lease(self, state: TopicState, docno: str, person: int, now: float) -> None:
        """Lease ``docno`` to ``person`` (:meth:`_new_lease`), stored before the offer is
        answered (caller holds ``state.lock``)."""
        lease = self._new_lease(state, docno, person, now)
        if lease is not None:
            with span("commit"):
                self._writer.submit(lease)
            state.leases.setdefault(docno, {})[person] = lease.until

    @staticmethod
    def _new_lease(state: TopicState, docno: str, person: int, now: float
                   ) -> _NewLease | None:
        """The lease of ``docno`` to ``person`` for :data:`LEASE_SECONDS` from ``now`` to
        store: when new or when the stored lease has less than half its time left (None
        otherwise). A document not among the topic's items yet is one of the batch being
        observed: its item is found when the batch is written."""
        if state.leases.get(docno, {}).get(person, 0.0) >= now + LEASE_SECONDS / 2:
            return None
        item = state.items.get(docno)
        return _NewLease(None if item is None else item[0], person, now + LEASE_SECONDS,
                         docno)

    @staticmethod
    def _pick(state: TopicState, person: int, now: float, open: list[str] | None = None
              ) -> str | None:
        """The document to offer ``person`` next: one leased to them, else the first of
        the open batch (``open``: the batch about to be opened instead) that nobody has
        judged or holds, else an overlap document judged by others and not by them."""
        mine = [d for d, holders in state.leases.items()
                if holders.get(person, 0.0) > now and person not in state.judges.get(d, ())]
        if mine:
            return mine[0]
        for docno in state.open if open is None else open:
            if not state.judges.get(docno) and not state.leased_to_other(docno, person, now):
                return docno
        for docno in state.order:
            _, _, overlap = state.items[docno]
            judges = state.judges.get(docno)
            if overlap and judges and person not in judges:
                return docno
        return None

    @span("offer")
    def _offer(self, status: str, runtime: Runtime, state: TopicState, person: Person,
               docno: str | None = None) -> Offer:
        title = text = ""
        has_text = False
        if docno is not None and docno in runtime.with_text:
            if docno not in runtime.texts:
                with self.store.connect() as connection:
                    found = connection.execute(_DOCUMENT, {"campaign": person.campaign_id,
                                                           "docno": docno}).first()
                runtime.texts[docno] = None if found is None else (found.title, found.text)
            known = runtime.texts[docno]
            if known is not None:
                (title, text), has_text = known, True
        mine = sum(1 for judges in state.judges.values() if person.id in judges)
        note = (runtime.stopped or "") if status == "done" else ""
        return Offer(status, state, docno, title, text, has_text, state.judged(), mine, note)

    def judge(self, person: Person, qid: str, docno: str, label: float,
              seconds: float | None, key: str) -> Judged:
        """Store a judgment (idempotent by ``key``) of a document offered to ``person``
        (Conflict otherwise, module docstring); observe the batch if it completes."""
        return self._judge(person, qid, docno, label, seconds, key, offer=False)[0]

    def judge_and_offer(self, person: Person, qid: str, docno: str, label: float,
                        seconds: float | None, key: str) -> tuple[Judged, Offer]:
        """:meth:`judge`, and what :meth:`next_document` would then offer ``person``, its
        lease written in the judgment's transaction (one commit for both)."""
        judged, offer = self._judge(person, qid, docno, label, seconds, key, offer=True)
        return judged, offer if offer is not None else self.next_document(person, qid)

    def _judge(self, person: Person, qid: str, docno: str, label: float,
               seconds: float | None, key: str, offer: bool) -> tuple[Judged, Offer | None]:
        """:meth:`judge`, with the next offer when ``offer`` (None: a retry, whose offer
        the caller asks :meth:`next_document` for)."""
        runtime, state = self.topic(person, qid)
        if label not in runtime.grade_values:
            grades = ", ".join(g.text for g in runtime.info.grades)
            raise Invalid(f"label {label:g} is not a grade of this campaign ({grades})")
        item = state.items.get(docno)
        if item is None:
            raise NotFound(f"document {docno!r} is not among those proposed for topic {qid!r}")
        record = _NewJudgment(person, item[0], docno, label, seconds, key)
        asked = time.perf_counter()
        with state.lock:
            since("lock", asked)
            now = time.time()
            refusal = state.refusal(docno, person.id, runtime.info.rejudge, now)
            if refusal is not None and not self._known_key(item[0], key):
                raise Conflict(refusal)  # (a retry of a stored judgment is answered below)
            judged, next_docno = self._store_judging(runtime, state, record, now, offer)
        if judged.replayed:
            return judged, None
        self.on_judgment(person.campaign_id)
        if not offer:
            return judged, None
        if runtime.stopped is not None:
            return judged, self._offer("done", runtime, state, person)
        if next_docno is None:
            return judged, self._offer("wait" if self._waits(runtime, state) else "done",
                                       runtime, state, person)
        return judged, self._offer("judge", runtime, state, person, next_docno)

    def _store_judging(self, runtime: Runtime, state: TopicState, r: _NewJudgment,
                       now: float, offer: bool) -> tuple[Judged, str | None]:
        """Write a new judgment with the batch it completes observed and, when ``offer``,
        the lease of the next document for its assessor, in one transaction; then update
        the topic in memory. The judgment counts in memory (for the pick) while its write
        is under way, and is taken back if the write fails or finds the key stored (a
        retry: nothing else is written). Caller holds ``state.lock``. Returns the judgment
        and the docno offered next (None: nothing to offer now)."""
        judges = state.judges.setdefault(r.docno, set())
        had = r.person.id in judges
        held = state.leases.get(r.docno, {}).pop(r.person.id, None)
        judges.add(r.person.id)
        completes = r.docno in state.open and state.complete()

        def take_back() -> None:
            if not had:
                judges.discard(r.person.id)
            if held is not None:
                state.leases.setdefault(r.docno, {})[r.person.id] = held
            if completes:
                self._reload(runtime)  # the selector may have moved: rebuild from the store

        proposed: list[str] | None = None
        observed: _Observed | None = None
        move: _Move | None = None
        try:
            with span("labels") if completes else nullcontext():
                labels = self._batch_labels(state, {r.docno: r.label}) if completes else None
            asked = time.perf_counter()
            with self._selector_lock(runtime) if labels is not None else nullcontext():
                since("lock", asked)
                if labels is not None:
                    proposed, move = self._observe_batch(runtime, state, labels)
                next_docno = lease = None
                if offer and runtime.stopped is None:
                    next_docno = self._pick(state, r.person.id, now, proposed)
                    if next_docno is not None:
                        lease = self._new_lease(state, next_docno, r.person.id, now)
                with runtime.lock if move is not None else nullcontext():
                    if move is not None:
                        observed = self._next_version(runtime, move)
                    written = self._writer.enqueue(_Judging(r, observed, lease))
            with span("commit"):
                outcome = written.result()
            assert isinstance(outcome, tuple)
            judged, new_items = outcome
            if isinstance(judged, ServiceError):
                raise judged
            if isinstance(new_items, ServiceError):
                raise new_items
        except BaseException:
            take_back()
            raise
        if judged.replayed:
            take_back()
            return judged, None
        state.latest[r.docno] = r.label  # (the newest judgment of its document)
        if proposed is not None:
            assert new_items is not None
            self._open(state, proposed, new_items)
        if lease is not None:
            assert next_docno is not None
            state.leases.setdefault(next_docno, {})[r.person.id] = lease.until
        return judged, next_docno

    def _known_key(self, item_id: int, key: str) -> bool:
        """Whether a judgment of item ``item_id`` has idempotency key ``key``."""
        with self.store.connect() as connection:
            return any(row.key == key for row in connection.execute(
                _KNOWN_KEYS, {"items": [item_id]}))

    @classmethod
    def _store_writes(cls, session: Connection, records: list[_Write]) -> list[_Result]:
        """Judgments, leases and observed batches in one transaction, each kind in a few
        statements for all (a lease's result is None; a :class:`_Judging`'s its judgment's
        and its batch's); a :class:`_Judging`'s batch and lease are written only when its
        judgment is new."""
        new = [r.judgment if isinstance(r, _Judging) else r for r in records
               if isinstance(r, _NewJudgment | _Judging)]
        judged = dict(zip(map(id, new), cls._store_judgments(session, new), strict=True))

        def stored(r: _NewJudgment) -> bool:
            outcome = judged[id(r)]
            return isinstance(outcome, Judged) and not outcome.replayed

        def fresh(r: _Judging) -> bool:
            return stored(r.judgment)

        batches = cls._store_batches(session, [
            b for r in records
            for b in ([r] if isinstance(r, _Observed) else [r.observed]
                      if isinstance(r, _Judging) and r.observed is not None and fresh(r)
                      else [])])
        leases: dict[tuple[int, int], float] = {}  # one per (item, assessor): the latest
        out: list[_Result] = []
        for r in records:
            if isinstance(r, _NewJudgment):
                out.append(judged[id(r)])
            elif isinstance(r, _NewLease):
                assert r.item_id is not None
                leases[r.item_id, r.person] = r.until
                out.append(None)
            elif isinstance(r, _Observed):
                out.append(batches[id(r)])
            elif not fresh(r):
                out.append((judged[id(r.judgment)], None))
            else:
                written = None if r.observed is None else batches[id(r.observed)]
                if r.lease is not None and not isinstance(written, ServiceError):
                    item = r.lease.item_id if r.lease.item_id is not None else next(
                        i for d, i, _ in written or () if d == r.lease.docno)
                    leases[item, r.lease.person] = r.lease.until
                out.append((judged[id(r.judgment)], written))
        # a judged document's lease ends with its judgment (the row would only be skipped
        # on load): so the table holds the leases in force, a few pages that the lease
        # written next shares, instead of growing by a row, and its splits, per judgment
        ended = {(j.item_id, j.person.id) for j in new if stored(j)} - set(leases)
        if ended:
            session.execute(_END_LEASE, [{"item": item, "person": person}
                                         for item, person in ended])
        if leases:
            session.execute(_UPSERT_LEASE[session.dialect.name], [
                {"item_id": item, "assessor_id": person,
                 "expires_at": math.ceil(until)}
                for (item, person), until in leases.items()])
        return out

    @staticmethod
    def _store_judgments(session: Connection, records: list[_NewJudgment]
                         ) -> list[Judged | ServiceError]:
        """Insert judgments in one transaction; a key known among its document's judgments
        is a replay (the same judgment) or a conflict (another assessor's or label)."""
        known: dict[tuple[int, str], tuple[int, float, datetime]] = {}
        for item_id, key, who, label, created in session.execute(
                _KNOWN_KEYS, {"items": sorted({r.item_id for r in records})}):
            known[item_id, key] = (who, label, m.aware(created))
        rows: list[dict[str, Any]] = []
        out: list[Judged | ServiceError] = []
        for r in records:
            earlier = known.get((r.item_id, r.key))
            if earlier is not None:
                who, label, created = earlier
                if (who, label) != (r.person.id, r.label):
                    out.append(Conflict("this idempotency key belongs to another judgment"))
                else:
                    out.append(Judged(r.key, r.docno, label, created, replayed=True))
                continue
            created = m.now()
            known[r.item_id, r.key] = (r.person.id, r.label, created)
            rows.append({"campaign_id": r.person.campaign_id, "item_id": r.item_id,
                         "assessor_id": r.person.id, "label": r.label, "seconds": r.seconds,
                         "key": r.key, "created_at": created})
            out.append(Judged(r.key, r.docno, r.label, created, replayed=False))
        if rows:
            session.execute(_INSERT_JUDGMENTS, rows)
        return out

    def undo(self, person: Person, qid: str, key: str | None = None) -> tuple[Judged, Offer]:
        """Retract one of ``person``'s judgments on ``qid`` (the given key's, else their
        latest standing one); it is kept, marked retracted. The document is offered to them
        again. Retracting twice changes nothing."""
        runtime, state = self.topic(person, qid)
        asked = time.perf_counter()
        with state.lock:
            since("lock", asked)
            with span("commit"):
                undone, docno = self._retract(person, state, key)
        self.on_judgment(person.campaign_id)
        return undone, self._offer("judge", runtime, state, person, docno)

    def _retract(self, person: Person, state: TopicState, key: str | None
                 ) -> tuple[Judged, str]:
        """:meth:`undo`'s work, in one transaction with the new lease, then in memory
        (caller holds ``state.lock``, so no judgment on the topic interleaves)."""
        until = time.time() + LEASE_SECONDS
        with self.store.write() as session:
            query = (select(m.Judgment, m.Item.docno).join(m.Item)
                     .where(m.Judgment.assessor_id == person.id, m.Item.topic_id == state.id))
            if key is not None:
                query = query.where(m.Judgment.key == key)
            else:
                query = query.where(m.Judgment.retracted_at.is_(None))
            found = session.execute(query.order_by(m.Judgment.id.desc()).limit(1)).first()
            if found is None:
                raise NotFound("no judgment of yours to undo on this topic")
            row, docno = found
            if row.retracted_at is None:
                row.retracted_at = m.now()
            others = session.execute(select(m.Judgment.assessor_id, m.Judgment.label).where(
                m.Judgment.item_id == row.item_id, m.Judgment.retracted_at.is_(None),
                m.Judgment.id != row.id).order_by(m.Judgment.id)).all()
            session.execute(_UPSERT_LEASE[session.get_bind().dialect.name], {
                "item_id": row.item_id, "assessor_id": person.id,
                "expires_at": math.ceil(until)})
        state.judges[docno] = {who for who, _ in others}
        if others:
            state.latest[docno] = float(others[-1].label)
        else:
            state.latest.pop(docno, None)
        state.leases.setdefault(docno, {})[person.id] = until
        return Judged(row.key, docno, row.label, m.aware(row.created_at), replayed=False), docno

    # -- batches ----------------------------------------------------------------------------

    def _advance(self, runtime: Runtime, state: TopicState) -> None:
        """Observe the topic's open batch if every item has a judgment, and store the next
        batch with the selector's new state, in one transaction (module docstring). Caller
        holds ``state.lock`` (or owns the runtime).

        The batch's writes are queued for the group commit under the runtime's lock (in the
        order of the saved state's versions), which is let go then, so that other topics'
        batches and judgments share their transactions instead of waiting for this one's
        commit; the selector moves under it too, held until the writes are queued, unless
        its state splits by topic (:meth:`_selector_lock`). A topic that proposed nothing
        and has documents to hand out again (:meth:`_reopens`) is moved on the same way,
        with no labels to observe."""
        while state.complete() or self._reopens(runtime, state):
            try:
                labels = self._batch_labels(state)
                if labels is None:
                    return
                with self._selector_lock(runtime):
                    proposed, move = self._observe_batch(runtime, state, labels)
                    with runtime.lock:
                        written = self._writer.enqueue(self._next_version(runtime, move))
                new_items = written.result()
                if not isinstance(new_items, list):
                    raise new_items if isinstance(new_items, ServiceError) else ServiceError(
                        "the batch was not stored")
            except BaseException:
                self._reload(runtime)  # the selector may have moved: rebuild from the store
                raise
            self._open(state, proposed, new_items)

    @staticmethod
    def _waits(runtime: Runtime, state: TopicState) -> bool:
        """Whether the topic may have documents to offer later (``wait``, not ``done``): its
        open batch, more to propose, or under a campaign's plan
        (:class:`~sampleval.campaign.target.PlanSelector`) a later phase."""
        selector = runtime.selector
        return bool(state.open) or not state.done or (
            isinstance(selector, PlanSelector) and selector.waits(state.qid))

    @staticmethod
    def _reopens(runtime: Runtime, state: TopicState) -> bool:
        """Whether the topic, which proposed nothing (``done``), has documents to hand out
        again: under a campaign's plan (:class:`~sampleval.campaign.target.PlanSelector`),
        when the next plan gives it a phase. Caller holds ``state.lock``."""
        selector = runtime.selector
        if not (state.done and not state.open and runtime.stopped is None
                and isinstance(selector, PlanSelector)):
            return False
        with runtime.lock:  # the plan may be made now: the selector moves
            return selector.reopens(state.qid)

    @staticmethod
    def _open(state: TopicState, proposed: list[str], new_items: list[tuple[str, int, bool]]
              ) -> None:
        """The topic in memory once its observed batch and the next one are stored."""
        state.batch += 1
        state.open = list(proposed)
        state.order.extend(proposed)
        for docno, item_id, overlap in new_items:
            state.items[docno] = (item_id, state.batch, overlap)
        state.done = not proposed

    @staticmethod
    def _batch_labels(state: TopicState, pending: dict[str, float] | None = None
                      ) -> dict[str, float] | None:
        """The labels of the topic's open batch (docno -> label) for the selector: each
        item's latest stored one (``state.latest``: kept with each judgment and undo, as the
        store would give it, without a query on the batch's path), with ``pending`` (docno
        -> label: a judgment being written with the batch) put in; None if an undo left the
        batch incomplete. Caller holds ``state.lock``."""
        pending = pending or {}
        labels = {d: pending[d] if d in pending else state.latest.get(d) for d in state.open}
        missing = [d for d, label in labels.items() if label is None]
        if missing:  # an undo raced the last judgment
            for docno in missing:
                state.judges[docno] = set()
            return None
        return {d: label for d, label in labels.items() if label is not None}

    @staticmethod
    def _selector_lock(runtime: Runtime) -> AbstractContextManager[Any]:
        """What guards the selector while a topic's batch is observed and its writes are
        queued: the runtime's lock, held from the selector's step until the writes are
        queued (so that the whole states saved follow one another in the order the selector
        moved), unless the selector's state splits by topic (``Selector.splits_state``:
        then ``observe`` and ``propose`` on a topic change only its part, which the topic's
        lock guards, and a slow step, such as ``dynamic``'s classifier fit, holds up no
        other topic)."""
        return nullcontext() if runtime.selector.splits_state else runtime.lock

    def _observe_batch(self, runtime: Runtime, state: TopicState, labels: dict[str, float]
                       ) -> tuple[list[str], _Move]:
        """Hand the open batch's ``labels`` (:meth:`_batch_labels`) to the selector and
        propose the next batch; return it with the batch's writes but the saved state's
        version (:meth:`_next_version` gives it when the writes are queued). Caller holds
        ``state.lock`` and :meth:`_selector_lock`."""
        selector, info = runtime.selector, runtime.info
        ids = {state.items[d][0]: d for d in state.open}
        split = selector.splits_state
        with span("observe"):
            selector.observe(state.qid, labels)
        with span("propose"):
            proposed = selector.propose(state.qid, selector.batch_size(state.qid))
        with span("save"):
            saved = encode_state(selector.topic_state(state.qid) if split
                                 else selector.state())
        when = m.now()
        return proposed, _Move(
            info.id, state.id, state.batch + 1, when,
            [{"item": i, "value": labels[d], "when": when} for i, d in ids.items()],
            item_rows(state.id, state.qid, state.batch + 1, proposed, info.seed, info.overlap),
            saved, split)

    @staticmethod
    def _next_version(runtime: Runtime, move: _Move) -> _Observed:
        """``move``'s writes, following the runtime's saved state version (caller holds
        ``runtime.lock`` until they are queued, so that versions are queued in order)."""
        observed = _Observed(**vars(move), version=runtime.version)
        runtime.version += 1
        return observed

    @staticmethod
    def _store_batches(session: Connection, batches: list[_Observed]) -> dict[int, _Written]:
        """Observed batches' writes (:meth:`_observe_batch`), given in the order they were
        queued, each kind in one statement for all (results by ``id`` of the batch). A
        campaign's batches follow one another's versions: the saved state moves from the
        first's version past the last's once, unless another process moved it (then none
        is written), and a batch whose predecessor was not written is not either."""
        out: dict[int, _Written] = {}
        chains: dict[int, list[_Observed]] = {}
        for r in batches:
            chains.setdefault(r.campaign_id, []).append(r)
        stored: list[_Observed] = []
        for campaign_id, chain in chains.items():
            run = chain[:1]
            for r in chain[1:]:
                if r.version != run[-1].version + 1:
                    break
                run.append(r)
            moved = session.execute(_MOVE_SELECTOR, {
                "campaign": campaign_id, "version": run[0].version,
                "next": run[-1].version + 1, "when": run[-1].when,
                "state": next((r.state for r in reversed(run) if not r.split), None)})
            if moved.rowcount != 1:
                run = []
            stored += run
            for r in chain[len(run):]:
                out[id(r)] = Conflict("the campaign's selector was moved on by another process")
        if not stored:
            return out
        parts = {r.topic_id: r.state for r in stored if r.split}  # the topic's part only
        if parts:
            session.execute(_UPSERT_TOPIC_STATE[session.dialect.name],
                            [{"topic_id": t, "state": state} for t, state in parts.items()])
        labels = [row for r in stored for row in r.labels]
        if labels:  # (none: only topics handed documents again)
            session.execute(_OBSERVED, labels)
        rows = [row for r in stored for row in r.items]
        created = [(d, i, o) for d, i, o in session.execute(_INSERT_ITEMS, rows)] if rows else []
        done = [{"topic": r.topic_id} for r in stored if not r.items]
        if done:
            session.execute(_TOPIC_DONE, done)
        again = [{"topic": r.topic_id} for r in stored if r.items and not r.labels]
        if again:  # a topic handed documents again (:meth:`_reopens`)
            session.execute(_TOPIC_OPEN, again)
        start = 0
        for r in stored:
            out[id(r)] = created[start:start + len(r.items)]
            start += len(r.items)
        return out

    def saved_state(self, campaign_id: int) -> dict[str, Any]:
        """The selector state stored with the latest batch (for tests and audits)."""
        with self.store.read() as session:
            return saved_state(session, self.runtime(campaign_id).info)[0]


WARM_UP_BATCHES = 3
"""Batches a copy of a loaded selector is run through (:func:`warm_up`)."""


def warm_up(selector: Selector, label: float) -> None:
    """Run a copy of ``selector`` through :data:`WARM_UP_BATCHES` batches of its first topic
    with something to propose, every document judged ``label``, and drop it: what a
    selector's first observations compile or import (``active``'s numba kernels, cached on
    disk where the package's directory is writable, compiled again at each start where not)
    is then done while the campaign loads, not inside the first judgments that need it
    (each burst of them held up for seconds: docs/research/campaign-load.md, thirteenth
    round). The selector itself is untouched."""
    trial = copy.deepcopy(selector, {id(selector.pool): selector.pool})  # the pool: read-only
    for topic in trial.pool.topics:
        proposed = trial.propose(topic, trial.batch_size(topic))
        if not proposed:
            continue
        for _ in range(WARM_UP_BATCHES):
            trial.observe(topic, dict.fromkeys(proposed, label))
            proposed = trial.propose(topic, trial.batch_size(topic))
            if not proposed:
                break
        return

