"""Per-draw (Hansen-Hurwitz) estimators for with-replacement designs, adaptive ones included.

Hansen & Hurwitz ("On the theory of sampling from finite populations", Ann. Math. Stat.,
1943) estimate a total T = sum_d z_d from n draws d_1..d_n with replacement, draw k taking
document d with probability p_k(d), by the mean of the per-draw terms

    T-hat = (1/n) sum_k z_{d_k} / p_k(d_k).

Here p_k may depend on everything drawn and judged before draw k (active sampling, Li &
Kanoulas, CIKM 2017: p_t of round t, steered by the judgments of rounds 1..t-1; importance
sampling, Schnabel et al., ICTIR 2016, eq. 4, is the case of a fixed p = Q). With F_{k-1} the
history before draw k, E[z_{d_k} / p_k(d_k) | F_{k-1}] = sum_d p_k(d) z_d / p_k(d) = T
whenever p_k(d) > 0 wherever z_d != 0, so X_k = z_{d_k}/p_k(d_k) - T are martingale
differences: T-hat is unbiased for a fixed n, and, the X_k being uncorrelated (E[X_j X_k] =
E[X_j E[X_k | F_{k-1}]] = 0 for j < k), Var(T-hat) = (1/n^2) sum_k E[X_k^2]. Its estimate
is the sample variance of the terms over n, s^2 / n (consistent when the conditional
variances settle; it needs no inclusion probabilities, unlike Horvitz-Thompson's
path-dependent pi_i and pi_ij). When n is itself random (active sampling stops at a number
of distinct judged documents), the mean over a stopping time is nearly but not exactly
unbiased (E[sum_k X_k] = 0 by optional stopping; the mean divides by n).

Totals, per run h (k the cutoff, r = rank_h(d); every draw's label must be judged):

- NumRel: z_d = rel(d), the number of relevant documents in the frame;
- P@k: z_d = rel(d) 1{r <= k} / k;
- DCG@k: z_d = gain(d) / log2(r + 1) for r <= k (every r without k);

rel is ``base.relevance`` at the level, gain ``base.gain``; documents outside the frame count
as not relevant. Intervals are normal (``base.summarise``).

Ratio measures (``AP~hh``, ``R@k~hh``, ``Rprec~hh``, ``nDCG[@k]~hh``) are ratios of such
per-draw estimates, computed by :func:`sampleval.estimators.ppi.without_predictions`: the
``draws`` form of the prediction-powered family (:mod:`.ppi`) with every prediction 0, so
``AP~hh`` is ``AP~ppi(form=draws)`` with predictions all 0, value and interval, and the two
cannot drift apart. R-hat = (1/n) sum_k rel(d_k)/p_k(d_k) (NumRel above). R@k and Rprec
divide the per-draw estimate of the relevant retrieved in the top k (Rprec: k =
floor(R-hat), or int(R-hat + 0.5) with ``cut=round``) by R-hat; nDCG divides DCG-hat by the
ideal DCG of the per-draw counts of each grade, rounded as NIST's sample_eval rounds. AP =
N/R, N = sum_{i, j} rel_i rel_j 1{rank_j < rank_i}/rank_i + sum_i rel_i/rank_i a sum over
ordered pairs of documents, estimated by

    N-hat = (1/n) sum_k rel_k/(rank_k p_k) + 1/(n (n - 1)) sum_{k != l} x_{d_k d_l}/(p_k p_l),

the second sum over ordered pairs of draws of two different documents (draws of one document
share a rank and are never a pair): a U-statistic of order 2 (Hoeffding, Ann. Math. Stat.,
1948). For a pair k < l, E[x/(p_k p_l) | F_{l-1}] = sum_j x_{d_k j}/p_k(d_k) (draw l's
probability given everything before it), whose expectation given F_{k-1} is the pair total:
the pair sum is unbiased by the same martingale argument, the order of a pair mattering
only through its rank condition. Variance: each estimate linearised (Taylor; Sarndal,
Swensson & Wretman, *Model Assisted Survey Sampling*, 1992, ch. 5) into per-draw values u_k
(a pair sum's is its Hoeffding projection, W_kk x_kk + sum_{l != k} W_kl (x_kl + x_lk)),
u_k = (iota^N_k - Q iota^R_k)/R-hat for a ratio Q = N/R, and estimated as n times their
sample variance, s^2/n as for a total.

What is unbiased. NumRel, P@k and DCG@k are totals: their per-draw estimate is unbiased for
a fixed n under adaptive draw probabilities, so long as every draw can reach every document
that counts (p_k(d) > 0 wherever z_d != 0). So are N-hat and R-hat, AP's numerator and
denominator. A ratio of two unbiased estimates is not: AP-hat = N-hat/R-hat is too high by
about (AP V(R-hat) - C(N-hat, R-hat))/R^2 (Cochran, *Sampling Techniques*, 1977, sec. 6.8).
AP's ``bias`` option removes part of it: ``jackknife`` (the default, "Defaults" below)
subtracts Quenouille's delete-one jackknife estimate over the draws (Biometrika 1956; each
replicate re-weights the other n - 1 draws, the interval takes the replicates' jackknife
variance); ``taylor`` subtracts that term, with V and C estimated from the draws; ``none``
leaves AP-hat as it is.
Both corrections take away the first-order (1/n) bias only, and no estimator can do better
in general: no AP estimator is unbiased under a design that never judges the whole frame,
since AP's multilinear form in the frame's labels has a term in all of them
(docs/predictions.md, "What it computes", gives the proof). R@k, Rprec and nDCG divide by an
estimated R or grade count and are biased in the same way; they subtract the first-order
term by default (``correction=taylor``, as ``R@k~ht``'s and ``R@k~ppi``'s;
``none``, the plain ratio, by name; full-depth nDCG on ``active`` samples, 100 samples:
+0.0106 -> +0.0045 at 5%, +0.0046 -> +0.0013 at 10%, docs/methods.md "nDCG: the same
correction"). On ``active:uniform=0`` samples (TREC-COVID round 5, 200 samples,
docs/methods.md "R@k and Rprec: the ratio's bias") it takes the bias of R@100's mean from
+0.025 to +0.015 at 5% and +0.013 to +0.007 at 10%, Rprec's from +0.019 to +0.009 and
+0.010 to +0.004, and the intervals of the mean from covering 0.41-0.72 to 0.66-0.85.

Defaults. On with-replacement samples (``active``) a plain AP, R@k, Rprec or NumRel is
estimated here; so are P@k, DCG and nDCG where every draw could reach every document
(``active``'s default uniform share, :data:`sampleval.estimators.defaults.REACHING`:
unbiased there, where ``P@10~ht`` misses by -0.033 at 5%; docs/methods.md, "A uniform share
by default"), by ``~ht`` on samples drawn without one (``active:uniform=0``, the paper's:
there the per-draw P@10's rms is twice ``~ht``'s); on importance samples AP, Rprec and
NumRel here (no other family estimates them there without predictions), P@k, DCG, nDCG and
R@k by ``is``. ``~ht`` on active samples
weights each judged document by 1/pi_i computed from the rounds, which adapt to the
judgments: a relevant document found early raises its own later draw probabilities, so
R-hat comes out low and every ratio over it high (docs/methods.md, "active"). The per-draw
ratios do not carry that bias, only the ratio's own. TREC-COVID round 5, depth 100, the pool
judged in full as the truth, 126 runs, 50 topics, ``active:uniform=0`` (the paper's design,
``active``'s default when this was measured), 200 trials per budget (R@k 100), run at load
4-7 on 2 cores::

    nice -n 10 python -m sampleval.experiments.interval_coverage --designs active:uniform=0
        --rate R --trials 50 --seed S --raw F --measures 'AP~ht;AP~hh(bias=taylor);
        AP~hh(bias=jackknife);AP~hh(bias=none);Rprec~ht;Rprec~hh;nDCG@10~ht;nDCG@10~hh'

for R = 0.05, 0.1 and S = 7000, 7050, 7100, 7150, pooled (R@k: ``--measures
'R@10~ht;R@10~hh;R@100~ht;R@100~hh'``, S = 7000, 7050). rms error of each run's mean over
topics, coverage of its 95% interval, and bias, at 5% / 10% (docs/predictions.md, "Active
sampling: AP~hh and the defaults", adds per-topic coverage and the runs within 3 standard
errors):

    estimator               rms                covers the mean   bias
    AP~ht                   0.0305 / 0.0195    0.48 / 0.44       +0.0238 / +0.0152
    AP~hh(bias=jackknife)   0.0177 / 0.0110    0.90 / 0.91       +0.0069 / +0.0027
    AP~hh(bias=taylor)      0.0191 / 0.0111    0.81 / 0.87       +0.0106 / +0.0043
    AP~hh(bias=none)        0.0244 / 0.0136    0.66 / 0.77       +0.0175 / +0.0086
    Rprec~ht                0.0427 / 0.0270    0.16 / 0.17       +0.0373 / +0.0235
    Rprec~hh                0.0246 / 0.0140    0.57 / 0.72       +0.0188 / +0.0096
    R@10~ht                 0.0131 / 0.0074    0.30 / 0.41       +0.0110 / +0.0059
    R@10~hh                 0.0090 / 0.0054    0.64 / 0.73       +0.0060 / +0.0027
    R@100~ht                0.0517 / 0.0311    0.12 / 0.14       +0.0460 / +0.0274
    R@100~hh                0.0307 / 0.0165    0.42 / 0.62       +0.0251 / +0.0120
    nDCG@10~ht              0.0520 / 0.0319    0.84 / 0.86       -0.0244 / -0.0128
    nDCG@10~hh              0.0942 / 0.0467    0.92 / 0.92       -0.0023 / -0.0019

``AP~hh`` has the lower rms and the better-covering intervals at both budgets, whatever its
``bias`` option. ``bias=jackknife`` covers best at the lowest rms, so it is ``AP~hh``'s
default, and ``AP~hh`` is the default AP there. It is not unbiased: 10% / 23% of the runs'
mean over the 200 trials lie within 3 standard errors of the truth (``AP~ht`` 2% / 2%).
``AP~ht`` stays the paper's estimator by name (Li & Kanoulas, CIKM 2017, sec. 3). Rprec and
R@k: ``~hh`` is better on both counts at both budgets, so it is their default. nDCG@10:
``~hh`` is nearly unbiased and covers better, but its rms is 1.5-1.8 times ``~ht``'s (its
per-draw terms spread over the whole pool). So ``nDCG~ht`` stays the default, as P@10~ht
does: its rms is the lower on active samples (docs/predictions.md). DCG follows P@k and
nDCG (not measured). NumRel~hh was already the default (docs/guide/estimating.md, the 2000 trials on topics
1-10).

Bias-aware interval (``AP~hh(interval=...)``, as ``AP~ht``'s: docs/methods.md, "Bias-aware
intervals"). The jackknife and the Taylor correction estimate the same first-order bias;
what they disagree on is what neither removes. ``bias-aware`` (the default with
``bias=jackknife`` or ``taylor``) widens the interval beyond z standard errors by the gap
between the two, |AP~hh(bias=jackknife) - AP~hh(bias=taylor)| per topic and its mean over
the topics for the mean; ``normal`` is z standard errors. On the 200 ``active`` samples
above (the rows of ``AP~hh(bias=jackknife)`` and ``AP~hh(bias=taylor)``; the option's own
output equals it on the first 50 at each budget, 0.918 at 5%), the mean covers 0.931 /
0.932 at 5% / 10% against 0.901 / 0.912, at intervals 13% / 9% wider (mean half-width
0.0283 -> 0.0321, 0.0183 -> 0.0200). Both corrections come from one pass over the draws
(:func:`sampleval.estimators.ppi.ppi_values`' ``remaining``), so it costs no more than
``interval=normal``: one AP~hh on an ``active`` 5% sample, 126 runs, 0.22 s of CPU either
way (best of 3, load 4; 0.35 s when the other correction was a second pass).
"""

