"""The judging endpoints' ``Server-Timing`` header: where a request's time went, by step
(``docs/guide/campaigns.md``, Performance)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from campaign_support import collection
from sampleval.campaign.app import create_app
from sampleval.campaign.organise import Design, add_person, create_campaign, parse_grades
from sampleval.campaign.store import Store
from sampleval.campaign.timing import parse
from sampleval.selection import Budget

EVERY = {"auth", "lock", "offer", "handler", "cpu", "app"}
"""What every judging request reports."""
BATCH = {"labels", "observe", "propose", "save", "commit"}
"""What a judgment that completes its batch reports besides."""


@dataclass
class Site:
    client: TestClient
    headers: dict[str, str]
    base: str


@pytest.fixture
def site(tmp_path: str) -> Iterator[Site]:
    url = f"sqlite:///{tmp_path}/timing.db"
    store = Store(url)
    # dynamic with half of each batch judged: batch sizes 1, 2, 3, 4 are judged 1, 1, 2, 2
    # documents each, so some judgments complete their batch and some do not
    create_campaign(store, Design("t", "dynamic", Budget(8), params={"strategy": "D50"},
                                  depth=30, seed=3, grades=tuple(parse_grades("0,1"))),
                    collection().runs)
    token = add_person(store, "t", "ann", ["1"])[0]
    store.close()
    with TestClient(create_app(url, live=False), base_url="http://127.0.0.1:8000") as client:
        yield Site(client, {"Authorization": f"Bearer {token}"}, "/api/campaigns/t/topics/1")


def test_judging_answers_say_where_their_time_went(site: Site) -> None:
    """``next``, ``judgments`` and ``undo`` carry the steps' durations (before: only
    ``app``); a judgment completing its batch also the selector's steps and the commit."""
    c = site.client
    offer = c.get(f"{site.base}/next", headers=site.headers)
    assert set(parse(offer.headers["server-timing"])) >= EVERY, offer.headers
    kinds = []
    answer = offer.json()
    while answer["status"] == "judge":
        judged = c.post(f"{site.base}/judgments", headers=site.headers, json={
            "docno": answer["document"]["docno"], "label": 1, "key": uuid.uuid4().hex})
        assert judged.status_code == 201
        spans = parse(judged.headers["server-timing"])
        assert EVERY | {"commit"} <= set(spans), spans
        assert all(seconds >= 0 for seconds in spans.values())
        assert spans["handler"] <= spans["app"]
        completes = "observe" in spans
        assert set(spans) >= BATCH if completes else not set(spans) & (BATCH - {"commit"})
        kinds.append(completes)
        answer = judged.json()["next"]
    assert True in kinds and False in kinds, kinds
    undone = c.post(f"{site.base}/undo", headers=site.headers, json={})
    assert undone.status_code == 200
    assert set(parse(undone.headers["server-timing"])) >= EVERY


def test_server_timing_parses_joined_headers() -> None:
    assert parse("auth;dur=0.50, commit;desc=\"x\";dur=2, app;dur=3.5, bad;dur=x, nodur") == {
        "auth": 0.0005, "commit": 0.002, "app": 0.0035}
    assert parse(None) == {}


def test_the_load_benchmark_summarises_the_steps_by_kind(tmp_path: str) -> None:
    """``campaign_load.py``'s steps table: a row per kind and statistic, ``batch`` holding
    the requests whose header names ``observe``; the slowest 1% by ``app``; and
    ``--requests`` writes each request as a JSON line."""
    import json
    from pathlib import Path

    from benchmarks.campaign_load import TIMING_COLUMNS, timing_rows, write_requests

    from sampleval.campaign.simulation import Report

    batch = [{"app": 0.010 + i / 1000, "handler": 0.009, "cpu": 0.002, "commit": 0.005,
              "observe": 0.0001, "propose": 0.001} for i in range(100)]
    other = [{"app": 0.002, "handler": 0.0015, "cpu": 0.0005, "commit": 0.001}] * 50
    rows = timing_rows(batch + other)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("batch", "100", "p50"), ("batch", "100", "p99"), ("batch", "100", "slowest 1"),
        ("other", "50", "p50"), ("other", "50", "p99"), ("other", "50", "slowest 1")]
    column = {c: 3 + i for i, c in enumerate(TIMING_COLUMNS)}
    assert rows[2][column["app"]] == "109.0"  # the slowest batch request
    assert rows[0][column["ready"]] == "2.0"  # 9 - 2 - 5 ms
    assert rows[3][column["outside"]] == "0.5" and rows[3][column["propose"]] == "0.0"
    report = Report(latencies=[0.02, 0.03], server_timings=batch[:2], sent=[5.0, 5.5])
    out = Path(tmp_path) / "requests.jsonl"
    write_requests(report, out)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(x["at"], x["latency"], x["app"]) for x in lines] == [(0.0, 0.02, 0.01),
                                                                  (0.5, 0.03, 0.011)]
