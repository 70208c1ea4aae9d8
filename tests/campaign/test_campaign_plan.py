"""A campaign with ``--stop anytime`` on a method with committed phases (issue 32): its
hand-out is the anytime rule on the committed rule's plan (``AnytimeJudging(committed=True)``,
the rule ``sample --stop anytime`` and ``simulate`` run for these methods): each topic its
pilot, then its phase of each plan, topics waiting for the next plan offered ``wait`` and
handed their phase when it is made; a server killed and restarted continues the same plan
(the rule's state is saved with every batch); the status shows the anytime-valid
half-widths and the judgments the current plan still needs, and the campaign stops at the
first look where every half-width meets the target."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi")

from sqlalchemy import select

from campaign_support import collection
from sampleval.campaign import models as m
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
from sampleval.campaign.target import PlanSelector
from sampleval.core.pool import Pool
from sampleval.estimation import anytime
from sampleval.judging.confident import STATE_FORMAT, AnytimeJudging, Target
from sampleval.selection import METHODS, Budget

GRADES = tuple(parse_grades("0,1,2"))
TOPICS = 8
BUDGET = 150
SEED = 7


def _reference(target: str) -> tuple[AnytimeJudging, dict[str, list[str]]]:
    """The rule judged by the qrels, looking only where a plan's phases are all judged (as
    a campaign whose live check has not run): each topic's documents in hand-out order."""
    c = collection(TOPICS)
    selector = METHODS["stratified"](Pool.from_runs(c.runs, depth=50), Budget(BUDGET),
                                     np.random.default_rng(SEED))
    rule = AnytimeJudging(selector, Target.parse(target), start=20, batch=5, committed=True,
                          every=10 ** 9)
    handed: dict[str, list[str]] = {}
    while (batch := rule.next_batch()) is not None:
        topic, docnos = batch
        handed.setdefault(topic, []).extend(docnos)
        rule.observe(topic, c.oracle(topic, docnos))
    return rule, handed


def _create(store: Store, target: str) -> str:
    c = collection(TOPICS)
    create_campaign(store, Design("plan", "stratified", Budget(BUDGET), depth=50, seed=SEED,
                                  grades=GRADES, target=target, target_start=20,
                                  target_stop="anytime"), c.runs)
    return add_person(store, "plan", "ann")[0]


def _round(service: CampaignService, token: str, oracle: Any) -> tuple[int, set[str]]:
    """Up to 5 judgments of every topic of the assessor; how many made, and the offers'
    statuses when there was nothing to judge."""
    person = service.person_by_token(token)
    assert person is not None
    made, idle = 0, set()
    for topic in service.topics_of(person):
        for _ in range(5):
            offer = service.next_document(person, topic.qid)
            if offer.status != "judge":
                idle.add(offer.status)
                break
            assert offer.docno is not None
            service.judge(person, topic.qid, offer.docno,
                          oracle(topic.qid, [offer.docno])[offer.docno], None,
                          uuid.uuid4().hex)
            made += 1
    return made, idle


def _handed(store: Store) -> dict[str, list[str]]:
    """Each topic's documents the campaign proposed, in order."""
    with store.read() as session:
        rows = session.execute(select(m.Topic.qid, m.Item.docno).join(m.Item).order_by(
            m.Topic.position, m.Item.batch, m.Item.position)).all()
    out: dict[str, list[str]] = {}
    for qid, docno in rows:
        out.setdefault(qid, []).append(docno)
    return out


@pytest.mark.slow  # about 45 s: a campaign judged through two plans and two restarts
def test_the_campaign_hands_out_the_rule_s_plan_and_continues_it_after_a_restart(
        tmp_path: Path) -> None:
    """Judged by the qrels without live checks (so it looks only where the rule's
    simulation looks: at the end of each plan), the campaign proposes each topic exactly
    the documents the rule hands out, in the same order, through its pilots, its plans and
    the shortfall plans after them, though the server is killed and restarted from the
    store twice on the way; topics whose phase is all judged are offered ``wait`` until
    the next plan gives them one. Fails on main: there the campaign's hand-out is the
    method's own layout for each topic's budget."""
    target = "AP:0.1"
    rule, want = _reference(target)
    assert max(len(p) for p in rule.phases) >= 3  # a shortfall plan: topics reopened twice
    c = collection(TOPICS)
    store = Store(f"sqlite:///{tmp_path}/t.db")
    token = _create(store, target)
    service = CampaignService(store)
    rounds, idle = 0, set()
    try:
        while True:
            made, statuses = _round(service, token, c.oracle)
            idle |= statuses
            if not made:
                break
            rounds += 1
            if rounds in (3, 20):  # killed: a new server from the store alone
                service.close()
                service = CampaignService(store)
        saved = service.saved_state(service.campaign_ids()[0])
    finally:
        service.close()
    assert "wait" in idle
    assert saved["format"] == STATE_FORMAT and saved["committed"]
    assert _handed(store) == want
    store.close()


