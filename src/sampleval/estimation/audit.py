"""Auditing a machine judge with a human sample: which runs it mis-scores, by how much
(issue 31; ``sampleval audit``; docs/guide/audit.md).

The machine (an LLM judge such as UMBRELA) labels every document of the sample's frame; the
people judged a design-based sample of it. For a run r and a measure:

- ``machine`` M_r: the measure computed with the machine's labels as if they were qrels
  (exact, trec_eval's semantics, the runs cut at the estimation depth; documents outside
  the frame, and frame documents the machine did not label, are not relevant). Fractional
  predictions (probabilities) are read as relevant (1) at >= 0.5, else 0
  (:func:`machine_grades`);
- ``estimate`` E_r: the design-based estimate of the human measure from the sample (the
  estimator's per-topic values and variances, ``EstimatorFamily.parts``);
- ``bias`` B_r = M_r - E_r. M_r is fixed, so the interval is E_r's: B_r -+ (z sd(E_r) +
  |b_r|), sd(E_r)^2 = sum_t v_tr / T_r^2 (topics sampled independently), b_r the estimated
  remaining bias of a bias-aware interval (as :func:`sampleval.estimation.engine.views.summarise`).
  The interval is about the bias over *these* topics (the topics are fixed: the question is
  whether this collection's machine scores are off), so a census gives the exact bias with
  a zero-width interval;
- ``relative`` B_r - mean_j B_j, the run's bias beyond the judge's bias shared by all runs
  (a shared bias does not change the ranking; one that favours a run does). Its variance
  is (K S K')_rr, K = I - 11'/R, S the estimated covariance of the runs' means on the one
  shared sample (:func:`covariance_of_means`): with V_tj the variance of e_tj and D_tjk
  that of the difference e_tj - e_tk (``EstimatorFamily.differences``: the estimator
  applied to the difference of the two runs' weights), the per-topic covariance is
  C_tjk = (V_tj + V_tk - D_tjk) / 2 and S = sum_t (a_t a_t') o C_t, a_tj = 1/T_j where
  run j has topic t (topics sampled independently). Where V and D are the same quadratic
  form (Horvitz-Thompson with pi_ij, or a jackknife whose replicates leave out the same
  document for every run) this is that form's estimate for the contrast, exactly;
- ``p``: two-sided, from the relative bias's statistic max(|rel| - |b|, 0) / sd (an
  excess below :data:`ROUNDING` counts as 0) on the t
  distribution with T - 1 degrees of freedom (T the run's topics; the variance is a sum of
  T independent topics' estimated variances, some of them poorly estimated, and the normal
  reference flagged some run under a perfect judge far more often than Holm's 5%:
  docs/guide/audit.md), so that, rounding aside, p < 1 - ci exactly when the interval
  excludes 0;
  ``p_adjusted`` by Holm (or Benjamini-Hochberg, :func:`sampleval.estimation.compare.adjust`) over
  the runs; ``flagged``: p_adjusted < alpha;
- ``rank``, ``rank_lo``, ``rank_hi``: the estimated leaderboard's simultaneous rank
  intervals on these topics, from S (:func:`sampleval.estimation.ranks.
  design_rank_intervals`), and ``machine_rank``.

With ``control="machine"`` (:func:`controlled_estimates`) the machine's labels are control
variates: the difference estimator E_r = M_r - (A_r(m) - A_r(y)), A the estimator applied
to the one sample with the machine's labels m and with the people's y (Sarndal, Swensson &
Wretman, Model Assisted Survey Sampling, 1992, sec. 6.3, the difference estimator; the
prediction-powered estimate with lambda = 1, Angelopoulos et al., Science 2023). The bias
is then estimated by A_r(m) - A_r(y), which is 0 with no variance wherever the machine
agrees with the people on the judged documents, and S is the joint delete-one jackknife
of those differences. Any estimator family that gives ``parts`` and ``differences`` and
reads the predictions (``needs_predictions``: the prediction-powered family, once it gives
them) is audited by :func:`human_estimates` with the predictions handed to it. AP-hat is a
ratio, so E[A(m)] - M and E[A(y)] - AP, its biases under the two labellings, differ where
the machine changes the relevant documents' count and they are few: the difference
estimator is unbiased for linear measures only (experimental; docs/guide/audit.md).

Over the whole frame (:func:`agreement`): the confusion matrix of machine against human
labels and Cohen's kappa (binary at the relevance level, and over the grades), estimated
from the sample by Horvitz-Thompson totals of the judged documents' cells with their HT
covariance (pi_ij of the design), shares and kappa by the delta method (Cohen 1960, eq. 1).
:func:`leaderboard_tau`: Kendall's tau-b between the machine and estimated leaderboards.

Needs an estimator family giving per-topic variances and the variances of differences
(the ``~ht`` family: ``AP~ht``, the default, ``P@k~ht``, ``nDCG@k~ht`` ...; ``~ppi``, which
takes the machine's labels as its predictions: ``AP~ppi`` ...).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sampleval.errors import UsageError
from sampleval.estimation.estimates import SAMPLE_DEPTH

if TYPE_CHECKING:
    from collections.abc import Callable

    from scipy import stats

    from sampleval.core.pool import Pool
    from sampleval.core.predictions import Predictions
    from sampleval.core.run import Run
    from sampleval.core.sample import Sample
    from sampleval.estimation.engine.views import TopicView
    from sampleval.estimation.spec import EstimateSpec
    from sampleval.io.coerce import PredictionsLike, RunsLike, SampleLike

AUDIT_COLUMNS = ["run", "measure", "topics", "machine", "estimate", "bias", "lo", "hi",
                 "relative", "relative_lo", "relative_hi", "p", "p_adjusted", "flagged",
                 "machine_rank", "rank", "rank_lo", "rank_hi"]
AGREEMENT_COLUMNS = ["statistic", "machine", "human", "value", "lo", "hi"]
DEFAULT_MEASURE = "AP~ht"
CONTROLS = ("machine", "none")
"""``audit``'s ``control``: the machine's labels as control variates, or none."""


def audit(sample: SampleLike, runs: RunsLike, predictions: PredictionsLike,
          measures: Sequence[str] | None = None, *, depth: int | str | None = SAMPLE_DEPTH,
          level: float = 1, ci: float = 0.95, correction: str = "holm", alpha: float = 0.05,
          control: str = "none", rng: np.random.Generator | None = None) -> pd.DataFrame:
    """The audit of the machine judge ``predictions`` on ``runs`` from the human
    ``sample``: one row per run and measure (default ``AP~ht``), columns
    :data:`AUDIT_COLUMNS` (module docstring). ``depth`` as
    :func:`sampleval.estimation.estimates.estimate` takes it; ``control``: ``none`` (the default)
    estimates from the people's labels alone (:func:`human_estimates`, as ``sampleval
    estimate``), ``machine`` with the machine's labels as control variates where the
    measure takes them (:func:`controlled_estimates`: AP~ht; experimental, with a warning:
    AP's ratio biases under the two labellings do not cancel, so it is biased where
    relevant documents are rare, and its intervals cover too little where the machine's
    errors are few); ``rng`` draws the rank intervals' simulation (default seed 0)."""
    from sampleval.estimation.compare import check_test_options
    from sampleval.io.coerce import as_runs, as_sample

    sample = as_sample(sample)
    check_test_options(correction, alpha, ci)
    machine = machine_predictions(sample, predictions)
    loaded = as_runs(runs)
    if len(loaded) < 2:
        raise UsageError("an audit compares runs: give at least two")
    if control not in CONTROLS:
        raise UsageError(f"control must be one of {', '.join(CONTROLS)}, not {control!r}")
    rng = rng or np.random.default_rng(0)
    frames = [judge_rows(sample, sample_side(sample, loaded, m, machine, depth, level, ci,
                                             control, rng),
                         machine, level, ci, correction, alpha)
              for m in dict.fromkeys(measures or [DEFAULT_MEASURE])]
    return pd.concat(frames, ignore_index=True)[AUDIT_COLUMNS]


