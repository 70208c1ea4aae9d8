"""What a label counts for has one home, :mod:`sampleval.core.relevance`: the exact measures
and the estimators read labels through the same functions."""

from __future__ import annotations

import numpy as np

from sampleval.core import relevance as core
from sampleval.estimation.engine import views as estimators_base
from sampleval.measures import base as measures_base
from sampleval.measures import exact


def test_one_home() -> None:
    assert estimators_base.relevance is core.relevance
    assert estimators_base.gain is core.gain
    assert measures_base.relevance is exact.relevance is core.judged_relevance


def test_values() -> None:
    labels = np.array([np.nan, -1.0, 0.0, 0.5, 1.0, 1.25, 2.0, 3.0])
    np.testing.assert_array_equal(core.relevance(labels, 2.0),
                                  [np.nan, 0, 0, 0, 0, 0.25, 1, 1])
    np.testing.assert_array_equal(core.judged_relevance(labels, 1.0),
                                  [0, 0, 0, 0.5, 1, 1, 1, 1])
    np.testing.assert_array_equal(core.gain(labels), [np.nan, 0, 0, 0.5, 1, 1.25, 2, 3])
    assert core.relevance([1, 0], 1).dtype == np.float64  # lists and integers too
