"""Where the bias of ``AP~ht``'s mean over topics comes from when relevant documents are rare
(issue 29, item 1; docs/research/calibration.md, section 12), by simulation.

    python -m studies.ratio_bias --collection cranfield --design stratified --rate 0.05 \
        [--trials 10] [--seed 1000] [--output rows.parquet]

Each trial draws one sample (:func:`studies.interval_coverage.draw`, seed SEED + trial) and
keeps, per topic and run: the relevant documents judged in the topic's sample (k), the
true AP (the pool judged in full), ``AP~ht`` (the default of stratified samples),
``AP~ht(bias=taylor-jackknife)`` (uniform's) and ``AP~ht(bias=none)``, the latter's
numerator S-hat = AP-hat x R-hat and denominator R-hat (Li & Kanoulas, CIKM 2017, sec. 3:
HT estimates of S and R, AP-hat their ratio), and the true R. Printed per column: the bias
of the runs' mean over topics and, by k (4 = four or more), the share of the (topic, run)
rows, their mean error and their contribution to the bias (share x mean error: the
contributions add up to the bias).

The columns besides the estimators are candidates for a point estimate on Cranfield at 5%:

* ``oracle``: S-hat / R with the true R. S-hat is unbiased for S, so this is unbiased for
  AP; it shows which part of the bias is the denominator's.
* ``predicted``: S-hat / R-tilde, R-tilde the topic's R predicted without its own labels:
  the sum over its frame of min(1, kappa prior_d^beta) (the model below, theta_t = 1).
* ``imputed``: where nothing relevant is judged (k = 0, AP-hat = 0/0 := 0), the AP a model
  of the unjudged documents expects: each unjudged document d of a partly-sampled stratum
  h relevant with probability q_d = c r_d / (c + n_h), r_d = min(1, kappa theta_t
  prior_d^beta) (prior_d the document's AP-prior, :func:`~sampleval.core.ap_prior.
  prior_at_ranks`; kappa and beta by Poisson maximum likelihood on every topic's judged
  documents; theta_t a Gamma topic multiplier and c the Beta strength as in
  :func:`sampleval.estimation.engine.unseen.pooled_prior`; c r_d / (c + n_h) the Beta
  posterior mean after none of n_h draws), AP ~ E[S] / E[R] (the ratio of expectations,
  Cochran 1977 sec. 6.2's first order); elsewhere ``AP~ht``.
* ``completed``: on every topic, the strata where nothing relevant was judged completed
  by the same model: (S-hat + sum_d q_d dS_d) / (R-hat + sum_d q_d) over their unjudged
  documents (dS_d: :meth:`~sampleval.estimation.engine.unseen.SampleStrata.change`'s
  one-document change of S; :func:`~sampleval.estimation.engine.unseen.completed_sums`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.estimation.engine.unseen import SampleStrata, completed_sums
from sampleval.estimation.engine.views import MEAN_TOPIC, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import parse_estimate
from sampleval.measures.names import parse_measure
from sampleval.simulation.truth import compute_truth
from studies._cli import COLLECTIONS, read_collection, simulation_parser
from studies.interval_coverage import draw

ESTIMATORS = {"default": "AP~ht", "none": "AP~ht(bias=none,few=none)",
              "taylor-jackknife": "AP~ht(bias=taylor-jackknife)"}
COLUMNS = ("default", "none", "taylor-jackknife", "oracle", "predicted", "imputed",
           "completed")


def topic_rows(pool: Pool, design: str, rate: float, seed: int, qrels_truth: pd.DataFrame,
               qrels: Qrels) -> pd.DataFrame:
    """One sample's rows (module docstring), one per (topic, run) the run retrieved for."""
    sample = draw(design, pool, qrels, rate, seed)
    views = topic_views(pool, sample)
    specs = [parse_estimate(e) for e in ESTIMATORS.values()]
    rows = FAMILIES["ht"].compute(pool.run_names, views, sample, specs, 1.0, 0.95)
    rows = rows[rows["query_id"] != MEAN_TOPIC]
    value = {name: rows[rows["measure"] == spec].set_index(["query_id", "run"])["value"]
             for name, spec in ESTIMATORS.items()}
    shared = SampleStrata(views, 1.0)
    _, beta, predicted = shared.model
    # sum_d q_d dS_d and sum_d q_d (completed_sums at AP-hat 0)
    gained, expected, _ = completed_sums(np.zeros((len(views), len(pool.run_names))), shared)
    true_r = qrels_truth["R"].to_numpy(dtype=float)
    true_ap = qrels_truth.drop(columns="R").to_numpy(dtype=float)
    row_of = {t: i for i, t in enumerate(qrels_truth.index)}
    col_of = {r: i for i, r in enumerate(qrels_truth.columns)}
    out = []
    for t, (view, s, r_pred) in enumerate(zip(views, shared.topics, predicted, strict=True)):
        y = np.nan_to_num(s.y)
        relevant = np.flatnonzero(y > 0)
        r_hat = float(shared.relevant.r_hat[t])
        q_sum = float(expected[t])
        topic = view.pool.topic
        for r, run in enumerate(pool.run_names):
            if (topic, run) not in value["default"].index:
                continue
            none = float(value["none"][topic, run])
            s_hat = none * r_hat
            completed = (s_hat + float(gained[t, r])) / max(r_hat + q_sum, 1e-12)
            out.append((seed, topic, run, len(relevant), float(value["default"][topic, run]),
                        none, float(value["taylor-jackknife"][topic, run]), s_hat, r_hat,
                        q_sum, completed, r_pred,
                        true_r[row_of[topic]], true_ap[row_of[topic], col_of[run]]))
    frame = pd.DataFrame(out, columns=["seed", "query_id", "run", "k", "default", "none",
                                       "taylor-jackknife", "S", "R_hat", "unseen",
                                       "completed", "R_model", "R", "truth"])
    frame["beta"] = beta
    frame["oracle"] = np.where(frame["R"] > 0, frame["S"] / frame["R"].clip(lower=1e-12), 0.0)
    frame["predicted"] = (frame["S"] / frame["R_model"].clip(lower=1e-12)).clip(0.0, 1.0)
    frame["imputed"] = np.where(frame["k"] == 0, frame["completed"], frame["default"])
    frame["completed"] = frame["completed"].clip(0.0, 1.0)
    return frame


