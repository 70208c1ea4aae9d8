"""Helpers of the campaign tests: a small synthetic collection, campaigns over it, the
reference sample an uninterrupted simulation draws, and sample comparison."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

import conftest
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.selection.base import Oracle

CHROMIUM = Path("/usr/bin/chromium")


def need(found: bool, what: str) -> None:
    """Skip (fail in CI) when something the test needs is missing from the machine."""
    conftest.need(found, f"{what} missing (make test installs it)")


@dataclass(frozen=True)
class Collection:
    runs: list[Run]
    qrels: Qrels
    oracle: Oracle


@cache
def collection(n_topics: int = 4, n_runs: int = 6, n_docs: int = 300, depth: int = 50,
               seed: int = 3) -> Collection:
    """A seeded synthetic collection (runs, qrels and its oracle)."""
    made = make_collection(np.random.default_rng(seed), n_topics=n_topics, n_runs=n_runs,
                           n_docs=n_docs, depth=depth)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    qrels = Qrels.from_frame(made.qrels)
    return Collection(runs, qrels, qrels_oracle(qrels))


def reference(runs: list[Run], method: str, budget: Budget, depth: int | None, seed: int,
              oracle: Oracle, **params: str) -> Sample:
    """What ``sampleval sample`` draws: the uninterrupted simulation."""
    selector = METHODS[method](Pool.from_runs(runs, depth=depth), budget,
                               np.random.default_rng(seed), **params)
    return simulate(selector, oracle).sample()


def assert_same_sample(got: Sample, want: Sample) -> None:
    """The same design, frame and design tables, value for value."""
    assert got.design == want.design
    for name in ("frame", "draws", "rounds", "round_probs"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        if a is not None:
            pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                          check_exact=True, obj=name)


def artifacts() -> Path:
    """Where tests leave screenshots and logs: ``SAMPLEVAL_ARTIFACTS``, default
    ``test-artifacts/`` in the repository, created here and git-ignored (test outputs are
    never tracked; ``make doc-figures`` copies the two screenshots the docs show)."""
    folder = Path(os.environ.get("SAMPLEVAL_ARTIFACTS",
                                 Path(__file__).resolve().parents[1] / "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def have_postgres() -> bool:
    from sampleval.campaign.devdb import postgres_bin

    return postgres_bin() is not None


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition: Callable[[], object], seconds: float = 60.0, step: float = 0.02
             ) -> object:
    """``condition()``'s first truthy value, asked every ``step`` seconds (AssertionError
    after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(step)
    raise AssertionError("timed out")
