"""Helper of the judging tests: the file-based ``judge`` loop with the qrels as assessor."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from sampleval import cli
from sampleval.judging.loop import read_to_judge


def judged_steps(out: Path, truth: pd.Series, labels: Path) -> Iterator[pd.DataFrame]:
    """Until the sample in ``out`` is complete: each step's to-judge list (yielded before it
    is judged), then ``sampleval judge`` with its labels from ``truth`` (indexed by topic
    and docno; 0 where absent), written to ``labels``."""
    while not json.loads((out / "sample.json").read_text())["judging"]["complete"]:
        listed = read_to_judge(out)
        yield listed
        rel = [truth.get((t, d), 0) for t, d in zip(listed["topic"], listed["docno"],
                                                    strict=True)]
        listed.assign(iter=0, rel=rel)[["topic", "iter", "docno", "rel"]].to_csv(
            labels, sep=" ", header=False, index=False)
        cli.run(["judge", str(out), str(labels)])
