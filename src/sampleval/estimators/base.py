"""What every estimator shares: a topic's pool aligned with its sample, and result tables.

An estimator family is a function ``(views, measure, level, ci) -> DataFrame`` where ``views``
are :class:`TopicView` (one per topic: the runs' rankings and the sample's frame, aligned),
and the DataFrame has the columns ``run, query_id, measure, value, lo, hi`` (``lo``/``hi``:
the confidence interval at level ``ci``, NaN where none applies), the mean over topics as
``query_id == "all"``. :func:`summarise` builds such a table from per-topic estimates and
variances, with normal intervals; families with other intervals build their own rows.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sampleval.aggregation import aggregate_of, over_topics, topic_sums
from sampleval.core.pool import Pool, TopicPool
from sampleval.core.predictions import Predictions
from sampleval.core.sample import Sample, TopicSample
from sampleval.errors import UsageError
from sampleval.estimators.names import parse_estimate
from sampleval.params import Param

MEAN_TOPIC = "all"
COLUMNS = ["run", "query_id", "measure", "value", "lo", "hi"]
FEW_OPTION = Param("few", str, "scaled", "AP's variance on a topic whose sample holds at most "
                   "one relevant document, where the jackknife has nothing to measure the "
                   "spread with: bound (at least 1/4, the largest variance of a measure in "
                   "[0, 1]: the topic's interval spans [0, 1]), scaled (at least (1 - f)/4, f "
                   "the share of the topic's frame judged: 0 at a census) or none (as computed)",
                   choices=("bound", "scaled", "none"))


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


def relevance(labels: np.ndarray, level: float) -> np.ndarray:
    """Binary relevance of (possibly fractional) labels: clip(label - level + 1, 0, 1).

    On integer grades this is ``label >= level``; for a label that is the mean of several
    assessors' binary votes (level 1) it is the share of votes for "relevant", so the
    design-based estimators stay unbiased for the expected label (Schnabel et al., ICTIR
    2016, sec. 7). NaN stays NaN.
    """
    return np.clip(np.asarray(labels, dtype=np.float64) - level + 1.0, 0.0, 1.0)


def gain(labels: np.ndarray) -> np.ndarray:
    """DCG's gain: the grade itself, negative grades gaining nothing (trec_eval)."""
    return np.maximum(np.asarray(labels, dtype=np.float64), 0.0)


def rank_coefficients(base: str, ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """The coefficient of z_d = coefficient * value(label) at 1-based ``ranks`` (0: not
    retrieved): 1 for NumRel, 1{r <= k}/k for P@k, 1/log2(r + 1) (r <= k) for DCG@k."""
    if base == "NumRel":
        if cutoff is not None:
            raise UsageError("NumRel takes no cutoff")
        return np.ones(ranks.shape)
    kept = (ranks > 0) & (ranks <= (cutoff if cutoff is not None else np.inf))
    if base == "P":
        if cutoff is None:
            raise UsageError("P needs a cutoff, e.g. P@10")
        return kept / cutoff
    return np.divide(1.0, np.log2(ranks + 1.0), out=np.zeros(ranks.shape), where=kept)


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


def few_relevant_bound(variance: np.ndarray, topic: TopicSample, relevant: int,
                       few: str) -> np.ndarray:
    """``variance`` raised to a floor (:data:`FEW_OPTION`) when the topic's sample holds
    ``relevant`` <= 1 relevant documents and is not a census (every judged document's
    pi_i = 1) (issue 9): at least 1/4 under ``few="bound"``, at least (1 - f)/4 under
    ``"scaled"``, f the share of the topic's frame judged. A ratio whose denominator rests on
    one relevant document or none gives its delete-one jackknife (and its linearisation) no
    spread to measure: on TREC-COVID round 5 at uniform 10% one topic is in that state in
    83% of samples, holds 17-37% of the mean's true variance and gets 0.34-0.76 of it
    estimated. With no information the honest variance is the largest a measure confined to
    [0, 1] can have, 1/4 (Popoviciu's inequality); ``scaled`` multiplies it by the share of
    the frame still unjudged, as a finite-population correction does, so that it vanishes at
    a census and a judge-until-confident target stays reachable (with ``bound`` it is not,
    short of judging the topic in full: tests/test_campaign_target.py). Coverage of the mean
    over topics, 70 samples, AP~ht / xinfAP(bias=jackknife) / infAP(bias=jackknife): 0.886 /
    0.839 / 0.850 without, 0.925 / 0.917 / 0.920 with ``bound`` (docs/methods.md, "Residual
    bias, and topics with at most one relevant judged")."""
    judged = topic.judged
    census = bool(judged.any()) and bool((topic.inclusion[judged] >= 1.0).all())
    if few == "none" or relevant > 1 or census:
        return variance
    return np.maximum(variance, 0.25 if few == "bound" else 0.25 * (1.0 - float(judged.mean())))


def z_value(ci: float) -> float:
    """The two-sided normal quantile for confidence level ``ci`` (1.96 for 0.95)."""
    from scipy.stats import norm  # here: scipy.stats takes longer to import than many commands

    return float(norm.ppf(0.5 + ci / 2.0))


def summarise(run_names: tuple[str, ...], views: list[TopicView], measure: str,
              values: np.ndarray, variances: np.ndarray | None, ci: float,
              bias: np.ndarray | None = None) -> pd.DataFrame:
    """Rows for per-topic estimates ``values[topic, run]`` and their mean over the topics each
    run retrieved for (their sum for counts: :mod:`sampleval.aggregation`), with normal
    intervals from ``variances[topic, run]`` (topics sampled independently: Var(mean) =
    sum Var / T^2, Var(sum) = sum Var). Without variances, lo and hi are NaN.

    ``bias[topic, run]``, an estimate of each estimate's bias, widens its interval beyond z
    standard errors by |bias|, the mean's by |sum of the topics' biases| / T (a bias-aware
    interval: ``AP~ht(interval=bias-aware)``)."""
    present = np.array([v.pool.present for v in views]).reshape(len(views), len(run_names))
    aggregate = aggregate_of(parse_estimate(measure).base)
    mean = over_topics(values, present, aggregate)
    z = z_value(ci)
    if variances is None:
        half_topic = np.full(values.shape, np.nan)
        half_mean = np.full(len(run_names), np.nan)
    else:
        half_topic = z * np.sqrt(np.maximum(variances, 0.0))
        total = np.sqrt(topic_sums(np.maximum(variances, 0.0), present))
        half_mean = z * total
        if bias is not None:
            half_topic = half_topic + np.abs(bias)
            half_mean = half_mean + np.abs(topic_sums(bias, present))
        if aggregate != "sum":
            half_mean = half_mean / np.maximum(present.sum(axis=0), 1)
    t_idx, r_idx = np.nonzero(present)
    topics = np.array([v.pool.topic for v in views], dtype=object)
    names = np.asarray(run_names, dtype=object)
    per_topic = pd.DataFrame({
        "run": names[r_idx], "query_id": topics[t_idx], "measure": measure,
        "value": values[t_idx, r_idx],
        "lo": values[t_idx, r_idx] - half_topic[t_idx, r_idx],
        "hi": values[t_idx, r_idx] + half_topic[t_idx, r_idx],
    })
    overall = pd.DataFrame({"run": names, "query_id": MEAN_TOPIC, "measure": measure,
                            "value": mean, "lo": mean - half_mean, "hi": mean + half_mean})
    return pd.concat([per_topic, overall], ignore_index=True)[COLUMNS]
