"""Estimating measures from a Sample: one entry point, :func:`estimate`, over every family
(the registry :data:`~sampleval.estimation.family.FAMILIES`; ``sampleval methods`` lists it).

The depth, the frame and the estimators come from
:func:`sampleval.estimation.setup.setup_for`, as in every command. Besides the estimate and its
interval, each row says how far it can be trusted: ``frame_share``, the share of the run's top
documents inside the sample's frame (outside counts as not relevant; below
:data:`MIN_FRAME_SHARE` warns; ``coverage``, its name before 0.2, for one release), and
``imputed``, the share of the value the estimator's smoothing constants make up
(:mod:`.imputation`; above one half is flagged). Both: docs/guide/estimating.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sampleval.core.graded import warn_level_above_grades
from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.engine.unseen import FORMS as UNSEEN_FORMS
from sampleval.estimation.engine.views import (
    COLUMNS,
    MEAN_TOPIC,
    UNBIASED_AP,
    TopicView,
    is_census,
    judged_relevant,
    topic_views,
)
from sampleval.estimation.family import FAMILIES, ImputedShare
from sampleval.estimation.imputation import MOSTLY
from sampleval.estimation.result import ALLOWED_FORMS, VALUE_FORMS
from sampleval.estimation.setup import (
    DEFAULT_MEASURES,
    SAMPLE_DEPTH,
    default_estimates,
    estimated_topics,
    setup_for,
)
from sampleval.estimation.spec import (
    EstimateSpec,
    estimator_for,
    measure_range,
    parse_estimate,
    takes_level,
)
from sampleval.measures.aggregation import topic_sums

if TYPE_CHECKING:
    from sampleval.io.coerce import MeasuresLike, PredictionsLike, RunsLike, SampleLike

RESULT_COLUMNS = [*COLUMNS, "frame_share", "imputed", "coverage", "estimator"]
"""``coverage``: the old name of ``frame_share``, given for one release (CHANGELOG)."""
MIN_FRAME_SHARE = 0.9
"""A run whose mean frame share is below this gets a warning."""
OUTSIDE_DOC = "docs/guide/estimating.md#estimates-outside-the-measures-range"
SHARE_DOC = "docs/guide/estimating.md#frame-share"
IMPUTED_DOC = "docs/guide/estimating.md#imputed-values"
UNREACHABLE_DOC = "docs/guide/estimating.md#unreachable-documents"

__all__ = ["DEFAULT_MEASURES", "MEAN_TOPIC", "MIN_FRAME_SHARE", "OUTSIDE_DOC", "RESULT_COLUMNS",
           "SAMPLE_DEPTH", "default_estimates", "estimate", "estimate_differences",
           "largest_grade", "outside_range"]


def largest_grade(sample: Sample) -> float:
    """The top of the judgments' scale: the sample's largest label, at least 1 (so that
    probabilities of relevance always fit)."""
    labels = sample.frame["relevance"].to_numpy(dtype=np.float64)
    return max(1.0, float(np.nanmax(labels, initial=0.0)))


def _check_predictions(predictions: Predictions, sample: Sample) -> None:
    """Predictions on the judgments' scale that name some of the sample's documents (a
    warning says how many of them lack one)."""
    predictions.check_scale(largest_grade(sample))
    predictions.require_coverage(sample.frame, "the sample's documents",
                                 "the sample's", "unbiased, but without the predictions' gain; ")


def estimate(sample: SampleLike, runs: RunsLike, measures: MeasuresLike | None = None, *,
             depth: int | str | None = SAMPLE_DEPTH, level: float = 1, ci: float = 0.95,
             predictions: PredictionsLike | None = None,
             progress: bool = False) -> pd.DataFrame:
    """Estimate ``measures`` (default: :func:`default_estimates`) for ``runs`` from
    ``sample``.

    ``sample``: a :class:`Sample` or a path :func:`sampleval.io.samples.load_sample` reads;
    ``runs``: a Run, a list of Runs, a DataFrame (ir_measures columns ``query_id, doc_id,
    score``, and ``run`` for several runs), a dict ``{query_id: {doc_id: score}}``, or paths
    of run files, directories or globs (:mod:`sampleval.io.coerce`). ``measures``: estimators'
    names (``AP~ht``, ``xinfAP``) or plain measures (``AP``, ``"nDCG@10"``,
    ``ir_measures.P@10``), each plain one by the estimator the sample's design prefers; one
    or a list. ``depth``: each run's top ``depth`` documents per topic; by default the depth
    the sample was pooled at (``sample.meta["pool_depth"]``; all documents when it records
    none), and another depth warns (None: all documents); the depth, frame and estimators
    are :func:`~sampleval.estimation.setup.setup_for`'s, as in every command.
    ``predictions`` (a :class:`~sampleval.core.predictions.Predictions`, a DataFrame
    ``query_id, doc_id, prediction`` or a predictions file) feed the families that use them
    (``P@10~ppi``); their values must not exceed the sample's largest grade (or 1).

    Returns columns ``run, query_id, measure, value, lo, hi, frame_share, imputed,
    coverage, estimator``: ``measure`` the estimator's name (its options not at their
    default), ``estimator`` its fully resolved name (every option at its value, defaults
    included: :attr:`~sampleval.estimation.spec.EstimateSpec.full_name`); ``lo``/``hi``
    the ``ci`` confidence interval (NaN where the estimator gives none); ``frame_share`` the
    share of the run's top documents inside the sample's frame (``coverage``: the same, its
    old name, for one release); ``imputed`` the share of the value that is the estimator's
    imputation. ``query_id == "all"`` holds each run's mean over the topics it retrieved for
    (the sum for counts such as NumRel~ht). Only topics the sample has are estimated.
    ``progress`` shows a bar on standard error.
    """
    from sampleval.io.coerce import as_predictions, as_runs, as_sample
    from sampleval.measures.names import as_measures
    from sampleval.progress import steps

    sample = estimated_topics(as_sample(sample))
    if not 0 < ci < 1:
        raise UsageError(f"the confidence level must lie in (0, 1), not {ci}")
    names = None if measures is None else [str(m) for m in as_measures(measures)]
    setup = setup_for(sample, names, depth=depth, with_predictions=predictions is not None)
    specs = setup.specs
    predicted = None if predictions is None else as_predictions(predictions,
                                                                largest_grade(sample))
    if predicted is not None and any(FAMILIES[s.family].needs_predictions for s in specs):
        _check_predictions(predicted, sample)
    loaded = as_runs(runs)
    run_names = tuple(r.name for r in loaded)
    pools: dict[type[np.floating], Pool] = {}
    frames = []
    views: list[TopicView] = []
    groups = list(dict.fromkeys((s.family, s.level_or(level)) for s in specs))
    warn_level_above_grades([s.level_or(level) for s in specs if takes_level(s.base, s.cutoff)],
                            sample.frame["relevance"].to_numpy(), sample.origin or "the sample")
    with steps(len(groups), "estimating", progress) as step:
        for name, at in groups:  # each family once per relevance level
            family = FAMILIES[name]
            mine: list[EstimateSpec] = [s for s in specs
                                        if (s.family, s.level_or(level)) == (name, at)]
            step(f"estimating {', '.join(s.name for s in mine)}")
            if family.score_type not in pools:
                pools[family.score_type] = Pool.from_runs(
                    loaded, depth=setup.depth, topics=sample.topics,
                    score_type=family.score_type)
            views = topic_views(pools[family.score_type], sample,
                                predicted if family.needs_predictions else None)
            if not views:
                raise UsageError("the sample and the runs have no topic in common")
            rows = family.compute(run_names, views, sample, mine, at, ci)
            frames.append(_with_imputed(rows, family.imputed, views, sample, mine, at,
                                        run_names))
    order = {s.name: i for i, s in enumerate(specs)}
    out = pd.concat(frames, ignore_index=True)
    out = out.sort_values("measure", key=lambda m: m.map(order), kind="stable").reset_index(
        drop=True)
    per_topic = frame_share(views, setup.share_depth, setup.strata_bound)
    present = _present(views, len(run_names))
    overall = topic_sums(per_topic, present) / np.maximum(present.sum(axis=0), 1)
    out["frame_share"] = _cells(out, views, run_names, per_topic, overall)
    out["coverage"] = out["frame_share"]
    out["estimator"] = out["measure"].map({s.name: s.full_name for s in specs})
    _warn_frame_share(run_names, overall, setup.share_depth)
    _warn_imputed(out, sample.design)
    _warn_out_of_range(out)
    _warn_few_relevant(specs, views, sample, level)
    _warn_unreachable(views, sample)
    return out[RESULT_COLUMNS]


def estimate_differences(sample: SampleLike, runs: RunsLike, measure: str,
                         pairs: Sequence[tuple[str, str]], *,
                         depth: int | str | None = SAMPLE_DEPTH, level: float = 1,
                         predictions: PredictionsLike | None = None) -> pd.DataFrame | None:
    """The estimated sampling variance of each per-topic difference ``measure``_a -
    ``measure``_b, for each pair (a, b) of run names: a ``[topics, pairs]`` frame indexed by
    query_id, one column per pair (``"a - b"``), or None where the estimator's family
    gives no variance of a difference (``EstimatorFamily.differences``). The depth and the
    estimator are :func:`~sampleval.estimation.setup.setup_for`'s, as :func:`estimate`'s;
    ``predictions`` feed the families that read them (``AP~ppi``), as :func:`estimate`'s."""
    from sampleval.io.coerce import as_predictions, as_runs, as_sample

    sample = estimated_topics(as_sample(sample), warn=False)
    setup = setup_for(sample, [measure], depth=depth, warn=False,  # estimate() has warned
                      with_predictions=predictions is not None)
    (spec,) = setup.specs
    family = FAMILIES[spec.family]
    if family.differences is None or not pairs:
        return None
    loaded = as_runs(runs)
    run_names = tuple(r.name for r in loaded)
    index = {name: i for i, name in enumerate(run_names)}
    missing = [n for pair in pairs for n in pair if n not in index]
    if missing:
        raise UsageError(f"no run named {missing[0]!r} among the runs given")
    pool = Pool.from_runs(loaded, depth=setup.depth, topics=sample.topics,
                          score_type=family.score_type)
    predicted = (None if predictions is None or not family.needs_predictions
                 else as_predictions(predictions, largest_grade(sample)))
    views = topic_views(pool, sample, predicted)
    at = np.array([[index[a], index[b]] for a, b in pairs], dtype=np.int64)
    _, variances = family.differences(run_names, views, sample, spec, spec.level_or(level),
                                      at)
    return pd.DataFrame(variances, index=pd.Index([v.pool.topic for v in views],
                                                  name="query_id"),
                        columns=[f"{a} - {b}" for a, b in pairs])


