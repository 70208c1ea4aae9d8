"""The parts of ``AP~ht``'s interval per (topic, run), and what each candidate small-sample
rule makes of them (issue 29 item 1; docs/research/calibration.md, section 13).

    python -m studies.interval_parts --collection cranfield --rate 0.1 [--trials 20]
        [--seed 1000] [--design stratified] [--output rows.parquet]

Each trial draws one sample (:func:`studies.interval_coverage.draw`, seed SEED + trial) and
keeps, per topic and run the run retrieved for: the relevant documents judged (k), the true
AP (the pool judged in full), ``AP~ht``'s estimate, its variance before the small-sample
rule (``few=none``), the unseen relevant documents' term (``few=pooled``'s,
:func:`~sampleval.estimation.engine.unseen.unseen_variance`), the estimated bias that widens
the bias-aware interval (0 where k <= 1), the share f of the frame judged, and the completion
gap (:func:`~sampleval.estimation.engine.unseen.completion_gap`). From them, without
re-estimating, every rule's interval of the runs' means:

* ``pooled``: max(V + U, (1 - f) m2_r) where k <= 1 (m2_r the run's mean squared clipped
  AP-hat over the topics with k >= 1), V + U elsewhere (the default before);
* ``completed`` (the default): ``pooled`` with the mean's upper side widened by max(sum of
  a_t, 0)/T, a_t the gap where k = 0, min(gap, 0) elsewhere
  (:func:`~sampleval.estimation.result.upper_allowance`); ``pooled+gap``: a_t the gap on
  every topic;
* ``spread``: the floor (1 - f)(m2_r - m1_r^2) in place of (1 - f) m2_r (the spread of AP
  over the topics; m1_r the mean clipped AP-hat); ``spread+gap`` with every topic's gap;
  ``spread k=0+gap`` / ``spread k=0+completed``: the spread floor where k = 0 only,
  ``pooled``'s where k = 1, with either allowance;
* ``pooled, t(T-1)``: ``pooled`` with the t quantile on T - 1 degrees of freedom;
* with a lower allowance too (the mean's lower side widened by max(sum of c_t, 0) / T, for
  the ratio's positive bias the model reads where something was found; section 14):
  ``completed, two-sided`` (c_t = -a_t: the net gap either way), ``completed, low k=1``
  (c_t = -min(gap, 0) on the topics with one relevant judged), ``completed, low k<=1 net``
  (c_t = -a_t over the topics with k <= 1); ``k=0 gaps``: the upper side by the gaps where
  k = 0, not netted; and the ``spread`` floors with these (``spread+completed``,
  ``spread+completed, low k<=1 net``, ``spread k=0+k=0 gaps``, ``spread k=0+completed, low
  k<=1 net``); ``completed, signed b`` and ``spread k=0+completed, signed b``: the
  estimated bias b widening only the side it points to; with a ``posterior`` column (rows
  drawn since section 14), ``pooled+posterior``, ``spread+posterior`` and ``spread
  k=0+posterior``: each side of the mean widened by the net gap to :func:`posterior_ap`
  (every partly-sampled stratum completed by the model's posterior,
  ``few=posterior``'s estimate) where it points there.

With the columns rows drawn since section 15 hold (``use``: the topics where ``few=posterior``
replaces the estimate; ``few_posterior``: its value from the engine; ``Vpost``:
:func:`completion_variance`), ``few=posterior``'s estimate with candidate variances
(:func:`posterior_table`).

With the columns rows drawn since section 16 hold (``N``: the topic's frame size; ``Rhat``:
HT's R-hat; ``Rpost``: the completion model's expected R, the judged relevant plus sum p_d of
:func:`posterior_ap`'s unjudged documents), a variance model pooled over topics and a
small-sample correction by k (:func:`model_variance`, :func:`model_rules`, :func:`model_table`).

With the column rows drawn since section 17 hold (``Vmodel``: :func:`posterior_variance`, the
completion model's own posterior variance of AP, the rates' Beta spread included),
``few=posterior``'s estimate with the model's variance (:func:`model_posterior_rules`,
:func:`model_posterior_table`) and why it covers the topics and not their mean
(:func:`error_correlation`).

``--rows FILE`` reads the rows an earlier ``--output`` wrote instead of drawing them.

Printed: the diagnosis of ``pooled``'s miss (:func:`studies.interval_coverage.diagnose`) with,
by k (2: two or more), the share of the rows, their contribution to the bias of the mean and
sqrt(mean V / mean squared error) (1: the rows' variance is their error's size); then each
rule's coverage of the mean and width (mean half-width, (hi - lo)/2, over 1.96 rms); then
the default's per-topic coverage by k (:func:`per_topic`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.sample import Sample
from sampleval.estimation.engine.unseen import (
    SampleStrata,
    ap_influence,
    completion_gap,
    posterior_ap,
    posterior_rates,
    posterior_topics,
    unseen_variance,
)
from sampleval.estimation.engine.views import TopicView, topic_views
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.result import (
    UNFLOORED,
    bias_widens,
    corrected,
    is_census,
    judged_relevant,
)
from sampleval.estimation.spec import parse_estimate
from studies._cli import COLLECTIONS, read_collection, simulation_parser
from studies.interval_coverage import diagnose, draw, truth

Z = 1.959963984540054
SMALL = {"A": (5, 20, 1000, 50, 0.01, 0.03), "B": (7, 30, 600, 30, 0.01, 0.03),
         "C": (7, 30, 600, 30, 0.005, 0.02)}
"""Section 12's small sparse synthetic collections: (seed, topics, documents, depth, rel_rate,
rich_rate) of :func:`~sampleval.datasets.synthetic.make_collection` with 8 runs, the pool at
the runs' depth (A is tests/unit/test_calibration.py's ``sparse_collection``)."""


def small_collection(name: str) -> tuple[Pool, Qrels]:
    """The pool and qrels of :data:`SMALL`'s collection ``name``."""
    from sampleval.core.run import Run
    from sampleval.datasets.synthetic import make_collection

    seed, topics, docs, depth, rel_rate, rich_rate = SMALL[name]
    made = make_collection(np.random.default_rng(seed), n_topics=topics, n_runs=8,
                           n_docs=docs, depth=depth, pool_depth=depth, rel_rate=rel_rate,
                           rich_rate=rich_rate)
    runs = [Run.from_frame(frame, run) for run, frame in made.runs.items()]
    qrels = Qrels.from_frame(pd.DataFrame(made.qrels))
    return Pool.from_runs(runs, depth=depth, qrels=qrels,
                          score_type=FAMILIES["ht"].score_type), qrels


