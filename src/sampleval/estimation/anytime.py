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

The range boundary (the default, ``ratio=RANGE``). A rule that stops when the half-width
reaches h needs the sequence narrow only where it can stop. With c the constant for which
Brownian motion leaves the band |W(I)| < c sqrt(I) somewhere in an information range
[I_lo, r I_lo] with probability (1 - TAIL_SHARE) alpha (:func:`range_multiplier`), the
boundary is c sqrt(V) for V in [V*/r, V*], V* = (h / c)^2 (so the range is placed by the
target alone, before any label), and outside it the mixture above at level TAIL_SHARE
alpha tuned at V*/r (the *tail*; inside the range the smaller of the two). Miss anywhere
implies that W left the band in the range or crossed the tail's boundary, so by the union
bound the sequence covers at every look with probability >= 1 - alpha. The range is
[V*/r, V*] because the widest run's half-width meets the target there first (above V*
no stop; its look lands just below V*), and the narrower runs' intervals below V*/r are
the tail's, still below h when m_tail(x*) <= c sqrt(r) (:func:`half_width` checks it).
c: the time change I = I_lo e^s makes U(s) = W(I) / sqrt(I) the stationary
Ornstein-Uhlenbeck process dU = -U/2 ds + dB (Doob 1942), so c solves P(sup_{s <= log r}
|U(s)| >= c) = level (:func:`range_crossing`: the OU transition density on a grid, with
Broadie, Glasserman & Kou's (1997) continuity correction for monitoring at steps; its
Monte Carlo check is ``tests/unit/test_anytime_range.py``). This is the bounded-range boundary
that Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform, nonparametric, nonasymptotic
confidence sequences" (Ann. Statist. 2021), sec. 3, bound by stitching or by one linear
boundary; the constant boundary in sqrt(I) over the range is the repeated significance
test's (Siegmund, Sequential Analysis, 1985, ch. IV), computed here rather than bounded.
"""

from __future__ import annotations

import math
from functools import lru_cache

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


RANGE = 2.5
"""The default range boundary's ratio r of information (module docstring): the boundary
c sqrt(V) holds for V in [V*/r, V*]."""
TAIL_SHARE = 0.1
"""The share of alpha the range boundary spends on the tail sequence outside its range."""
BGK = 0.5825971579390106
"""-zeta(1/2) / sqrt(2 pi): Broadie, Glasserman & Kou's (1997) shift of a barrier monitored
at steps of standard deviation s, by BGK s towards the process, that gives the probability
of crossing the continuously monitored barrier."""


def range_crossing(c: float, ratio: float, step: float = 0.02, per: int = 6) -> float:
    """P(exists I in [I_0, ``ratio`` I_0]: |W(I)| >= c sqrt(I)), W a standard Brownian
    motion (continuous monitoring). With s = log(I / I_0), U(s) = W(I) / sqrt(I) is the
    stationary Ornstein-Uhlenbeck process (U(s + d) | U(s) = u is N(u e^(-d/2), 1 - e^(-d)),
    U(0) ~ N(0, 1)); the density of U on a grid over the band, propagated by that kernel at
    steps d <= ``step`` of s, gives the chance of staying inside when monitored at the steps;
    the band is narrowed by BGK sqrt(d) (:data:`BGK`) for continuous monitoring. The kernel
    is reversible for the N(0, 1) density, so one symmetric eigendecomposition gives every
    power of it."""
    if not ratio >= 1 or not c > 0:
        raise UsageError(f"the range needs a ratio >= 1 and c > 0, not {ratio}, {c}")
    from scipy.stats import norm

    if ratio == 1:  # one look
        return float(2 * norm.sf(c))
    length = math.log(ratio)
    steps = max(1, math.ceil(length / step))
    d = length / steps
    a, sd = math.exp(-d / 2), math.sqrt(-math.expm1(-d))
    band = c - BGK * math.sqrt(d) if steps > 1 else c
    if band <= 0:
        return 1.0
    m = max(50, math.ceil(2 * band / (sd / per)))  # ``per`` grid points per kernel sd
    h = 2 * band / m
    u = -band + h * (np.arange(m) + 0.5)
    phi = norm.pdf(u)
    kernel = norm.pdf((u[None, :] - a * u[:, None]) / sd) / sd * h
    root = np.sqrt(phi)
    values, vectors = np.linalg.eigh(root[:, None] * kernel / root[None, :])
    start = phi * h / root  # p D^(-1/2): p K^n 1 = (p D^-1/2) S^n (D^1/2 1)
    inside = float((start @ vectors) @ (values ** steps * (vectors.T @ root)))
    return min(1.0, max(0.0, 1.0 - inside))


@lru_cache(maxsize=64)
def range_multiplier(ratio: float, level: float) -> float:
    """c: the half-width in standard errors for which Brownian motion leaves the band
    |W(I)| < c sqrt(I) somewhere in an information range of ratio ``ratio`` with
    probability ``level`` (:func:`range_crossing`)."""
    from scipy.optimize import brentq

    if not 0 < level < 1:
        raise UsageError(f"the level must lie in (0, 1), not {level}")
    return float(brentq(lambda c: range_crossing(c, ratio) - level, 0.5, 10.0, xtol=1e-6))


def _range_parts(ratio: float, ci: float) -> tuple[float, float]:
    """The range boundary's c and the tail's confidence level."""
    alpha = _alpha(ci)
    c = range_multiplier(float(ratio), (1 - TAIL_SHARE) * alpha)
    tail_ci = 1 - TAIL_SHARE * alpha
    if multiplier(tightest(tail_ci), tail_ci) > c * math.sqrt(ratio):
        raise UsageError(f"a range of ratio {ratio} is too short: below it the tail's "
                         "interval would be wider than the target")
    return c, tail_ci


def target_variance(half_width: float, ci: float = 0.95,
                    ratio: float | None = RANGE) -> float:
    """V*: the variance of the mean at which the sequence has half-width ``half_width``:
    the range boundary's upper end, c sqrt(V*) = half_width (``ratio``: module docstring),
    or (``ratio=None``) the mixture's tuning, sqrt(V*) m(x*) = half_width."""
    if not half_width > 0:
        raise UsageError(f"the target half-width must be positive, not {half_width}")
    if ratio is not None:
        return float((half_width / _range_parts(ratio, ci)[0]) ** 2)
    return float((half_width / multiplier(tightest(ci), ci)) ** 2)


