"""``active``: active sampling, Li & Kanoulas, "Active Sampling for Large-scale Information
Retrieval Evaluation", CIKM 2017 (Algorithm 1; sec. 2-3).

Each topic is sampled in rounds t = 1, 2, ... Round t

1. puts a distribution P_t over the runs that retrieved anything for the topic, in proportion
   to each run's weight a_s: P_t(s) = (1 - floor) a_s / sum a + floor / S (``floor`` 0 by
   default: neither the paper nor its code mixes in the uniform distribution). The weight is
   (``weights=ap``, the paper's choice, sec. 2.2) the run's AP estimated from the judgments
   so far, or (``weights=prior-mass``, the default of the paper's code) the AP-prior mass of
   its judged relevant documents. Until the first relevant document is found (so in round
   1), P_t is uniform;
2. within run s, documents follow its AP-prior over its own L_s retrieved (pooled) documents
   (``prior``, :mod:`.ap_prior`; default the paper's (1/2L)(1 + 1/r + ... + 1/L)), so
   p_t(d) = sum_s P_t(s) w_s(rank_s(d));
3. draws N_t documents i.i.d. from p_t (with replacement), each as the paper's Algorithm 1
   does: a run from P_t, then a rank from the run's AP-prior, and has the new ones judged.

The inclusion probabilities accumulate over the rounds (sec. 3): pi_i = 1 - prod_t
(1 - p_t(i))^N_t and pi_ij = pi_i + pi_j - [1 - prod_t (1 - p_t(i) - p_t(j))^N_t]; the Sample
(design ``with-replacement``) records every draw, N_t, and p_t(i) of every sampled document
at every round, so that ``core.inclusion`` computes them, and Horvitz-Thompson estimators apply.
A uniform share (``uniform=a``) makes a share a of the draws uniformly over the topic's N
pooled documents instead, so p_t(d) = (1 - a) sum_s P_t(s) w_s(rank_s(d)) + a / N: the
defensive mixture of importance sampling (Hesterberg, "Weighted average importance sampling
and defensive mixture distributions", Technometrics 1995). Every round can then draw every
document, which the per-draw estimators (``~hh``, ``~ppi``'s draws form) need to be unbiased
(with ``floor=0`` a later round gives probability 0 to the documents only runs of estimated
AP 0 retrieved), and no per-draw weight 1/p_t(d) exceeds N / a (a run floor leaves deep
documents at a few hundredths of 1/N).

The default is ``uniform=0.2``, a departure from the paper, whose Algorithm 1 (and code) has
no share: ``active:uniform=0`` is the paper's method. The share takes the per-draw ratios'
bias to about 0 at less rms, so that the per-draw family can be the default of every measure
on these samples; the measurements and their commands: docs/guide/methods.md, "A uniform share by
default", and docs/research/predictions.md, "A uniform share".

Round 1 is uniform over the runs and every rank has a positive prior (except the last under
``prior=log``), so every pooled document has pi_i > 0 whatever the floor; a floor keeps
p_t(d) > 0 in every round, which only the per-draw estimator (``~hh``, unbiased when every
draw can reach every document) needs.

Rounds. The paper sets "the batch size N_b" to 3 (sec. 4), which can be read as 3 draws per
round; its code (repository dli1/activesampling, ``ActiveModel.sample``) draws int(B/3)
documents per round (B the topic's budget; B when B < 3), stops as soon as B distinct
documents are judged (the rest of that round's draws are dropped) and after at most 50
rounds: about three rounds in all. ``rounds=R`` (default 3) does the same with int(B/R) per
round (the draws after the one that brings the B-th distinct document are not made);
``batch=N`` draws N_t = min(N, budget left) per round instead, rounds going on until the
budget is spent (no cap), the far more adaptive reading sampleval used before. Either way the
number of rounds, and the last N_t, depend on the draws; the formulas above treat them as
fixed.

Choices (ours where the paper is silent):

- the AP estimate that steers the sampling is the HT estimator of ``estimation.engine.
  estimands.average_precision`` with pi_ij replaced by pi_i pi_j (the paper's code
  also treats inclusions as independent there), for all runs at once from where the judged
  relevant documents sit in the rank matrix; relevance is label >= 1 (``core.relevance.
  relevance`` at level 1). Estimates from the Sample use the exact pi_ij;
- the budget counts distinct judged documents, as in the paper's code;
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

from collections.abc import Collection, Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from sampleval.core.ap_prior import PRIORS, run_prior
from sampleval.core.design import WITH_REPLACEMENT, Design
from sampleval.core.pool import PAD, Pool, TopicPool
from sampleval.core.relevance import judged_relevance
from sampleval.core.sample import Sample
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.selection.base import Budget, Selector, register, rng_from_state, rng_state

WEIGHTS = ("ap", "prior-mass")
MAX_ROUNDS = 50  # the reference code's cap on rounds (rounds= mode)
_TABLES = {"frame": ["query_id", "doc_id", "relevance", "stratum", "inclusion"],
           "draws": ["query_id", "round", "doc_id", "probability"],
           "rounds": ["query_id", "round", "size"],
           "round_probs": ["query_id", "round", "doc_id", "probability"]}


# -- compiled kernels: one round costs a few of these calls, whatever the pool's size --------


@njit(cache=True)
def estimated_ap(run: np.ndarray, col: np.ndarray, doc: np.ndarray, x: np.ndarray,
                 y: np.ndarray, n_runs: int) -> np.ndarray:
    """HT estimate of every run's AP with pi_ij = pi_i pi_j: (1/R-hat) sum_k x_k (y_k +
    sum_{l above k} x_l) / rank_k over the run's judged relevant documents k (Li & Kanoulas,
    CIKM 2017, sec. 3), R-hat = sum x. The hits (``run``, 0-based rank ``col``, ``doc``: the
    index into ``x`` = y/pi and ``y``) are the relevant documents' occurrences in (run, rank)
    order."""
    ap = np.zeros(n_runs)
    above = 0.0
    for i in range(len(run)):
        if i == 0 or run[i] != run[i - 1]:
            above = 0.0
        xi = x[doc[i]]
        ap[run[i]] += xi * (y[doc[i]] + above) / (col[i] + 1)
        above += xi
    total = x.sum()
    return ap / total if total > 0 else ap


@njit(cache=True)
def run_distribution(weights: np.ndarray, present: np.ndarray, floor: float) -> np.ndarray:
    """P(s) = (1 - floor) a_s / sum a + floor / S over the present runs (uniform when the
    weights of the present runs sum to 0)."""
    uniform = present / present.sum()
    total = (weights * present).sum()
    if total <= 0:
        return uniform
    return (1.0 - floor) * weights * present / total + floor * uniform


@njit(cache=True)
def draw(run_probs: np.ndarray, u: np.ndarray, cdf: np.ndarray, ranking: np.ndarray,
         lengths: np.ndarray) -> np.ndarray:
    """Documents drawn as Algorithm 1 does, one per column of ``u`` (``[2, N]`` uniforms): a
    run from ``run_probs``, then a rank from the run's AP-prior (``cdf``: each run's cdf over
    its ranks plus the run's index, flattened, so one increasing array)."""
    n_runs, width = ranking.shape
    run_cdf = np.cumsum(run_probs)
    runs = np.minimum(np.searchsorted(run_cdf, u[0] * run_cdf[-1], side="right"), n_runs - 1)
    drawn = np.empty(u.shape[1], dtype=np.int64)
    for i in range(u.shape[1]):
        s = runs[i]
        spot = np.searchsorted(cdf, s + u[1, i], side="right") - s * width
        drawn[i] = ranking[s, min(spot, lengths[s] - 1)]  # rounding past the last rank
    return drawn