def posterior_variance(shared: SampleStrata, spread: bool = True,
                       rates: np.ndarray | None = None,
                       strength: float | None = None) -> np.ndarray:
    """``[topics, runs]``: the posterior variance of :func:`posterior_ap` under the completion
    model, to first order in the unjudged documents' relevance (the ratio's linearisation,
    Cochran 1977, sec. 6.2): AP - E[S]/E[R] ~ sum_d g_d (u_d - p_d) over the unjudged
    documents d of the partly-sampled strata, g_d = (dS_d - AP) / E[R] the ratio's change per
    unit of u_d, dS_d = (1 + sum_{j<k} p_j) / k + sum_{i>k} p_i / i for a document the run
    retrieved at rank k, 0 for one it did not. Given the
    rates theta_d, u_d ~ Bernoulli(theta_d) independently; the rates have the Beta posterior
    theta_d ~ Beta(c r_d + x_h, c (1 - r_d) + n_h - x_h) (mean p_d, variance s_d^2 = p_d
    (1 - p_d) / (c + n_h + 1): Gelman et al., Bayesian Data Analysis, 3rd ed. 2013, sec.
    2.4), and a stratum's rates move together (one stratum's x_h in n_h draws informs every
    one of them: Cov(theta_d, theta_e) = s_d s_e in a stratum, 0 across strata). By the law
    of total variance,

        Var = sum_d g_d^2 (p_d (1 - p_d) - s_d^2) + sum_h (sum_{d in h} g_d s_d)^2,

    the first term the documents' Bernoulli spread given the rates, the second the rates'
    own spread (``spread=False``: without it, sum_d g_d^2 p_d (1 - p_d)). The judged
    documents are as judged (their design variance is not in it). 0 where E[R] = 0.
    ``rates`` and ``strength``: r_d and c of another fit, as :func:`posterior_ap`."""
    frame = shared.frame
    n_topics = len(shared.views)
    out = np.zeros((n_topics, shared.ranks.shape[0]))
    if not n_topics:
        return out
    p = posterior_rates(shared, rates, strength)
    c = shared.prior.strength if strength is None else strength
    unjudged = np.isnan(frame.y) & (frame.stratum >= 0)
    h = np.where(unjudged, frame.stratum, 0)
    s2 = np.zeros(len(p))
    if spread:
        s2[unjudged] = (p * (1.0 - p))[unjudged] / (c + frame.drawn[h[unjudged]] + 1.0)
    w = np.where(unjudged, p * (1.0 - p) - s2, 0.0)
    s = np.sqrt(s2)
    total = np.bincount(frame.topic, weights=p, minlength=n_topics)
    for t, view in enumerate(shared.views):
        if total[t] <= 0:
            continue
        first, last = shared.offsets[t], shared.offsets[t + 1]
        ap, g = ap_influence(view, p[first:last])
        code = np.unique(h[first:last], return_inverse=True)[1]
        common = np.zeros((len(ap), int(code.max(initial=-1)) + 1))
        np.add.at(common.T, code, (g * s[first:last]).T)
        out[t] = (g**2 * w[first:last]).sum(axis=1) + (common**2).sum(axis=1)
    return out


def completion_variance(shared: SampleStrata) -> np.ndarray:
    """``[topics, runs]``: the variance of :func:`posterior_ap`'s completion given the
    rates, to first order: sum_d p_d (1 - p_d) g_d^2 over the unjudged documents of the
    partly-sampled strata (:func:`posterior_variance` without the rates' own Beta spread,
    section 15's ``Vpost``)."""
    return posterior_variance(shared, spread=False)


GROUPS = 10
"""The delete-a-group jackknife's groups of topics (:func:`fit_variance`): topic t in group
t mod GROUPS."""


