"""The anytime rule on the committed rule's stratified plan (``AnytimeJudging(committed=True)``,
issue 32): phases planned as the committed rule plans them, a look after every batch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_anytime import assert_resumes  # interrupted and restored, the same judging

from judge_support import judged_steps
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.estimation import anytime
from sampleval.judging.confident import READY, AnytimeJudging, ConfidentJudging, Status, Target
from sampleval.selection import METHODS, Budget, qrels_oracle
from sampleval.selection.strata import handout

EDGES = (0, 30, 100, 400)
"""The strata of every synthetic topic (ranks), and its population size."""
RATES = (0.5, 0.25, 0.1)
"""Each stratum's share of relevant documents (relevance falls with rank)."""


def _stratified_peeking(rng: np.random.Generator, trials: int, topics: int, pilot: int,
                        plan: int, batch: int, least: int = READY
                        ) -> tuple[np.ndarray, np.ndarray, float]:
    """Sequential stratified samples as the anytime rule on phases draws them: per topic a
    simple random pilot of ``pilot`` documents, then a phase over the documents not judged
    whose size (a share of ``plan`` judgments in all) and Neyman allocation over the strata
    are chosen from the pilot's labels (n_h in proportion to N_h s_h, s_h the pilot's
    standard deviation in the stratum, floored; at least 2 per stratum), handed out in
    :func:`handout` order, ``batch`` at a time to the topic whose phase is least far through,
    with a look after every batch once every phase has drawn ``least`` documents of each of
    its strata (as many as it will, if fewer; the rule's :data:`READY`). At a look: the mean over topics of each topic's
    mean value, the pilot's documents counted exactly and the rest by the stratified
    expansion estimate, with its finite-population-corrected variance. Returns
    ``[trials, looks]`` errors and variances (NaN after a trial's last look) and the true
    mean."""
    size = EDGES[-1]
    strata = np.repeat(np.arange(len(RATES)), np.diff(EDGES))
    values = rng.binomial(1, np.array(RATES)[strata], (topics, size)).astype(np.float64)
    truth = float(values.mean())
    most = plan // batch + topics
    errors = np.full((trials, most), np.nan)
    variances = np.full((trials, most), np.nan)
    for trial in range(trials):
        judged = np.zeros((topics, size), dtype=bool)
        for t in range(topics):
            judged[t, rng.choice(size, pilot, replace=False)] = True
        neyman = np.zeros((topics, len(RATES)))  # N_h s_h, the plan from the pilot's labels
        for t in range(topics):
            left = np.bincount(strata[~judged[t]], minlength=len(RATES))
            seen = [values[t, judged[t] & (strata == h)] for h in range(len(RATES))]
            spread = np.array([max(y.std() if len(y) > 1 else 0.5, 0.05) for y in seen])
            neyman[t] = left * spread
        sizes = plan * neyman.sum(axis=1) / neyman.sum()
        counts = np.zeros((topics, len(RATES)), dtype=np.int64)
        orders = []
        for t in range(topics):
            left = np.bincount(strata[~judged[t]], minlength=len(RATES))
            share = neyman[t] / neyman[t].sum()
            counts[t] = np.minimum(left, np.maximum(2, np.round(sizes[t] * share)))
            inside = np.flatnonzero(~judged[t])
            codes = strata[inside]
            orders.append(inside[handout(codes, counts[t], rng.random(len(inside)))])
        given = np.zeros(topics, dtype=np.int64)
        look = 0
        while (given < [len(o) for o in orders]).any():
            t = int(np.argmin([g / len(o) if g < len(o) else np.inf
                               for g, o in zip(given, orders, strict=True)]))
            given[t] = min(given[t] + batch, len(orders[t]))
            taken = [strata[o[:g]] for o, g in zip(orders, given, strict=True)]
            if any((np.bincount(c, minlength=len(RATES)) < np.minimum(counts[t_], least)).any()
                   for t_, c in enumerate(taken)):
                continue  # not every stratum reached yet: no look
            estimate = variance = 0.0
            for u in range(topics):
                chosen = orders[u][:given[u]]
                total = values[u, judged[u]].sum()
                for h in range(len(RATES)):
                    frame = (~judged[u]) & (strata == h)
                    big = int(frame.sum())
                    y = values[u, chosen[strata[chosen] == h]]
                    if not len(y):
                        continue
                    total += big * y.mean()
                    if len(y) > 1:
                        variance += big ** 2 * (1 / len(y) - 1 / big) * y.var(ddof=1) / (
                            size ** 2 * topics ** 2)
                estimate += total / size / topics
            errors[trial, look] = estimate - truth
            variances[trial, look] = variance
            look += 1
    return errors, variances, truth


