"""The test suite leaves nothing running: a test run that fails, is stopped with SIGTERM
or killed with SIGKILL while the campaign fixtures' PostgreSQL server and a campaign
server (with its estimates worker) run leaves none of them behind (before: the
PostgreSQL server of the ``postgres`` fixture outlived an interrupted ``make test``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from campaign_support import alive, have_postgres, need
from conftest import INNER_PYTEST

pytestmark = pytest.mark.slow  # real processes: make test runs them, make check not

HERE = Path(__file__).resolve().parents[1]  # tests/: conftest.py, campaign_support.py

INNER = '''
import json, os, time
from pathlib import Path

from sampleval.campaign.server import ServerProcess


def test_inner(postgres, tmp_path):
    server = ServerProcess(f"sqlite:///{tmp_path}/s.db").start()  # never stopped here
    deadline = time.monotonic() + 60
    while not [p for p in _children(server.process.pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [postgres.process.pid, server.process.pid, *_children(server.process.pid)]
    Path(os.environ["SAMPLEVAL_PIDS"]).write_text(json.dumps(pids))
    if os.environ["SAMPLEVAL_MODE"] == "fail":
        raise AssertionError("this test fails on purpose")
    time.sleep(600)


def _children(pid):
    from campaign_support import children

    return children(pid)
'''


@pytest.mark.parametrize("mode", ["fail", "sigterm", "sigkill"])
def test_nothing_outlives_a_test_run(mode: str, tmp_path: Path) -> None:
    need(have_postgres(), "PostgreSQL server binaries (Debian package postgresql)")
    (tmp_path / "test_inner.py").write_text(INNER)
    pids_file = tmp_path / "pids.json"
    env = {**os.environ, "SAMPLEVAL_MODE": mode, "SAMPLEVAL_PIDS": str(pids_file),
           "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), str(HERE),
                                          os.environ.get("PYTHONPATH", "")])}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "conftest",
                            *INNER_PYTEST, str(tmp_path / "test_inner.py")],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while not pids_file.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pids_file.exists(), (run.stdout.read() if run.stdout else b"").decode()
        time.sleep(0.2)
        pids = json.loads(pids_file.read_text())
        assert len(pids) >= 3, "postgres, the server and its estimates worker"
        if mode != "fail":
            run.send_signal(signal.SIGTERM if mode == "sigterm" else signal.SIGKILL)
        run.wait(120)
        gone_by = time.monotonic() + 30
        while any(alive(p) for p in pids) and time.monotonic() < gone_by:
            time.sleep(0.1)
        left = [p for p in pids if alive(p)]
        assert not left, f"still running after the run ended ({mode}): {left}"
        if mode == "fail":
            assert run.returncode == 1
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