def strata_table(pool: Pool, design: str, rate: float, seed: int, qrels: Qrels) -> pd.DataFrame:
    """The design at ``rate`` (one sample, seed ``seed``), per stratum by order of the prior
    (its label; stratum 0 of ``stratified`` is the one judged in full): the topics that have
    it, and over them its mean frame documents N_h, draws n_h, relevant documents (the pool
    judged in full) and relevant found."""
    sample = draw(design, pool, qrels, rate, seed)
    relevant = {(t, d) for t, d, g in qrels.to_frame()[["query_id", "doc_id", "relevance"]]
                .itertuples(index=False) if g >= 1}
    frame = sample.frame.assign(
        judged=lambda f: f["relevance"].notna(),
        relevant=[(t, d) in relevant for t, d in zip(sample.frame["query_id"],
                                                     sample.frame["doc_id"], strict=True)],
        found=lambda f: f["relevance"].fillna(0) >= 1)
    per = frame.groupby(["query_id", "stratum"]).agg(N=("doc_id", "size"), n=("judged", "sum"),
                                                     R=("relevant", "sum"),
                                                     found=("found", "sum")).reset_index()
    per["stratum"] = per["stratum"].astype(str)
    order = sorted(per["stratum"].unique(), key=lambda h: (not h.isdigit(), int(h) if
                                                           h.isdigit() else 0, h))
    table = per.groupby("stratum").agg(topics=("N", "size"), N=("N", "mean"), n=("n", "mean"),
                                       R=("R", "mean"), found=("found", "mean"))
    return table.reindex(order)


def simulate(pool: Pool, qrels: Qrels, design: str, rate: float, trials: int,
             seed: int) -> pd.DataFrame:
    """Every trial's rows (:func:`topic_rows`), trial i at seed ``seed`` + i."""
    exact = compute_truth(pool, qrels, [parse_measure("AP")], [1.0])
    truth = pd.DataFrame(exact.pool["AP"], index=list(exact.topics),
                         columns=list(exact.run_names)).assign(R=exact.num_rel[1.0])
    parts = []
    for trial in range(trials):
        parts.append(topic_rows(pool, design, rate, seed + trial, truth, qrels))
        print(f"trial {trial + 1}/{trials} done", file=sys.stderr, flush=True)
    return pd.concat(parts, ignore_index=True)


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per column of :data:`COLUMNS`: the bias of the runs' mean over topics (over trials
    and runs) and, by relevant judged k (4: four or more), share, mean error and
    contribution (module docstring)."""
    k = frame["k"].clip(upper=4)
    share = k.value_counts(normalize=True).sort_index()
    out = []
    for column in COLUMNS:
        error = frame[column] - frame["truth"]
        means = frame.assign(error=error).groupby(["seed", "run"])["error"].mean()
        by_k = error.groupby(k).mean()
        out.append({"estimate": column, "bias": means.mean(),
                    "rms": float(np.sqrt((means**2).mean())),
                    **{f"error k={i}": by_k.get(i, np.nan) for i in share.index},
                    **{f"contrib k={i}": share[i] * by_k.get(i, np.nan) for i in share.index}})
    head = {"estimate": "share of rows", **{f"error k={i}": share[i] for i in share.index}}
    return pd.DataFrame([head, *out])


def main(argv: Sequence[str] | None = None) -> int:
    parser = simulation_parser(__doc__ or "", trials=10)
    parser.add_argument("--collection", default="cranfield", choices=COLLECTIONS,
                        help="collection (studies._cli.read_collection; default cranfield)")
    parser.add_argument("--design", default="stratified",
                        help="design, as interval_coverage's --designs (default stratified)")
    parser.add_argument("--output", help="also write every (trial, topic, run) row here "
                                         "(parquet)")
    args = parser.parse_args(argv)
    runs, qrels = read_collection(args.collection, args.data, args.depth)
    pool = Pool.from_runs(runs, depth=args.depth, qrels=qrels)
    print(strata_table(pool, args.design, args.rate, args.seed, qrels).to_string(
        float_format=lambda x: f"{x:.2f}"))
    frame = simulate(pool, qrels, args.design, args.rate, args.trials, args.seed)
    if args.output:
        frame.to_parquet(args.output)
    print(f"{args.collection}, {args.design} at {args.rate}, {args.trials} trials, seed "
          f"{args.seed}; mean R-hat by k: "
          f"{frame.groupby(frame['k'].clip(upper=4))['R_hat'].mean().round(2).to_dict()}, "
          f"true R: {frame.groupby(frame['k'].clip(upper=4))['R'].mean().round(2).to_dict()}; "
          f"the model's beta {frame['beta'].min():.2f}-{frame['beta'].max():.2f}")
    print(table(frame).to_string(index=False, float_format=lambda x: f"{x:+.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
