"""The range boundary of the anytime rule and the cheaper look (issue 32)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm
from test_anytime import _peeking, _pilot  # sequential samples; a pilot on disk

from sampleval import cli
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.estimation import anytime
from sampleval.judging.confident import AnytimeJudging, Target, _first_best, restore_judging
from sampleval.selection import METHODS, Budget, qrels_oracle
from sampleval.selection.active import with_share


def _brownian_sup(rng: np.random.Generator, paths: int, ratio: float,
                  steps: int) -> np.ndarray:
    """sup over the grid of |W(I)| / sqrt(I), I on ``steps`` geometric points of [1, ratio],
    W(1) ~ N(0, 1): the statistic whose 1 - alpha quantile is the range's c (monitored at
    the grid only, so slightly below the continuous one)."""
    t = np.geomspace(1.0, ratio, steps)
    dt = np.diff(t, prepend=0.0)
    w = np.zeros(paths)
    sup = np.zeros(paths)
    for k in range(steps):
        w += rng.normal(0.0, math.sqrt(dt[k]), paths)
        sup = np.maximum(sup, np.abs(w) / math.sqrt(t[k]))
    return sup


def test_the_range_constant_is_brownian_motion_s_crossing_level() -> None:
    """c(r) solves P(exists I in [1, r]: |W(I)| >= c sqrt(I)) = alpha. Checked against: a
    single look (r = 1: 2 (1 - Phi(c)), c = 1.96); the exact linear boundary, P(W(I) >= a +
    b I for some I) = exp(-2ab), which with a, b tuned over the range (and alpha/2 a side)
    bounds the crossing above, so c lies below it; and the normal mixture, which holds over
    all information at 3.035. c grows with the range. (The seeded Monte Carlo of Brownian
    motion: the next test, slow.)"""
    assert anytime.range_crossing(1.959964, 1.0) == pytest.approx(0.05, abs=1e-6)
    alpha = 0.05
    mixture = float(anytime.multiplier(anytime.tightest()))
    last = 0.0
    for ratio in (2.5, 4.0, 16.0):
        c = anytime.range_multiplier(ratio, alpha)
        assert anytime.range_crossing(c, ratio) == pytest.approx(alpha, abs=1e-5)
        linear = math.sqrt(2 * math.log(2 / alpha)) * (ratio ** 0.25 + ratio ** -0.25) / 2
        assert max(norm.ppf(1 - alpha / 2), last) < c < min(linear, mixture)
        last = c
    # the constants themselves at alpha = 0.05 (the grid errs by about +0.002)
    assert anytime.range_multiplier(4.0, 0.05) == pytest.approx(2.7024, abs=0.003)


@pytest.mark.slow
def test_brownian_motion_crosses_the_range_constant_at_alpha() -> None:
    """Seeded Monte Carlo of Brownian motion on a fine grid (20,000 paths of 2,000 steps a
    range): its crossing rate at c(r) is at most alpha, and little less (the grid misses a
    few crossings)."""
    rng = np.random.default_rng(20261127)
    alpha = 0.05
    for ratio in (2.5, 4.0, 16.0):
        c = anytime.range_multiplier(ratio, alpha)
        rate = (_brownian_sup(rng, 20000, ratio, 2000) >= c).mean()
        assert 0.040 <= rate <= alpha + 0.004  # 3 standard errors above alpha at most


def test_the_range_boundary_is_c_sqrt_v_in_its_range_and_the_tail_outside() -> None:
    h, ci = 0.03, 0.95
    ratio, share = anytime.RANGE, anytime.TAIL_SHARE
    tuned = anytime.target_variance(h, ci)
    c = anytime.range_multiplier(ratio, (1 - share) * (1 - ci))
    assert c * math.sqrt(tuned) == pytest.approx(h)
    assert float(anytime.half_width(tuned, tuned)) == pytest.approx(h)
    low = tuned / ratio
    alpha = share * (1 - ci)
    star = 2 * math.log(1 / alpha) + math.log(1 + 2 * math.log(1 / alpha))

    def tail(v: float) -> float:  # the mixture at level share * alpha, tuned at V*/r
        x = star * low / v
        return math.sqrt(v) * math.sqrt(2 * (x + 1) / x * math.log(math.sqrt(x + 1) / alpha))

    for v in (tuned * 3, tuned * 1.0001, tuned, tuned / 2, low, low * 0.99, low / 10):
        expected = (min(c * math.sqrt(v), tail(v)) if low <= v <= tuned else tail(v))
        assert float(anytime.half_width(v, tuned)) == pytest.approx(expected, rel=1e-12)
    # above the range no look meets the target; below it every look still does
    v = tuned * np.geomspace(1.0001, 1e3, 50)
    assert (anytime.half_width(v, tuned) > h).all()
    v = tuned * np.geomspace(1e-6, 1.0, 200)
    assert (anytime.half_width(v, tuned) <= h * (1 + 1e-12)).all()
    # narrower than the mixture where the rule stops, by the ratio of the constants
    mixture = anytime.target_variance(h, ci, ratio=None)
    assert tuned > mixture * 1.25
    # read back: the tail above the target, the range within it
    v = tuned * np.array([1e3, 10.0, 1.5, 1.0, 0.7, 1 / ratio])
    widths = anytime.half_width(v, tuned)
    np.testing.assert_allclose(anytime.variance_for(widths, tuned), v, rtol=1e-9)
    # too short a range: below it the tail would be wider than the target
    with pytest.raises(UsageError):
        anytime.target_variance(h, ci, ratio=1.5)


def test_peeking_at_every_batch_keeps_the_range_sequence_covering() -> None:
    """Seeded Monte Carlo of the estimator under peeking: sequential simple random samples
    from skewed finite populations, a look after every batch, and the worst stopping rule
    (stop at the first look where the interval misses). With the range placed over the
    later looks (V* at RANGE times the median variance of the last look), the range
    sequence covers at every look as often as the fixed interval covers at one look (the
    estimator's own normal approximation: 0.945-0.953 over three seeds of 1,000 campaigns,
    the range sequence 0.946-0.951; the mixture, 0.97, has slack there), i.e. 0.95 within
    two standard errors, while the fixed 95% interval, over the looks of the range only,
    misses at some look in 15-17%."""
    rng = np.random.default_rng(20261128)
    estimates, variances, truth = _peeking(rng, trials=1000, topics=5, size=200, batch=10,
                                          pilot=40)
    tuned = float(np.median(variances[:, -1])) * anytime.RANGE
    errors = np.abs(estimates - truth[0])
    anytime_ok = (errors <= anytime.half_width(variances, tuned)).all(axis=1)
    inside = (variances >= tuned / anytime.RANGE) & (variances <= tuned)
    assert inside.sum(axis=1).mean() > 8  # the range holds many looks
    fixed_ok = ((errors <= 1.96 * np.sqrt(variances)) | ~inside).all(axis=1)
    single = (errors[:, -1] <= 1.96 * np.sqrt(variances[:, -1])).mean()
    assert anytime_ok.mean() >= min(0.95 - 2 * math.sqrt(0.05 * 0.95 / 1000), single - 0.005)
    assert fixed_ok.mean() < 0.9


def test_peeking_at_brownian_motion_keeps_the_range_sequence_covering() -> None:
    """The same with the canonical joint distribution itself: theta_k - theta = W(I_k) / I_k
    at 400 looks over information 1 to 100, the target placed so that the range holds the
    looks of information 20 to 50: covering at every look in >= 95% of 4,000 paths; the
    fixed interval, over the range alone, misses at some look in more than 10%."""
    rng = np.random.default_rng(7)
    info = np.geomspace(1.0, 100.0, 400)
    steps = np.diff(info, prepend=0.0)
    w = np.cumsum(rng.normal(0.0, np.sqrt(steps), (4000, len(info))), axis=1)
    errors = np.abs(w / info)
    variances = 1.0 / info
    tuned = 1.0 / 20.0
    ok = (errors <= anytime.half_width(variances, tuned)[None, :]).all(axis=1)
    inside = (variances >= tuned / anytime.RANGE) & (variances <= tuned)
    fixed = ((errors <= 1.96 * np.sqrt(variances)) | ~inside[None, :]).all(axis=1)
    assert ok.mean() >= 0.95
    assert fixed.mean() < 0.9


def test_the_rule_stops_on_the_range_boundary_and_resumes_with_it(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    _, qrels, pool = sparse_collection

    def make(ratio: float | None) -> AnytimeJudging:
        selector = METHODS["uniform"](pool, Budget(rate=1.0), np.random.default_rng(3))
        return AnytimeJudging(selector, Target("P@10", 0.06), start=5, batch=5, ratio=ratio)

    oracle = qrels_oracle(qrels)
    ranged, mixture = make(anytime.RANGE), make(None)
    assert ranged.tuned == anytime.target_variance(0.06)
    sure, old = ranged.run(oracle), mixture.run(oracle)
    assert sure.reason == old.reason == "target met"
    assert sure.judged < old.judged  # the narrower boundary stops sooner
    present = ranged.present[:, ranged.runs]
    total = np.where(present, ranged.variance[:, ranged.runs], 0.0).sum(axis=0)
    np.testing.assert_allclose(ranged.half_widths(), anytime.half_width(
        total / present.sum(axis=0) ** 2, ranged.tuned))
    # a state saved with the range boundary restores it; one saved before it, the mixture
    state = ranged.state()
    assert restore_judging(pool, state).tuned == ranged.tuned  # type: ignore[attr-defined]
    before = {k: v for k, v in mixture.state().items() if k != "ratio"}
    assert restore_judging(pool, before).tuned == mixture.tuned  # type: ignore[attr-defined]


def test_the_plan_breaks_ties_in_topic_order_not_by_rounding() -> None:
    """Equal shares make exact ties, which argmax broke by the last bit of the gains."""
    gains = np.array([0.5, 1.0, 1.0 + 2e-16, -np.inf])
    assert int(np.argmax(gains)) == 2 and _first_best(gains) == 1
    assert _first_best(np.array([0.2, 0.1])) == 0
    assert _first_best(np.array([-np.inf, -np.inf])) == 0


def test_a_look_builds_only_the_tables_of_the_topics_it_re_estimates(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """``ActiveSelector.sample(topics=...)`` is ``sample().restricted(topics)``, and a topic's
    draw probabilities, kept by round, are the dense formula's."""
    _, qrels, pool = sparse_collection
    selector = METHODS["active"](pool, Budget(rate=0.5), np.random.default_rng(5), batch=4)
    oracle = qrels_oracle(qrels)
    for _ in range(6):
        for topic in pool.topics:
            docs = selector.propose(topic, 4)
            if docs:
                selector.observe(topic, oracle(topic, docs))
    some = list(pool.topics)[2:5]
    part, whole = selector.sample(topics=some), selector.sample().restricted(some)
    for name in ("frame", "draws", "rounds", "round_probs"):
        a, b = getattr(part, name), getattr(whole, name)
        assert a.reset_index(drop=True).equals(b.reset_index(drop=True)), name
    for draws in selector._topics.values():
        weight = np.zeros((len(draws.present), draws.size))
        weight[draws.occ_run, draws.occ_doc] = draws.occ_prior
        dense = with_share(draws.run_probs[:draws.rounds] @ weight, draws.uniform, draws.size)
        np.testing.assert_allclose(draws.draw_probabilities(draws.rounds), dense, rtol=1e-13)


