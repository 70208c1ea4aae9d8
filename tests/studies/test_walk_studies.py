"""The studies behind issue 28's walk: studies.rank_intervals and studies.numrelret_defaults
(their logic on small inputs; the measured tables are docs/research/)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from studies import numrelret_defaults, rank_intervals


def test_the_rank_study_covers_a_clear_ranking_and_ties_shorten_nothing() -> None:
    """Runs far apart on every topic: every candidate covers, and Holm's intervals are
    never longer than Bonferroni's; under the null design every truth ties (coverage = no
    claimed order)."""
    rng = np.random.default_rng(3)
    values = pd.DataFrame(np.linspace(0.9, 0.1, 6)[None, :] + rng.normal(0, 0.02, (40, 6)))
    got = rank_intervals.simulate(values, 20, 6, 10, np.random.default_rng(0)).set_index(
        "candidate")
    assert list(got.index) == list(rank_intervals.CANDIDATES)
    assert (got["coverage"] == 1.0).all()
    assert got.loc["holm", "length"] <= got.loc["bonferroni", "length"]
    assert got.loc["holm", "length"] < 2.0  # nearly every run pinned to its rank
    tied = rank_intervals.simulate(values, 20, 6, 10, np.random.default_rng(0), pick="null")
    assert (tied["coverage"] >= 0.9).all() and (tied["length"] > 5).all()


def test_numrelret_candidates_by_design() -> None:
    assert numrelret_defaults.estimators("poisson") == ["NumRelRet~ht"]
    assert numrelret_defaults.estimators("inclusion") == ["NumRelRet~ht"]
    assert sorted(numrelret_defaults.estimators("with-replacement")) == ["NumRelRet~hh",
                                                                         "NumRelRet~ht"]
    assert numrelret_defaults.estimators("importance") == ["NumRelRet~hh"]
