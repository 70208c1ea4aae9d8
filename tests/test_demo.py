"""`make demo` runs the whole job on the synthetic collection it generates."""

from __future__ import annotations

from pathlib import Path

import pytest

from sampleval.demo import main


def test_demo_evaluates_samples_and_estimates(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    main([str(tmp_path / "demo")])
    out = capsys.readouterr().out
    assert "Leaderboard" in out and "Estimates (95% intervals)" in out
    assert (tmp_path / "demo" / "sample" / "sample.json").exists()
    taus = [float(line.rsplit(":", 1)[1]) for line in out.splitlines()
            if line.startswith("Kendall's tau")]
    assert len(taus) == 2 and min(taus) >= 0.8