def sample_side(sample: Sample, runs: list[Run], measure: str, machine: Predictions,
                depth: int | str | None = SAMPLE_DEPTH, level: float = 1, ci: float = 0.95,
                control: str = "none", rng: np.random.Generator | None = None
                ) -> HumanEstimates:
    """The estimates the audit of ``machine`` on ``measure`` compares with: with the
    machine's labels as control variates when ``control`` is ``machine`` and the measure
    takes them (:func:`controlled_estimates`), else :func:`human_estimates` (which hands
    the predictions to the families that read them)."""
    from sampleval.estimation.family import FAMILIES
    from sampleval.estimation.setup import setup_for

    (spec,) = setup_for(sample, [measure], depth=depth, with_predictions=True,
                        warn=False).specs
    if control == "machine" and takes_control(spec):
        warnings.warn("control='machine': biased, and its intervals too narrow, where the "
                      "relevant documents or the machine's errors are rare (docs/guide/"
                      "audit.md, 'What a 5% sample can detect')", stacklevel=3)
        return controlled_estimates(sample, runs, measure, machine, depth, level, ci, rng)
    reads = FAMILIES[spec.family].needs_predictions
    return human_estimates(sample, runs, measure, depth, level, ci, rng,
                           machine if reads else None)


def machine_predictions(sample: Sample, predictions: PredictionsLike) -> Predictions:
    """The predictions, read on the sample's scale, checked to name some of its frame (a
    warning says how many frame documents lack one)."""
    from sampleval.estimation.estimates import _check_predictions, largest_grade
    from sampleval.io.coerce import as_predictions

    predicted = as_predictions(predictions, largest_grade(sample))
    _check_predictions(predicted, sample)
    return predicted


