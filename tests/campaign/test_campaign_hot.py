"""The judging calls of scripts served without FastAPI's routing (``campaign/hot.py``), and
each request's person read without SQLAlchemy (``Store.first``): the same answers as
FastAPI's, refusals included, the same person as the store holds at that moment."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

import fastapi.routing
from fastapi.testclient import TestClient

from campaign_support import collection
from sampleval.campaign import hot
from sampleval.campaign.app import create_app
from sampleval.campaign.organise import Design, add_person, create_campaign, parse_grades
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.selection import Budget


def _campaign(folder: Path) -> tuple[str, dict[str, str]]:
    url = f"sqlite:///{folder}/hot.db"
    store = Store(url)
    grades = tuple(parse_grades("0,1,2"))
    create_campaign(store, Design("c1", "uniform", Budget(4), depth=30, seed=3,
                                  grades=grades), collection().runs)
    people = {name: add_person(store, "c1", name, topics)[0]
              for name, topics in (("alice", ["1"]), ("bob", ["1"]), ("dan", ["2"]))}
    store.close()
    return url, people


def _script(people: dict[str, str]) -> Callable[[TestClient], list[tuple[Any, ...]]]:
    """A fixed sequence of judging calls, good and bad; each answer as (status, JSON body
    less its timestamps, the header names less Server-Timing's values)."""
    keys = [uuid.UUID(int=i).hex for i in range(8)]

    def answers(client: TestClient) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []

        def call(method: str, path: str, token: str | None, **options: Any) -> Any:
            headers = options.pop("headers", {})
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
            response = client.request(method, f"/api/campaigns/{path}", headers=headers,
                                      **options)
            body = response.json()
            for part in (body, body.get("judgment", {}), body.get("undone", {})):
                if isinstance(part, dict):
                    part.pop("created_at", None)
            out.append((method, path, response.status_code, body,
                        sorted(response.headers.keys())))
            return body

        alice, bob, dan = people["alice"], people["bob"], people["dan"]
        docno = call("GET", "c1/topics/1/next", alice)["document"]["docno"]
        call("GET", "c1/topics/1/next", bob)
        judge = "c1/topics/1/judgments"
        call("POST", judge, alice, json={"docno": docno, "label": 1, "key": keys[0]})
        call("POST", judge, alice, json={"docno": docno, "label": 1, "key": keys[0]})  # retry
        call("POST", judge, alice, json={"docno": docno, "label": 2, "key": keys[0]})
        call("POST", judge, bob, json={"docno": docno, "label": 1, "key": keys[1]})  # 409
        call("POST", judge, alice, json={"docno": docno, "label": 7, "key": keys[2]})  # grade
        call("POST", judge, alice, json={"docno": "nope", "label": 1, "key": keys[2]})
        call("POST", judge, alice, json={"docno": docno, "label": "1", "key": keys[2]})
        call("POST", judge, alice, json={"docno": docno, "label": 1})  # no key
        call("POST", judge, alice, content=b"{not json",
             headers={"content-type": "application/json"})
        call("POST", judge, alice, content=b'{"docno": "x", "label": 1, "key": "k"}',
             headers={"content-type": "text/plain"})
        call("POST", judge, alice + "x", json={"docno": docno, "label": 1, "key": keys[3]})
        call("POST", judge, None, json={"docno": docno, "label": 1, "key": keys[3]})
        call("POST", judge, dan, json={"docno": docno, "label": 1, "key": keys[3]})  # 403
        call("GET", "c1/topics/2/next", alice)  # not assigned
        call("GET", "c2/topics/1/next", alice)  # not her campaign
        call("GET", "c1/topics/9/next", alice)  # no such topic
        call("GET", "c1/topics/1/next", None, headers={"Authorization": f"Basic {alice}"})
        return out

    return answers


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths whose dependencies FastAPI resolved (its router ran them)."""
    seen: list[str] = []
    resolve = fastapi.routing.solve_dependencies

    async def solve(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["request"].url.path)
        return await resolve(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", solve)
    yield seen


def test_the_judging_calls_answer_as_fastapi_does(tmp_path: Path, counted: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    url, people = _campaign(tmp_path)
    twin = tmp_path / "twin"
    twin.mkdir()
    shutil.copy(tmp_path / "hot.db", twin / "hot.db")
    script = _script(people)
    with TestClient(create_app(url, live=False), base_url="http://127.0.0.1:8000") as client:
        served = script(client)
    by_fastapi = len(counted)
    with monkeypatch.context() as patch:
        patch.setattr(hot, "_taken", lambda scope: None)  # every request to FastAPI
        with TestClient(create_app(f"sqlite:///{twin}/hot.db", live=False),
                        base_url="http://127.0.0.1:8000") as client:
            reference = script(client)
    assert served == reference
    assert [status for *_, status, _, _ in served] == [
        200, 200, 201, 200, 409, 409, 422, 404, 422, 422, 422, 422, 401, 401, 403, 403,
        404, 404, 401]
    # FastAPI resolved only what the hot paths hand on: the bodies not of the model (a
    # label "1", no key), one not declared JSON, and the calls without a bearer token (the
    # body that is not JSON at all, handed on too, FastAPI refuses before resolving)
    assert by_fastapi == 5
    assert len(counted) == by_fastapi + len(reference) - 1  # (FastAPI: all but not JSON)


def test_a_person_is_read_without_sqlalchemy_and_a_reissued_token_stops_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, people = _campaign(tmp_path)
    store = Store(url)
    service = CampaignService(store)
    try:
        found = service.person_by_token(people["alice"])
        assert found is not None and (found.name, found.role, found.campaign) == (
            "alice", "assessor", "c1")

        def refused(*_: Any, **__: Any) -> Any:
            raise AssertionError("a person's look-up took a SQLAlchemy connection")

        monkeypatch.setattr(store.engine, "connect", refused)
        assert service.person_by_token(people["alice"]) == found
        assert service.person_by_token(people["alice"] + "x") is None
        other = Store(url)  # another process: `campaign add-assessor alice` again
        try:
            fresh = add_person(other, "c1", "alice", ["1"])[0]
        finally:
            other.close()
        assert service.person_by_token(people["alice"]) is None
        assert service.person_by_token(fresh) == found
    finally:
        service.close()
        store.close()
