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


def _alike(judging: ConfidentJudging, unit: float, heavy: dict[int, float] | None = None
           ) -> ConfidentJudging:
    """``judging``'s pilot with every topic's variance per unit of design factor set to
    ``unit`` for every run (times ``heavy[i]`` on topic i), no bias or allowance, something
    relevant found everywhere: a pilot whose topics a simulated campaign can tell apart only
    by ``heavy``."""
    judging._refresh()
    g = judging._factor_last()
    scale = np.ones(len(g))
    for i, times in (heavy or {}).items():
        scale[i] = times
    judging.variance[:] = np.where(judging.present, (unit * g * scale)[:, None], np.nan)
    judging.bias[:] = 0.0
    judging.upper[:] = 0.0
    judging.found[:] = True
    return judging


def test_the_forecast_is_the_plan_where_every_topic_reveals_what_it_planned(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """A pilot whose topics share one variance per unit of design factor: every simulated
    campaign's first phase reveals what the plan projected, so it stops after its first
    plan; the forecast and both ends of its interval are the pilot's judgments plus that
    plan's sizes, the rule's projection (computed here from the plan itself). Leaves the
    rule's projection and its selector's generator alone. Before, the forecast re-planned
    at the pooled level and had no simulated campaigns."""
    from sampleval.judging.pilot_plan import campaign_forecast

    _, qrels, pool = sparse_collection
    judging = _alike(_piloted(pool, qrels, Target("AP~ht", 0.05), 3), 0.02)
    sizes = judging._plan_phases()
    expected = int(judging.judged.sum() + sizes.sum())
    assert sizes.sum() > 0 and judging._projection == sizes.sum()
    state = judging.selector.rng.bit_generator.state
    made = campaign_forecast(judging, np.random.default_rng(0), campaigns=12)
    assert (made.needed, made.lo, made.hi) == (expected, expected, expected)
    assert made.judged == judging.judged.sum()
    assert judging._projection == sizes.sum()
    assert judging.selector.rng.bit_generator.state == state


def test_a_topic_that_reveals_a_large_variance_pays_its_first_phase_twice(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """One topic's pilot variance is 400 times the others': the first plan gives it only
    what half its value and half the median ask, so a campaign where its phase reveals its
    own value (half of them) misses the target and the rule's shortfall plan judges it
    again. The forecast lies above the first plan, every campaign judges at least the first
    plan, the interval's top holds a second phase of at least the topic's least phase, and
    the same generator gives the same forecast (another seed, its own). Before, no
    shortfall plan was forecast."""
    from sampleval.judging.pilot_plan import campaign_forecast

    _, qrels, pool = sparse_collection
    judging = _alike(_piloted(pool, qrels, Target("AP~ht", 0.05), 3), 0.02, {4: 400.0})
    first = int(judging.judged.sum() + judging._plan_phases().sum())
    made = campaign_forecast(judging, np.random.default_rng(5), campaigns=30)
    assert made.needed is not None and made.lo is not None and made.hi is not None
    assert first <= made.lo < made.needed < made.hi
    assert made.hi >= first + judging._least(4)
    assert campaign_forecast(judging, np.random.default_rng(5), campaigns=30) == made
    assert campaign_forecast(judging, np.random.default_rng(6), campaigns=30) != made


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
             "--replicates", "30", "--seed", "4", "--campaigns", "15", "--interval", "0.8"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split("\t")[3:] == ["80% interval", "interval from"]
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in lines[2:]}
    made = committed_forecast(load_sample(tmp_path / "pilot"), read_runs(names),
                              Target.parse("AP:0.05"), rng=np.random.default_rng(4),
                              campaigns=15, coverage=0.8)
    assert made.needed is not None and made.lo is not None and made.hi is not None
    assert rows["committed"] == [str(made.needed), str(made.needed - made.judged),
                                 f"{made.lo}-{made.hi}", "15 simulated campaigns"]
    assert rows["fixed"][3] == "30 topic resamples"
    assert made.judged < made.lo <= made.hi and made.needed > made.judged
    anytime = committed_forecast(load_sample(tmp_path / "pilot"), read_runs(names),
                                 Target.parse("AP:0.05"), rng=np.random.default_rng(4),
                                 campaigns=15, coverage=0.8, stop="anytime")
    assert anytime.rule == "anytime" and rows["anytime"] == [
        str(anytime.needed), str(anytime.needed - anytime.judged),
        f"{anytime.lo}-{anytime.hi}", "15 simulated campaigns"]
    cli.run(["plan", str(tmp_path / "pilot"), *names, "--target", "AP:0.05",
             "--replicates", "30", "--seed", "4", "--campaigns", "15", "--interval", "0.8",
             "-f", "tsv"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == ["rule", "judged", "needed", "more", "lo", "hi", "level",
                                     "from"]
    tsv = {line.split("\t")[0]: line.split("\t")[1:] for line in lines[1:]}
    assert tsv["committed"] == [str(made.judged), str(made.needed),
                                str(made.needed - made.judged), str(made.lo), str(made.hi),
                                "0.8", "15 simulated campaigns"]
    assert tsv["fixed"][0] == str(made.judged) and tsv["fixed"][5:] == [
        "0.8", "30 topic resamples"]
    active = tmp_path / "active"
    cli.run(["sample", "active", *names, "-n", "10", "--qrels", str(tmp_path / "qrels.txt"),
             "-s", "1", "-o", str(active)])
    capsys.readouterr()
    cli.run(["plan", str(active), *names, "--target", "AP:0.05", "--replicates", "10"])
    out = capsys.readouterr()
    assert "committed" not in out.out and {"fixed", "anytime"} <= {
        line.split("\t")[0] for line in out.out.splitlines()}
    assert all(line.endswith("10 topic resamples") for line in out.out.splitlines()[2:])
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


def test_the_anytime_rule_on_the_phases_is_forecast_to_stop_within_its_plan(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """``stop=anytime`` on the committed phases, from the same pilot whose topics share one
    variance per unit of design factor, plans aimed at 0.7 of the target: every simulated
    campaign is the same (a degenerate interval) and stops within the anytime rule's own
    first plan, at the first of the looks within it whose half-widths meet the target
    (checked here with each phase's design factor as laid out, times the first plan's
    table's ratio at the share judged). Before, no
    forecast of this rule from its plan."""
    from sampleval.judging.confident import AnytimeJudging
    from sampleval.judging.pilot_plan import LOOKS, _first_phases, campaign_forecast

    _, qrels, pool = sparse_collection
    target = Target("AP~ht", 0.05)
    piloted = _alike(_piloted(pool, qrels, target, 3), 0.02)
    judging = AnytimeJudging.from_pilot(
        METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(7)), target,
        piloted.sample(), start=6, batch=6, margin=0.3)  # plans aimed at 0.7 of the target
    _alike(judging, 0.02)
    sizes = judging._plan_phases()
    made = campaign_forecast(judging, np.random.default_rng(0), campaigns=8)
    assert made.rule == "anytime" and made.lo == made.hi == made.needed
    assert made.needed is not None and made.judged < made.needed <= (
        judging.judged.sum() + sizes.sum())
    room = np.minimum(judging.capacity - judging.judged, judging.pool_size - judging.judged)
    table = judging._factors(room.astype(np.int64))
    phased = np.flatnonzero(sizes > 0)
    laid = _first_phases(judging, sizes)[0][phased]  # each phase's factor as laid out
    for f in np.linspace(1 / LOOKS, 1, LOOKS):
        done = np.maximum(np.ceil(f * sizes[phased]).astype(np.int64), 1)
        variance = judging.variance.copy()
        factor = laid * table[phased, done] / table[phased, sizes[phased]]
        variance[phased] = np.where(judging.present[phased], (0.02 * factor)[:, None], np.nan)
        if (judging.half_widths(variance) <= target.half_width).all() or f == 1:
            break
    assert done.sum() < sizes.sum()  # it stops within the plan
    assert made.needed == judging.judged.sum() + done.sum()
