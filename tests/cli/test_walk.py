"""A new expert user's walk through the guides beyond the everyday path (campaigns,
simulate, audit, predictions, plan, the drop-ins): the defects found, each with the test
that failed before its fix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _block_after(guide: str, marker: str) -> str:
    """The first fenced block of ``docs/guide/GUIDE`` after the line holding ``marker``."""
    text = (ROOT / "docs" / "guide" / guide).read_text(encoding="utf-8")
    found = re.search(re.escape(marker) + r".*?\n```[a-z]*\n(.*?)\n```", text, re.S)
    assert found, f"no block after {marker!r} in {guide}"
    return found.group(1)


@pytest.mark.slow
def test_simulate_guides_measured_example_runs_as_written(tmp_path: Path) -> None:
    """docs/guide/simulate.md's measured example, run in an empty directory as written
    (one trial instead of 20): it wrote into a directory nobody made (a traceback from
    write_qrels), then stopped in the first trial ('AP~ppi needs predictions')."""
    block = _block_after("simulate.md", "A measured example").replace("--trials 20",
                                                                      "--trials 1")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "sim-out" / "summary.csv").read_text()
    assert len(summary.splitlines()) == 5  # a header, 2 rates x (AP~ht, AP~ppi)
