"""``audit-neyman``: the audit's human sample allocated where the runs' relative biases are
most uncertain (issue 31, item 3).

The audit estimates each run's relative bias, its machine AP less its AP~ht estimate, less
the mean of that over the runs; the machine's part is exact, so the variance is that of
the contrast c_r = AP-hat_r - mean_s AP-hat_s. To first order AP-hat_r - AP_r is the
Horvitz-Thompson error sum_i (delta_i / pi_i - 1) y_i a_ri of each document's
*influence* a_ri on run r's AP (:func:`ap_influence`: AP = Q / R with Q the pair sum
sum_{rank j <= rank i} y_i y_j / rank i, so dAP/dy_i = (g_ri - AP_r) / R, g_ri run r's
precision at i's rank, i counted relevant, plus the sum of 1/rank over the relevant
documents below it; -AP_r / R where r did not retrieve i). Summed over the runs and
under independent inclusion,

    sum_r Var(c_r) ~ sum_i (1/pi_i - 1) E(y_i) sum_r (a_ri - mean_s a_si)^2,

which sum_i pi_i = n minimises at pi_i proportional to
size_i = sqrt(E(y_i) sum_r (a_ri - mean_s a_si)^2) (a Lagrange multiplier; Cochran,
Sampling Techniques, 1977, sec. 5.5 for strata; Sarndal, Swensson & Wretman, Model
Assisted Survey Sampling, 1992, ch. 12 for pi_i proportional to the
spread). The design knows neither y nor a before anyone judges; it takes both from the
machine's labels, which it has for every pooled document: a_ri from the machine's labels
as if they were the truth, and E(y_i) = 1 - ``disagree`` where the machine calls i
relevant (prediction >= 0.5), ``disagree`` where it does not (the prior's disagreement
rate: how often the people are expected to overturn the machine).

A share ``prior_share`` of each topic's size follows ``stratified``'s mean AP-prior
instead (a defensive mixture, Hesterberg 1995, as ``stratified``'s ``uniform``): the
influence is first-order and is 0 for a document that is a topic's only relevant one by
the machine (AP = 1/rank whatever the estimate of R), and every pooled document must keep
pi_i > 0. The rest of the design is the ``audit`` method's (:mod:`.audit`): water-filled
targets, a certainty stratum, the strata split by the machine's label, stratified simple
random sampling (Sample design ``stratified``), so every design-based estimator applies
unchanged. Measured against ``stratified`` and ``audit`` in docs/research/audit.md
("`audit-neyman`: computed and measured").
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from sampleval.core.ap_prior import document_prior
from sampleval.core.pool import PAD, TopicPool
from sampleval.declare import Param
from sampleval.selection.audit import RELEVANT, AuditSelector
from sampleval.selection.base import register


def ap_influence(relevant: np.ndarray, ranking: np.ndarray) -> np.ndarray:
    """``[n_runs, n_docs]``: dAP_r/dy_i, the first-order change in each run's AP (a topic's
    pair sum over its count of relevant documents, module docstring) were document i
    relevant, the others' relevance as ``relevant`` (a 0/1 vector over the pool);
    ``ranking`` is a TopicPool's rank matrix. All zero when nothing is relevant."""
    y = np.asarray(relevant, dtype=np.float64)
    n_runs, width = ranking.shape
    count = y.sum()
    if count <= 0:
        return np.zeros((n_runs, len(y)))
    at = np.append(y, 0.0)[ranking]  # padding: not relevant
    rank = np.arange(1, width + 1, dtype=np.float64)
    above = np.cumsum(at, axis=1) - at  # relevant documents above each rank
    ap = (at * (above + 1.0) / rank).sum(axis=1) / count
    step = at / rank
    below = np.cumsum(step[:, ::-1], axis=1)[:, ::-1] - step
    out = np.repeat((-ap / count)[:, None], len(y), axis=1)
    rows, cols = np.nonzero(ranking != PAD)
    out[rows, ranking[rows, cols]] += ((above + 1.0) / rank + below)[rows, cols] / count
    return out


def contrast_spread(relevant: np.ndarray, ranking: np.ndarray) -> np.ndarray:
    """Per document, sqrt(sum_r (a_ri - mean_s a_si)^2): the spread of its influence
    (:func:`ap_influence`) over the runs' contrasts with their mean."""
    influence = ap_influence(relevant, ranking)
    centred = influence - influence.mean(axis=0, keepdims=True)
    return np.sqrt((centred ** 2).sum(axis=0))


@register
class AuditNeymanSelector(AuditSelector):
    """The audit's sample with pi_i proportional to each document's expected contribution
    to the variance of the runs' relative biases (module docstring)."""

    name: ClassVar[str] = "audit-neyman"
    summary: ClassVar[str] = ("for auditing a machine judge: pi_i follows each document's "
                              "influence on the runs' relative AP, from the machine's "
                              "labels (needs --predictions)")
    parameters: ClassVar[tuple[Param, ...]] = (
        *(p for p in AuditSelector.parameters if p.name in ("per_stratum", "prior")),
        Param("disagree", float, 0.1, "the expected share of the machine's labels the "
              "people overturn, each way (sets E(y) = 1 - disagree where the machine says "
              "relevant, disagree elsewhere)",
              check=lambda x: 0 < x < 1, requirement="in (0, 1)"),
        Param("prior_share", float, 0.1, "share of the size that follows stratified's "
              "mean AP-prior (a defensive mixture: every document reachable)",
              check=lambda x: 0 < x <= 1, requirement="in (0, 1]"),
    )

    def _size(self, tp: TopicPool) -> np.ndarray:
        """(1 - prior_share) influence size + prior_share mean AP-prior, each summing to 1."""
        assert self.predicted is not None  # needs_predictions
        called = self.predicted[tp.topic] >= RELEVANT
        disagree, share = self.params["disagree"], self.params["prior_share"]
        expected = np.where(called, 1.0 - disagree, disagree)
        size = np.sqrt(expected) * contrast_spread(called, tp.ranking)
        prior = document_prior(tp, self.params["prior"])
        if size.sum() <= 0:
            return prior
        return (1.0 - share) * size / size.sum() + share * prior
