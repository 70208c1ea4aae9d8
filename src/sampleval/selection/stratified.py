"""``stratified``: sampling the pool in proportion to the AP-prior, without replacement.

Pavlu & Aslam, "A practical sampling strategy for efficient retrieval evaluation" (2007), as
Li & Kanoulas, "Active Sampling for Large-scale Information Retrieval Evaluation", CIKM 2017,
sec. 2.2 and 4.4 describe it: each document has a prior, fixed for the whole process, the
mean over the runs of each run's AP-prior at the document's rank (:mod:`.ap_prior`,
``prior=``, default Aslam et al.'s (1/2N)(1 + 1/r + ... + 1/N) over each run's N pooled
documents; 0 for a run that did not retrieve it; the papers average the runs'
distributions).

Pavlu & Aslam sample *without* replacement, with inclusion probabilities proportional to
the prior (their improvement over the with-replacement sampling of Aslam, Pavlu & Yilmaz,
SIGIR 2006), realised by Stevens' method ("Sampling without replacement with probability
proportional to size", JRSS B 1958, which they cite): documents of about equal size are
grouped and each group is sampled uniformly. Here, for a budget of n documents:

1. target pi*_i = min(1, c prior_i) with sum_i pi*_i = n (c by water-filling); documents
   with pi*_i = 1 form stratum ``0``, judged completely;
2. the others, by decreasing prior, are cut into K = max(1, floor(M / per_stratum))
   consecutive strata of about equal target mass M/K (M = n - |stratum 0|; a document goes
   to the stratum holding the midpoint of its share of the cumulative mass), so every
   stratum holds more than per_stratum - 1 >= 1 of target mass;
3. stratum h gets n_h = its target mass rounded by largest remainder (sum n_h = M), and a
   simple random sample of n_h of its N_h documents is judged.

The design is then stratified SRS (Sample design ``stratified``): pi_i = n_h / N_h exactly,
pi_ij = n_h (n_h - 1) / (N_h (N_h - 1)) within a stratum, pi_i pi_j across; pi_i is close to
the target pi*_i because a stratum's documents have neighbouring priors. A stratum's prior
mass is never used as a probability. The default per_stratum = 2 keeps every within-stratum
pi_ij > 0, which the HT variance estimator needs. Documents are handed out across strata in
proportion (``strata.handout``), so the judged set after any number of judgments is itself a
stratified simple random sample.

A uniform share (``uniform=a``, default 0: the papers have none) mixes the sizes with the uniform
distribution over the pool before step 1, size_i = (1 - a) prior_i / sum prior + a / N, the
defensive mixture of importance sampling (Hesterberg, "Weighted average importance sampling
and defensive mixture distributions", Technometrics 1995): every document keeps a target of
at least a n / N, so no weight 1/pi_i exceeds about N / (a n) (the deepest strata otherwise
hold hundreds of documents with two judged). What a share changes on TREC-COVID, measured
with its command: docs/research/predictions.md, "A uniform share".

With predictions of relevance (``--param size=residual --predictions FILE``), the target
follows prior_i s_i instead, s_i the predicted residual spread (:func:`residual_spread`): the
allocation that minimises the variance of the difference estimator (``~ppi``) of a total
sum_i w_i y_i under independent inclusion, sum_i (1/pi_i - 1) w_i^2 E(y_i - f_i)^2, is pi_i
proportional to w_i sqrt(E(y_i - f_i)^2) (a Lagrange multiplier on sum_i pi_i = n; Sarndal,
Swensson & Wretman 1992, ch. 12 on optimal designs for model-assisted estimators), here
with w_i the AP-prior and E(y_i - f_i)^2 = p_i (1 - p_i) for a prediction read as the
probability p_i of relevance. Documents the predictions are sure about are judged less, the
doubtful ones more; a floor keeps each one's pi_i positive.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sampleval.core.ap_prior import PRIORS, document_prior
from sampleval.core.pool import Pool, TopicPool
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.selection.base import Budget, register
from sampleval.selection.strata import Layout, StratifiedSelector, largest_remainder, water_fill


def residual_spread(predicted: np.ndarray, floor: float) -> np.ndarray:
    """floor + (1 - floor) 2 sqrt(p (1 - p)), p = clip(prediction, 0, 1): the standard
    deviation of a relevance label whose probability is p (a prediction read as one),
    scaled to [floor, 1]; the floor keeps every document's inclusion probability positive,
    which unbiasedness needs wherever a prediction may be wrong."""
    p = np.clip(predicted, 0.0, 1.0)
    return floor + (1.0 - floor) * 2.0 * np.sqrt(p * (1.0 - p))


@register
class PriorStratifiedSelector(StratifiedSelector):
    """AP-prior sampling without replacement, Pavlu & Aslam 2007 (via Stevens' strata; see
    the module docstring and Li & Kanoulas, CIKM 2017, sec. 2.2)."""

    name: ClassVar[str] = "stratified"
    summary: ClassVar[str] = ("AP-prior sampling without replacement (Pavlu & Aslam 2007; "
                              "Li & Kanoulas, CIKM 2017, sec. 2.2)")
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("per_stratum", int, 2, "target number of judgments per stratum",
              check=lambda n: n >= 2, requirement="at least 2"),
        Param("prior", str, "aslam", "AP-prior over each run's ranks (core.ap_prior)",
              choices=PRIORS),
        Param("size", str, "prior", "what pi_i follows: prior, the AP-prior; residual, the "
              "AP-prior times the predicted residual spread (needs --predictions)",
              choices=("prior", "residual")),
        Param("uniform", float, 0.0, "share of the target mass spread uniformly over the "
              "pool (a defensive mixture: caps 1/pi_i at about N/(uniform n))",
              check=lambda x: 0 <= x < 1, requirement="in [0, 1)"),
        Param("spread_floor", float, 0.1, "with size=residual, the share of the largest "
              "spread every document keeps (so that each can be judged)",
              check=lambda x: 0 < x <= 1, requirement="in (0, 1]"),
    )
    takes_predictions: ClassVar[bool] = True

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self.per_stratum = self.params["per_stratum"]
        residual = self.uses_predictions(self.params)
        if residual and self.predicted is None:
            raise UsageError("stratified: size=residual needs predictions (--predictions "
                             "FILE; in the library, predictions=)")
        if not residual and self.predicted is not None:
            raise UsageError("stratified uses predictions only with size=residual "
                             "(--param size=residual)")

    @classmethod
    def uses_predictions(cls, params: dict[str, Any]) -> bool:
        return bool(params.get("size") == "residual")

    def _size(self, tp: TopicPool) -> np.ndarray:
        """What the target pi_i is proportional to: the AP-prior (times the predicted
        residual spread with size=residual), mixed with the uniform distribution by
        ``uniform``."""
        size = document_prior(tp, self.params["prior"])
        if self.predicted is not None:
            size = size * residual_spread(self.predicted[tp.topic], self.params["spread_floor"])
        share = self.params["uniform"]
        if share == 0 or size.sum() <= 0:
            return size
        return (1.0 - share) * size / size.sum() + share / tp.size

    def _layout(self, tp: TopicPool, budget: int) -> Layout:
        prior = self._size(tp)
        target = water_fill(np.ones(tp.size), prior, float(budget))
        certain = target >= 1.0
        rest = np.flatnonzero(~certain)
        rest = rest[np.argsort(-prior[rest], kind="stable")]
        codes = np.zeros(tp.size, dtype=np.int64)
        codes[rest], counts = cut_strata(target[rest], budget - int(certain.sum()),
                                         self.per_stratum)
        labels = np.array([str(h) for h in range(len(counts) + 1)], dtype=object)
        return Layout(codes, labels, np.r_[int(certain.sum()), counts].astype(np.int64))


def cut_strata(target: np.ndarray, mass: int, per_stratum: int) -> tuple[np.ndarray, np.ndarray]:
    """Steps 2-3 of the module docstring: documents in order (``target``, their pi*_i by
    decreasing size) cut into K = max(1, floor(``mass`` / ``per_stratum``)) consecutive
    strata of about equal target mass (a document goes to the stratum holding the midpoint
    of its share of the cumulative mass); returns each document's stratum (1..K) and each
    stratum's sample size (the target masses scaled to ``mass``, largest remainder)."""
    if not len(target):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    n_strata = max(1, mass // per_stratum)
    middle = np.cumsum(target) - target / 2
    codes = 1 + np.minimum(n_strata - 1, middle * n_strata // max(mass, 1)).astype(np.int64)
    masses = np.bincount(codes - 1, weights=target, minlength=n_strata)
    return codes, largest_remainder(masses * (mass / masses.sum()))
