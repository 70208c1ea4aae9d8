"""Judging until confident against a fixed per-topic budget (issues 14 and 29), on a
collection of ``studies._cli.COLLECTIONS`` (``--collection``, default TREC-COVID round 5):
the depth-100 pool of its runs judged in full (its qrels, unjudged = not relevant) is the
truth.

    python -m studies.confident_judging [--collection round5] [--trials 10] [--targets 0.02,0.01]

For each target half-width h (the 95% half-width of every run's mean AP~ht over the 50
topics), ``--trials`` adaptive campaigns (:class:`~sampleval.judging.confident.ConfidentJudging`
driving ``--method`` laid out for ``--ceiling`` of each topic's pool (one per target), ``--start`` judgments
per topic first, batches of ``--batch``) report the judgments used, the final widest
half-width, the coverage of the final intervals of the runs' means (the share that contain
the true MAP), and the bias of the mean estimates (mean over trials of estimate - truth,
per run: its mean over the runs, and the largest in absolute value with its standard error
over trials). The fixed per-topic budgets (``--fixed-rates``, ``--fixed-trials`` samples
each, the same method laid out for that rate) report the same, with ``width`` (the runs'
mean half-width over z times their rms error, pooled over runs and trials) and
``rms_widest`` = ``widest`` / ``width``: z times the rms error of the widest run, read
through the pooled width ratio rather than from one run's few errors (a maximum over the
runs of noisy rms estimates would be biased up). The *fixed budget that meets* h is the number of judgments at which ``rms_widest``
falls to h, interpolated log-linearly between the fixed rates; each adaptive row reports
``vs_fixed``, its judgments over that budget (issue 29 item 4 asks for at most 1.3).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.result import z_value
from sampleval.estimation.spec import parse_estimate
from sampleval.judging.confident import INTERIM, ConfidentJudging, Target
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from studies._cli import COLLECTIONS, read_collection, simulation_parser
from studies.compare_accuracy import exact_per_topic, pool_truth

MEASURE = "AP~ht"  # the default --measure


def _summary(estimates: np.ndarray, down: np.ndarray, up: np.ndarray, truth: np.ndarray
             ) -> dict[str, float]:
    """Coverage and bias of ``estimates`` ``[trials, runs]`` whose intervals reach ``down``
    below and ``up`` above them (``few=completed`` widens the upper side); ``width`` from
    their half-width, (down + up) / 2."""
    covered = (estimates - down <= truth) & (truth <= estimates + up)
    half = (down + up) / 2.0
    trials = covered.mean(axis=1)  # the runs of one trial share its sample: not independent
    per_run = (estimates - truth).mean(axis=0)
    worst = int(np.argmax(np.abs(per_run)))
    se = (estimates[:, worst] - truth[worst]).std(ddof=1) / np.sqrt(len(estimates)) \
        if len(estimates) > 1 else float("nan")
    rms = float(np.sqrt(((estimates - truth) ** 2).mean()))
    return {"width": float(half.mean() / (z_value(0.95) * rms)) if rms > 0 else float("nan"),
            "coverage": float(covered.mean()),
            "coverage_se": float(trials.std(ddof=1) / np.sqrt(len(trials)))
            if len(trials) > 1 else float("nan"), "bias_mean": float(per_run.mean()),
            "bias_worst": float(per_run[worst]), "bias_worst_se": float(se)}


def adaptive(pool: Pool, qrels_truth: Qrels, truth: np.ndarray, target: float, *,
             method: str, ceiling: float, start: int, batch: int, trials: int,
             seed: int, committed: bool = True, margin: float = 0.05,
             measure: str = MEASURE, interim: float = INTERIM) -> dict[str, object]:
    """The adaptive campaigns' row (module docstring)."""
    oracle = qrels_oracle(qrels_truth)
    used, widest, estimates, downs, ups, phases = [], [], [], [], [], []
    for trial in range(trials):
        selector = METHODS[method](pool, Budget(rate=ceiling),
                                   np.random.default_rng(seed + trial))
        judging = ConfidentJudging(selector, Target(measure, target), start=start, batch=batch,
                                   committed=committed, margin=margin, interim=interim)
        status = judging.run(oracle)
        mean, lo, hi = np.array(list(judging.intervals().values())).T  # every run targeted
        used.append(status.judged)
        widest.append(status.widest)
        estimates.append(mean)
        downs.append(mean - lo)
        ups.append(hi - mean)
        phases.append(max((len(p) for p in judging.phases), default=0))
        print(f"target {target}: trial {trial + 1}/{trials}, {status.judged} judgments, "
              f"{status.reason}, widest {status.widest:.4f}, phases {phases[-1]}",
              file=sys.stderr, flush=True)
    design = "committed" if committed else "adaptive rule"
    return {"design": f"{design} (ceiling {ceiling})", "target": target,
            "judgments": float(np.mean(used)), "judgments_sd": float(np.std(used, ddof=1))
            if trials > 1 else float("nan"), "widest": float(np.mean(widest)),
            "met": float(np.mean(np.array(widest) <= target)),
            "phases": float(np.mean(phases)) if committed else float("nan"),
            **_summary(np.array(estimates), np.array(downs), np.array(ups), truth)}


