"""Per-draw (Hansen-Hurwitz) estimators for with-replacement designs, adaptive ones included.

Hansen & Hurwitz ("On the theory of sampling from finite populations", Ann. Math. Stat.,
1943) estimate a total T = sum_d z_d from n draws d_1..d_n with replacement, draw k taking
document d with probability p_k(d), by the mean of the per-draw terms

    T-hat = (1/n) sum_k z_{d_k} / p_k(d_k).

Here p_k may depend on everything drawn and judged before draw k (active sampling, Li &
Kanoulas, CIKM 2017: p_t of round t, steered by the judgments of rounds 1..t-1; importance
sampling, Schnabel et al., ICTIR 2016, eq. 4, is the case of a fixed p = Q). With F_{k-1} the
history before draw k, E[z_{d_k} / p_k(d_k) | F_{k-1}] = sum_d p_k(d) z_d / p_k(d) = T
whenever p_k(d) > 0 wherever z_d != 0, so X_k = z_{d_k}/p_k(d_k) - T are martingale
differences: T-hat is unbiased for a fixed n, and, the X_k being uncorrelated (E[X_j X_k] =
E[X_j E[X_k | F_{k-1}]] = 0 for j < k), Var(T-hat) = (1/n^2) sum_k E[X_k^2]. Its estimate
is the sample variance of the terms over n, s^2 / n (consistent when the conditional
variances settle; it needs no inclusion probabilities, unlike Horvitz-Thompson's
path-dependent pi_i and pi_ij). When n is itself random (active sampling stops at a number
of distinct judged documents), the mean over a stopping time is nearly but not exactly
unbiased (E[sum_k X_k] = 0 by optional stopping; the mean divides by n).

Totals, per run h (k the cutoff, r = rank_h(d); every draw's label must be judged):

- NumRel: z_d = rel(d), the number of relevant documents in the frame;
- P@k: z_d = rel(d) 1{r <= k} / k;
- DCG@k: z_d = gain(d) / log2(r + 1) for r <= k (every r without k);

rel is ``base.relevance`` at the level, gain ``base.gain``; documents outside the frame count
as not relevant. Intervals are normal (``base.summarise``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators.base import TopicView, gain, relevance, summarise
from sampleval.estimators.family import Base, EstimatorFamily, each_measure, register_family
from sampleval.estimators.names import EstimateSpec


def rank_coefficients(base: str, ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """The coefficient of z_d = coefficient * value(label) at 1-based ``ranks`` (0: not
    retrieved): 1 for NumRel, 1{r <= k}/k for P@k, 1/log2(r + 1) (r <= k) for DCG@k."""
    if base == "NumRel":
        if cutoff is not None:
            raise UsageError("NumRel~hh takes no cutoff")
        return np.ones(ranks.shape)
    kept = (ranks > 0) & (ranks <= (cutoff if cutoff is not None else np.inf))
    if base == "P":
        if cutoff is None:
            raise UsageError("P~hh needs a cutoff, e.g. P@10~hh")
        return kept / cutoff
    return np.divide(1.0, np.log2(ranks + 1.0), out=np.zeros(ranks.shape), where=kept)


def per_draw(spec: EstimateSpec, level: float, ranks: np.ndarray, labels: np.ndarray,
             probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """T-hat and its estimated variance s^2 / n per run, from the draws' ``[n_runs, n]`` ranks,
    labels and draw probabilities ``[n]`` (variance NaN from a single draw)."""
    value = gain(labels) if spec.base == "DCG" else relevance(labels, level)
    terms = rank_coefficients(spec.base, ranks, spec.cutoff) * (value / probs)
    n = terms.shape[-1]
    variance = (np.var(terms, axis=-1, ddof=1) / n if n > 1
                else np.full(terms.shape[:-1], np.nan))
    return terms.mean(axis=-1), variance


def estimate_hh(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                spec: EstimateSpec, level: float, ci: float) -> pd.DataFrame:
    """Per-draw estimates of ``spec`` (NumRel, P@k, DCG[@k]) for every run and topic, and their
    mean, with normal intervals at level ``ci``, from a sample's draws and their
    probabilities."""
    if sample.draws is None:
        raise UsageError(f"{spec.name} needs the sample's draws with their probabilities")
    values = np.zeros((len(views), len(run_names)))
    variances = np.zeros_like(values)
    for t, view in enumerate(views):
        x, probs = topic_draws(sample, view)
        values[t], variances[t] = per_draw(spec, level, view.rank_of(x), view.sample.labels[x],
                                           probs)
    return summarise(run_names, views, spec.name, values, variances, ci)


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


register_family(EstimatorFamily(
    name="hh", title="per-draw (Hansen-Hurwitz) mean of z/p_t over all draws; unbiased under "
                     "adaptive draw probabilities",
    reference="Hansen & Hurwitz 1943; a martingale argument (module docstring)",
    bases=(Base("P", "required"), Base("DCG", "optional"), Base("NumRel")),
    designs={"with-replacement": 3, "importance": 2},
    compute=each_measure(estimate_hh)))
