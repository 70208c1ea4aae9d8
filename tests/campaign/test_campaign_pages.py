"""The campaign pages (issue 27's friction): a login link signs in with one click but a GET
alone signs nobody in; a finished topic points to the next topic waiting."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from campaign_support import collection
from sampleval.campaign.app import create_app
from sampleval.campaign.organise import Design, add_person, create_campaign
from sampleval.campaign.pages import next_waiting
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.selection import Budget


@pytest.fixture
def campaign(tmp_path: Path) -> tuple[str, str]:
    """A uniform campaign of 5 documents per topic; alice judges topics 1, 2 and 3."""
    url = f"sqlite:///{tmp_path}/p.db"
    store = Store(url)
    create_campaign(store, Design("c1", "uniform", Budget(5), depth=30, seed=1),
                    collection().runs)
    alice = add_person(store, "c1", "alice", ["1", "2", "3"])[0]
    store.close()
    return url, alice


def test_a_login_link_posts_itself_and_a_get_signs_nobody_in(campaign: tuple[str, str]
                                                             ) -> None:
    url, alice = campaign
    with TestClient(create_app(url, live=False), base_url="http://127.0.0.1:8000") as client:
        page = client.get(f"/login?token={alice}")
        assert client.get("/api/me").status_code == 401  # a link preview's GET: no session
        form = re.search(r'<form method="post" action="/login" id="login"([^>]*)>', page.text)
        assert form is not None and 'data-auto="yes"' in form.group(1)
        assert '<script src="/static/login.js" defer></script>' in page.text
        script = client.get("/static/login.js").text
        assert 'form.dataset.auto === "yes"' in script and "form.submit()" in script
        # the POST the script makes is the form's, with its CSRF token: as pressing the button
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf is not None
        answer = client.post("/login", data={"token": alice, "csrf_token": csrf.group(1)},
                             follow_redirects=False)
        assert answer.status_code == 303
        assert client.get("/api/me").status_code == 200
        client.cookies.clear()
        plain = client.get("/login").text  # without a token: nothing to post
        assert "login.js" not in plain and "data-auto" not in plain


def test_a_finished_topic_points_to_the_next_topic_waiting(campaign: tuple[str, str]) -> None:
    url, alice = campaign
    store = Store(url)
    service = CampaignService(store)
    person = service.person_by_token(alice)
    assert person is not None
    oracle = collection().oracle
    for qid in ("2", "1"):  # topics 2 and 1 judged to the end; 3 waits
        while (offer := service.next_document(person, qid)).status == "judge":
            label = min(1.0, oracle(qid, [offer.docno])[offer.docno])
            service.judge(person, qid, offer.docno, label, 1.0, uuid.uuid4().hex)
    service.close()
    store.close()
    with TestClient(create_app(url, live=False), base_url="http://127.0.0.1:8000") as client:
        page = client.get(f"/login?token={alice}")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf is not None
        client.post("/login", data={"token": alice, "csrf_token": csrf.group(1)})
        done = client.get("/c/c1/judge?topic=1").text
        assert "This topic is done" in done
        link = re.search(r'<p id="next-topic" class="next">Next topic waiting for you: '
                         r'<a href="([^"]+)">topic 3</a>', done)
        assert link is not None and link.group(1) == "/c/c1/judge?topic=3"
        assert 'id="next-topic" class="next" hidden' in client.get("/c/c1/judge?topic=3").text


def test_the_next_topic_is_the_following_one_that_waits() -> None:
    order = ["1", "2", "3", "4"]
    assert next_waiting(order, {"1", "4"}, "2") == "4"
    assert next_waiting(order, {"1"}, "3") == "1"  # wrapping round
    assert next_waiting(order, {"3"}, "3") is None
    assert next_waiting(order, set(), "1") is None
