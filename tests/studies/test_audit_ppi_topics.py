"""The per-topic diagnosis of AP~ppi's standard errors (studies/audit_ppi_topics.py, issue 31)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studies.audit_ppi_topics import decompose


def test_decompose_tells_topics_that_move_together() -> None:
    """Two topics whose errors for the run that counts (run 0; run 1 is the favoured one)
    are +1 in trial 0 and -1 in trial 1, each estimated with variance 0.5 (run 2, undefined,
    is left out): the mean's
    variance (1) is twice the sum of the topics' over T^2 (0.5), the topics' variances twice
    their estimates; the standard error 0.5 covers neither trial; one topic-sample of four
    holds a disagreement."""
    rows = pd.DataFrame([
        {"trial": trial, "topic": topic, "n_dis": int(trial == 0 and topic == "A"),
         "frame_dis": 1 if topic == "A" else 0,
         "err": np.array([sign, 9.0, np.nan]), "var": np.array([0.5, 0.0, 0.1])}
        for trial, sign in ((0, 1.0), (1, -1.0)) for topic in ("A", "B")])
    got = decompose(rows, favoured=1)
    assert got["sd_over_trials"] == pytest.approx(1.0)
    assert got["estimated_se"] == pytest.approx(0.5)
    assert got["coverage"] == 0.0 and got["width"] == pytest.approx(0.5)
    assert got["mean_over_topic_variances"] == pytest.approx(2.0)
    assert got["topic_over_estimated_variances"] == pytest.approx(2.0)
    assert got["share_holding_a_disagreement"] == 0.25
    assert got["sq_error_with"] == 1.0 and got["estimated_var_with"] == 0.5
    assert got["frame_disagreements_per_topic"] == 0.5
