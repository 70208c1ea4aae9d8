"""Seeded predictors of relevance of controlled quality, for simulations of the
prediction-powered estimators (``~ppi``) and of the designs that use predictions.

Each returns a DataFrame ``query_id, doc_id, prediction`` (the library's predictions form,
:class:`~sampleval.core.predictions.Predictions`) for the documents of ``truth``, a frame
``query_id, doc_id, relevance, best_rank`` of every pooled document with its true grade
(:func:`pool_truth`). All randomness comes from the ``numpy.random.Generator`` passed in.

- :func:`flipped`: the true grade, replaced with probability ``rate`` by another grade drawn
  uniformly (a labeller that errs at random);
- :func:`deep_over_calls`: a non-relevant document called relevant with a probability that
  grows with its best rank, ``rate (best_rank - 1) / (depth - 1)`` (a labeller biased toward
  relevance deep in the rankings, where it is rarest);
- :func:`pure_noise`: uniform on [0, top grade], independent of the truth;
- :func:`circular`: a judge that favours a run built like it: the run's top ``k`` documents
  of every topic called relevant (at least grade 1), every other label as a base judge's
  (default the truth); the case of a system that re-ranks with the judge (issue 31);
- :func:`fused` (no label used): the runs' reciprocal-rank fusion (Cormack, Clarke & Buettcher,
  SIGIR 2009: s(d) = sum over runs of 1/(60 + rank)), as a share of the score of a document
  every run ranks first, calibrated to a probability by a power p = share^gamma with gamma
  set per topic so that the mean probability over the pool is ``prevalence`` (an assumed
  rate of relevance in the pool: the one number this predictor is told).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.core.pool import PAD, Pool
from sampleval.core.qrels import Qrels

__all__ = ["circular", "deep_over_calls", "flipped", "fused", "pool_truth", "pure_noise"]

RRF_K = 60


def pool_truth(pool: Pool, qrels: Qrels) -> pd.DataFrame:
    """Every pooled document: ``query_id, doc_id, relevance`` (its qrels grade, 0 where the
    qrels do not judge it) and ``best_rank`` (its best rank over the runs)."""
    labelled = pool.with_labels(qrels)
    parts = [pd.DataFrame({"query_id": tp.topic, "doc_id": labelled.docnos[tp.doc_ids],
                           "relevance": np.nan_to_num(tp.labels, nan=0.0),
                           "best_rank": tp.best_rank()})
             for tp in labelled]
    if not parts:
        return pd.DataFrame(columns=["query_id", "doc_id", "relevance", "best_rank"])
    return pd.concat(parts, ignore_index=True)


def _predicted(truth: pd.DataFrame, values: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"query_id": truth["query_id"].to_numpy(dtype=object),
                         "doc_id": truth["doc_id"].to_numpy(dtype=object),
                         "prediction": np.asarray(values, dtype=np.float64)})


def flipped(truth: pd.DataFrame, rate: float, rng: np.random.Generator,
            grades: tuple[float, ...] | None = None) -> pd.DataFrame:
    """Each true grade kept with probability 1 - ``rate``, else replaced by one of the other
    ``grades`` (default: the grades in ``truth``, at least 0 and 1) drawn uniformly."""
    if not 0 <= rate <= 1:
        raise ValueError("rate must lie in [0, 1]")
    labels = np.maximum(truth["relevance"].to_numpy(dtype=np.float64), 0.0)
    scale = np.array(sorted(set(grades if grades is not None else labels.tolist()) | {0.0, 1.0}))
    flip = rng.random(len(labels)) < rate
    position = np.searchsorted(scale, labels)
    other = (position + rng.integers(1, len(scale), size=len(labels))) % len(scale)
    return _predicted(truth, np.where(flip, scale[other], labels))


def deep_over_calls(truth: pd.DataFrame, rate: float, rng: np.random.Generator,
                    depth: int | None = None) -> pd.DataFrame:
    """The true grades, except that a non-relevant document at best rank r is called
    relevant (grade 1) with probability ``rate`` (r - 1) / (depth - 1) (``depth``: default
    the deepest best rank)."""
    if not 0 <= rate <= 1:
        raise ValueError("rate must lie in [0, 1]")
    labels = np.maximum(truth["relevance"].to_numpy(dtype=np.float64), 0.0)
    best = truth["best_rank"].to_numpy(dtype=np.float64)
    deepest = float(depth if depth is not None else best.max(initial=1.0))
    chance = rate * np.clip((best - 1.0) / max(deepest - 1.0, 1.0), 0.0, 1.0)
    called = (labels <= 0) & (rng.random(len(labels)) < chance)
    return _predicted(truth, np.where(called, 1.0, labels))


def pure_noise(truth: pd.DataFrame, rng: np.random.Generator,
               top: float | None = None) -> pd.DataFrame:
    """Uniform on [0, ``top``] (default the largest grade in ``truth``, at least 1),
    independent of everything."""
    high = top if top is not None else max(1.0, float(truth["relevance"].max()))
    return _predicted(truth, rng.uniform(0.0, high, size=len(truth)))


def circular(truth: pd.DataFrame, pool: Pool, run: str, k: int,
             base: pd.DataFrame | None = None) -> pd.DataFrame:
    """``base``'s predictions (default: the true grades of ``truth``), except that the top
    ``k`` documents of ``run`` (one of ``pool``'s runs) on every topic are called relevant:
    their value raised to at least 1."""
    if k < 1:
        raise ValueError("k must be at least 1")
    index = list(pool.run_names).index(run)
    favoured = [pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos[tp.doc_ids[
        top[top != PAD]]]}) for tp in pool for top in [tp.ranking[index, :k]]]
    called = pd.MultiIndex.from_frame(pd.concat(favoured, ignore_index=True))
    values = (np.maximum(truth["relevance"].to_numpy(dtype=np.float64), 0.0) if base is None
              else base["prediction"].to_numpy(dtype=np.float64))
    keys = pd.MultiIndex.from_arrays([truth["query_id"].to_numpy(dtype=object),
                                      truth["doc_id"].to_numpy(dtype=object)])
    return _predicted(truth, np.where(keys.isin(called), np.maximum(values, 1.0), values))


def fused(pool: Pool, prevalence: float = 0.1) -> pd.DataFrame:
    """A label-free predictor of every pooled document (see the module docstring): the
    runs' reciprocal-rank fusion, calibrated to probabilities whose mean over each topic's
    pool is ``prevalence``."""
    if not 0 < prevalence < 1:
        raise ValueError("prevalence must lie in (0, 1)")
    parts = []
    for tp in pool:
        runs, cols = np.nonzero(tp.ranking != PAD)
        score = np.bincount(tp.ranking[runs, cols], weights=1.0 / (RRF_K + cols + 1.0),
                            minlength=tp.size)
        share = score * (RRF_K + 1.0) / max(len(tp.lengths), 1)
        parts.append(pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos[tp.doc_ids],
                                   "prediction": calibrate(share, prevalence)}))
    if not parts:
        return pd.DataFrame(columns=["query_id", "doc_id", "prediction"])
    return pd.concat(parts, ignore_index=True)


def calibrate(share: np.ndarray, prevalence: float) -> np.ndarray:
    """share^gamma, gamma > 0 chosen by bisection (in log gamma) so that the mean is
    ``prevalence`` (shares in [0, 1]; the mean falls as gamma grows)."""
    if not len(share):
        return share
    s = np.clip(share, 0.0, 1.0)
    low, high = -12.0, 12.0
    for _ in range(80):
        middle = (low + high) / 2.0
        if np.mean(s ** np.exp(middle)) > prevalence:
            low = middle
        else:
            high = middle
    return s ** np.exp((low + high) / 2.0)
