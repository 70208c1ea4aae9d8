"""A seeded synthetic TREC-style test collection, so the demo and tests need no data files.

Generative model, per topic t and document d:

* latent grade: relevant with probability ``rate_t`` (log-normal around ``rel_rate``; one topic
  has rate 0, one has ``rich_rate``); a relevant document takes its k-th positive grade with
  weight ``0.35 ** k``, so highly relevant documents are rarer. ``signal = grade / max grade``.
* affinity: a per-topic document attractiveness ``N(0, 1) + signal`` shared by all runs, so
  runs overlap the way real systems do.

Each run has a quality ``q`` on a jittered ladder in (0, 1). For each topic it draws a candidate
set (Gumbel top-k on ``affinity + s * q * signal``, so better runs recall more relevant
documents), scores each candidate ``N(0, 1) + s * q * signal`` (``s = signal_strength``) and
keeps the top ``depth``. Some runs round scores to two decimals (ties), one run misses a topic,
and a few (run, topic) pairs retrieve fewer than ``depth`` documents. The qrels judge the
depth-``pool_depth`` pool (ranked by score descending, then docno descending, as trec_eval does)
with the latent grades; ``unjudged_fraction`` of the pooled documents get grade -1 (pooled but
not judged).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["SyntheticCollection", "make_collection"]


@dataclass(frozen=True)
class SyntheticCollection:
    """Runs, qrels and the latent quality of each run."""

    runs: dict[str, pd.DataFrame]
    """Run name -> DataFrame with columns ``query_id`` (str), ``doc_id`` (str), ``score``."""
    qrels: pd.DataFrame
    """Columns ``query_id``, ``doc_id``, ``relevance`` (int; -1 = pooled but not judged)."""
    true_quality: dict[str, float]
    """Run name -> latent quality in (0, 1); higher should evaluate better."""


def _check(
    n_topics: int,
    n_runs: int,
    depth: int,
    pool_depth: int,
    grades: tuple[int, ...],
    unjudged_fraction: float,
) -> None:
    """Reject parameters the model cannot honour."""
    if n_topics < 2:
        raise ValueError("n_topics must be at least 2 (one topic without relevant documents)")
    if n_runs < 1 or depth < 2 or pool_depth < 1:
        raise ValueError("n_runs and pool_depth must be at least 1, depth at least 2")
    if min(grades) != 0 or len(set(grades)) < 2:
        raise ValueError("grades must contain 0 and at least one positive grade")
    if not 0.0 <= unjudged_fraction <= 1.0:
        raise ValueError("unjudged_fraction must lie in [0, 1]")


def _latent_grades(
    rng: np.random.Generator,
    n_topics: int,
    n_docs: int,
    grades: tuple[int, ...],
    rel_rate: float,
    rich_rate: float,
) -> np.ndarray:
    """Return an ``(n_topics, n_docs)`` array of latent grades."""
    rates = np.clip(rng.lognormal(np.log(rel_rate), 0.6, n_topics), 0.002, rich_rate)
    empty, rich = rng.choice(n_topics, size=2, replace=False)
    rates[empty], rates[rich] = 0.0, rich_rate
    positive = np.array(sorted(g for g in set(grades) if g > 0))
    weights = 0.35 ** np.arange(positive.size)
    drawn = rng.choice(positive, size=(n_topics, n_docs), p=weights / weights.sum())
    relevant = rng.random((n_topics, n_docs)) < rates[:, None]
    return np.where(relevant, drawn, 0)


def make_collection(
    rng: np.random.Generator,
    *,
    n_topics: int = 20,
    n_runs: int = 12,
    n_docs: int = 2000,
    depth: int = 100,
    grades: tuple[int, ...] = (0, 1, 2),
    pool_depth: int = 20,
    unjudged_fraction: float = 0.0,
    rel_rate: float = 0.03,
    rich_rate: float = 0.15,
    signal_strength: float = 3.0,
    candidate_factor: int = 5,
    tie_runs: int = 2,
    short_fraction: float = 0.05,
) -> SyntheticCollection:
    """Generate runs and depth-``pool_depth`` pooled qrels; all randomness comes from ``rng``.

    ``candidate_factor * depth`` documents are candidates per run and topic; ``tie_runs`` runs
    round their scores; ``short_fraction`` of the (run, topic) pairs are cut below ``depth``.
    """
    _check(n_topics, n_runs, depth, pool_depth, grades, unjudged_fraction)
    grade = _latent_grades(rng, n_topics, n_docs, grades, rel_rate, rich_rate)
    signal = grade / max(grades)
    affinity = rng.normal(size=(n_topics, n_docs)) + signal

    topic_ids = np.arange(1, n_topics + 1).astype(str)
    width = max(6, len(str(n_docs - 1)))
    docnos = np.char.add("D", np.char.zfill(np.arange(n_docs).astype(str), width))
    names = [f"run{i:02d}" for i in range(1, n_runs + 1)]
    ladder = np.linspace(0.1, 0.9, n_runs) + rng.uniform(-0.02, 0.02, n_runs)
    quality = rng.permutation(np.clip(ladder, 0.01, 0.99))
    tied = set(rng.choice(n_runs, size=min(tie_runs, n_runs), replace=False).tolist())

    keep = np.full((n_runs, n_topics), depth)
    keep[rng.integers(n_runs), rng.integers(n_topics)] = 0
    present = np.flatnonzero(keep)
    n_short = min(present.size, max(1, round(short_fraction * keep.size)))
    short = rng.choice(present, size=n_short, replace=False)
    keep.flat[short] = rng.integers(max(1, depth // 10), depth, size=n_short)

    n_cand = min(n_docs, candidate_factor * depth)
    pooled = np.zeros((n_topics, n_docs), dtype=bool)
    runs: dict[str, pd.DataFrame] = {}
    for r, name in enumerate(names):
        topics, docs, scores = [], [], []
        for t in np.flatnonzero(keep[r]):
            boost = signal_strength * quality[r] * signal[t]
            logits = affinity[t] + boost + rng.gumbel(size=n_docs)
            cand = np.argpartition(-logits, n_cand - 1)[:n_cand]
            score = rng.normal(size=n_cand) + boost[cand]
            if r in tied:
                score = np.round(score, 2)
            order = np.lexsort((-cand, -score))[: keep[r, t]]
            pooled[t, cand[order[:pool_depth]]] = True
            topics.append(np.full(order.size, t))
            docs.append(cand[order])
            scores.append(score[order])
        t_idx, d_idx = np.concatenate(topics), np.concatenate(docs)
        runs[name] = pd.DataFrame(
            {
                "query_id": topic_ids[t_idx].tolist(),
                "doc_id": docnos[d_idx].tolist(),
                "score": np.concatenate(scores).astype(np.float64),
            }
        )

    t_idx, d_idx = np.nonzero(pooled)
    relevance = grade[t_idx, d_idx].astype(np.int64)
    n_unjudged = round(unjudged_fraction * relevance.size)
    relevance[rng.choice(relevance.size, size=n_unjudged, replace=False)] = -1
    qrels = pd.DataFrame(
        {
            "query_id": topic_ids[t_idx].tolist(),
            "doc_id": docnos[d_idx].tolist(),
            "relevance": relevance,
        }
    )
    true_quality = {name: float(q) for name, q in zip(names, quality, strict=True)}
    return SyntheticCollection(runs=runs, qrels=qrels, true_quality=true_quality)