def machine_grades(predictions: Predictions, topic: str, docnos: np.ndarray,
                   fractional: bool | None = None) -> np.ndarray:
    """The machine's grade of each of ``docnos``: the predicted grade, or, when any of the
    predictions is fractional (probabilities; ``fractional``: already known), 1 where it is
    >= 0.5 and 0 elsewhere; 0 for documents without a prediction."""
    values = predictions.for_topic(topic, docnos)
    if _fractional(predictions) if fractional is None else fractional:
        return (values >= 0.5).astype(np.float64)
    return values


def _fractional(predictions: Predictions) -> bool:
    values = predictions.frame["prediction"].to_numpy(dtype=np.float64)
    return bool(np.any(values != np.round(values)))


def machine_qrels(sample: Sample, predictions: Predictions) -> pd.DataFrame:
    """Qrels (``query_id, doc_id, relevance``) of every frame document by its machine
    grade."""
    parts = []
    fractional = _fractional(predictions)
    for topic in sample.topics:
        docnos = sample.topic(topic).docnos
        parts.append(pd.DataFrame({"query_id": topic, "doc_id": docnos, "relevance":
                                   machine_grades(predictions, topic, docnos, fractional)}))
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class HumanEstimates:
    """What the audit takes from the human sample for one measure, whatever the judge:
    per-topic estimates ``values`` ``[topics, runs]`` (``present``: the run has the topic;
    ``weights``: its weight in the run's mean), the means ``estimate``, their interval's
    half-width ``half``, the estimated covariance of the means ``covariance`` ``[runs,
    runs]`` and the relative bias's estimated bias ``relative_bias`` (module docstring),
    the rank intervals ``ranks``, and a ``judge`` with its exact per-topic measures
    ``machine`` (``[topics, runs]``), when they are known: :func:`controlled_estimates`
    computes them, its estimates are that judge's own (None otherwise: :func:`judge_rows`
    computes them)."""

    spec: EstimateSpec
    pool: Pool
    topics: list[str]
    present: np.ndarray
    weights: np.ndarray
    values: np.ndarray
    estimate: np.ndarray
    half: np.ndarray
    covariance: np.ndarray
    relative_bias: np.ndarray
    ranks: pd.DataFrame
    judge: Predictions | None = None
    machine: np.ndarray | None = None

    @property
    def relative_variance(self) -> np.ndarray:
        """The variance of each run's relative bias, (K S K')_rr, K = I - 11'/R."""
        return contrast_variance(self.covariance)


def human_estimates(sample: Sample, runs: list[Run], measure: str,
                    depth: int | str | None = SAMPLE_DEPTH, level: float = 1,
                    ci: float = 0.95, rng: np.random.Generator | None = None,
                    predictions: Predictions | None = None) -> HumanEstimates:
    """The sample's side of the audit of ``measure`` (:class:`HumanEstimates`), from the
    estimator family's per-topic variances and pairwise-difference variances
    (``EstimatorFamily.parts``, ``differences``; any family that gives both: ``~ht``, ``~ppi``).
    ``predictions`` reach the families that read them (``needs_predictions``)."""
    from sampleval.estimation.engine.views import z_value
    from sampleval.estimation.family import FAMILIES
    from sampleval.measures.aggregation import aggregate_of, over_topics, topic_sums

    spec, pool, views = _aligned(sample, runs, measure, depth, predictions)
    level = spec.level_or(level)  # a measure's own level (AP(rel=2)~ht) wins
    family = FAMILIES[spec.family]
    if family.parts is None or family.differences is None:
        raise UsageError(f"{spec.name}: the audit needs an estimator that gives the variance "
                         "of each run's estimate and of the difference of two runs' (the ~ht "
                         "and ~ppi families: AP~ht, P@10~ht, AP~ppi ...)")
    names = pool.run_names
    n_runs = len(names)
    values, variances, biases = family.parts(names, views, sample, spec, level)
    variances = np.maximum(np.nan_to_num(variances), 0.0)
    topics, present, weights = _topic_weights(views, n_runs, aggregate_of(spec.base))
    half = z_value(ci) * np.sqrt(topic_sums(weights ** 2 * variances, present)) + np.abs(
        topic_sums(weights * biases, present))
    pairs = np.column_stack(np.triu_indices(n_runs, k=1))
    _, pair_var = family.differences(names, views, sample, spec, level, pairs)
    covariance = covariance_of_means(weights, variances, np.maximum(np.nan_to_num(pair_var),
                                                                    0.0), pairs)
    rel_b = (weights * biases - (weights * biases).sum(axis=1, keepdims=True) / n_runs
             ).sum(axis=0)
    estimate = over_topics(values, present, aggregate_of(spec.base))
    return HumanEstimates(spec, pool, topics, present, weights, values, estimate, half,
                          covariance, rel_b, _ranks(names, estimate, covariance, ci, rng))