@njit(cache=True)
def with_share(by_runs: Any, uniform: float, pool_size: int) -> Any:  # a float or an array
    """p_t(d) from the runs' part sum_s P_t(s) w_s(rank_s(d)): (1 - uniform) of it plus
    uniform / pool_size, the share drawn uniformly over the pool."""
    return (1.0 - uniform) * by_runs + uniform / pool_size


@njit(cache=True)
def add_misses(log_miss: np.ndarray, run: np.ndarray, doc: np.ndarray, prior: np.ndarray,
               run_probs: np.ndarray, draws: int, uniform: float, pool_size: int) -> None:
    """log_miss[d] += draws log(1 - p(d)), p(d) the sum over d's hits of P(run) prior with
    the uniform share (:func:`with_share`; in place; ``doc`` indexes ``log_miss``)."""
    p = np.zeros(len(log_miss))
    for i in range(len(run)):
        p[doc[i]] += run_probs[run[i]] * prior[i]
    for d in range(len(log_miss)):
        p_d = with_share(p[d], uniform, pool_size)
        log_miss[d] += draws * np.log1p(-p_d) if p_d < 1.0 else -np.inf


@njit(cache=True)
def insert_hits(key: np.ndarray, ints: np.ndarray, floats: np.ndarray, n: int, width: int,
                run: np.ndarray, col: np.ndarray, doc: int, prior: np.ndarray) -> int:
    """Merge the occurrences (``run``, ``col``, ``prior``; in run order) of relevant document
    ``doc`` into the first ``n`` hits, kept sorted by ``key`` = run * width + col, with their
    run, col, doc in ``ints`` (``[3, capacity]``) and prior in ``floats``, in place, from
    the back; return the new count."""
    i, j, out = n - 1, len(run) - 1, n + len(run) - 1
    while j >= 0:
        new_key = run[j] * width + col[j]
        if i >= 0 and key[i] > new_key:
            key[out], floats[out] = key[i], floats[i]
            ints[0, out], ints[1, out], ints[2, out] = ints[0, i], ints[1, i], ints[2, i]
            i -= 1
        else:
            key[out], floats[out] = new_key, prior[j]
            ints[0, out], ints[1, out], ints[2, out] = run[j], col[j], doc
            j -= 1
        out -= 1
    return n + len(run)