def frame_share(views: list[TopicView], depth: int | None,
                   strata_bound: bool = False) -> np.ndarray:
    """``[topics, runs]``: the share of each run's top ``min(depth, retrieved)`` documents
    (all of them when ``depth`` is None) that lie inside the sample's frame (0 where the run
    retrieved nothing). ``strata_bound``: a document of a stratum with no judged document
    (stratum code -1) is outside the frame, as every estimator counts it."""
    out = np.zeros((len(views), views[0].n_runs if views else 0))
    for t, view in enumerate(views):
        top = view.frame_at_rank if depth is None else view.frame_at_rank[:, :depth]
        length = view.pool.lengths if depth is None else np.minimum(view.pool.lengths, depth)
        within = top >= 0
        if strata_bound:
            within &= np.append(view.sample.stratum, -1)[top] >= 0
        inside = within.sum(axis=1)
        out[t] = np.divide(inside, length, out=np.zeros(len(length)), where=length > 0)
    return out


def _present(views: list[TopicView], n_runs: int) -> np.ndarray:
    return np.array([v.pool.present for v in views], dtype=bool).reshape(len(views), n_runs)


def _cells(rows: pd.DataFrame, views: list[TopicView], run_names: tuple[str, ...],
           per_topic: np.ndarray, overall: np.ndarray) -> np.ndarray:
    """For each result row, its run's value of a ``[topics, runs]`` quantity at the row's
    topic (``overall[run]`` on the rows of topic ``all``)."""
    topic_index = {v.pool.topic: t for t, v in enumerate(views)}
    run_index = {name: r for r, name in enumerate(run_names)}
    r = rows["run"].map(run_index).to_numpy(dtype=np.int64)
    t = rows["query_id"].map(lambda q: topic_index.get(q, -1)).to_numpy(dtype=np.int64)
    table = np.vstack([per_topic, overall[None, :]]) if len(run_names) else np.zeros((1, 0))
    return table[np.where(t >= 0, t, len(views)), r] if len(rows) else np.zeros(0)


