"""Which human sample serves the audit: the design variance of each run's relative bias,
to first order, under several selection methods and budgets, without simulating (issue 31,
item 3).

    python -m studies.audit_design [--collection round5|sparse|round5-rel2] [--judge circular|flip10]
        [--rates 0.05,0.1,0.2] [--methods stratified,audit,audit-neyman]
        [--param disagree=0.02]

The collection, the favoured run and the circular judge are :mod:`studies.audit_power`'s
(k the smallest that inflates the favoured run's AP by ``--inflation`` relative to the
others); ``flip10`` is a noisy judge instead (every true grade replaced by another with
probability 0.1, seed 1; :func:`sampleval.simulation.predictors.flipped`), which both
designs that read the machine's labels and the audit's control side then use.

The audit's relative bias of run r from the people's labels (``plain``, the command's side)
is M_r - AP-hat_r less its mean over the runs; M_r is exact, so its error is that of the
contrast AP-hat_r - mean_s AP-hat_s, to first order the Horvitz-Thompson error
sum_i (delta_i / pi_i - 1) z_ri of z_ri = y_i (a_ri - mean_s a_si), a the true labels'
:func:`~sampleval.selection.audit_neyman.ap_influence`. With the machine's labels m as
control variates (``control``, the library's ``control="machine"``) the error is that of
the same sum of z(m) - z(y), z(m) the influences under m: documents the machine gets right
add nothing but through R and the ranks' precisions. Under stratified simple random
sampling a total's variance is sum_h N_h^2 (1 - n_h / N_h) S_h^2 / n_h (Cochran,
Sampling Techniques, 1977, eq. 5.6), per topic, the topics independent; the mean over T
topics divides by T^2. The selection methods' strata and n_h are their own
(``_layout``), so no sample is drawn.

Printed per rate and method: the favoured run's relative-bias sd, the rms over the other
runs, the rms of the leaderboard's AP estimates (the estimate the same sample serves), the
control side's sd for the favoured run, and the power of Holm's first test at that sd by
the normal approximation, Phi(delta / sd - c) (c: :func:`studies.audit_power.critical`);
then per method the share of the pool whose sd reaches power 0.8, interpolated in
log sd over the rates given. The first-order sd of the favoured run under ``stratified``
on round 5 (0.0163) agrees with the spread over simulated 5% samples (0.0161,
docs/research/audit.md); where relevant documents are rare it understates it (the ratio's
second-order terms: 0.0074 against 0.0106 on the sparse collection), so the simulation
(:mod:`studies.audit_power`) has the last word.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sampleval.cli._app import parse_params
from sampleval.core.pool import Pool, TopicPool
from sampleval.core.predictions import Predictions
from sampleval.errors import UsageError
from sampleval.selection import METHODS, Budget
from sampleval.selection.audit_neyman import ap_influence
from sampleval.selection.strata import StratifiedSelector
from sampleval.simulation.predictors import circular, flipped
from studies._cli import add_data_arguments
from studies.audit_power import (
    COLLECTIONS,
    POWER,
    circular_setting,
    critical,
    read_audit_collection,
)

JUDGES = ("circular", "flip10")


def stratified_methods() -> list[str]:
    """The selection methods whose design is stratified SRS laid out in advance (the ones
    :func:`design_sd` can compute)."""
    return sorted(name for name in METHODS if issubclass(METHODS[name], StratifiedSelector))


def stratified_variance(z: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row of ``z`` (``[k, n_docs]``), the variance of the Horvitz-Thompson total under
    stratified SRS (stratum of each document ``codes``, n_h ``counts``): sum_h N_h^2
    (1 - n_h/N_h) S_h^2 / n_h; a stratum with n_h = 0 adds none (it is outside the frame:
    a bias, which the methods here never leave)."""
    out = np.zeros(z.shape[0])
    sizes = np.bincount(codes, minlength=len(counts))
    for h in np.flatnonzero((sizes > 1) & (counts > 0) & (counts < sizes)):
        inside = codes == h
        n, big = float(counts[h]), float(sizes[h])
        out += big * big * (1.0 - n / big) * z[:, inside].var(axis=1, ddof=1) / n
    return out


def contrasts(labels: np.ndarray, ranking: np.ndarray) -> np.ndarray:
    """``[n_runs, n_docs]``: y_i (a_ri - mean_s a_si), each document's first-order term in
    every run's contrast with the mean over the runs (module docstring)."""
    influence = ap_influence(labels, ranking)
    return labels[None, :] * (influence - influence.mean(axis=0, keepdims=True))


def machine_labels(predictions: pd.DataFrame, pool: Pool, tp: TopicPool) -> np.ndarray:
    """The machine's 0/1 labels of a topic's pooled documents, in pool order."""
    of = predictions[predictions["query_id"] == tp.topic].set_index("doc_id")["prediction"]
    return (of.reindex(pool.docnos_of(tp.topic)).fillna(0.0).to_numpy() >= 0.5).astype(float)