def test_plan_with_a_learnt_exponent_forecasts_from_the_pilot_as_one_look(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``plan --exponent B``: each rule's forecast is n (V / V*)^(1/B) from the pilot's
    widest variance of a run's mean (computed by hand here from the pilot's intervals),
    V* the rule's stopping variance (the fixed interval's (h / 1.96)^2, the range
    boundary's (h / c)^2)."""
    from sampleval.estimation.engine.views import MEAN_TOPIC
    from sampleval.estimation.estimates import estimate
    from sampleval.io.samples import load_sample

    names = _pilot(tmp_path)
    capsys.readouterr()
    cli.run(["plan", str(tmp_path / "pilot"), *names, "--target", "P@10:0.25",
             "--exponent", "1.5"])  # both forecasts below the 344-document pool (no cap)
    lines = dict(line.split("\t", 1) for line in capsys.readouterr().out.splitlines()[1:])
    sample = load_sample(str(tmp_path / "pilot"))
    rows = estimate(sample, names, ["P@10"])
    rows = rows[rows["query_id"] != MEAN_TOPIC]
    v = ((rows["hi"] - rows["lo"]) / 2 / 1.959964) ** 2
    widest = float((v.groupby(rows["run"]).sum() / rows.groupby("run").size() ** 2).max())
    n = int(sample.frame["relevance"].count())
    for rule, aim in (("fixed", (0.25 / 1.959964) ** 2),
                      ("anytime", anytime.target_variance(0.25))):
        expected = math.ceil(n * (widest / aim) ** (1 / 1.5))
        assert abs(int(lines[rule].split("\t")[0]) - expected) <= 1, rule
