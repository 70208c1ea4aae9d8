"""Importance-sampling estimators (Schnabel, Swaminathan, Frazier & Joachims, "Unbiased
Comparative Evaluation of Ranking Functions", ICTIR 2016) of P@k, DCG, R@k and nDCG from n
i.i.d. draws from Q (the selection method's, :mod:`sampleval.selection.priors`).

Eq. 4 and its normal interval (eq. 16) are the engine's per-draw form with every prediction 0
(:mod:`sampleval.estimation.engine.values`; ``~hh`` without a ratio-bias correction, nDCG's
ideal the unrounded plug-in). Specific to importance sampling here: the ``interval`` option's
``hoeffding`` (eq. 17) and ``bernstein`` (empirical Bernstein, Maurer & Pontil, COLT 2009)
intervals, which need Q over the whole frame (``round_probs``;
:func:`sampleval.core.design.draw_distribution`). Labels may be fractional (the expected
label, sec. 7). The estimators and the intervals' formulas, for one topic, the mean over
topics and the ratios: docs/guide/estimators.md#importance-sampling-intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from sampleval.core.design import draw_distribution
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.estimands import ideal_dcg
from sampleval.estimation.engine.values import PPIResult, without_predictions
from sampleval.estimation.engine.views import TopicView, gain, relevance, topic_draws
from sampleval.estimation.family import Base, EstimatorFamily, each_measure, register_family
from sampleval.estimation.options import pick
from sampleval.estimation.result import TopicParts, rows, summarise
from sampleval.estimation.spec import EstimateSpec
from sampleval.measures.weights import at_rank

INTERVALS = ("normal", "hoeffding", "bernstein")
DEFAULT_INTERVAL = "normal"
_LINEAR = ("P", "DCG")
_UPPER = {"P": 1.0, "R": 1.0, "nDCG": 1.0, "DCG": np.inf}

# -- eq. 4 and the normal interval (eq. 16): the engine's per-draw form ------------------------


def _estimated(views: list[TopicView], sample: Sample, spec: EstimateSpec, level: float,
               pairs: np.ndarray | None = None) -> PPIResult:
    """Eq. 4 as the engine's ``draws`` form with every prediction 0 (W_k = 1/(n Q(x_k))), no
    ratio-bias correction, nDCG's ideal from the unrounded grade-count estimates; its
    variance s^2/n of the linearised per-draw terms (eq. 16; ratios: the delta method)."""
    if sample.draws is None:
        raise UsageError(f"{spec.name} needs the draws of an importance sample (each with its Q)")
    return without_predictions(spec, views, sample, level, pairs, bias="none", rounded=False)


def is_parts(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
             spec: EstimateSpec, level: float) -> TopicParts:
    """Per topic and run: eq. 4's estimate, the variance of its normal interval, no bias."""
    return _estimated(views, sample, spec, level).parts()


