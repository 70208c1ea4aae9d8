"""The campaign server exempts what it holds once started from garbage collection (issue
30, item 8): a full collection of the oldest generation walked the whole heap (the
libraries, the loaded campaigns: about a quarter of a million objects) while holding the
interpreter lock, 150-170 ms under load in which every request waited, the p99 of
``benchmarks/campaign_load.py --hog 2``. ``serve`` freezes the heap once the campaigns are
loaded (``gc.freeze``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from campaign_support import collection
from sampleval.campaign.organise import Design, create_campaign, parse_grades
from sampleval.campaign.store import Store
from sampleval.selection import Budget

PROBE = """
import gc, json, sys
import uvicorn
from fastapi.testclient import TestClient

def answer(app, **options):
    with TestClient(app):  # runs the lifespan: the campaigns load, the server starts
        frozen = gc.get_freeze_count()
        runtime = next(iter(app.state.service._runtimes.values()))
        print(json.dumps({"frozen": frozen, "tracked": len(gc.get_objects()),
                          "runtime_frozen": not any(o is runtime for o in gc.get_objects())}))

uvicorn.run = answer
from sampleval.campaign.server import serve
serve(sys.argv[1])
"""


def test_serve_freezes_the_heap_once_the_campaigns_are_loaded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    store = Store(url)
    create_campaign(store, Design("c", "mtf", Budget(40), depth=50, seed=7,
                                  grades=tuple(parse_grades("0,1,2"))), collection().runs)
    store.close()
    done = subprocess.run([sys.executable, "-c", PROBE, url], capture_output=True, text=True,
                          timeout=300, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # a full collection walks what was made since the start only, a small part of the heap
    assert found["frozen"] > 10 * found["tracked"]
    assert found["runtime_frozen"]
