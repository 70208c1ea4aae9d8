"""``sampleval simulate`` as a library call: check the request, build what the trials share
once, run the cells that are not done yet, and write the tables (and figures).

    from sampleval.simulation.runner import simulate
    summary = simulate(runs, qrels, ["uniform", "active:batch=5"], rates=[0.05, 0.1],
                       trials=30, measures=["AP", "P@30"], output="sim-out", jobs=2)

Everything a user can get wrong (methods, parameters, measures, the leave-out setting, an
output directory of another experiment) is checked before any trial runs.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sampleval.core.design import designs as all_designs
from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.setup import accepts
from sampleval.io.coerce import PredictionsLike, as_predictions
from sampleval.progress import Bar
from sampleval.simulation.backends import check_backend, run_tasks
from sampleval.simulation.grid import (
    Cell,
    Grid,
    MethodSpec,
    budgets_from,
    parse_method,
    split_methods,
)
from sampleval.simulation.predictors import favoured_run, make_predictions, parse_predictor
from sampleval.simulation.schedule import Schedule
from sampleval.simulation.splits import Split, make_splits
from sampleval.simulation.store import Store
from sampleval.simulation.summary import summarise
from sampleval.simulation.targets import Plan, Target, parse_targets, plan_for
from sampleval.simulation.trial import Audit, Setup
from sampleval.simulation.truth import compute_truth

SUMMARY = "summary.csv"


def simulate(runs: Sequence[Run], qrels: Qrels, methods: Sequence[str], *,
             rates: Sequence[float] | None = None, budgets: Sequence[int] | None = None,
             trials: int, measures: Sequence[str], output: str | Path,
             depth: int | None = 100, seed: int = 0, leave_out: str = "none",
             groups: str | Path | None = None, splits: int = 50, jobs: int = 1,
             backend: str = "local", scheduler: str | None = None, per_topic: bool = True,
             progress: bool = False, figures: bool = True,
             predictions: PredictionsLike | None = None, predictor: str | None = None,
             audit: bool = False) -> pd.DataFrame:
    """Run the grid ``methods`` x (``rates`` or ``budgets``) x splits, ``trials`` trials
    each, into the directory ``output`` (:mod:`.store`), and return the summary (also
    written to ``summary.csv``; figures and report.html too, unless ``figures`` is False).
    ``predictions`` (a Predictions, a DataFrame ``query_id, doc_id, prediction`` or a
    predictions file) go to the methods that select by them and the ``~ppi`` measures;
    ``predictor`` instead makes them from the qrels
    (:func:`~sampleval.simulation.predictors.make_predictions`: ``flip10``,
    ``circular:run=RUN,k=K`` ...). ``audit``: audit the predictions as a machine judge in
    every trial (:mod:`.audit_stats`). See ``docs/guide/simulate.md`` for every argument."""
    if seed < 0:
        raise UsageError("--seed must be a non-negative whole number")
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    check_backend(backend, scheduler)
    check_judge(methods, measures, predictions is not None, predictor, audit)
    specs = [parse_method(m) for m in split_methods(methods)]
    if not specs:
        raise UsageError("give at least one method with --methods")
    targets = parse_targets(measures)
    plans = _plans(specs, targets)
    pool = _pool(runs, qrels, depth)
    predicted = (make_predictions(pool, qrels, [predictor], seed)[predictor]
                 if predictor is not None
                 else None if predictions is None else _predictions(predictions, pool, qrels))
    favoured = (favoured_run(parse_predictor(predictor), pool, qrels)
                if predictor is not None and parse_predictor(predictor).run is not None
                else None)
    split_list = make_splits(pool.run_names, leave_out, groups, splits, seed)
    grid = Grid(tuple(specs), tuple(budgets_from(rates, budgets)), trials, len(split_list))
    store = Store(output)
    store.open({**_inputs(pool, qrels, targets, seed, leave_out, split_list, per_topic,
                          predicted), **({"audit": favoured or True} if audit else {})}, grid,
               {"runs": pool.n_runs, "topics": len(pool.topics),
                "left_out": [s.left_out for s in split_list]})
    schedule = Schedule(_missing(store, grid), grid, jobs)
    if schedule:
        setup = _setup(runs, pool, qrels, targets, plans, split_list, seed, per_topic,
                       predicted)
        if audit:
            setup = replace(setup, audit=Audit(tuple(runs), favoured))
        _run(store, setup, schedule, backend=backend, jobs=jobs, scheduler=scheduler,
             progress=progress)
    store.consolidate(grid)
    summary = summarise(store.read_means(), store.read_stats(), leave_out != "none")
    summary.to_csv(store.directory / SUMMARY, index=False)
    if figures:
        from sampleval.simulation.report import render

        render(store.directory)
    return summary


# -- checking and planning -----------------------------------------------------------------------


def check_judge(methods: Sequence[str], measures: Sequence[str], given: bool,
                predictor: str | None, audit: bool) -> None:
    """:func:`check_predictions` with a predictor (parsed) in place of given predictions,
    and the audit (UsageError without a judge to audit)."""
    if given and predictor is not None:
        raise UsageError("give --predictions or --predictor, not both")
    if predictor is not None:
        parse_predictor(predictor)
    judged = given or predictor is not None
    if audit and not judged:
        raise UsageError("--audit needs a machine judge to audit (--predictor or "
                         "--predictions)")
    check_predictions(methods, measures, judged, audit)


def check_predictions(methods: Sequence[str], measures: Sequence[str], given: bool,
                      audited: bool = False) -> None:
    """UsageError (before any file is read) when a method or a measure needs predictions
    and none are given, or predictions are given that nothing uses (nor the audit)."""
    users = [s.text for s in map(parse_method, split_methods(methods)) if s.uses_predictions]
    users += [t.name for t in parse_targets(measures)
              if t.given is not None and FAMILIES[t.given.family].needs_predictions]
    if users and not given:
        raise UsageError(f"{users[0]} needs predictions of relevance (--predictions FILE; "
                         "in the library, predictions=)")
    if given and not users and not audited:
        raise UsageError("no method or measure uses the predictions (see "
                         "docs/guide/predictions.md)")


def _predictions(predictions: PredictionsLike, pool: Pool, qrels: Qrels) -> Predictions:
    """The predictions, read once and checked against the qrels' scale and the pool (none
    of the pooled documents predicted: UsageError; some: a warning)."""
    top = max(1.0, float(qrels.frame["relevance"].max()))
    predicted = as_predictions(predictions, top)
    predicted.check_scale(top)
    pooled = pd.DataFrame([(t, d) for t in pool.topics for d in pool.docnos_of(t)],
                          columns=["query_id", "doc_id"])
    predicted.require_coverage(pooled, "the pooled documents", "the runs'")
    return predicted


def _plans(specs: Sequence[MethodSpec], targets: Sequence[Target]
           ) -> dict[str, tuple[Plan, ...]]:
    """Each method's plans; a warning names the (method, measure) pairs no estimator serves,
    a UsageError a method left with none."""
    plans: dict[str, tuple[Plan, ...]] = {}
    for spec in specs:
        made = [(t, plan_for(t, spec.design, spec.reach_every_document, spec.simple_random))
                for t in targets]
        left = [t.name for t, p in made if p is None]
        if len(left) == len(made):
            raise UsageError(f"method {spec.text} ({spec.design} samples): no estimator of "
                             f"{', '.join(left)} applies; 'sampleval methods' lists what "
                             "each family estimates")
        if left:
            warnings.warn(f"{spec.text}: no estimator of {', '.join(left)} applies to its "
                          f"{spec.design} samples; left out", stacklevel=3)
        plans[spec.text] = tuple(p for _, p in made if p is not None)
    return plans


def _pool(runs: Sequence[Run], qrels: Qrels, depth: int | None) -> Pool:
    """The depth-K pool of all runs over the topics the qrels judge."""
    if not runs:
        raise UsageError("no runs given")
    if depth is not None and depth < 1:
        raise UsageError("--depth must be at least 1")
    judged = set(qrels.topics)
    pool = Pool.from_runs(runs, depth=depth)
    kept = {t: tp for t, tp in pool.topic_pools.items() if t in judged and tp.size > 0}
    if not kept:
        raise UsageError("the runs and the qrels have no topic in common")
    return replace(pool, topic_pools=kept)


def _setup(runs: Sequence[Run], pool: Pool, qrels: Qrels, targets: Sequence[Target],
           plans: dict[str, tuple[Plan, ...]], splits: Sequence[Split], seed: int,
           per_topic: bool, predictions: Predictions | None = None) -> Setup:
    """What the trials share: the pool in each score precision the plans' estimator families
    compare scores in, and the truth."""
    pools = {"float32": pool}
    families = {s.family for ps in plans.values() for plan in ps
                for s in (plan.spec, plan.r_spec) if s is not None}
    if any(FAMILIES[f].score_type == np.float64 for f in families):
        double = Pool.from_runs(runs, depth=pool.depth, score_type=np.float64)
        pools["float64"] = replace(double, topic_pools={t: double[t] for t in pool.topics})
    truth = compute_truth(pool, qrels, list(dict.fromkeys(t.exact for t in targets)),
                          sorted({t.level for t in targets}))
    return Setup(pools, truth, qrels, tuple(splits), plans, seed, per_topic,
                 predictions=predictions)


def _inputs(pool: Pool, qrels: Qrels, targets: Sequence[Target], seed: int, leave_out: str,
            splits: Sequence[Split], per_topic: bool,
            predictions: Predictions | None = None) -> dict[str, Any]:
    """What the results depend on besides the grid, as compared between runs of one
    output directory."""
    digest = hashlib.sha256()
    for name in pool.run_names:
        digest.update(name.encode() + b"\0")
    digest.update(str(pool.depth).encode())
    for tp in pool:
        digest.update(tp.topic.encode() + b"\0")
        digest.update("\0".join(pool.docnos[tp.doc_ids]).encode())
        digest.update(np.ascontiguousarray(tp.ranking, dtype=np.int32).tobytes())
    judged = qrels.judged()[["query_id", "doc_id", "relevance"]].sort_values(
        ["query_id", "doc_id"])
    qrels_digest = hashlib.sha256(judged.to_csv(index=False).encode()).hexdigest()
    split_digest = hashlib.sha256(repr([(s.contributing, s.left_out) for s in splits]).encode())
    predicted = None if predictions is None else hashlib.sha256(
        predictions.frame.sort_values(["query_id", "doc_id"]).to_csv(index=False).encode()
    ).hexdigest()
    return {"runs": digest.hexdigest(), "qrels": qrels_digest, "depth": pool.depth,
            "measures": [t.name for t in targets], "estimators": _resolved(targets),
            "seed": seed, "leave_out": leave_out, "splits": split_digest.hexdigest(),
            "per_topic": per_topic, "predictions": predicted}


def _described(plan: Plan | None) -> str | None:
    """``ESTIMATOR; R ESTIMATOR-OF-R``, every option at its value (None: no plan)."""
    if plan is None:
        return None
    what = plan.spec.full_name if plan.spec is not None else plan.estimator
    r = ("judged" if plan.r_exact else
         plan.r_spec.full_name if plan.r_spec is not None else "none")
    return f"{what}; R {r}"


def _resolved(targets: Sequence[Target]) -> dict[str, dict[str, str | None]]:
    """Each target's estimator, and R's beside it, on every design, with every option at its
    value (:attr:`~sampleval.estimation.spec.EstimateSpec.full_name`): a plain ``AP`` names
    whatever the families' declarations prefer today (``AP~ht`` on stratified samples, once
    ``xinfAP``) and an option's default may move (``AP~ht``'s intervals became bias-aware),
    so a directory whose trials were made under other defaults is refused rather than
    resumed with two estimators under one measure name."""
    designs = sorted(d.name for d in all_designs() if not d.is_probability_design
                     or any(accepts(f, d) for f in FAMILIES.values()))
    resolved: dict[str, dict[str, str | None]] = {}
    for target in targets:
        resolved[target.name] = {}
        for design in designs:
            resolved[target.name][design] = _described(plan_for(target, design))
            reaching = _described(plan_for(target, design, reach_every_document=True))
            if reaching != resolved[target.name][design]:
                resolved[target.name][f"{design}, every document reachable"] = reaching
    return resolved


def _missing(store: Store, grid: Grid) -> dict[Cell, list[int]]:
    """Per cell, the trials no part holds."""
    missing = {}
    for cell in grid.cells():
        done = store.done(cell)
        missing[cell] = [t for t in range(grid.trials) if t not in done]
    return missing


# -- running -------------------------------------------------------------------------------------


def _run(store: Store, setup: Setup, schedule: Schedule, *, backend: str, jobs: int,
         scheduler: str | None, progress: bool) -> None:
    """Run the ``schedule``'s trials, writing each task's result as it comes; on Ctrl-C stop
    the workers, keep what finished, and say how to resume."""
    left = {cell: len(trials) for cell, trials in schedule.missing.items()}
    total, cells = schedule.total, len(left)
    results = run_tasks(setup, schedule, backend=backend, jobs=jobs, scheduler=scheduler)
    finished = cells_done = 0
    try:
        with Bar(total, f"cells 0/{cells}", progress, unit="trials", timing=True,
                 transient=False) as bar:
            for result in results:
                store.write(result)
                trials = len(result.task.trials)
                finished += trials
                left[result.task.cell] -= trials
                cells_done += left[result.task.cell] == 0
                bar.advance(trials, f"cells {cells_done}/{cells}")
    except KeyboardInterrupt:
        import sys

        sys.stderr.write(f"stopped after {finished} of {total} trials; they are kept in "
                         f"{store.parts}: run the same command again to resume\n")
        raise
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