def fixed(pool: Pool, qrels_truth: Qrels, truth: np.ndarray, rate: float, *, method: str,
          trials: int, seed: int, measure: str = MEASURE) -> dict[str, object]:
    """A fixed per-topic budget's row: every topic judged at ``rate`` by ``method``."""
    oracle = qrels_oracle(qrels_truth)
    spec = parse_estimate(measure)
    family = FAMILIES[spec.family]
    used, widest, estimates, downs, ups = [], [], [], [], []
    for trial in range(trials):
        selector = METHODS[method](pool, Budget(rate=rate), np.random.default_rng(seed + trial))
        sample = simulate(selector, oracle).sample()
        rows = family.compute(pool.run_names, topic_views(pool, sample), sample, [spec], 1.0,
                              0.95)
        rows = rows[rows["query_id"] == MEAN_TOPIC].set_index("run").loc[list(pool.run_names)]
        half = ((rows["hi"] - rows["lo"]) / 2).to_numpy()
        used.append(len(sample.judged()))
        widest.append(half.max())
        estimates.append(rows["value"].to_numpy())
        downs.append((rows["value"] - rows["lo"]).to_numpy())
        ups.append((rows["hi"] - rows["value"]).to_numpy())
    summary = _summary(np.array(estimates), np.array(downs), np.array(ups), truth)
    return {"design": f"fixed rate {rate}", "target": float("nan"),
            "judgments": float(np.mean(used)), "judgments_sd": float("nan"),
            "widest": float(np.mean(widest)), "widest_max": float(np.max(widest)),
            "rms_widest": float(np.mean(widest)) / summary["width"], **summary}


