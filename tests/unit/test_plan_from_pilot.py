"""The planner's forecast from the committed rule's own plan after a pilot (issue 32 item 4):
:meth:`ConfidentJudging.from_pilot` reads a pilot sample as every topic's pilot phase."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.judging.confident import ConfidentJudging, Target
from sampleval.selection import METHODS, Budget, qrels_oracle

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _piloted(pool: Pool, qrels: Qrels, target: Target, seed: int) -> ConfidentJudging:
    """The committed rule with every topic's pilot judged, no further phase planned yet."""
    judging = ConfidentJudging(METHODS["stratified"](pool, Budget(rate=1.0),
                                                     np.random.default_rng(seed)),
                               target, start=6, batch=6)
    oracle = qrels_oracle(qrels)
    while not any(judging.phases) or any(p[-1].open for p in judging.phases if p):
        batch = judging.next_batch()
        assert batch is not None
        judging.observe(batch[0], oracle(*batch))
    return judging


@pytest.mark.parametrize("seed", [1, 2])
def test_a_pilot_sample_projects_what_the_rule_projects_after_it(
        sparse_collection: tuple[list[Run], Qrels, Pool], seed: int) -> None:
    """The rule's own pilot, written out as a sample and read back by ``from_pilot`` over a
    fresh selector, gives the rule's projection to the judgment (the same estimates, the
    same plan)."""
    _, qrels, pool = sparse_collection
    target = Target("AP~ht", 0.05)
    judging = _piloted(pool, qrels, target, seed)
    expected = judging.status()
    again = ConfidentJudging.from_pilot(
        METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(99)), target,
        judging.sample(), start=6, batch=6)
    got = again.status()
    assert expected.projected_needed is not None and expected.projected_needed > 0
    assert got.judged == expected.judged
    assert got.projected_needed == expected.projected_needed
    assert got.half_widths == pytest.approx(expected.half_widths, rel=1e-12)


def test_the_forecast_leaves_the_plan_alone_and_holds_its_interval(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """``forecast`` re-plans at the pooled level without touching the rule's projection;
    its interval holds the forecast, and at least the projection (the pooled value of
    skewed variances is at least their median); the same generator gives the same
    forecast. Before, there was no forecast from the rule's plan."""
    _, qrels, pool = sparse_collection
    judging = _piloted(pool, qrels, Target("AP~ht", 0.05), 3)
    before = judging.status().projected_needed
    needed, lo, hi = judging.forecast(np.random.default_rng(0), replicates=50)
    assert judging.status().projected_needed == before
    assert before is not None and needed is not None and lo is not None and hi is not None
    assert lo <= needed <= hi
    assert needed >= judging.judged.sum() + before
    assert judging.forecast(np.random.default_rng(0), replicates=50) == (needed, lo, hi)


def test_plan_command_forecasts_the_committed_rule_from_a_stratified_pilot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sampleval plan`` prints a ``committed`` row, the committed rule's forecast from its
    own plan after the pilot (the function's, with its interval); a pilot that is not laid
    out in strata gets one line saying why, and the other rules still. Before, no such
    row."""
    from tests.unit.test_anytime import _pilot

    from sampleval import cli
    from sampleval.io import read_runs
    from sampleval.io.samples import load_sample
    from sampleval.judging.pilot_plan import committed_forecast

    names = _pilot(tmp_path)
    capsys.readouterr()
    cli.run(["plan", str(tmp_path / "pilot"), *names, "--target", "AP:0.05",
             "--replicates", "30", "--seed", "4"])
    rows = {line.split("\t")[0]: line.split("\t")[1:]
            for line in capsys.readouterr().out.splitlines()[2:]}
    made = committed_forecast(load_sample(tmp_path / "pilot"), read_runs(names),
                              Target.parse("AP:0.05"), rng=np.random.default_rng(4),
                              replicates=30)
    assert made.needed is not None and made.lo is not None and made.hi is not None
    assert rows["committed"][0] == str(made.needed)
    assert rows["committed"][2] == f"{made.lo}-{made.hi}"
    assert made.lo <= made.needed <= made.hi and made.needed > made.judged
    active = tmp_path / "active"
    cli.run(["sample", "active", *names, "-n", "10", "--qrels", str(tmp_path / "qrels.txt"),
             "-s", "1", "-o", str(active)])
    capsys.readouterr()
    cli.run(["plan", str(active), *names, "--target", "AP:0.05", "--replicates", "10"])
    out = capsys.readouterr()
    assert "committed" not in out.out and {"fixed", "anytime"} <= {
        line.split("\t")[0] for line in out.out.splitlines()}
    assert "committed: no forecast" in out.err and "active" in out.err


def test_the_study_scores_the_plan_forecasts() -> None:
    """``studies.anytime.plan_forecasts``: forecast / judged, the share within 15% and the
    share whose interval holds the judgments used, over the campaigns with both."""
    import pandas as pd

    from studies.anytime import plan_forecasts

    table = pd.DataFrame({"judged": [100, 100, 100, None],
                          "plan": [90, 120, 100, 100], "plan_lo": [80, 110, 95, 90],
                          "plan_hi": [105, 130, 99, 110]})
    out = plan_forecasts(table)
    assert out["plan_n"] == 3 and out["plan_median"] == pytest.approx(1.0)
    assert out["plan_within_15%"] == pytest.approx(2 / 3)
    assert out["plan_interval_holds"] == pytest.approx(1 / 3)