from __future__ import annotations

import numpy as np

from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.result import FEW_OPTION, TopicParts, floored, rows_of
from sampleval.estimators.base import TopicView
from sampleval.estimators.family import Base, EstimatorFamily, register_family
from sampleval.estimators.names import EstimateSpec
from sampleval.estimators.ppi import without_predictions
from sampleval.params import Param


def hh_parts(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
             spec: EstimateSpec, level: float) -> TopicParts:
    """Per topic and run: the estimate, its variance and the bias estimate that widens its
    interval (AP's ``interval=bias-aware``: the difference between the jackknife's and the
    Taylor correction, module docstring; 0 elsewhere), each ``[topics, runs]``: the
    prediction-powered engine's ``draws`` form with every prediction 0
    (:func:`~sampleval.estimators.ppi.without_predictions`)."""
    if sample.draws is None:
        raise UsageError(f"{spec.name} needs the sample's draws with their probabilities")
    result = without_predictions(spec, views, sample, level)
    biases = result.remaining  # AP's gap between its two corrections, if asked for
    return TopicParts(result.value, result.variance,
                      np.zeros_like(result.value) if biases is None else biases)


def hh_differences(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                   spec: EstimateSpec, level: float, pairs: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and pair (a, b) of run indices (``pairs`` ``[P, 2]``): the estimated
    difference ``spec``_a - ``spec``_b and the variance of that difference over the draws,
    both ``[topics, P]``."""
    if sample.draws is None:
        raise UsageError(f"{spec.name} needs the sample's draws with their probabilities")
    result = without_predictions(spec, views, sample, level, pairs)
    assert result.pair_variance is not None
    return (result.value[:, pairs[:, 0]] - result.value[:, pairs[:, 1]],
            result.pair_variance)


PARTS = floored(hh_parts)

register_family(EstimatorFamily(
    name="hh", title="per-draw (Hansen-Hurwitz) mean of z/p_t over all draws; unbiased under "
                     "adaptive draw probabilities for totals, ratios over per-draw totals",
    reference="Hansen & Hurwitz 1943; a martingale argument; pairs of draws as a U-statistic "
              "(module docstring)",
    bases=(Base("P", "required"), Base("DCG", "optional"),
           Base("NumRel"), Base("AP", "optional", options=("bias", "interval", "few")),
           Base("R", "required", options=("correction",)),
           Base("Rprec", options=("cut", "correction")),
           Base("nDCG", "optional", options=("correction",))),
    designs=("with-replacement", "importance"),
    compute=rows_of(PARTS), parts=PARTS, differences=hh_differences,
    options=(
        Param("bias", str, "jackknife", "AP's ratio bias: jackknife (less Quenouille's "
              "delete-one jackknife estimate over the draws, with the jackknife variance), "
              "taylor (less the ratio's first-order bias, (AP V(R) - C(N, R))/R^2, estimated "
              "from the draws) or none (N-hat/R-hat as it is)",
              choices=("taylor", "jackknife", "none")),
        Param("interval", str, "bias-aware", "AP's interval: bias-aware (z standard errors "
              "either side, widened by the difference between the jackknife's and the Taylor "
              "correction of the ratio's bias; with bias=jackknife or taylor, normal with "
              "none) or normal (z standard errors either side)",
              choices=("bias-aware", "normal")),
        Param("cut", str, "floor", "Rprec's cut: floor (rank floor(R-hat)) or round "
              "(int(R-hat + 0.5))", choices=("floor", "round")),
        FEW_OPTION,
        Param("correction", str, "taylor", "R@k's, Rprec's and nDCG's ratio bias: taylor "
              "(less the ratio's first-order bias, (Q V(R) - C(N, R))/R^2, estimated from the "
              "draws, as AP's bias=taylor) or none (the plain ratio)",
              choices=("taylor", "none")),
    )))