def is_differences(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                   spec: EstimateSpec, level: float, pairs: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and pair (a, b) of run indices: the difference of the two runs' estimates
    and its variance, s^2/n of the differences of their linearised per-draw terms (Schnabel
    et al.'s pairwise estimate, eq. 4 with the difference of the runs' weights), both
    ``[topics, P]``."""
    return _estimated(views, sample, spec, level, pairs).differences(pairs)


# -- the bounded intervals (eq. 17, empirical Bernstein), on arrays ----------------------------

# a component: (weighted by lambda?, value of a label, largest value)
Component = tuple[bool, Callable[[np.ndarray], np.ndarray], float]


def _is_grade(labels: np.ndarray, grade: float) -> np.ndarray:
    return (gain(labels) == grade).astype(np.float64)


def _components(base: str, level: float, grades: np.ndarray, max_grade: float
                ) -> list[Component]:
    """The means a measure is a function of: P and DCG one; R its numerator and R; nDCG its
    DCG and the number of documents of each grade."""
    rel = partial(relevance, level=level)
    if base == "P":
        return [(True, rel, 1.0)]
    if base == "DCG":
        return [(True, gain, max_grade)]
    if base == "R":
        return [(True, rel, 1.0), (False, rel, 1.0)]
    return [(True, gain, max_grade)] + [(False, partial(_is_grade, grade=g), 1.0)
                                        for g in grades]


def draw_terms(spec: EstimateSpec, level: float, weights: np.ndarray, x: np.ndarray,
               labels: np.ndarray, q: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """Eq. 4's summands ``[C, n_runs, *x.shape]``: for each component c and draw i,
    coefficient_c(x_i) v_c(label_i) / Q(x_i), the coefficient lambda(rank_h(x_i)) (``weights``:
    ``[n_runs, n_frame]``) or 1. ``x``: frame index of each draw (any leading trial axes)."""
    lam = weights[:, x]
    terms = [(lam if ranked else 1.0) * value(labels) / q
             for ranked, value, _ in _components(spec.base, level, grades, np.nan)]
    return np.stack(np.broadcast_arrays(*terms))


def term_bounds(spec: EstimateSpec, weights: np.ndarray, q_frame: np.ndarray,
                grades: np.ndarray, max_grade: float) -> np.ndarray:
    """``[C, n_runs]`` ranges b of the per-draw terms: max over frame documents with a positive
    coefficient of coefficient * (largest value) / Q (inf where such a document has Q = 0)."""
    inv_q = np.divide(1.0, q_frame, out=np.full(len(q_frame), np.inf), where=q_frame > 0)
    rows = []
    for ranked, _, top in _components(spec.base, 1.0, grades, max_grade):
        coef = weights if ranked else np.ones_like(weights)
        with np.errstate(invalid="ignore"):
            rows.append(top * np.where(coef > 0, coef * inv_q, 0.0).max(axis=1, initial=0.0))
    return np.array(rows)


def _ratio(numerator: np.ndarray | float, denominator: np.ndarray,
           empty: float = 0.0) -> np.ndarray:
    num, den = np.broadcast_arrays(np.asarray(numerator, np.float64),
                                   np.asarray(denominator, np.float64))
    return np.divide(num, den, out=np.full(num.shape, empty), where=den > 0)


def _denominator(spec: EstimateSpec, grades: np.ndarray, means: np.ndarray) -> np.ndarray:
    """R (its estimate) or the ideal DCG of a ratio measure, from its components' means."""
    return means[1] if spec.base == "R" else ideal_dcg(grades, means[1:], spec.cutoff)[0]


def measure_value(spec: EstimateSpec, grades: np.ndarray, means: np.ndarray) -> np.ndarray:
    """The measure as a function of its components' means."""
    if spec.base in _LINEAR:
        return means[0]
    return _ratio(means[0], _denominator(spec, grades, means))


@dataclass(frozen=True)
class TopicStats:
    """One topic's estimate for every run (axes ``[n_runs, *trials]``): the value and each
    component's mean, sample variance and range ``[C, n_runs, *trials]``; ``n`` draws;
    ``grades`` (nDCG's, decreasing)."""

    value: np.ndarray
    means: np.ndarray
    variances: np.ndarray
    bounds: np.ndarray
    n: int
    grades: np.ndarray


def _sample_var(a: np.ndarray) -> np.ndarray:
    """Unbiased sample variance over the last axis (NaN from a single draw)."""
    if a.shape[-1] < 2:
        return np.full(a.shape[:-1], np.nan)
    return np.var(a, axis=-1, ddof=1)


def topic_stats(spec: EstimateSpec, level: float, weights: np.ndarray, x: np.ndarray,
                labels: np.ndarray, q: np.ndarray, bounds: np.ndarray,
                grades: np.ndarray) -> TopicStats:
    """Eq. 4 for one topic, every run, and any leading trial axes of the draws ``x [..., n]``
    (``labels``, ``q`` alike); ``bounds``: :func:`term_bounds`."""
    terms = draw_terms(spec, level, weights, x, labels, q, grades)
    means = terms.mean(axis=-1)
    return TopicStats(measure_value(spec, grades, means), means, _sample_var(terms),
                      np.broadcast_to(bounds.reshape(bounds.shape + (1,) * (means.ndim - 2)),
                                      means.shape), x.shape[-1], grades)


def half_width(kind: str, var: np.ndarray, n: np.ndarray | int, bound: np.ndarray,
               weight: np.ndarray | float, delta: np.ndarray | float,
               unions: np.ndarray | int) -> np.ndarray:
    """Half-width at confidence 1 - delta of the ``kind`` (``hoeffding``, ``bernstein``)
    interval for sum_t weight_t mean_t over axis 0 (topics; ``unions``: how many topics'
    variances the Bernstein bound covers). See the module docstring for the formulas;
    topics with weight 0 do not count."""
    used = np.asarray(weight) > 0
    scale = np.where(used, np.asarray(weight) ** 2 / n, 0.0)
    with np.errstate(invalid="ignore"):
        if kind == "hoeffding":
            return np.sqrt(np.log(2.0 / delta) / 2.0 * np.where(used, scale * bound**2, 0.0)
                           .sum(axis=0))
        with np.errstate(divide="ignore"):
            slack = bound * np.sqrt(2.0 * np.log(3.0 * unions / delta) / (np.asarray(n) - 1.0))
        sigma = np.fmin(np.sqrt(var) + slack, bound / 2.0)
        log3 = np.log(3.0 / delta)
        spread = np.where(used, scale * sigma**2, 0.0).sum(axis=0)
        reach = np.where(used, np.asarray(weight) * bound / n, 0.0).max(axis=0)
    return np.sqrt(2.0 * log3 * spread) + log3 / 3.0 * reach


def _box(spec: EstimateSpec, s: TopicStats, kind: str, delta: np.ndarray | float
         ) -> tuple[np.ndarray, np.ndarray]:
    """A ratio's extreme values over the box of its components' intervals (each at delta)."""
    eps = half_width(kind, s.variances[None], s.n, s.bounds[None], 1.0, delta, 1)
    low, high = np.maximum(s.means - eps, 0.0), s.means + eps
    upper = _UPPER[spec.base]
    lo = _ratio(low[0], _denominator(spec, s.grades, high))
    hi = np.minimum(_ratio(high[0], _denominator(spec, s.grades, low), empty=upper), upper)
    return np.minimum(lo, upper), hi


def intervals(spec: EstimateSpec, stats: Sequence[TopicStats], present: np.ndarray,
              kind: str, ci: float) -> dict[str, np.ndarray]:
    """Per-topic values and ``kind`` (``hoeffding``, ``bernstein``) intervals
    ``[T, n_runs, *trials]`` and the mean over the topics each run retrieved for
    (``present [T, n_runs]``) with its interval ``[n_runs, *trials]``; keys
    ``value, lo, hi, mean, mean_lo, mean_hi``."""
    delta = 1.0 - ci
    values = np.stack([s.value for s in stats])
    extra = (1,) * (values.ndim - 2)
    mask = present.reshape(present.shape + extra)
    topics = np.maximum(mask.sum(axis=0), 1)
    weight = mask / topics
    mean = (weight * values).sum(axis=0)
    n = np.array([s.n for s in stats], dtype=np.float64).reshape((-1, 1, *extra))
    if spec.base in _LINEAR:
        var = np.stack([s.variances[0] for s in stats])
        bound = np.stack([s.bounds[0] for s in stats])
        half = half_width(kind, var[None], n[None], bound[None], 1.0, delta, 1)
        mean_half = half_width(kind, var, n, bound, weight, delta, topics)
        out = {k: np.clip(v, 0.0, _UPPER[spec.base]) for k, v in (
            ("lo", values - half), ("hi", values + half),
            ("mean_lo", mean - mean_half), ("mean_hi", mean + mean_half))}
    else:
        parts = np.array([len(s.means) for s in stats]).reshape((-1, 1, *extra))
        unions = np.maximum((mask * parts).sum(axis=0), 1)
        topic_box = [_box(spec, s, kind, delta / len(s.means)) for s in stats]
        mean_box = [_box(spec, s, kind, delta / unions) for s in stats]
        out = {"lo": np.stack([b[0] for b in topic_box]),
               "hi": np.stack([b[1] for b in topic_box]),
               "mean_lo": (weight * np.stack([b[0] for b in mean_box])).sum(axis=0),
               "mean_hi": (weight * np.stack([b[1] for b in mean_box])).sum(axis=0)}
    out["lo"], out["hi"] = np.fmin(out["lo"], values), np.fmax(out["hi"], values)
    out["mean_lo"] = np.fmin(out["mean_lo"], mean)
    out["mean_hi"] = np.fmax(out["mean_hi"], mean)
    return {"value": values, "mean": mean, **out}


# -- on a Sample ------------------------------------------------------------------------------


def _stats(views: list[TopicView], sample: Sample, spec: EstimateSpec, level: float,
           max_grade: float | None = None) -> list[TopicStats]:
    """Each topic's :class:`TopicStats` from the sample's draws, with the ranges of the
    terms (Q over the whole frame: ``round_probs``)."""
    if sample.round_probs is None:
        raise UsageError("hoeffding and bernstein intervals need Q of every frame document "
                         "(round_probs)")
    from sampleval.measures.exact import rank_weights

    top_grade = max_grade if max_grade is not None else float(
        gain(sample.judged()["relevance"].to_numpy()).max(initial=0.0))
    stats = []
    for view in views:
        ts = view.sample
        x, probs = topic_draws(sample, view)
        weights = at_rank(rank_weights(spec.base, spec.cutoff, view.frame_at_rank.shape[1]),
                          view.rank_of(np.arange(len(ts.docnos))))
        judged = gain(ts.labels[ts.judged])
        grades = np.unique(judged[judged > 0])[::-1]
        bounds = term_bounds(spec, weights, draw_distribution(sample, ts), grades, top_grade)
        stats.append(topic_stats(spec, level, weights, x, ts.labels[x], probs, bounds, grades))
    return stats


def estimate_is(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                spec: EstimateSpec, level: float, ci: float, *,
                interval: str | None = None, max_grade: float | None = None
                ) -> pd.DataFrame:
    """P@k, DCG, nDCG and R@k by importance sampling (eq. 4) from an ``importance`` sample, with
    ``interval`` intervals (``normal``, ``hoeffding``, ``bernstein``; see the module docstring).
    ``max_grade`` bounds DCG's gain for the Hoeffding and Bernstein ranges (default: the
    largest judged grade in the sample). ``interval`` unset: the estimator's ``interval``
    option (``DCG~is(interval=hoeffding)``; default ``normal``)."""
    if interval is None:
        interval = str(spec.option("interval"))
    if interval not in INTERVALS:
        raise UsageError(f"unknown interval {interval!r} (one of {', '.join(INTERVALS)})")
    if interval == "normal":
        return rows(run_names, views, spec, is_parts(run_names, views, sample, spec, level), ci)
    if sample.draws is None:
        raise UsageError(f"{spec.name} needs the draws of an importance sample (each with its Q)")
    present = np.array([v.pool.present for v in views]).reshape(len(views), len(run_names))
    result = intervals(spec, _stats(views, sample, spec, level, max_grade), present, interval,
                       ci)
    table = summarise(run_names, views, spec.name, result["value"], None, ci)
    t_idx, r_idx = np.nonzero(present)
    table["lo"] = np.concatenate([result["lo"][t_idx, r_idx], result["mean_lo"]])
    table["hi"] = np.concatenate([result["hi"][t_idx, r_idx], result["mean_hi"]])
    return table


register_family(EstimatorFamily(
    name="is", title="importance sampling (eq. 4) with CLT, Hoeffding or empirical-Bernstein "
                     "intervals",
    reference="Schnabel et al., ICTIR 2016, eq. 4, 16, 17",
    bases=tuple(Base(name, cutoff, options=("interval",)) for name, cutoff in
                (("P", "required"), ("DCG", "optional"), ("nDCG", "optional"),
                 ("R", "required"))),
    requires=("has_iid_draws",),
    compute=each_measure(estimate_is), parts=is_parts, differences=is_differences,
    options=(pick("interval", INTERVALS, DEFAULT_INTERVAL),)))
