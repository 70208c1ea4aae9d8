"""Simultaneous rank intervals for a leaderboard from per-topic values (issue 31).

Given per-topic values ``x[t, r]`` of R runs on T topics (exact measures or estimates from
one shared sample), run r's rank is 1 + the number of runs with a larger mean. Its interval
``[rank_lo, rank_hi]`` counts the runs *significantly* better (rank_lo = 1 + their number)
and significantly worse (rank_hi = R - their number). When no run truly below r is called
better and none truly above is called worse, every true rank lies in its interval; so the
rank intervals are simultaneous at ``ci`` whenever the directional claims "a is above b"
hold a family-wise error rate of 1 - ``ci`` (Al Mohamad, Goeman & van Zwet, "Simultaneous
confidence intervals for ranks", Biometrics 78(1), 2022; Klein, Wright & Wieczorek, "A
joint confidence region for an overall ranking of populations", JRSS C 69(3), 2020, with
Bonferroni's correction).

Each claim is a one-sided paired t-test over the topics: t_p = mean_p / (s_p / sqrt(T)),
mean_p and s_p the mean and standard deviation over topics of the per-topic differences of
pair p (the paired t-test of :mod:`sampleval.estimation.compare`: the spread over topics
carries the sampling variance with the topic variation, its "ultimate cluster" argument),
p-values from Student's t with T - 1 degrees of freedom. ``method``:

- ``holm`` (the default): Holm's step-down over the R(R-1) one-sided hypotheses "a is not
  above b", valid under any dependence between the pairs, and never wider than
  Bonferroni's intervals;
- ``max-t``: single step, c the ``ci`` quantile of max_p |mean*_p - mean_p| / (s*_p /
  sqrt(T)) over a bootstrap of the topics (the max-t method of Westfall & Young 1993, ch. 2,
  studentised; the default before issue 28). With few topics the studentised bootstrap's
  tail is heavy (resamples of a few distinct topics have a small s*): with 12 runs on 19
  topics c reached 6.2, above Bonferroni's 4.05, and every interval was 1-12.

Choice, measured (docs/research/rank-intervals.md, ``python -m studies.rank_intervals``):
on topics resampled from TREC-COVID round 5, Cranfield and a synthetic collection, Holm's
cover as the bootstrap's do and are the shorter (or within 0.05 rank of it) at 10-50 topics.

Assumptions: topics independent; each run has a value on every topic used (topics where
some run has none are left out, with a warning).

:func:`design_rank_intervals` answers the other question, the ranks on *these* topics (the
audit's, :mod:`sampleval.estimation.audit`): the pairwise intervals come from the design
covariance of the runs' estimated means (the sample's variance alone, zero on a census),
with the max-t quantile of their joint normal law (docs/guide/audit.md, "Rank intervals").
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from sampleval.errors import UsageError

RANK_COLUMNS = ["rank", "rank_lo", "rank_hi"]
RANK_METHODS = ("holm", "max-t")
REPLICATES = 1000
"""Bootstrap replicates of the topics for the max-t quantile."""
_CHUNK = 100


def rank_intervals(per_topic: pd.DataFrame, ci: float = 0.95,
                   rng: np.random.Generator | None = None,
                   replicates: int = REPLICATES, method: str = "holm") -> pd.DataFrame:
    """Simultaneous ``ci`` rank intervals (module docstring) from ``per_topic``, a
    ``[topics, runs]`` frame of per-topic values (larger is better; NaN: no value).

    Returns one row per run (indexed by run name, in column order) with ``rank`` (1 + the
    number of runs with a larger mean over the topics it has a value on: the mean of
    :func:`sampleval.estimation.estimates.estimate`'s ``all`` rows; ties share the best rank), ``rank_lo``, ``rank_hi``.
    ``method``: ``holm`` or ``max-t`` (module docstring); ``rng`` draws ``max-t``'s
    bootstrap (default: seed 0, so the same input gives the same intervals)."""
    if not 0 < ci < 1:
        raise UsageError(f"the confidence level must lie in (0, 1), not {ci}")
    if method not in RANK_METHODS:
        raise UsageError(f"unknown rank interval method {method!r} (one of "
                         f"{', '.join(RANK_METHODS)})")
    complete = per_topic.dropna(axis=0, how="any")
    if len(complete) < len(per_topic):
        warnings.warn(f"rank intervals use the {len(complete)} of {len(per_topic)} topics on "
                      "which every run has a value", stacklevel=2)
    values = complete.to_numpy(dtype=np.float64)
    names = [str(c) for c in complete.columns]
    n_topics, n_runs = values.shape
    means = per_topic[complete.columns].mean(axis=0).fillna(-np.inf).to_numpy()
    better = (None if n_runs < 2 or n_topics < 2 else
              significantly_better(values, ci, rng or np.random.default_rng(0), replicates,
                                   method))
    return _rank_table(names, means, better)


def _rank_table(names: list[str], means: np.ndarray, better: np.ndarray | None
                ) -> pd.DataFrame:
    """``rank`` (1 + the runs with a larger mean), ``rank_lo`` (1 + the runs significantly
    better) and ``rank_hi`` (R - the runs significantly worse) from ``better`` (``[runs,
    runs]``, True at (a, b) when a is significantly better than b; None: nothing is)."""
    n_runs = len(names)
    rank = 1 + (means[None, :] > means[:, None]).sum(axis=1)
    if better is None:
        lo, hi = np.ones(n_runs, dtype=np.int64), np.full(n_runs, n_runs, dtype=np.int64)
    else:
        lo = 1 + better.sum(axis=0)  # runs significantly better than r
        hi = n_runs - better.sum(axis=1)  # runs r is significantly better than
    return pd.DataFrame({"rank": rank, "rank_lo": lo, "rank_hi": hi},
                        index=pd.Index(names, name="run"))


def design_rank_intervals(means: pd.Series, covariance: np.ndarray, ci: float = 0.95,
                          rng: np.random.Generator | None = None,
                          replicates: int = REPLICATES) -> pd.DataFrame:
    """Simultaneous ``ci`` rank intervals of the runs' estimated ``means`` (a Series by
    run) on *these* topics, from the estimates' design covariance ``covariance`` ``[runs,
    runs]`` (the sample's variance alone: the topics are fixed, as in the audit; a census
    gives the exact ranks). Pair (a, b) is significantly ordered when |mean_a - mean_b| >
    c sqrt(D_ab), D_ab = S_aa + S_bb - 2 S_ab, and c the ``ci`` quantile of max over pairs
    of |Z_a - Z_b| / sqrt(D_ab) for Z ~ N(0, S) (the max-t method with the estimates'
    joint normal distribution, Hothorn, Bretz & Westfall, Biometrical Journal 50(3), 2008;
    S projected on the positive semidefinite matrices for the draws, ``replicates`` of
    them from ``rng``, default seed 0). A pair with D_ab = 0 is ordered whenever its means
    differ. Ranks from the intervals as :func:`rank_intervals`."""
    if not 0 < ci < 1:
        raise UsageError(f"the confidence level must lie in (0, 1), not {ci}")
    names = [str(n) for n in means.index]
    values = means.to_numpy(dtype=np.float64)
    n_runs = len(values)
    if n_runs < 2:
        return _rank_table(names, values, None)
    cov = np.asarray(covariance, dtype=np.float64)
    a, b = np.triu_indices(n_runs, k=1)
    diag = np.diagonal(cov)
    pair_var = np.maximum(diag[a] + diag[b] - 2.0 * cov[a, b], 0.0)
    crit = _normal_max_t(cov, a, b, ci, rng or np.random.default_rng(0), replicates)
    gap = values[a] - values[b]
    out = np.zeros((n_runs, n_runs), dtype=bool)
    ordered = np.abs(gap) > crit * np.sqrt(pair_var)
    out[a[ordered & (gap > 0)], b[ordered & (gap > 0)]] = True
    out[b[ordered & (gap < 0)], a[ordered & (gap < 0)]] = True
    return _rank_table(names, values, out)


def _normal_max_t(cov: np.ndarray, a: np.ndarray, b: np.ndarray, ci: float,
                  rng: np.random.Generator, replicates: int) -> float:
    """The ``ci`` quantile of max_p |Z_a - Z_b| / sd(Z_a - Z_b), Z ~ N(0, ``cov``) (its
    positive semidefinite part), over ``replicates`` draws; pairs of zero variance
    contribute 0."""
    eigen, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    root = vectors * np.sqrt(np.maximum(eigen, 0.0))[None, :]  # cov+ = root root'
    psd = root @ root.T
    diag = np.diagonal(psd)
    sd = np.sqrt(np.maximum(diag[a] + diag[b] - 2.0 * psd[a, b], 0.0))
    scale = np.divide(1.0, sd, out=np.zeros(len(sd)), where=sd > 1e-12 * (sd.max(
        initial=0.0) + 1e-300))
    if not scale.any():
        return 0.0
    maxima = np.empty(replicates)
    done = 0
    while done < replicates:
        size = min(_CHUNK, replicates - done)
        z = rng.standard_normal((size, len(cov))) @ root.T
        maxima[done:done + size] = (np.abs(z[:, a] - z[:, b]) * scale).max(axis=1)
        done += size
    return float(np.quantile(maxima, ci))


def significantly_better(values: np.ndarray, ci: float, rng: np.random.Generator,
                         replicates: int = REPLICATES, method: str = "holm") -> np.ndarray:
    """``[runs, runs]``: True at (a, b) when run a's mean is significantly above run b's by
    ``method``'s paired t-tests over the topics (module docstring)."""
    n_topics, n_runs = values.shape
    a, b = np.triu_indices(n_runs, k=1)
    diff, t = paired_t(values, a, b)
    if method == "holm":
        above, below = np.split(holm_one_sided(t, n_topics - 1, 1.0 - ci), 2)
    else:
        crit = max_t_quantile(diff, diff.mean(axis=0), ci, rng, replicates)
        above, below = t > crit, t < -crit
    out = np.zeros((n_runs, n_runs), dtype=bool)
    out[a[above], b[above]] = True
    out[b[below], a[below]] = True
    return out


