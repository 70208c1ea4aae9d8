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

:data:`PREDICTORS` names them for the simulations (``flip10``, ``deep``, ``noise``,
``fused`` ...); :func:`make_predictions` makes named ones, also the circular judge spelt
``circular:run=RUN,k=K`` (RUN a run's name, its 0-based position in the runs' order, or
``median``: the run at the median of the true AP leaderboard, :func:`median_run`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from sampleval.core.pool import PAD, Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.errors import UsageError

__all__ = ["PREDICTORS", "PredictorSpec", "circular", "deep_over_calls", "flipped", "fused",
           "make_predictions", "median_run", "parse_predictor", "pool_truth", "pure_noise"]

RRF_K = 60
CIRCULAR = "circular"


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


Predictor = Callable[[pd.DataFrame, Pool, np.random.Generator], pd.DataFrame]
PREDICTORS: dict[str, Predictor] = {
    "flip10": lambda truth, pool, rng: flipped(truth, 0.1, rng),
    "flip30": lambda truth, pool, rng: flipped(truth, 0.3, rng),
    "flip50": lambda truth, pool, rng: flipped(truth, 0.5, rng),
    "deep": lambda truth, pool, rng: deep_over_calls(truth, 0.5, rng, pool.depth),
    "noise": lambda truth, pool, rng: pure_noise(truth, rng),
    "fused": lambda truth, pool, rng: fused(pool, 0.1),
}
"""The named predictors of fixed quality (the circular judge takes parameters:
:func:`parse_predictor`)."""


class PredictorSpec(NamedTuple):
    """A parsed predictor: ``name`` (a key of :data:`PREDICTORS` or ``circular``) and, for
    the circular judge, the favoured ``run`` as given and ``k``."""

    name: str
    run: str | None = None
    k: int = 0


def parse_predictor(text: str) -> PredictorSpec:
    """``NAME`` (one of :data:`PREDICTORS`) or ``circular:run=RUN,k=K``; UsageError (one
    line) otherwise."""
    name, _, rest = text.strip().partition(":")
    if name in PREDICTORS and not rest:
        return PredictorSpec(name)
    if name != CIRCULAR:
        raise UsageError(f"unknown predictor {text!r} (one of {', '.join(PREDICTORS)}, or "
                         "circular:run=RUN,k=K)")
    from sampleval.declare import parse_assignments

    given = parse_assignments(rest, separator=",")
    unknown = sorted(set(given) - {"run", "k"})
    if unknown or "run" not in given or not given["run"]:
        raise UsageError(f"predictor {text!r}: give circular:run=RUN,k=K (RUN a run's name, "
                         "its 0-based position, or median; K the top documents called "
                         "relevant)")
    k = given.get("k", "10")
    if not k.isdigit() or int(k) < 1:
        raise UsageError(f"predictor {text!r}: k must be a whole number >= 1, not {k!r}")
    return PredictorSpec(CIRCULAR, given["run"], int(k))


def median_run(means: pd.Series) -> str:
    """The run (``means``' index) at the median of the leaderboard of ``means`` (the upper
    median for an even count; ties in the runs' order)."""
    return str(means.sort_values(kind="stable").index[len(means) // 2])


def favoured_run(spec: PredictorSpec, pool: Pool, qrels: Qrels) -> str:
    """The run a circular ``spec`` favours, by name (UsageError when no run matches)."""
    names = list(pool.run_names)
    given = str(spec.run)
    if given == "median":
        from sampleval.measures.names import parse_measure
        from sampleval.simulation.estimates import mean_over_topics
        from sampleval.simulation.truth import compute_truth

        truth = compute_truth(pool, qrels, [parse_measure("AP")], [1.0])
        means = mean_over_topics(truth.pool["AP"], truth.present)
        return median_run(pd.Series(means, index=names))
    if given in names:
        return given
    if given.isdigit() and int(given) < len(names):
        return names[int(given)]
    raise UsageError(f"circular judge: no run {given!r} among the {len(names)} runs (give a "
                     "name, a 0-based position or median)")


def make_predictions(pool: Pool, qrels: Qrels, names: Sequence[str], seed: int
                     ) -> dict[str, Predictions]:
    """The named predictors' (:func:`parse_predictor`) predictions of every pooled document,
    each from its own child of ``seed``'s SeedSequence (independent of the trials'
    ``default_rng(seed + i)``; note that ``default_rng([s, 0])`` is ``default_rng(s)``)."""
    specs = [parse_predictor(n) for n in names]
    truth = pool_truth(pool, qrels)
    children = np.random.SeedSequence(seed).spawn(len(names))
    out = {}
    for name, spec, child in zip(names, specs, children, strict=True):
        frame = (circular(truth, pool, favoured_run(spec, pool, qrels), spec.k)
                 if spec.name == CIRCULAR
                 else PREDICTORS[spec.name](truth, pool, np.random.default_rng(child)))
        out[name] = Predictions.from_frame(frame, source=name)
    return out