def fit_variance(shared: SampleStrata, value: np.ndarray, present: np.ndarray) -> np.ndarray:
    """``[runs]``: the variance of ``few=posterior``'s mean over the topics that comes from
    the completion model's fit, by a delete-a-group jackknife (Wolter, Introduction to
    Variance Estimation, 2nd ed. 2007, sec. 4.2): replicate g refits kappa, beta, alpha
    (:meth:`~sampleval.estimation.engine.unseen.SampleStrata.fitted`) and the strength c
    (:func:`~sampleval.estimation.engine.unseen.pooled_prior`) without group g's topics,
    recomputes :func:`posterior_ap` for every topic with them, and takes the runs' mean of
    the estimate (posterior where :func:`posterior_topics`, ``value`` elsewhere) over the
    ``present`` topics; (G - 1)/G sum_g (m_g - mean m)^2. The rows' own sampling is not in it:
    every replicate keeps every topic's judgments for its own rates."""
    from sampleval.estimation.engine.unseen import pooled_prior

    n_topics = len(shared.views)
    use = posterior_topics(shared)[:, None] & present
    if not use.any():
        return np.zeros(value.shape[1])
    group = np.arange(n_topics) % GROUPS
    count = present.sum(axis=0)
    means = []
    for g in np.unique(group):
        without = group == g
        rates = shared.fitted(without)[0]
        strength = pooled_prior([s for s, out in zip(shared.topics, without, strict=True)
                                 if not out]).strength
        est = np.where(use, posterior_ap(shared, rates, strength), value)
        means.append(np.where(present, est, 0.0).sum(axis=0) / np.maximum(count, 1))
    m = np.array(means)
    return (len(m) - 1) / len(m) * ((m - m.mean(axis=0)) ** 2).sum(axis=0)


def drawn_samples(pool: Pool, qrels: Qrels, design: str, rate: float, trials: int,
                  seed: int) -> Iterator[tuple[int, Sample, list[TopicView]]]:
    """Each trial's sample (:func:`studies.interval_coverage.draw`, seed SEED + trial) and
    its views, the trial's progress printed once it is done."""
    for trial in range(trials):
        sample = draw(design, pool, qrels, rate, seed + trial)
        yield trial, sample, topic_views(pool, sample)
        print(f"trial {trial + 1}/{trials} done", file=sys.stderr, flush=True)


def topic_columns(views: list[TopicView], shared: SampleStrata) -> dict[str, np.ndarray]:
    """Per topic: the relevant judged (``k``), whether a bias-aware interval widens there
    (``widens``), whether the sample is a census, whether ``few=posterior`` stands (``use``)
    and the share of the frame judged (``f``)."""
    return {"k": np.array([judged_relevant(v.sample, 1.0) for v in views]),
            "widens": np.array([bias_widens(v.sample, 1.0) for v in views]),
            "census": np.array([is_census(v.sample) for v in views]),
            "use": posterior_topics(shared),
            "f": np.array([float(v.sample.judged.mean()) if v.sample.judged.size else 1.0
                           for v in views])}


def parts_rows(pool: Pool, qrels: Qrels, design: str, rate: float, trials: int,
               seed: int) -> pd.DataFrame:
    """Every trial's rows (module docstring)."""
    from sampleval.estimation.families.ht import PARTS

    spec = parse_estimate("AP~ht")
    with_posterior = parse_estimate("AP~ht(few=posterior)")
    raw = UNFLOORED[PARTS]
    target = truth(pool, qrels, "AP")
    names = pool.run_names
    frames = []
    for trial, sample, views in drawn_samples(pool, qrels, design, rate, trials, seed):
        parts = raw(names, views, sample, spec, 1.0)
        topics = np.array([v.pool.topic for v in views], dtype=object)
        t_idx, r_idx = np.nonzero(np.array([v.pool.present for v in views]))
        shared = SampleStrata(views, 1.0)
        per_topic = {
            **topic_columns(views, shared),
            "N": np.array([v.sample.judged.size for v in views]),
            "Rhat": shared.relevant.r_hat,
            "Rpost": np.bincount(shared.frame.topic, weights=posterior_rates(shared),
                                 minlength=len(views))}
        present = np.array([v.pool.present for v in views])
        fit = fit_variance(shared, np.nan_to_num(parts.value), present) * present.sum(axis=0)
        grid = {"value": parts.value, "V": parts.variance, "b": parts.bias,
                "Vfit": np.broadcast_to(fit, parts.value.shape),
                "U": unseen_variance(parts.value, views, 1.0, "pooled", shared),
                "gap": completion_gap(parts.value, views, 1.0, shared),
                "posterior": posterior_ap(shared),
                "Vpost": completion_variance(shared),
                "Vmodel": posterior_variance(shared),
                "few_posterior": corrected(with_posterior, views, 1.0, parts, shared).value,
                "truth": target.loc[list(topics), list(names)].to_numpy()}
        frames.append(pd.DataFrame({
            "trial": trial, "topic": topics[t_idx], "run": np.asarray(names)[r_idx],
            **{k: v[t_idx] for k, v in per_topic.items()},
            **{k: v[t_idx, r_idx] for k, v in grid.items()}}))
    return pd.concat(frames, ignore_index=True)


