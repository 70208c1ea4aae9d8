"""``active``: active sampling, Li & Kanoulas, "Active Sampling for Large-scale Information
Retrieval Evaluation", CIKM 2017 (Algorithm 1; sec. 2-3).

Each topic is sampled in rounds t = 1, 2, ... Round t

1. puts a distribution P_t over the runs that retrieved anything for the topic, in proportion
   to each run's weight a_s, mixed with the uniform distribution so that no run's
   probability reaches 0: P_t(s) = (1 - floor) a_s / sum a + floor / S. The weight is
   (``weights=ap``, the paper's choice) the run's AP estimated from the judgments so far, or
   (``weights=prior-mass``, the alternative of the paper's code) the prior mass w_s of its
   judged relevant documents. Until the first relevant document is found, P_t is uniform;
2. within run s, documents follow its AP-prior over its own L_s retrieved (pooled)
   documents, w_s(r) = (1/L_s) sum_{j=r}^{L_s} 1/j (sums to 1, w_s(L_s) = 1/L_s^2 > 0), so
   p_t(d) = sum_s P_t(s) w_s(rank_s(d));
3. draws N_t documents i.i.d. from p_t (with replacement), each as the paper's Algorithm 1
   does: a run from P_t, then a rank from the run's AP-prior, and has the new ones judged.

The inclusion probabilities accumulate over the rounds (sec. 3): pi_i = 1 - prod_t
(1 - p_t(i))^N_t and pi_ij = pi_i + pi_j - [1 - prod_t (1 - p_t(i) - p_t(j))^N_t]; the Sample
(design ``with-replacement``) records every draw, N_t, and p_t(i) of every sampled document
at every round, so that ``core.inclusion`` computes them, and Horvitz-Thompson estimators apply.

Choices (ours where the paper is silent):

- the AP estimate that steers the sampling is the HT estimator of ``estimators.
  horvitz_thompson.average_precision`` with pi_ij replaced by pi_i pi_j (the paper's code
  also treats inclusions as independent there), for all runs at once from where the judged
  relevant documents sit in the rank matrix; relevance is label >= 1 (``estimators.base.
  relevance`` at level 1). Estimates from the Sample use the exact pi_ij;
- ``floor`` (default 0.1): the share of each round's run distribution spread uniformly, so
  every pooled document keeps p_t(d) >= floor w_s(rank_s(d)) / S > 0 and pi_i > 0;
- the budget counts distinct judged documents. A round draws N_t = min(batch, budget left)
  times, so it can never bring more new documents than the budget allows, and rounds go on
  (a round whose draws were all judged before adds nothing) until the budget is spent: the
  budget is met exactly and no draw is discarded. The number of rounds, and so N_t, depends on
  the draws, as in the paper; the formulas above treat them as fixed;
- the AP estimates are updated once a round's documents are all judged (they steer only the
  next round), taking the round's relevant documents in pool order, so the state, and a
  restored state replayed round by round, do not depend on the order labels arrive in;
- a round's new documents are proposed (``propose(topic, n)`` hands out at most n at a time)
  and must all be judged before the next round's distribution is computed; ``sample()``
  holds the completed rounds;
- each topic draws from its own Generator, seeded from the given one at construction, so
  the sample does not depend on the order in which topics are worked on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd

from sampleval.core.pool import PAD, Pool, TopicPool
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators.base import relevance
from sampleval.selection.base import Budget, Selector, register, rng_from_state, rng_state
from sampleval.selection.stratified import harmonic

WEIGHTS = ("ap", "prior-mass")
_FRAME = ["query_id", "doc_id", "relevance", "stratum", "inclusion"]
_DRAWS = ["query_id", "round", "doc_id", "probability"]
_ROUNDS = ["query_id", "round", "size"]


def run_prior(ranking: np.ndarray) -> np.ndarray:
    """``[n_runs, width]``: each run's AP-prior over its own retrieved documents, w_s(r) =
    (1/L_s) sum_{j=r}^{L_s} 1/j (0 at padding)."""
    width = ranking.shape[1]
    length = (ranking != PAD).sum(axis=1, keepdims=True)
    h = harmonic(width)
    weight = (h[length] - h[:width]) / np.maximum(length, 1)
    return np.where(ranking != PAD, weight, 0.0)


class Hits(NamedTuple):
    """The occurrences of the judged relevant documents in the rankings, by run then rank:
    ``run``, ``col`` (0-based rank), ``doc`` (the document's index into the vector of
    relevant documents' values), ``prior`` (the run's AP-prior at that rank) and ``first``
    (the index of the first occurrence in the same run)."""

    run: np.ndarray
    col: np.ndarray
    doc: np.ndarray
    prior: np.ndarray
    first: np.ndarray

    @classmethod
    def none(cls) -> Hits:
        empty = np.zeros(0, dtype=np.int64)
        return cls(empty, empty, empty, np.zeros(0), empty)

    def merged(self, run: np.ndarray, col: np.ndarray, doc: int,
               prior: np.ndarray) -> Hits:
        """These hits and the occurrences (``run``, ``col``, ``prior``) of one more relevant
        document ``doc``, kept in (run, rank) order."""
        width = int(max(self.col.max(initial=0), col.max(initial=0))) + 1
        where = np.searchsorted(self.run * width + self.col, run * width + col)
        merged_run = np.insert(self.run, where, run)
        return Hits(merged_run, np.insert(self.col, where, col),
                    np.insert(self.doc, where, doc), np.insert(self.prior, where, prior),
                    np.searchsorted(merged_run, merged_run))


def estimated_ap(hits: Hits, x: np.ndarray, y: np.ndarray, n_runs: int) -> np.ndarray:
    """HT estimate of every run's AP with pi_ij = pi_i pi_j: (1/R-hat) sum_k x_k (y_k +
    sum_{l above k} x_l) / rank_k over the run's judged relevant documents k, where ``x``
    holds y/pi and ``y`` the relevance of every relevant document (indexed by ``hits.doc``)
    and R-hat = sum x."""
    x_hit = x[hits.doc]
    before = np.cumsum(x_hit) - x_hit
    above = before - before[hits.first]
    return np.bincount(hits.run, weights=x_hit * (y[hits.doc] + above) / (hits.col + 1),
                       minlength=n_runs) / x.sum()


def run_distribution(weights: np.ndarray | None, present: np.ndarray,
                     floor: float) -> np.ndarray:
    """P(s) = (1 - floor) a_s / sum a + floor / S over the present runs (uniform when there
    are no weights or they are all 0)."""
    uniform = present / present.sum()
    if weights is None:
        return uniform
    total = weights[present].sum()
    if total <= 0:
        return uniform
    return (1.0 - floor) * np.where(present, weights, 0.0) / total + floor * uniform


class _TopicDraws:
    """One topic's sampling state: labels, rounds (P_t, N_t, draws), pending documents, and
    the judged relevant documents with their log-probability of never being drawn.

    A draw picks a run from P_t, then a rank from the run's AP-prior, which draws document d
    with probability p_t(d) = sum_s P_t(s) w_s(rank_s(d)) at a cost that does not grow with
    the pool. p_t over the whole pool is only computed when the Sample is written; during
    sampling only the relevant documents' pi_i (for the AP estimates) is kept up to date.
    """

    def __init__(self, tp: TopicPool, docnos: np.ndarray, budget: int,
                 rng: np.random.Generator) -> None:
        self.ranking = tp.ranking
        self.docnos = docnos
        self.size = tp.size
        self.budget = budget
        self.rng = rng
        self.present = tp.lengths > 0
        self.lengths = tp.lengths
        prior = run_prior(tp.ranking)
        # each run's cdf over its ranks, offset by the run's index: one increasing array
        n_runs, self.width = prior.shape
        self.cdf = (np.cumsum(prior, axis=1) + np.arange(n_runs)[:, None]).ravel()
        # every (run, rank) occurrence of a pooled document, grouped by document
        runs, cols = np.nonzero(tp.ranking != PAD)
        by_doc = np.argsort(tp.ranking[runs, cols], kind="stable")
        self.occ_run, self.occ_col = runs[by_doc], cols[by_doc]
        self.occ_doc = tp.ranking[self.occ_run, self.occ_col]
        self.occ_prior = prior[self.occ_run, self.occ_col]
        self.occ_start = np.searchsorted(self.occ_doc, np.arange(tp.size + 1))
        self.labels = np.full(tp.size, np.nan)
        self.judged = 0
        self.hits = Hits.none()
        self.relevant: list[int] = []
        self.y_rel = np.zeros(0)
        self.log_miss_rel = np.zeros(0)
        self.run_probs = np.zeros((0, n_runs))
        self.draws: list[np.ndarray] = []
        self.pending: list[int] = []

    @property
    def rounds(self) -> int:
        return len(self.draws)

    def occurrences(self, doc: int) -> slice:
        return slice(self.occ_start[doc], self.occ_start[doc + 1])

    def weights(self, kind: str) -> np.ndarray | None:
        """Each run's weight from the judgments so far (None before any relevant one)."""
        if not self.relevant:
            return None
        n_runs = len(self.present)
        if kind == "prior-mass":
            return np.bincount(self.hits.run, weights=self.y_rel[self.hits.doc] *
                               self.hits.prior, minlength=n_runs)
        x = self.y_rel / -np.expm1(self.log_miss_rel)
        return estimated_ap(self.hits, x, self.y_rel, n_runs)

    def add_round(self, run_probs: np.ndarray, drawn: np.ndarray) -> None:
        """Record a round (its run distribution and draws) and its new documents."""
        if self.rounds == len(self.run_probs):  # grow the round table by doubling
            self.run_probs = np.concatenate([self.run_probs, np.zeros_like(
                self.run_probs, shape=(max(8, self.rounds), self.run_probs.shape[1]))])
        self.run_probs[self.rounds] = run_probs
        self.draws.append(drawn)
        if self.relevant:
            hits = self.hits
            p_rel = np.bincount(hits.doc, weights=hits.prior * run_probs[hits.run],
                                minlength=len(self.relevant))
            with np.errstate(divide="ignore"):
                self.log_miss_rel = self.log_miss_rel + len(drawn) * np.log1p(-p_rel)
        labels = self.labels
        self.pending = [d for d in dict.fromkeys(drawn.tolist()) if labels[d] != labels[d]]

    def draw_round(self, kind: str, floor: float, batch: int) -> None:
        """Draw min(batch, budget left) documents from this round's p_t: a run from P_t,
        then a rank from the run's AP-prior."""
        size = min(batch, self.budget - self.judged)
        run_probs = run_distribution(self.weights(kind), self.present, floor)
        u = self.rng.random((2, size))
        run_cdf = np.cumsum(run_probs)
        runs = np.minimum(np.searchsorted(run_cdf, u[0] * run_cdf[-1], side="right"),
                          len(run_cdf) - 1)
        spot = np.searchsorted(self.cdf, runs + u[1], side="right") - runs * self.width
        cols = np.minimum(spot, self.lengths[runs] - 1)  # rounding past a run's last rank
        self.add_round(run_probs, self.ranking[runs, cols])

    def judge(self, where: np.ndarray, labels: np.ndarray) -> None:
        """Take labels of pending documents; once the round's are all in, its relevant
        documents (in docno-index order, whatever order they came in) join the AP
        estimates."""
        self.judged += int(np.isnan(self.labels[where]).sum())
        self.labels[where] = labels
        done = set(where.tolist())
        self.pending = [d for d in self.pending if d not in done]
        if not self.pending:
            last = np.unique(self.draws[-1]) if self.draws else np.zeros(0, dtype=np.int64)
            y = relevance(self.labels[last], 1.0)
            known = set(self.relevant)
            for doc, value in zip(last.tolist(), y.tolist(), strict=True):
                if value > 0 and doc not in known:
                    self._add_relevant(doc, value)

    def _add_relevant(self, doc: int, y: float) -> None:
        """Take a newly judged relevant document into the AP estimates, with the
        log-probability that the rounds so far all missed it."""
        occ = self.occurrences(doc)
        p = self.run_probs[:self.rounds, self.occ_run[occ]] @ self.occ_prior[occ]
        sizes = np.fromiter((len(d) for d in self.draws), dtype=np.float64,
                            count=self.rounds)
        self.hits = self.hits.merged(self.occ_run[occ], self.occ_col[occ],
                                     len(self.relevant), self.occ_prior[occ])
        self.relevant.append(doc)
        self.y_rel = np.append(self.y_rel, y)
        with np.errstate(divide="ignore"):
            self.log_miss_rel = np.append(self.log_miss_rel, sizes @ np.log1p(-p))

    def tables(self, topic: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame,
                                          pd.DataFrame]:
        """The topic's frame, draws, rounds and round_probs, over the rounds whose new
        documents are all judged (all but a last round with pending documents)."""
        done = self.rounds - (1 if self.pending else 0)
        sizes = np.array([len(d) for d in self.draws[:done]], dtype=np.int64)
        flat = np.concatenate(self.draws[:done]) if done else np.zeros(0, np.int64)
        sampled = np.unique(flat)
        weight = np.zeros((len(self.present), self.size))
        weight[self.occ_run, self.occ_doc] = self.occ_prior
        probs = self.run_probs[:done] @ weight  # p_t(d) of every pooled document
        with np.errstate(divide="ignore"):
            log_miss = sizes @ np.log1p(-probs)
        labels = np.full(self.size, np.nan)
        labels[sampled] = self.labels[sampled]
        round_of = np.repeat(np.arange(1, done + 1), sizes)
        return (
            pd.DataFrame({"query_id": np.full(self.size, topic, dtype=object),
                          "doc_id": self.docnos, "relevance": labels, "stratum": "",
                          "inclusion": -np.expm1(log_miss)}),
            pd.DataFrame({"query_id": topic, "round": round_of, "doc_id": self.docnos[flat],
                          "probability": probs[round_of - 1, flat]}),
            pd.DataFrame({"query_id": topic, "round": np.arange(1, done + 1), "size": sizes}),
            pd.DataFrame({"query_id": topic, "round": np.repeat(np.arange(1, done + 1),
                                                                 len(sampled)),
                          "doc_id": np.tile(self.docnos[sampled], done),
                          "probability": probs[:, sampled].ravel()}),
        )


