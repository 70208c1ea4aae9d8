"""Simultaneous rank intervals from per-topic values (sampleval.estimation.ranks): Holm's
step-down over the one-sided paired t-tests, the default since issue 28."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sampleval.errors import UsageError
from sampleval.estimation.ranks import covers_ranks, paired_t, rank_intervals


def _few_topics() -> pd.DataFrame:
    """12 runs on 19 topics, skewed and sparse as a small campaign's AP estimates: the
    studentised bootstrap's max-t quantile (6.2) is above Bonferroni's t for the 132
    one-sided tests (4.05), and the best pair's paired t is 5.4."""
    rng = np.random.default_rng(5)
    means = np.linspace(0.5, 0.1, 12)
    values = np.clip(means[None, :] * rng.lognormal(0, 1.0, (19, 1))
                     * rng.lognormal(0, 0.3, (19, 12)), 0, 1)
    values[rng.random((19, 12)) < 0.15] = 0
    return pd.DataFrame(values, columns=[f"run{i:02d}" for i in range(1, 13)])


def test_a_clear_pair_is_ordered_with_few_topics() -> None:
    """The defect of the walk (issue 28): with 19 topics every run got rank 1-12 though
    one pair's paired t was 5.4. Fails on main (max-t bootstrap: every interval 1-12)."""
    values = _few_topics()
    a, b = np.triu_indices(12, k=1)
    _, t = paired_t(values.to_numpy(), a, b)
    best = int(np.argmax(np.abs(t)))
    assert abs(t[best]) == pytest.approx(5.4, abs=0.05)
    got = rank_intervals(values)
    winner, loser = (a[best], b[best]) if t[best] > 0 else (b[best], a[best])
    # the loser's interval starts below the winner's rank: at least one run is above it
    assert got["rank_lo"].iloc[loser] >= 2
    assert got["rank_hi"].iloc[winner] <= 11
    assert (got["rank_hi"] - got["rank_lo"] + 1).mean() < 12


def test_holm_orders_exactly_the_pairs_holms_procedure_rejects() -> None:
    """Against Holm's procedure written out: the R(R-1) one-sided p-values sorted, the j-th
    smallest rejected while p_(j) < alpha / (m - j + 1)."""
    values = _few_topics().to_numpy()
    n_topics, n_runs = values.shape
    hypotheses = [(i, j) for i in range(n_runs) for j in range(n_runs) if i != j]
    p = []
    for i, j in hypotheses:
        d = values[:, i] - values[:, j]
        t = d.mean() / (d.std(ddof=1) / np.sqrt(n_topics))
        p.append(stats.t.sf(t, n_topics - 1))
    order = np.argsort(p, kind="stable")
    above = np.zeros((n_runs, n_runs), dtype=bool)
    m = len(p)
    for step, k in enumerate(order):
        if not p[k] < 0.05 / (m - step):
            break
        above[hypotheses[k]] = True
    got = rank_intervals(pd.DataFrame(values))
    assert got["rank_lo"].tolist() == (1 + above.sum(axis=0)).tolist()
    assert got["rank_hi"].tolist() == (n_runs - above.sum(axis=1)).tolist()
    assert above.sum() > 0


def test_holm_intervals_are_within_the_bootstraps_here_and_never_wider_than_bonferroni(
        ) -> None:
    values = _few_topics()
    holm = rank_intervals(values)
    boot = rank_intervals(values, method="max-t")
    assert ((holm["rank_lo"] >= boot["rank_lo"]) & (holm["rank_hi"] <= boot["rank_hi"])).all()
    a, b = np.triu_indices(12, k=1)
    _, t = paired_t(values.to_numpy(), a, b)
    crit = stats.t.ppf(1 - 0.05 / 132, 18)
    bonferroni_ordered = int((np.abs(t) > crit).sum())
    ordered = int((holm["rank_lo"] - 1).sum())  # each ordered pair raises one rank_lo
    assert ordered >= bonferroni_ordered


def test_holm_rank_intervals_are_simultaneous_by_monte_carlo() -> None:
    """Normal per-topic values with a shared topic effect, 10 topics: every true rank
    inside together in >= 95% - 2 Monte Carlo s.e. of 300 seeded trials (Holm controls the
    family-wise error of the directional claims exactly under normality), and informative."""
    rng = np.random.default_rng(28)
    means = np.array([0.40, 0.39, 0.33, 0.28, 0.28, 0.20, 0.10, 0.05])
    covered, lengths = 0, []
    for _ in range(300):
        values = (means[None, :] + rng.normal(0, 0.15, (10, 1))
                  + rng.normal(0, 0.04, (10, len(means))))
        got = rank_intervals(pd.DataFrame(values))
        lo, hi = got["rank_lo"].to_numpy(), got["rank_hi"].to_numpy()
        covered += covers_ranks(lo, hi, means)
        lengths.append(float((hi - lo + 1).mean()))
    assert covered / 300 >= 0.95 - 2 * np.sqrt(0.05 * 0.95 / 300)
    assert np.mean(lengths) < len(means) - 2


def test_unknown_rank_method_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown rank interval method 'tukey'"):
        rank_intervals(_few_topics(), method="tukey")
