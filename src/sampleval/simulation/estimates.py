"""One sample's estimates of every target, for all runs, as arrays over the truth's topics
and runs.

The sample is aligned with the pool of *all* runs (``estimation.engine.views.topic_views``) once per
score precision (NIST's family compares scores in double precision), and each estimator
family computes all the measures it is asked for at a relevance level in one call of its
``compute``: the high-level ``estimation.estimates.estimate`` would rebuild the Pool from the runs every
time. A target no family serves (designs such as ``pooled``) gets the exact measure on the
judged documents, unjudged ones not relevant. Beside each target comes its family's estimate
of R per topic (``NumRel~ht``, ``inum_rel``), or the judged relevant documents counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sampleval.core.relevance import judged_relevance
from sampleval.estimation.engine.views import COLUMNS, MEAN_TOPIC, TopicView, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import EstimateSpec
from sampleval.measures.exact import RankedGrades, compute

if TYPE_CHECKING:
    from sampleval.core.pool import Pool
    from sampleval.core.predictions import Predictions
    from sampleval.core.sample import Sample
    from sampleval.simulation.targets import Plan
    from sampleval.simulation.truth import Truth


@dataclass
class Estimates:
    """One target's estimates from one sample: ``[topics, runs]`` values and interval bounds
    (NaN where none), their means over topics (``[runs]``), which topics were estimated, and
    R-hat per topic."""

    value: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    mean: np.ndarray
    mean_lo: np.ndarray
    mean_hi: np.ndarray
    topics: np.ndarray
    num_rel: np.ndarray

    @classmethod
    def empty(cls, n_topics: int, n_runs: int) -> Estimates:
        def nan(*shape: int) -> np.ndarray:
            return np.full(shape, np.nan)

        return cls(nan(n_topics, n_runs), nan(n_topics, n_runs), nan(n_topics, n_runs),
                   nan(n_runs), nan(n_runs), nan(n_runs), np.zeros(n_topics, dtype=bool),
                   nan(n_topics))


def estimate(pools: dict[str, Pool], truth: Truth, sample: Sample, plans: Sequence[Plan],
             ci: float, predictions: Predictions | None = None) -> list[Estimates]:
    """Each plan's estimates from ``sample`` (see the module docstring); ``pools``: the pool
    of all runs by score precision (``"float32"``, ``"float64"``); ``predictions``: for the
    families that need them (``~ppi``)."""
    return _Sample(pools, truth, sample, ci, predictions).estimates(plans)


@dataclass(frozen=True)
class _Table:
    """A family's result rows as arrays: ``topic`` and ``run`` positions in the truth's
    arrays (topic -1: the mean over topics), ``measure`` names, ``value``, ``lo``, ``hi``;
    ``topics``: which of the truth's topics the family estimated."""

    measure: np.ndarray
    topic: np.ndarray
    run: np.ndarray
    value: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    topics: np.ndarray