def controlled_estimates(sample: Sample, runs: list[Run], measure: str, judge: Predictions,
                         depth: int | str | None = SAMPLE_DEPTH, level: float = 1,
                         ci: float = 0.95, rng: np.random.Generator | None = None
                         ) -> HumanEstimates:
    """The sample's side of the audit of ``measure`` with the machine's labels as control
    variates (the difference estimator; module docstring): per topic and run,
    E_tr = M_tr - (A_tr(m) - A_tr(y)), M_tr the exact measure with the machine's labels
    (:func:`_machine_per_topic`), A_tr(m) and A_tr(y) the estimator applied to the *one*
    sample with the machine's labels and with the people's. The bias's estimate is then
    A(m) - A(y), whose variance is the delete-one jackknife of that difference (each
    replicate leaves the same document out of both), covariances between runs included
    (:func:`_difference_jackknife`). Exact (zero variance) on a census and, on any sample,
    for a judge that agrees with the people on every judged document. AP~ht only (its
    replicates, :mod:`sampleval.estimation.families.ht`; ``bias`` taylor or none)."""
    from sampleval.measures.aggregation import aggregate_of, over_topics

    spec, pool, views = _aligned(sample, runs, measure, depth, None)
    level = spec.level_or(level)
    if not takes_control(spec):
        raise UsageError(f"{spec.name}: the machine's labels are control variates for AP~ht "
                         "(bias=taylor or none) only; audit it with control='none'")
    n_runs = len(pool.run_names)
    topics, present, weights = _topic_weights(views, n_runs, aggregate_of(spec.base))
    machine = machine_per_topic(sample, judge, pool, spec, topics, level)
    differences = np.zeros((len(views), n_runs))
    covariance = np.zeros((n_runs, n_runs))
    fractional = _fractional(judge)
    for t, view in enumerate(views):
        differences[t], cov = _difference_jackknife(view, sample, spec, judge, level,
                                                    fractional)
        covariance += weights[t][:, None] * cov * weights[t][None, :]
    values = machine - differences
    estimate = over_topics(values, present, aggregate_of(spec.base))
    from sampleval.estimation.engine.views import z_value

    half = z_value(ci) * np.sqrt(np.maximum(np.diagonal(covariance), 0.0))
    return HumanEstimates(spec, pool, topics, present, weights, values, estimate, half,
                          covariance, np.zeros(n_runs),
                          _ranks(pool.run_names, estimate, covariance, ci, rng), judge,
                          machine)


def takes_control(spec: EstimateSpec) -> bool:
    """Whether :func:`controlled_estimates` estimates ``spec`` (AP~ht, bias taylor or
    none)."""
    return (spec.family == "ht" and spec.base == "AP"
            and spec.option("bias") in ("taylor", "none"))


def _aligned(sample: Sample, runs: list[Run], measure: str, depth: int | str | None,
             predictions: Predictions | None) -> tuple[EstimateSpec, Pool, list[TopicView]]:
    """The estimator of ``measure``, the runs' pool cut at the estimation depth, and the
    topics the sample and the runs share."""
    from sampleval.core.pool import Pool
    from sampleval.estimation.engine.views import topic_views
    from sampleval.estimation.family import FAMILIES
    from sampleval.estimation.setup import setup_for

    setup = setup_for(sample, [measure], depth=depth,
                      with_predictions=predictions is not None)
    (spec,) = setup.specs
    pool = Pool.from_runs(runs, depth=setup.depth, topics=sample.topics,
                          score_type=FAMILIES[spec.family].score_type)
    views = topic_views(pool, sample, predictions)
    if not views:
        raise UsageError("the sample and the runs have no topic in common")
    return spec, pool, views


