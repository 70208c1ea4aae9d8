"""trec_order's packed-key sort equals the plain three-key lexsort, in both precisions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampleval.core.run import trec_order

BASES = [0.1, 0.2, 1 / 3, 5.0, -0.0, 0.0]
NUDGES = [0.0, 1e-12, 2e-12, -1e-12]  # below float32 precision: ties there, not in float64


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_packed_sort_equals_lexsort(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 200))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, 5, n)
    doc = rng.permutation(10 * n)[:n]
    score = rng.choice(BASES, n) + rng.choice(NUDGES, n)
    for score_type in (np.float32, np.float64):
        expected = np.lexsort((-doc, -score.astype(score_type), topic))
        assert np.array_equal(trec_order(topic, score, doc, score_type), expected)


@pytest.mark.parametrize("score_type", [np.float32, np.float64])
def test_negative_zero_ties_with_zero(score_type: type[np.floating]) -> None:
    order = trec_order(np.zeros(2, int), np.array([-0.0, 0.0]), np.array([0, 1]), score_type)
    assert order.tolist() == [1, 0]  # a tie, so docno descending
