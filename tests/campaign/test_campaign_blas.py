"""The campaign server runs BLAS on one thread (issue 30, item 8): a threaded BLAS on a
busy machine waits on its own threads inside requests (``dynamic``'s learner took about 24
times the CPU under load). ``serve`` limits it before it starts answering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("threadpoolctl")

PROBE = """
import json, sys
import numpy, scipy.optimize, uvicorn
from threadpoolctl import threadpool_info

def threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

before = threads()

def answer(app, **options):
    print(json.dumps({"before": before, "serving": threads(),
                      "switch": sys.getswitchinterval()}))

uvicorn.run = answer
from sampleval.campaign.server import serve
serve(sys.argv[1])
"""


def test_serve_runs_blas_on_one_thread(tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: BLAS runs on one thread anyway")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", PROBE, f"sqlite:///{tmp_path}/s.db"],
                          capture_output=True, text=True, env=env, timeout=300, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] and max(found["before"]) > 1  # threaded by default here
    assert found["serving"] == [1] * len(found["serving"])


def test_serve_hands_the_interpreter_lock_on_often(tmp_path: Path) -> None:
    """The server's switch interval is :data:`SWITCH_INTERVAL` (0.5 ms; before: Python's
    5 ms, with which a thread back from a system call beside a computing thread waited up
    to 5 ms for the lock: docs/research/campaign-load.md)."""
    from sampleval.campaign.server import SWITCH_INTERVAL

    done = subprocess.run([sys.executable, "-c", PROBE, f"sqlite:///{tmp_path}/s.db"],
                          capture_output=True, text=True, timeout=300, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert SWITCH_INTERVAL < 0.005
    assert found["switch"] == pytest.approx(SWITCH_INTERVAL)