@njit(cache=True)
def log_miss_of(run_probs: np.ndarray, sizes: np.ndarray, run: np.ndarray,
                prior: np.ndarray, uniform: float, pool_size: int) -> float:
    """sum_t N_t log(1 - p_t(d)) over the rounds so far for a document d with occurrences
    (``run``, ``prior``): the log-probability that every draw missed it (p_t as in
    :func:`add_misses`)."""
    total = 0.0
    for t in range(len(sizes)):
        p = 0.0
        for i in range(len(run)):
            p += run_probs[t, run[i]] * prior[i]
        p = with_share(p, uniform, pool_size)
        total += sizes[t] * np.log1p(-p) if p < 1.0 else -np.inf
    return total


class _TopicDraws:
    """One topic's sampling state: labels, rounds (P_t, N_t, draws), pending documents, and
    the judged relevant documents with their log-probability of never being drawn.

    A draw picks a run from P_t, then a rank from the run's AP-prior, which draws document d
    with probability p_t(d) = sum_s P_t(s) w_s(rank_s(d)) at a cost that does not grow with
    the pool. p_t over the whole pool is only computed when the Sample is written; during
    sampling only the relevant documents' pi_i (for the AP estimates) is kept up to date,
    from their occurrences in the rankings (the hits: run, rank, index among the relevant
    documents, prior; kept in (run, rank) order for :func:`estimated_ap`).
    """

    def __init__(self, tp: TopicPool, docnos: np.ndarray, budget: int,
                 rng: np.random.Generator, prior_kind: str, uniform: float) -> None:
        self.uniform = uniform
        self.ranking = tp.ranking
        self.docnos = docnos
        self.size = tp.size
        self.budget = budget
        self.rng = rng
        self.present = (tp.lengths > 0).astype(np.float64)
        self.lengths = tp.lengths
        prior = run_prior(tp.ranking, prior_kind)
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
        self.relevant: list[int] = []
        self.y_rel = np.zeros(tp.size)  # by index among the relevant documents
        self.log_miss_rel = np.zeros(tp.size)
        self.hit_key = np.zeros(len(runs), dtype=np.int64)  # run * width + rank
        self.hit_ints = np.zeros((3, len(runs)), dtype=np.int64)  # run, rank, relevant index
        self.hit_prior = np.zeros(len(runs))
        self.n_hits = 0
        self.run_probs = np.zeros((0, n_runs))  # P_t, by round (capacity grows)
        self.sizes = np.zeros(0)  # N_t
        self.draws: list[np.ndarray] = []
        self.pending: list[int] = []
        self._draw_probs = np.zeros((0, tp.size))  # p_t(d) by round (draw_probabilities)

    @property
    def rounds(self) -> int:
        return len(self.draws)

    def weights(self, kind: str) -> np.ndarray:
        """Each run's weight from the judgments so far (0 before any relevant one)."""
        k, n = len(self.relevant), self.n_hits
        if not k:
            return np.zeros(len(self.present))
        run, col, doc = self.hit_ints[:, :n]
        y = self.y_rel[:k]
        if kind == "prior-mass":
            return np.bincount(run, weights=y[doc] * self.hit_prior[:n],
                               minlength=len(self.present))
        return estimated_ap(run, col, doc, y / -np.expm1(self.log_miss_rel[:k]), y,
                            len(self.present))

    def add_round(self, run_probs: np.ndarray, drawn: np.ndarray) -> None:
        """Record a round (its run distribution and draws) and its new documents."""
        if self.rounds == len(self.run_probs):  # grow the round tables by doubling
            more = max(8, self.rounds)
            self.run_probs = np.concatenate([self.run_probs, np.zeros_like(
                self.run_probs, shape=(more, self.run_probs.shape[1]))])
            self.sizes = np.concatenate([self.sizes, np.zeros(more)])
        self.run_probs[self.rounds] = run_probs
        self.sizes[self.rounds] = len(drawn)
        self.draws.append(drawn)
        if self.relevant:
            n = self.n_hits
            add_misses(self.log_miss_rel[:len(self.relevant)], self.hit_ints[0, :n],
                       self.hit_ints[2, :n], self.hit_prior[:n], run_probs, len(drawn),
                       self.uniform, self.size)
        labels = self.labels
        self.pending = [d for d in dict.fromkeys(drawn.tolist()) if labels[d] != labels[d]]

    def draw_round(self, kind: str, floor: float, size: int) -> None:
        """Draw ``size`` documents from this round's p_t, cut after the draw that brings the
        last new document the budget allows (the later draws are not made)."""
        run_probs = run_distribution(self.weights(kind), self.present, floor)
        u = self.rng.random((3 if self.uniform else 2, size))
        drawn = draw(run_probs, u[:2], self.cdf, self.ranking, self.lengths)
        if self.uniform:  # the defensive share: a document of the pool, uniformly
            mixed = u[2] < self.uniform
            drawn[mixed] = np.minimum((u[1, mixed] * self.size).astype(np.int64),
                                      self.size - 1)
        left = self.budget - self.judged
        new = np.isnan(self.labels[drawn])
        _, first = np.unique(drawn, return_index=True)
        fresh = np.sort(first[new[first]])  # where each new document is first drawn
        if len(fresh) >= left:  # the budget's last new document: the later draws are not made
            drawn = drawn[:fresh[left - 1] + 1]
        self.add_round(run_probs, drawn)

    def chance_of_new(self, kind: str, floor: float) -> float:
        """The probability that a draw of the next round brings a document not yet judged.

        After a round without a new document the weights are unchanged, so this is the
        chance of every later round too; 0 (with ``floor=0``, all the weight on runs whose
        pooled documents are all judged) means the budget can never be spent."""
        run_probs = run_distribution(self.weights(kind), self.present, floor)
        unjudged = np.isnan(self.labels[self.occ_doc])
        by_runs = float((run_probs[self.occ_run[unjudged]] * self.occ_prior[unjudged]).sum())
        share_unjudged = float(np.isnan(self.labels).mean())
        return (1.0 - self.uniform) * by_runs + self.uniform * share_unjudged

    def judge(self, where: np.ndarray, labels: np.ndarray) -> None:
        """Take labels of pending documents; once the round's are all in, its relevant
        documents (in pool order, whatever order they came in) join the AP estimates."""
        self.judged += int(np.isnan(self.labels[where]).sum())
        self.labels[where] = labels
        done = set(where.tolist())
        self.pending = [d for d in self.pending if d not in done]
        if not self.pending:
            last = np.unique(self.draws[-1]) if self.draws else np.zeros(0, dtype=np.int64)
            y = judged_relevance(self.labels[last], 1.0)
            known = set(self.relevant)
            for doc, value in zip(last.tolist(), y.tolist(), strict=True):
                if value > 0 and doc not in known:
                    self._add_relevant(doc, value)

    def _add_relevant(self, doc: int, y: float) -> None:
        """Take a newly judged relevant document into the AP estimates, with the
        log-probability that the rounds so far all missed it."""
        occ = slice(self.occ_start[doc], self.occ_start[doc + 1])  # in run order
        run, prior = self.occ_run[occ], self.occ_prior[occ]
        k = len(self.relevant)
        self.n_hits = insert_hits(self.hit_key, self.hit_ints, self.hit_prior, self.n_hits,
                                  self.width, run, self.occ_col[occ], k, prior)
        self.relevant.append(doc)
        self.y_rel[k] = y
        self.log_miss_rel[k] = log_miss_of(self.run_probs[:self.rounds],
                                           self.sizes[:self.rounds], run, prior,
                                           self.uniform, self.size)

    def draw_probabilities(self, rounds: int) -> np.ndarray:
        """``[rounds, size]``: p_t(d) of every pooled document at each of the first
        ``rounds`` rounds (:func:`with_share` of sum_s P_t(s) w_s(rank_s(d))). A round's
        row never changes once drawn, so the rows are kept and only new rounds' computed
        (each from the document's occurrences in the runs: a look re-reads every round)."""
        have = len(self._draw_probs)
        if rounds > have:
            rows = [with_share(np.bincount(self.occ_doc, weights=self.run_probs[t, self.occ_run]
                                           * self.occ_prior, minlength=self.size),
                               self.uniform, self.size) for t in range(have, rounds)]
            self._draw_probs = np.concatenate([self._draw_probs, np.array(rows)])
        return self._draw_probs[:rounds]

    def tables(self, skip: int = 0) -> dict[str, dict[str, np.ndarray]]:
        """The topic's frame, draws, rounds and round_probs columns (no ``query_id``), over
        the rounds whose new documents are all judged (all but a last round with pending
        documents), after the first ``skip`` (left out, the later ones numbered from 1: the
        sample of the rounds after them, each an i.i.d. round given what came before; the
        labels of documents drawn again are those judged before). ``round_probs`` holds p_t of every sampled document at every round t =
        1..T, and in round 0 every pooled document's p-bar(d) = n / sum_t N_t / p_t(d), its
        draw probability averaged harmonically over the n draws (0 where a round cannot draw
        it), which the anticipated variance of the per-draw form reads. pi_i is given for
        the drawn documents only (the others' is not needed by any estimator; it is
        1 - prod_t (1 - p_t)^N_t all the same)."""
        last = self.rounds - (1 if self.pending else 0)
        skip = min(skip, last)
        done = last - skip
        sizes = np.array([len(d) for d in self.draws[skip:last]], dtype=np.int64)
        flat = np.concatenate(self.draws[skip:last]) if done else np.zeros(0, np.int64)
        sampled = np.unique(flat)
        every = self.draw_probabilities(last)[skip:]
        with np.errstate(divide="ignore"):
            harmonic = len(flat) / (sizes @ (1.0 / every)) if done else np.zeros(self.size)
            probs = every[:, sampled]  # p_t(d) of the sampled documents
            log_miss = sizes @ np.log1p(-probs)
        labels, inclusion = np.full(self.size, np.nan), np.full(self.size, np.nan)
        labels[sampled] = self.labels[sampled]
        inclusion[sampled] = -np.expm1(log_miss)
        round_of = np.repeat(np.arange(1, done + 1), sizes)
        return {
            "frame": {"doc_id": self.docnos, "relevance": labels, "inclusion": inclusion},
            "draws": {"round": round_of, "doc_id": self.docnos[flat],
                      "probability": probs[round_of - 1, np.searchsorted(sampled, flat)]},
            "rounds": {"round": np.arange(1, done + 1), "size": sizes},
            "round_probs": {
                "round": np.repeat(np.arange(done + 1), [self.size] + [len(sampled)] * done),
                "doc_id": np.concatenate([self.docnos, np.tile(self.docnos[sampled], done)]),
                "probability": np.concatenate([harmonic, probs.ravel()])},
        }


