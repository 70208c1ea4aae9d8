"""``campaign_load.py --target ... --stop anytime``: the benchmark's campaigns with a target,
on ``strata`` handed out by the anytime rule's plan (``PlanSelector``: its state the rule's)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from benchmarks.campaign_load import design

from campaign_support import collection
from sampleval.campaign.organise import create_campaign
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.campaign.target import PlanSelector


@pytest.mark.parametrize("stop, planned", [("anytime", True), ("committed", False)])
def test_the_load_benchmark_makes_campaigns_with_a_target(tmp_path: Path, stop: str,
                                                           planned: bool) -> None:
    store = Store(f"sqlite:///{tmp_path}/load.db")
    service = CampaignService(store)
    try:
        made = design("paced", "strata", 20, 11, "AP:0.005", stop)
        assert (made.target, made.target_stop) == ("AP:0.005", stop)
        create_campaign(store, made, collection().runs)
        runtime = service.runtime(service.campaign_ids()[0])
        assert isinstance(runtime.selector, PlanSelector) == planned
        assert runtime.info.target == "AP:0.005"
    finally:
        service.close()
        store.close()
    assert design("max", "mab", 20, 11).target is None