def paired_t(values: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray,
                                                                        np.ndarray]:
    """The per-topic differences ``values[:, a] - values[:, b]`` (``[topics, pairs]``) and
    each pair's paired t statistic (+-inf where every difference is the same non-zero
    value, 0 where all are 0)."""
    diff = values[:, a] - values[:, b]
    mean = diff.mean(axis=0)
    sd = diff.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, mean * np.sqrt(len(diff)) / np.where(sd > 0, sd, 1.0),
                     np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
    return diff, t


def holm_one_sided(t: np.ndarray, df: int, alpha: float) -> np.ndarray:
    """Holm's step-down at ``alpha`` over the 2 x len(``t``) one-sided hypotheses "a is not
    above b", then "b is not above a", for each pair (``t``: a's paired t over b, p-values
    from Student's t with ``df`` degrees of freedom): True where rejected."""
    from scipy import stats

    from sampleval.estimation.compare import adjust

    return adjust(np.concatenate([stats.t.sf(t, df), stats.t.sf(-t, df)]), "holm") < alpha


def max_t_quantile(diff: np.ndarray, mean: np.ndarray, ci: float, rng: np.random.Generator,
                   replicates: int = REPLICATES) -> float:
    """The ``ci`` quantile of max over pairs of |mean* - mean| / (s* / sqrt(T)) over
    ``replicates`` bootstrap resamples of the topics (rows of ``diff``); a pair whose
    resampled differences are all equal (s* = 0) contributes 0 (its mean* is then its
    mean)."""
    n_topics = diff.shape[0]
    squares = diff * diff
    root = np.sqrt(n_topics)
    maxima = np.empty(replicates)
    done = 0
    while done < replicates:
        size = min(_CHUNK, replicates - done)
        counts = rng.multinomial(n_topics, np.full(n_topics, 1.0 / n_topics), size=size)
        m = counts @ diff / n_topics  # [size, pairs]
        var = np.maximum(counts @ squares / n_topics - m * m, 0.0) * n_topics / (n_topics - 1)
        sd = np.sqrt(var)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(sd > 1e-12 * (np.abs(m) + 1.0),
                         np.abs(m - mean) * root / np.where(sd > 0, sd, 1.0), 0.0)
        maxima[done:done + size] = t.max(axis=1) if t.shape[1] else 0.0
        done += size
    return float(np.quantile(maxima, ci))


