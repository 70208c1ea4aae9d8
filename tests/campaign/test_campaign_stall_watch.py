"""The load benchmark's stall watch (``benchmarks/campaign_load.py``): a server that makes no
write system call for a while during a run (the 30 s start-up stall, benchmarks/README.md)
has its threads' stacks dumped; one that keeps writing does not."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from benchmarks.campaign_load import proc_io, stall_watch

SPY = Path(sys.executable).with_name("py-spy")


def _child(code: str) -> subprocess.Popen[bytes]:
    child = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(0.3)
    return child


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/PID/io")
def test_a_process_that_writes_nothing_is_dumped_once_one_that_writes_is_not(
        tmp_path: Path) -> None:
    if not SPY.exists():
        pytest.skip("py-spy is not installed beside this Python (pip install py-spy)")
    idle = _child("import time; time.sleep(30)")
    busy = _child("import os, time\nwhile True:\n    os.write(1, b'')\n    time.sleep(0.05)")
    try:
        assert proc_io(busy.pid, "syscw") >= 0
        with stall_watch(idle.pid, tmp_path / "idle.txt", seconds=1.0), \
                stall_watch(busy.pid, tmp_path / "busy.txt", seconds=1.0):
            time.sleep(3.0)
    finally:
        for child in (idle, busy):
            child.kill()
            child.wait()
    assert "time_sleep" in (tmp_path / "idle.txt").read_text() or "sleep" in (
        tmp_path / "idle.txt").read_text()
    assert not (tmp_path / "busy.txt").exists()


def test_an_unreadable_process_reads_as_nan() -> None:
    assert proc_io(2**22 + 12345, "syscw") != proc_io(2**22 + 12345, "syscw")  # NaN
