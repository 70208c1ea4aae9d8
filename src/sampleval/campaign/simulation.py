"""Oracle assessors driving a campaign through its HTTP API (``campaign simulate``, the
crash test, the load benchmark), or in this process through the service layer
(:func:`judge_in_turn`: the pages a judgment writes, ``benchmarks/campaign_wal.py``).

Each simulated assessor is a person of the campaign with its own token and topics, and
runs in its own thread with its own HTTP connection: it asks for the next document,
answers with the oracle's label (qrels; a document they do not judge is not relevant), and
sends the judgment with a fresh idempotency key. A request that fails on the way (the
server is down, restarting, or answers 5xx) is sent again with the same key until the
deadline, so a judgment is stored once however often it is retried.
"""

from __future__ import annotations

import functools
import http.client
import json
import math
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from sqlalchemy import select

from sampleval.campaign import models as m
from sampleval.campaign.organise import (
    CampaignInfo,
    add_person,
    build_pool,
    campaign_row,
    load_runs,
)
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.campaign.timing import parse
from sampleval.core.qrels import Qrels
from sampleval.errors import UsageError

Oracle = Callable[[str, list[str]], dict[str, float]]


@dataclass(frozen=True)
class Assessor:
    name: str
    token: str
    topics: list[str]


@dataclass
class Report:
    """What the assessors did: acknowledged judgments (keys, and the (topic, docno) each
    judged), request latencies of the judge requests as the clients saw them and as the
    server reported them (its ``Server-Timing``: ``app``, from the request reaching the app
    to the answer, and every step it names, :mod:`.timing`), retries (and what made each: the exception's name or the HTTP status), and the
    wall time."""

    keys: list[str] = field(default_factory=list)
    judged: list[tuple[str, str]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    server_latencies: list[float] = field(default_factory=list)
    server_timings: list[dict[str, float]] = field(default_factory=list)
    """Each judge request's ``Server-Timing`` metrics (name -> seconds)."""
    sent: list[float] = field(default_factory=list)
    """Each judge request's moment (scheduled, when paced), ``time.perf_counter()``."""
    retries: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    """Why calls were retried: the exception's name (``TimeoutError``: no answer within the
    client's timeout) or ``HTTP 5xx``, with counts."""
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def judgments(self) -> int:
        return len(self.keys)


def check_scale(store: Store, campaign: str, qrels: Qrels, source: str) -> None:
    """UsageError (before any assessor judges) when ``qrels`` grade a document of the
    campaign's pool off its scale: the server would refuse that judgment (422) and stop
    the simulation half-way."""
    with store.read() as session:
        info = CampaignInfo.of(campaign_row(session, campaign))
        pool = build_pool(info, load_runs(session, info.id))
    grades = sorted(g.value for g in info.grades)
    judged = qrels.judged()
    judged = judged[judged["query_id"].isin(pool.topics)]
    for topic, rows in judged.groupby("query_id", sort=False):
        rows = rows[rows["doc_id"].isin(pool.docnos_of(str(topic)))
                    & ~rows["relevance"].isin(grades)]
        if len(rows):
            first = rows.iloc[0]
            labels = ", ".join(f"{v:g}" for v in sorted(set(judged["relevance"])))
            raise UsageError(
                f"{source}: topic {topic}, document {first['doc_id']}: label "
                f"{first['relevance']:g} is not a grade of campaign {campaign!r} "
                f"({', '.join(f'{v:g}' for v in grades)}); the qrels grade {labels}: create "
                "the campaign with --grades that hold them")


def oracle_assessors(store: Store, campaign: str, count: int, prefix: str = "oracle"
                     ) -> list[Assessor]:
    """``count`` simulated assessors of ``campaign`` (new tokens for existing ones): the
    topics dealt round-robin, or every assessor on every topic when the campaign has an
    overlap share (agreement); with more assessors than topics, assessors share topics."""
    if count < 1:
        raise UsageError("--assessors must be at least 1")
    with store.read() as session:
        info = campaign_row(session, campaign)
        overlap = info.overlap
        topics = list(session.scalars(select(m.Topic.qid).where(
            m.Topic.campaign_id == info.id).order_by(m.Topic.position)))
    out = []
    for i in range(count):
        mine = topics if overlap > 0 else (
            topics[i::count] or [topics[i % len(topics)]] if topics else [])
        token, _, _ = add_person(store, campaign, f"{prefix}-{i + 1}", mine)
        out.append(Assessor(f"{prefix}-{i + 1}", token, mine))
    return out


Judge = Callable[[], Any]
"""One judgment's call of :func:`judge_in_turn` (the service's ``judge_and_offer``)."""


def judge_in_turn(store: Store, tokens: list[str], oracle: Oracle, seed: int,
                  limit: int | None = None,
                  around: Callable[[Any, Judge], Any] | None = None) -> int:
    """In this process, through the service layer (the API's call), each assessor (by
    token) judges one document of its first topic in turn, one judgment at a time, until
    all are done (or ``limit`` judgments are made); the number made. Idempotency keys are
    random-looking (like the clients' uuid4) but drawn from ``seed``: the same writes each
    time. ``around(offer, judge)``: what each judgment runs instead of ``judge()`` (it must
    call it once and return its result), e.g. to time it."""
    keys = random.Random(seed)
    service = CampaignService(store)
    try:
        service.load_all()
        people = [service.person_by_token(t) for t in tokens]
        offers = {}
        for person in people:
            assert person is not None
            qid = service.topics_of(person)[0].qid
            offers[person.id] = service.next_document(person, qid)
        made = 0
        while limit is None or made < limit:
            moved = False
            for person in people:
                assert person is not None
                offer = offers[person.id]
                qid = offer.topic.qid
                if offer.status == "wait":  # (moved once another's judgment opens a batch)
                    offers[person.id] = service.next_document(person, qid)
                    moved = moved or offers[person.id].status != "wait"
                    continue
                if offer.status != "judge" or (limit is not None and made >= limit):
                    continue
                assert offer.docno is not None
                label = oracle(qid, [offer.docno])[offer.docno]
                key = uuid.UUID(int=keys.getrandbits(128)).hex
                judge: Judge = functools.partial(service.judge_and_offer, person, qid,
                                                 offer.docno, label, 0.0, key)
                _, offers[person.id] = judge() if around is None else around(offer, judge)
                made += 1
                moved = True
            if not moved:
                return made
        return made
    finally:
        service.close()


PACINGS = ("fixed", "poisson")
"""How paced assessors space their judgments (:func:`drive`)."""


def drive(url: str, campaign: str, assessors: Sequence[Assessor], oracle: Oracle,
          deadline: float = 3600.0, wait: float = 0.05, rate: float | None = None,
          pacing: str = "fixed", rng: np.random.Generator | None = None) -> Report:
    """Let every assessor judge its topics until they are done (see the module
    docstring); raise UsageError if an assessor gives up (deadline, or a 4xx answer).

    ``rate``: judgments per second for all assessors together, each sending on a schedule
    instead of as fast as answers come; latencies then count from the scheduled moment, so
    a server falling behind is not hidden by clients waiting for it (no coordinated
    omission). ``pacing``: ``fixed``, each assessor every ``len(assessors) / rate`` seconds,
    the assessors' starts evenly staggered (they move in lockstep: assessors of alike topics
    complete their batches within the same period); ``poisson``, each assessor's gaps drawn
    independently from an exponential distribution of that mean (each its own generator,
    spawned from ``rng``), as independent people judging at the same mean rate."""
    if pacing not in PACINGS:
        raise UsageError(f"pacing: one of {', '.join(PACINGS)}, not {pacing!r}")
    if pacing != "fixed" and rng is None:
        raise UsageError(f"pacing {pacing} draws its gaps: give a random generator")
    gaps = rng.spawn(len(assessors)) if rng is not None else [None] * len(assessors)
    report = Report()
    stop_at = time.monotonic() + deadline
    started = time.perf_counter()
    every = None if rate is None else len(assessors) / rate
    threads = [threading.Thread(target=_assess, args=(
        url, campaign, a, oracle, report, stop_at, wait,
        None if every is None else _schedule(started, every, i, len(assessors), pacing,
                                             gaps[i])),
        daemon=True) for i, a in enumerate(assessors)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.seconds = time.perf_counter() - started
    if report.errors:
        raise UsageError(f"a simulated assessor stopped: {report.errors[0]}")
    return report


def _schedule(started: float, every: float, position: int, count: int, pacing: str,
              rng: np.random.Generator | None) -> Iterator[float]:
    """The moments (``time.perf_counter()``) at which the assessor at ``position`` of
    ``count`` sends its judgments, one every ``every`` seconds on average (:func:`drive`'s
    ``pacing``; ``rng``: this assessor's gaps, for ``poisson``)."""
    if pacing == "fixed":
        moment = started + every * position / count
        while True:
            yield moment
            moment += every
    assert rng is not None
    moment = started
    while True:
        moment += float(rng.exponential(every))
        yield moment


def _assess(url: str, campaign: str, assessor: Assessor, oracle: Oracle, report: Report,
            stop_at: float, wait: float, schedule: Iterator[float] | None) -> None:
    client = _Client(url, assessor.token)
    pending = list(assessor.topics)  # on "wait", the next topic first (a campaign's plan
    idle = 0  # may hold a topic until the others are judged); a pause once all wait
    try:
        while pending:
            topic = pending.pop(0)
            base = f"/api/campaigns/{campaign}/topics/{topic}"
            offer = client.call("GET", f"{base}/next", None, report, stop_at)
            if offer["status"] == "wait":
                pending.append(topic)
                idle += 1
                if idle >= len(pending):
                    time.sleep(wait)
                    idle = 0
                continue
            idle = 0
            while offer["status"] == "judge":
                docno = offer["document"]["docno"]
                body = {"docno": docno, "label": oracle(topic, [docno])[docno],
                        "seconds": 0.0, "key": uuid.uuid4().hex}
                begun = time.perf_counter()
                if schedule is not None:
                    begun = next(schedule)
                    time.sleep(max(0.0, begun - time.perf_counter()))
                answer = client.call("POST", f"{base}/judgments", body, report, stop_at)
                elapsed = time.perf_counter() - begun
                with report.lock:
                    report.keys.append(body["key"])
                    report.judged.append((topic, docno))
                    report.latencies.append(elapsed)
                    report.server_latencies.append(client.timings.get("app", math.nan))
                    report.server_timings.append(client.timings)
                    report.sent.append(begun)
                offer = answer["next"]
            if offer["status"] == "wait":
                pending.append(topic)
    except Exception as exc:
        with report.lock:
            report.errors.append(f"{assessor.name}: {exc}")
    finally:
        client.close()


class _Client:
    """One keep-alive HTTP connection (the standard library's: light, so that the clients
    cost the machine little next to the server they load)."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Authorization": f"Bearer {token}",
                        "Content-Type": "application/json"}
        self.connection: http.client.HTTPConnection | None = None
        self.timings: dict[str, float] = {}
        """The last answer's ``Server-Timing`` metrics (name -> seconds)."""

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def call(self, method: str, path: str, body: dict[str, Any] | None, report: Report,
             stop_at: float) -> dict[str, Any]:
        """One API call, retried (same body, same key) on connection errors and 5xx."""
        payload = None if body is None else json.dumps(body)
        pause = 0.05
        while True:
            try:
                if self.connection is None:
                    self.connection = http.client.HTTPConnection(self.host, self.port,
                                                                 timeout=30)
                self.connection.request(method, path, body=payload, headers=self.headers)
                response = self.connection.getresponse()
                data = response.read()
                self.timings = parse(response.getheader("server-timing"))
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                problem = type(exc).__name__
            else:
                if response.status < 500:
                    if response.status >= 400:
                        raise UsageError(f"{method} {path}: {response.status} "
                                         f"{data[:200].decode(errors='replace')}")
                    answer: dict[str, Any] = json.loads(data)
                    return answer
                problem = f"HTTP {response.status}"
            if time.monotonic() > stop_at:
                raise UsageError(f"{method} {path}: still failing at the deadline ({problem})")
            with report.lock:
                report.retries += 1
                report.problems[problem] += 1
            time.sleep(pause)
            pause = min(pause * 2, 1.0)


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` quantile (nearest rank) of ``values``."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]
