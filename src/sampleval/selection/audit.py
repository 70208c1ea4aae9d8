"""``audit``: a human sample for auditing a machine judge (``sampleval audit``) as well as
for estimating (issue 31, item 3).

``stratified`` (Pavlu & Aslam 2007) samples in proportion to the *mean* over the runs of
each run's AP-prior, which serves the leaderboard's estimates; the audit asks, per run,
whether the machine mis-scores *that* run, and a judge that favours a run does it through
that run's top documents, which the mean over many runs weighs little when few other runs
retrieved them. With the machine's labels given (``--predictions FILE``), ``audit`` changes
two things and keeps the rest of ``stratified`` (water-filled targets pi*_i, certainty
stratum, strata of equal target mass, stratified SRS; :mod:`.stratified`):

1. the size each target follows mixes, in shares ``1 - top`` and ``top`` (default 1/2),
   the mean over the runs of their AP-priors (``stratified``'s) and their *maximum*: a
   document gets the weight its best-placed run gives it, so every run's top documents
   are sampled about as they would be were that run alone evaluated (both parts
   normalised to sum to 1 over the topic's pool);
2. the strata never mix documents the machine calls relevant (prediction >= 0.5: grade 1
   or more, or a probability of at least one half) with the others: the pool is split by
   the machine's label first, and each part cut into its own strata, its share of the
   budget its share of the target mass. The machine's errors (the residuals human -
   machine, whose spread sets the variance of the audit's bias) differ between the two
   parts, and stratifying on the label removes that difference from the variance
   (Sarndal, Swensson & Wretman, Model Assisted Survey Sampling, 1992, sec. 3.7 and
   12.2: stratifying on an auxiliary variable that predicts the study variable).

The design is stratified SRS as ``stratified``'s (Sample design ``stratified``), so every
design-based estimator applies unchanged. Measured against ``stratified`` in
docs/research/audit.md ("The `audit` sample against `stratified`").
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from sampleval.core.ap_prior import document_prior, run_prior
from sampleval.core.pool import PAD, TopicPool
from sampleval.declare import Param
from sampleval.selection.base import register
from sampleval.selection.strata import Layout, StratifiedSelector, largest_remainder, water_fill
from sampleval.selection.stratified import PriorStratifiedSelector, cut_strata

RELEVANT = 0.5
"""A prediction at or above this is the machine calling the document relevant."""


def best_run_prior(tp: TopicPool, kind: str = "aslam") -> np.ndarray:
    """Each pooled document's largest AP-prior over the runs that retrieved it (pool
    order), normalised to sum to 1."""
    prior = run_prior(tp.ranking, kind)
    best = np.zeros(tp.size)
    inside = tp.ranking != PAD
    np.maximum.at(best, tp.ranking[inside], prior[inside])
    return best / best.sum() if best.sum() > 0 else best


@register
class AuditSelector(StratifiedSelector):
    """Stratified sampling for the audit of a machine judge (module docstring)."""

    name: ClassVar[str] = "audit"
    summary: ClassVar[str] = ("for auditing a machine judge: stratified by its label, each "
                              "run's top documents weighted as its own (needs --predictions)")
    parameters: ClassVar[tuple[Param, ...]] = (
        *(p for p in PriorStratifiedSelector.parameters if p.name in ("per_stratum", "prior")),
        Param("top", float, 0.5, "share of the size that follows each document's largest "
              "AP-prior over the runs (the rest: the mean over the runs, as stratified)",
              check=lambda x: 0 <= x <= 1, requirement="in [0, 1]"),
    )
    takes_predictions: ClassVar[bool] = True
    needs_predictions: ClassVar[bool] = True

    def _size(self, tp: TopicPool) -> np.ndarray:
        """(1 - top) mean AP-prior + top largest AP-prior, each summing to 1."""
        kind, share = self.params["prior"], self.params["top"]
        return (1.0 - share) * document_prior(tp, kind) + share * best_run_prior(tp, kind)

    def _layout(self, tp: TopicPool, budget: int) -> Layout:
        assert self.predicted is not None
        size = self._size(tp)
        target = water_fill(np.ones(tp.size), size, float(budget))
        certain = target >= 1.0
        assert self.predicted is not None  # needs_predictions
        relevant = self.predicted[tp.topic] >= RELEVANT
        mass = budget - int(certain.sum())
        groups = [np.flatnonzero(~certain & (relevant == side)) for side in (True, False)]
        shares = np.array([target[g].sum() for g in groups])
        budgets = (largest_remainder(shares * (mass / shares.sum())) if shares.sum() > 0
                   else np.zeros(2, dtype=np.int64))
        floor = np.array([min(2, len(g)) for g in groups])  # every document reachable
        if mass >= floor.sum():
            short = np.maximum(floor - budgets, 0)
            budgets = budgets + short - short[::-1]  # taken from the other part
        codes = np.zeros(tp.size, dtype=np.int64)
        counts = [int(certain.sum())]
        labels = ["0"]
        for side, group, n in zip(("relevant", "other"), groups, budgets, strict=True):
            if not len(group):
                continue
            group = group[np.argsort(-size[group], kind="stable")]
            inner, inner_counts = cut_strata(target[group], int(n), self.per_stratum)
            codes[group] = len(counts) - 1 + inner
            counts.extend(int(c) for c in inner_counts)
            labels.extend(f"{side}-{h}" for h in range(1, len(inner_counts) + 1))
        return Layout(codes, np.array(labels, dtype=object), np.array(counts, dtype=np.int64))

    @property
    def per_stratum(self) -> int:
        return int(self.params["per_stratum"])