class Rule(NamedTuple):
    """A candidate's per-row variance, its per-row allowances (the mean's upper side widened
    by max(sum of ``up``, 0) / T, its lower side by max(sum of ``down``, 0) / T; None: none),
    its normal (or t) quantile, and whether the estimated bias b widens only the side it
    points to (``signed``: the lower side by max(sum b, 0) / T, the upper by max(-sum b, 0)
    / T) instead of both by |sum b| / T."""

    variance: np.ndarray
    up: np.ndarray | None
    down: np.ndarray | None
    q: float
    signed: bool = False


def rules(rows: pd.DataFrame) -> dict[str, Rule]:
    """Every candidate rule (module docstring)."""
    from scipy.stats import t as student

    d = rows
    clipped = d["value"].fillna(0.0).clip(0.0, 1.0)
    seen = d["k"] >= 1
    by = [d["trial"], d["run"]]
    m1 = clipped.where(seen).groupby(by).transform("mean").fillna(0.5)
    m2 = (clipped**2).where(seen).groupby(by).transform("mean").fillna(0.25)
    few = (d["k"] <= 1) & ~d["census"]
    v1 = d["V"] + d["U"]
    pooled = np.where(few, np.maximum(v1, (1 - d["f"]) * m2), v1)
    spread = (1 - d["f"]) * (m2 - m1**2).clip(lower=0.0)
    spread_all = np.where(few, np.maximum(v1, spread), v1)
    spread_zero = np.where(few & (d["k"] == 0), np.maximum(v1, spread), pooled)
    gap = d["gap"].to_numpy()
    nothing = ((d["k"] == 0) & ~d["census"]).to_numpy()
    one = ((d["k"] == 1) & ~d["census"]).to_numpy()
    zeros = np.where(nothing, gap, np.minimum(gap, 0.0))
    only_zeros = np.where(nothing, gap, 0.0)
    high_one = np.where(one, -np.minimum(gap, 0.0), 0.0)
    net_few = -np.where(nothing | one, zeros, 0.0)
    t_q = float(student.ppf(0.975, d["topic"].nunique() - 1))
    return {"pooled": Rule(pooled, None, None, Z), "completed": Rule(pooled, zeros, None, Z),
            "pooled, t(T-1)": Rule(pooled, None, None, t_q),
            "pooled+gap": Rule(pooled, gap, None, Z),
            "spread": Rule(spread_all, None, None, Z),
            "spread+gap": Rule(spread_all, gap, None, Z),
            "spread k=0+gap": Rule(spread_zero, gap, None, Z),
            "spread k=0+completed": Rule(spread_zero, zeros, None, Z),
            "completed, two-sided": Rule(pooled, zeros, -zeros, Z),
            "completed, low k=1": Rule(pooled, zeros, high_one, Z),
            "completed, low k<=1 net": Rule(pooled, zeros, net_few, Z),
            "k=0 gaps": Rule(pooled, only_zeros, None, Z),
            "spread+completed": Rule(spread_all, zeros, None, Z),
            "spread+completed, low k<=1 net": Rule(spread_all, zeros, net_few, Z),
            "spread k=0+k=0 gaps": Rule(spread_zero, only_zeros, None, Z),
            "spread k=0+completed, low k<=1 net": Rule(spread_zero, zeros, net_few, Z),
            "completed, signed b": Rule(pooled, zeros, None, Z, signed=True),
            "spread k=0+completed, signed b": Rule(spread_zero, zeros, None, Z, signed=True),
            **({} if "posterior" not in d else {
                name: Rule(variance, lift, -lift, Z) for lift in [
                    (d["posterior"] - d["value"].fillna(0.0)).to_numpy()]
                for name, variance in (("pooled+posterior", pooled),
                                       ("spread+posterior", spread_all),
                                       ("spread k=0+posterior", spread_zero))})}


def means(rows: pd.DataFrame, rule: Rule) -> pd.DataFrame:
    """Per (trial, run): the mean's error and its interval's lower and upper half-widths
    (:class:`Rule`: each side widened by its allowance)."""
    zero = np.zeros(len(rows))
    d = rows.assign(Vx=rule.variance, bw=np.where(rows["widens"], rows["b"], 0.0),
                    a=zero if rule.up is None else rule.up,
                    c=zero if rule.down is None else rule.down)
    g = d.groupby(["trial", "run"])
    n = g.size()
    half = rule.q * np.sqrt(g["Vx"].sum()) / n
    bias = g["bw"].sum() / n
    low, high = ((bias.clip(lower=0.0), (-bias).clip(lower=0.0)) if rule.signed
                 else (bias.abs(), bias.abs()))
    return pd.DataFrame({"error": g["value"].mean() - g["truth"].mean(),
                         "down": half + low + g["c"].sum().clip(lower=0.0) / n,
                         "up": half + high + g["a"].sum().clip(lower=0.0) / n,
                         "value": g["value"].mean(), "truth": g["truth"].mean()})