@register
class ActiveSelector(Selector):
    """Active sampling, Li & Kanoulas, CIKM 2017, Algorithm 1 (see the module docstring)."""

    name: ClassVar[str] = "active"
    design: ClassVar[str] = "with-replacement"
    estimators: ClassVar[tuple[str, ...]] = ("ht",)
    parameters: ClassVar[dict[str, str]] = {
        "batch": "draws per round (default 3)",
        "weights": "run weights: ap (estimated AP, default) or prior-mass (AP-prior mass of "
                   "the judged relevant documents)",
        "floor": "share of each round's run distribution spread uniformly, in (0, 1] "
                 "(default 0.1)",
    }

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        try:
            self.batch = int(params.get("batch", 3))
            self.floor = float(params.get("floor", 0.1))
        except ValueError:
            raise UsageError("batch must be a whole number and floor a number") from None
        self.kind = str(params.get("weights", "ap"))
        if self.batch < 1:
            raise UsageError("batch must be at least 1")
        if not 0 < self.floor <= 1:
            raise UsageError("floor must lie in (0, 1]")
        if self.kind not in WEIGHTS:
            raise UsageError(f"weights must be one of {', '.join(WEIGHTS)}")
        self._initial_rng = rng_state(rng)
        seeds = rng.integers(0, 2**63, size=len(pool.topics))
        self._topics = {t: _TopicDraws(pool[t], pool.docnos_of(t), self.budget_for(t),
                                       np.random.default_rng(s))
                        for t, s in zip(pool.topics, seeds, strict=True)}

    def batch_size(self, topic: str) -> int:
        return self.batch  # a round's draws are made before any of them is judged

    def propose(self, topic: str, n: int) -> list[str]:
        draws = self._of_topic(self._topics, topic)
        self._check_batch(n)
        while not draws.pending and draws.judged < draws.budget:
            draws.draw_round(self.kind, self.floor, self.batch)
        return [str(d) for d in draws.docnos[draws.pending[:n]]]

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        draws = self._of_topic(self._topics, topic)
        draws.judge(*self._received(topic, judgments, np.asarray(draws.pending)))

    def sample(self) -> Sample:
        tables = [d.tables(t) for t, d in self._topics.items()]
        frame, draws, rounds, round_probs = (
            pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
            for parts, columns in zip(zip(*tables, strict=True) if tables else ([],) * 4,
                                      (_FRAME, _DRAWS, _ROUNDS, _DRAWS), strict=True))
        return Sample(self.design, frame, draws=draws, rounds=rounds, round_probs=round_probs,
                      meta=self._sample_meta())

    def state(self) -> dict[str, Any]:
        return {
            **self._state_header(self._initial_rng),
            "topics": {t: {
                "rng": rng_state(d.rng),
                "rounds": [{"runs": p.tolist(), "draws": x.tolist()}
                           for p, x in zip(d.run_probs, d.draws, strict=False)],
                "judged": np.flatnonzero(~np.isnan(d.labels)).tolist(),
                "labels": d.labels[~np.isnan(d.labels)].tolist(),
            } for t, d in self._topics.items()},
        }

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> ActiveSelector:
        selector = cls._from_header(pool, state)
        for topic, saved in state["topics"].items():
            draws = selector._topics[topic]
            draws.rng = rng_from_state(saved["rng"])
            labels = dict(zip(saved["judged"], saved["labels"], strict=True))
            for round_ in saved["rounds"]:  # replay: each round, then its judgments
                draws.add_round(np.asarray(round_["runs"], dtype=np.float64),
                                np.asarray(round_["draws"], dtype=np.int64))
                ready = [d for d in draws.pending if d in labels]
                if ready:
                    draws.judge(np.asarray(ready, dtype=np.int64),
                                np.array([labels[d] for d in ready], dtype=np.float64))
        return selector
