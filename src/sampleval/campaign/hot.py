"""The judging calls of scripts served without FastAPI's routing: ASGI middleware
(:class:`HotPaths`) that answers ``GET .../topics/{topic}/next`` and ``POST
.../topics/{topic}/judgments`` with a bearer token, nearly every request of a campaign
under load, by calling their endpoints (:func:`.api.next_document`, :func:`.api.judge`)
itself.

Why. Between the security middleware (:class:`.web.Guard`) and an endpoint, FastAPI's
layers (its exception and exit-stack middleware, the router's matching, the dependencies'
resolution, the body's reading and validation) cost the server's interpreter about as
much as the endpoint's own work for an ordinary judgment: 10-13% of the server's time
under the load benchmark (docs/research/campaign-load.md, fifteenth round), at a moment
when every judgment waits for that interpreter.

What it keeps. The endpoint, its worker thread (Starlette's thread pool, as FastAPI runs a
plain ``def``), its answer and the app's exception handlers (an error becomes the answer
FastAPI would give) are the same; only what FastAPI would check first is done here, the
same way: the path's parameters (:data:`.api.CampaignName`, :data:`.api.TopicId`), the
bearer token (as ``HTTPBearer``), a JSON body validated by the endpoint's model. Any
request this does not take as it is (another method or path, no bearer token, a body that
is not a valid :class:`.api.JudgmentIn`, another content type) goes to FastAPI with its
body untouched, so every refusal (422 and the like) is FastAPI's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from sampleval.campaign import api
from sampleval.campaign.organise import NAME, TOPIC_ID
from sampleval.campaign.web import ASGIApp, Message, Receive, Scope, Send

_PATH = re.compile(rf"/api/campaigns/(?P<campaign>{NAME.pattern})"
                   rf"/topics/(?P<topic>{TOPIC_ID.pattern})/(?P<call>next|judgments)")
_METHOD = {"next": "GET", "judgments": "POST"}


class HotPaths:
    """ASGI middleware: the judging calls of scripts (module docstring); everything else
    goes to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = _taken(scope)
        if found is None:
            await self.app(scope, receive, send)
            return
        campaign, topic, call, token = found
        request = Request(scope, receive)
        credentials = HTTPAuthorizationCredentials(scheme="Bearer", credentials=token)
        endpoint: Callable[[], Response]
        if call == "next":
            def endpoint() -> Response:
                return api.next_document(campaign, topic, request, credentials)
        else:
            body, messages = await _body(receive)
            judgment = _judgment(body)
            if judgment is None:  # FastAPI reads the same body and says what is wrong
                await self.app(scope, _replay(messages, receive), send)
                return

            def endpoint() -> Response:
                return api.judge(campaign, topic, judgment, request, credentials)
        try:
            response = await run_in_threadpool(endpoint)
        except Exception as exc:
            handler = _handler(scope["app"], exc)
            if handler is None:
                raise
            response = await handler(request, exc)
        await response(scope, receive, send)


def _taken(scope: Scope) -> tuple[str, str, str, str] | None:
    """(campaign, topic, call, bearer token) of a request :class:`HotPaths` answers, else
    None."""
    if scope["type"] != "http" or scope.get("root_path"):
        return None
    matched = _PATH.fullmatch(scope["path"])  # (the patterns bound the lengths, as the API's)
    if matched is None or scope["method"] != _METHOD[matched["call"]]:
        return None
    authorization = content_type = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            authorization = value.decode("latin-1")
        elif name == b"content-type":
            content_type = value.decode("latin-1")
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    if matched["call"] == "judgments" and (
            content_type is None or content_type.split(";")[0].strip().lower()
            != "application/json"):
        return None
    return matched["campaign"], matched["topic"], matched["call"], token


async def _body(receive: Receive) -> tuple[bytes, list[Message]]:
    """The request's body, and the messages it came in (to hand on unread)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    return b"".join(m.get("body", b"") for m in messages
                    if m["type"] == "http.request"), messages


def _judgment(body: bytes) -> api.JudgmentIn | None:
    """The body as the endpoint's model, read as FastAPI reads it (``json.loads``, then
    the model's validation of the object), or None where that fails."""
    try:
        return api.JudgmentIn.model_validate(json.loads(body))
    except ValueError:  # (json's and pydantic's errors both)
        return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` giving ``messages`` again, then what ``receive`` gives."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


def _handler(app: Any, exc: Exception) -> Callable[..., Any] | None:
    """The app's handler of ``exc`` (by its class's method resolution order, as
    Starlette's exception middleware finds it), or None."""
    handlers = app.exception_handlers
    for cls in type(exc).__mro__:
        if cls in handlers:
            handler: Callable[..., Any] = handlers[cls]
            return handler
    return None