def test_the_campaign_shows_the_plan_left_and_stops_at_the_first_look_meeting_the_target(
        tmp_path: Path) -> None:
    """With the live check after every round: the status gives the anytime-valid
    half-widths of the phases' sample and the judgments the current plan still needs,
    the campaign stops at the first check where every half-width meets the target (no
    later than the rule's simulation, looking at plan ends only), its hand-out a prefix of
    the rule's. Fails on main: there the campaign's hand-out is the method's own layout and
    its status has no plan."""
    target, width = "P@10:0.12", 0.12
    _, want = _reference(target)
    c = collection(TOPICS)
    store = Store(f"sqlite:///{tmp_path}/t.db")
    token = _create(store, target)
    service = CampaignService(store)
    stopped, seen = None, []
    try:
        while stopped is None:
            made, _ = _round(service, token, c.oracle)
            assert made, "the campaign ran out before its target was met"
            rows, note, count, status = estimates_now(store, "plan")
            assert status is not None and status["stop"] == "anytime"
            seen.append(status)
            with store.read() as session:
                campaign_id = session.scalar(select(m.Campaign.id))
            stopped = save_estimates(store, campaign_id, rows, note, count, status)
    finally:
        service.close()
    last = seen[-1]
    assert last["met"] and all(not s["met"] for s in seen[:-1])
    assert all(w is not None and w <= width for w in last["half_widths"].values())
    assert "anytime-valid" in stopped
    planned = [s for s in seen if s.get("plan_needed") is not None]
    assert planned and all(s["plan_needed"] >= 0 for s in planned)
    assert any(f"the current plan has {s['plan_needed']} judgments left" in s["text"]
               for s in seen[:-1])
    got = _handed(store)
    assert set(got) == set(want)
    for topic, docnos in got.items():
        assert docnos == want[topic][:len(docnos)]
    # the widths are the range boundary's on the phases' sample's variance
    with store.read() as session:
        state = session.scalar(select(m.SelectorState.state))
    from sampleval.campaign.organise import decode_state

    restored = PlanSelector.restore(Pool.from_runs(c.runs, depth=50), decode_state(state))
    rule = restored.rule
    rule._refresh()
    np.testing.assert_allclose(sorted(rule.half_widths()), sorted(
        w for w in last["half_widths"].values()), rtol=1e-9)
    assert float(rule.tuned) == pytest.approx(anytime.target_variance(width))
    store.close()


def test_the_organiser_page_and_campaign_status_show_the_plan_left(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After the pilots and part of the first plan: the organiser page and ``campaign
    status`` give the anytime-valid half-widths and the judgments the current plan still
    needs. Fails on main: there the status has no plan."""
    import re

    from fastapi.testclient import TestClient

    from sampleval import cli
    from sampleval.campaign.app import create_app

    c = collection(TOPICS)
    url = f"sqlite:///{tmp_path}/t.db"
    store = Store(url)
    token = _create(store, "P@10:0.12")
    boss = add_person(store, "plan", "boss", role="organiser")[0]
    service = CampaignService(store)
    try:
        for _ in range(6):  # 30 per topic: the pilots, then the plan's first batch
            _round(service, token, c.oracle)
        rows, note, count, status = estimates_now(store, "plan")
        with store.read() as session:
            campaign_id = session.scalar(select(m.Campaign.id))
        save_estimates(store, campaign_id, rows, note, count, status)
    finally:
        service.close()
    assert status is not None and status["plan_needed"] > 0 and not status["met"]
    left = status["plan_needed"]
    with TestClient(create_app(url, interval=3600), base_url="http://127.0.0.1:8000") as client:
        form = client.get(f"/login?token={boss}").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)  # type: ignore[union-attr]
        client.post("/login", data={"token": boss, "csrf_token": csrf}, follow_redirects=False)
        page = client.get("/c/plan/organiser").text
    assert f"the current plan has <strong>{left}</strong> judgments left" in page
    assert "anytime-valid 95% half-width</th>" in page
    store.close()
    capsys.readouterr()
    cli.run(["campaign", "status", "plan", "--db", url])
    printed = " ".join(capsys.readouterr().out.split())  # the title wraps at the table
    assert f"the current plan has {left} judgments left" in printed
    assert "anytime-valid 95% half-width" in printed
