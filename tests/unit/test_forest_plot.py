"""The forest plot's intervals are adjusted for multiplicity as its markers (the adjusted
p-values) are: with ``ci`` = 1 - alpha, an interval excludes 0 exactly when the pair is
drawn significant (before: unadjusted intervals beside Holm-adjusted markers, so a pair
could be drawn not significant with an interval clear of 0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.estimation.compare import adjusted_intervals, forest_plot, paired_differences


def scores(seed: int, runs: int = 6, topics: int = 25) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    effects = np.linspace(0.0, 0.08, runs)
    values = 0.3 + rng.normal(0, 0.1, (topics, 1)) + effects + rng.normal(0, 0.06,
                                                                          (topics, runs))
    return pd.DataFrame(values, columns=[f"r{i}" for i in range(runs)])


@pytest.mark.parametrize("correction", ["holm", "bh", "none"])
def test_intervals_exclude_zero_exactly_for_significant_pairs(correction: str) -> None:
    disagreed = 0
    for seed in range(20):
        table = paired_differences(scores(seed), "AP", correction=correction, alpha=0.05,
                                   ci=0.95)
        lo, hi = adjusted_intervals(table, 0.95)
        clear = (lo > 0) | (hi < 0)
        np.testing.assert_array_equal(clear, table["significant"].to_numpy())
        assert (lo <= table["lo"].to_numpy() + 1e-12).all()
        assert (hi >= table["hi"].to_numpy() - 1e-12).all()
        plain = (table["lo"] > 0) | (table["hi"] < 0)
        disagreed += int((plain != table["significant"]).sum())
        if correction == "none":
            np.testing.assert_allclose(lo, table["lo"], rtol=1e-12)
            np.testing.assert_allclose(hi, table["hi"], rtol=1e-12)
    if correction != "none":
        assert disagreed > 0  # the unadjusted intervals disagree with the markers somewhere


def test_the_plot_draws_the_adjusted_intervals(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    table = paired_differences(scores(3), "AP", correction="holm")
    plain = (table["lo"] > 0) | (table["hi"] < 0)
    assert (plain != table["significant"]).sum() == 6  # what the plot drew before
    drawn: dict[str, np.ndarray] = {}
    errorbar = Axes.errorbar

    def spy(self, x, y, *args, xerr=None, **kwargs):  # type: ignore[no-untyped-def]
        drawn["lo"], drawn["hi"] = np.asarray(x) - xerr[0], np.asarray(x) + xerr[1]
        return errorbar(self, x, y, *args, xerr=xerr, **kwargs)

    monkeypatch.setattr(Axes, "errorbar", spy)
    forest_plot(table, str(tmp_path / "forest.png"))
    lo, hi = adjusted_intervals(table, 0.95)
    np.testing.assert_allclose(drawn["lo"], lo)
    np.testing.assert_allclose(drawn["hi"], hi)
    clear = (drawn["lo"] > 0) | (drawn["hi"] < 0)
    np.testing.assert_array_equal(clear, table["significant"].to_numpy())
