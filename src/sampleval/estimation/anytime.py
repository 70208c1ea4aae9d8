"""Anytime-valid intervals for a mean over topics: a normal-mixture confidence sequence in
information time.

Definition. At look k judging has produced the estimate theta_k of a run's mean over topics
and its estimated variance V_k (the ordinary interval's, ``estimate``'s: sum_t V_t / T^2).
With alpha = 1 - ci, the *information* I_k = 1 / V_k, and a tuning constant rho^2 > 0,

    theta_k +- sqrt(V_k) * m(rho^2 I_k),
    m(x) = sqrt( 2 (x + 1) / x * log( sqrt(x + 1) / alpha ) ),

the two-sided normal-mixture boundary of Robbins (1970) in the form of Waudby-Smith, Arbour,
Sinha, Kennedy & Ramdas, "Time-uniform central limit theory and asymptotic confidence
sequences" (arXiv:2103.06476, 2021; Ann. Statist. 2024), sec. 2, the Gaussian-mixture
asymptotic confidence sequence: there
sigma_t sqrt(2 (t rho^2 + 1) / (t^2 rho^2) log(sqrt(t rho^2 + 1) / alpha)) for t
i.i.d. observations of variance sigma^2, which is sqrt(V) m(rho^2 t) with V = sigma^2 / t,
i.e. information t / sigma^2 (the rho here absorbs sigma^2).

Why it holds at every look (the argument, ``docs/guide/anytime.md``). If the estimates
follow the *canonical joint distribution* of sequential analysis, theta_k - theta =
W(I_k) / I_k with W a standard Brownian motion (increments of information independent of
the past), then S_k = I_k (theta_k - theta) = W(I_k), and for every rho,
M(I) = (1 + rho^2 I)^(-1/2) exp(rho^2 W(I)^2 / (2 (1 + rho^2 I))) (the Gaussian mixture over
lambda ~ N(0, rho^2) of exp(lambda W - lambda^2 I / 2)) is a nonnegative martingale with
M(0) = 1; by Ville's inequality P(exists I: M(I) >= 1/alpha) <= alpha, and M(I) < 1/alpha
is exactly |theta_k - theta| < sqrt(V_k) m(rho^2 I_k). The sequence covers simultaneously at
every look, hence at any stopping time, with probability at least ci. Assumptions: (1) the
canonical joint distribution, to the normal approximation: it holds for a mean over topics of
design-based estimates when each topic's sample grows as prefixes of one random order of its
design (with-replacement draws; or simple random sampling without replacement within strata,
where the finite-population correction is a change of information time, the Brownian bridge
written as a time-changed Brownian motion) and the topics judged next are chosen from the
variances, not from the estimates; (2) V_k estimates the variance consistently (the
"asymptotic" of the title). Where an allocation rule picks topics from quantities correlated
with their estimates (a topic with nothing relevant found has both estimate and variance 0),
(1) is approximate: ``studies.anytime`` measures the coverage at stopping.

Tuning. The boundary is narrowest relative to sqrt(V) near rho^2 I = x* =
2 log(1/alpha) + log(1 + 2 log(1/alpha)) (ibid., the approximate minimiser, as in their
``best_rho2_approx``). A rule that stops when the half-width reaches h fixes rho before any
judgment so that the boundary is tightest there: the *target variance* V* solves
sqrt(V*) m(x*) = h, and rho^2 = x* / I* = x* V*; then rho^2 I_k = x* V* / V_k.
"""

from __future__ import annotations

import math

import numpy as np

from sampleval.errors import UsageError


def _alpha(ci: float) -> float:
    if not 0 < ci < 1:
        raise UsageError(f"the confidence level must lie in (0, 1), not {ci}")
    return 1.0 - ci


def tightest(ci: float = 0.95) -> float:
    """x* = 2 log(1/alpha) + log(1 + 2 log(1/alpha)): the value of rho^2 I at which the
    boundary in standard errors is about narrowest (module docstring)."""
    a = 2.0 * math.log(1.0 / _alpha(ci))
    return a + math.log1p(a)


def multiplier(x: np.ndarray | float, ci: float = 0.95) -> np.ndarray:
    """m(x) = sqrt(2 (x + 1) / x log(sqrt(x + 1) / alpha)): the half-width in standard
    errors at rho^2 I = ``x`` (inf at x = 0, where nothing is known yet)."""
    alpha = _alpha(ci)
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(2.0 * (x + 1.0) / x * (0.5 * np.log1p(x) - math.log(alpha)))
    return np.where(x > 0, out, np.inf)


def target_variance(half_width: float, ci: float = 0.95) -> float:
    """V*: the variance of the mean at which the sequence tuned for it has half-width
    ``half_width`` (sqrt(V*) m(x*) = half_width)."""
    if not half_width > 0:
        raise UsageError(f"the target half-width must be positive, not {half_width}")
    return float((half_width / multiplier(tightest(ci), ci)) ** 2)


def half_width(variance: np.ndarray | float, tuned: float, ci: float = 0.95) -> np.ndarray:
    """The anytime-valid half-width sqrt(V) m(x* ``tuned`` / V) of an estimate with variance
    ``variance`` (elementwise), for the sequence tuned for the variance ``tuned`` (rho^2 =
    x* ``tuned``; :func:`target_variance`). 0 where the variance is 0 (a census: nothing is
    unknown), NaN where it is NaN."""
    if not tuned > 0:
        raise UsageError(f"the tuning variance must be positive, not {tuned}")
    v = np.asarray(variance, dtype=np.float64)
    positive = v > 0
    x = tightest(ci) * tuned / np.where(positive, v, 1.0)
    out = np.sqrt(np.where(positive, v, 0.0)) * multiplier(x, ci)
    return np.where(positive, out, np.where(np.isnan(v), np.nan, 0.0))


def interval(value: np.ndarray | float, variance: np.ndarray | float, tuned: float,
             ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: the anytime-valid interval value -+ :func:`half_width`."""
    h = half_width(variance, tuned, ci)
    v = np.asarray(value, dtype=np.float64)
    return v - h, v + h


def variance_for(width: np.ndarray | float, tuned: float, ci: float = 0.95) -> np.ndarray:
    """The variance V whose anytime-valid :func:`half_width` (sequence tuned for ``tuned``)
    is ``width`` (elementwise): the half-width grows with V (h^2 = 2 V (c + V) / c
    (log(1 + c / V) / 2 + log(1 / alpha)), c = x* ``tuned``, and V log(1 + c / V) grows
    with V), so bisection on log V finds it. 0 where ``width`` is 0."""
    w = np.asarray(width, dtype=np.float64)
    positive = w > 0
    # h^2 >= 2 V log(1/alpha) bounds V above; m(x) grows as sqrt(log x) only, so V is far
    # above a millionth of (h / m(x*))^2 for any x below about e^(10^6 m(x*)^2)
    low = np.log(np.where(positive, (w / multiplier(tightest(ci), ci)) ** 2 / 1e6, 1.0))
    high = np.log(np.where(positive, w ** 2 / (2.0 * math.log(1.0 / _alpha(ci))), 1.0))
    for _ in range(80):
        middle = (low + high) / 2
        above = half_width(np.exp(middle), tuned, ci) > w
        low, high = np.where(above, low, middle), np.where(above, middle, high)
    return np.where(positive, np.exp((low + high) / 2), np.where(np.isnan(w), np.nan, 0.0))