def per_topic(rows: pd.DataFrame, rule: Rule | None = None) -> pd.DataFrame:
    """The per-topic intervals of ``rule`` on ``rows`` (default: the default's,
    ``completed``'s): their coverage and width over every row, and by k (3: three or more)
    the rows' share, coverage and the shares of truths below lo and above hi (each topic's
    upper side widened by its own allowance where positive,
    :func:`~sampleval.estimation.result.upper_allowance`)."""
    rule = rules(rows)["completed"] if rule is None else rule
    half = Z * np.sqrt(np.maximum(rule.variance, 0.0)) + np.abs(
        np.where(rows["widens"], rows["b"], 0.0))
    lo = rows["value"] - half
    hi = rows["value"] + half + (0.0 if rule.up is None else np.maximum(rule.up, 0.0))
    below, above = rows["truth"] < lo, rows["truth"] > hi
    error = rows["value"] - rows["truth"]
    out: dict[str, float] = {
        "covers": float((~below & ~above).mean()),
        "width": float(((hi - lo) / 2).mean() / (Z * np.sqrt((error**2).mean())))}
    k = rows["k"].clip(upper=3)
    for level in range(4):
        at = k == level
        out[f"share k={level}"] = float(at.mean())
        if at.any():
            out[f"covers k={level}"] = float((~below & ~above)[at].mean())
            out[f"below k={level}"] = float(below[at].mean())
            out[f"above k={level}"] = float(above[at].mean())
    return pd.DataFrame([out])


def posterior_rules(rows: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, Rule]]:
    """``few=posterior``'s estimate (the engine's, ``few_posterior``: :func:`posterior_ap`
    where ``use``, the design-based value elsewhere, no bias widening where the posterior
    stands) with each candidate variance (section 15): ``pooled`` (the option as built:
    ``pooled``'s variance of the design-based estimate), ``Vpost`` / ``pooled+Vpost`` /
    ``max(pooled, Vpost)`` on the posterior's topics (:func:`completion_variance`),
    ``pooled``'s elsewhere; ``pooled+Vpost, run allowance`` (:func:`run_allowance`); with a
    ``Vfit`` column, ``+fit`` (:func:`fit_variance`); and the default's rows (``completed``)
    for comparison."""
    pooled = rules(rows)["pooled"].variance
    use = rows["use"].to_numpy()
    allowance = run_allowance(rows)
    post = rows.assign(value=rows["few_posterior"], widens=rows["widens"] & ~use)
    v_post = rows["Vpost"].to_numpy()
    return {"default (completed)": (rows, rules(rows)["completed"]),
            **{f"posterior, {name}": (post, Rule(np.where(use, v, pooled), None, None, Z))
               for name, v in (("pooled", pooled), ("Vpost", v_post),
                               ("pooled+Vpost", pooled + v_post),
                               ("max(pooled, Vpost)", np.maximum(pooled, v_post)))},
            "posterior, pooled+Vpost, run allowance": (post, Rule(
                np.where(use, pooled + v_post, pooled), allowance, allowance, Z)),
            **({} if "Vfit" not in rows else {
                f"posterior, {name}+fit": (post, Rule(np.where(use, v, pooled)
                                                      + rows["Vfit"].to_numpy(), None, None, Z))
                for name, v in (("pooled", pooled), ("pooled+Vpost", pooled + v_post))})}


def run_allowance(rows: pd.DataFrame) -> np.ndarray:
    """Per row, its (trial, run)'s allowance for the run's own bias under ``few=posterior``:
    the share of the run's topics where the posterior stands times |mean of (posterior -
    value)| over the run's topics with k >= 3 (where the design-based estimate is the
    better, the model's misreading of the run), 0 where it has none; widening both sides of
    the mean."""
    by = [rows["trial"], rows["run"]]
    gap = (rows["posterior"] - rows["value"]).where(rows["k"] >= 3)
    share = rows["use"].astype(float).groupby(by).transform("mean")
    return (share * gap.groupby(by).transform("mean").abs()).fillna(0.0).to_numpy()


FIT_MINIMUM = 5
"""The fewest topics with k >= 2 a run needs for its own :func:`model_variance` fit (fewer: the
sample's, every run's topics together; none: no model)."""


def model_variance(rows: pd.DataFrame, scale: np.ndarray, design: np.ndarray) -> np.ndarray:
    """Per row, a variance of AP-hat from a model pooled over topics (section 16):
    ``scale`` sigma^2, sigma^2 the ratio sum ``design`` / sum ``scale`` over the rows of the
    same (trial, run) whose sample judged at least two relevant documents (where the design's
    own variance ``design`` is estimable), or over the trial's rows of every run where the run
    has fewer than :data:`FIT_MINIMUM` such topics; NaN where the trial has none. ``scale``
    carries the design: (1 - f) / (f R~) (a ratio of HT sums whose variance is that of about
    f R relevant documents, Cochran 1977, sec. 6.2; R~ the completion model's expected R,
    ``Rpost``), times the model's AP squared for a relative variance."""
    fit = (rows["k"] >= 2).to_numpy() & ~rows["census"].to_numpy() & (scale > 0)
    d = pd.DataFrame({"trial": rows["trial"], "run": rows["run"],
                      "num": np.where(fit, design, 0.0), "den": np.where(fit, scale, 0.0),
                      "n": fit.astype(float)})
    own = d.groupby(["trial", "run"])[["num", "den", "n"]].transform("sum")
    every = d.groupby("trial")[["num", "den", "n"]].transform("sum")
    pick = own["n"] >= FIT_MINIMUM
    num = np.where(pick, own["num"], every["num"])
    den = np.where(pick, own["den"], every["den"])
    usable = (pick | (every["n"] > 0)).to_numpy() & (den > 0)
    return np.where(usable, scale * num / np.where(usable, den, 1.0), np.nan)