def _with_imputed(rows: pd.DataFrame, share: ImputedShare | None, views: list[TopicView],
                  sample: Sample, specs: list[EstimateSpec], level: float,
                  run_names: tuple[str, ...]) -> pd.DataFrame:
    """``rows`` with the ``imputed`` column: each value's imputed share (0 for a family
    that imputes nothing); a mean's (or sum's) share is the topics' shares weighted by
    their values."""
    rows = rows.assign(imputed=0.0)
    if share is None:
        return rows
    topics = [v.pool.topic for v in views]
    present = _present(views, len(run_names))
    for spec in specs:
        mine = (rows["measure"] == spec.name).to_numpy()
        values = (rows[mine & (rows["query_id"] != MEAN_TOPIC).to_numpy()]
                  .pivot(index="query_id", columns="run", values="value")
                  .reindex(index=topics, columns=list(run_names)).fillna(0.0).to_numpy())
        shares = share(views, sample, spec, level, values)
        weight = topic_sums(values, present)
        overall = np.divide(topic_sums(shares * values, present), weight,
                            out=np.zeros(len(run_names)), where=weight > 0)
        rows.loc[mine, "imputed"] = _cells(rows[mine], views, run_names, shares, overall)
    return rows


def _warn_frame_share(run_names: tuple[str, ...], overall: np.ndarray,
                      depth: int | None) -> None:
    """One line naming how many runs lie mostly outside the frame, and the lowest."""
    low = np.flatnonzero(overall < MIN_FRAME_SHARE)
    if not len(low):
        return
    worst = int(low[np.argmin(overall[low])])
    top = "documents" if depth is None else f"top {depth}"
    warnings.warn(f"{len(low)} of {len(run_names)} runs have under {MIN_FRAME_SHARE:.0%} of "
                  f"their {top} in the sample's frame (lowest {run_names[worst]} "
                  f"{overall[worst]:.2f}): estimated low ({SHARE_DOC})", stacklevel=3)