@register
class ActiveSelector(Selector):
    """Active sampling, Li & Kanoulas, CIKM 2017, Algorithm 1 (see the module docstring)."""

    name: ClassVar[str] = "active"
    design: ClassVar[Design] = WITH_REPLACEMENT
    summary: ClassVar[str] = "active sampling (Li & Kanoulas, CIKM 2017, Algorithm 1)"
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("rounds", int, 3, "the reference code's rounds: each draws int(B/rounds) "
              "documents (B the topic's budget), rounds go on until B distinct documents are "
              "judged, at most 50", check=lambda n: n >= 1, requirement="at least 1"),
        Param("batch", int, None, "draws per round instead of rounds= (N_t = min(batch, "
              "budget left)); batch=3 was sampleval's reading of the paper's batch size 3",
              check=lambda n: n >= 1, requirement="at least 1"),
        Param("weights", str, "ap", "run weights: ap (estimated AP, the paper) or prior-mass "
              "(AP-prior mass of the judged relevant documents, the reference code)",
              choices=WEIGHTS),
        Param("floor", float, 0.0, "share of each round's run distribution spread uniformly "
              "(neither the paper nor its code has one)", check=lambda x: 0 <= x <= 1,
              requirement="in [0, 1]"),
        Param("uniform", float, 0.2, "share of the draws made uniformly over the topic's "
              "pool (a defensive mixture: caps 1/p_t(d) at N/uniform, and every draw can reach "
              "every document, which the per-draw estimators need; 0 is the paper's active "
              "sampling, which has none)", check=lambda x: 0 <= x < 1,
              requirement="in [0, 1)"),
        Param("prior", str, "aslam", "AP-prior over each run's ranks (core.ap_prior)",
              choices=PRIORS),
    )

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        if "batch" in params and "rounds" in params:
            raise UsageError("active: give rounds or batch, not both")
        super().__init__(pool, budget, rng, **params)
        if "batch" in params:
            del self.params["rounds"]
        self.batch: int | None = self.params.get("batch")
        self.rounds: int | None = self.params.get("rounds")
        self.floor = self.params["floor"]
        self.kind = self.params["weights"]
        self._initial_rng = rng_state(rng)
        seeds = rng.integers(0, 2**63, size=len(pool.topics))
        self._topics = {t: _TopicDraws(pool[t], pool.docnos_of(t), self.budget_for(t),
                                       np.random.default_rng(s), self.params["prior"],
                                       self.params["uniform"])
                        for t, s in zip(pool.topics, seeds, strict=True)}

    def _round_size(self, draws: _TopicDraws) -> int:
        """N_t: int(B/rounds) (B itself when smaller than rounds), or min(batch, budget
        left)."""
        if self.batch is not None:
            return min(self.batch, draws.budget - draws.judged)
        assert self.rounds is not None
        return draws.budget if draws.budget < self.rounds else draws.budget // self.rounds

    def batch_size(self, topic: str) -> int:
        # a round's draws are made before any of them is judged
        return max(1, self._round_size(self._of_topic(self._topics, topic)))

    def propose(self, topic: str, n: int) -> list[str]:
        draws = self._of_topic(self._topics, topic)
        self._check_batch(n)
        cap = MAX_ROUNDS if self.batch is None else None
        while (not draws.pending and draws.judged < draws.budget
               and (cap is None or draws.rounds < cap)):
            draws.draw_round(self.kind, self.floor, self._round_size(draws))
            if not draws.pending and draws.chance_of_new(self.kind, self.floor) == 0.0:
                break  # no draw can reach an unjudged document: the budget cannot be spent
        return [str(d) for d in draws.docnos[draws.pending[:n]]]

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        draws = self._of_topic(self._topics, topic)
        draws.judge(*self._received(topic, judgments, np.asarray(draws.pending)))

    def proposal_design(self, topic: str, docnos: list[str]) -> tuple[list[str], np.ndarray]:
        """pi_i of each proposed document over the rounds drawn so far, this one included:
        what it will be if the sampling stops after this round (later rounds raise it)."""
        draws = self._of_topic(self._topics, topic)
        positions = self._pool_positions(topic)
        pi = np.empty(len(docnos))
        for i, docno in enumerate(docnos):
            doc = positions[docno]
            occ = slice(draws.occ_start[doc], draws.occ_start[doc + 1])
            pi[i] = -np.expm1(log_miss_of(draws.run_probs[:draws.rounds],
                                          draws.sizes[:draws.rounds], draws.occ_run[occ],
                                          draws.occ_prior[occ], draws.uniform, draws.size))
        return [""] * len(docnos), pi

    def rounds_of(self, topic: str) -> int:
        """The topic's completed rounds (those :meth:`sample` holds)."""
        draws = self._of_topic(self._topics, topic)
        return draws.rounds - (1 if draws.pending else 0)

    def can_draw_new(self, topic: str) -> bool:
        """Whether the topic's next round can bring a document not judged yet (not so with
        ``uniform=0``, ``floor=0`` once the runs of positive weight are judged through)."""
        draws = self._of_topic(self._topics, topic)
        return draws.chance_of_new(self.kind, self.floor) > 0.0

    def sample(self, skip: Mapping[str, int] | None = None,
               topics: Collection[str] | None = None) -> Sample:
        """The completed rounds; ``skip``: per topic, how many of its first rounds to leave
        out (:meth:`_TopicDraws.tables`; the anytime rule's Neyman shares leave out the
        pilot that chose them); ``topics``: only these topics' tables (``sample().restricted
        (topics)``, without building the others': a look re-estimates the topics judged
        since the last one)."""
        skip = skip or {}
        keep = None if topics is None else set(topics)
        parts = {t: d.tables(skip.get(t, 0)) for t, d in self._topics.items()
                 if keep is None or t in keep}
        tables = {name: _stacked(parts, name, columns) for name, columns in _TABLES.items()}
        tables["frame"]["stratum"] = ""
        return Sample(self.design, tables["frame"][_TABLES["frame"]], draws=tables["draws"],
                      rounds=tables["rounds"], round_probs=tables["round_probs"],
                      meta=self._sample_meta())

    splits_state: ClassVar[bool] = True

    def state(self) -> dict[str, Any]:
        return {**self._state_header(self._initial_rng),
                "topics": {t: self.topic_state(t) for t in self._topics}}

    def topic_state(self, topic: str) -> dict[str, Any]:
        d = self._of_topic(self._topics, topic)
        return {"rng": rng_state(d.rng),
                "rounds": [{"runs": p.tolist(), "draws": x.tolist()}
                           for p, x in zip(d.run_probs[:d.rounds], d.draws, strict=True)],
                "judged": np.flatnonzero(~np.isnan(d.labels)).tolist(),
                "labels": d.labels[~np.isnan(d.labels)].tolist()}

    @classmethod
    def draws_reach_every_document(cls, params: dict[str, Any]) -> bool:
        """With a uniform share every draw of every round can reach every pooled document."""
        return float(params.get("uniform") or 0.0) > 0.0

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> ActiveSelector:
        # a state saved before the share existed was drawn without one (the default was 0)
        state = {**state, "params": {"uniform": 0.0, **state["params"]}}
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


def _stacked(parts: dict[str, dict[str, dict[str, np.ndarray]]], name: str,
             columns: list[str]) -> pd.DataFrame:
    """One table over all topics from the topics' columns (text columns kept as objects)."""
    tables = [p[name] for p in parts.values()]
    lengths = [len(next(iter(t.values()))) for t in tables]
    data: dict[str, Any] = {"query_id": pd.Series(np.repeat(
        np.array(list(parts), dtype=object), lengths), dtype=object)}
    for column in columns[1:]:
        if tables and column in tables[0]:
            stacked = np.concatenate([t[column] for t in tables])
            data[column] = pd.Series(stacked, dtype=object) if stacked.dtype == object else (
                stacked)
    return pd.DataFrame(data)
