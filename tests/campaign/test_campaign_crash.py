"""Crash safety: the server in its own process, 8 concurrent assessors making 500
judgments through the API (retrying on connection errors with the same idempotency key),
SIGKILL at a random moment, a restart on the same port, and the campaign finished. Every
acknowledged judgment is in the store exactly once, nothing unacknowledged is, and the
final sample is the one an uninterrupted run draws with the same seed and oracle. On
SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import func, select

from campaign_support import alive, artifacts, assert_same_sample, children, collection, reference
from sampleval.campaign import models as m
from sampleval.campaign.organise import Design, create_campaign, export_sample, parse_grades
from sampleval.campaign.server import ServerProcess
from sampleval.campaign.simulation import drive, oracle_assessors
from sampleval.campaign.store import Store
from sampleval.selection import Budget

TOPICS, BUDGET, CLIENTS = 5, 100, 8  # 500 judgments; the kill lands after 100-299


@pytest.mark.slow
def test_sigkill_at_a_random_moment_loses_no_acknowledged_judgment(store_url: str) -> None:
    c = collection(n_topics=TOPICS, n_runs=8, n_docs=600, depth=150, seed=5)
    store = Store(store_url)
    create_campaign(store, Design("crash", "active", Budget(BUDGET), depth=150, seed=13,
                                  grades=tuple(parse_grades("0,1,2"))), c.runs)
    assessors = oracle_assessors(store, "crash", CLIENTS)
    store.close()
    kind = store_url.split(":")[0].split("+")[0]
    log = artifacts() / f"crash-{kind}.log"
    log.unlink(missing_ok=True)
    server = ServerProcess(store_url, refresh=5.0, log=log).start()
    restarted: ServerProcess | None = None
    try:
        result: dict[str, object] = {}
        worker = threading.Thread(target=lambda: result.update(
            report=drive(server.url, "crash", assessors, c.oracle, deadline=600)))
        worker.start()
        kill_after = int(np.random.default_rng().integers(100, TOPICS * BUDGET - 200))
        watch = Store(store_url, migrate=False)
        deadline = time.monotonic() + 300
        while _count(watch) < kill_after and worker.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert worker.is_alive(), "the campaign ended before the kill"
        helpers = children(server.process.pid)
        server.kill()  # SIGKILL, mid-flight
        killed_at = _count(watch)
        watch.close()
        restarted = ServerProcess(store_url, port=server.port, refresh=5.0, log=log).start()
        worker.join(600)
        assert not worker.is_alive()
        # the killed server's estimator worker went with it
        gone_by = time.monotonic() + 10
        while any(alive(p) for p in helpers) and time.monotonic() < gone_by:
            time.sleep(0.1)
        assert not any(alive(p) for p in helpers)
    finally:  # also when an assertion fails: nothing left running
        server.kill()
        if restarted is not None:
            restarted.stop()
    report = result["report"]
    acknowledged = report.keys  # type: ignore[attr-defined]
    assert len(acknowledged) == len(set(acknowledged)) == TOPICS * BUDGET
    assert 0 < killed_at < TOPICS * BUDGET
    store = Store(store_url)
    with store.read() as session:
        stored = dict(session.execute(select(m.Judgment.key, func.count()).group_by(
            m.Judgment.key)).all())
    assert set(stored) == set(acknowledged)  # all acknowledged, nothing else
    assert set(stored.values()) == {1}  # each once
    exported, _ = export_sample(store, "crash")
    store.close()
    assert_same_sample(exported, reference(c.runs, "active", Budget(BUDGET), 150, 13,
                                           c.oracle))
    retries = report.retries  # type: ignore[attr-defined]
    problems = report.problems  # type: ignore[attr-defined]
    print(f"{kind}: killed after {killed_at} stored judgments; {retries} retried requests "
          f"({dict(problems)})")
    assert retries > 0
    assert sum(problems.values()) == retries  # each retry says why (the killed server)


def _count(store: Store) -> int:
    with store.read() as session:
        return int(session.scalar(select(func.count()).select_from(m.Judgment)) or 0)

