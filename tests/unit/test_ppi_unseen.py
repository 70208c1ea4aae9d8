"""AP~ppi's ``unseen`` option (:mod:`sampleval.estimation.families.ppi_unseen`) by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.engine.units import TopicData, topic_data
from sampleval.estimation.engine.views import topic_views
from sampleval.estimation.families.ppi_unseen import (
    disagreement_rates,
    r_hat,
    takes_unseen,
    unseen_variance,
)
from sampleval.estimation.spec import parse_estimate


def _hand(labels: list[float], predicted: list[float]) -> tuple[list[TopicData], np.ndarray]:
    """One topic: stratum A = {d1, d2} judged in full, stratum B = {d3..d6} with d3, d4 judged;
    ``labels`` of d1..d4, ``predicted`` of d1..d6. Run A = d1 d3 d5 d2, run B = d6 d4 d1."""
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["d1", "d2", "d3", "d4", "d5", "d6"],
                          "relevance": [*labels, -1.0, -1.0],
                          "stratum": ["A", "A", "B", "B", "B", "B"]})
    sample = Sample.from_sample_qrels(frame)
    runs = [Run.from_frame(pd.DataFrame({"query_id": "1", "doc_id": docs,
                                         "score": np.arange(len(docs), 0, -1.0)}), name)
            for name, docs in {"A": ["d1", "d3", "d5", "d2"], "B": ["d6", "d4", "d1"]}.items()]
    predictions = Predictions.from_frame(pd.DataFrame({
        "query_id": "1", "doc_id": ["d1", "d2", "d3", "d4", "d5", "d6"],
        "prediction": predicted}))
    views = topic_views(Pool.from_runs(runs), sample, predictions)
    topics = [topic_data(view, sample, "ht") for view in views]
    return topics, np.ones((1, 2, 2))


def test_unseen_variance_by_hand() -> None:
    """Labels and predictions agree on every judged document (d1 1, d2 0, d3 0, d4 1;
    predicted d5 1, d6 0): stratum A is a census, stratum B (N 4, n 2) holds no
    disagreement. p_1 = p_0 = (0 + 1/2)/(3 + 1) (three frame documents predicted each way);
    V_B = 4 (1 - 2/4)/2 (2 p_1 (1 - p_1) + 2 p_0 (1 - p_0)) = 0.4375; R-hat = 1 + 2 = 3 (d4
    weighs 2); each run's share (Q/3)^2 V_B, a pair's ((Q_a - Q_b)/3)^2 V_B; with lam_R = 0
    V_B = 4 (1 - 2/4)/2 2 p_0 (1 - p_0) = 0.21875. A disagreement
    judged in B (d3 labelled 1) leaves no stratum open: 0."""
    topics, lam = _hand([1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(disagreement_rates(topics[0], 1.0), [0.125, 0.125])
    np.testing.assert_allclose(r_hat(topics[0], lam[0], 1.0), [3.0, 3.0])
    value = np.array([[0.6, 0.3]])
    np.testing.assert_allclose(unseen_variance(topics, 1.0, value, lam),
                               [[(0.6 / 3) ** 2 * 0.4375, (0.3 / 3) ** 2 * 0.4375]])
    np.testing.assert_allclose(unseen_variance(topics, 1.0, value, lam, np.array([[0, 1]])),
                               [[(0.3 / 3) ** 2 * 0.4375]])
    # lam_R = 0: a predicted-relevant document's residual is 0, only N_B0's part is left
    np.testing.assert_allclose(unseen_variance(topics, 1.0, value, np.zeros((1, 2, 2))),
                               [[(0.6 / 3) ** 2 * 0.21875, (0.3 / 3) ** 2 * 0.21875]])
    seen, lam = _hand([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(unseen_variance(seen, 1.0, value, lam), 0.0)
    assert takes_unseen(parse_estimate("AP~ppi(unseen=prior)"))
    assert not takes_unseen(parse_estimate("AP~ppi"))
