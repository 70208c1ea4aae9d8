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


def _campaign_files(tmp_path: Path, grades: tuple[int, ...]) -> tuple[Path, Path]:
    """Synthetic runs and qrels (graded as ``grades``) written for a campaign."""
    from campaign_support import collection
    from sampleval.core.qrels import Qrels
    from sampleval.io import write_qrels, write_run

    data = collection()
    runs = tmp_path / "runs"
    runs.mkdir()
    for run in data.runs:
        write_run(run, str(runs / run.name))
    frame = data.qrels.to_frame()
    frame["relevance"] = frame["relevance"].clip(upper=max(grades))
    qrels = tmp_path / "qrels.txt"
    write_qrels(Qrels.from_frame(frame), str(qrels))
    return runs, qrels


def test_campaign_simulate_refuses_qrels_off_the_campaigns_scale(tmp_path: Path) -> None:
    """``campaign simulate`` with graded qrels (0, 1, 2) on a campaign of the default
    scale (0, 1): one line naming the qrels, a document and the scale, before any assessor
    judges. Before, the oracle assessors judged until one sent a 2 and the command stopped
    half-way with the server's 422 ('a simulated assessor stopped: oracle-2: POST ...')."""
    pytest.importorskip("fastapi")
    from conftest import run_cli

    runs, qrels = _campaign_files(tmp_path, (0, 1, 2))
    db = tmp_path / "c.db"
    run_cli("campaign", "create", "c", "--runs", runs, "--method", "stratified",
            "--budget", "10", "--depth", "20", "--seed", "1", "--db", db)
    done = run_cli("campaign", "simulate", "c", "--qrels", qrels, "--db", db)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{qrels}: topic " in done.stderr
    assert "is not a grade of campaign 'c' (0, 1); the qrels grade 0, 1, 2" in done.stderr
    assert "judgments" not in done.stdout