@pytest.mark.slow
def test_peeking_on_the_stratified_plan_keeps_the_sequence_covering_and_breaks_fixed_ones(
        ) -> None:
    """Seeded Monte Carlo of the design the anytime rule samples with on committed phases:
    a plan chosen from the pilot's labels (Neyman over topics and strata), then each topic's
    phase in its stratified hand-out order at the same pace. Stopping at the first look
    where the interval misses (the worst any rule can do), the range boundary (tuned before
    any label, at a variance the plan reaches) still covers in >= 95% of the campaigns; the
    ordinary 95% interval misses at some look far more often, while at one look it covers
    about 95%."""
    rng = np.random.default_rng(20261128)
    errors, variances, _ = _stratified_peeking(rng, trials=200, topics=5, pilot=20,
                                               plan=1200, batch=10)
    looks = (~np.isnan(variances)).sum(axis=1)
    assert looks.min() >= 10
    last = variances[np.arange(len(looks)), looks - 1]
    tuned = float(np.median(last)) * 1.5  # the range [V*/2.5, V*] around where plans end
    seen = ~np.isnan(variances)
    v = np.where(seen, variances, 1.0)
    width = anytime.half_width(v, tuned)
    anytime_ok = ((np.abs(errors) <= width) | ~seen).all(axis=1)
    fixed_ok = ((np.abs(errors) <= 1.96 * np.sqrt(v)) | ~seen).all(axis=1)
    assert anytime_ok.mean() >= 0.95
    assert fixed_ok.mean() < 0.9
    one = np.abs(errors[np.arange(len(looks)), looks - 1]) <= 1.96 * np.sqrt(last)
    assert one.mean() >= 0.9


