"""How well ``sampleval audit`` finds a machine judge that favours a run, and how honest the
rank intervals are, by simulation (issue 31).

    python -m studies.audit_power [--collection round5|sparse] [--trials 200]
        [--rate 0.05] [--inflation 0.03] [--ppi] [--output F.csv]

The truth is a collection judged in full (TREC-COVID round 5: the depth-``--depth`` pool of
its 126 runs with the round-5 qrels, unjudged = not relevant; or ``sparse``: a synthetic
collection of 40 runs and 50 topics with 1% of the documents relevant,
:func:`sampleval.datasets.synthetic.make_collection`). Two machine judges label the whole pool:

- ``perfect``: the true grades (every run's true bias is 0: any flag is a false alarm);
- ``circular``: the true grades, except that the favoured run's top k documents of every
  topic are called relevant (:func:`sampleval.simulation.predictors.circular`); the
  favoured run is the one at the median of the true AP leaderboard and k the smallest of
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50 that inflates its machine AP by at least
  ``--inflation`` relative to the other runs (exactly: the machine AP minus the true AP,
  less the mean of that over runs).

Each trial judges a ``--rate`` stratified sample (``stratified``, seed SEED + trial) and
audits both judges on AP~ht (Holm, alpha 0.05). Reported: the power (the favoured run
flagged; also under Benjamini-Hochberg, and its unadjusted test at 0.05), the false-alarm rate per run (perfect judge: every run; circular judge: the runs
whose exact relative bias is below 0.005 in absolute value), the coverage of the bias
intervals, the simultaneous coverage of the rank intervals (every run's true rank inside
its interval; tied true means: any of the tied ranks) and their mean width against the same
max-t intervals from the full qrels' per-topic AP; with ``--ppi``, whether the AP~ppi
leaderboard with the circular judge's labels as predictions stays unbiased (each run's mean
error over the trials within 3 of its standard errors).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.estimation.audit import (
    NULL_RELATIVE,
    audit_outcome,
    human_estimates,
    judge_rows,
)
from sampleval.estimation.ranks import rank_intervals
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.predictors import circular, median_run, pool_truth
from studies._cli import read_round5, simulation_parser
from studies.compare_accuracy import exact_per_topic
from studies.compare_accuracy import pool_truth as judged_in_full

K_CHOICES = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50)
MEASURE = "AP~ht"


def sparse_collection(seed: int) -> tuple[list[Run], Qrels]:
    """40 runs, 50 topics, 5000 documents of which about 1% relevant."""
    data = make_collection(np.random.default_rng(seed), n_topics=50, n_runs=40, n_docs=5000,
                           depth=100, pool_depth=100, rel_rate=0.01)
    return ([Run.from_frame(f, n) for n, f in data.runs.items()],
            Qrels.from_frame(data.qrels))


def machine_bias(predictions: pd.DataFrame, runs: Sequence[Run], exact: pd.Series,
                 depth: int) -> pd.Series:
    """Each run's exact machine AP (the predictions as qrels) minus its true AP."""
    qrels = Qrels.from_frame(predictions.rename(columns={"prediction": "relevance"}))
    rows = evaluate(qrels, runs, ["AP"], depth=depth)
    machine = rows[rows["query_id"] == "all"].set_index("run")["value"]
    return machine[exact.index] - exact


def choose_k(truth: pd.DataFrame, pool: Pool, runs: Sequence[Run], exact: pd.Series,
             favoured: str, inflation: float, depth: int) -> tuple[int, pd.Series]:
    """The smallest k of :data:`K_CHOICES` whose circular judge inflates ``favoured``'s AP by
    ``inflation`` relative to the others, and every run's exact relative bias under it."""
    relative = pd.Series(dtype=float)
    for k in K_CHOICES:
        bias = machine_bias(circular(truth, pool, favoured, k), runs, exact, depth)
        relative = bias - bias.mean()
        if relative[favoured] >= inflation:
            return k, relative
    return K_CHOICES[-1], relative


