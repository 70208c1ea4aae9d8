"""``importance``: importance sampling, Schnabel, Swaminathan, Frazier & Joachims, "Unbiased
Comparative Evaluation of Ranking Functions", ICTIR 2016.

Each topic draws n documents i.i.d. with replacement from a fixed distribution Q over its
pool (the frame), n the topic's budget (eq. 4 assumes a fixed number of draws n; a document
drawn twice is judged once, so fewer than n documents are judged), and the measures U(h) =
sum_y lambda(rank_h(y)) rel(y) are estimated by eq. 4 (the ``~is`` estimators). Q follows
the paper, with lambda the rank weights of ``measure`` (``DCG``, the paper's, or ``P``) at
depth ``cutoff`` (unset: every rank), u~ the prior expected relevance and eps = 0.05 added
to the unnormalised weights (eq. 7-8):

- ``q=single`` (eq. 8, needs ``run=NAME``): Q ∝ u~ lambda_h + eps, for one system h;
- ``q=sqrt`` (eq. 11, the default): Q ∝ u~ sqrt(sum_j lambda_j^2) + eps, for all runs;
- ``q=mean`` (sec. 4.2's MEAN): Q ∝ u~ sum_j lambda_j + eps;
- ``q=pairwise`` (eq. 13, needs ``runs=A,B``): Q ∝ u~ |lambda_A - lambda_B| + eps;
- ``q=krel`` (eq. 15): Q ∝ u~ sqrt(sum_j (lambda_j - mean lambda)^2) + eps, or against a
  ``baseline`` run b (ours), sqrt(sum_j (lambda_j - lambda_b)^2).

The paper adds eps in eq. 7-8 only; it is added to every form here by default, since Q must
be positive wherever a run's lambda rel is (eq. 4 is unbiased only then) and u~ or the weight
can vanish. It costs the difference forms variance (on SYNTH: docs/research/reproductions.md, Table
7). ``eps=0`` gives eq. 13 and 15 as printed,
and is accepted for those two forms only: their Q is 0 only where the runs' weights agree
(lambda_A = lambda_B; every lambda_j at their mean or at the baseline's), and such a document
adds nothing to the differences they estimate (U(A) - U(B), U(j) - U(b)), so the pairwise
estimate of a difference stays unbiased (an estimate of one run's own measure from such a
sample does not: relevant documents of Q = 0 are never drawn). The prior must then be above
0 wherever the weights differ (``prior=predictions`` with a document predicted 0, or a list
with a 0, is refused with eps=0). For ``single``, ``sqrt`` and ``mean``, whose targets are
each run's own measure, eps=0 is refused.

The prior u~(y) (``prior``): ``trec``, 16/(r + 34) (sec. 3.3, the average label at rank r
over TREC-8's systems; the default), ``synth``, 4 (1 - r/2000) (sec. 3.3, for SYNTH's grades
0-4), or a list ``u1,u2,...`` (u~ at ranks 1, 2, ...; the last value holds for deeper ranks;
``selection.priors.fitted_prior`` fits one on judged topics), or ``predictions``: each
document's predicted relevance (``--predictions FILE``; a missing document predicts 0, so
only eps lets it be drawn), in place of a rank-based guess. For the forms over several
runs, u~(y) is averaged over all of them, a run that did not retrieve y counting 0 (sec.
4.2); for ``single`` it is u~ at the run's own rank. ``form=sqrt`` puts sqrt(u~) in place of
u~ (ours: the minimiser of the expected variance when rel(y) is 0/1 with P(rel = 1) = u~,
since E[rel^2] = u~); on binary labels it has less variance than the paper's form
(docs/guide/methods.md, measured by ``python -m studies.importance_variants``), which stays the
default, to reproduce the paper's tables.

Q is fixed before any judgment, so each topic's n draws are made at construction from its own
Generator (seeded from the given one, so topic order does not matter); new documents are
proposed in the order of their first draw. ``state()`` holds the initial RNG and the labels,
which rebuild the identical sample. ``sample()`` (design ``importance``) holds each topic's
draws up to the first draw of a document not yet judged: ``draws`` (``round`` = draw index
1..n, ``probability`` = Q) and ``round_probs`` (Q of every pooled document, round 0); the
frame is the pool, ``inclusion`` NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sampleval.core.design import IMPORTANCE, Design
from sampleval.core.pool import PAD, Pool, TopicPool
from sampleval.core.sample import Sample
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.selection.base import Budget, Selector, register, rng_state
from sampleval.selection.priors import (
    FORMS,
    SYNTH_PRIOR,
    TREC_PRIOR,
    DocumentPrior,
    Prior,
    krel_q,
    mean_q,
    named_prior,
    pairwise_q,
    single_system_q,
    sqrt_q,
)

Q_KINDS = ("single", "sqrt", "mean", "pairwise", "krel")
DIFFERENCE_KINDS = ("pairwise", "krel")  # forms whose targets are differences of runs
PREDICTIONS_PRIOR = "predictions"
MEASURES = ("P", "DCG")


def doc_ranks(tp: TopicPool) -> np.ndarray:
    """``[n_runs, size]`` 1-based rank of each pooled document in each run (0: not
    retrieved)."""
    ranks = np.zeros((tp.ranking.shape[0], tp.size), dtype=np.int64)
    runs, cols = np.nonzero(tp.ranking != PAD)
    ranks[runs, tp.ranking[runs, cols]] = cols + 1
    return ranks


def draw_from(q: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` i.i.d. draws (indices) from ``q``."""
    cdf = np.cumsum(q)
    return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), len(q) - 1)


