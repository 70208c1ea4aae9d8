"""The paced load's schedules (``simulation.drive``'s ``pacing``): ``fixed`` sends each
assessor's judgments every ``assessors / rate`` seconds from evenly staggered starts (the
load benchmark's default: its assessors move in lockstep); ``poisson`` draws each assessor's
gaps independently from an exponential distribution of that mean, reproducibly from the
generator given."""

from __future__ import annotations

from itertools import islice

import numpy as np
import pytest

from sampleval.campaign.simulation import _schedule, drive
from sampleval.errors import UsageError


def test_fixed_pacing_is_a_staggered_lockstep() -> None:
    every = 32 / 200
    for position in (0, 5, 31):
        moments = list(islice(_schedule(100.0, every, position, 32, "fixed", None), 50))
        assert moments[0] == pytest.approx(100.0 + every * position / 32)
        assert np.allclose(np.diff(moments), every)


def test_poisson_pacing_keeps_the_rate_out_of_step() -> None:
    every, count = 32 / 200, 2000
    gaps = []
    for rng in np.random.default_rng(3).spawn(4):
        moments = np.array(list(islice(_schedule(0.0, every, 0, 32, "poisson", rng), count)))
        gaps.append(np.diff(np.concatenate([[0.0], moments])))
    for own in gaps:  # exponential of mean `every`: mean within 4 standard errors, sd alike
        assert abs(own.mean() - every) < 4 * every / np.sqrt(count)
        assert abs(own.std() - every) < 0.1 * every
    assert not np.allclose(gaps[0], gaps[1])  # each assessor its own gaps
    again = np.random.default_rng(3).spawn(4)[0]
    assert np.array_equal(np.diff(np.concatenate([[0.0], list(islice(
        _schedule(0.0, every, 0, 32, "poisson", again), count))])), gaps[0])


def test_poisson_pacing_needs_a_generator() -> None:
    with pytest.raises(UsageError, match="random generator"):
        drive("http://127.0.0.1:9", "c", [], lambda t, d: {}, rate=200, pacing="poisson")
    with pytest.raises(UsageError, match="fixed, poisson"):
        drive("http://127.0.0.1:9", "c", [], lambda t, d: {}, rate=200, pacing="jitter")


def test_the_benchmark_counts_batch_completions_together() -> None:
    """``campaign_load.py``'s ``bursts``: for each batch completion, the completions sent
    within 0.25 s of it (a burst of 3 and a lone one here)."""
    from benchmarks.campaign_load import bursts

    from sampleval.campaign.simulation import Report

    report = Report(sent=[0.0, 0.01, 0.05, 0.1, 3.0, 3.2],
                    server_timings=[{"observe": 0.001}, {"observe": 0.001}, {},
                                    {"observe": 0.001}, {"observe": 0.001}, {}])
    assert bursts(report) == ("4 batch completions; completions within 0.25 s of each: "
                              "p50 3, p90 3, max 3")
    assert bursts(Report()) == "no batch completions"
