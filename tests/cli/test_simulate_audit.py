"""simulate with a synthetic machine judge (--predictor) and the audit's figures (--audit):
a circular judge's favoured run flagged, the others rarely, rank coverage (issue 31)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import conftest
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import UsageError
from sampleval.io.qrels import write_qrels
from sampleval.io.runs import write_run
from sampleval.simulation.predictors import (
    favoured_run,
    make_predictions,
    median_run,
    parse_predictor,
)
from sampleval.simulation.runner import simulate


def _collection(seed: int = 5, n_runs: int = 6) -> tuple[list[Run], Qrels]:
    data = make_collection(np.random.default_rng(seed), n_topics=15, n_runs=n_runs, n_docs=600,
                           depth=30, pool_depth=30)
    return ([Run.from_frame(f, n) for n, f in data.runs.items()],
            Qrels.from_frame(data.qrels))


def test_parse_predictor() -> None:
    assert parse_predictor("flip10").name == "flip10"
    spec = parse_predictor("circular:run=r1,k=5")
    assert (spec.name, spec.run, spec.k) == ("circular", "r1", 5)
    for bad in ("flop", "circular", "circular:k=3", "circular:run=a,k=0",
                "circular:run=a,depth=3", "circular:run=a,k=x", "flip10:k=3"):
        with pytest.raises(UsageError) as error:
            parse_predictor(bad)
        assert "\n" not in str(error.value)


def test_favoured_run_by_name_position_and_median() -> None:
    runs, qrels = _collection()
    pool = Pool.from_runs(runs, depth=30)
    names = list(pool.run_names)
    assert favoured_run(parse_predictor(f"circular:run={names[2]}"), pool, qrels) == names[2]
    assert favoured_run(parse_predictor("circular:run=1"), pool, qrels) == names[1]
    median = favoured_run(parse_predictor("circular:run=median"), pool, qrels)
    assert median in names
    assert median_run(pd.Series([0.3, 0.1, 0.2], index=["a", "b", "c"])) == "c"
    with pytest.raises(UsageError, match="no run 'nope'"):
        favoured_run(parse_predictor("circular:run=nope"), pool, qrels)
    made = make_predictions(pool, qrels, [f"circular:run={names[0]},k=3"], 0)
    frame = made[f"circular:run={names[0]},k=3"].frame
    assert (frame["prediction"] >= 0).all()


def test_circular_judge_is_flagged_and_others_rarely(tmp_path: Path) -> None:
    """A circular judge calling the median run's top document relevant on every topic
    inflates its AP by about 0.1 relative to the others' (30 runs: the others' relative
    biases lie within 0.009 of 0, most within the 0.005 that counts as none): a 30%
    stratified sample flags it in every trial, the others rarely."""
    runs, qrels = _collection(n_runs=30)
    summary = simulate(runs, qrels, ["stratified"], rates=[0.3], trials=6,
                       measures=["AP~ht"], output=tmp_path / "out", depth=30, seed=1,
                       figures=False, predictor="circular:run=median,k=1", audit=True)
    for column in ("audit_power", "audit_false_alarm", "rank_coverage"):
        assert column in summary
        assert column in pd.read_csv(tmp_path / "out" / "summary.csv")
    row = summary.iloc[0]
    assert row["audit_power"] == 1.0
    assert row["audit_false_alarm"] <= 0.1
    assert 0.5 <= row["rank_coverage"] <= 1


def test_audit_of_a_ppi_measure_reads_the_judge_as_its_predictions(tmp_path: Path) -> None:
    """``--audit`` with ``-m AP~ht,AP~ppi`` (docs/guide/simulate.md's example): the ~ppi
    measure is audited as ``sampleval audit -m AP~ppi`` audits it, with the machine's labels
    as its predictions (it stopped every trial with 'AP~ppi needs predictions')."""
    runs, qrels = _collection()
    summary = simulate(runs, qrels, ["stratified"], rates=[0.3], trials=1,
                       measures=["AP~ht", "AP~ppi"], output=tmp_path / "out", depth=30,
                       seed=1, figures=False, predictor="circular:run=median,k=1",
                       audit=True)
    assert set(summary["measure"]) == {"AP~ht", "AP~ppi"}
    assert summary["rank_coverage"].notna().all()


def test_audit_needs_a_judge_and_noisy_judges_have_no_power(tmp_path: Path) -> None:
    runs, qrels = _collection()
    with pytest.raises(UsageError, match="--audit needs"):
        simulate(runs, qrels, ["uniform"], rates=[0.2], trials=1, measures=["AP~ht"],
                 output=tmp_path / "a", audit=True, figures=False)
    summary = simulate(runs, qrels, ["uniform"], rates=[0.2], trials=1, measures=["AP~ppi"],
                       output=tmp_path / "b", depth=30, figures=False, predictor="flip10")
    assert "audit_power" not in summary


def test_cli_parse_error_is_one_line(tmp_path: Path) -> None:
    runs, qrels = _collection()
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    write_qrels(qrels, qrels_path)
    write_run(runs[0], run_path)
    done = conftest.run_cli("simulate", run_path, "--qrels", qrels_path, "--methods",
                            "uniform", "--rates", "0.1", "--trials", "1", "-m", "AP~ppi",
                            "--predictor", "circular:k=3", "-o", tmp_path / "o")
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1
    assert "circular:run=RUN,k=K" in done.stderr
