"""The variance model pooled over topics that section 16 of docs/research/calibration.md
screens (``studies.interval_parts.model_variance``), against its closed form on constructed
rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from studies.interval_parts import FIT_MINIMUM, model_variance


def _rows(ks: list[list[int]]) -> pd.DataFrame:
    """One trial; per run (the outer list) its topics' relevant judged k, no census."""
    return pd.DataFrame([{"trial": 0, "run": f"r{r}", "topic": t, "k": k, "census": False}
                         for r, topics in enumerate(ks) for t, k in enumerate(topics)])


def test_the_model_is_fitted_on_the_run_s_own_topics_with_two_relevant_judged() -> None:
    """A run with FIT_MINIMUM topics at k >= 2 has sigma^2 = sum V / sum scale over them
    (here V = 3 scale there, noise on the k <= 1 rows that must not enter the fit), and each
    row gets sigma^2 times its own scale."""
    rows = _rows([[0, 1] + [2] * FIT_MINIMUM])
    scale = np.linspace(0.5, 2.0, len(rows))
    design = np.where(rows["k"] >= 2, 3.0 * scale, 100.0)
    assert np.allclose(model_variance(rows, scale, design), 3.0 * scale)


def test_a_run_with_too_few_topics_to_fit_takes_the_sample_s_fit() -> None:
    """Run r1 has one topic with k >= 2 (fewer than FIT_MINIMUM): its rows take the ratio
    over every run's k >= 2 rows of the trial; run r0 keeps its own."""
    rows = _rows([[0] + [3] * FIT_MINIMUM, [0, 1, 2]])
    scale = np.ones(len(rows))
    own = np.where(rows["run"] == "r0", 2.0, 8.0)
    design = np.where(rows["k"] >= 2, own, 0.0)
    got = model_variance(rows, scale, design)
    pooled = (2.0 * FIT_MINIMUM + 8.0) / (FIT_MINIMUM + 1)
    assert np.allclose(got[rows["run"] == "r0"], 2.0)
    assert np.allclose(got[rows["run"] == "r1"], pooled)


def test_no_topic_to_fit_on_leaves_no_model() -> None:
    """A trial whose samples judged at most one relevant document on every topic has no
    model (NaN), so the rule keeps its floor there."""
    rows = _rows([[0, 1, 1], [1, 0, 0]])
    assert np.isnan(model_variance(rows, np.ones(len(rows)), np.ones(len(rows)))).all()
