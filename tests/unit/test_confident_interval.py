"""Judging until confident checks its target against the interval ``estimate`` reports, the
upper allowance of ``few=completed`` included (issue 29; ``estimation.result.mean_sides``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.judging.confident import AnytimeJudging, ConfidentJudging, Target
from sampleval.selection import METHODS, Budget, qrels_oracle

# estimate's notes on the sparse topics (estimates outside [0, 1], few relevant judged)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _estimated(judging: ConfidentJudging, runs: list[Run]) -> pd.DataFrame:
    """``estimate``'s rows of the mean for the judging's sample, indexed by run."""
    rows = estimate(judging.sample(), runs, [judging.spec.name], depth=30)
    return rows[rows["query_id"] == MEAN_TOPIC].set_index("run")


def _check(judging: ConfidentJudging, runs: list[Run]) -> None:
    """The judging's intervals and half-widths are ``estimate``'s, whose upper side the
    allowance widens here (else the check would not tell the two apart)."""
    judging._refresh()
    names = [judging.selector.pool.run_names[r] for r in judging.runs]
    rows = _estimated(judging, runs).loc[names]
    assert ((rows["hi"] - rows["value"]) - (rows["value"] - rows["lo"])).max() > 1e-3
    assert judging.half_widths() == pytest.approx(((rows["hi"] - rows["lo"]) / 2).to_numpy(),
                                                  abs=1e-12)
    got = pd.DataFrame(judging.intervals(), index=["value", "lo", "hi"]).T.loc[names]
    for column in ("value", "lo", "hi"):
        assert got[column].to_numpy() == pytest.approx(rows[column].to_numpy(), abs=1e-12)


def test_the_committed_rule_checks_the_interval_estimate_reports(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """After a 4-document pilot per topic of a sparse collection (several topics find
    nothing relevant), the committed rule's half-widths are ``estimate``'s (hi - lo) / 2,
    with ``few=completed``'s upper allowance; before, they left the allowance out."""
    runs, qrels, pool = sparse_collection
    selector = METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(2))
    judging = ConfidentJudging(selector, Target("AP~ht", 0.03), start=4, batch=4)
    oracle = qrels_oracle(qrels)
    while not judging.phases[-1] or judging.phases[-1][-1].open:
        topic, docnos = judging.next_batch() or ("", [])
        judging.observe(topic, oracle(topic, docnos))
    assert judging.committed and (~judging.found).any()
    _check(judging, runs)


@pytest.mark.parametrize("interval", ["fixed", "anytime"])
def test_the_anytime_rule_widens_its_sequence_by_the_same_allowance(
        sparse_collection: tuple[list[Run], Qrels, Pool], interval: str) -> None:
    """The anytime rule over a stratified design (AP~ht) after every topic's first
    judgments: with ordinary intervals (``interval=fixed``) its intervals are
    ``estimate``'s; with the confidence sequence, the lower side is the sequence's and the
    upper side exceeds it by the same allowance as ``estimate``'s."""
    runs, qrels, pool = sparse_collection
    selector = METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(2))
    judging = AnytimeJudging(selector, Target("AP~ht", 0.03), start=4, batch=4,
                             interval=interval)
    oracle = qrels_oracle(qrels)
    while (judging.handed < judging.first).any():
        topic, docnos = judging.next_batch() or ("", [])
        judging.observe(topic, oracle(topic, docnos))
    if interval == "fixed":
        _check(judging, runs)
        return
    rows = _estimated(judging, runs)
    got = pd.DataFrame(judging.intervals(), index=["value", "lo", "hi"]).T
    rows = rows.loc[got.index]
    allowance = (rows["hi"] - rows["value"]) - (rows["value"] - rows["lo"])
    assert allowance.max() > 1e-3
    assert ((got["hi"] - got["value"]) - (got["value"] - got["lo"])).to_numpy() == (
        pytest.approx(allowance.to_numpy(), abs=1e-12))
    assert ((got["value"] - got["lo"]) > (rows["value"] - rows["lo"])).all()


def test_simulate_s_anytime_means_keep_the_upper_allowance() -> None:
    """``simulate``'s ``stop=anytime`` cells replace each mean's interval by the sequence's
    from the ordinary interval's lower side, and keep the upper side's allowance on top, as
    :class:`AnytimeJudging` reports it. Before, the asymmetric interval was read as one
    half-width, (hi - lo) / 2, and made symmetric: the allowance half moved to the lower
    side, half lost from the upper."""
    from sampleval.estimation import anytime
    from sampleval.simulation.estimates import Estimates
    from sampleval.simulation.trial import _anytime_means

    est = Estimates.empty(3, 2)
    mean = np.array([0.30, 0.20])
    down, allowance = np.array([0.02, 0.03]), np.array([0.01, 0.0])
    est = Estimates(est.value, est.lo, est.hi, mean, mean - down, mean + down + allowance,
                    est.topics, est.num_rel)
    tuned = anytime.target_variance(0.03)
    made = _anytime_means(est, tuned, 0.95)
    half = anytime.half_width((down / 1.959963984540054) ** 2, tuned)
    assert made.mean_lo == pytest.approx(mean - half, abs=1e-12)
    assert made.mean_hi == pytest.approx(mean + half + allowance, abs=1e-12)


def test_the_committed_rule_reads_the_posterior_estimate_estimate_reports(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """``few=posterior`` replaces AP-hat on the topics with at most two relevant judged
    (``estimation.result.corrected``): the rule's values and intervals are ``estimate``'s,
    not the design-based values (before, the look kept those)."""
    runs, qrels, pool = sparse_collection
    selector = METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(2))
    judging = ConfidentJudging(selector, Target("AP~ht(few=posterior)", 0.03), start=4,
                               batch=4)
    oracle = qrels_oracle(qrels)
    while not judging.phases[-1] or judging.phases[-1][-1].open:
        topic, docnos = judging.next_batch() or ("", [])
        judging.observe(topic, oracle(topic, docnos))
    judging._refresh()
    names = [judging.selector.pool.run_names[r] for r in judging.runs]
    rows = _estimated(judging, runs).loc[names]
    design = estimate(judging.sample(), runs, ["AP~ht"], depth=30)
    design = design[design["query_id"] == MEAN_TOPIC].set_index("run").loc[names]
    assert np.abs(rows["value"] - design["value"]).max() > 1e-3  # the posterior moved them
    got = pd.DataFrame(judging.intervals(), index=["value", "lo", "hi"]).T.loc[names]
    for column in ("value", "lo", "hi"):
        assert got[column].to_numpy() == pytest.approx(rows[column].to_numpy(), abs=1e-12)
