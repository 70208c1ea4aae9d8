"""A new user's everyday path, walked from the README: the defects found on the way, each
with the test that failed before its fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
from test_everyday import collection, drawn

from conftest import CliResult
from sampleval.core.run import Run
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.io import write_run


def _outside(name: str = "elsewhere") -> Run:
    """A run of every topic of the collection whose documents no run pooled (a run of
    another collection, or of another round's documents)."""
    runs, _ = collection()
    rows = [(topic, f"other-{topic}-{k}", float(20 - k))
            for topic in runs[0].topics for k in range(12)]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return Run.from_frame(frame, name)


def test_a_run_with_nothing_in_the_frame_is_estimated_not_a_traceback() -> None:
    """A run none of whose documents lies in the sample's frame, estimated alone: every
    estimate 0 with frame share 0 (documents outside the frame count as not relevant).
    Before, AP~ht's default (few=completed) failed with a numpy broadcasting error: the
    completion's rank table was as wide as the deepest frame document any run retrieved (none
    here), narrower than the runs' rankings."""
    sample = drawn("stratified")
    rows = estimate(sample, [_outside()], ["AP", "P@5", "nDCG@5"])
    mean = rows[rows["query_id"] == MEAN_TOPIC]
    assert len(mean) == 3
    assert (mean["value"].astype(float) == 0).all()
    assert (mean["frame_share"].astype(float) == 0).all()


def test_the_same_from_the_command_line(tmp_path: Path,
                                        cli: Callable[..., CliResult]) -> None:
    sample_dir = tmp_path / "sample"
    drawn("stratified").save(sample_dir)
    path = tmp_path / "elsewhere.txt"
    write_run(_outside(), str(path))
    out = cli("estimate", str(sample_dir), str(path), "-f", "tsv")
    assert "Traceback" not in out.stderr
    assert "elsewhere\tall\tAP~ht\t0.0" in out.stdout