def _warn_imputed(results: pd.DataFrame, design: str) -> None:
    """One line per measure whose mean is mostly imputed for some runs."""
    means = results[results["query_id"] == MEAN_TOPIC]
    for measure, rows in means.groupby("measure", sort=False):
        flagged = int((rows["imputed"] > MOSTLY).sum())
        if not flagged:
            continue
        spec = parse_estimate(str(measure))
        better = estimator_for(spec.base, spec.cutoff, design)
        hint = f"; {better.name} imputes nothing" if better is not None and better.family != (
            spec.family) and FAMILIES[better.family].imputed is None else ""
        warnings.warn(f"{measure}: mostly imputed, not measured, for {flagged} of {len(rows)} "
                      f"runs (marked *){hint} ({IMPUTED_DOC})", stacklevel=3)


def _warn_few_relevant(specs: Sequence[EstimateSpec], views: list[TopicView], sample: Sample,
                       level: float) -> None:
    """Name, in one line, the topics whose sample holds fewer than :data:`UNBIASED_AP`
    relevant documents when AP is estimated from a sample that is not a census: AP-hat
    divides by an estimated R, and with so few relevant judged it runs low (issue 29;
    the bias by relevant judged: docs/research/calibration.md). The line also names the
    ``few`` value(s) the AP estimates resolve to, whose floor holds these topics' intervals;
    ``pooled``/``jeffreys``/``completed`` add the term for the relevant documents no stratum
    has shown (:mod:`sampleval.estimation.engine.unseen`; calibration.md sections 1 and 11),
    ``completed`` the upper allowance too (section 13); under ``posterior`` alone the line says
    the estimates are the completion model's (section 15)."""
    aps = [s for s in specs if s.base == "AP"]
    if sample.design.is_deterministic or not aps:
        return
    for at in dict.fromkeys(s.level_or(level) for s in aps):
        _warn_few_at(at, [s for s in aps if s.level_or(level) == at], views, sample)


