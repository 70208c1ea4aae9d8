"""A pytest plugin that writes each test's CPU and wall seconds as it finishes, for ranking the
slow tests on a busy machine (CPU seconds hardly depend on the load; wall seconds do).

    PYTHONPATH=src:scripts pytest -p pytest_cpu [-n 2] ...
    sort -rn /tmp/pytest-cpu.* | head -20

One line per test, ``cpu<TAB>wall<TAB>node id``, appended to ``$PYTEST_CPU_LOG.<pid>``
(default ``/tmp/pytest-cpu``; one file per process, so it works under pytest-xdist and a run
stopped early leaves what it measured). CPU is the process's own (every thread) plus that of
the child processes it waited for: a server's CPU is counted only once it exits.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator

import pytest

LOG = os.environ.get("PYTEST_CPU_LOG", "/tmp/pytest-cpu")


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, None, None]:
    cpu, wall = _cpu(), time.perf_counter()
    yield
    with open(f"{LOG}.{os.getpid()}", "a") as out:
        out.write(f"{_cpu() - cpu:.3f}\t{time.perf_counter() - wall:.3f}\t{item.nodeid}\n")
