"""A campaign with ``--stop anytime`` (issue 32): its target check is the anytime rule's look
(the same stopping point as ``AnytimeJudging``, the rule ``sample --stop anytime`` and
``simulate`` run, on the same data and seed); the status and the organiser page show the
anytime-valid half-widths and the rate's extrapolation; migration 0004 keeps every row on
SQLite and PostgreSQL, both ways."""

from __future__ import annotations

import copy
import re
import uuid
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from sqlalchemy import inspect, select

from campaign_support import collection
from sampleval.campaign import models as m
from sampleval.campaign.app import create_app
from sampleval.campaign.organise import (
    Design,
    add_person,
    create_campaign,
    estimates_now,
    parse_grades,
    save_estimates,
)
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.campaign.target import rate_needed, rate_range, target_status
from sampleval.core.pool import Pool
from sampleval.errors import UsageError
from sampleval.estimation import anytime
from sampleval.judging.confident import AnytimeJudging, Target
from sampleval.selection import METHODS, Budget

GRADES = tuple(parse_grades("0,1,2"))
WIDTH = 0.2
TOPICS = 8
BUDGET = 100
TARGET = f"P@10:{WIDTH}"


def _judge_round(service: CampaignService, token: str, per_topic: int,
                 oracle: Any) -> int:
    """``per_topic`` judgments of every topic of the person (round robin); how many made."""
    person = service.person_by_token(token)
    assert person is not None
    made = 0
    for topic in service.topics_of(person):
        for _ in range(per_topic):
            offer = service.next_document(person, topic.qid)
            if offer.status != "judge":
                break
            assert offer.docno is not None
            service.judge(person, topic.qid, offer.docno,
                          oracle(topic.qid, [offer.docno])[offer.docno], None,
                          uuid.uuid4().hex)
            made += 1
    return made


def test_the_campaign_s_check_stops_where_the_anytime_rule_stops() -> None:
    """AnytimeJudging (the rule of ``sample --stop anytime`` and simulate's
    ``stop=anytime``) judges with the qrels; at each of its looks the campaign's check on
    the same sample (a copy of the selector that judged it, as the campaign's store restores
    it) gives the same widest anytime half-width, says 'not met' at every look but the last
    and 'met' at the look where the rule stopped."""
    c = collection(TOPICS)
    pool = Pool.from_runs(c.runs, depth=50)
    selector = METHODS["uniform"](pool, Budget(BUDGET), np.random.default_rng(7))
    rule = AnytimeJudging(selector, Target.parse(TARGET), start=10, batch=5)
    checked: list[tuple[int, float, bool]] = []

    def check() -> None:
        mine = copy.deepcopy(rule.selector)
        status = target_status(mine, mine.sample(), Target.parse(TARGET), 10, set(),
                               "anytime")
        checked.append((status["judged"], status["widest"], status["met"]))

    looks = 0
    while (batch := rule.next_batch()) is not None:
        if len(rule.looks) > looks:  # a look happened before this batch was handed out
            looks = len(rule.looks)
            check()
        topic, docnos = batch
        rule.observe(topic, c.oracle(topic, docnos))
    assert rule.reason == "target met"
    check()
    assert len(rule.looks) > 2 and len(checked) == len(rule.looks)
    for (n, w), (judged, widest, met) in zip(rule.looks, checked, strict=True):
        assert judged == n and widest == pytest.approx(w, rel=1e-12)
        assert met == (w <= WIDTH)
    assert [met for *_, met in checked] == [False] * (len(checked) - 1) + [True]


def _campaign(store: Store, name: str, stop: str) -> tuple[str, str]:
    """A campaign of a method without committed phases (``active``), whose hand-out is its
    own whatever the stop mode, so that two campaigns judged alike hold the same sample
    (with committed phases an ``anytime`` campaign hands out the rule's plan:
    test_campaign_plan.py)."""
    c = collection(TOPICS)
    boss = create_campaign(store, Design(name, "active", Budget(BUDGET), params={"batch": "5"},
                                         depth=50, seed=7, grades=GRADES, target=TARGET,
                                         target_start=10, target_stop=stop), c.runs)
    return boss, add_person(store, name, "ann")[0]


def _beside_a_committed_one(tmp_path: Path, name: str) -> tuple[str, Store, str, str, str]:
    """A store holding campaign ``fixed`` (``committed``) and ``name`` (``anytime``), to be
    judged alike: its url, the store, ``fixed``'s assessor token, ``name``'s organiser and
    assessor tokens."""
    url = f"sqlite:///{tmp_path}/t.db"
    store = Store(url)
    _, fixed_token = _campaign(store, "fixed", "committed")
    boss, token = _campaign(store, name, "anytime")
    return url, store, fixed_token, boss, token


