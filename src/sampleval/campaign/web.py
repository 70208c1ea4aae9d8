"""What the JSON API (:mod:`.api`) and the server-rendered pages (:mod:`.pages`) share: who
calls (:class:`Caller`, the dependencies that scope a request to a campaign), the security
middleware (:class:`Guard`) and the templates; :mod:`.app` assembles them into the app.

Security model (``docs/guide/campaigns.md`` explains it to organisers):

- every request but the login page and static files needs a person: a login token in an
  ``Authorization: Bearer`` header (scripts), or the session cookie the login form sets
  (browsers; HttpOnly, SameSite=Strict);
- a person belongs to one campaign; any path of another campaign answers 404, a topic not
  assigned to the assessor 403;
- a request that changes something and comes with the session cookie must carry the
  session's CSRF token (header ``X-CSRF-Token``, or form field ``csrf_token``; the login
  form uses a double-submit cookie); any unsafe request whose ``Origin`` is another site,
  or that the browser marks ``Sec-Fetch-Site: cross-site``, is refused. The site is the
  request's ``Host``, the ``--public-url`` the server was given, and, for a request from a
  ``--trusted-proxy``, the host it forwards (``X-Forwarded-Host``; its
  ``X-Forwarded-Proto`` is then the request's scheme): a reverse proxy that rewrites
  ``Host`` would otherwise have every browser POST refused;
- bodies are limited to :data:`MAX_BODY` bytes and validated; texts are escaped by the
  templates (Jinja2 autoescaping) and set as text by the scripts, never as markup; a strict
  Content-Security-Policy allows scripts and styles from the server only.

Every answer carries a ``Server-Timing: app;dur=MS`` header: the milliseconds from the
request reaching the app to its answer starting (browsers' developer tools show it; the
load benchmark compares it with what the client waited, to tell the server's time from
the machine's queues).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.templating import Jinja2Templates

from sampleval.campaign.service import CampaignService, Person
from sampleval.campaign.target import widest_first
from sampleval.campaign.tokens import same
from sampleval.judging.confident import is_anytime

HERE = Path(__file__).resolve().parent
MAX_BODY = 64 * 1024
SESSION_COOKIE = "sv_session"
LOGIN_COOKIE = "sv_login"
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")

templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["widest_first"] = widest_first
templates.env.tests["anytime"] = is_anytime
bearer = HTTPBearer(auto_error=False, description="the login token of an assessor or "
                                                  "organiser ('campaign add-assessor')")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class Caller:
    """An authenticated request: the person, and the session's CSRF token when the
    request came with the session cookie (None with a bearer token)."""

    person: Person
    csrf: str | None


def service_of(request: Request) -> CampaignService:
    service: CampaignService = request.app.state.service
    return service


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
"""An endpoint's bearer token, if any (declared so that the OpenAPI description says how to
authenticate; the endpoint then calls :func:`caller` or :func:`writer` itself, in its own
worker thread, rather than as a dependency run in another)."""


def caller(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Caller:
    """The person making an API request (401 without a valid token or session)."""
    service = service_of(request)
    if credentials is not None:
        person = service.person_by_token(credentials.credentials)
        if person is None:
            raise HTTPException(401, "unknown or revoked token",
                                headers={"WWW-Authenticate": "Bearer"})
        return Caller(person, None)
    if request.headers.get("authorization"):
        raise HTTPException(401, "use 'Authorization: Bearer TOKEN'",
                            headers={"WWW-Authenticate": "Bearer"})
    cookie = request.cookies.get(SESSION_COOKIE)
    found = service.session_person(cookie) if cookie else None
    if found is None:
        raise HTTPException(401, "log in first, or send 'Authorization: Bearer TOKEN'",
                            headers={"WWW-Authenticate": "Bearer"})
    return Caller(*found)


def writer(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Caller:
    """A caller allowed to change something: with the session cookie, the request must
    carry the session's CSRF token in ``X-CSRF-Token``."""
    who = caller(request, credentials)
    if who.csrf is not None and not same(request.headers.get("x-csrf-token"), who.csrf):
        raise HTTPException(403, "missing or wrong CSRF token (header X-CSRF-Token)")
    return who


