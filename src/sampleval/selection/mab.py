"""Bandit pooling (Losada, Parapar & Barreiro, "Feeling lucky? Multi-armed bandits for ordering
judgements in pooling-based evaluation", SAC 2016; extended in IPM 53(5), 2017).

Each run is an arm; pulling an arm judges the run's best-ranked document not judged or
proposed before; the reward is the document's relevance, ``clip(label, 0, 1)`` (relevance at
level 1, as :func:`sampleval.measures.exact.relevance`; a fractional label is a fractional
reward). The reward goes to the pulled arm only; a document already judged through another
run is skipped. Variants (``variant=``):

``mm-ns`` (default) Bayesian bandit, max-mean, non-stationary. Each arm has a Beta(alpha, beta)
          posterior on its probability of relevance, from a uniform Beta(1, 1) prior; the arm
          with the largest posterior mean alpha / (alpha + beta) is pulled (no sampling). The
          evidence is discounted, because a run's documents get less likely to be relevant
          as one goes down its ranking: after the arm's pulls with rewards x_1 .. x_m,
          alpha = 1 + sum_i d^(m-i) x_i and beta = 1 + sum_i d^(m-i) (1 - x_i), d =
          ``discount`` (d = 1: the stationary MM; d = 0: only the last outcome counts).
          This update rule and its default d = 0.7 are ours: Losada et al.'s own
          definition of MM-NS and its default setting (which Li & Kanoulas, CIKM 2017,
          sec. 4.4 use through the authors' R code) could not be consulted here (the
          search tool holds only the papers' abstracts, and the reference code of Li &
          Kanoulas calls the R function without including it), so results with ``mm-ns``
          are not those of the paper's MM-NS.
``mm``    the stationary max-mean bandit: the same with d = 1 (alpha - 1 relevant and
          beta - 1 non-relevant documents pulled from the run).
``ucb``   UCB1-Tuned (Auer, Cesa-Bianchi & Fischer, Machine Learning 47, 2002): every live arm
          once, then the arm maximising mean + sqrt(ln t / n * min(1/4, V + sqrt(2 ln t / n)))
          over n pulls of the arm and t pulls in all, V = mean (1 - mean) (the variance of
          binary rewards; an upper bound for fractional ones).

Ties between arms of equal score (every arm at the start) are broken uniformly at random
(seeded: the same seed gives the same sample). The sample has design ``pooled`` (judged
documents pi = 1, unjudged 0), and no sampling estimator applies; the exact measures on the
judged set (unjudged documents non-relevant) are what remain. ``propose(topic, n)`` with n > 1 makes n pulls under the current
posteriors (the best arm's next n documents, then the next arm's when it runs out) before
their rewards are known; :func:`~sampleval.selection.base.simulate` pulls one at a time.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from sampleval.core.pool import Pool
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.selection.base import Budget, register
from sampleval.selection.mtf import RunWalker

VARIANTS = ("mm-ns", "mm", "ucb")
DEFAULT_DISCOUNT = 0.7


@register
class MABSelector(RunWalker):
    """Multi-armed bandit pooling over runs (Losada et al., SAC 2016); see the module
    docstring for the variants."""

    name: ClassVar[str] = "mab"
    summary: ClassVar[str] = "multi-armed bandit pooling (Losada et al., SAC 2016)"
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("variant", str, "mm-ns", "mm-ns (max-mean, non-stationary), mm (max-mean) or "
              "ucb (UCB1-Tuned)", choices=VARIANTS),
        Param("discount", float, None, f"mm-ns only: weight of each earlier reward per later "
              f"pull of the same run (unset: {DEFAULT_DISCOUNT})",
              check=lambda x: 0 <= x <= 1, requirement="in [0, 1]"),
    )

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self.variant = self.params["variant"]
        if "discount" in self.params and self.variant != "mm-ns":
            raise UsageError("mab: the discount applies to the mm-ns variant only")
        self.discount = self.params.get("discount", DEFAULT_DISCOUNT if self.variant == "mm-ns"
                                        else 1.0)
        if self.variant == "mm-ns":
            self.params["discount"] = self.discount
        # discounted reward sums: alpha - 1 and beta - 1 (undiscounted for mm and ucb)
        self._hits = {t: np.zeros(pool.n_runs) for t in pool.topics}
        self._misses = {t: np.zeros(pool.n_runs) for t in pool.topics}

    def _choose(self, topic: str, live: np.ndarray) -> int:
        while live.any():
            tied = self._best_arms(topic, live)
            # drop exhausted arms before drawing among the tied, so that the draw (and the
            # sample) is the same whether or not a run's exhaustion was noticed before
            live[tied[self._walk(topic).exhausted(tied)]] = False
            tied = tied[live[tied]]
            if len(tied):
                return int(tied[0] if len(tied) == 1 else self._rngs[topic].choice(tied))
        return -1

    def _best_arms(self, topic: str, live: np.ndarray) -> np.ndarray:
        """The live arms of the highest score (UCB: the untried live arms first)."""
        hits, misses = self._hits[topic], self._misses[topic]
        if self.variant == "ucb":
            pulls = hits + misses
            untried = live & (pulls == 0)
            if untried.any():
                return np.flatnonzero(untried)
            n = np.where(pulls > 0, pulls, 1.0)  # every live arm has been pulled by now
            mean, log_t = hits / n, math.log(pulls.sum())
            spread = mean * (1.0 - mean) + np.sqrt(2.0 * log_t / n)
            score = mean + np.sqrt(log_t / n * np.minimum(0.25, spread))
        else:
            score = (1.0 + hits) / (2.0 + hits + misses)
        score = np.where(live, score, -np.inf)
        return np.flatnonzero(score == score.max())

    def _learn(self, topic: str, run: int, label: float) -> None:
        reward = min(max(label, 0.0), 1.0)
        hits, misses = self._hits[topic], self._misses[topic]
        hits[run] = self.discount * hits[run] + reward
        misses[run] = self.discount * misses[run] + (1.0 - reward)

    def _arms_state(self, topic: str) -> dict[str, Any]:
        return {"hits": self._hits[topic].tolist(), "misses": self._misses[topic].tolist()}

    def _load_arms(self, topic: str, saved: dict[str, Any]) -> None:
        self._hits[topic] = np.asarray(saved["hits"], dtype=np.float64)
        self._misses[topic] = np.asarray(saved["misses"], dtype=np.float64)
