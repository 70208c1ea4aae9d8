"""Which estimator plain ``NumRelRet`` gets on Poisson, inclusion-only, with-replacement and
importance samples (issue 28): bias, rms, coverage and width of every run's sum over
topics, where the truth is known.

    python -m studies.numrelret_defaults [--collection round5] [--trials 20] [--rate 0.1]
        [--depth 100] [--seed 0] [--runs N]

The truth is a collection judged in full to ``--depth`` (``--collection``: TREC-COVID round 5,
Cranfield, synthetic; :func:`studies._cli.read_collection`, unjudged = not relevant;
``--runs N``: N of its runs spread evenly over their order by name, all by default).
Each trial (seed SEED + trial) judges ``--rate`` of each topic's pool by each design:

- ``poisson``: every pooled document independently with probability pi_i proportional to
  its AP-prior mass over the runs (:func:`sampleval.core.ap_prior.document_prior`), the
  expected size ``--rate`` of the pool, pi_i at most 1 and at least rate / 10;
- ``inclusion``: the same sample read as inclusion-only (prels: pi_ij not known);
- ``with-replacement``: the ``active`` method (its defaults);
- ``importance``: the ``importance`` method (its defaults; the budget counts draws).

Every estimator of ``NumRelRet`` whose family accepts the design and needs no predictions
estimates every run's sum over topics. Reported per design and estimator: the bias and rms
of the sum (over runs and trials), the coverage of its 95% interval, and its width, the
mean half-width over 1.96 x the rms (1: as wide as the error needs).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.ap_prior import document_prior
from sampleval.core.design import as_design
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.estimation.family import FAMILIES
from sampleval.measures.evaluation import evaluate
from sampleval.selection import Budget, qrels_oracle, simulate
from sampleval.simulation.grid import parse_method
from studies._cli import COLLECTIONS, add_data_arguments, read_collection

DESIGNS = ("poisson", "inclusion", "with-replacement", "importance")
METHODS = {"with-replacement": "active", "importance": "importance"}


def estimators(design: str) -> list[str]:
    """Every ``NumRelRet`` estimator whose family accepts ``design`` and needs no
    predictions."""
    return [f"NumRelRet~{f.name}" for f in FAMILIES.values()
            if f.estimates("NumRelRet", None, design) and not f.needs_predictions]


def poisson_sample(pool: Pool, qrels: Qrels, rate: float, rng: np.random.Generator,
                   design: str) -> Sample:
    """A Poisson sample of ``pool`` (module docstring) labelled from ``qrels``, of
    ``design`` (``poisson`` or ``inclusion``)."""
    grades = {(q, d): g for q, d, g in qrels.frame[["query_id", "doc_id", "relevance"]]
              .itertuples(index=False)}
    frames = []
    for tp in pool:
        prior = document_prior(tp)
        pi = np.clip(rate * tp.size * prior / prior.sum(), rate / 10, 1.0)
        drawn = rng.random(tp.size) < pi
        docnos = pool.docnos[tp.doc_ids]
        labels = np.array([max(0.0, grades.get((tp.topic, str(d)), 0.0)) for d in docnos])
        frames.append(pd.DataFrame({"query_id": tp.topic, "doc_id": docnos,
                                    "relevance": np.where(drawn, labels, np.nan),
                                    "stratum": None, "inclusion": pi}))
    return Sample(design=as_design(design), frame=pd.concat(frames, ignore_index=True))


def trial_sample(design: str, pool: Pool, qrels: Qrels, rate: float,
                 rng: np.random.Generator) -> Sample:
    if design in ("poisson", "inclusion"):
        return poisson_sample(pool, qrels, rate, rng, design)
    selector = parse_method(METHODS[design]).make(pool, Budget(rate=rate), rng)
    return simulate(selector, qrels_oracle(qrels)).sample()


def measure(runs: Sequence[Run], qrels: Qrels, depth: int, rate: float, trials: int,
            seed: int) -> pd.DataFrame:
    """One row per (design, estimator): see the module docstring."""
    pool = Pool.from_runs(runs, depth)
    exact = evaluate(qrels, runs, ["NumRelRet"], depth=depth)
    truth = exact[exact["query_id"] == MEAN_TOPIC].set_index("run")["value"]
    rows = []
    for design in DESIGNS:
        names = estimators(design)
        errors: dict[str, list[np.ndarray]] = {n: [] for n in names}
        halves: dict[str, list[np.ndarray]] = {n: [] for n in names}
        for trial in range(trials):
            sample = trial_sample(design, pool, qrels, rate,
                                  np.random.default_rng(seed + trial))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = estimate(sample, runs, names, depth=depth)
            sums = got[got["query_id"] == MEAN_TOPIC]
            for name in names:
                mine = sums[sums["measure"] == name].set_index("run")
                errors[name].append(mine["value"].to_numpy() - truth[mine.index].to_numpy())
                halves[name].append((mine["hi"] - mine["lo"]).to_numpy() / 2)
        for name in names:
            error, half = np.concatenate(errors[name]), np.concatenate(halves[name])
            rms = float(np.sqrt(np.mean(error ** 2)))
            rows.append({"design": design, "estimator": name, "trials": trials,
                         "truth_mean": float(truth.mean()), "bias": float(error.mean()),
                         "rms": rms, "cover": float(np.mean(np.abs(error) <= half)),
                         "width": float(np.mean(half) / (1.959964 * rms)) if rms else np.nan})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--collection", choices=COLLECTIONS, default="round5")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--runs", type=int, help="use N of the runs (default: all)")
    add_data_arguments(parser, "seed of the first trial; trial i uses SEED + i (default 0)")
    args = parser.parse_args(argv)
    runs, qrels = read_collection(args.collection, args.data, args.depth)
    if args.runs:
        runs = sorted(runs, key=lambda r: r.name)
        runs = [runs[i] for i in np.unique(np.linspace(0, len(runs) - 1, args.runs).round()
                                           .astype(int))]
    table = measure(runs, qrels, args.depth, args.rate, args.trials, args.seed)
    table.insert(0, "collection", args.collection)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
