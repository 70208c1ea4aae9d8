"""AP~ht's ``variance=collapsed`` (:mod:`sampleval.estimation.engine.collapsed`): the
collapsed-strata weights against the variance computed by hand on constructed strata, and
its wiring into ``~ht`` (the estimate unchanged, only the variance)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import golden_collection, golden_sample
from sampleval.core.inclusion import stratified_inclusion
from sampleval.errors import UsageError
from sampleval.estimation.engine.collapsed import collapsed_delta, collapsed_groups
from sampleval.estimation.estimates import estimate


def test_neighbouring_strata_are_paired_and_the_odd_one_joins_the_last_pair() -> None:
    """Census and unsampled strata join no group; the sampled ones pair in code order."""
    sizes = np.array([3, 10, 20, 8, 5, 9, 4])
    n_sampled = np.array([3, 2, 2, 0, 2, 2, 1])  # 0: census; 3: not sampled
    np.testing.assert_array_equal(collapsed_groups(sizes, n_sampled),
                                  [-1, 0, 0, -1, 1, 1, 1])
    np.testing.assert_array_equal(collapsed_groups(np.array([10]), np.array([2])), [0])


def test_the_collapsed_variance_of_two_strata_of_two_draws_by_hand() -> None:
    """Strata 1 (N=10) and 2 (N=20), two draws each, one group; stratum 0 a census. The units
    with z != 0: one in stratum 0 (x = 7), one in stratum 1 (x = z/pi = 1/0.2 = 5) and one in
    stratum 2 (x = 1/0.1 = 10); the group's four units are x = (5, 0, 10, 0), mean 3.75, with
    factors 1 - f = 0.8, 0.8, 0.9, 0.9:
    4/3 (0.8 (1.25^2 + 3.75^2) + 0.9 (6.25^2 + 3.75^2)) = 4/3 x 60.3125 = 965/12.
    The stratified estimator, each stratum alone: 0.8 x 2 x 12.5 + 0.9 x 2 x 50 = 110."""
    sizes, n_sampled = np.array([3, 10, 20]), np.array([3, 2, 2])
    stratum, x = np.array([0, 1, 2]), np.array([7.0, 5.0, 10.0])
    d = collapsed_delta(stratum, sizes, n_sampled)
    assert x @ d @ x == pytest.approx(965 / 12, rel=1e-12)
    pi, joint = stratified_inclusion(stratum, sizes, n_sampled)
    assert x @ (1.0 - np.outer(pi, pi) / joint) @ x == pytest.approx(110.0, rel=1e-12)
    # stratum 2's draws agree (both z = 0): alone it adds nothing, in the group its units
    # count against the group's mean
    only = np.array([1])
    assert collapsed_delta(only, sizes, n_sampled)[0, 0] * 25 == pytest.approx(
        4 / 3 * (0.8 * (3.75**2 + 1.25**2) + 0.9 * 2 * 1.25**2), rel=1e-12)


def test_a_stratum_alone_keeps_the_designs_own_weights() -> None:
    """A group of one stratum is the stratified SRS estimator: D = 1 - pi_i pi_j / pi_ij."""
    sizes, n_sampled = np.array([4, 12]), np.array([4, 3])
    stratum = np.array([0, 1, 1, 1])
    pi, joint = stratified_inclusion(stratum, sizes, n_sampled)
    np.testing.assert_allclose(collapsed_delta(stratum, sizes, n_sampled),
                               np.where(stratum[:, None] == 1, 1 - np.outer(pi, pi) / joint,
                                        0.0), rtol=1e-12, atol=1e-15)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_collapsed_changes_the_variance_of_ap_ht_and_not_its_estimate() -> None:
    """On the golden stratified sample: the same estimates as the default, other variances;
    a design without strata is refused in one line."""
    runs = golden_collection().runs
    sample = golden_sample("stratified")
    default = estimate(sample, runs, ["AP~ht"], depth=100)
    collapsed = estimate(sample, runs, ["AP~ht(variance=collapsed)"], depth=100)
    np.testing.assert_array_equal(default["value"], collapsed["value"])
    half, half_default = collapsed["hi"] - collapsed["lo"], default["hi"] - default["lo"]
    assert np.isfinite(half).all() and (half >= 0).all()
    assert not np.allclose(half, half_default)
    with pytest.raises(UsageError, match="variance=collapsed needs a stratified sample"):
        estimate(golden_sample("poisson"), runs, ["AP~ht(variance=collapsed)"], depth=100)