def with_ranks(results: pd.DataFrame, per_topic: dict[str, pd.DataFrame], ci: float = 0.95,
               rng: np.random.Generator | None = None) -> pd.DataFrame:
    """``results`` (rows ``run, query_id, measure, ...`` as :func:`sampleval.estimation.estimates.
    estimate` returns them) with ``rank``, ``rank_lo``, ``rank_hi`` on each measure's
    ``all`` rows (NaN elsewhere), from ``per_topic[measure]`` (``[topics, runs]``)."""
    from sampleval.estimation.estimates import MEAN_TOPIC

    out = results.copy()
    for column in RANK_COLUMNS:
        out[column] = np.nan
    rng = rng or np.random.default_rng(0)
    for measure, table in per_topic.items():
        ranks = rank_intervals(table, ci, rng)
        rows = ((out["measure"] == measure) & (out["query_id"] == MEAN_TOPIC)
                & out["run"].isin(ranks.index))
        for column in RANK_COLUMNS:
            out.loc[rows, column] = ranks.loc[out.loc[rows, "run"], column].to_numpy()
    return out


def per_topic_values(results: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each measure's per-topic values of ``results`` as ``[topics, runs]``."""
    from sampleval.estimation.estimates import MEAN_TOPIC

    topics = results[results["query_id"] != MEAN_TOPIC]
    return {str(m): rows.pivot(index="query_id", columns="run", values="value")
            for m, rows in topics.groupby("measure", sort=False)}


def ranked(results: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """``results`` with every measure's rank intervals (:func:`with_ranks` of its own
    per-topic rows)."""
    return with_ranks(results, per_topic_values(results), ci)


def true_rank_range(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run's best and worst true rank (they differ where true means tie)."""
    above = (means[None, :] > means[:, None]).sum(axis=1)
    tied = (means[None, :] == means[:, None]).sum(axis=1)
    return 1 + above, above + tied


def covers_ranks(lo: np.ndarray, hi: np.ndarray, means: np.ndarray) -> bool:
    """Whether rank intervals ``[lo, hi]`` hold every run's true rank together (the true
    ``means``; a run tied with others: any of the tied ranks)."""
    best, worst = true_rank_range(np.asarray(means, dtype=np.float64))
    return bool(((lo <= worst) & (best <= hi)).all())
