"""Which importance-sampling distribution estimates best: the paper's u~ or sqrt(u~) in Q, for
each of Schnabel et al.'s forms (ICTIR 2016, eq. 8, 11, MEAN, 15), measured as the paper's
Tables 6 and 8 do, by the exact variance of the eq. 4 estimator (no sampling: the limit of
many trials, per draw; n draws divide it by n).

    python -m studies.importance_variants [--depth K] [--data DIR]

On every topic of TREC-COVID round 5 (the depth-K pool of the 126 runs, labels from the
round-5 qrels, unjudged documents not relevant), for DCG (every rank, the paper's measure),
DCG@10 and P@10, it prints the mean over topics of: for ``single``, each run's variance under
its own eq. 8 distribution, averaged over runs; for ``sqrt`` and ``mean``, eq. 9 / k (the
mean variance over the k runs); for ``krel``, eq. 14 / k (the mean variance of each run's
difference from the runs' mean).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.estimation.engine.views import gain, relevance
from sampleval.measures.exact import rank_weights
from sampleval.measures.weights import at_rank
from sampleval.selection.importance import doc_ranks
from sampleval.selection.priors import (
    FORMS,
    krel_q,
    mean_q,
    named_prior,
    single_system_q,
    sqrt_q,
)
from studies._cli import read_round5, simulation_parser

EPS = 0.05
MEASURES = (("DCG", None), ("DCG", 10), ("P", 10))


def variances(q: np.ndarray, lam_docs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per-draw variance of eq. 4 for each run: sum_y lambda^2 u^2 / Q - U^2."""
    terms = lam_docs * u
    return (terms**2 / q).sum(axis=1) - terms.sum(axis=1) ** 2


def topic_rows(ranks: np.ndarray, labels: np.ndarray, prior: np.ndarray
               ) -> list[dict[str, object]]:
    """The variances of one topic, one row per (measure, q, form)."""
    rows: list[dict[str, object]] = []
    for base, cutoff in MEASURES:
        lam = rank_weights(base, cutoff, int(ranks.max(initial=1)))
        lam_docs = at_rank(lam, ranks)
        u = gain(labels) if base == "DCG" else relevance(labels, 1.0)
        name = f"{base}@{cutoff}" if cutoff else base
        for form in FORMS:
            own = [variances(single_system_q(prior, ranks[s], EPS, lam, form),
                             lam_docs[s:s + 1], u)[0] for s in range(len(ranks))]
            rows.append({"measure": name, "q": "single", "form": form,
                         "variance": float(np.mean(own))})
            for kind, make in (("sqrt", sqrt_q), ("mean", mean_q)):
                v = variances(make(prior, ranks, EPS, lam, form), lam_docs, u)
                rows.append({"measure": name, "q": kind, "form": form,
                             "variance": float(v.mean())})
            relative = lam_docs - lam_docs.mean(axis=0)
            v = variances(krel_q(prior, ranks, EPS, lam, None, form), relative, u)
            rows.append({"measure": name, "q": "krel", "form": form,
                         "variance": float(v.mean())})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__, trials=1)
    args = parser.parse_args(argv)
    runs, qrels = read_round5(args.data)
    pool = Pool.from_runs(runs, depth=args.depth, qrels=qrels)
    prior = named_prior("trec", args.depth)
    rows = []
    for tp in pool:
        present = tp.lengths > 0
        rows += topic_rows(doc_ranks(tp)[present], np.nan_to_num(tp.labels, nan=0.0), prior)
    table = pd.DataFrame(rows).groupby(["measure", "q", "form"], sort=False)["variance"].mean(
    ).unstack("form")
    table["sqrt/paper"] = table["sqrt"] / table["paper"]
    print(f"TREC-COVID round 5: {len(runs)} runs, {len(pool.topics)} topics, depth "
          f"{args.depth}; exact per-draw variance of eq. 4, prior trec, eps {EPS}")
    print(table.to_string(float_format=lambda x: f"{x:.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