def model_rules(rows: pd.DataFrame) -> dict[str, Rule]:
    """Section 16's candidates, each with the default's upper allowance (``completed``):

    * ``k/(k-1)``: the design variance of the topics with k >= 2 relevant judged times k/(k -
      1) (a degrees-of-freedom correction: the ratio's variance rests on about k relevant
      documents), ``pooled``'s elsewhere;
    * ``1/fR k<=1`` / ``P2/fR k<=1``: the topics with k <= 1 (not a census) take
      max(V + U, :func:`model_variance`) with scale (1 - f)/(f R~) or (1 - f) P^2 / (f R~) (P
      the completion model's AP, ``posterior``), fitted on the design variance; ``pooled``'s
      elsewhere (and where no model); ``+ k/(k-1)``: with the correction above, in the fit
      too; ``, BD``: the model capped by the Bhatia-Davis bound (1 - f) P (1 - P) (a value
      in [0, 1] with mean P);
    * ``... everywhere``: the model (with the correction) on every topic that is not a
      census, the design's variance of k >= 2 topics only fitting it."""
    base = rules(rows)
    pooled, zeros = base["pooled"].variance, base["completed"].up
    k = rows["k"].to_numpy()
    census = rows["census"].to_numpy()
    few = (k <= 1) & ~census
    v1 = (rows["V"] + rows["U"]).to_numpy()
    f = rows["f"].to_numpy()
    p = rows["posterior"].to_numpy()
    inflate = np.where(k >= 2, k / np.maximum(k - 1, 1), 1.0)
    odds = (1.0 - f) / (f * rows["Rpost"].to_numpy())
    out = {"completed": base["completed"],
           "k/(k-1)": Rule(pooled * inflate, zeros, None, Z)}
    bound = (1.0 - f) * p * (1.0 - p)
    for name, scale in (("1/fR", odds), ("P2/fR", odds * p**2)):
        plain = model_variance(rows, scale, rows["V"].to_numpy())
        out[f"{name} k<=1"] = Rule(np.where(few & ~np.isnan(plain), np.maximum(v1, plain),
                                            pooled), zeros, None, Z)
        fitted = model_variance(rows, scale, rows["V"].to_numpy() * inflate)
        modelled = few & ~np.isnan(fitted)
        raised = np.where(modelled, np.maximum(v1, fitted), pooled * inflate)
        out[f"{name} k<=1 + k/(k-1)"] = Rule(raised, zeros, None, Z)
        out[f"{name} k<=1 + k/(k-1), BD"] = Rule(np.where(
            modelled, np.minimum(raised, np.maximum(bound, v1)), raised), zeros, None, Z)
        out[f"{name} everywhere"] = Rule(np.where(
            ~census & ~np.isnan(fitted), np.maximum(v1, np.nan_to_num(fitted)),
            pooled * inflate), zeros, None, Z)
    return out


def model_posterior_rules(rows: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, Rule]]:
    """Section 17's candidates: ``few=posterior``'s estimate (as :func:`posterior_rules`) with a
    variance from the completion model itself on the topics where the posterior stands
    (``Vmodel``: :func:`~sampleval.estimation.engine.unseen.posterior_variance`, the
    posterior spread of AP with the rates' own Beta spread), ``pooled``'s elsewhere:

    * ``Vmodel``: the model's variance alone;
    * ``V+Vmodel``: plus the design's variance of what was judged (``V``, the family's
      variance before the small-sample rule);
    * ``V+Vmodel+fit``: plus the model fit's delete-a-group jackknife (``Vfit``, for the
      mean: :func:`fit_variance`);
    * ``pooled+Vmodel``: plus ``pooled``'s variance (``V`` + the unseen documents' term,
      floored where k <= 1);
    * ``V+Vmodel, 1/fR k<=1``: ``V+Vmodel`` raised, on the posterior's topics with k <= 1, to
      section 16's model pooled over topics (``1/fR k<=1 + k/(k-1)``'s, fitted on the k >= 2
      topics' V k/(k - 1)), ``pooled``'s elsewhere (no correction at k >= 3); ``, +fit``:
      with ``Vfit`` too."""
    pooled = rules(rows)["pooled"].variance
    use = rows["use"].to_numpy()
    post = rows.assign(value=rows["few_posterior"], widens=rows["widens"] & ~use)
    v, v_model = rows["V"].to_numpy(), rows["Vmodel"].to_numpy()
    k = rows["k"].to_numpy()
    f = rows["f"].to_numpy()
    inflate = np.where(k >= 2, k / np.maximum(k - 1, 1), 1.0)
    model = model_variance(rows, (1.0 - f) / (f * rows["Rpost"].to_numpy()), v * inflate)
    floor = np.where((k <= 1) & ~np.isnan(model), np.nan_to_num(model), 0.0)
    out = {"default (completed)": (rows, rules(rows)["completed"])}
    for name, variance in (("Vmodel", v_model), ("V+Vmodel", v + v_model),
                           ("pooled+Vmodel", pooled + v_model),
                           ("V+Vmodel, 1/fR k<=1", np.maximum(v + v_model, floor))):
        out[f"posterior, {name}"] = (post, Rule(np.where(use, variance, pooled), None, None, Z))
    fit = rows["Vfit"].to_numpy()
    out["posterior, V+Vmodel+fit"] = (post, Rule(np.where(use, v + v_model, pooled) + fit,
                                                  None, None, Z))
    out["posterior, V+Vmodel, 1/fR k<=1, +fit"] = (post, Rule(np.where(
        use, np.maximum(v + v_model, floor), pooled) + fit, None, None, Z))
    return out


