"""The variance of ``AP~ppi``'s R-hat from disagreements the sample did not find (issue 31):
the option ``unseen`` of ``AP~ppi``.

With predictions right almost everywhere, a stratum whose sample holds no disagreement
between label and prediction gets the design variance 0 for its part of R-hat, while over
samples that part moves by 1/pi_k whenever one is drawn (docs/research/audit.md, "Why
AP~ppi's standard errors are too small with a circular judge"). ``unseen=prior`` adds, in
each such stratum, the variance of its part of R-hat with each frame document wrong at the
topic's estimated disagreement rate (Cochran 1977, eq. 5.6; a Jeffreys-like half event, Brown,
Cai & DasGupta 2001), carried to each run's AP-hat by the delta method. The derivation:
docs/guide/estimators.md#unseen-disagreements."""

from __future__ import annotations

import numpy as np

from sampleval.estimation.engine.units import TopicData
from sampleval.estimation.engine.views import relevance
from sampleval.estimation.spec import EstimateSpec

UNSEEN = ("prior", "none")


def takes_unseen(spec: EstimateSpec) -> bool:
    """Whether ``spec`` adds :func:`unseen_variance`: AP with ``unseen=prior``."""
    return spec.base == "AP" and spec.option("unseen") == "prior"


def _predicted_counts(data: TopicData, level: float) -> np.ndarray:
    """``[2, H]``: per stratum, its frame documents predicted not relevant and relevant at
    ``level``."""
    stratum = data.view.sample.stratum
    called = relevance(data.frame_predicted, level) > 0
    n_strata = len(data.units.strata[1]) if data.units.strata is not None else 0
    inside = stratum >= 0
    return np.stack([np.bincount(stratum[inside & ~called], minlength=n_strata),
                     np.bincount(stratum[inside & called], minlength=n_strata)]
                    ).astype(np.float64)


def disagreement_rates(data: TopicData, level: float) -> np.ndarray:
    """``[2]``: among the topic's frame documents predicted not relevant and among those
    predicted relevant at ``level``, (D-hat + 1/2)/(N + 1), D-hat the Horvitz-Thompson
    estimate of those whose label disagrees, N their number (0 without strata)."""
    if data.units.strata is None:
        return np.zeros(2)
    called = relevance(data.predicted, level) > 0
    wrong = _disagrees(data, level)
    found = np.array([data.units.weight[wrong & ~called].sum(),
                      data.units.weight[wrong & called].sum()])
    return (found + 0.5) / (_predicted_counts(data, level).sum(axis=1) + 1.0)


def _disagrees(data: TopicData, level: float) -> np.ndarray:
    """Per unit: whether its label and its prediction disagree at ``level``."""
    return (relevance(data.labels, level) > 0) != (relevance(data.predicted, level) > 0)


def unseen_r_variance(data: TopicData, level: float, rates: np.ndarray, lam_r: np.ndarray
                      ) -> np.ndarray:
    """sum_h V_h per run (``lam_r``: each run's lam in R-hat, ``[n_runs]``) over the topic's
    strata whose judged documents hold no disagreement (module docstring); 0 without
    strata."""
    if data.units.strata is None:
        return np.zeros(lam_r.shape)
    stratum, sizes, sampled = data.units.strata
    seen = np.zeros(len(sizes), dtype=bool)
    seen[stratum[_disagrees(data, level)]] = True
    n, big = sampled.astype(np.float64), sizes.astype(np.float64)
    open_ = (~seen) & (n > 0) & (n < big)
    factor = big[open_] * (1.0 - n[open_] / big[open_]) / n[open_]
    counts = _predicted_counts(data, level)[:, open_] * (rates * (1.0 - rates))[:, None]
    return (factor * counts[0]).sum() + lam_r**2 * (factor * counts[1]).sum()


def r_hat(data: TopicData, lam: np.ndarray, level: float) -> np.ndarray:
    """R-hat(lam_R) per run (``lam``: ``[2, n_runs]``)."""
    y, f = relevance(data.labels, level), relevance(data.predicted, level)
    frame = relevance(data.frame.predicted, level).sum()
    w = data.units.weight
    return (w * y).sum() - lam[1] * ((w * f).sum() - frame)


def unseen_variance(topics: list[TopicData], level: float, value: np.ndarray, lam: np.ndarray,
                    pairs: np.ndarray | None = None) -> np.ndarray:
    """Per topic and run (``[topics, n_runs]``; with ``pairs``, per pair's difference
    ``[topics, P]``) the term of the module docstring, from the estimates ``value`` and the
    lam ``[topics, 2, n_runs]`` they used."""
    width = value.shape[1] if pairs is None else len(pairs)
    out = np.zeros((len(topics), width))
    for t, data in enumerate(topics):
        v_r = unseen_r_variance(data, level, disagreement_rates(data, level), lam[t, 1])
        if not v_r.any():
            continue
        r = r_hat(data, lam[t], level)
        share = np.divide(value[t], r, out=np.zeros(r.shape), where=r > 0)
        if pairs is not None:
            share = share[pairs[:, 0]] - share[pairs[:, 1]]
            v_r = np.maximum(v_r[pairs[:, 0]], v_r[pairs[:, 1]])
        out[t] = share**2 * v_r
    return out
