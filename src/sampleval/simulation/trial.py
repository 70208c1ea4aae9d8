"""One cell's trials: select with the method, estimate every target, compare with the truth.

A :class:`Setup` holds what every trial shares (the pools of all runs, the truth, the qrels
that answer for the assessor, the splits, each method's plans); it is built once and sent once
to each worker, which keeps it in a :class:`Worker` with what it derives from it (the oracle,
each split's selection pool). A trial then

1. selects from the pool of the split's contributing runs (``Pool.subset``) with the trial's
   own generator (:mod:`.seeds`), judged by the oracle;
2. estimates every target from the sample for all runs (:mod:`.estimates`);
3. returns tidy rows (:data:`ROW_COLUMNS`: per topic and the mean over topics, topic
   ``all``) and one row of per-sample statistics per target (:data:`STAT_COLUMNS`, from
   :mod:`.metaeval`): the sample's rms over runs (all, contributing, left out), Kendall's
   tau and tau_AP of the mean scores, Voorhees' pair outcomes on the per-topic scores, the
   correlation of estimated and true R per topic, interval coverage counts, and the time the
   trial took; and one row per topic of what the sample reached (:data:`TOPIC_COLUMNS`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sampleval.estimation.engine.views import MEAN_TOPIC
from sampleval.selection.base import Oracle, qrels_oracle
from sampleval.simulation import metaeval
from sampleval.simulation.estimates import (
    Estimates,
    estimate,
    mean_over_topics,
    row_means,
)
from sampleval.simulation.seeds import trial_rng

if TYPE_CHECKING:
    from sampleval.core.pool import Pool
    from sampleval.core.predictions import Predictions
    from sampleval.core.qrels import Qrels
    from sampleval.core.run import Run
    from sampleval.core.sample import Sample
    from sampleval.selection.base import Selector
    from sampleval.simulation.grid import Cell
    from sampleval.simulation.splits import Split
    from sampleval.simulation.targets import Plan
    from sampleval.simulation.truth import Truth

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
                "intervals_topic", "judged", "seconds", "unreachable", "reaching_budget",
                "reaching_rate", "audit_favoured_flagged", "audit_others_flagged",
                "rank_covered"]
"""trial_stats.parquet: one row per (cell, trial, target), see the module docstring.
``unreachable``: the share of the pooled documents (of the truth's topics) whose inclusion
probability is 0 (:meth:`~sampleval.core.sample.Sample.unreachable`); ``reaching_budget``:
where some are, the smallest per-topic budget (the largest over topics) at which the design
reaches every document some budget reaches, and ``reaching_rate`` the same as a share of
each topic's pool (NaN where no document is unreachable, or the design is not stratified).
With an audit (:class:`Audit`; estimators of the ~ht family only, else NaN):
``audit_favoured_flagged``: whether the audit (Holm, alpha 0.05) flagged the favoured run
(NaN without one), ``audit_others_flagged``: the share of the other runs it flagged,
``rank_covered``: whether the sample's simultaneous rank intervals held every run's true rank."""

TOPIC_COLUMNS = ["method", "rate", "budget", "trial", "split", "topic", "judged", "reached",
                 "relevant", "relevant_judged", "relevant_reached"]
"""trial_topics.parquet: one row per (cell, trial, topic). ``relevant``: the topic's pooled
documents the qrels grade 1 or more; ``judged``/``relevant_judged``: the documents (the
relevant ones) the sample judged; ``reached``/``relevant_reached``: those (the relevant ones)
with a positive inclusion probability, the universe the sample was drawn from (Cormack et
al., SIGIR 2019, sec. 3: for Dynamic Sampling the documents its batches reached; for pooling
the judged ones; for uniform or stratified sampling the whole pool), NaN where the design
leaves inclusion probabilities undefined (with-replacement and importance samples). Coverage
as Cormack et al. define it is relevant_reached / relevant."""

COVERAGE_LEVEL = 1.0
"""The grade from which a document counts as relevant in :data:`TOPIC_COLUMNS`."""

CATEGORIES = ("method", "measure", "estimator", "run", "topic")


@dataclass(frozen=True)
class Audit:
    """Audit the predictions as a machine judge in every trial (``sampleval audit``'s
    :func:`~sampleval.estimation.audit.judge_rows`): the ``runs`` (the audit evaluates them
    at the pool's depth) and the run the judge favours, if any."""

    runs: tuple[Run, ...]
    favoured: str | None = None


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
    predictions: Predictions | None = None
    """Predicted relevance, for the methods that select by it and the ``~ppi`` targets."""
    audit: Audit | None = None


@dataclass(frozen=True)
class Task:
    """A cell and the trials of it to run."""

    cell: Cell
    trials: tuple[int, ...]


@dataclass(frozen=True)
class CellResult:
    """A task's output: its rows, its per-trial statistics and its per-topic counts."""

    task: Task
    rows: pd.DataFrame
    stats: pd.DataFrame
    topics: pd.DataFrame


@dataclass
class Worker:
    """A :class:`Setup` in one process, with what it derives from it made once: the oracle,
    the selection pools, the truth's paired t-tests, and the sample and estimates of a cell
    whose method drew nothing from its generator (such as depth-k: every trial of the cell
    selects the same documents, so they are selected and estimated once per worker)."""

    setup: Setup
    _oracle: Oracle | None = field(default=None, init=False, repr=False)
    _pools: dict[int, Pool] = field(default_factory=dict, init=False, repr=False)
    _true_pairs: dict[tuple[str, bytes], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, init=False, repr=False)
    _fixed: dict[Cell, tuple[Sample, list[Estimates], dict[str, float]]] = field(
        default_factory=dict, init=False, repr=False)
    _relevant: dict[str, np.ndarray] | None = field(default=None, init=False, repr=False)
    _category_dtypes: dict[str, pd.CategoricalDtype] | None = field(
        default=None, init=False, repr=False)

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

        rows: list[dict[str, np.ndarray]] = []
        stats: list[dict[str, Any]] = []
        topics: list[dict[str, Any]] = []
        with threadpool_limits(limits=1, user_api="blas"):
            for trial in task.trials:
                trial_rows, trial_stats, trial_topics = self.trial(task.cell, trial)
                rows += trial_rows
                stats += trial_stats
                topics += trial_topics
        return CellResult(task, self._frame(task.cell, rows),
                          _typed(pd.DataFrame(stats), STAT_COLUMNS),
                          _typed(pd.DataFrame(topics), TOPIC_COLUMNS))

    def trial(self, cell: Cell, trial: int) -> tuple[list[dict[str, np.ndarray]],
                                                     list[dict[str, Any]],
                                                     list[dict[str, Any]]]:
        """One trial of ``cell``: its rows (columns, one set per target), statistics and
        per-topic counts."""
        setup, truth = self.setup, self.setup.truth
        start = time.perf_counter()
        sample, estimates, reach = self._estimates(cell, trial)
        seconds = time.perf_counter() - start
        judged = _judged_per_topic(sample, truth.topics)
        contributing = setup.splits[cell.split].mask()
        keys: dict[str, Any] = {"method": cell.method.text, "rate": cell.budget.rate,
                                "budget": cell.budget.count, "trial": trial,
                                "split": cell.split}
        columns, stats = [], []
        for plan, est in zip(setup.plans[cell.method.text], estimates, strict=True):
            name = str(plan.target.exact)
            true, official = truth.pool[name], truth.qrels[name]
            true_r = truth.num_rel[plan.target.level]
            counted = truth.present & est.topics[:, None]
            true_mean = mean_over_topics(true, counted)
            labels = {**keys, "measure": plan.target.name, "estimator": plan.estimator}
            columns.append(self._rows(labels, est, true, official, true_mean,
                                      mean_over_topics(official, counted), judged, true_r,
                                      contributing))
            stats.append({**labels, **self._statistics(name, est, true, true_mean, true_r,
                                                       contributing),
                          "judged": float(judged.mean()), "seconds": seconds, **reach,
                          **self._audit(cell, plan, sample, true_mean, trial)})
        return columns, stats, [{**keys, **counts} for counts in self._reach(sample)]

    def _audit(self, cell: Cell, plan: Plan, sample: Sample, true_mean: np.ndarray,
               trial: int) -> dict[str, float]:
        """The audit's outcome on this trial's sample (see :data:`STAT_COLUMNS`), empty
        without an audit, NaN where the plan's estimator gives no pairwise variances."""
        setup = self.setup
        if setup.audit is None or setup.predictions is None:
            return {}
        from sampleval.estimation.audit import audit_outcome, human_estimates, judge_rows
        from sampleval.estimation.family import FAMILIES

        if plan.spec is None or FAMILIES[plan.spec.family].differences is None:
            return dict.fromkeys(("audit_favoured_flagged", "audit_others_flagged",
                                  "rank_covered"), np.nan)
        rng = trial_rng(setup.seed, f"{cell.method.text} audit {plan.spec.name}",
                        cell.budget.label, trial, cell.split)
        with warnings.catch_warnings():  # once per trial would drown the progress bar
            warnings.filterwarnings("ignore", message="rank intervals use")
            human = human_estimates(sample, list(setup.audit.runs), plan.spec.name,
                                    depth=self.pool.depth, ci=setup.ci, rng=rng,
                                    predictions=setup.predictions)
        rows = judge_rows(sample, human, setup.predictions, ci=setup.ci, alpha=setup.alpha)
        outcome = audit_outcome(rows, pd.Series(true_mean, index=list(self.pool.run_names)),
                                setup.audit.favoured)
        return {"audit_favoured_flagged": outcome.favoured_flagged,
                "audit_others_flagged": outcome.others_flagged,
                "rank_covered": float(outcome.rank_covered)}

    def _reach(self, sample: Sample) -> list[dict[str, Any]]:
        """Per topic, what the sample judged and reached (see :data:`TOPIC_COLUMNS`)."""
        if self._relevant is None:
            census = self.setup.qrels.judged()
            census = census[census["relevance"] >= COVERAGE_LEVEL]
            self._relevant = {
                t: np.intersect1d(self.pool.docnos_of(t).astype(str),
                                  census.loc[census["query_id"] == t, "doc_id"].to_numpy(
                                      dtype=str))
                for t in self.setup.truth.topics}
        out = []
        for topic, relevant in self._relevant.items():
            ts = sample.topic(topic)
            is_relevant = np.isin(ts.docnos, relevant)
            defined = not np.isnan(ts.inclusion).any()
            reached = ts.inclusion > 0
            out.append({"topic": topic, "judged": int(ts.judged.sum()),
                        "reached": float(reached.sum()) if defined else np.nan,
                        "relevant": len(relevant),
                        "relevant_judged": int((is_relevant & ts.judged).sum()),
                        "relevant_reached": (float((is_relevant & reached).sum()) if defined
                                             else np.nan)})
        return out

    def _estimates(self, cell: Cell, trial: int) -> tuple[Sample, list[Estimates],
                                                          dict[str, float]]:
        """The trial's sample, its estimates of the cell's plans and what its design left
        unreachable (:func:`_unreachable`; see the class docstring for the cells whose
        method draws nothing)."""
        if cell in self._fixed:
            return self._fixed[cell]
        setup = self.setup
        rng = trial_rng(setup.seed, cell.method.text, cell.budget.label, trial, cell.split)
        drawn = rng.bit_generator.state
        selector = cell.method.make(self.selection_pool(cell.split), cell.budget.budget(), rng,
                                    setup.predictions)
        sample = cell.method.judge(selector, self.oracle)
        estimates = estimate(setup.pools, setup.truth, sample, setup.plans[cell.method.text],
                             setup.ci, setup.predictions)
        tuned = cell.method.anytime_tuning(setup.ci)
        if tuned is not None:
            estimates = [_anytime_means(e, tuned, setup.ci) for e in estimates]
        reach = _unreachable(selector, sample, setup.truth.topics)
        if rng.bit_generator.state == drawn:
            self._fixed[cell] = (sample, estimates, reach)
        return sample, estimates, reach

    # -- output --------------------------------------------------------------------------------

    def _rows(self, labels: dict[str, Any], est: Estimates, true: np.ndarray,
              official: np.ndarray, true_mean: np.ndarray, official_mean: np.ndarray,
              judged: np.ndarray, true_r: np.ndarray, contributing: np.ndarray
              ) -> dict[str, np.ndarray]:
        """One target's rows as columns: per topic (where the run retrieved), then the
        means (topic ``all``); text columns as codes into :attr:`_dtypes`."""
        truth = self.setup.truth
        n_topics, n_runs = truth.present.shape
        if self.setup.per_topic:
            t_idx, r_idx = np.nonzero(truth.present)
        else:
            t_idx = r_idx = np.zeros(0, dtype=np.int64)
        n = len(t_idx) + n_runs

        def both(per_topic: np.ndarray, mean: np.ndarray | float) -> np.ndarray:
            return np.concatenate([per_topic, np.broadcast_to(mean, n_runs)])

        dtypes = self._dtypes
        return {
            "rate": np.full(n, np.nan if labels["rate"] is None else labels["rate"]),
            "budget": np.full(n, np.nan if labels["budget"] is None else labels["budget"]),
            "trial": np.full(n, labels["trial"], dtype=np.int32),
            "split": np.full(n, labels["split"], dtype=np.int32),
            **{column: np.full(n, dtypes[column].categories.get_loc(labels[column]),
                               dtype=np.int32) for column in ("measure", "estimator")},
            "run": both(r_idx, np.arange(n_runs)),
            "topic": both(t_idx, n_topics),
            "estimate": both(est.value[t_idx, r_idx], est.mean),
            "lo": both(est.lo[t_idx, r_idx], est.mean_lo),
            "hi": both(est.hi[t_idx, r_idx], est.mean_hi),
            "truth": both(true[t_idx, r_idx], true_mean),
            "truth_qrels": both(official[t_idx, r_idx], official_mean),
            "judged": both(judged[t_idx], float(judged.mean())),
            "contributed": both(contributing[r_idx], contributing),
            "num_rel": both(true_r[t_idx], float(true_r.mean())),
            "num_rel_estimate": both(est.num_rel[t_idx],
                                     float(row_means(est.num_rel[None, :])[0])),
        }

    def _frame(self, cell: Cell, parts: list[dict[str, np.ndarray]]) -> pd.DataFrame:
        """Rows' columns as one frame (:data:`ROW_COLUMNS`), text columns categorical."""
        data: dict[str, Any] = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
        for column, dtype in self._dtypes.items():
            data[column] = pd.Categorical.from_codes(data[column].astype(np.int32),
                                                     dtype=dtype)
        n = len(data["trial"])
        data["method"] = pd.Categorical.from_codes(np.zeros(n, dtype=np.int32),
                                                   dtype=pd.CategoricalDtype([cell.method.text]))
        return pd.DataFrame(data)[ROW_COLUMNS]

    @property
    def _dtypes(self) -> dict[str, pd.CategoricalDtype]:
        """The categories of the rows' text columns other than ``method``, made once."""
        if self._category_dtypes is None:
            plans = [p for ps in self.setup.plans.values() for p in ps]
            lists = {"run": list(self.setup.truth.run_names),
                     "topic": [*self.setup.truth.topics, MEAN_TOPIC],
                     "measure": list(dict.fromkeys(p.target.name for p in plans)),
                     "estimator": list(dict.fromkeys(p.estimator for p in plans))}
            self._category_dtypes = {c: pd.CategoricalDtype(v) for c, v in lists.items()}
        return self._category_dtypes

    def _statistics(self, name: str, est: Estimates, true: np.ndarray, true_mean: np.ndarray,
                    true_r: np.ndarray, contributing: np.ndarray) -> dict[str, Any]:
        """The per-sample statistics of the target of measure ``name`` (see the module
        docstring)."""
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
        outcomes = None
        if complete.sum() > 1 and len(true_mean) > 1:
            key = (name, complete.tobytes())
            if key not in self._true_pairs:
                self._true_pairs[key] = metaeval.significant_pairs(true[complete],
                                                                   self.setup.alpha)
            outcomes = metaeval.classify_pairs(
                *self._true_pairs[key],
                *metaeval.significant_pairs(est.value[complete], self.setup.alpha))
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


def _unreachable(selector: Selector, sample: Sample, topics: Sequence[str]
                 ) -> dict[str, float]:
    """The columns ``unreachable``, ``reaching_budget`` and ``reaching_rate`` of
    :data:`STAT_COLUMNS` for one sample (the budgets from
    :meth:`~sampleval.selection.strata.StratifiedSelector.reach`)."""
    from sampleval.selection.strata import StratifiedSelector

    counts = sample.unreachable(topics)
    pooled = int(counts[:, 1].sum())
    out = {"unreachable": counts[:, 0].sum() / pooled if pooled else np.nan,
           "reaching_budget": np.nan, "reaching_rate": np.nan}
    missed = [t for t, (zero, _) in zip(topics, counts, strict=True)
              if zero and t in selector.pool.topics]
    if missed and isinstance(selector, StratifiedSelector):
        needs = {t: selector.reach(t)[0] for t in missed}
        out["reaching_budget"] = float(max(needs.values()))
        out["reaching_rate"] = max(n / selector.pool[t].size for t, n in needs.items())
    return out


def _judged_per_topic(sample: Sample, topics: Sequence[str]) -> np.ndarray:
    judged = sample.judged().groupby("query_id").size()
    return judged.reindex(list(topics), fill_value=0).to_numpy(dtype=np.float64)


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


def _anytime_means(est: Estimates, tuned: float, ci: float) -> Estimates:
    """``est`` with the intervals of its means over topics replaced by the anytime-valid
    ones (``stop=anytime``): on either side the half-width
    :func:`sampleval.estimation.anytime.half_width` of the variance ((lower side / z)^2)
    the ordinary interval gives (of a bias-aware interval, whose sides add the estimated
    bias, a variance somewhat too large: wider), and the upper side widened by what the
    ordinary interval's upper side exceeds its lower by (``few=completed``'s allowance,
    :func:`sampleval.estimation.result.mean_sides`), as judging until confident reports
    it."""
    from dataclasses import replace

    from sampleval.estimation.anytime import half_width
    from sampleval.estimation.engine.views import z_value

    down = est.mean - est.mean_lo
    allowance = np.maximum((est.mean_hi - est.mean) - down, 0.0)
    half = half_width((down / z_value(ci)) ** 2, tuned, ci)
    return replace(est, mean_lo=est.mean - half, mean_hi=est.mean + half + allowance)
