"""One cell's trials: select with the method, estimate every target, compare with the truth.

A :class:`Setup` holds what every trial shares (the pools of all runs, the truth, the qrels
that answer for the assessor, the splits, each method's plans); it is built once and sent once
to each worker, which keeps it in a :class:`Worker` with what it derives from it (the oracle,
each split's selection pool). A trial then

1. selects from the pool of the split's contributing runs (``Pool.subset``) with the trial's
   own generator (:mod:`.seeds`), judged by the oracle;
2. aligns the sample with the pool of *all* runs (each estimator family's score precision)
   and calls the family's ``compute`` directly (``estimators.estimate`` would rebuild the
   Pool from the runs every time), or, for a design no family accepts, computes the exact
   measure on the judged documents;
3. returns tidy rows (:data:`ROW_COLUMNS`: per topic and the mean over topics, topic
   ``all``) and one row of per-sample statistics per target (:data:`STAT_COLUMNS`, from
   :mod:`.metaeval`): the sample's rms over runs (all, contributing, left out), Kendall's
   tau and tau_AP of the mean scores, Voorhees' pair outcomes on the per-topic scores, the
   correlation of estimated and true R per topic, interval coverage counts, and the time the
   trial took.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sampleval.estimators.base import MEAN_TOPIC, TopicView, topic_views
from sampleval.estimators.family import FAMILIES
from sampleval.estimators.names import EstimateSpec
from sampleval.experiments import metaeval
from sampleval.experiments.seeds import trial_rng
from sampleval.measures.exact import RankedGrades, compute, relevance
from sampleval.selection.base import Oracle, qrels_oracle, simulate

if TYPE_CHECKING:
    from sampleval.core.pool import Pool
    from sampleval.core.qrels import Qrels
    from sampleval.core.sample import Sample
    from sampleval.experiments.grid import Cell
    from sampleval.experiments.splits import Split
    from sampleval.experiments.targets import Plan
    from sampleval.experiments.truth import Truth

ROW_COLUMNS = ["method", "rate", "budget", "trial", "split", "measure", "estimator", "run",
               "topic", "estimate", "lo", "hi", "truth", "truth_qrels", "judged",
               "contributed", "num_rel", "num_rel_estimate"]
"""trials.parquet: ``rate``/``budget``: the cell's budget as given (the other NaN);
``judged``: documents judged for the topic; ``num_rel``: relevant documents in the topic's
pool, ``num_rel_estimate``: its estimate beside the target's (NaN where none); on topic
``all`` rows, means over the topics."""

STAT_COLUMNS = ["method", "rate", "budget", "trial", "split", "measure", "estimator", "rms",
                "rms_contributed", "rms_left_out", "tau", "tau_ap", "sig_true_positive",
                "sig_true_negative", "sig_miss", "sig_false_alarm", "sig_inversion",
                "sig_accuracy", "r_corr", "covered", "intervals", "covered_topic",
                "intervals_topic", "judged", "seconds"]
"""trial_stats.parquet: one row per (cell, trial, target), see the module docstring."""

CATEGORIES = ("method", "measure", "estimator", "run", "topic")


@dataclass(frozen=True)
class Setup:
    """What every trial of a simulation shares (see the module docstring). ``pools``: the
    depth-K pool of all runs by score precision (``"float32"``, ``"float64"``)."""

    pools: dict[str, Pool]
    truth: Truth
    qrels: Qrels
    splits: tuple[Split, ...]
    plans: dict[str, tuple[Plan, ...]]
    seed: int
    per_topic: bool = True
    ci: float = 0.95
    alpha: float = 0.05


@dataclass(frozen=True)
class Task:
    """A cell and the trials of it to run."""

    cell: Cell
    trials: tuple[int, ...]


@dataclass(frozen=True)
class CellResult:
    """A task's output: its rows and its per-trial statistics."""

    task: Task
    rows: pd.DataFrame
    stats: pd.DataFrame


@dataclass
class Estimates:
    """One target's estimates in one trial: ``[topics, runs]`` values and interval bounds,
    their means over topics (``[runs]``), the estimated topics, and R-hat per topic."""

    value: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    mean: np.ndarray
    mean_lo: np.ndarray
    mean_hi: np.ndarray
    topics: np.ndarray
    num_rel: np.ndarray


