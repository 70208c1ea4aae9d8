"""Behind a reverse proxy: a real nginx (Debian's package) on 127.0.0.1 in front of
``sampleval serve``, with nginx's default ``Host`` rewriting. Logging in and judging in a
browser's way (form POST, API POST with the CSRF token and the ``Origin`` a browser sends)
work with ``--trusted-proxy`` or ``--public-url``, and are refused without (as before).
Forwarded headers from anyone but a trusted proxy are not believed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from campaign_support import collection, need
from sampleval.campaign import models as m
from sampleval.campaign.app import create_app
from sampleval.campaign.organise import Design, add_person, create_campaign, parse_grades
from sampleval.campaign.server import ServerProcess, die_with_parent, free_port
from sampleval.campaign.store import Store
from sampleval.selection import Budget

pytestmark = pytest.mark.slow  # a real nginx and server: make test runs them, make check not

NGINX_CONF = """
daemon off;
worker_processes 1;
{user}
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_set_header X-Forwarded-Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }}
    }}
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


@dataclass
class Proxied:
    url: str  # nginx's address
    upstream: int  # the port serve listens on
    db: str
    alice: str


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    """nginx on a free port of 127.0.0.1 proxying to a port where the tests start
    ``serve``; a campaign with an assessor."""
    binary = nginx_binary()
    need(binary is not None, "nginx (Debian package nginx; make system-packages)")
    assert binary is not None
    root = tmp_path_factory.mktemp("nginx")
    port, upstream = free_port(), free_port()
    user = "user root root;" if os.geteuid() == 0 else ""
    (root / "nginx.conf").write_text(NGINX_CONF.format(root=root, port=port,
                                                       upstream=upstream, user=user))
    db = f"sqlite:///{root}/p.db"
    store = Store(db)
    create_campaign(store, Design("c1", "uniform", Budget(5), depth=30, seed=1,
                                  grades=tuple(parse_grades("0,1"))), collection().runs)
    alice = add_person(store, "c1", "alice")[0]
    store.close()
    process = subprocess.Popen([binary, "-p", str(root), "-c", str(root / "nginx.conf"),
                                "-e", str(root / "error.log")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                               preexec_fn=die_with_parent())
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1.0)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (root / "error.log").read_text() if (root / "error.log").exists() \
                        else ""
                    pytest.fail(f"nginx did not start: {log[-500:]}")
                time.sleep(0.1)
        yield Proxied(f"http://127.0.0.1:{port}", upstream, db, alice)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def login_and_judge(base: str, token: str) -> tuple[int, int | None]:
    """As a browser: the login form (GET, then POST with the Origin it sends), the
    assessor's page, one judgment through the API with the page's CSRF token. Returns the
    login POST's status and the judgment's (None when the login failed)."""
    origin = {"Origin": base}
    with httpx.Client(base_url=base, timeout=30) as client:
        form = client.get(f"/login?token={token}")
        assert form.status_code == 200
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
        assert csrf is not None
        answer = client.post("/login", data={"token": token, "csrf_token": csrf.group(1)},
                             headers=origin)
        if answer.status_code != 303:
            return answer.status_code, None
        page = client.get("/c/c1/judge")
        assert page.status_code == 200, page.text
        session = re.search(r'<meta name="csrf-token" content="([^"]+)">', page.text)
        assert session is not None
        offer = client.get("/api/campaigns/c1/topics/1/next").json()
        docno = offer["document"]["docno"]
        judged = client.post("/api/campaigns/c1/topics/1/judgments",
                             json={"docno": docno, "label": 1, "key": uuid.uuid4().hex},
                             headers={**origin, "X-CSRF-Token": session.group(1)})
        return answer.status_code, judged.status_code


def judgments(db: str) -> int:
    store = Store(db, migrate=False)
    with store.read() as session:
        count = int(session.scalar(select(func.count()).select_from(m.Judgment)) or 0)
    store.close()
    return count


@pytest.mark.parametrize("options", [["--trusted-proxy", "127.0.0.1"], ["--public-url", None]],
                         ids=["trusted-proxy", "public-url"])
def test_login_and_judging_through_nginx(proxied: Proxied, options: list[str | None],
                                         tmp_path: Path) -> None:
    options = [proxied.url if o is None else o for o in options]
    before = judgments(proxied.db)
    log = tmp_path / "serve.log"
    with ServerProcess(proxied.db, port=proxied.upstream, options=options, log=log):  # type: ignore[arg-type]
        assert login_and_judge(proxied.url, proxied.alice) == (303, 201)
    assert judgments(proxied.db) == before + 1
    # the printed address is the one given: the public one, or serve's own port
    reached = proxied.url if "--public-url" in options else f"http://127.0.0.1:{proxied.upstream}"
    said = log.read_text()
    assert f"assessors log in at {reached}/login?token=TOKEN" in said
    assert f"--base-url {reached}" in said


def test_without_either_option_nginx_s_host_makes_posts_cross_site(proxied: Proxied) -> None:
    """What every browser POST got before: 403 (nginx sends Host 127.0.0.1:UPSTREAM, the
    browser Origin http://127.0.0.1:NGINX)."""
    with ServerProcess(proxied.db, port=proxied.upstream):
        assert login_and_judge(proxied.url, proxied.alice) == (403, None)


def test_forwarded_headers_are_believed_from_trusted_proxies_only(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/s.db"
    store = Store(db)
    create_campaign(store, Design("c1", "uniform", Budget(5), depth=30, seed=1),
                    collection().runs)
    store.close()
    forged = {"Origin": "https://evil.example", "X-Forwarded-Host": "evil.example",
              "X-Forwarded-Proto": "https"}
    # TestClient's peer is 'testclient': not a trusted proxy
    app = create_app(db, live=False, trusted_proxies=["127.0.0.1"],
                     public_url="https://judging.example.org")
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.post("/login", data={"token": "x", "csrf_token": "y"},
                           headers=forged).status_code == 403
        public = client.post("/login", data={"token": "x", "csrf_token": "y"},
                             headers={"Origin": "https://judging.example.org"})
        assert public.status_code == 403 and "login form expired" in public.text  # not cross-site
    app = create_app(db, live=False, trusted_proxies=["0.0.0.0/0"])
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:  # 'testclient' is no IP
        assert client.post("/login", data={"token": "x", "csrf_token": "y"},
                           headers=forged).status_code == 403
