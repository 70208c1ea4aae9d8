"""The library as users call it: ``import sampleval`` is instant and exposes the main entry
points; ``evaluate`` and ``estimate`` take Runs, DataFrames or paths alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sampleval
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.io import write_qrels, write_run
from sampleval.selection import Budget, qrels_oracle

API = ["evaluate", "estimate", "read_runs", "read_qrels", "load_sample", "METHODS", "simulate"]


def test_import_is_lazy_and_exposes_the_api() -> None:
    """``import sampleval`` loads no numpy, pandas or numba; each name loads on first use."""
    code = ("import sys, sampleval; heavy = [m for m in ('numpy', 'pandas', 'numba', 'scipy', "
            "'rich') if m in sys.modules]; assert not heavy, heavy; "
            f"assert all(callable(getattr(sampleval, n)) or n == 'METHODS' for n in {API!r})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert set(API) <= set(dir(sampleval)) and set(API) <= set(sampleval.__all__)
    assert "active" in sampleval.METHODS
    with pytest.raises(AttributeError):
        sampleval.no_such_thing  # noqa: B018


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Run], Qrels, Path]:
    root = tmp_path_factory.mktemp("api")
    collection = make_collection(np.random.default_rng(3), n_topics=4, n_runs=3, n_docs=200,
                                 depth=20, pool_depth=10)
    runs = [Run.from_frame(frame, name) for name, frame in collection.runs.items()]
    qrels = Qrels.from_frame(collection.qrels)
    (root / "runs").mkdir()
    for run in runs:
        write_run(run, root / "runs" / f"{run.name}.txt")
    write_qrels(qrels, root / "qrels.txt")
    return runs, qrels, root


def test_evaluate_takes_runs_frames_and_paths(made: tuple[list[Run], Qrels, Path]) -> None:
    runs, qrels, root = made
    expected = sampleval.evaluate(qrels, runs, ["AP", "P@10"])
    one = runs[0]
    frames = pd.concat([r.to_frame().assign(run=r.name) for r in runs], ignore_index=True)
    for qrels_like, runs_like in [
        (qrels, frames),                                   # one DataFrame, a 'run' column
        (qrels.frame, runs),                               # qrels as a DataFrame
        (root / "qrels.txt", root / "runs"),               # paths: a file and a directory
        (str(root / "qrels.txt"), [str(p) for p in sorted((root / "runs").iterdir())]),
    ]:
        got = sampleval.evaluate(qrels_like, runs_like, ["AP", "P@10"])
        pd.testing.assert_frame_equal(got, expected)
    single = sampleval.evaluate(qrels, one, ["AP"])  # one Run
    assert set(single["run"]) == {one.name}
    unnamed = sampleval.evaluate(qrels, one.to_frame(), ["AP"])  # one run as a DataFrame
    assert set(unnamed["run"]) == {"run"}
    assert unnamed["value"].tolist() == single["value"].tolist()


def test_estimate_takes_a_sample_path_and_a_single_run(
        made: tuple[list[Run], Qrels, Path]) -> None:
    runs, qrels, root = made
    selector = sampleval.METHODS["uniform"](Pool.from_runs(runs, depth=10), Budget(rate=0.5),
                                            np.random.default_rng(1))
    sample = sampleval.simulate(selector, qrels_oracle(qrels)).sample()
    sample.save(root / "sample")
    expected = sampleval.estimate(sample, runs[:1], ["AP~ht"])
    from_paths = sampleval.estimate(root / "sample", root / "runs" / f"{runs[0].name}.txt",
                                    ["AP~ht"])
    pd.testing.assert_frame_equal(from_paths, expected)
    pd.testing.assert_frame_equal(sampleval.estimate(sample, runs[0], ["AP~ht"]), expected)
    assert str(sampleval.load_sample(root / "sample")).startswith("Sample(design='stratified'")
