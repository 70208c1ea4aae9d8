"""A selection method in one file of its own, loaded as a plugin (``SAMPLEVAL_PLUGINS``), is
listed by ``sampleval methods``, works in ``sampleval sample`` and ``sampleval simulate``, and
is collected and passed by the contract tests, with nothing else changed (issue 9)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import INNER_PYTEST, plugin_env, toy_collection_files

SAMPLEVAL = Path(sys.executable).parent / "sampleval"
ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''"""A toy selection method: a uniform sample of the documents some run ranks in the top
share of its list."""

from typing import ClassVar

import numpy as np

from sampleval.declare import Param
from sampleval.selection.base import register
from sampleval.selection.strata import Layout, StratifiedSelector


@register
class TopShare(StratifiedSelector):
    name: ClassVar[str] = "toy-top"
    summary: ClassVar[str] = "toy plugin: a uniform sample of the top of the runs"
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("share", float, 0.5, "share of each run's ranks", check=lambda x: 0 < x <= 1,
              requirement="in (0, 1]"),
    )

    @classmethod
    def reaches_every_document(cls, params):
        return False  # its stratum "rest" is never sampled (rate 0), by design

    def _layout(self, tp, budget):
        cut = max(1, int(self.params["share"] * tp.ranking.shape[1]))
        codes = (tp.best_rank() > cut).astype(np.int64)
        top = int((codes == 0).sum())
        return Layout(codes, np.array(["top", "rest"], dtype=object),
                      np.array([min(budget, top), 0]), wanted=np.array([True, False]))
'''


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300, check=False)


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A run file and a qrels file: 3 topics, 20 documents each."""
    return toy_collection_files(tmp_path, 20)


@pytest.mark.slow
def test_a_plugin_method_is_offered_everywhere(tmp_path: Path,
                                               files: tuple[Path, Path]) -> None:
    env = plugin_env(tmp_path, "toy_plugin", PLUGIN)
    listed = run([str(SAMPLEVAL), "methods"], env)
    assert listed.returncode == 0, listed.stderr
    assert "toy-top: toy plugin: a uniform sample of the top of the runs" in listed.stdout
    assert "share (float): share of each run's ranks" in listed.stdout
    out = tmp_path / "sample"
    sampled = run([str(SAMPLEVAL), "sample", "toy-top", str(files[0]), "--qrels",
                   str(files[1]), "-n", "4", "--param", "share=0.5", "-o", str(out),
                   "--seed", "1"], env)
    assert sampled.returncode == 0, sampled.stderr
    assert "12 judged" in sampled.stdout and (out / "sample.json").exists()
    simulated = run([str(SAMPLEVAL), "simulate", str(files[0]), "--qrels", str(files[1]),
                     "--methods", "toy-top:share=0.5,uniform", "--budgets", "4", "--trials",
                     "2", "--measures", "P@5", "--depth", "20", "-o", str(tmp_path / "sim")],
                    env)
    assert simulated.returncode == 0, simulated.stderr
    summary = pd.read_csv(tmp_path / "sim" / "summary.csv")
    assert set(summary["method"]) == {"toy-top:share=0.5", "uniform"}
    checked = run([sys.executable, "-m", "pytest", "tests/contracts/test_contracts.py", "-v",
                   *INNER_PYTEST, "-k", "toy-top"], env)
    passed = [line for line in checked.stdout.splitlines()
              if "toy-top" in line and "PASSED" in line]
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert len(passed) >= 4, checked.stdout[-3000:]  # defaults, budget, resume, directory
    # without the plugin, nothing of it remains
    plain = run([str(SAMPLEVAL), "methods"], {k: v for k, v in env.items()
                                              if k != "SAMPLEVAL_PLUGINS"})
    assert "toy-top" not in plain.stdout
