"""How much of an inferred estimate is imputation rather than observation.

The inferred measures fill the gaps of a sample with constants. NIST's ``sample_eval``
estimates the share of relevant documents among a stratum's retrieved documents by
(s_h + 1e-5) / (m_h + 3e-5) (``inferred.py``); for a stratum with none of its retrieved
documents sampled yet (m_h = 0) that is 1/3, a guess, not a measurement. trec_eval's infAP
does the same with 1/2 for the pooled but unjudged documents above a relevant one when no
judged document lies above it. On a sparse design these guesses can carry most of the value
(where most top-10 lists hold no sampled document, iP@10 is mostly 1/3 per document).

For each (run, topic) these functions return the *imputed share*: the part of the value that
comes from those constants (strata with nothing sampled above the rank, for NIST; no judged
document above, for infAP), divided by the value (0 when the value is 0). ``estimate`` reports
it in the ``imputed`` column and flags values whose share exceeds one half. Estimators that
impute nothing (Horvitz-Thompson, statAP, importance sampling, per-draw) have share 0, and so
do the prediction-powered ones (``~ppi``: ``~ht``'s estimate plus lam times the predictions'
frame total minus its estimate, a correction of expectation 0; :mod:`.ppi`); infNDCG
and inum_rel give unsampled strata no weight rather than a constant, so their share is 0 too
(documents outside the sample's reach show in the frame coverage instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sampleval.estimation.families._inferred_kernels import (
    INFAP_EPSILON,
    NIST_MAX_RESULTS,
    NIST_RELEVANT_EPSILON,
    NIST_SAMPLED_EPSILON,
)

if TYPE_CHECKING:
    from sampleval.core.sample import Sample
    from sampleval.estimation.engine.views import TopicView
    from sampleval.estimation.spec import EstimateSpec

MOSTLY = 0.5
"""An estimate whose imputed share exceeds this is flagged."""


def _ranges(starts: np.ndarray, stops: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``[n_runs, width]``: for each rank, how many of the ranges [start, stop) given per
    (run, rank) of ``starts``/``stops`` (same shape; empty when stop <= start) cover it."""
    n_runs, width = shape
    diff = np.zeros((n_runs, width + 1))
    rows = np.broadcast_to(np.arange(n_runs)[:, None], starts.shape)
    keep = stops > starts
    np.add.at(diff, (rows[keep], np.minimum(starts[keep], width)), 1.0)
    np.add.at(diff, (rows[keep], np.minimum(stops[keep], width)), -1.0)
    return np.cumsum(diff, axis=1)[:, :width]


def unsampled_strata_docs(view: TopicView, width: int) -> tuple[np.ndarray, np.ndarray]:
    """For every run and (0-based) rank k of its top ``width``: how many frame documents of
    strata with no sampled document among the run's ranks ``<= k`` lie at ranks ``<= k``
    (``inclusive``, sample_eval's inum_rel_ret at rank k), and how many of strata with no
    sampled document above k lie above k (``above``, its precision above a relevant
    document at rank k)."""
    fa = view.frame_at_rank[:, :width]
    n_runs, w = fa.shape
    ts = view.sample
    if not len(ts.docnos):
        return np.zeros(fa.shape), np.zeros(fa.shape)
    safe = np.maximum(fa, 0)
    valid = (fa >= 0) & (ts.stratum[safe] >= 0)
    n_strata = int(ts.stratum.max(initial=-1)) + 1
    stratum = np.where(valid, ts.stratum[safe], 0)
    sampled = valid & ts.judged[safe]
    # first sampled rank of each stratum in each run (w: none)
    first = np.full((n_runs, max(n_strata, 1)), w, dtype=np.int64)
    runs, cols = np.nonzero(sampled)
    np.minimum.at(first, (runs, stratum[runs, cols]), cols)
    f = np.where(valid, np.take_along_axis(first, stratum, axis=1), -1)
    rank = np.broadcast_to(np.arange(w), fa.shape)
    inclusive = _ranges(np.where(valid, rank, 0), np.where(valid, f, 0), (n_runs, w))
    above = _ranges(np.where(valid, rank + 1, 0), np.where(valid, f + 1, 0), (n_runs, w))
    return inclusive, above


