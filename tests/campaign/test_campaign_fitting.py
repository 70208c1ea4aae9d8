"""``dynamic``'s classifier fits in a child process (``campaign.fitting``, as ``serve`` runs
them): the same scores bit for bit as in process, so a campaign draws the same sample; the
fit survives the child's death (made in process, the child started again)."""

from __future__ import annotations

import copy
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from campaign_support import collection
from sampleval.campaign.fitting import FitProcess
from sampleval.campaign.organise import Design, create_campaign, export_sample, parse_grades
from sampleval.campaign.simulation import judge_in_turn, oracle_assessors
from sampleval.campaign.store import Store
from sampleval.selection import Budget
from sampleval.selection.dynamic import logistic_scores


def problem(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, ...]:
    x = np.where(rng.random((rows, 12)) < 0.4, 1.0 / (60 + rng.integers(1, 100, (rows, 12))),
                 0.0)
    y = np.where(rng.random(rows) < 0.1, 1.0, -1.0)
    weight = np.where(rng.random(rows) < 0.2, 1.0, 0.5)
    return x, y, weight, x[: rows // 2]


def test_the_child_gives_the_same_scores_and_survives_its_death() -> None:
    fits = FitProcess()
    rng = np.random.default_rng(4)
    try:
        assert copy.deepcopy(fits) is fits  # shared by a selector's copies, not copied
        for rows in (50, 400, 800):
            args = problem(rng, rows)
            assert np.array_equal(fits(*args), logistic_scores(*args))
        assert fits.fits == 3
        assert fits._process is not None and fits._process.pid is not None
        os.kill(fits._process.pid, signal.SIGKILL)
        fits._process.join(10)
        args = problem(rng, 300)
        assert np.array_equal(fits(*args), logistic_scores(*args))  # in process
        assert np.array_equal(fits(*args), logistic_scores(*args))  # a new child
        assert fits.fits == 4
    finally:
        fits.close()


@pytest.mark.slow
def test_a_dynamic_campaign_draws_the_same_sample_with_its_fits_in_a_child(
        tmp_path: Path) -> None:
    """The whole campaign judged through the service, fits in a child (as ``serve``) and in
    process: the same exported sample."""
    from sampleval.campaign.service import CampaignService

    c = collection()
    samples = []
    for fit_process in (True, False):
        store = Store(f"sqlite:///{tmp_path}/{fit_process}.db")
        create_campaign(store, Design("c", "dynamic", Budget(30), depth=50, seed=3,
                                      grades=tuple(parse_grades("0,1,2"))), c.runs)
        tokens = [a.token for a in oracle_assessors(store, "c", 4)]
        service = CampaignService(store, fit_process=fit_process)
        try:
            service.load_all()
            runtime = service.runtime(service.campaign_ids()[0])
            used = runtime.selector.fit  # type: ignore[attr-defined]
            assert isinstance(used, FitProcess) == fit_process
        finally:
            service.close()
        assert judge_in_turn(store, tokens, c.oracle, seed=1, fit_process=fit_process) == 120
        samples.append(export_sample(store, "c")[0].frame)
        store.close()
    assert samples[0].equals(samples[1])