def half_width(variance: np.ndarray | float, tuned: float, ci: float = 0.95,
               ratio: float | None = RANGE) -> np.ndarray:
    """The anytime-valid half-width of an estimate with variance ``variance`` (elementwise)
    for the sequence whose half-width meets the target at the variance ``tuned``
    (:func:`target_variance`, the same ``ratio``): the range boundary c sqrt(V) for V in
    [``tuned`` / ``ratio``, ``tuned``] (or the tail's, if narrower) and the tail's outside
    (module docstring); with ``ratio=None`` the mixture sqrt(V) m(x* ``tuned`` / V). 0 where
    the variance is 0 (a census: nothing is unknown), NaN where it is NaN."""
    if not tuned > 0:
        raise UsageError(f"the tuning variance must be positive, not {tuned}")
    if ratio is None:
        return _mixture(variance, tuned, ci)
    c, tail_ci = _range_parts(ratio, ci)
    v = np.asarray(variance, dtype=np.float64)
    low = tuned / ratio
    tail = _mixture(v, low, tail_ci)
    inside = (v >= low) & (v <= tuned)
    return np.where(inside, np.minimum(c * np.sqrt(np.where(inside, v, 0.0)), tail), tail)


def _mixture(variance: np.ndarray | float, tuned: float, ci: float) -> np.ndarray:
    """The mixture's half-width sqrt(V) m(x* ``tuned`` / V) (rho^2 = x* ``tuned``)."""
    v = np.asarray(variance, dtype=np.float64)
    positive = v > 0
    x = tightest(ci) * tuned / np.where(positive, v, 1.0)
    out = np.sqrt(np.where(positive, v, 0.0)) * multiplier(x, ci)
    return np.where(positive, out, np.where(np.isnan(v), np.nan, 0.0))