@dataclass
class Worker:
    """A :class:`Setup` in one process, with the oracle and the selection pools made once."""

    setup: Setup
    _oracle: Oracle | None = field(default=None, init=False, repr=False)
    _pools: dict[int, Pool] = field(default_factory=dict, init=False, repr=False)
    _category_lists: dict[str, list[str]] | None = field(default=None, init=False,
                                                         repr=False)

    @property
    def oracle(self) -> Oracle:
        if self._oracle is None:
            self._oracle = qrels_oracle(self.setup.qrels)
        return self._oracle

    @property
    def pool(self) -> Pool:
        """The pool of all runs, in single precision (trec_eval's)."""
        return self.setup.pools["float32"]

    def selection_pool(self, split: int) -> Pool:
        """The pool of the split's contributing runs."""
        if split not in self._pools:
            chosen = self.setup.splits[split].mask()
            names = [n for n, c in zip(self.pool.run_names, chosen, strict=True) if c]
            self._pools[split] = self.pool if chosen.all() else self.pool.subset(names)
        return self._pools[split]

    def run(self, task: Task) -> CellResult:
        """Every trial of the task, rows and statistics in trial order.

        BLAS runs on one thread meanwhile: the trials' matrices are small, and several
        workers (or other jobs) sharing the cores make a threaded BLAS wait on itself (one
        of active sampling's matrix products took 50 ms instead of 1 ms on a loaded machine).
        """
        from threadpoolctl import threadpool_limits

        rows: list[pd.DataFrame] = []
        stats: list[dict[str, Any]] = []
        with threadpool_limits(limits=1, user_api="blas"):
            for trial in task.trials:
                trial_rows, trial_stats = self.trial(task.cell, trial)
                rows += trial_rows
                stats += trial_stats
        return CellResult(task, pd.concat(rows, ignore_index=True),
                          _typed(pd.DataFrame(stats), STAT_COLUMNS))

    def trial(self, cell: Cell, trial: int) -> tuple[list[pd.DataFrame], list[dict[str, Any]]]:
        """One trial of ``cell``: its rows (one frame per target) and statistics."""
        setup, truth = self.setup, self.setup.truth
        start = time.perf_counter()
        rng = trial_rng(setup.seed, cell.method.text, cell.budget.label, trial, cell.split)
        selector = cell.method.make(self.selection_pool(cell.split), cell.budget.budget(), rng)
        sample = simulate(selector, self.oracle).sample()
        views: dict[str, list[TopicView]] = {}
        r_cache: dict[tuple[str, float], np.ndarray] = {}
        estimates = [self.estimate(plan, sample, views, r_cache)
                     for plan in setup.plans[cell.method.text]]
        seconds = time.perf_counter() - start
        judged = _judged_per_topic(sample, truth.topics)
        contributing = setup.splits[cell.split].mask()
        keys: dict[str, Any] = {"method": cell.method.text, "rate": cell.budget.rate,
                "budget": cell.budget.count, "trial": trial, "split": cell.split}
        frames, stats = [], []
        for plan, est in zip(setup.plans[cell.method.text], estimates, strict=True):
            name = str(plan.target.exact)
            true, official = truth.pool[name], truth.qrels[name]
            true_r = truth.num_rel[plan.target.level]
            counted = truth.present & est.topics[:, None]
            true_mean = _mean_over_topics(true, counted)
            labels = {**keys, "measure": plan.target.name, "estimator": plan.estimator}
            frames.append(self._rows(labels, est, true, official, true_mean,
                                     _mean_over_topics(official, counted), judged, true_r,
                                     contributing))
            stats.append({**labels, **self._statistics(est, true, true_mean, true_r,
                                                       contributing),
                          "judged": float(judged.mean()), "seconds": seconds})
        return frames, stats

    # -- estimation ----------------------------------------------------------------------------

    def estimate(self, plan: Plan, sample: Sample, views: dict[str, list[TopicView]],
                 r_cache: dict[tuple[str, float], np.ndarray]) -> Estimates:
        """``plan``'s estimates from ``sample`` (``views``, ``r_cache``: shared by the
        trial's targets)."""
        level = plan.target.level
        if plan.spec is None:
            out = self._exact(plan, sample, self._views(sample, "float32", views))
        else:
            out = self._family(plan.spec, level, sample, views)
        key = ("exact" if plan.r_exact else plan.r_spec.family if plan.r_spec else "", level)
        if key[0] and key not in r_cache:
            if plan.r_exact:
                r_cache[key] = self._judged_relevant(self._views(sample, "float32", views),
                                                     level)
            else:
                assert plan.r_spec is not None
                r_cache[key] = _row_means(self._family(plan.r_spec, level, sample,
                                                       views).value)
        out.num_rel = r_cache.get(key, np.full(len(self.setup.truth.topics), np.nan))
        return out

    def _views(self, sample: Sample, precision: str, cache: dict[str, list[TopicView]]
               ) -> list[TopicView]:
        if precision not in cache:
            cache[precision] = topic_views(self.setup.pools[precision], sample)
        return cache[precision]

    def _topic_index(self, views: list[TopicView]) -> np.ndarray:
        position = {t: i for i, t in enumerate(self.setup.truth.topics)}
        return np.array([position[v.pool.topic] for v in views], dtype=np.int64)

    def _empty(self) -> Estimates:
        shape = (len(self.setup.truth.topics), len(self.setup.truth.run_names))
        nan_topics, nan_runs = np.full(shape, np.nan), np.full(shape[1], np.nan)
        return Estimates(nan_topics, nan_topics.copy(), nan_topics.copy(), nan_runs,
                         nan_runs.copy(), nan_runs.copy(), np.zeros(shape[0], dtype=bool),
                         np.full(shape[0], np.nan))

    def _family(self, spec: EstimateSpec, level: float, sample: Sample,
                views: dict[str, list[TopicView]]) -> Estimates:
        family = FAMILIES[spec.family]
        aligned = self._views(sample, np.dtype(family.score_type).name, views)
        out = self._empty()
        if not aligned:
            return out
        table = family.compute(self.pool.run_names, aligned, sample, [spec], level,
                               self.setup.ci)
        runs = {r: i for i, r in enumerate(self.pool.run_names)}
        topics = {t: i for i, t in enumerate(self.setup.truth.topics)}
        mean = table["query_id"].to_numpy() == MEAN_TOPIC
        per_topic = table[~mean]
        t_idx = per_topic["query_id"].map(topics).to_numpy()
        r_idx = per_topic["run"].map(runs).to_numpy()
        for target, column in ((out.value, "value"), (out.lo, "lo"), (out.hi, "hi")):
            target[t_idx, r_idx] = per_topic[column].to_numpy(dtype=np.float64)
        overall = table[mean]
        m_idx = overall["run"].map(runs).to_numpy()
        for target, column in ((out.mean, "value"), (out.mean_lo, "lo"),
                               (out.mean_hi, "hi")):
            target[m_idx] = overall[column].to_numpy(dtype=np.float64)
        out.topics[self._topic_index(aligned)] = True
        return out

    def _exact(self, plan: Plan, sample: Sample, aligned: list[TopicView]) -> Estimates:
        """The exact measure with the judged documents as qrels (unjudged: not relevant)."""
        out = self._empty()
        for t, view in zip(self._topic_index(aligned), aligned, strict=True):
            judged = view.sample.labels[view.sample.judged]
            grades = RankedGrades(view.labels_at_rank(), view.pool.lengths, judged)
            out.value[t] = compute(plan.target.exact, grades, 1.0)
        out.topics[self._topic_index(aligned)] = True
        out.mean = _mean_over_topics(out.value, self.setup.truth.present & out.topics[:, None])
        return out

    def _judged_relevant(self, aligned: list[TopicView], level: float) -> np.ndarray:
        """R counted on the judged documents, per topic."""
        out = np.full(len(self.setup.truth.topics), np.nan)
        for t, view in zip(self._topic_index(aligned), aligned, strict=True):
            out[t] = relevance(view.sample.labels[view.sample.judged], level).sum()
        return out

    # -- output --------------------------------------------------------------------------------

    def _rows(self, labels: dict[str, Any], est: Estimates, true: np.ndarray,
              official: np.ndarray, true_mean: np.ndarray, official_mean: np.ndarray,
              judged: np.ndarray, true_r: np.ndarray, contributing: np.ndarray
              ) -> pd.DataFrame:
        """One target's rows: per topic (where the run retrieved), then the means (topic
        ``all``); text columns categorical with the same categories in every frame."""
        truth = self.setup.truth
        n_topics, n_runs = truth.present.shape
        if self.setup.per_topic:
            t_idx, r_idx = np.nonzero(truth.present)
        else:
            t_idx = r_idx = np.zeros(0, dtype=np.int64)
        runs = np.arange(n_runs)
        n = len(t_idx) + n_runs

        def both(per_topic: np.ndarray, mean: np.ndarray | float) -> np.ndarray:
            return np.concatenate([per_topic, np.broadcast_to(mean, n_runs)])

        categories = self._categories
        data: dict[str, Any] = {
            "method": _coded(np.zeros(n, dtype=np.int32), [labels["method"]]),
            "rate": np.full(n, np.nan if labels["rate"] is None else labels["rate"]),
            "budget": np.full(n, np.nan if labels["budget"] is None else labels["budget"]),
            "trial": np.full(n, labels["trial"], dtype=np.int32),
            "split": np.full(n, labels["split"], dtype=np.int32),
            **{column: _coded(np.full(n, categories[column].index(labels[column])),
                              categories[column]) for column in ("measure", "estimator")},
            "run": _coded(both(r_idx, runs), categories["run"]),
            "topic": _coded(both(t_idx, np.full(n_runs, n_topics)), categories["topic"]),
            "estimate": both(est.value[t_idx, r_idx], est.mean),
            "lo": both(est.lo[t_idx, r_idx], est.mean_lo),
            "hi": both(est.hi[t_idx, r_idx], est.mean_hi),
            "truth": both(true[t_idx, r_idx], true_mean),
            "truth_qrels": both(official[t_idx, r_idx], official_mean),
            "judged": both(judged[t_idx], float(judged.mean())),
            "contributed": both(contributing[r_idx], contributing),
            "num_rel": both(true_r[t_idx], float(true_r.mean())),
            "num_rel_estimate": both(est.num_rel[t_idx],
                                     float(_row_means(est.num_rel[None, :])[0])),
        }
        return pd.DataFrame(data)[ROW_COLUMNS]

    @property
    def _categories(self) -> dict[str, list[str]]:
        """The categories of the rows' text columns other than ``method``."""
        if self._category_lists is None:
            plans = [p for ps in self.setup.plans.values() for p in ps]
            self._category_lists = {
                "run": list(self.setup.truth.run_names),
                "topic": [*self.setup.truth.topics, MEAN_TOPIC],
                "measure": list(dict.fromkeys(p.target.name for p in plans)),
                "estimator": list(dict.fromkeys(p.estimator for p in plans)),
            }
        return self._category_lists

    def _statistics(self, est: Estimates, true: np.ndarray, true_mean: np.ndarray,
                    true_r: np.ndarray, contributing: np.ndarray) -> dict[str, Any]:
        """The per-sample statistics of one target (see the module docstring)."""
        finite = np.isfinite(est.mean) & np.isfinite(true_mean)
        out: dict[str, Any] = {
            "rms": float(metaeval.sample_rms(est.mean, true_mean)[0]),
            "rms_contributed": float(metaeval.sample_rms(est.mean, true_mean,
                                                         contributing)[0]),
            "rms_left_out": float(metaeval.sample_rms(est.mean, true_mean,
                                                      ~contributing)[0]),
            "tau": (metaeval.kendall_tau(est.mean[finite], true_mean[finite])
                    if finite.sum() > 1 else np.nan),
            "tau_ap": (metaeval.tau_ap(est.mean[finite], true_mean[finite])
                       if finite.sum() > 1 else np.nan),
        }
        complete = (self.setup.truth.present.all(axis=1) & est.topics
                    & np.isfinite(est.value).all(axis=1))
        outcomes = (metaeval.pair_outcomes(est.value[complete], true[complete],
                                           self.setup.alpha)
                    if complete.sum() > 1 and len(true_mean) > 1 else None)
        for name in ("true_positive", "true_negative", "miss", "false_alarm", "inversion"):
            out[f"sig_{name}"] = getattr(outcomes, name) if outcomes else np.nan
        out["sig_accuracy"] = outcomes.accuracy if outcomes else np.nan
        has_r = est.topics & np.isfinite(est.num_rel)
        out["r_corr"] = metaeval.pearson(est.num_rel[has_r], true_r[has_r])
        out["covered"], out["intervals"] = metaeval.coverage(est.mean_lo, est.mean_hi,
                                                             true_mean)
        present = self.setup.truth.present
        out["covered_topic"], out["intervals_topic"] = metaeval.coverage(
            est.lo[present], est.hi[present], true[present])
        return out