def test_an_anytime_campaign_shows_anytime_widths_and_stops_at_its_first_look_meeting_them(
        tmp_path: Path) -> None:
    """Two campaigns judged alike, ``committed`` and ``anytime``: the anytime one's
    half-widths are the confidence sequence's on the committed one's variances (so wider),
    its status carries the looks and the rate's extrapolation, and it stops (the store
    records why) at the first look where every half-width meets the target."""
    c = collection()
    url, store, fixed_token, boss, token = _beside_a_committed_one(tmp_path, "any")
    service = CampaignService(store)
    z = NormalDist().inv_cdf(0.975)
    tuned = anytime.target_variance(WIDTH)
    stopped, seen = None, []
    try:
        while stopped is None:
            made = _judge_round(service, token, 5, c.oracle)
            _judge_round(service, fixed_token, 5, c.oracle)
            assert made, "the budget ran out before the target was met"
            fixed = estimates_now(store, "fixed")[3]
            rows, note, count, status = estimates_now(store, "any")
            assert fixed is not None and status is not None
            assert status["stop"] == "anytime" and fixed["stop"] == "committed"
            assert status["judged"] == fixed["judged"]
            if status["short_of_start"]:
                continue
            for run, w in status["half_widths"].items():  # same sample, the sequence's width
                v = (fixed["half_widths"][run] / z) ** 2
                assert w == pytest.approx(float(anytime.half_width(v, tuned)), rel=1e-9)
                assert w >= fixed["half_widths"][run]
            assert status["widest"] > fixed["widest"]
            assert "anytime-valid" in status["text"]
            seen.append(status)
            with store.read() as session:
                campaign_id = session.scalar(select(m.Campaign.id).where(
                    m.Campaign.name == "any"))
            stopped = save_estimates(store, campaign_id, rows, note, count, status)
    finally:
        service.close()
    assert len(seen) > 2
    assert [s["met"] for s in seen] == [False] * (len(seen) - 1) + [True]
    assert all(s["widest"] > WIDTH for s in seen[:-1]) and seen[-1]["widest"] <= WIDTH
    assert "anytime-valid" in stopped
    # the looks accumulate in the stored status; the rate is the forecast from them
    looks = seen[-1]["looks"]
    assert [n for n, _ in looks] == [s["judged"] for s in seen]
    before = seen[-2]
    assert before["rate_needed"] == rate_needed(before["looks"], WIDTH)
    assert f"about {before['rate_needed']} more judgments" in before["text"] or (
        before["rate_needed"] is None)
    with TestClient(create_app(url, interval=3600), base_url="http://127.0.0.1:8000") as client:
        form = client.get(f"/login?token={boss}").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)  # type: ignore[union-attr]
        client.post("/login", data={"token": boss, "csrf_token": csrf}, follow_redirects=False)
        page = client.get("/c/any/organiser")
        assert page.status_code == 200, page.text
        assert "Anytime-valid 95% half-width" in page.text
        assert "anytime-valid 95% half-width</th>" in page.text
        assert 'id="anytime-note"' in page.text
    store.close()


def test_rate_needed_is_the_forecast_from_the_looks() -> None:
    """The variance of the widest mean falling as n^-1.5 (half-widths the anytime
    sequence's): the rate says the judgments left until it reaches V*, with a range; the
    straight line through the first and latest looks said far fewer."""
    tuned = anytime.target_variance(WIDTH)
    n = np.array([100.0, 150.0, 200.0, 250.0])
    widths = anytime.half_width(tuned * (n / 1000.0) ** -1.5, tuned)
    looks = [[a, float(w)] for a, w in zip(n, widths, strict=True)]
    assert abs(rate_needed(looks, WIDTH) - 750) <= 1  # type: ignore[operator]
    line = (widths[-1] - WIDTH) * (n[-1] - n[0]) / (widths[0] - widths[-1])
    assert line < 400
    low, high = rate_range(looks, WIDTH)  # type: ignore[misc]
    assert low is not None and high is not None and low <= 750 <= high + 1
    assert rate_needed([*looks, [300, WIDTH * 0.9]], WIDTH) == 0
    assert rate_needed(looks[:1], WIDTH) is None and rate_range(looks[:2], WIDTH) is None
    assert rate_needed([[100, 0.3], [200, 0.4]], WIDTH) is None