class _Sample:
    """One sample, aligned once per score precision, each family computed once per level."""

    def __init__(self, pools: dict[str, Pool], truth: Truth, sample: Sample, ci: float,
                 predictions: Predictions | None = None):
        self.pools, self.truth, self.sample, self.ci = pools, truth, sample, ci
        self.predictions = predictions
        self.views: dict[tuple[str, bool], list[TopicView]] = {}
        self.topic_at = {t: i for i, t in enumerate(truth.topics)}
        self.run_at = {r: i for i, r in enumerate(truth.run_names)}

    def estimates(self, plans: Sequence[Plan]) -> list[Estimates]:
        wanted: dict[tuple[str, float], list[EstimateSpec]] = {}
        for plan in plans:
            for spec in (plan.spec, plan.r_spec):
                if spec is not None:
                    specs = wanted.setdefault((spec.family, plan.target.level), [])
                    specs += [] if spec in specs else [spec]
        tables = {key: self.compute(key[0], key[1], specs) for key, specs in wanted.items()}
        out = []
        for plan in plans:
            level = plan.target.level
            if plan.spec is None:
                est = self.exact(plan)
                est.num_rel = self.judged_relevant(level)
            else:
                est = self.of(tables[plan.spec.family, level], plan.spec)
                if plan.r_spec is not None:
                    r_hat = self.of(tables[plan.r_spec.family, level], plan.r_spec)
                    est.num_rel = row_means(r_hat.value)
            out.append(est)
        return out

    def aligned(self, precision: str, predicted: bool = False) -> list[TopicView]:
        """The sample aligned with the pool of ``precision``, with the predictions when
        ``predicted``."""
        key = (precision, predicted)
        if key not in self.views:
            self.views[key] = topic_views(self.pools[precision], self.sample,
                                          self.predictions if predicted else None)
        return self.views[key]

    def topic_index(self, views: list[TopicView]) -> np.ndarray:
        return np.array([self.topic_at[v.pool.topic] for v in views], dtype=np.int64)

    def empty(self) -> Estimates:
        return Estimates.empty(len(self.truth.topics), len(self.truth.run_names))

    def compute(self, family_name: str, level: float, specs: list[EstimateSpec]) -> _Table:
        """A family's estimates of ``specs`` at ``level``, as arrays."""
        family = FAMILIES[family_name]
        views = self.aligned(np.dtype(family.score_type).name, family.needs_predictions)
        topics = np.zeros(len(self.truth.topics), dtype=bool)
        topics[self.topic_index(views)] = True
        table = (family.compute(self.truth.run_names, views, self.sample, specs, level,
                                self.ci) if views else pd.DataFrame(columns=COLUMNS))
        topic_at = {**self.topic_at, MEAN_TOPIC: -1}

        def numbers(column: str) -> np.ndarray:
            return table[column].to_numpy(dtype=np.float64)

        return _Table(table["measure"].to_numpy(dtype=object),
                      np.array([topic_at[t] for t in table["query_id"].tolist()],
                               dtype=np.int64),
                      np.array([self.run_at[r] for r in table["run"].tolist()],
                               dtype=np.int64),
                      numbers("value"), numbers("lo"), numbers("hi"), topics)

    def of(self, table: _Table, spec: EstimateSpec) -> Estimates:
        """``spec``'s estimates in a family's table."""
        out = self.empty()
        out.topics = table.topics
        mine = table.measure == spec.name
        per_topic = mine & (table.topic >= 0)
        t_idx, r_idx = table.topic[per_topic], table.run[per_topic]
        overall = mine & (table.topic < 0)
        m_idx = table.run[overall]
        for target, mean, values in ((out.value, out.mean, table.value),
                                     (out.lo, out.mean_lo, table.lo),
                                     (out.hi, out.mean_hi, table.hi)):
            target[t_idx, r_idx] = values[per_topic]
            mean[m_idx] = values[overall]
        return out

    def exact(self, plan: Plan) -> Estimates:
        """The exact measure with the judged documents as qrels (unjudged: not relevant)."""
        out = self.empty()
        views = self.aligned("float32")
        for t, view in zip(self.topic_index(views), views, strict=True):
            judged = view.sample.labels[view.sample.judged]
            grades = RankedGrades(view.labels_at_rank(), view.pool.lengths, judged)
            out.value[t] = compute(plan.target.exact, grades, 1.0)
        out.topics[self.topic_index(views)] = True
        out.mean = mean_over_topics(out.value, self.truth.present & out.topics[:, None])
        return out

    def judged_relevant(self, level: float) -> np.ndarray:
        """R counted on the judged documents, per topic."""
        out = np.full(len(self.truth.topics), np.nan)
        views = self.aligned("float32")
        for t, view in zip(self.topic_index(views), views, strict=True):
            out[t] = judged_relevance(view.sample.labels[view.sample.judged], level).sum()
        return out


def mean_over_topics(values: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Each run's mean over the ``counted`` topics (``[topics, runs]`` mask); NaN for a run
    with none."""
    counts = counted.sum(axis=0)
    sums = np.where(counted, values, 0.0).sum(axis=0)
    return np.divide(sums, counts, out=np.full(values.shape[1], np.nan), where=counts > 0)


def row_means(values: np.ndarray) -> np.ndarray:
    """The mean of each row's finite values (NaN for a row without any)."""
    finite = np.isfinite(values)
    counts = finite.sum(axis=1)
    sums = np.where(finite, values, 0.0).sum(axis=1)
    return np.divide(sums, counts, out=np.full(len(counts), np.nan), where=counts > 0)
