"""The variance that the ratios' plug-in lam adds to ``~ppi``'s estimates (issue 31): the
option ``lam-variance`` of ``AP~ppi``.

With ``tuning=plug-in`` (the ratios' default, :mod:`~sampleval.estimation.engine.tuning`) every
topic takes the one lam-hat = G^-1 c learnt from every topic's forms, its own included, and each
topic's variance is its design's at that lam as if lam were fixed. PPI++ (Angelopoulos, Duchi &
Zrnic, arXiv 2311.01453, 2023, sec. 6) argues the estimated lam's share is of a smaller order.
It is not when lam-hat rests on a rare event: a judge that is right almost everywhere and wrong
on a few documents (the circular judge of ``simulation.predictors.circular``) gives lam-hat = 1
on a sample that holds none of them and well below 1 on one that holds one, and lam moves every
topic's estimate at once (docs/guide/audit.md, "Why AP~ppi's standard errors are too small
with a circular judge").

The term (``lam-variance=topics``): the delete-one-topic jackknife (Quenouille 1956; Efron &
Stein 1981) of the mean over topics M(lam) = sum_s M_s(lam) / T of each run's estimates
through lam alone: lam_(t) is the plug-in rule's lam from every topic's forms but topic t's,
d_t = M(lam_(t)) with every topic's sample as it is (each M_s recomputed at lam_(t), before
the ratio-bias correction, whose own change with lam is left out), and

    V_lam = (T - 1)/T sum_t (d_t - d-bar)^2,

topics sampled independently. It is added to each topic's variance as that topic's share,
v_t + T^2 (T - 1)/T (d_t - d-bar)^2, so that sum_t v_t / T^2, the mean's variance every caller
forms, gains V_lam (the same for a difference of two runs, with d_t of the difference). The
topics' samples held fixed, it measures lam-hat's spread and not the spread of the true
measure over topics. Zero where lam-hat
does not move when any one topic is left out (predictions equal to the labels: lam = 1), with a
single topic, and with ``tuning`` other than plug-in (``none`` fixes lam; cross-fit leaves a
topic's own sample out of its lam).
"""

from __future__ import annotations

import numpy as np

from sampleval.estimation.engine.difference import Estimate, topic_estimate
from sampleval.estimation.engine.tuning import by_measure, minimising
from sampleval.estimation.engine.units import TopicData
from sampleval.estimation.spec import EstimateSpec

LAM_VARIANCES = ("topics", "none")


def takes_lam_variance(spec: EstimateSpec) -> bool:
    """Whether ``spec`` adds :func:`lam_variance`: AP with ``lam-variance=topics`` and the
    plug-in lam (``tuning=plug-in``, or ``by-measure``, a ratio's default)."""
    if spec.base != "AP" or spec.option("lam-variance") != "topics":
        return False
    tuning = str(spec.option("tuning"))
    return (by_measure(spec.base) if tuning == "by-measure" else tuning) == "plug-in"


def lam_variance(spec: EstimateSpec, topics: list[TopicData], level: float, lam: np.ndarray,
                 pairs: np.ndarray | None = None) -> np.ndarray:
    """Each topic's share of V_lam (module docstring), ``[topics, n_runs]``, or with ``pairs``
    (``[P, 2]`` run indices) of the difference of each pair's estimates, ``[topics, P]``;
    ``lam`` is what :func:`~sampleval.estimation.engine.values.ppi_values` used
    (``[topics, 2, n_runs]``: a topic and run whose ratio was impossible has lam 0 and no
    share in g)."""
    n_topics = len(topics)
    n_runs = lam.shape[2] if lam.ndim == 3 else 0
    width = n_runs if pairs is None else len(pairs)
    if n_topics < 2 or n_runs == 0:
        return np.zeros((n_topics, width))
    estimates = [topic_estimate(spec, level, data) for data in topics]
    gram = np.zeros((n_topics, 2, 2))
    cross = np.zeros((n_topics, 2))
    for t, (data, at) in enumerate(zip(topics, estimates, strict=True)):
        parts = at(np.zeros((2, n_runs)))  # as the plug-in rule forms them
        forms = np.nan_to_num(data.units.forms([parts.u_y, parts.u_f[0], parts.u_f[1]]))
        cross[t] = forms[0, 1:].sum(axis=-1)
        gram[t] = forms[1:, 1:].sum(axis=-1)
    shared = np.clip(minimising(gram.sum(axis=0), cross.sum(axis=0)), 0.0, 1.0)  # [2]
    left_out = np.clip(minimising(gram.sum(axis=0) - gram, cross.sum(axis=0) - cross),
                       0.0, 1.0)  # [T, 2]
    moves = left_out - shared
    if not np.any(np.abs(moves) > 1e-12):
        return np.zeros((n_topics, width))
    moved = np.zeros((n_topics, n_runs))  # M(lam_(t)), each topic's estimate recomputed
    for s, at in enumerate(estimates):
        tuned = np.isclose(lam[s], shared[:, None])  # lam 0 where the check replaced it
        for t in range(n_topics):
            moved[t] += _value(at, np.where(tuned, left_out[t][:, None], lam[s]))
    moved /= n_topics
    if pairs is not None:
        moved = moved[:, pairs[:, 0]] - moved[:, pairs[:, 1]]
    spread = moved - moved.mean(axis=0)
    return n_topics * (n_topics - 1) * spread**2


def _value(at: Estimate, lam: np.ndarray) -> np.ndarray:
    """The estimate at ``lam``, lam 0 for a run whose ratio is impossible there (as
    :func:`~sampleval.estimation.engine.values.ppi_values` checks)."""
    parts = at(lam)
    if not parts.defined.all():
        parts = at(np.where(parts.defined, lam, 0.0))
    return parts.value