def fixed_budget(table: pd.DataFrame, targets: Sequence[float]) -> dict[float, float]:
    """For each target h, the judgments at which the fixed rows' ``rms_widest`` falls to h:
    log-linear interpolation in (log judgments, log rms_widest) between the two fixed rows
    that bracket h (absent when no two do)."""
    fixed_rows = table[table["design"].str.startswith("fixed")].sort_values("judgments")
    out: dict[float, float] = {}
    if len(fixed_rows) < 2:
        return out
    n = np.log(fixed_rows["judgments"].to_numpy(dtype=np.float64))
    r = np.log(fixed_rows["rms_widest"].to_numpy(dtype=np.float64))
    for h in targets:
        below = np.flatnonzero(r <= np.log(h))
        if not len(below) or below[0] == 0:
            continue
        j = int(below[0])
        w = (np.log(h) - r[j - 1]) / (r[j] - r[j - 1])
        out[h] = float(np.exp(n[j - 1] + w * (n[j] - n[j - 1])))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=10)
    parser.add_argument("--targets", default="0.02,0.01",
                        help="target half-widths of every run's mean AP (default 0.02,0.01)")
    parser.add_argument("--method", default="stratified", help="selection method")
    parser.add_argument("--measure", default=MEASURE,
                        help=f"the estimator of AP whose intervals are targeted (default "
                             f"{MEASURE}; options as 'estimate -m' takes them, e.g. "
                             "'AP~ht(variance=linear)')")
    parser.add_argument("--ceiling", default="0.25,0.45",
                        help="each topic's budget in the adaptive campaigns, as a share of "
                             "its pool (the design is laid out for it), one per target or one "
                             "for all (default 0.25,0.45)")
    parser.add_argument("--start", type=int, default=40,
                        help="each topic's pilot, and the least size of its final phase "
                             "(default 40)")
    parser.add_argument("--margin", type=float, default=0.05,
                        help="phases are planned to reach the target times (1 - MARGIN) "
                             "(default 0.05)")
    parser.add_argument("--interim", type=float, default=INTERIM,
                        help="the share of the pilot's plan judged as an interim phase, after "
                             f"which every topic gets a further phase (default {INTERIM}; 0: "
                             "none)")
    parser.add_argument("--adaptive-rule", action="store_true",
                        help="judge with the adaptive rule of earlier versions instead of "
                             "the phase-committed design (its intervals under-cover)")
    parser.add_argument("--collection", default="round5", choices=COLLECTIONS,
                        help="the collection (default round5; studies/_cli.py describes each)")
    parser.add_argument("--batch", type=int, default=5, help="documents per batch")
    parser.add_argument("--fixed-rates", default="0.1,0.15,0.2,0.3,0.4,0.5",
                        help="fixed per-topic budgets to compare with")
    parser.add_argument("--fixed-trials", type=int, default=3,
                        help="samples per fixed budget (default 3)")
    args = parser.parse_args(argv)
    targets = [float(t) for t in args.targets.split(",") if t.strip()]
    ceilings = [float(c) for c in args.ceiling.split(",") if c.strip()]
    if len(ceilings) == 1:
        ceilings *= len(targets)
    if targets and len(ceilings) != len(targets):
        parser.error("give one --ceiling, or one per target")
    runs, qrels = read_collection(args.collection, args.data, args.depth)
    start = time.perf_counter()
    pool = Pool.from_runs(runs, depth=args.depth, qrels=qrels)
    truth_qrels = pool_truth(pool)
    truth = exact_per_topic(truth_qrels, runs, "AP", args.depth).mean(axis=0).to_numpy()
    rows: list[dict[str, object]] = []
    for rate in (float(r) for r in args.fixed_rates.split(",") if r.strip()):
        rows.append(fixed(pool, truth_qrels, truth, rate, method=args.method,
                          trials=args.fixed_trials, seed=args.seed, measure=args.measure))
        print(f"fixed rate {rate} done", file=sys.stderr, flush=True)
    for target, ceiling in zip(targets, ceilings, strict=False):
        rows.append(adaptive(pool, truth_qrels, truth, target, method=args.method,
                             ceiling=ceiling, start=args.start, batch=args.batch,
                             trials=args.trials, seed=args.seed,
                             committed=not args.adaptive_rule, margin=args.margin,
                             measure=args.measure, interim=args.interim))
    table = pd.DataFrame(rows)
    meets = fixed_budget(table, targets)
    table["vs_fixed"] = [judgments / meets[target] if target in meets else float("nan")
                         for judgments, target in zip(table["judgments"], table["target"],
                                                      strict=True)]
    print(f"{args.collection}: {len(runs)} runs, {len(pool.topics)} topics, depth "
          f"{args.depth} ({sum(tp.size for tp in pool)} pooled documents), {args.method}, "
          f"{args.measure}, {args.trials} adaptive trials per target, {args.fixed_trials} per fixed "
          f"rate, {time.perf_counter() - start:.0f} s")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