def test_rate_needed_reads_a_mixture_campaign_s_looks_by_the_mixture() -> None:
    """A campaign kept on the normal mixture (migration 0007) records the mixture's
    half-widths: its rate reads them back through its rule's boundary, the mixture (the same 750 judgments
    left), where reading them as the range boundary's said otherwise."""
    tuned = anytime.target_variance(WIDTH, ratio=None)
    n = np.array([100.0, 150.0, 200.0, 250.0])
    widths = anytime.half_width(tuned * (n / 1000.0) ** -1.5, tuned, ratio=None)
    looks = [[a, float(w)] for a, w in zip(n, widths, strict=True)]
    assert abs(rate_needed(looks, WIDTH, boundary="mixture") - 750) <= 1  # type: ignore[operator]
    assert abs(rate_needed(looks, WIDTH) - 750) > 25  # type: ignore[operator]
def test_stop_anytime_is_checked_when_the_campaign_is_created(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path}/t.db")
    with pytest.raises(UsageError, match="stop must be one of"):
        create_campaign(store, Design("x", "uniform", Budget(50), depth=50, seed=7,
                                      grades=GRADES, target=TARGET, target_stop="never"),
                        collection().runs)
    store.close()


def test_migration_0004_keeps_every_row_both_ways(store_url: str) -> None:
    """A store at 0003 holding a judged campaign goes to 0004 (every campaign is
    ``committed``), down again (the column goes) and up: every row of every table kept."""
    from sqlalchemy import text

    from sampleval.campaign.schema import migrate

    c = collection()
    store = Store(store_url)
    create_campaign(store, Design("c1", "uniform", Budget(20), depth=30, seed=3,
                                  grades=GRADES, target=TARGET), c.runs)
    token = add_person(store, "c1", "ann")[0]
    service = CampaignService(store)
    assert _judge_round(service, token, 3, c.oracle) > 0
    service.close()
    migrate(store.engine, "0003")
    tables = [t for t in inspect(store.engine).get_table_names() if t != "alembic_version"]

    def rows() -> dict[str, int]:
        with store.engine.connect() as connection:
            return {t: int(connection.execute(text(f"SELECT count(*) FROM {t}")).scalar_one())
                    for t in tables}

    def columns() -> set[str]:
        return {col["name"] for col in inspect(store.engine).get_columns("campaigns")}

    before = rows()
    assert before["judgments"] > 0 and "target_stop" not in columns()
    migrate(store.engine, "0004")
    assert rows() == before and "target_stop" in columns()
    with store.read() as session:
        assert session.scalar(select(m.Campaign.target_stop)) == "committed"
    migrate(store.engine, "0003")
    assert rows() == before and "target_stop" not in columns()
    migrate(store.engine, "head")
    assert rows() == before
    store.close()


def test_a_campaign_begun_under_the_mixture_keeps_it_after_migration_0007(
        tmp_path: Path) -> None:
    """Revision 0007: an ``anytime`` campaign stored before it (the normal mixture then)
    becomes ``anytime-mixture`` and its half-widths stay the mixture's; one created after
    it gets the range boundary; the downgrade turns it back."""
    from sampleval.campaign.schema import migrate

    c = collection()
    _, store, fixed_token, _, token = _beside_a_committed_one(tmp_path, "old")
    service = CampaignService(store)
    try:
        for _ in range(3):
            _judge_round(service, token, 5, c.oracle)
            _judge_round(service, fixed_token, 5, c.oracle)
    finally:
        service.close()
    migrate(store.engine, "0006")  # "old" now as a store before 0007 held it
    migrate(store.engine, "head")
    _campaign(store, "new", "anytime")
    with store.read() as session:
        stops = dict(session.execute(select(m.Campaign.name, m.Campaign.target_stop)).all())
    assert stops == {"fixed": "committed", "old": "anytime-mixture", "new": "anytime"}
    fixed = estimates_now(store, "fixed")[3]
    old = estimates_now(store, "old")[3]
    assert fixed is not None and old is not None and old["judged"] == fixed["judged"]
    assert "anytime-valid" in old["text"]
    z = NormalDist().inv_cdf(0.975)
    mixture = anytime.target_variance(WIDTH, ratio=None)
    ranged = anytime.target_variance(WIDTH)
    assert any(w > 0 for w in old["half_widths"].values())
    for run, w in old["half_widths"].items():
        v = (fixed["half_widths"][run] / z) ** 2
        assert w == pytest.approx(float(anytime.half_width(v, mixture, ratio=None)), rel=1e-9)
        if w > 0:  # (the range boundary would give another width)
            assert w != pytest.approx(float(anytime.half_width(v, ranged)), rel=1e-6)
    migrate(store.engine, "0006")
    with store.read() as session:
        assert session.scalar(select(m.Campaign.target_stop).where(
            m.Campaign.name == "old")) == "anytime"
    store.close()
