"""What every estimator shares: a topic's pool aligned with its sample (:class:`TopicView`),
and the rank weights of the measures (the label transforms, ``relevance`` and ``gain``, are
:mod:`sampleval.core.relevance`'s, imported here for the modules that import them from here).

An estimator family is a function ``(views, measure, level, ci) -> DataFrame`` where ``views``
are :class:`TopicView` (one per topic: the runs' rankings and the sample's frame, aligned);
the rows and intervals are :mod:`sampleval.estimation.result`'s (``MEAN_TOPIC``, ``COLUMNS``,
``z_value`` and ``summarise`` are re-exported here for the modules that import them from here).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from sampleval.core.pool import Pool, TopicPool
from sampleval.core.predictions import Predictions
from sampleval.core.relevance import gain, relevance
from sampleval.core.sample import Sample, TopicSample
from sampleval.errors import UsageError
from sampleval.estimation.result import (
    COLUMNS,
    FEW_OPTION,
    MEAN_TOPIC,
    few_relevant_variance,
    is_census,
    judged_relevant,
    summarise,
    z_value,
)

__all__ = ["COLUMNS", "FEW_OPTION", "MEAN_TOPIC", "UNBIASED_AP", "TopicView", "few_relevant_variance",
           "gain", "is_census", "judged_relevant", "rank_coefficients", "relevance", "summarise",
           "topic_draws", "topic_views", "z_value"]

UNBIASED_AP = 2
"""The fewest relevant documents a topic's sample must hold for its AP estimate not to run
low (``estimate`` names the topics with fewer; docs/research/calibration.md)."""


@dataclass(frozen=True)
class TopicView:
    """One topic: the runs' rankings (``pool``) and the sample's frame (``sample``), aligned.

    ``frame_at_rank``: ``[n_runs, width]`` index into the frame of the document at each rank
    (-1: outside the frame, or past the end of the run). ``predictions``: the predicted value
    of each frame document (0 where none is given; None: no predictions were given), read by
    the prediction-powered family (:mod:`.ppi`).
    """

    pool: TopicPool
    sample: TopicSample
    frame_at_rank: np.ndarray
    predictions: np.ndarray | None = None

    @property
    def n_runs(self) -> int:
        return self.pool.ranking.shape[0]

    def labels_at_rank(self) -> np.ndarray:
        """``[n_runs, width]`` label at each rank (NaN: unjudged, outside the frame, or pad)."""
        padded = np.append(self.sample.labels, np.nan)
        return padded[self.frame_at_rank]

    def rank_of(self, frame_index: np.ndarray) -> np.ndarray:
        """``[n_runs, len(frame_index)]`` 1-based rank of each frame document in each run
        (0 where the run did not retrieve it)."""
        ranks = np.zeros((self.n_runs, len(self.sample.docnos)), dtype=np.int64)
        runs, cols = np.nonzero(self.frame_at_rank >= 0)
        ranks[runs, self.frame_at_rank[runs, cols]] = cols + 1
        return ranks[:, frame_index]


def topic_views(pool: Pool, sample: Sample,
                predictions: Predictions | None = None) -> list[TopicView]:
    """Align every pool topic that the sample also has (in the pool's topic order), and the
    ``predictions`` (if any) with each topic's frame."""
    views = []
    sample_topics = set(sample.topics)
    vocabulary = _vocabulary(pool)  # sorted (strcmp order): found by binary search
    for tp in pool:
        if tp.topic not in sample_topics:
            continue
        ts = sample.topic(tp.topic)
        ids = np.searchsorted(vocabulary, ts.docnos)  # frame doc -> pool vocabulary id
        pos = np.searchsorted(tp.doc_ids, ids)
        hit = pos < tp.size
        hit[hit] = (tp.doc_ids[pos[hit]] == ids[hit]) & (vocabulary[ids[hit]] == ts.docnos[hit])
        # one slot per pool doc, and a last one that the ranking's PAD (-1) indexes
        frame_of_pool_doc = np.full(tp.size + 1, -1, dtype=np.int64)
        frame_of_pool_doc[pos[hit]] = np.flatnonzero(hit)
        predicted = None if predictions is None else predictions.for_topic(tp.topic, ts.docnos)
        views.append(TopicView(tp, ts, frame_of_pool_doc[tp.ranking], predicted))
    return views


_VOCABULARIES: weakref.WeakKeyDictionary[Pool, np.ndarray] = weakref.WeakKeyDictionary()


def _vocabulary(pool: Pool) -> np.ndarray:
    """The pool's docnos as a numpy string array, made once per pool (a simulation aligns
    many samples with one pool)."""
    vocabulary = _VOCABULARIES.get(pool)
    if vocabulary is None:
        vocabulary = _VOCABULARIES[pool] = pool.docnos.astype(str)
    return vocabulary


def rank_coefficients(base: str, ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """The coefficient of z_d = coefficient * value(label) at 1-based ``ranks`` (0: not
    retrieved) of a measure whose estimand is a total: its declared rank weights
    (:func:`sampleval.measures.exact.weight_of`; 1 for NumRel, 1{r <= k}/k for P@k,
    1/log2(r + 1) (r <= k) for DCG@k)."""
    from sampleval.measures.exact import weight_of

    return weight_of(base)(ranks, cutoff)


def topic_draws(sample: Sample, view: TopicView) -> tuple[np.ndarray, np.ndarray]:
    """A topic's draws, in order: each one's frame index and draw probability p_k(d_k);
    UsageError when a draw is outside the frame, unjudged, or has no positive probability."""
    topic = view.pool.topic
    rows = sample.rows("draws", topic)
    if rows.empty:
        raise UsageError(f"topic {topic} has no draws")
    x = view.sample.locate(rows["doc_id"].to_numpy(dtype=object).astype(str))
    if (x < 0).any():
        raise UsageError(f"topic {topic}: a drawn document is not in the frame")
    if np.isnan(view.sample.labels[x]).any():
        raise UsageError(f"topic {topic}: a drawn document has no judgment")
    probs = rows["probability"].to_numpy(dtype=np.float64)
    if not (probs > 0).all():
        raise UsageError(f"topic {topic}: a draw has no positive probability")
    return x, probs