def error_correlation(rows: pd.DataFrame) -> pd.DataFrame:
    """Why the model's variance (``V+Vmodel``, :func:`model_posterior_rules`) covers the topics
    and not their mean: on the rows where the posterior stands, the rows' mean squared error
    over their mean variance (1: right on average); for the mean over topics, each (trial,
    run)'s squared error over its variance sum V / T^2, averaged; and the mean correlation of
    two topics' errors in a run that makes the two agree, rho = (T^2 mse(mean) - sum V) /
    sum_{s != t} sd_s sd_t (over the (trial, run)s, each sum over the run's topics; the
    variance taken as each topic's squared error's expectation, the rest the errors' common
    part; NaN where the posterior stands on no row). The rows' errors are ``few=posterior``'s,
    so the mean's is the estimate's."""
    d, rule = model_posterior_rules(rows)["posterior, V+Vmodel"]
    error = (d["value"] - d["truth"]).to_numpy()
    variance = np.maximum(rule.variance, 0.0)
    use = d["use"].to_numpy()
    g = pd.DataFrame({"trial": d["trial"], "run": d["run"], "e": error, "v": variance,
                      "sd": np.sqrt(variance)}).groupby(["trial", "run"])
    n = g.size()
    total_v, total_sd = g["v"].sum(), g["sd"].sum()
    squared_mean = (g["e"].sum() / n) ** 2
    pairs = total_sd**2 - total_v
    rho = float(((n**2 * squared_mean) - total_v).sum() / max(float(pairs.sum()), 1e-300))
    return pd.DataFrame([{
        "rows' mse / V (posterior's topics)": float((error[use] ** 2).mean()
                                                    / variance[use].mean())
        if use.any() else np.nan,
        "mean's mse / V": float(squared_mean.sum() / (total_v / n**2).sum()),
        "error correlation": rho}])


def model_posterior_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per :func:`model_posterior_rules` candidate: the mean's bias, its Monte Carlo SE
    (clustered by trial) and rms; the mean's coverage, its SE and width; the per-topic
    coverage and width, and the per-topic coverage by k (3: three or more)."""
    return pd.DataFrame([summary(name, d, rule)
                         for name, (d, rule) in model_posterior_rules(rows).items()])


def summary(name: str, d: pd.DataFrame, rule: Rule) -> dict[str, object]:
    """One candidate's figures on its rows ``d``: the mean's bias, its Monte Carlo SE
    (clustered by trial), rms and the spread over runs of each run's mean error; the mean's
    coverage, its SE and width; the per-topic coverage, width and coverage by k (3: three or
    more)."""
    m = means(d, rule)
    covered = (m["error"] <= m["down"]) & (m["error"] >= -m["up"])
    per_trial = m["error"].groupby(level="trial").mean()
    covered_trial = covered.groupby(level="trial").mean()
    rms = float(np.sqrt((m["error"] ** 2).mean()))
    topics = per_topic(d, rule).iloc[0]
    return {"estimate, interval": name, "bias": float(m["error"].mean()),
            "bias se": float(per_trial.std(ddof=1) / np.sqrt(len(per_trial))),
            "rms": rms, "run bias sd": float(m["error"].groupby(level="run").mean().std()),
            "covers": float(covered.mean()),
            "covers se": float(covered_trial.std(ddof=1) / np.sqrt(len(covered_trial))),
            "width": float(((m["down"] + m["up"]) / 2).mean() / (Z * rms)),
            "topic covers": topics["covers"], "topic width": topics["width"],
            **{f"k={i}": topics.get(f"covers k={i}", np.nan) for i in range(4)}}


def model_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per :func:`model_rules` candidate: coverage and width of the mean, and its per-topic
    intervals' (:func:`per_topic`) coverage, width and coverage by k."""
    out = []
    for name, rule in model_rules(rows).items():
        m = means(rows, rule)
        rms = float(np.sqrt((m["error"] ** 2).mean()))
        topics = per_topic(rows, rule).iloc[0]
        out.append({"rule": name,
                    "covers": float(((m["error"] <= m["down"]) & (m["error"] >= -m["up"])
                                     ).mean()),
                    "width": float(((m["down"] + m["up"]) / 2).mean() / (Z * rms)),
                    "topic covers": topics["covers"], "topic width": topics["width"],
                    **{f"k={i}": topics.get(f"covers k={i}", np.nan) for i in range(4)}})
    return pd.DataFrame(out)


