"""The variance of ``AP~ppi``'s R-hat from disagreements the sample did not find (issue 31):
the option ``unseen`` of ``AP~ppi``.

R-hat(lam) = lam sum_{frame} f + sum_{k in S} (y_k - lam f_k)/pi_k. With predictions that
are right almost everywhere, the residuals are non-zero only on the few documents where the
labels and the predictions disagree; a stratum whose sample holds none of them gets the design
variance 0 for its part of R-hat, while over samples its part moves by 1/pi_k whenever one is
drawn (the rare-event total of docs/research/calibration.md, "AP~ht's zero-width rows"). A
circular judge (one run's top documents called relevant) leaves one or two such documents per
topic of TREC-COVID round 5: every run's AP is low by about Q/R each while none is drawn,
high by about Q/(pi R) when one is, and the estimated standard error misses it
(docs/research/audit.md, "Why AP~ppi's standard errors are too small with a circular judge").

The term (``unseen=prior``): in each stratum h of a topic whose judged documents hold no
disagreement (relevance of the label and of the prediction at the level alike), the variance
of the stratum's part of R-hat with each frame document wrong with probability p_1 if predicted
relevant (its residual then -lam_R) and p_0 if not (residual 1),

    V_h = N_h (1 - n_h/N_h) / n_h (lam_R^2 N_h1 p_1 (1 - p_1) + N_h0 p_0 (1 - p_0))

(stratified simple random sampling, Cochran 1977, eq. 5.6, with N_h S_h^2 the sum of the
documents' Bernoulli variances), N_h1 and N_h0 the stratum's frame documents predicted
relevant and not (known: the predictions cover the frame), p_c the topic's disagreement rate
among its frame documents predicted c, estimated from its sample with half an event added,
(D-hat_c + 1/2)/(N_c + 1) (D-hat_c the Horvitz-Thompson estimate, N_c their number: a
Jeffreys-like prior; Brown, Cai & DasGupta 2001; per topic, as topics' relevant shares differ
by orders of magnitude), and each run's AP-hat = Q-hat
its share through R-hat (delta method, dQ/dR = -Q/R):

    v_tr += (Q_tr / R-hat_t)^2 sum_h V_h,

for the difference of two runs (Q_a/R-hat_a - Q_b/R-hat_b)^2 times the larger of their
sum_h V_h (they differ only where a run's lam was replaced by 0). The numerator's share (a
missed disagreement among a run's own ranked documents) is left out. 0 on a census, on topics
whose strata all hold a disagreement, and where R-hat is not positive.
"""

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