def _plan_end_peeking(rng: np.random.Generator, trials: int, topics: int, pilot: int,
                      plans: int, size: int, least: int = READY, within: str = "labels",
                      refresh: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Campaigns of ``plans`` plans after a simple random pilot of ``pilot`` documents per
    topic, as the rule with ``spend='plan-ends'`` makes them: each plan, decided from every
    label so far, gives each topic a phase over its documents not judged yet, its size (a
    share of about ``size`` judgments that grows with the topic's observed spread) and its
    allocation over the strata chosen from those labels (``within='labels'``: Neyman on the
    labels' spread, floored; ``'design'``: Neyman on the strata's prior rates, fixed by the
    ranks as the rule's stratified layouts are); at the plan's end, the estimate of the
    mean over topics counts the documents judged before the phase exactly and expands the
    phase's stratified sample over the rest, with its finite-population corrected variance.
    With ``refresh`` < 1 the plans after the first give phases only to that share of the
    topics, those with the largest estimated variance (as the rule's shortfall plans
    re-judge the topics where the plan gains most); the others keep their estimates.
    Returns ``[trials, plans]`` errors and variances."""
    total = EDGES[-1]
    strata = np.repeat(np.arange(len(RATES)), np.diff(EDGES))
    values = rng.binomial(1, np.array(RATES)[strata], (topics, total)).astype(np.float64)
    truth = float(values.mean())
    prior = np.sqrt(np.array(RATES) * (1 - np.array(RATES)))
    errors = np.zeros((trials, plans))
    variances = np.zeros((trials, plans))
    for trial in range(trials):
        judged = np.zeros((topics, total), dtype=bool)
        for t in range(topics):
            judged[t, rng.choice(total, pilot, replace=False)] = True
        estimate = np.zeros(topics)  # each topic's part of the mean, and of its variance
        variance = np.zeros(topics)
        for k in range(plans):
            spread = np.zeros((topics, len(RATES)))
            for t in range(topics):
                for h in range(len(RATES)):
                    y = values[t, judged[t] & (strata == h)]
                    spread[t, h] = max(y.std() if len(y) > 1 else 0.5, 0.05)
            left = np.array([np.bincount(strata[~judged[t]], minlength=len(RATES))
                             for t in range(topics)])
            weight = left * spread
            sizes = size * weight.sum(axis=1) / weight.sum()
            inner = weight if within == "labels" else left * prior[None, :]
            chosen_topics = (range(topics) if k == 0 or refresh >= 1 else np.argsort(
                -variance)[:max(1, round(refresh * topics))].tolist())
            for t in chosen_topics:
                counts = np.minimum(left[t], np.maximum(least, np.round(
                    sizes[t] * inner[t] / inner[t].sum()))).astype(np.int64)
                phase_total = values[t, judged[t]].sum()
                variance[t] = 0.0
                for h in range(len(RATES)):
                    frame = np.flatnonzero(~judged[t] & (strata == h))
                    if not len(frame) or not counts[h]:
                        continue
                    chosen = rng.choice(frame, counts[h], replace=False)
                    y = values[t, chosen]
                    phase_total += len(frame) * y.mean()
                    if counts[h] > 1:
                        variance[t] += len(frame) ** 2 * (1 / counts[h] - 1 / len(frame)) * (
                            y.var(ddof=1)) / (total ** 2 * topics ** 2)
                    judged[t, chosen] = True
                estimate[t] = phase_total / total / topics
            errors[trial, k] = estimate.sum() - truth
            variances[trial, k] = variance.sum()
    return errors, variances


def test_the_plan_end_boundary_is_z_at_the_spent_level() -> None:
    """alpha_k = alpha / 2^k over the plan ends k = 1, 2, ...: z at 1 - alpha_k / 2, the
    levels summing to alpha; below the sequence's 2.638 at the first two plan ends."""
    from statistics import NormalDist

    levels = [0.05 * 0.5 ** k for k in range(1, 60)]
    assert sum(levels) == pytest.approx(0.05)
    for k in (1, 2, 3, 7):
        want = NormalDist().inv_cdf(1 - 0.05 * 0.5 ** k / 2)
        assert anytime.plan_end_multiplier(k) == pytest.approx(want, rel=1e-9)
    assert anytime.plan_end_multiplier(1) == pytest.approx(2.2414, abs=1e-4)
    assert anytime.plan_end_multiplier(2) < 2.638 < anytime.plan_end_multiplier(3)
    with pytest.raises(UsageError):
        anytime.plan_end_multiplier(0)


def test_peeking_at_plan_ends_the_plan_end_boundary_covers_short_of_95_percent() -> None:
    """Seeded Monte Carlo of campaigns of three plans, each decided from every label before
    it and re-estimating the unjudged documents afresh (the shortfall plans the sequence's
    argument does not cover): stopping at the first plan end where the interval misses (the
    worst a rule stopping at plan ends can do), the plan-end boundary covers far more often
    than the ordinary interval at every plan end, but short of 95%: 0.91 here (300
    campaigns, SE about 0.017; 0.91-0.92 over seeds 2-5, the ordinary interval 0.79-0.83),
    because each plan end's normal approximation covers about 0.90-0.96 at z (on small
    binary strata) and the
    boundary, exact under the union bound, has no slack to absorb it, where the sequence
    has (0.965 in the test above). Harsher than the rule: the allocation over a topic's
    strata follows the labels here, where the rule's layouts are fixed by the ranks (with
    those, the next test: 0.94-0.96). Why ``spend='plan-ends'`` is not the default
    (docs/guide/anytime.md, "The plan-end boundary")."""
    rng = np.random.default_rng(2)
    errors, variances = _plan_end_peeking(rng, trials=300, topics=5, pilot=20, plans=3,
                                          size=400)
    c = np.array([anytime.plan_end_multiplier(k) for k in range(1, 4)])
    spent = (np.abs(errors) <= c[None, :] * np.sqrt(variances)).all(axis=1)
    fixed = (np.abs(errors) <= 1.96 * np.sqrt(variances)).all(axis=1)
    assert 0.88 <= spent.mean() < 0.95
    assert fixed.mean() < spent.mean() - 0.05
    first = np.abs(errors[:, 0]) <= 1.96 * np.sqrt(variances[:, 0])
    assert 0.88 <= first.mean() <= 0.96  # one plan end alone: the normal approximation's


def _assert_stops_at_the_first_plan_end_meeting(judging: AnytimeJudging, qrels: Qrels,
                                                width: float) -> Status:
    """Run ``judging`` (a plan-end boundary) and check that it looked only at plan ends
    (every phase judged, none at the pilot's) and stopped at the first whose widest
    half-width is at most ``width``, that half-width c_k times the standard error, c_k the
    boundary's at that plan end; its status."""
    status = judging.run(qrels_oracle(qrels))
    assert status.reason == "target met"
    widths = [w for _, w in judging.looks]
    assert all(w > width for w in widths[:-1]) and widths[-1] <= width
    assert len(judging.looks) == judging.plans
    assert not any(p[-1].open for p in judging.phases if p)
    present = judging.present[:, judging.runs]
    total = np.where(present, judging.variance[:, judging.runs], 0.0).sum(axis=0)
    c = anytime.plan_end_multiplier(judging.plans, plans=judging.forecast_plans,
                                    first=judging.first_share)
    np.testing.assert_allclose(judging.half_widths(), c * np.sqrt(total) / present.sum(axis=0))
    return status


def test_the_matched_spending_is_linear_over_the_forecast_plans_and_geometric_beyond(
        ) -> None:
    """``plans=K``: (1 - PLAN_TAIL) alpha / K on each of the first K plan ends, then
    PLAN_TAIL alpha 2^-(k - K): the levels sum to alpha, and the multiplier is z at each."""
    from scipy.stats import norm

    alpha = 0.05
    for plans in (1, 2, 3, 5):
        levels = [anytime.plan_end_level(k, plans=plans) for k in range(1, 80)]
        assert sum(levels) == pytest.approx(alpha)
        assert levels[:plans] == pytest.approx([(1 - anytime.PLAN_TAIL) * alpha / plans] * plans)
        assert levels[plans] == pytest.approx(anytime.PLAN_TAIL * alpha / 2)
        assert anytime.plan_end_multiplier(plans + 2, plans=plans) == pytest.approx(
            norm.isf(anytime.PLAN_TAIL * alpha / 8))
    assert anytime.plan_end_multiplier(1, plans=3) == pytest.approx(2.4324, abs=1e-4)
    assert anytime.plan_end_multiplier(2, plans=2) == pytest.approx(2.2818, abs=1e-4)
    assert anytime.plan_end_level(2) == pytest.approx(alpha / 4)  # geometric unchanged
    # a light first plan end: its share, the rest of the K ends' split over the others
    light = [anytime.plan_end_level(k, plans=3, first=0.1) for k in range(1, 80)]
    assert sum(light) == pytest.approx(alpha)
    assert light[:3] == pytest.approx([0.1 * alpha, 0.4 * alpha, 0.4 * alpha])
    assert anytime.plan_end_multiplier(2, plans=3, first=0.1) == pytest.approx(2.3263, abs=1e-4)
    for bad in ({"plans": 0}, {"plans": 1, "first": 0.1}, {"plans": 3, "first": 0.9}):
        with pytest.raises(UsageError):
            anytime.plan_end_level(1, **bad)


def test_with_matched_spending_it_stops_at_the_first_plan_end_meeting_the_target(
        pool_and_qrels: tuple[Pool, Qrels]) -> None:
    """``spend='matched'``: looks only at plan ends, judging stops at the first whose widest
    half-width meets the target, that half-width is z at the level the matched spending
    gives that plan end (K fixed before the first plan) times the standard error; it
    resumes with its K."""
    pool, qrels = pool_and_qrels
    for seed in range(2):
        judging = _phased(pool, 0.06, seed=seed, spend="matched")
        _assert_stops_at_the_first_plan_end_meeting(judging, qrels, 0.06)
        assert judging.forecast_plans in (2, 3)
    resumed = assert_resumes(pool, qrels, lambda: _phased(pool, 0.06, seed=5, spend="matched"),
                             30)
    assert resumed.spend == "matched" and resumed.forecast_plans in (2, 3)
    assert resumed.first_share == (None if resumed.forecast_plans == 2 else 0.1)
    with pytest.raises(UsageError, match="plans="):
        _phased(pool, 0.06, plans=3)


def test_the_matched_spending_expects_one_more_plan_when_the_first_plan_under_reads(
        pool_and_qrels: tuple[Pool, Qrels], monkeypatch: pytest.MonkeyPatch) -> None:
    """K is MATCHED_PLANS, or one more with a light first plan end, where the planner's
    pooled forecast exceeds the first plan's own projection by more than FORECAST_WITHIN
    (the plan from the pilot under-reads the variance, and shortfall plans follow), and the
    first plan is then sized for the later ends' boundary; decided at the first plan, never
    again; an explicit ``plans=`` wins (equal shares)."""
    from sampleval.judging import confident

    pool, qrels = pool_and_qrels
    oracle = qrels_oracle(qrels)

    def first_plan(judging: AnytimeJudging) -> AnytimeJudging:
        while judging.plans == 0:
            batch = judging.next_batch()
            assert batch is not None
            judging.observe(batch[0], oracle(*batch))
        return judging

    calls = []
    for factor, plans in ((1.0, confident.MATCHED_PLANS), (1.5, confident.MATCHED_PLANS + 1)):
        def forecast(self: AnytimeJudging, rng: np.random.Generator, coverage: float = 0.9,
                     replicates: int = 200, factor: float = factor
                     ) -> tuple[int | None, int | None, int | None]:
            calls.append(self.forecast_plans)  # sized at the provisional K
            assert self._projection is not None
            n = round(factor * (int(self.judged.sum()) + self._projection))
            return n, n, n

        monkeypatch.setattr(AnytimeJudging, "forecast", forecast)
        judging = first_plan(_phased(pool, 0.04, spend="matched"))
        assert judging.forecast_plans == plans
        assert judging.forecast_ratio == pytest.approx(factor, abs=0.01)
        light = plans > confident.MATCHED_PLANS
        assert judging.first_share == (confident.LIGHT_FIRST if light else None)
        judging._sizing = True  # the multiplier the first plan was sized with
        sized = float(judging._multiplier(np.ones(1), np.ones(1))[0])
        judging._sizing = False
        assert sized == pytest.approx(anytime.plan_end_multiplier(
            2 if light else 1, plans=plans, first=judging.first_share))
    assert calls == [confident.MATCHED_PLANS] * 2
    explicit = first_plan(_phased(pool, 0.04, spend="matched", plans=4))
    assert explicit.forecast_plans == 4 and explicit.first_share is None and len(calls) == 2


def test_the_anytime_rule_on_phases_plans_at_the_level_the_forecast_gives(
        pool_and_qrels: tuple[Pool, Qrels]) -> None:
    """``forecast`` re-plans with the projected variances centred on the topics' pooled
    level: the anytime rule on phases passes that centre on to the committed rule's
    planning variances (it dropped it, so its forecast was its own projection)."""
    from sampleval.judging.confident import SHRINK

    pool, qrels = pool_and_qrels
    oracle = qrels_oracle(qrels)
    judging = _phased(pool, 0.04)
    while not any(judging.phases) or judging._awaiting() or any(
            p[-1].open for p in judging.phases if p):
        batch = judging.next_batch()
        assert batch is not None
        judging.observe(batch[0], oracle(*batch))
    judging._refresh()
    present = judging.present[:, judging.runs]
    open_ = np.ones(len(judging.topics), dtype=bool)
    g = judging._factor_last()
    low, high = (judging._planning_variance(present, open_, g, SHRINK,
                                            np.full(len(judging.runs), c)) for c in (1e-6, 1e3))
    assert (high.sum(axis=0) > low.sum(axis=0)).all()
    assert np.array_equal(low, ConfidentJudging._planning_variance(
        judging, present, open_, g, SHRINK, np.full(len(judging.runs), 1e-6)))


def test_peeking_at_plan_ends_the_matched_boundary_covers_what_one_plan_end_covers() -> None:
    """The same campaigns with the strata's allocation fixed by the ranks (as the rule's
    stratified layouts are: ``within='design'``) and every topic re-estimated by every plan:
    stopping at the first plan end that misses, the matched boundary (K = 3, its first end
    light, as TREC-COVID's pilots choose) covers about what the ordinary interval covers at
    one plan end (0.943-0.977 against 0.940-0.953 on seeds 2-5, 300 campaigns each, SE
    about 0.013), far above the ordinary interval at every plan end (0.86-0.88): what limits
    it is each plan end's normal approximation, which it passes on with no slack, where the
    sequence's wider c = 2.638 at the same plan ends covers 0.96-0.98 (K = 2: 0.93-0.96)."""
    rng = np.random.default_rng(4)
    errors, variances = _plan_end_peeking(rng, trials=300, topics=5, pilot=20, plans=3,
                                          size=400, within="design")
    t = np.abs(errors) / np.sqrt(variances)
    c = np.array([anytime.plan_end_multiplier(k, plans=3, first=0.1) for k in range(1, 4)])
    matched = (t <= c[None, :]).all(axis=1).mean()
    one = (t[:, 0] <= 1.96).mean()
    assert abs(matched - one) <= 0.03 and matched >= 0.93
    assert (t <= 1.96).all(axis=1).mean() < matched - 0.05


def test_shortfall_plans_that_re_judge_some_topics_leave_every_boundary_short() -> None:
    """When the plans after the first re-judge only the 40% of topics with the largest
    estimated variance (as the rule's shortfall plans re-judge where the plan gains most),
    the topics kept are those whose variance was under-read, with the errors that go with
    it, and no plan-end argument holds: the estimate at a plan end is no longer fresh
    given the labels before the plan. Stopping at the first plan end that misses, the
    matched boundaries, the geometric one and even the sequence's c = 2.638 cover 0.86-0.93
    (seeds 2-5; the ordinary interval at one plan end 0.92-0.96). Recorded, not fixed:
    neither boundary on committed phases covers the shortfall plans by its argument
    (``docs/guide/anytime.md``)."""
    rng = np.random.default_rng(2)
    errors, variances = _plan_end_peeking(rng, trials=300, topics=5, pilot=20, plans=3,
                                          size=400, within="design", refresh=0.4)
    t = np.abs(errors) / np.sqrt(variances)
    for c in ([anytime.plan_end_multiplier(k, plans=3, first=0.1) for k in range(1, 4)],
              [anytime.plan_end_multiplier(k, plans=2) for k in range(1, 4)],
              [anytime.plan_end_multiplier(k) for k in range(1, 4)], [2.638] * 3):
        assert (t <= np.array(c)[None, :]).all(axis=1).mean() < 0.94
    assert (t[:, 0] <= 1.96).mean() >= 0.9  # the first plan end, every topic fresh


def test_with_plan_ends_it_stops_only_where_a_plan_ends(pool_and_qrels: tuple[Pool, Qrels]
                                                       ) -> None:
    """``spend='plan-ends'``: every look is at a plan end (every phase judged), none at the
    pilot's; judging stops at the first whose widest half-width meets the target, with the
    half-width z at the level spent on that plan end times the standard error (plus the
    bias terms), and no later than the rule on the sequence on the same seeds."""
    pool, qrels = pool_and_qrels
    for seed in range(2):
        judging = _phased(pool, 0.06, seed=seed, spend="plan-ends")
        status = _assert_stops_at_the_first_plan_end_meeting(judging, qrels, 0.06)
        sequence = _phased(pool, 0.06, seed=seed).run(qrels_oracle(qrels))
        assert status.judged <= sequence.judged
    with pytest.raises(UsageError, match="committed phases"):
        AnytimeJudging(METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(0)),
                       Target("P@10", 0.06), spend="plan-ends")
    assert assert_resumes(pool, qrels, lambda: _phased(pool, 0.06, seed=5, spend="plan-ends"),
                          30).spend == "plan-ends"


@pytest.fixture(scope="module")
def pool_and_qrels(sparse_collection: tuple[list[Run], Qrels, Pool]) -> tuple[Pool, Qrels]:
    _, qrels, pool = sparse_collection
    return pool, qrels


def _phased(pool: Pool, width: float, seed: int = 3, **options: object) -> AnytimeJudging:
    selector = METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(seed))
    return AnytimeJudging(selector, Target("P@10", width), start=10, batch=5,
                          committed=True, **options)


def test_on_phases_it_stops_at_the_first_look_where_every_half_width_meets_the_target(
        pool_and_qrels: tuple[Pool, Qrels]) -> None:
    """The rule on committed phases: looks only once the plan's phases have reached their
    strata (none at the pilot), and judging stops at the first look whose widest half-width
    is at most the target; the half-width there is the range boundary's at the variance of
    the mean of the phases' sample."""
    pool, qrels = pool_and_qrels
    judging = _phased(pool, 0.04)
    status = judging.run(qrels_oracle(qrels))
    assert status.reason == "target met"
    widths = [w for _, w in judging.looks]
    assert len(widths) >= 3
    assert all(w > 0.04 for w in widths[:-1]) and widths[-1] <= 0.04
    assert judging.looks[-1][0] == status.judged
    assert judging.looks[0][0] > int(judging.first.sum())  # not at the pilot
    assert any(len(p) > 1 for p in judging.phases)
    present = judging.present[:, judging.runs]
    total = np.where(present, judging.variance[:, judging.runs], 0.0).sum(axis=0)
    expected = anytime.half_width(total / present.sum(axis=0) ** 2, judging.tuned)
    np.testing.assert_allclose(judging.half_widths(), expected)
    # the estimates are the phases' sample's, as the committed rule's
    assert len(judging.sample().judged()) == status.judged
    assert judging.sample().meta["confident"]["design"] == "phase-committed"


def test_on_phases_it_may_stop_within_a_phase_and_the_committed_rule_may_not(
        pool_and_qrels: tuple[Pool, Qrels]) -> None:
    """With ordinary intervals (the naive rule on phases) and no looks within phases it
    would be the committed rule; looking within the phases, it stops at a look the
    committed rule passes by: no later, on the same seed, and at least once earlier."""
    pool, qrels = pool_and_qrels
    earlier = 0
    for seed in range(4):
        selector = METHODS["stratified"](pool, Budget(rate=1.0), np.random.default_rng(seed))
        committed = ConfidentJudging(selector, Target("P@10", 0.06), start=10, batch=5)
        whole = committed.run(qrels_oracle(qrels))
        naive = _phased(pool, 0.06, seed=seed, interval="fixed").run(qrels_oracle(qrels))
        assert naive.judged <= whole.judged
        earlier += naive.judged < whole.judged
    assert earlier >= 1


def test_on_phases_it_resumes_where_it_stopped(pool_and_qrels: tuple[Pool, Qrels]) -> None:
    pool, qrels = pool_and_qrels
    assert assert_resumes(pool, qrels, lambda: _phased(pool, 0.06, seed=5), 30).committed


def test_on_phases_it_refuses_what_phases_cannot_do(pool_and_qrels: tuple[Pool, Qrels]
                                                     ) -> None:
    pool, _ = pool_and_qrels
    with pytest.raises(UsageError, match="allocation"):
        _phased(pool, 0.05, allocation="own")
    with pytest.raises(UsageError, match="interim"):
        _phased(pool, 0.05, interim=0.5)
    active = METHODS["active"](pool, Budget(rate=1.0), np.random.default_rng(0), batch=5)
    with pytest.raises(UsageError, match="stratified"):
        AnytimeJudging(active, Target("P@10", 0.05), committed=True)


def test_the_learnt_projection_leaves_the_campaign_out() -> None:
    """Each campaign's forecast is its own plan's projection times the median over the
    other campaigns of judged / projection (ratios 2, 2, 2.2, 4: the forecasts are 1.1, 1.1,
    0.909 and 0.5 times the judgments used)."""
    import pandas as pd

    from studies.anytime import learnt_projections

    table = pd.DataFrame({"judged": [100.0, 200.0, 220.0, 400.0],
                          "projection": [50.0, 100.0, 100.0, 100.0]})
    out = learnt_projections(table)
    assert out["projection_n"] == 4
    assert out["projection_within_15%"] == pytest.approx(0.75)
    assert out["projection_median"] == pytest.approx((1.1 + 10 / 11) / 2)
    assert out["projection_within_lo"] < 0.75 < out["projection_within_hi"]


def test_stop_anytime_on_a_method_with_phases_is_the_rule_on_the_committed_plan(
        pool_and_qrels: tuple[Pool, Qrels]) -> None:
    """``stop=anytime`` (``make_judging``, the rule ``simulate``, ``sample`` and the file
    loop build) on ``stratified``, ``strata`` and ``uniform`` without predictions is the
    anytime rule on the committed rule's plan; on a method without committed phases it
    stays the adaptive rule. ``simulate``'s cell judges the same sample as the rule itself.
    Fails on main: there ``stop=anytime`` was the adaptive rule on every method."""
    from sampleval.judging.confident import make_judging
    from sampleval.simulation.grid import parse_method

    pool, qrels = pool_and_qrels
    for method in ("stratified", "strata", "uniform"):
        selector = METHODS[method](pool, Budget(rate=1.0), np.random.default_rng(0))
        rule = make_judging(selector, Target("P@10", 0.06), "anytime", start=10)
        assert isinstance(rule, AnytimeJudging) and rule.committed, method
    active = METHODS["active"](pool, Budget(rate=1.0), np.random.default_rng(0), batch=5)
    assert not make_judging(active, Target("P@10", 0.06), "anytime").committed
    spec = parse_method("stratified:start=10;stop=anytime;target=P@10:0.06")
    made = spec.judge(spec.make(pool, Budget(rate=1.0), np.random.default_rng(4)),
                      qrels_oracle(qrels))
    direct = _phased(pool, 0.06, seed=4)
    direct.run(qrels_oracle(qrels))
    assert made.meta["confident"]["design"] == "phase-committed"
    got, want = made.judged(), direct.sample().judged()
    assert len(got) == len(want)
    assert set(zip(got["query_id"], got["doc_id"], strict=True)) == set(
        zip(want["query_id"], want["doc_id"], strict=True))


def test_the_file_loop_with_stop_anytime_judges_the_committed_plan(tmp_path: Path) -> None:
    """``sample stratified --target --stop anytime`` without --qrels lists the pilot, then
    each plan's phases (strata ``PHASE:STRATUM``); ``judge`` with the labels of the listed
    documents (saved and resumed at every step) ends with the phases' sample, judging
    every document the simulation (``--qrels``, same seed) judged with the same labels
    and at most the rest of the plan the simulation stopped in (the loop looks when a
    step's labels are in, the simulation after every batch). Fails on main: there the
    loop listed the method's own layout for each topic's cap."""

    from test_confident import _write_collection

    from sampleval import cli
    from sampleval.core.sample import Sample
    data, names = _write_collection(tmp_path)
    common = ["stratified", *names, "-r", "1", "-s", "3", "--target", "P@10:0.08",
              "--start", "5", "--stop", "anytime"]
    cli.run(["sample", *common, "--qrels", str(tmp_path / "qrels.txt"), "-o",
             str(tmp_path / "simulated")])
    out = tmp_path / "judged"
    cli.run(["sample", *common, "-o", str(out)])
    truth = data.qrels.set_index(["query_id", "doc_id"])["relevance"]
    steps, strata = 0, set()
    for listed in judged_steps(out, truth, tmp_path / "labels.txt"):
        assert len(listed)
        strata |= {s.split(":")[0] for s in listed["stratum"]}
        steps += 1
    assert steps >= 2 and {"0", "1"} <= strata  # the pilot, then the plan's phases
    got, simulated = Sample.load(out), Sample.load(tmp_path / "simulated")
    assert got.meta["confident"]["design"] == simulated.meta["confident"]["design"] == (
        "phase-committed")
    judged, sim = got.judged(), simulated.judged()
    both = sim.merge(judged, on=["query_id", "doc_id"], how="left", suffixes=("", "_file"))
    assert both["relevance_file"].notna().all()
    assert (both["relevance"] == both["relevance_file"]).all()
    assert len(judged) >= len(sim)