def _mean_over_topics(values: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Each run's mean over the ``counted`` topics (``[topics, runs]`` mask); NaN for a run
    with none."""
    counts = counted.sum(axis=0)
    sums = np.where(counted, values, 0.0).sum(axis=0)
    return np.divide(sums, counts, out=np.full(values.shape[1], np.nan), where=counts > 0)


def _row_means(values: np.ndarray) -> np.ndarray:
    """The mean of each row's finite values (NaN for a row without any)."""
    finite = np.isfinite(values)
    counts = finite.sum(axis=1)
    sums = np.where(finite, values, 0.0).sum(axis=1)
    return np.divide(sums, counts, out=np.full(len(counts), np.nan), where=counts > 0)


def _judged_per_topic(sample: Sample, topics: Sequence[str]) -> np.ndarray:
    judged = sample.judged().groupby("query_id").size()
    return judged.reindex(list(topics), fill_value=0).to_numpy(dtype=np.float64)


def _coded(codes: np.ndarray, categories: list[str]) -> pd.Series:
    """A categorical column of ``categories`` from their ``codes``."""
    return pd.Series(pd.Categorical.from_codes(codes.astype(np.int32),
                                               dtype=pd.CategoricalDtype(categories)))


def _typed(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``frame`` with ``columns`` in order, text columns categorical, fixed number types."""
    frame = frame.reindex(columns=columns)
    for column in CATEGORIES:
        if column in frame:
            frame[column] = frame[column].astype(str).astype("category")
    for column, kind in (("rate", np.float64), ("budget", np.float64), ("trial", np.int32),
                         ("split", np.int32)):
        frame[column] = frame[column].astype(kind)
    return frame