def _warn_few_at(level: float, aps: list[EstimateSpec], views: list[TopicView],
                 sample: Sample) -> None:
    """:func:`_warn_few_relevant` for the AP estimates at one relevance level."""
    few = [v.pool.topic for v in views
           if judged_relevant(v.sample, level) < UNBIASED_AP and not is_census(v.sample)]
    if few:
        listed = ", ".join(few[:10]) + (f" and {len(few) - 10} more" if len(few) > 10 else "")
        forms = list(dict.fromkeys(s.option("few") for s in aps if "few" in {
            p.name for p in FAMILIES[s.family].params(s.base)}))
        unseen = (" (the unseen relevant documents term, and an upper allowance for the "
                  "topics that found nothing)" if set(forms) & set(ALLOWED_FORMS) else
                  " (the unseen relevant documents term)" if set(forms) & set(UNSEEN_FORMS)
                  else "")
        held = (f"; their intervals rest on {', '.join(f'few={f}' for f in forms)}{unseen}"
                if forms else "")
        low = ("their AP estimates run low" if set(forms) - set(VALUE_FORMS) else
               "their AP estimates are the completion model's posterior")
        measure = "AP" if all(s.level is None for s in aps) else f"AP(rel={level:g})"
        warnings.warn(f"{measure}: {len(few)} of {len(views)} topics have fewer than "
                      f"{UNBIASED_AP} relevant documents judged ({listed}); {low}"
                      f"{held} (docs/research/calibration.md)", stacklevel=4)


def _warn_unreachable(views: list[TopicView], sample: Sample) -> None:
    """One line giving the share of the estimated topics' frame documents whose inclusion
    probability is 0 (:meth:`~sampleval.core.sample.Sample.unreachable`): no estimator can
    see a relevant document among them (issue 29)."""
    counts = sample.unreachable([v.pool.topic for v in views])
    unreachable, pooled = counts.sum(axis=0)
    if unreachable:
        warnings.warn(f"{unreachable / pooled:.1%} of the sample's frame ({unreachable} of "
                      f"{pooled} documents, in {int((counts[:, 0] > 0).sum())} of "
                      f"{len(views)} topics) was unreachable (inclusion probability 0: in "
                      "no sampled stratum) and counts as not relevant in every estimate "
                      f"({UNREACHABLE_DOC})", stacklevel=3)


def _warn_out_of_range(results: pd.DataFrame) -> None:
    """One line per measure with per-topic estimates outside its range (AP above 1): a
    design-based estimate from few judgments is not bounded by the measure's range; they are
    kept (the mean is unbiased only with them) and marked ``!`` in the table."""
    topics = results[results["query_id"] != MEAN_TOPIC]
    for measure, rows in topics.groupby("measure", sort=False):
        outside = int(outside_range(str(measure), rows["value"].to_numpy(np.float64)).sum())
        if outside:
            floor, ceiling = measure_range(str(measure))
            warnings.warn(f"{measure}: {outside} of {len(rows)} per-topic estimates outside "
                          f"[{floor:g}, {ceiling:g}], kept and marked ! ({OUTSIDE_DOC})",
                          stacklevel=3)


def outside_range(measure: str, values: np.ndarray) -> np.ndarray:
    """Which ``values`` of ``measure`` lie outside what it can be (:func:`measure_range`)."""
    floor, ceiling = measure_range(measure)
    return np.maximum(floor - values, values - ceiling) > 1e-12
