"""The load benchmark's floor probe (``benchmarks/campaign_load.py``): what it measures and
how, not how fast this machine is."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from benchmarks import campaign_load
from benchmarks.campaign_load import Floor, favoured_session, floor_beside, raw_commits, wake_delays


def _stopping_clock(stop: threading.Event, readings: list[float]):
    """A clock giving ``readings`` in turn, setting ``stop`` once they are used up."""
    left = list(readings)

    def clock() -> float:
        value = left.pop(0)
        if not left:
            stop.set()
        return value

    return clock


def test_a_raw_commit_is_one_durable_wal_transaction_of_one_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    statements: list[str] = []
    files: list[Path] = []
    connect = sqlite3.connect

    def traced(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        files.append(Path(path))
        connection = connect(path, *args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(campaign_load.sqlite3, "connect", traced)
    stop = threading.Event()
    out = raw_commits(tmp_path, stop, every=0.0,
                      clock=_stopping_clock(stop, [1.0, 1.004, 2.0, 2.25, 3.0, 3.001]))
    assert out == pytest.approx([0.004, 0.25, 0.001])
    assert files[0].parent == tmp_path  # on the given directory
    settings = [s for s in statements if s.startswith("PRAGMA")]
    assert settings == ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                        "PRAGMA wal_autocheckpoint=0"]
    timed = [s.split()[0] for s in statements
             if s.split()[0] in {"BEGIN", "INSERT", "COMMIT"}]
    assert timed == ["BEGIN", "INSERT", "COMMIT"] * 3  # one row per transaction
    assert list(tmp_path.iterdir()) == []  # the file and its WAL removed


def test_the_wake_up_delay_is_the_overshoot_of_each_nap() -> None:
    naps: list[float] = []
    stop = threading.Event()
    out = wake_delays(stop, nap=0.001, sleep=naps.append,
                      clock=_stopping_clock(stop, [0.0, 0.0015, 1.0, 1.011, 2.0, 2.0009]))
    assert naps == [0.001] * 3
    assert out == pytest.approx([0.0005, 0.010, 0.0])  # (a short nap counts as no delay)


def test_the_verdict_names_a_raw_commit_p99_near_the_target() -> None:
    slow = Floor(commits=[0.002] * 98 + [0.120, 0.130], wakes=[0.0001])
    assert "p99 120 ms" in slow.verdict(100.0)
    assert Floor(commits=[0.002] * 100, wakes=[0.0001]).verdict(100.0) == ""
    assert Floor(commits=[], wakes=[]).verdict(100.0) == ""


def test_the_probe_runs_in_its_own_process_for_the_block(tmp_path: Path) -> None:
    with floor_beside(tmp_path, nice=0) as floor:
        assert floor.commits == []  # filled when the block ends
        threading.Event().wait(0.3)
    assert floor.commits and floor.wakes
    assert all(s > 0 for s in floor.commits) and all(s >= 0 for s in floor.wakes)
    assert list(tmp_path.iterdir()) == []


def test_a_favoured_session_is_named_in_the_caption(tmp_path: Path) -> None:
    autogroup = tmp_path / "autogroup"
    autogroup.write_text("/autogroup-12142 nice -10\n")
    assert "autogroup nice is -10" in favoured_session(autogroup)
    autogroup.write_text("/autogroup-12142 nice 0\n")
    assert favoured_session(autogroup) == ""
    assert favoured_session(tmp_path / "absent") == ""