def posterior_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per :func:`posterior_rules` candidate: the mean's bias with its Monte Carlo SE
    (clustered by trial), rms, the spread over the runs of each run's bias (its mean error
    over the trials: an error no variance of one sample sees), coverage and width; and the
    per-topic coverage and width."""
    out = []
    for name, (d, rule) in posterior_rules(rows).items():
        m = means(d, rule)
        covered = (m["error"] <= m["down"]) & (m["error"] >= -m["up"])
        per_trial = m["error"].groupby(level="trial").mean()
        rms = float(np.sqrt((m["error"] ** 2).mean()))
        topics = per_topic(d, rule).iloc[0]
        out.append({"estimate, interval": name, "bias": float(m["error"].mean()),
                    "bias se": float(per_trial.std(ddof=1) / np.sqrt(len(per_trial))),
                    "rms": rms, "run bias sd": float(m["error"].groupby(level="run").mean().std()),
                    "covers": float(covered.mean()),
                    "width": float(((m["down"] + m["up"]) / 2).mean() / (Z * rms)),
                    "topic covers": topics["covers"], "topic width": topics["width"]})
    return pd.DataFrame(out)


def decomposition(rows: pd.DataFrame) -> pd.DataFrame:
    """``pooled``'s diagnosis, and by k its rows' share, bias contribution and sqrt(V/mse)."""
    rule = rules(rows)["pooled"]
    variance = rule.variance
    m = means(rows, rule)
    arrays = np.stack([m[c].unstack("run").to_numpy() for c in ("value", "truth", "down")],
                      axis=1)
    out: dict[str, float] = {k: v for k, v in diagnose(arrays).items() if k in (
        "bias_sd", "se_sd", "cover_if_unbiased", "cover_if_true_se")}
    error = rows["value"] - rows["truth"]
    k = rows["k"].clip(upper=2)
    for level in sorted(k.unique()):
        at = k == level
        out[f"share k={level}"] = float(at.mean())
        out[f"bias k={level}"] = float(error[at].sum() / len(rows))
        out[f"sqrt(V/mse) k={level}"] = float(np.sqrt(variance[at].mean()
                                                      / (error[at] ** 2).mean()))
    return pd.DataFrame([out])


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """Each rule's coverage of the mean, its Monte Carlo SE (clustered by trial) and width."""
    out = []
    for name, rule in rules(rows).items():
        m = means(rows, rule)
        covered = (m["error"] <= m["down"]) & (m["error"] >= -m["up"])
        per_trial = covered.groupby(level="trial").mean()
        rms = float(np.sqrt((m["error"] ** 2).mean()))
        out.append({"rule": name, "bias": float(m["error"].mean()), "rms": rms,
                    "covers": float(covered.mean()),
                    "se": float(per_trial.std(ddof=1) / np.sqrt(len(per_trial))),
                    "width": float(((m["down"] + m["up"]) / 2).mean() / (Z * rms))})
    return pd.DataFrame(out)


def parser(doc: str) -> argparse.ArgumentParser:
    """The command line of the studies that draw rows per (trial, topic, run) on one cell
    (this one and :mod:`studies.interval_assisted`)."""
    out = simulation_parser(doc, trials=20)
    out.add_argument("--collection", default="cranfield", choices=(*COLLECTIONS, *SMALL),
                     help="collection (studies._cli.read_collection, or one of the small "
                          "synthetic collections A, B, C: SMALL; default cranfield)")
    out.add_argument("--design", default="stratified",
                     help="design, as interval_coverage's --designs (default stratified)")
    out.add_argument("--output", help="also write every (trial, topic, run) row here "
                                      "(parquet)")
    out.add_argument("--rows", help="read the rows --output wrote (parquet) instead of "
                                    "drawing them (--trials, --seed and --rate then only "
                                    "label the output)")
    return out


def read_rows(args: argparse.Namespace,
              drawn: Callable[[Pool, Qrels, str, float, int, int], pd.DataFrame]
              ) -> pd.DataFrame:
    """The rows ``--rows`` names, or ``drawn``'s (pool, qrels, design, rate, trials, seed)
    on the cell the arguments name; written to ``--output`` if given; the cell's line
    printed."""
    if args.rows:
        rows = pd.read_parquet(args.rows)
    else:
        if args.collection in SMALL:
            pool, qrels = small_collection(args.collection)
        else:
            runs, qrels = read_collection(args.collection, args.data, args.depth)
            pool = Pool.from_runs(runs, depth=args.depth, qrels=qrels,
                                  score_type=FAMILIES["ht"].score_type)
        rows = drawn(pool, qrels, args.design, args.rate, args.trials, args.seed)
    if args.output:
        rows.to_parquet(args.output)
    print(f"{args.collection}, {args.design} at {args.rate}, {args.trials} trials, seed "
          f"{args.seed}, {rows['topic'].nunique()} topics")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    rows = read_rows(parser(__doc__ or "").parse_args(argv), parts_rows)
    print(decomposition(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(table(rows).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    if "few_posterior" in rows:
        print("few=posterior (section 15):")
        print(posterior_table(rows).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        print("per topic (few=posterior, pooled+Vpost):")
        print(per_topic(*posterior_rules(rows)["posterior, pooled+Vpost"]).to_string(
            index=False, float_format=lambda x: f"{x:.3f}"))
    if "Rpost" in rows:
        print("a variance model pooled over topics (section 16):")
        print(model_table(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if "Vmodel" in rows:
        print("few=posterior with the model's own variance (section 17):")
        print(model_posterior_table(rows).to_string(index=False,
                                                    float_format=lambda x: f"{x:.4f}"))
        print(error_correlation(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print("per topic (the default, completed):")
    print(per_topic(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