def _prior_values(text: str) -> np.ndarray | None:
    """A ``prior=`` list ``u1,u2,...`` as non-negative numbers (None when it is a name or
    malformed)."""
    try:
        values = np.array([float(u) for u in str(text).split(",")])
    except ValueError:
        return None
    return values if len(values) and (values >= 0).all() else None


def _valid_prior(text: str) -> bool:
    return text in (TREC_PRIOR, SYNTH_PRIOR, PREDICTIONS_PRIOR) or _prior_values(
        text) is not None


class _TopicDraws:
    """One topic's draw sequence, Q, and labels."""

    def __init__(self, docnos: np.ndarray, q: np.ndarray, drawn: np.ndarray) -> None:
        self.docnos = docnos
        self.q = q
        self.drawn = drawn
        _, first = np.unique(drawn, return_index=True)
        self.order = drawn[np.sort(first)]  # distinct documents by first draw
        self.labels = np.full(len(docnos), np.nan)

    def drawn_so_far(self) -> np.ndarray:
        """The draws up to the first draw of a document not yet judged."""
        unjudged = np.flatnonzero(np.isnan(self.labels[self.drawn]))
        return self.drawn[: unjudged[0] if len(unjudged) else len(self.drawn)]


def _tables(topics: dict[str, _TopicDraws]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The frame, draws (each topic's up to its first unjudged one) and round_probs of every
    topic, each built as one table."""
    names = list(topics)
    sizes = np.array([len(d.docnos) for d in topics.values()], dtype=np.int64)
    drawn = [d.drawn_so_far() for d in topics.values()]
    counts = np.array([len(x) for x in drawn], dtype=np.int64)
    qid = np.array(names, dtype=object)

    def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    docnos = cat([d.docnos for d in topics.values()], object)
    q = cat([d.q for d in topics.values()], np.float64)
    frame = pd.DataFrame({"query_id": np.repeat(qid, sizes), "doc_id": docnos,
                          "relevance": cat([d.labels for d in topics.values()], np.float64),
                          "stratum": "", "inclusion": np.nan})
    draws = pd.DataFrame({
        "query_id": np.repeat(qid, counts),
        "round": cat([np.arange(1, c + 1) for c in counts], np.int64),
        "doc_id": cat([d.docnos[x] for d, x in zip(topics.values(), drawn, strict=True)],
                      object),
        "probability": cat([d.q[x] for d, x in zip(topics.values(), drawn, strict=True)],
                           np.float64)})
    round_probs = pd.DataFrame({"query_id": np.repeat(qid, sizes), "round": 0,
                                "doc_id": docnos, "probability": q})
    return frame, draws, round_probs


@register
class ImportanceSelector(Selector):
    """Importance sampling from Q, Schnabel et al., ICTIR 2016 (see the module docstring)."""

    name: ClassVar[str] = "importance"
    design: ClassVar[Design] = IMPORTANCE
    summary: ClassVar[str] = "importance sampling from Q (Schnabel et al., ICTIR 2016)"
    budget_unit: ClassVar[str] = "draws"
    takes_predictions: ClassVar[bool] = True
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("q", str, "sqrt", "sampling distribution: single (eq. 8, needs run), sqrt "
              "(eq. 11), mean, pairwise (eq. 13, needs runs), krel (eq. 15, optional "
              "baseline)", choices=Q_KINDS),
        Param("run", str, None, "the run of q=single"),
        Param("runs", str, None, "the two runs of q=pairwise, A,B"),
        Param("baseline", str, None, "q=krel against this run (unset: against the runs' "
              "mean, eq. 15)"),
        Param("eps", float, 0.05, "added to Q's unnormalised weights (eq. 7-8); 0 (eq. 13, "
              "15 as printed) only with q=pairwise or q=krel and a prior above 0",
              check=lambda x: x >= 0, requirement="0 or more"),
        Param("cutoff", int, None, "depth of the measure's rank weights (unset: every rank; "
              "P needs one)", check=lambda n: n >= 1, requirement="at least 1"),
        Param("measure", str, "DCG", "rank weights of P or DCG", choices=MEASURES),
        Param("prior", str, TREC_PRIOR, "u~: trec (16/(r+34)), synth (4(1 - r/2000)), "
              "u~(1),u~(2),... or predictions (each document's predicted relevance, needs "
              "--predictions)", check=_valid_prior,
              requirement="trec, synth, predictions, or non-negative numbers separated by "
                          "commas"),
        Param("form", str, "paper", "paper (u~ lambda) or sqrt (sqrt(u~) lambda)",
              choices=FORMS),
    )

    @classmethod
    def uses_predictions(cls, params: dict[str, Any]) -> bool:
        return bool(params.get("prior") == PREDICTIONS_PRIOR)

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        from_predictions = self.uses_predictions(self.params)
        if from_predictions and self.predicted is None:
            raise UsageError("importance: prior=predictions needs predictions (--predictions "
                             "FILE; in the library, predictions=)")
        if not from_predictions and self.predicted is not None:
            raise UsageError("importance uses predictions only as its prior "
                             "(--param prior=predictions)")
        self.kind = self.params["q"]
        self.measure = self.params["measure"]
        self.eps = self.params["eps"]
        if self.eps == 0 and self.kind not in DIFFERENCE_KINDS:
            raise UsageError(f"importance: eps=0 only with q=pairwise or q=krel (eq. 13, 15): "
                             f"with q={self.kind} a document of Q = 0 may be relevant and "
                             "count in a run's measure, and no draw can reach it")
        self.cutoff: int | None = self.params.get("cutoff")
        if self.measure == "P" and self.cutoff is None:
            raise UsageError("importance: measure=P needs a cutoff, e.g. cutoff=10")
        self.chosen = self._chosen_runs()
        self._initial_rng = rng_state(rng)
        seeds = rng.integers(0, 2**63, size=len(pool.topics))
        self._topics = {}
        for topic, seed in zip(pool.topics, seeds, strict=True):
            q = self.distribution(pool[topic])
            drawn = draw_from(q, self.budget_for(topic) if len(q) else 0,
                              np.random.default_rng(seed))
            self._topics[topic] = _TopicDraws(pool.docnos_of(topic), q, drawn)

    def _prior(self, tp: TopicPool, width: int) -> Prior:
        """u~ at ranks 1..width, or each document's predicted relevance."""
        if self.params["prior"] == PREDICTIONS_PRIOR:
            assert self.predicted is not None
            return DocumentPrior(self.predicted[tp.topic])
        values = _prior_values(self.params["prior"])
        if values is None:
            return named_prior(self.params["prior"], width)
        return np.append(values, np.full(max(width - len(values), 0), values[-1]))[:width]

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
        from sampleval.measures.exact import rank_weights

        lam = rank_weights(self.measure, self.cutoff, width)
        prior, form = self._prior(tp, width), self.params["form"]
        ranks = doc_ranks(tp)
        if self.kind == "single":
            assert self.chosen is not None
            return single_system_q(prior, ranks[self.chosen[0]], self.eps, lam, form)
        if self.kind == "pairwise":
            assert self.chosen is not None
            return pairwise_q(prior, ranks[self.chosen], self.eps, lam, form)
        used = tp.lengths > 0  # the runs with a ranking for the topic (and a baseline)
        if self.chosen is not None:
            used[self.chosen[0]] = True
        if self.kind == "krel":
            baseline = None if self.chosen is None else int(used[:self.chosen[0]].sum())
            return krel_q(prior, ranks[used], self.eps, lam, baseline, form)
        return (mean_q if self.kind == "mean" else sqrt_q)(prior, ranks[used], self.eps, lam,
                                                           form)

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
        frame, draws, round_probs = _tables(self._topics)
        return Sample(self.design, frame, draws=draws, round_probs=round_probs,
                      meta=self._sample_meta())

    splits_state: ClassVar[bool] = True

    def state(self) -> dict[str, Any]:
        return {**self._state_header(self._initial_rng),
                "topics": {t: self.topic_state(t) for t in self._topics}}

    def topic_state(self, topic: str) -> dict[str, Any]:
        d = self._of_topic(self._topics, topic)
        return {"judged": np.flatnonzero(~np.isnan(d.labels)).tolist(),
                "labels": d.labels[~np.isnan(d.labels)].tolist()}

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> ImportanceSelector:
        selector = cls._from_header(pool, state)
        for topic, saved in state["topics"].items():
            judged = np.asarray(saved["judged"], dtype=np.int64)
            selector._of_topic(selector._topics, topic).labels[judged] = np.asarray(saved["labels"], np.float64)
        return selector
