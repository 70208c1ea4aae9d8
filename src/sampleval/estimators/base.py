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

from sampleval.core.pool import Pool, TopicPool
from sampleval.core.predictions import Predictions
from sampleval.core.sample import Sample, TopicSample
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.estimators.names import parse_estimate
from sampleval.measures.aggregation import aggregate_of, over_topics, topic_sums

MEAN_TOPIC = "all"
UNBIASED_AP = 2
"""The fewest relevant documents a topic's sample must hold for its AP estimate not to run
low (``estimate`` names the topics with fewer; docs/research/calibration.md)."""
COLUMNS = ["run", "query_id", "measure", "value", "lo", "hi"]
FEW_OPTION = Param("few", str, "moment", "AP's variance on a topic whose sample holds at most "
                   "one relevant document, where the jackknife has nothing to measure the "
                   "spread with: moment (at least (1 - f) m2, f the share of the topic's "
                   "frame judged, m2 the run's mean squared AP over the topics where "
                   "something relevant was judged), bernoulli (at least (1 - f) m (1 - m), m "
                   "that mean AP), scaled (at least (1 - f)/4; the default before), bound "
                   "(at least 1/4: the topic's interval spans [0, 1]) or none (as computed)",
                   choices=("moment", "bernoulli", "scaled", "bound", "none"))


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


def is_census(topic: TopicSample) -> bool:
    """Whether every judged document of the topic's sample has inclusion probability 1."""
    judged = topic.judged
    return bool(judged.any()) and bool((topic.inclusion[judged] >= 1.0).all())


def judged_relevant(topic: TopicSample, level: float) -> int:
    """The number of relevant documents (label >= ``level``) the topic's sample judged."""
    return int(np.count_nonzero(topic.judged & (topic.labels >= level)))


def few_relevant_variance(values: np.ndarray, variances: np.ndarray, views: list[TopicView],
                          relevant: np.ndarray, few: str) -> np.ndarray:
    """AP's ``variances[topic, run]`` where the topic's sample holds ``relevant[topic]`` <= 1
    relevant documents and is not a census (every judged document's pi_i = 1), under the
    ``few`` option (:data:`FEW_OPTION`, issues 9 and 29). A ratio whose denominator rests on
    one relevant document or none gives its delete-one jackknife (and its linearisation)
    no spread to measure, so the variance computed there is raised to a floor F_tr:

    * ``moment`` (the default): F_tr = (1 - f_t) m2_r, f_t the share of the topic's frame
      judged, m2_r the run's mean squared estimate, clip(AP-hat_sr, 0, 1)^2, over the topics
      s whose sample holds a relevant document. Where the sample holds none, AP-hat is 0
      and its error is the topic's true AP, whose expected square m2_r estimates from the
      topics like it (a pooled-over-topics, empirical-Bayes plug-in for E[AP^2]); one
      relevant found leaves an error of the same order. (1 - f_t) is the finite-population
      correction: F vanishes at a census, so a judge-until-confident target stays
      reachable. Where the run has no such topic, m2_r = 1/4.
    * ``bernoulli``: F_tr = (1 - f_t) m_r (1 - m_r), m_r the run's mean clipped estimate
      over the same topics: the Bhatia-Davis bound on the variance of a value in [0, 1]
      with mean m_r (Bhatia & Davis, Amer. Math. Monthly 107, 2000).
    * ``scaled`` (the default before): F = (1 - f_t)/4; ``bound``: F = 1/4, the largest
      variance of a value in [0, 1] (Popoviciu's inequality), whatever the share judged;
      ``none``: as computed.

    Measured comparison: docs/research/calibration.md."""
    if few == "none":
        return variances
    share = np.array([float(v.sample.judged.mean()) if v.sample.judged.size else 1.0
                      for v in views])
    census = np.array([is_census(v.sample) for v in views], dtype=bool)
    few_topics = (np.asarray(relevant) <= 1) & ~census
    if not few_topics.any():
        return variances
    unjudged = (1.0 - share)[:, None]
    if few == "bound":
        floor = np.full(values.shape, 0.25)
    elif few == "scaled":
        floor = np.broadcast_to(0.25 * unjudged, values.shape)
    else:
        clipped = np.clip(np.nan_to_num(values), 0.0, 1.0)
        present = np.array([v.pool.present for v in views], dtype=bool).reshape(values.shape)
        seen = (np.asarray(relevant) >= 1)[:, None] & present  # the run retrieved there
        count = seen.sum(axis=0)
        m1 = np.divide(np.where(seen, clipped, 0.0).sum(axis=0), count,
                       out=np.full(values.shape[1], 0.5), where=count > 0)
        m2 = np.divide(np.where(seen, clipped**2, 0.0).sum(axis=0), count,
                       out=np.full(values.shape[1], 0.25), where=count > 0)
        level = m2 if few == "moment" else m1 * (1.0 - m1)
        floor = unjudged * level[None, :]
    return np.where(few_topics[:, None], np.maximum(variances, floor), variances)


def z_value(ci: float) -> float:
    """The two-sided normal quantile for confidence level ``ci`` (1.96 for 0.95)."""
    from scipy.stats import norm  # here: scipy.stats takes longer to import than many commands

    return float(norm.ppf(0.5 + ci / 2.0))


def summarise(run_names: tuple[str, ...], views: list[TopicView], measure: str,
              values: np.ndarray, variances: np.ndarray | None, ci: float,
              bias: np.ndarray | None = None) -> pd.DataFrame:
    """Rows for per-topic estimates ``values[topic, run]`` and their mean over the topics each
    run retrieved for (their sum for counts: :mod:`sampleval.measures.aggregation`), with normal
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
