"""``importance``: importance sampling, Schnabel, Swaminathan, Frazier & Joachims, "Unbiased
Comparative Evaluation of Ranking Functions", ICTIR 2016.

Each topic draws documents i.i.d. with replacement from a fixed distribution Q over its pool
(the frame), designed to minimise the variance of the eq. 4 estimator
(``estimators.importance``) of the measures U(h) = sum_y lambda(rank_h(y)) rel(y):

- ``q=single`` (eq. 8, needs ``run=NAME``): Q ∝ lambda_h sqrt(p), for one system h;
- ``q=sqrt`` (eq. 11, the default): Q ∝ sqrt(p sum_j lambda_j^2), for all runs at once;
- ``q=mean``: the average of the runs' eq. 8 distributions;
- ``q=pairwise`` (eq. 13, needs ``runs=A,B``): Q ∝ |lambda_A - lambda_B| sqrt(p);
- ``q=krel`` (eq. 15, optional ``baseline=NAME``): Q ∝ sqrt(p sum_j (lambda_j - lambda_b)^2),
  or over every pair of runs without a baseline;

each mixed with ``eps`` (default 0.1) of the uniform distribution, so that every pooled
document keeps Q > 0 (eq. 4 is unbiased only then). lambda are the rank weights of
``measure`` (``P`` or ``DCG``, default DCG) at depth ``cutoff`` (default 10); p(y) is the
prior probability of relevance, the rank prior u~ at the document's ranks averaged over the
runs that retrieved it (``estimators.importance.document_prior``).

Choices (ours where the paper is silent):

- the prior u~: before any judgment, ``estimators.importance.rank_prior`` has nothing to
  learn from, so u~ is fixed: by default u~(r) = 1 / log2(r + 1) (relevance falls with rank
  like DCG's discount; only its shape matters, Q normalises), or given as ``prior=u1,u2,...``
  (u~ at ranks 1, 2, ...; the last value holds for deeper ranks), e.g. a ``rank_prior`` fitted
  on judged topics. Q does not change while judging: draws are i.i.d., as eq. 4 assumes;
- the budget counts distinct judged documents: draws go on until that many distinct
  documents have been drawn (a draw of a document drawn before costs no judgment); every
  draw is recorded. The number of draws n is thus random (a stopping time of the draws; eq. 4
  is exactly unbiased for a fixed n);
- Q being fixed, each topic's whole draw sequence is made at construction from its own
  Generator (seeded from the given one, so topic order does not matter); new documents are
  proposed in the order of their first draw. ``state()`` holds the initial RNG and the labels,
  which rebuild the identical sample;
- ``sample()`` (design ``importance``) holds each topic's draws up to the first draw of a
  document not yet judged: ``draws`` (``round`` = draw index 1..n, ``probability`` = Q) and
  ``round_probs`` (Q of every pooled document, round 0); the frame is the pool, ``inclusion``
  NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sampleval.core.pool import PAD, Pool, TopicPool
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimators.importance import (
    krel_q,
    mean_q,
    pairwise_q,
    rank_weights,
    single_system_q,
    sqrt_q,
)
from sampleval.params import Param
from sampleval.selection.base import Budget, Selector, register, rng_state

Q_KINDS = ("single", "sqrt", "mean", "pairwise", "krel")
MEASURES = ("P", "DCG")
_DRAWS = ["query_id", "round", "doc_id", "probability"]


def default_prior(width: int) -> np.ndarray:
    """The fixed rank prior u~(r) = 1 / log2(r + 1), r = 1..width."""
    return 1.0 / np.log2(np.arange(2, width + 2))


def doc_ranks(tp: TopicPool) -> np.ndarray:
    """``[n_runs, size]`` 1-based rank of each pooled document in each run (0: not
    retrieved)."""
    ranks = np.zeros((tp.ranking.shape[0], tp.size), dtype=np.int64)
    runs, cols = np.nonzero(tp.ranking != PAD)
    ranks[runs, tp.ranking[runs, cols]] = cols + 1
    return ranks


def draw_until(q: np.ndarray, distinct: int, rng: np.random.Generator) -> np.ndarray:
    """I.i.d. draws (indices) from ``q`` up to the one that brings the ``distinct``-th
    distinct document (none when ``distinct`` is 0)."""
    cdf = np.cumsum(q)
    drawn = np.zeros(0, dtype=np.int64)
    while distinct > 0:
        chunk = np.searchsorted(cdf, rng.random(max(2 * distinct, 16)) * cdf[-1], side="right")
        drawn = np.concatenate([drawn, np.minimum(chunk, len(q) - 1)])
        _, first = np.unique(drawn, return_index=True)
        if len(first) >= distinct:
            return drawn[: np.sort(first)[distinct - 1] + 1]
    return drawn


def _number_list(text: str | None) -> np.ndarray | None:
    """``u1,u2,...`` as an array of non-negative numbers; None when unset or malformed."""
    if text is None:
        return None
    try:
        values = np.array([float(u) for u in str(text).split(",")])
    except ValueError:
        return None
    return values if len(values) and (values >= 0).all() else None


class _TopicDraws:
    """One topic's draw sequence, Q, and labels."""

    def __init__(self, docnos: np.ndarray, q: np.ndarray, drawn: np.ndarray) -> None:
        self.docnos = docnos
        self.q = q
        self.drawn = drawn
        _, first = np.unique(drawn, return_index=True)
        self.order = drawn[np.sort(first)]  # distinct documents by first draw
        self.labels = np.full(len(docnos), np.nan)

    def tables(self, topic: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        """The frame, draws (up to the first unjudged one) and round_probs."""
        unjudged = np.flatnonzero(np.isnan(self.labels[self.drawn]))
        x = self.drawn[: unjudged[0] if len(unjudged) else len(self.drawn)]
        return (
            pd.DataFrame({"query_id": np.full(len(self.docnos), topic, dtype=object),
                          "doc_id": self.docnos, "relevance": self.labels, "stratum": "",
                          "inclusion": np.nan}),
            pd.DataFrame({"query_id": topic, "round": np.arange(1, len(x) + 1),
                          "doc_id": self.docnos[x], "probability": self.q[x]}),
            pd.DataFrame({"query_id": topic, "round": 0, "doc_id": self.docnos,
                          "probability": self.q}),
        )


@register
class ImportanceSelector(Selector):
    """Importance sampling from Q, Schnabel et al., ICTIR 2016 (see the module docstring)."""

    name: ClassVar[str] = "importance"
    design: ClassVar[str] = "importance"
    summary: ClassVar[str] = "importance sampling from Q (Schnabel et al., ICTIR 2016)"
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("q", str, "sqrt", "sampling distribution: single (eq. 8, needs run), sqrt "
              "(eq. 11), mean, pairwise (eq. 13, needs runs), krel (eq. 15, optional "
              "baseline)", choices=Q_KINDS),
        Param("run", str, None, "the run of q=single"),
        Param("runs", str, None, "the two runs of q=pairwise, A,B"),
        Param("baseline", str, None, "the baseline run of q=krel (unset: every pair of runs)"),
        Param("eps", float, 0.1, "share of Q spread uniformly over the pool",
              check=lambda x: 0 < x <= 1, requirement="in (0, 1]"),
        Param("cutoff", int, 10, "depth of the measure's rank weights",
              check=lambda n: n >= 1, requirement="at least 1"),
        Param("measure", str, "DCG", "rank weights of P or DCG", choices=MEASURES),
        Param("prior", str, None, "rank prior u~(1),u~(2),... (unset: 1/log2(r+1))",
              check=lambda text: _number_list(text) is not None,
              requirement="non-negative numbers separated by commas"),
    )

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self.kind = self.params["q"]
        self.measure = self.params["measure"]
        self.eps = self.params["eps"]
        self.cutoff = self.params["cutoff"]
        self.prior = _number_list(self.params.get("prior"))
        self.chosen = self._chosen_runs()
        self._initial_rng = rng_state(rng)
        seeds = rng.integers(0, 2**63, size=len(pool.topics))
        self._topics = {}
        for topic, seed in zip(pool.topics, seeds, strict=True):
            q = self.distribution(pool[topic])
            drawn = draw_until(q, self.budget_for(topic), np.random.default_rng(seed))
            self._topics[topic] = _TopicDraws(pool.docnos_of(topic), q, drawn)

    def _run_index(self, name: str) -> int:
        if name not in self.pool.run_names:
            raise UsageError(f"no run named {name!r} in the pool")
        return self.pool.run_names.index(name)

    def _chosen_runs(self) -> list[int] | None:
        """The runs q=single / pairwise / krel (baseline) name, by index."""
        needed = {"single": "run", "pairwise": "runs", "krel": "baseline"}.get(self.kind)
        given = {k for k in ("run", "runs", "baseline") if k in self.params}
        if given - {needed}:
            raise UsageError(f"q={self.kind} takes no {', '.join(sorted(given - {needed}))}")
        if needed is None or needed not in self.params:
            if self.kind in ("single", "pairwise"):
                raise UsageError(f"q={self.kind} needs {needed}=")
            return None
        chosen = [self._run_index(n) for n in str(self.params[needed]).split(",")]
        if self.kind == "pairwise" and len(chosen) != 2:
            raise UsageError("q=pairwise needs two runs, runs=A,B")
        if self.kind != "pairwise" and len(chosen) != 1:
            raise UsageError(f"{needed} names one run")
        return chosen

    def distribution(self, tp: TopicPool) -> np.ndarray:
        """Q over the topic's pooled documents (pool order)."""
        if not tp.size:
            return np.zeros(0)
        width = max(tp.ranking.shape[1], 1)
        lam = rank_weights(self.measure, self.cutoff, width)
        prior = default_prior(width) if self.prior is None else np.append(
            self.prior, np.full(max(width - len(self.prior), 0), self.prior[-1]))[:width]
        ranks = doc_ranks(tp)
        if self.kind == "single":
            assert self.chosen is not None
            return single_system_q(prior, ranks[self.chosen[0]], self.eps, lam)
        if self.kind == "pairwise":
            return pairwise_q(prior, ranks[self.chosen], self.eps, lam)
        if self.kind == "krel":
            return krel_q(prior, ranks, self.eps, lam,
                          None if self.chosen is None else self.chosen[0])
        return (mean_q if self.kind == "mean" else sqrt_q)(prior, ranks, self.eps, lam)

    def batch_size(self, topic: str) -> int:
        return max(1, len(self._of_topic(self._topics, topic).order))  # drawn up front

    def propose(self, topic: str, n: int) -> list[str]:
        draws = self._of_topic(self._topics, topic)
        self._check_batch(n)
        todo = draws.order[np.isnan(draws.labels[draws.order])][:n]
        return [str(d) for d in draws.docnos[todo]]

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        draws = self._of_topic(self._topics, topic)
        where, labels = self._received(topic, judgments, draws.order)
        draws.labels[where] = labels

    def sample(self) -> Sample:
        tables = [d.tables(t) for t, d in self._topics.items()]
        columns = (["query_id", "doc_id", "relevance", "stratum", "inclusion"], _DRAWS, _DRAWS)
        frame, draws, round_probs = (
            pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
            for parts, cols in zip(zip(*tables, strict=True) if tables else ([],) * 3, columns,
                                   strict=True))
        return Sample(self.design, frame, draws=draws, round_probs=round_probs,
                      meta=self._sample_meta())

    def state(self) -> dict[str, Any]:
        return {
            **self._state_header(self._initial_rng),
            "topics": {t: {"judged": np.flatnonzero(~np.isnan(d.labels)).tolist(),
                           "labels": d.labels[~np.isnan(d.labels)].tolist()}
                       for t, d in self._topics.items()},
        }

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> ImportanceSelector:
        selector = cls._from_header(pool, state)
        for topic, saved in state["topics"].items():
            judged = np.asarray(saved["judged"], dtype=np.int64)
            selector._of_topic(selector._topics, topic).labels[judged] = np.asarray(saved["labels"], np.float64)
        return selector
