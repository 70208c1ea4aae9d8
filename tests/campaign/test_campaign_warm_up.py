"""A loaded campaign's selector is warmed up on a copy (``service.warm_up``): ``active``'s
numba kernels are compiled while the campaign loads, not inside the first judgments that
call them (there they held a burst of judgments up for seconds:
docs/research/campaign-load.md, thirteenth round)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaign_support import collection
from sampleval.campaign.organise import (
    Design,
    create_campaign,
    decode_state,
    encode_state,
    parse_grades,
)
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.selection import Budget

PROBE = """
import json, sys
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.selection import active

store = Store(sys.argv[1])
service = CampaignService(store)
try:
    service.load_all()
finally:
    service.close()
    store.close()
kernels = {name: len(getattr(active, name).signatures) for name in
           ("estimated_ap", "add_misses", "insert_hits", "log_miss_of", "draw")}
print(json.dumps(kernels))
"""


@pytest.mark.slow  # a fresh process compiles every kernel: about 12 s
def test_loading_an_active_campaign_compiles_its_kernels(tmp_path: Path) -> None:
    """In a fresh process with an empty numba cache, loading the campaign leaves every one
    of ``active``'s kernels compiled (before: none, until judgments called them)."""
    url = f"sqlite:///{tmp_path}/w.db"
    store = Store(url)
    create_campaign(store, Design("w", "active", Budget(20), depth=30, seed=5,
                                  grades=tuple(parse_grades("0,1,2"))), collection().runs)
    store.close()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE, url], capture_output=True,
                          text=True, env=env, timeout=600, check=True)
    kernels = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(count >= 1 for count in kernels.values()), kernels


def test_the_warm_up_leaves_the_selector_as_it_was(tmp_path: Path) -> None:
    """The copy moves, the campaign's selector does not: its state after loading is the
    stored one."""
    url = f"sqlite:///{tmp_path}/s.db"
    store = Store(url)
    create_campaign(store, Design("s", "active", Budget(20), depth=30, seed=5,
                                  grades=tuple(parse_grades("0,1"))), collection().runs)
    service = CampaignService(store)
    try:
        service.load_all()
        campaign_id = service.campaign_ids()[0]
        selector = service.runtime(campaign_id).selector
        assert decode_state(encode_state(selector.state())) == service.saved_state(campaign_id)
    finally:
        service.close()
        store.close()