def in_campaign(who: Caller, campaign: str) -> Person:
    """The caller, if ``campaign`` is theirs (404 otherwise, as for a campaign that does
    not exist)."""
    if who.person.campaign != campaign:
        raise HTTPException(404, "no such campaign")
    return who.person


def organiser(who: Caller, campaign: str) -> Person:
    person = in_campaign(who, campaign)
    if person.role != "organiser":
        raise HTTPException(403, "only the campaign's organisers may do this")
    return person


class Guard:
    """ASGI middleware: body size limit, cross-site refusal, security headers (the module
    docstring says which sites are this one's)."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY, public_url: str | None = None,
                 trusted_proxies: Sequence[str] = ()) -> None:
        self.app = app
        self.max_body = max_body
        self.public_host = urlsplit(public_url).netloc if public_url else None
        self.trusted = [ip_network(p, strict=False) for p in trusted_proxies]

    def _sites(self, scope: Scope, headers: dict[str, str]) -> set[str]:
        """The hosts (``host[:port]``) an ``Origin`` of this site may name; the scheme of a
        request from a trusted proxy set from ``X-Forwarded-Proto``."""
        sites = {headers.get("host", "")}
        if self.public_host:
            sites.add(self.public_host)
        peer = (scope.get("client") or ("", 0))[0]
        if self.trusted and _within(peer, self.trusted):
            forwarded = headers.get("x-forwarded-host", "").split(",")[0].strip()
            if forwarded:
                sites.add(forwarded)
            proto = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
            if proto in ("http", "https"):
                scope["scheme"] = proto
        return sites

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        begun = time.perf_counter()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        sites = self._sites(scope, headers)
        if scope["method"] in UNSAFE and _cross_site(headers, sites):
            await _plain(send, 403, "cross-site request refused", begun)
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _plain(send, 413, f"request body over {self.max_body} bytes", begun)
            return
        received = 0
        too_large = False
        started = False

        async def limited() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    too_large = True
                    raise _TooLarge
            return message

        async def secured(message: Message) -> None:
            nonlocal started
            if too_large:  # the app's answer to a body cut short is replaced by a 413
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await _plain(send, 413, f"request body over {self.max_body} bytes", begun)
                return
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = list(message.get("headers", [])) + secure_headers(begun)
            await send(message)

        try:
            await self.app(scope, limited, secured)
        except _TooLarge:
            if not started:
                await _plain(send, 413, f"request body over {self.max_body} bytes", begun)


class _TooLarge(Exception):
    pass


def _cross_site(headers: dict[str, str], sites: set[str]) -> bool:
    if headers.get("sec-fetch-site") == "cross-site":
        return True
    origin = headers.get("origin")
    if not origin or origin == "null":
        return origin == "null"
    return urlsplit(origin).netloc not in sites


def _within(address: str, networks: list[IPv4Network | IPv6Network]) -> bool:
    try:
        ip = ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def secure_headers(begun: float) -> list[tuple[bytes, bytes]]:
    """The headers every answer carries: the security headers, and ``Server-Timing`` from
    ``begun`` (``time.perf_counter()`` when the request reached the app)."""
    return [(b"content-security-policy", CSP.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"same-origin"),
            (b"cache-control", b"no-store"),
            (b"server-timing", f"app;dur={(time.perf_counter() - begun) * 1000:.2f}".encode())]


async def _plain(send: Send, status: int, text: str, begun: float) -> None:
    """The middleware's own answer (403, 413), with the headers of every answer."""
    body = json.dumps({"detail": text}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            *secure_headers(begun)]})
    await send({"type": "http.response.body", "body": body})

