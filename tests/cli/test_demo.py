"""`make demo` runs the whole job on the synthetic collection it generates."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sampleval.demo import DEPTH, how_to_run, main


@pytest.mark.slow
def test_demo_evaluates_estimates_and_simulates(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    main([str(tmp_path / "demo")])
    out, err = capsys.readouterr()
    assert "sampleval: warning: P@10~ht:" in err  # a small sample: values above 1, said so
    assert all(line.startswith("sampleval: warning: ") for line in err.splitlines())
    # each said once (the AP warning came again after the table, from the tau's estimate)
    assert len(set(err.splitlines())) == len(err.splitlines()), err
    assert "Leaderboard" in out and "Estimates (95% intervals)" in out
    assert "Simulation summary" in out
    assert f"-M {DEPTH}" in out and f"--depth {DEPTH}" in out  # one depth throughout
    assert (tmp_path / "demo" / "sample" / "sample.json").exists()
    taus = [float(line.rsplit(":", 1)[1]) for line in out.splitlines()
            if line.startswith("Kendall's tau")]
    assert len(taus) == 2 and min(taus) >= 0.8
    simulation = tmp_path / "demo" / "simulation"
    summary = pd.read_csv(simulation / "summary.csv")
    assert len(summary) == 4 * 3 * 2 and (summary["trials"] == 10).all()
    # the sampling methods' error shrinks as the budget grows
    for (method, measure), part in summary.groupby(["method", "measure"]):
        if method in ("uniform", "stratified", "active"):
            rms = part.sort_values("rate")["rms"].to_numpy()
            assert rms[-1] < rms[0], (method, measure)
    assert (simulation / "figures" / "rms_tau.png").stat().st_size > 1000
    assert (simulation / "report.html").exists()
    assert out.rstrip().splitlines()[-1] == how_to_run()


def test_the_demo_says_how_to_run_sampleval(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """After `make demo` the way to run the command is printed: the venv's bin/sampleval,
    relative to the clone, or its activation (issue 27)."""
    venv = tmp_path / ".venv" / "bin"
    monkeypatch.setattr("sys.executable", str(venv / "python"))
    monkeypatch.chdir(tmp_path)
    said = how_to_run()
    assert said.startswith("Run sampleval yourself: .venv/bin/sampleval --help")
    assert "source .venv/bin/activate" in said
