"""The README's new-user path, run exactly as written.

The block that follows the marker ``<!-- new-user path`` in README.md is run line by line by
bash in a fresh directory holding what the README assumes: ``runs/`` (TREC run files),
``qrels.txt``, and ``my-labels.txt``, the labels the reader's own judging tool would have
saved (here the qrels, which judge every pooled document). Every command must succeed, so the
README cannot drift from the command line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.io import write_qrels, write_run

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "<!-- new-user path"
LINK = r"\]\(([^)\s#]+\.(?:md|png|svg|html|txt|csv|py))(?:#[^)]*)?\)"  # relative file links


def new_user_path() -> str:
    """The shell block after the marker."""
    text = README.read_text(encoding="utf-8")
    after = text[text.index(MARKER):]
    block = re.search(r"```sh\n(.*?)```", after, re.DOTALL)
    assert block is not None, "README: no ```sh block after the new-user path marker"
    return block.group(1)


@pytest.mark.slow
def test_the_readme_new_user_path_runs_as_written(tmp_path: Path) -> None:
    made = make_collection(np.random.default_rng(7), n_topics=5, n_runs=6, n_docs=300,
                           depth=30, pool_depth=20, rel_rate=0.08)
    (tmp_path / "runs").mkdir()
    for name, frame in made.runs.items():
        write_run(Run.from_frame(frame, name), tmp_path / "runs" / f"{name}.gz")
    write_qrels(Qrels.from_frame(made.qrels), tmp_path / "qrels.txt")
    shutil.copy(tmp_path / "qrels.txt", tmp_path / "my-labels.txt")
    script = new_user_path()
    commands = [line for line in script.splitlines() if line.strip() and not
                line.lstrip().startswith("#")]
    assert [c.split()[1] for c in commands] == ["evaluate", "sample", "judge", "estimate",
                                                "compare", "export"]
    # like with like: the exact evaluation at the depth the sample is pooled at
    depth = re.search(r"--depth (\d+)", commands[1])
    assert depth is not None and f"-M {depth.group(1)}" in commands[0]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}", "COLUMNS": "120"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "sample is complete" in done.stdout
    assert "Estimates (95% intervals)" in done.stdout and "frame share" in done.stdout
    assert "AP by AP~ht: paired differences" in done.stdout
    exported = (tmp_path / "my-qrels.txt").read_text().splitlines()
    assert exported and all(len(line.split()) == 4 for line in exported)


def test_the_readme_is_the_front_door() -> None:
    """At most 250 lines (the project's rule; the rest is in docs/guide/), says how to run
    the command after `make demo`, installs extras from the clone (sampleval is on no
    package index), and every relative link resolves."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert ".venv/bin/sampleval" in text and "source .venv/bin/activate" in text
    assert "pip install 'sampleval[" not in text and ".venv/bin/pip install -e '.[campaign]'" in text
    root = README.parent
    for target in re.findall(LINK, text):
        if not target.startswith("http"):
            assert (root / target).exists(), target
    for guide in (root / "docs" / "guide").glob("*.md"):
        for target in re.findall(LINK, guide.read_text()):
            if not target.startswith("http"):
                assert (guide.parent / target).exists(), (guide.name, target)