def _share(imputed: np.ndarray, value: np.ndarray) -> np.ndarray:
    return np.divide(imputed, value, out=np.zeros(len(value)), where=value > 0).clip(0.0, 1.0)


def nist_share(views: list[TopicView], sample: Sample, spec: EstimateSpec, level: float,
               values: np.ndarray) -> np.ndarray:
    """Imputed share ``[topics, runs]`` of sample_eval's iP@k, inum_rel_ret and xinfAP
    (``values``: the estimates, same shape); 0 for infNDCG and inum_rel."""
    guess = NIST_RELEVANT_EPSILON / NIST_SAMPLED_EPSILON  # 1/3: an unsampled stratum's rate
    out = np.zeros(values.shape)
    if spec.base not in ("P", "NumRelRet", "AP"):
        return out
    for t, view in enumerate(views):
        inclusive, above = unsampled_strata_docs(view, NIST_MAX_RESULTS)
        width = inclusive.shape[1]
        if width == 0:
            continue
        if spec.base == "P":
            cut = spec.cutoff or 1
            out[t] = _share(guess * inclusive[:, min(cut, width) - 1] / cut, values[t])
        elif spec.base == "NumRelRet":
            out[t] = _share(guess * inclusive[:, -1], values[t])
        else:
            out[t] = _share(_xinfap_imputed(view, above, guess, level), values[t])
    return out


def _xinfap_imputed(view: TopicView, above: np.ndarray, guess: float,
                    level: float) -> np.ndarray:
    """The imputed part of xinfAP per run: sum_h (N_h / n_h) sum over the relevant sampled
    documents d of h of guess * above(d) / rank(d), over R-hat (xinfAP is the same sum of
    the whole precisions, over R-hat)."""
    ts = view.sample
    fa = view.frame_at_rank[:, :above.shape[1]]
    safe = np.maximum(fa, 0)
    sizes, n_sampled = ts.strata()
    scale = np.divide(sizes, n_sampled, out=np.zeros(len(sizes)), where=n_sampled > 0)
    relevant = ts.judged & (np.nan_to_num(ts.labels, nan=-np.inf) >= level)
    big_r = float((np.bincount(ts.stratum[relevant], minlength=len(sizes)) * scale).sum())
    if not big_r:
        return np.zeros(view.n_runs)
    hit = (fa >= 0) & relevant[safe] & (ts.stratum[safe] >= 0)
    weight = np.where(hit, scale[np.maximum(ts.stratum[safe], 0)], 0.0)
    per_rank = guess * above / np.arange(1, above.shape[1] + 1)
    return (weight * per_rank).sum(axis=1) / big_r


def infap_share(views: list[TopicView], sample: Sample, spec: EstimateSpec, level: float,
                values: np.ndarray) -> np.ndarray:
    """Imputed share ``[topics, runs]`` of trec_eval's infAP: the 1/2 density it gives the
    unjudged documents above a relevant one when no judged document lies above it."""
    guess = INFAP_EPSILON / (2 * INFAP_EPSILON)
    out = np.zeros(values.shape)
    for t, view in enumerate(views):
        labels = view.labels_at_rank()
        judged = ~np.isnan(labels)
        rel = judged & (np.nan_to_num(labels, nan=-np.inf) >= level)
        unjudged = (view.frame_at_rank >= 0) & ~judged
        seen = np.cumsum(judged, axis=1) - judged
        u_above = np.cumsum(unjudged, axis=1) - unjudged
        rank = np.arange(1, labels.shape[1] + 1)
        imputed = np.where(rel & (seen == 0), guess * u_above / rank, 0.0).sum(axis=1)
        big_r = float(np.count_nonzero(view.sample.judged & (view.sample.labels >= level)))
        out[t] = _share(imputed / big_r if big_r else np.zeros(view.n_runs), values[t])
    return out