def interval(value: np.ndarray | float, variance: np.ndarray | float, tuned: float,
             ci: float = 0.95, ratio: float | None = RANGE) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: the anytime-valid interval value -+ :func:`half_width`."""
    h = half_width(variance, tuned, ci, ratio)
    v = np.asarray(value, dtype=np.float64)
    return v - h, v + h


def variance_for(width: np.ndarray | float, tuned: float, ci: float = 0.95,
                 ratio: float | None = RANGE) -> np.ndarray:
    """The variance V whose anytime-valid :func:`half_width` (the sequence meeting the target
    at ``tuned``, the same ``ratio``) is ``width`` (elementwise); 0 where ``width`` is 0.
    The mixture's half-width grows with V (h^2 = 2 V (k + V) / k (log(1 + k / V) / 2 +
    log(1 / alpha)), k = x* ``tuned``, and V log(1 + k / V) grows with V), so bisection on
    log V finds it. The range boundary's is read piecewise: above the target (V > ``tuned``)
    the tail's, from c sqrt(``tuned`` / ``ratio``) to the target (w / c)^2, below that the
    tail's again (where the tail and the range overlap, the range's reading); a width the
    boundary skips maps to the end of the piece."""
    w = np.asarray(width, dtype=np.float64)
    if ratio is None:
        return _mixture_variance(w, tuned, ci, None, None)
    c, tail_ci = _range_parts(ratio, ci)
    low = tuned / ratio
    above = _mixture_variance(w, low, tail_ci, tuned, None)
    below = _mixture_variance(w, low, tail_ci, None, low)
    out = np.where(w > c * math.sqrt(tuned), above,
                   np.where(w >= c * math.sqrt(low), (w / c) ** 2, below))
    return np.where(w > 0, out, np.where(np.isnan(w), np.nan, 0.0))


def _mixture_variance(w: np.ndarray, tuned: float, ci: float, least: float | None,
                      most: float | None) -> np.ndarray:
    """The variance whose mixture half-width (tuned at ``tuned``) is ``w``, by bisection on
    log V, kept within [``least``, ``most``] where given."""
    positive = w > 0
    # h^2 >= 2 V log(1/alpha) bounds V above; m(x) grows as sqrt(log x) only, so V is far
    # above a millionth of (h / m(x*))^2 for any x below about e^(10^6 m(x*)^2)
    low = np.log(np.where(positive, (w / multiplier(tightest(ci), ci)) ** 2 / 1e6, 1.0))
    high = np.log(np.where(positive, w ** 2 / (2.0 * math.log(1.0 / _alpha(ci))), 1.0))
    if least is not None:
        low = np.maximum(low, math.log(least))
        high = np.maximum(high, math.log(least))
    if most is not None:
        low = np.minimum(low, math.log(most))
        high = np.minimum(high, math.log(most))
    for _ in range(80):
        middle = (low + high) / 2
        above = _mixture(np.exp(middle), tuned, ci) > w
        low, high = np.where(above, low, middle), np.where(above, middle, high)
    return np.where(positive, np.exp((low + high) / 2), np.where(np.isnan(w), np.nan, 0.0))


SPEND = 0.5
"""The plan-end boundary's geometric spending: the k-th plan end after the pilot spends alpha
(1 - SPEND) SPEND^(k - 1) (:func:`plan_end_level`)."""
PLAN_TAIL = 0.1
"""The matched spending's share of alpha kept for plan ends beyond the forecast number of
plans (:func:`plan_end_level`)."""


def plan_end_level(k: int, ci: float = 0.95, share: float = SPEND,
                   plans: int | None = None, first: float | None = None) -> float:
    """alpha_k, the two-sided level spent on the ``k``-th plan end (k >= 1) of the plan-end
    boundary; the alpha_k sum to alpha over k = 1, 2, ... Geometric (``plans=None``):
    alpha (1 - ``share``) ``share``^(k - 1). Matched to a forecast of ``plans`` plan ends
    (K): (1 - :data:`PLAN_TAIL`) alpha / K on each of the first K, the linear spending
    function alpha t of the power family (Kim & DeMets 1987; Lan & DeMets 1983, Biometrika
    70, spend alpha(t_k) - alpha(t_(k-1)) at the information times t_k of the looks) at
    t_k = k / K, and beyond them the tail PLAN_TAIL alpha 2^-(k - K), so that a campaign
    needing more plans than forecast keeps a valid, dearer, boundary. With ``first`` (a
    first plan forecast to fall short): ``first`` alpha on the first plan end and the rest
    of the K ends' share, (1 - PLAN_TAIL - ``first``) alpha, split over the other K - 1."""
    alpha = _alpha(ci)
    if k < 1 or not 0 < share < 1 or (plans is not None and plans < 1) or (
            first is not None and not (plans is not None and plans >= 2
                                       and 0 < first < 1 - PLAN_TAIL)):
        raise UsageError(f"a plan end is counted from 1, the share lies in (0, 1), the "
                         f"forecast plans are at least 1 (2 with a light first plan end, "
                         f"whose share lies in (0, {1 - PLAN_TAIL:g})), not {k}, {share}, "
                         f"{plans}, {first}")
    if plans is None:
        return alpha * (1 - share) * share ** (k - 1)
    if k > plans:
        return alpha * PLAN_TAIL * 0.5 ** (k - plans)
    if first is None:
        return alpha * (1 - PLAN_TAIL) / plans
    return alpha * (first if k == 1 else (1 - PLAN_TAIL - first) / (plans - 1))


def plan_end_multiplier(k: int, ci: float = 0.95, share: float = SPEND,
                        plans: int | None = None, first: float | None = None) -> float:
    """The half-width in standard errors at the ``k``-th plan end (k >= 1) of the plan-end
    boundary: z at the two-sided level :func:`plan_end_level` (geometric, or matched to
    ``plans`` forecast plan ends). Why it holds (``docs/guide/anytime.md``, "The plan-end
    boundary"): a rule that may stop only at plan ends, whose k-th plan's sizes and layouts
    are fixed by the history H_k before it, has at that plan's end an estimate that given
    H_k is unbiased with its estimated variance (a fixed-size stratified sample of what was
    not judged before), so P(the k-th plan end is reached and its interval misses) <=
    alpha_k, and by the union bound P(the interval at the stopping plan end misses) <=
    sum_k alpha_k = alpha, however many plans follow and whatever decided them; alpha_k
    may itself be decided from H_k (K forecast from the pilot) as long as the sum holds on
    every path. It needs every topic re-estimated by each plan: a topic a shortfall plan
    leaves keeps an estimate fixed by H_k, chosen with it, which the argument does not
    cover (``tests/unit/test_anytime_phases.py`` measures what that costs)."""
    from scipy.stats import norm

    return float(norm.isf(plan_end_level(k, ci, share, plans, first) / 2))