def _topic_weights(views: list[TopicView], n_runs: int, aggregate: str
                   ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The topics, ``present`` ``[topics, runs]`` (the run has the topic) and each topic's
    weight in a run's mean (1/T_r; 1 for a sum)."""
    present = np.array([v.pool.present for v in views], dtype=bool).reshape(len(views),
                                                                             n_runs)
    weights = (present / np.maximum(present.sum(axis=0), 1) if aggregate != "sum"
               else present.astype(np.float64))
    return [v.pool.topic for v in views], present, weights


def _ranks(names: tuple[str, ...], estimate: np.ndarray, covariance: np.ndarray, ci: float,
           rng: np.random.Generator | None) -> pd.DataFrame:
    from sampleval.estimation.ranks import design_rank_intervals

    return design_rank_intervals(pd.Series(estimate, index=list(names)), covariance, ci,
                                 rng or np.random.default_rng(0))


def covariance_of_means(a: np.ndarray, variances: np.ndarray, pair_var: np.ndarray,
                        pairs: np.ndarray) -> np.ndarray:
    """``[runs, runs]`` the covariance of the runs' means sum_t a_tj e_tj, topics
    independent, from the per-topic variances V_tj ``[T, R]`` and the variances of the
    pairs' differences D_tjk ``[T, P]``: per topic C_tjk = (V_tj + V_tk - D_tjk)/2 (module
    docstring), S = sum_t (a_t a_t') o C_t."""
    n_topics, n_runs = a.shape
    cov = np.zeros((n_topics, n_runs, n_runs))
    i, j = pairs[:, 0], pairs[:, 1]
    off = 0.5 * (variances[:, i] + variances[:, j] - pair_var)
    cov[:, i, j] = off
    cov[:, j, i] = off
    cov[:, np.arange(n_runs), np.arange(n_runs)] = variances
    return np.einsum("tj,tjk,tk->jk", a, cov, a)


def contrast_variance(covariance: np.ndarray) -> np.ndarray:
    """Per run r, the variance of its mean less the mean over runs, (K S K')_rr with
    K = I - 11'/R and S = ``covariance`` (clipped at 0)."""
    n = len(covariance)
    k = np.eye(n) - 1.0 / n
    return np.maximum(np.einsum("rj,jk,rk->r", k, covariance, k), 0.0)


def _difference_jackknife(view: TopicView, sample: Sample, spec: EstimateSpec,
                          judge: Predictions, level: float, fractional: bool
                          ) -> tuple[np.ndarray, np.ndarray]:
    """One topic's A(m) - A(y) per run (AP-hat with the machine's labels less AP-hat with
    the people's, both on the topic's judged documents; :func:`controlled_estimates`) and
    the ``[runs, runs]`` delete-one jackknife covariance of that vector: stratified
    (Wolter 2007, sec. 4.5) on stratified samples and censuses, from the engine's replicates
    of both labellings at once (:func:`~sampleval.estimation.engine.corrections.
    _taylor_replicates`; ``ap=paper``: the array path's), sum_k (1 - pi_k) (theta_(k) -
    theta)(theta_(k) - theta)' on the others (:func:`~sampleval.estimation.engine.
    replicates.general_replicates`), as AP~ht's ``variance=jackknife`` computes each run's
    variance alone."""
    from sampleval.core.inclusion import judged_design
    from sampleval.estimation.engine.corrections import _taylor_replicates
    from sampleval.estimation.engine.estimands import average_precision
    from sampleval.estimation.engine.replicates import (
        general_replicates,
        strata_covariance,
        stratified_replicates,
    )
    from sampleval.estimation.engine.views import relevance
    from sampleval.estimation.families.ht import ht_topic

    grades = relevance(machine_grades(judge, view.pool.topic, view.sample.docnos, fractional),
                       level)
    judged = np.flatnonzero(view.sample.judged)
    human = relevance(np.maximum(view.sample.labels[judged], 0.0), level)
    keep = (human != 0) | (grades[judged] != 0)  # the others change a replicate by the design
    index = judged[keep]
    n_runs = view.n_runs
    if not len(index):
        return np.zeros(n_runs), np.zeros((n_runs, n_runs))
    y, m = human[keep], grades[index]
    ranks = view.rank_of(index)
    paper, taylor = spec.option("ap") == "paper", spec.option("bias") == "taylor"
    if sample.design.has_strata and not paper:
        data = ht_topic(view, sample, grades)
        assert data.units.strata is not None
        stratum, sizes, n_sampled = data.units.strata
        both = np.stack([grades[data.units.index],
                         relevance(np.maximum(data.labels, 0.0), level)])  # m, then y
        value, reps, rest, _ = _taylor_replicates(
            spec, level, data, np.zeros((2, n_runs)), taylor,
            (np.tile(np.arange(n_runs), 2), np.repeat(both, n_runs, axis=0), n_sampled))
        return value[:n_runs] - value[n_runs:], strata_covariance(
            reps[:n_runs] - reps[n_runs:], rest[:n_runs] - rest[n_runs:], stratum, sizes,
            n_sampled.astype(np.float64))
    if sample.design.has_strata:
        sizes, n_sampled = view.sample.strata()
        strata = (view.sample.stratum[index], sizes, n_sampled)
        design = judged_design(sample, view.sample, index)
        value = (average_precision(m, design.pi, design.pi_joint, ranks, spec.cutoff, paper,
                                   taylor).value
                 - average_precision(y, design.pi, design.pi_joint, ranks, spec.cutoff,
                                     paper, taylor).value)
        reps_m, rest_m = stratified_replicates(m, strata, ranks, spec.cutoff, paper, taylor)
        reps_y, rest_y = stratified_replicates(y, strata, ranks, spec.cutoff, paper, taylor)
        return value, strata_covariance((reps_m - reps_y).T, (rest_m - rest_y).T,
                                        strata[0], sizes, n_sampled.astype(np.float64))
    design = judged_design(sample, view.sample, index)
    value_m, reps_m = general_replicates(m, design.pi, design.pi_joint, ranks, spec.cutoff,
                                         paper, taylor)
    value_y, reps_y = general_replicates(y, design.pi, design.pi_joint, ranks, spec.cutoff,
                                         paper, taylor)
    value = value_m - value_y
    moved = (reps_m - reps_y) - value[None, :]
    return value, moved.T @ ((1.0 - np.asarray(design.pi))[:, None] * moved)


ROUNDING = 1e-12
"""A relative bias beyond its estimated bias by no more than this is rounding (a measure in
[0, 1] computed two ways, as the machine's and as an estimate that equals it, agrees to
about 1e-16): its statistic is 0, not |rel| / 0 = inf where the variance is 0 too (AP~ppi
with predictions equal to the people's labels flagged runs under a perfect judge)."""

REFERENCES = ("t", "normal")
"""The relative bias's reference distributions: ``t`` with T - 1 degrees of freedom (T the
run's topics; the default), ``normal``."""


def judge_rows(sample: Sample, human: HumanEstimates, machine: Predictions,
               level: float = 1, ci: float = 0.95, correction: str = "holm",
               alpha: float = 0.05, reference: str = "t") -> pd.DataFrame:
    """The audit's rows (:data:`AUDIT_COLUMNS`) of the judge ``machine`` against the human
    estimates (from :func:`controlled_estimates`: of that same judge). ``reference``: the
    relative bias's test and interval, t with T - 1 degrees of freedom or normal
    (:data:`REFERENCES`)."""
    from scipy import stats

    from sampleval.estimation.compare import adjust
    from sampleval.measures.aggregation import aggregate_of, over_topics

    if reference not in REFERENCES:
        raise UsageError(f"the reference must be one of {', '.join(REFERENCES)}, not "
                         f"{reference!r}")
    if human.machine is not None and human.judge is not machine:
        raise UsageError("these estimates use another judge's labels as control variates")
    level = human.spec.level_or(level)
    exact = (human.machine if human.machine is not None else
             machine_per_topic(sample, machine, human.pool, human.spec, human.topics, level))
    machine_value = over_topics(exact, human.present, aggregate_of(human.spec.base))
    bias = machine_value - human.estimate
    relative = bias - bias.mean()
    rel_sd = np.sqrt(human.relative_variance)
    df = np.maximum(human.present.sum(axis=0) - 1, 1)
    dist = stats.t(df) if reference == "t" else stats.norm()
    rel_half = dist.ppf(0.5 + ci / 2.0) * rel_sd + np.abs(human.relative_bias)
    p = relative_p(relative, human.relative_bias, rel_sd, dist)
    adjusted = adjust(p, correction)
    return pd.DataFrame({
        "run": list(human.pool.run_names), "measure": human.spec.name,
        "topics": human.present.sum(axis=0), "machine": machine_value,
        "estimate": human.estimate, "bias": bias, "lo": bias - human.half,
        "hi": bias + human.half, "relative": relative, "relative_lo": relative - rel_half,
        "relative_hi": relative + rel_half, "p": p, "p_adjusted": adjusted,
        "flagged": adjusted < alpha,
        "machine_rank": 1 + (machine_value[None, :] > machine_value[:, None]).sum(axis=1),
        "rank": human.ranks["rank"].to_numpy(), "rank_lo": human.ranks["rank_lo"].to_numpy(),
        "rank_hi": human.ranks["rank_hi"].to_numpy()})


def relative_p(relative: np.ndarray, widen: np.ndarray, sd: np.ndarray,
               dist: stats.rv_continuous | stats.rv_frozen) -> np.ndarray:
    """The two-sided p of each relative bias: its excess over its estimated bias ``widen``,
    max(|rel| - |b|, 0) (0 below :data:`ROUNDING`), over ``sd`` on the reference ``dist``
    (a frozen scipy distribution); an excess with sd 0 has p = 0."""
    excess = np.maximum(np.abs(relative) - np.abs(widen), 0.0)
    excess = np.where(excess > ROUNDING, excess, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(sd > 0, excess / np.where(sd > 0, sd, 1.0),
                        np.where(excess > 0, np.inf, 0.0))
    return np.asarray(2.0 * dist.sf(stat), dtype=np.float64)


@dataclass(frozen=True)
class AuditOutcome:
    """How one audit (:func:`judge_rows`) did against the truth: ``favoured_flagged``
    whether it flagged the favoured run (NaN without one; the power, over trials),
    ``others_flagged`` the share of the other runs flagged (a false-alarm rate where the
    judge treats them alike), ``rank_covered`` whether the rank intervals held every run's
    true rank together (their simultaneous coverage, over trials)."""

    favoured_flagged: float
    others_flagged: float
    rank_covered: bool


NULL_RELATIVE = 0.005
"""A run whose exact relative bias is below this in absolute value counts as one the judge
treats like the rest (its flag is a false alarm)."""


def audit_outcome(rows: pd.DataFrame, true_means: pd.Series, favoured: str | None = None,
                  others: np.ndarray | None = None) -> AuditOutcome:
    """The :class:`AuditOutcome` of the audit ``rows`` given every run's true measure
    (``true_means``, by run); ``others``: a mask in ``rows``' run order of the runs counted
    as others (default: the runs but the favoured one whose exact relative bias, the
    ``machine`` column less the truth, less its mean over runs, is below
    :data:`NULL_RELATIVE` in absolute value: a judge that inflates one run deflates every
    other's *relative* bias by its share of the mean)."""
    from sampleval.estimation.ranks import covers_ranks

    names = rows["run"].astype(str).tolist()
    truth = true_means.reindex(names).to_numpy(dtype=np.float64)
    flagged = rows["flagged"].to_numpy(dtype=bool)
    favoured_mask = np.array([n == favoured for n in names], dtype=bool)
    exact = rows["machine"].to_numpy(dtype=np.float64) - truth
    counted = (~favoured_mask & (np.abs(exact - exact.mean()) < NULL_RELATIVE)
               if others is None else np.asarray(others, dtype=bool))
    return AuditOutcome(
        float(flagged[favoured_mask][0]) if favoured_mask.any() else math.nan,
        float(flagged[counted].mean()) if counted.any() else math.nan,
        covers_ranks(rows["rank_lo"].to_numpy(), rows["rank_hi"].to_numpy(), truth))


def machine_per_topic(sample: Sample, machine: Predictions, pool: Pool, spec: EstimateSpec,
                      topics: list[str], level: float) -> np.ndarray:
    """``[topics, runs]`` the measure with the machine's grades as qrels (exact)."""
    from sampleval.measures.evaluation import evaluate

    name = spec.base if spec.cutoff is None else f"{spec.base}@{spec.cutoff}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = evaluate(machine_qrels(sample, machine), pool, [name],
                        rel_level=math.ceil(level))  # grades are whole numbers
    rows = rows[rows["query_id"] != "all"]
    table = rows.pivot(index="query_id", columns="run", values="value")
    return table.reindex(index=topics, columns=list(pool.run_names)).fillna(0.0).to_numpy(
        dtype=np.float64)


def agreement(sample: SampleLike, predictions: PredictionsLike, *, level: float = 1,
              ci: float = 0.95) -> pd.DataFrame:
    """Machine against human labels over the whole frame, estimated from the sample: rows
    ``kappa`` (binary: grade >= ``level``), ``kappa_graded`` (unweighted, over the grades)
    and one ``confusion`` row per (machine grade, human grade) with its share of the frame;
    columns :data:`AGREEMENT_COLUMNS` (``lo``, ``hi``: normal ``ci`` intervals from the
    design's HT covariance, delta method; exact with zero width on a census). Negative
    human grades count as 0."""
    from sampleval.core.inclusion import judged_design
    from sampleval.estimation.engine.views import z_value
    from sampleval.io.coerce import as_sample

    sample = as_sample(sample)
    machine = machine_predictions(sample, predictions)
    cells: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for topic in sample.topics:
        ts = sample.topic(topic)
        index = np.flatnonzero(ts.judged)
        if not len(index):
            continue
        design = judged_design(sample, ts, index)
        human = np.maximum(ts.labels[index], 0.0)
        cells.append((machine_grades(machine, topic, ts.docnos[index]), human,
                      np.asarray(design.pi), np.asarray(design.pi_joint)))
    if not cells:
        raise UsageError("the sample has no judged document: nothing to compare the machine "
                         "with")
    grades = np.unique(np.concatenate([np.concatenate([m, h]) for m, h, _, _ in cells]))
    k = len(grades)
    totals = np.zeros(k * k)
    cov = np.zeros((k * k, k * k))
    for m, h, pi, joint in cells:
        cell = np.searchsorted(grades, m) * k + np.searchsorted(grades, h)
        y = np.zeros((len(m), k * k))
        y[np.arange(len(m)), cell] = 1.0 / pi
        totals += y.sum(axis=0)
        delta = (joint - np.outer(pi, pi)) / joint
        cov += y.T @ delta @ y
    relevant = grades >= level
    z = z_value(ci)
    rows = []
    for name, function in (("kappa", lambda t: _kappa(_collapse(t, k, relevant))),
                           ("kappa_graded", lambda t: _kappa(t.reshape(k, k)))):
        value, sd = _delta(function, totals, cov)
        rows.append((name, "", "", value, value - z * sd, value + z * sd))
    for i, mg in enumerate(grades):
        for j, hg in enumerate(grades):
            value, sd = _delta(partial(_share, at=i * k + j), totals, cov)
            rows.append(("confusion", f"{mg:g}", f"{hg:g}", value, value - z * sd,
                         value + z * sd))
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _share(totals: np.ndarray, at: int) -> float:
    return float(totals[at] / totals.sum())


def _collapse(totals: np.ndarray, k: int, relevant: np.ndarray) -> np.ndarray:
    """The ``[k, k]`` grade table as the 2 x 2 table of (not relevant, relevant)."""
    table = totals.reshape(k, k)
    bins = np.stack([~relevant, relevant]).astype(np.float64)  # [2, k]
    return bins @ table @ bins.T


def _kappa(table: np.ndarray) -> float:
    """Cohen's kappa of a contingency table (rows machine, columns human)."""
    p = table / table.sum()
    observed = float(np.trace(p))
    expected = float(p.sum(axis=1) @ p.sum(axis=0))
    return (observed - expected) / (1.0 - expected) if expected < 1 else 1.0


def _delta(function: Callable[[np.ndarray], float], totals: np.ndarray, cov: np.ndarray) -> tuple[float, float]:
    """``function(totals)`` and its delta-method standard deviation (central differences)."""
    value = float(function(totals))
    step = 1e-6 * max(float(totals.sum()), 1.0)
    grad = np.zeros(len(totals))
    for i in range(len(totals)):
        up, down = totals.copy(), totals.copy()
        up[i] += step
        down[i] = max(down[i] - step, 0.0)
        grad[i] = (function(up) - function(down)) / (up[i] - down[i])
    return value, float(np.sqrt(max(grad @ cov @ grad, 0.0)))


def leaderboard_tau(table: pd.DataFrame) -> dict[str, float]:
    """Per measure, Kendall's tau-b between the machine leaderboard and the estimated one
    (:func:`audit`'s ``machine`` and ``estimate`` columns)."""
    from scipy import stats

    return {str(m): float(stats.kendalltau(rows["machine"], rows["estimate"]).statistic)
            for m, rows in table.groupby("measure", sort=False)}


def bias_figure(table: pd.DataFrame, path: str) -> None:
    """Per run, its bias (machine - estimate) with its interval, runs ordered by estimate,
    one panel per measure; the mean bias over runs as a dashed line (a run's relative bias
    is its distance from it); flagged runs in red. Written to ``path`` (png, pdf, svg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sampleval.estimation.compare import save_figure

    measures = list(dict.fromkeys(table["measure"]))
    height = max(2.5, 0.16 * table["run"].nunique() + 1.2)
    fig, axes = plt.subplots(1, len(measures), figsize=(6.0 * len(measures), height),
                             squeeze=False)
    for ax, measure in zip(axes[0], measures, strict=True):
        rows = table[table["measure"] == measure].sort_values("estimate", kind="stable")
        y = np.arange(len(rows))
        flagged = rows["flagged"].to_numpy(dtype=bool)
        for mask, colour, label in ((~flagged, "tab:blue", "not flagged"),
                                    (flagged, "tab:red", "flagged")):
            if mask.any():
                part = rows[mask]
                ax.errorbar(part["bias"], y[mask], xerr=[part["bias"] - part["lo"],
                                                          part["hi"] - part["bias"]],
                            fmt="o", ms=3, color=colour, elinewidth=1, label=label)
        ax.axvline(float(rows["bias"].mean()), color="grey", ls="--", lw=1,
                   label="mean bias")
        ax.axvline(0.0, color="black", lw=0.6)
        ax.set_yticks(y, rows["run"], fontsize=6)
        ax.set_xlabel(f"machine - estimated {measure}")
        ax.set_title(f"{measure}: bias of the machine judge per run", fontsize=10)
        ax.legend(fontsize=7, loc="best")
    save_figure(fig, path)