def run_experiment(runs: Sequence[Run], qrels: Qrels, *, rate: float, depth: int,
                   trials: int, seed: int, inflation: float, ppi: bool
                   ) -> tuple[pd.DataFrame, dict[str, object]]:
    """Per trial one record (module docstring), and the setting (k, favoured run, reference
    rank-interval width, runs)."""
    from sampleval.estimators import estimate

    runs = list(runs)
    pool = Pool.from_runs(runs, depth=depth, qrels=qrels)
    truth_qrels = judged_in_full(pool)
    truth = pool_truth(pool, truth_qrels)
    exact_topics = exact_per_topic(truth_qrels, runs, "AP", depth)
    exact = exact_topics.mean(axis=0)
    favoured = median_run(exact)
    k, relative = choose_k(truth, pool, runs, exact, favoured, inflation, depth)
    nulls = np.array([n != favoured and abs(relative[n]) < NULL_RELATIVE
                      for n in exact.index])
    judges = {"perfect": Predictions.from_frame(truth.rename(columns={"relevance":
                                                                      "prediction"})),
              "circular": Predictions.from_frame(circular(truth, pool, favoured, k))}
    reference = rank_intervals(exact_topics)
    oracle = qrels_oracle(truth_qrels)
    at = list(exact.index).index(favoured)
    records = []
    ppi_errors = []
    for trial in range(trials):
        started = time.time()
        selector = METHODS["stratified"](pool, Budget(rate=rate),
                                         np.random.default_rng(seed + trial))
        sample = simulate(selector, oracle).sample()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            human = human_estimates(sample, runs, MEASURE, ci=0.95,
                                    rng=np.random.default_rng(seed + trial + 1_000_003))
            rows = {name: judge_rows(sample, human, judge).set_index("run").loc[exact.index]
                    for name, judge in judges.items()}
            by_bh = judge_rows(sample, human, judges["circular"], correction="bh"
                               ).set_index("run").loc[exact.index]
            if ppi:
                ppi_rows = estimate(sample, runs, ["AP~ppi"], predictions=judges["circular"])
                ppi_value = ppi_rows[ppi_rows["query_id"] == "all"].set_index("run")["value"]
                ppi_errors.append((ppi_value[exact.index] - exact).to_numpy())
        circ, perfect = rows["circular"], rows["perfect"]
        outcome = audit_outcome(circ.reset_index(), exact, favoured, nulls)
        lo, hi = circ["rank_lo"].to_numpy(), circ["rank_hi"].to_numpy()
        true_bias = {"circular": relative + 0.0, "perfect": relative * 0.0}
        records.append({
            "trial": trial,
            "power": bool(outcome.favoured_flagged),
            "power_bh": bool(by_bh["flagged"].to_numpy()[at]),
            "power_unadjusted": bool(circ["p"].to_numpy()[at] < 0.05),
            "false_alarm_circular_bh": float(by_bh["flagged"].to_numpy()[nulls].mean()),
            "false_alarm_circular": outcome.others_flagged,
            "false_alarm_perfect": audit_outcome(perfect.reset_index(), exact,
                                                 others=np.ones(len(nulls), bool)
                                                 ).others_flagged,
            "any_false_alarm_perfect": bool(perfect["flagged"].any()),
            "relative_coverage": float(np.mean([
                ((rows[j]["relative_lo"] <= true_bias[j]) & (true_bias[j] <= rows[j][
                    "relative_hi"])).mean() for j in judges])),
            "rank_coverage": outcome.rank_covered,
            "rank_width": float((hi - lo).mean()),
            "favoured_relative": float(circ["relative"].to_numpy()[at]),
            "seconds": time.time() - started,
        })
        print(f"trial {trial + 1}/{trials} done ({records[-1]['seconds']:.1f} s)",
              file=sys.stderr, flush=True)
    setting: dict[str, object] = {"favoured": favoured, "k": k, "inflation": float(relative[favoured]),
               "runs": len(runs), "null_runs": int(nulls.sum()),
               "reference_width": float((reference["rank_hi"] - reference["rank_lo"]).mean())}
    if ppi_errors:
        errors = np.array(ppi_errors)
        se = errors.std(axis=0, ddof=1) / np.sqrt(len(errors))
        setting["ppi_within_3se"] = float(np.mean(np.abs(errors.mean(axis=0)) <= 3 * se))
        setting["ppi_favoured_bias"] = float(errors.mean(axis=0)[at])
    return pd.DataFrame(records), setting


def summarise(records: pd.DataFrame, setting: dict[str, object]) -> pd.DataFrame:
    """One row: the targets' figures with their Monte Carlo standard errors."""
    n = len(records)
    row: dict[str, object] = {"trials": n, **setting}
    for column in ("power", "power_bh", "power_unadjusted", "false_alarm_circular",
                   "false_alarm_circular_bh", "false_alarm_perfect",
                   "any_false_alarm_perfect", "relative_coverage", "rank_coverage"):
        values = records[column].astype(float)
        row[column] = float(values.mean())
        row[f"{column}_se"] = float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    width = float(records["rank_width"].mean())
    row["rank_width"] = width
    row["width_ratio"] = width / float(str(setting["reference_width"]))
    row["mean_favoured_relative"] = float(records["favoured_relative"].mean())
    return pd.DataFrame([row])


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__ or "", trials=200)
    parser.set_defaults(rate=0.05)
    parser.add_argument("--collection", choices=("round5", "sparse"), default="round5")
    parser.add_argument("--inflation", type=float, default=0.03,
                        help="the circular judge's relative inflation of the favoured run's "
                             "AP to reach (default 0.03)")
    parser.add_argument("--ppi", action="store_true",
                        help="also check that AP~ppi with the circular judge stays unbiased")
    parser.add_argument("--output", help="write the per-trial records to this CSV")
    args = parser.parse_args(argv)
    runs, qrels = (read_round5(args.data) if args.collection == "round5"
                   else sparse_collection(args.seed))
    records, setting = run_experiment(runs, qrels, rate=args.rate, depth=args.depth,
                                      trials=args.trials, seed=args.seed,
                                      inflation=args.inflation, ppi=args.ppi)
    if args.output:
        records.to_csv(args.output, index=False)
    summary = summarise(records, setting)
    sys.stdout.write(summary.T.to_string(header=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
