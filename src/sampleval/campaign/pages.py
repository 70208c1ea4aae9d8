"""Server-rendered pages: login, the assessor's page, the organiser's page.

Pages use the session cookie only (never a bearer token); their scripts call the JSON API
with the session's CSRF token. Every text from runs, topics and the corpus is escaped by
the templates.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from sampleval.campaign.api import CampaignName, topic_out
from sampleval.campaign.labels import RULES
from sampleval.campaign.organise import TOPIC_ID, campaign_status
from sampleval.campaign.service import Person, ServiceError
from sampleval.campaign.tokens import new_secret, same
from sampleval.campaign.web import LOGIN_COOKIE, SESSION_COOKIE, service_of, templates
from sampleval.estimation.spec import measure_range

router = APIRouter(include_in_schema=False)


def _session(request: Request) -> tuple[Person, str] | None:
    cookie = request.cookies.get(SESSION_COOKIE)
    return service_of(request).session_person(cookie) if cookie else None


def _page(request: Request, name: str, code: int = 200, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context, status_code=code)


def _error(request: Request, code: int, message: str) -> HTMLResponse:
    return _page(request, "error.html", code, message=message)


@router.get("/")
def home(request: Request) -> Response:
    found = _session(request)
    if found is None:
        return RedirectResponse("/login", 303)
    person, _ = found
    page = "organiser" if person.role == "organiser" else "judge"
    return RedirectResponse(f"/c/{person.campaign}/{page}", 303)


@router.get("/login")
def login_form(request: Request, token: Annotated[str, Query(max_length=128)] = ""
               ) -> HTMLResponse:
    csrf = new_secret()
    response = _page(request, "login.html", token=token, csrf=csrf, failed=False)
    response.set_cookie(LOGIN_COOKIE, csrf, httponly=True, samesite="strict", max_age=3600)
    return response


@router.post("/login")
def login(request: Request, token: Annotated[str, Form(max_length=128)],
          csrf_token: Annotated[str, Form(max_length=128)]) -> Response:
    if not same(request.cookies.get(LOGIN_COOKIE), csrf_token):
        return _error(request, 403, "The login form expired or came from another site: "
                                    "open the login page again.")
    service = service_of(request)
    person = service.person_by_token(token.strip())
    if person is None:
        csrf = new_secret()
        response = _page(request, "login.html", 401, token="", csrf=csrf, failed=True)
        response.set_cookie(LOGIN_COOKIE, csrf, httponly=True, samesite="strict",
                            max_age=3600)
        return response
    cookie, _ = service.start_session(person)
    done = RedirectResponse("/", 303)
    done.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", max_age=7 * 86400)
    done.delete_cookie(LOGIN_COOKIE)
    return done


@router.post("/logout")
def logout(request: Request, csrf_token: Annotated[str, Form(max_length=128)]) -> Response:
    found = _session(request)
    if found is not None:
        if not same(found[1], csrf_token):
            return _error(request, 403, "Wrong CSRF token.")
        service_of(request).end_session(request.cookies[SESSION_COOKIE])
    response = RedirectResponse("/login", 303)
    response.delete_cookie(SESSION_COOKIE)
    return response


def _signed_in(request: Request, campaign: str) -> tuple[Person, str] | Response:
    found = _session(request)
    if found is None:
        return RedirectResponse("/login", 303)
    if found[0].campaign != campaign:
        return _error(request, 404, "No such campaign.")
    return found


@router.get("/c/{campaign}/judge")
def judge_page(request: Request, campaign: CampaignName,
               topic: Annotated[str | None, Query(max_length=64)] = None) -> Response:
    found = _signed_in(request, campaign)
    if isinstance(found, Response):
        return found
    person, csrf = found
    if person.role != "assessor":
        return RedirectResponse(f"/c/{campaign}/organiser", 303)
    service = service_of(request)
    mine = service.topics_of(person)
    if not mine:
        return _error(request, 403, "No topic is assigned to you yet.")
    waiting = [t.qid for t in mine if not (t.done and not t.open)]
    if topic is None:
        topic = waiting[0] if waiting else mine[0].qid
    if not TOPIC_ID.fullmatch(topic):
        return _error(request, 404, "No such topic.")
    try:
        offer = service.next_document(person, topic)
    except ServiceError as exc:
        return _error(request, exc.status, exc.message)
    runtime = service.runtime(person.campaign_id)
    keyed = all(g.value.is_integer() and 0 <= g.value <= 9 for g in runtime.info.grades)
    grades = [(g, f"{int(g.value)}" if keyed else str(i + 1))
              for i, g in enumerate(runtime.info.grades)]
    return _page(request, "judge.html", person=person, csrf=csrf, campaign=campaign,
                 topics=[topic_out(t) for t in mine], topic=topic_out(offer.topic),
                 offer=offer, grades=grades,
                 next_topic=next_waiting([t.qid for t in mine], set(waiting), topic))


def next_waiting(order: list[str], waiting: set[str], current: str) -> str | None:
    """The topic after ``current`` in the assessor's ``order`` (wrapping round) that still
    has documents waiting, for the link a finished topic shows (None: none waits)."""
    start = order.index(current) + 1 if current in order else 0
    return next((t for t in order[start:] + order[:start] if t in waiting and t != current),
                None)


@router.get("/c/{campaign}/organiser")
def organiser_page(request: Request, campaign: CampaignName) -> Response:
    found = _signed_in(request, campaign)
    if isinstance(found, Response):
        return found
    person, csrf = found
    if person.role != "organiser":
        return _error(request, 403, "This page is for the campaign's organisers.")
    return _page(request, "organiser.html", person=person, csrf=csrf, campaign=campaign,
                 rules=RULES, **_panel(request, campaign))


@router.get("/c/{campaign}/organiser/panel")
def organiser_panel(request: Request, campaign: CampaignName) -> Response:
    found = _signed_in(request, campaign)
    if isinstance(found, Response):
        return found
    if found[0].role != "organiser":
        return _error(request, 403, "This page is for the campaign's organisers.")
    return _page(request, "panel.html", campaign=campaign, **_panel(request, campaign))


def _panel(request: Request, campaign: str) -> dict[str, Any]:
    status = campaign_status(service_of(request).store, campaign)
    return {"status": status, "boards": leaderboards(status.estimates)}


def leaderboards(rows: list[dict[str, Any]], width: float = 160.0) -> list[dict[str, Any]]:
    """Per measure, the runs best first with their interval drawn on a common scale:
    ``x``, ``lo_x``, ``hi_x`` in [0, width] for the SVG bars. A normal-approximation
    interval can reach past what the measure can be (below 0, above 1): its bar is drawn
    clipped to the measure's range (:func:`measure_range`), ``clipped`` says so, and the
    interval column keeps the estimator's half-width. ``rank_text`` is the run's
    simultaneous 95% rank interval as ``3 (2-5)`` where the rows carry one (the first
    measure's: :func:`.organise.leaderboard`), ``ranked`` says whether any does."""
    measures = list(dict.fromkeys(r["measure"] for r in rows))
    boards = []
    for measure in measures:
        floor, ceiling = measure_range(measure)

        def clip(value: float, floor: float = floor, ceiling: float = ceiling) -> float:
            return min(max(value, floor), ceiling)

        mine = [r for r in rows if r["measure"] == measure and r["value"] is not None]
        ends = [clip(v) for r in mine for v in (r["value"], r["lo"], r["hi"]) if v is not None]
        low, high = (min(floor, *ends), max(ends)) if ends else (0.0, 1.0)
        span = high - low or 1.0

        def at(value: float, low: float = low, span: float = span) -> float:
            return round((clip(value) - low) / span * width, 2)

        entries = []
        for r in sorted(mine, key=lambda r: -r["value"]):
            lo = r["value"] if r["lo"] is None else r["lo"]
            hi = r["value"] if r["hi"] is None else r["hi"]
            entries.append({**r, "x": at(r["value"]), "lo_x": at(lo), "hi_x": at(hi),
                            "clipped": clip(lo) != lo or clip(hi) != hi,
                            "half": None if r["lo"] is None or r["hi"] is None or math.isnan(
                                r["hi"] - r["lo"]) else (r["hi"] - r["lo"]) / 2,
                            "rank_text": rank_text(r)})
        boards.append({"measure": measure, "entries": entries, "low": low, "high": high,
                       "width": width, "range": (floor, ceiling),
                       "range_text": (f"{floor:g} to {ceiling:g}" if math.isfinite(ceiling)
                                      else f"at least {floor:g}"),
                       "clipped": any(e["clipped"] for e in entries),
                       "ranked": any(e["rank_text"] for e in entries)})
    return boards


def rank_text(row: dict[str, Any]) -> str:
    """A leaderboard row's rank and simultaneous rank interval, ``3 (2-5)``; empty
    without one (another measure's row, or estimates stored before rank intervals)."""
    if row.get("rank_lo") is None or row.get("rank_hi") is None:
        return ""
    return f"{row['rank']} ({row['rank_lo']}-{row['rank_hi']})"