def design_sd(pool: Pool, truth: pd.DataFrame, judge: pd.DataFrame, methods: Sequence[str],
              rates: Sequence[float], favoured: int,
              params: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per (rate, method): the first-order sds of the module docstring; each method
    gets those of ``params`` it declares."""
    truth_grades = truth.rename(columns={"relevance": "prediction"})
    terms = []
    for tp in pool:
        y = machine_labels(truth_grades, pool, tp)
        m = machine_labels(judge, pool, tp)
        plain = contrasts(y, tp.ranking)
        control = contrasts(m, tp.ranking) - plain
        both = np.vstack([plain, control, ap_influence(y, tp.ranking) * y[None, :]])
        terms.append(both)
    n_runs, topics = pool.n_runs, len(terms)
    others = np.arange(n_runs) != favoured
    predictions = Predictions.from_frame(judge)
    rows = []
    for rate in rates:
        for method in methods:
            declared = {p.name for p in METHODS[method].parameters}
            given: dict[str, Any] = {k: v for k, v in (params or {}).items()
                                     if k in declared}
            if METHODS[method].uses_predictions(given):
                given["predictions"] = predictions
            selector = METHODS[method](pool, Budget(rate=rate), np.random.default_rng(0),
                                       **given)
            if not isinstance(selector, StratifiedSelector):
                raise UsageError(f"{method}: not a stratified design (give one of "
                                 f"{', '.join(stratified_methods())})")
            variance = np.zeros(3 * n_runs)
            for tp, both in zip(pool, terms, strict=True):
                layout = selector._layout(tp, selector.budget_for(tp.topic))
                variance += stratified_variance(both, layout.codes, layout.counts)
            sd = np.sqrt(variance.reshape(3, n_runs)) / topics
            rows.append({"rate": rate, "method": method, "favoured_sd": sd[0, favoured],
                         "others_rms": float(np.sqrt((sd[0, others] ** 2).mean())),
                         "leaderboard_rms": float(np.sqrt((sd[2] ** 2).mean())),
                         "control_favoured_sd": sd[1, favoured],
                         "control_others_rms": float(np.sqrt((sd[1, others] ** 2).mean()))})
    return pd.DataFrame(rows)


def with_power(table: pd.DataFrame, inflation: float, runs: int, topics: int) -> pd.DataFrame:
    """``table`` with the power of Holm's first test at each row's favoured sd (normal
    approximation, module docstring)."""
    from scipy import stats

    c = critical(runs, topics)
    return table.assign(power=stats.norm.cdf(inflation / table["favoured_sd"] - c))


def share_for_power(table: pd.DataFrame, inflation: float, runs: int, topics: int
                    ) -> pd.Series:
    """Per method, the share of the pool at which the favoured sd reaches the one power
    :data:`POWER` needs, interpolated in log sd against log share over the rates (NaN
    outside them)."""
    from scipy import stats

    needed = inflation / (critical(runs, topics) + float(stats.norm.ppf(POWER)))
    out = {}
    for method, rows in table.groupby("method", sort=False):
        rows = rows.sort_values("rate")
        sd, rate = np.log(rows["favoured_sd"].to_numpy()), np.log(rows["rate"].to_numpy())
        inside = sd.min() <= np.log(needed) <= sd.max()
        out[method] = (float(np.exp(np.interp(np.log(needed), sd[::-1], rate[::-1])))
                       if inside else np.nan)
    return pd.Series(out, name="share_for_power")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add_data_arguments(parser, "the sparse collection's seed (default 0, as "
                               "studies.audit_power)")
    parser.add_argument("--collection", choices=COLLECTIONS, default="round5",
                        help="round5, round5-rel2 (grade 2 the only relevant one) or sparse "
                             "(synthetic, seeded by --seed); default round5")
    parser.add_argument("--judge", choices=JUDGES, default="circular",
                        help="the machine judge: circular (the favoured run's top k called "
                             "relevant) or flip10 (10%% of the grades replaced); default "
                             "circular")
    parser.add_argument("--inflation", type=float, default=0.03,
                        help="the circular judge's relative inflation to reach (default 0.03)")
    parser.add_argument("--rates", default="0.05", metavar="Q[,Q]",
                        help="the shares of the pool to judge, comma-separated (default 0.05)")
    parser.add_argument("--methods", default="stratified,audit,audit-neyman",
                        metavar="METHOD[,METHOD]",
                        help="the selection methods compared (default "
                             "stratified,audit,audit-neyman)")
    parser.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="a selection method's parameter, given to the methods that "
                             "declare it (repeatable; for example disagree=0.02)")
    args = parser.parse_args(argv)
    params = parse_params(args.param)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or set(methods) - set(stratified_methods()):
        parser.error(f"--methods: give some of {', '.join(stratified_methods())}")
    try:
        rates = [float(r) for r in args.rates.split(",")]
    except ValueError:
        parser.error(f"--rates: comma-separated shares, not {args.rates!r}")
    runs, qrels = read_audit_collection(args.collection, args.data, args.seed)
    setting = circular_setting(runs, qrels, args.depth, args.inflation)
    judge = (circular(setting.truth, setting.pool, setting.favoured, setting.k)
             if args.judge == "circular"
             else flipped(setting.truth, 0.1, np.random.default_rng(1)))
    favoured = list(setting.pool.run_names).index(setting.favoured)
    inflation = float(setting.relative[setting.favoured])
    topics = len(setting.exact_topics)
    table = with_power(design_sd(setting.pool, setting.truth, judge, methods, rates, favoured,
                                 params), inflation, len(runs), topics)
    sys.stdout.write(f"favoured {setting.favoured}, k {setting.k}, inflation {inflation:.4f}, "
                     f"judge {args.judge}\n")
    sys.stdout.write(table.to_string(index=False, float_format="%.4f") + "\n")
    if len(rates) > 1:
        shares = share_for_power(table, inflation, len(runs), topics)
        sys.stdout.write(shares.to_string(float_format="%.3f") + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
