"""``dynamic``: Dynamic Sampling, Cormack & Grossman, "Beyond Pooling", SIGIR 2018 (sec. 3),
and its use for building pools, "Dynamic Sampling Meets Pooling", SIGIR 2019.

Per topic, continuous active learning (CAL; Cormack & Grossman, "Autonomy and reliability of
continuous active learning for technology-assisted review", 2015, the BMI variant) ranks the
candidate universe, here the topic's pool, in batches; from each batch a simple random sample
is judged and the learner is retrained on every judgment so far before the next batch:

1. seed: batch 1 holds the top document of reciprocal-rank fusion, sum_s 1/(k + rank_s(d));
   until a relevant document has been judged, batches follow that fusion order;
2. batch sizes grow geometrically as in CAL/BMI: b_1 = ``batch`` (default 1), b_{j+1} =
   b_j + ceil(b_j / 10); a batch is the b_j best-scored documents not yet in a batch (fewer
   when the pool runs out), ties broken by the fusion score, then pool order;
3. from batch j (N_j documents) n_j = ceil(rate * N_j) documents are drawn by simple random
   sampling without replacement (at least one per batch), so each batch is a stratum sampled
   at the known rate n_j / N_j. The batch's composition depends only on earlier judgments,
   so conditionally on the history this is stratified sampling (design ``stratified``, pi_i
   = n_j / N_j) and Horvitz-Thompson and the inferred (xinfAP) estimators apply;
4. learner: L2-regularised logistic regression (lambda = 1, L-BFGS) on the judged documents
   (relevant: label >= 1) plus every unjudged pooled document as a non-relevant example of
   weight min(1, 100 / their number), the expectation of BMI's 100 random pseudo-negatives,
   which keeps the ranking a deterministic function of the judgments.

Features: with ``corpus=cranfield`` and ``corpus_dir``, (1 + log tf) log(N / df) vectors of
the document texts (``datasets.retrieval.tokenize``), rows L2-normalised; otherwise the runs
alone: 1/(k + rank_s(d)) for each run s (0 where s did not retrieve d), a rank-fusion vector.

Strategies (our interpretation; the papers' exact strategy definitions were not available to
us): ``D12``, ``D25``, ``D50`` judge 12%, 25% and 50% of every batch (``rate`` sets any other
fraction). A smaller rate reaches deeper into the CAL ranking for the same budget, at the cost
of a higher variance per stratum.

Budget: the last batch is sampled with what is left, n_j = min(ceil(rate N_j), B - judged), so
exactly B documents are judged unless the pool is exhausted first (or the knee stops). Pooled
documents no batch reached form the stratum ``rest``, never sampled (pi = 0).

Stopping (``stop=knee``): the knee method of Cormack & Grossman, "Engineering quality and
reliability in technology-assisted review", SIGIR 2016 (sec. 3), on the estimated gain curve
(documents ranked so far against sum_j (N_j / n_j) * relevant judged in batch j): the knee is
the point farthest above the line from the origin to the current point (s, r); with slopes
r_k / s_k before and (r - r_k + 1) / (s - s_k) after it, stop once their ratio reaches
156 - min(r, 150) and s >= 150. It is checked whenever a batch is completely judged.

Each topic draws from its own Generator, seeded from the given one at construction, so the
sample does not depend on the order in which topics are worked on. A batch's sample must be
judged completely before the next batch is formed; ``propose`` hands out its pending
documents until then.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from itertools import chain
from typing import Any, ClassVar, TypeAlias

import numpy as np
import pandas as pd
from scipy import sparse

from sampleval.core.design import STRATIFIED, Design
from sampleval.core.pool import PAD, Pool, TopicPool
from sampleval.core.sample import Sample
from sampleval.datasets.cranfield import read_documents
from sampleval.datasets.retrieval import tokenize
from sampleval.declare import Param
from sampleval.errors import UsageError
from sampleval.selection import lbfgsb
from sampleval.selection.base import Budget, Selector, register, rng_from_state, rng_state

STRATEGIES = {"D12": 0.12, "D25": 0.25, "D50": 0.50}
_FRAME = ["query_id", "doc_id", "relevance", "stratum", "inclusion"]
Features: TypeAlias = np.ndarray | sparse.csr_matrix


def batch_sizes(first: int, total: int) -> np.ndarray:
    """CAL/BMI batch sizes b_1 = ``first``, b_{j+1} = b_j + ceil(b_j / 10), enough to cover
    ``total`` documents (the last one cut to what is left)."""
    sizes = [first]
    while sum(sizes) < total:
        sizes.append(sizes[-1] + math.ceil(sizes[-1] / 10))
    out = np.array(sizes, dtype=np.int64)
    out[-1] -= out.sum() - total
    return out[out > 0]


@functools.cache
def _batch_size(first: int, total: int, j: int) -> int:
    """``batch_sizes(first, total)[j]`` (kept: a topic asks for each batch's size once per
    batch, the same few pools over and over)."""
    return int(batch_sizes(first, total)[j])


def fusion_features(tp: TopicPool, k: float) -> np.ndarray:
    """``[n_docs, n_runs]``: 1/(k + rank) of each pooled document in each run, 0 if absent."""
    features = np.zeros((tp.size, len(tp.ranking)))
    runs, cols = np.nonzero(tp.ranking != PAD)
    features[tp.ranking[runs, cols], runs] = 1.0 / (k + cols + 1)
    return features


def tfidf_matrix(texts: list[str]) -> sparse.csr_matrix:
    """(1 + log tf) log(N / df) vectors of ``texts`` with unit L2 norm (zero rows stay 0)."""
    tokens = [tokenize(t) for t in texts]
    vocabulary = {w: i for i, w in enumerate(sorted(set(chain.from_iterable(tokens))))}
    rows = np.repeat(np.arange(len(tokens)), [len(t) for t in tokens])
    cols = np.fromiter((vocabulary[w] for w in chain.from_iterable(tokens)), dtype=np.int64,
                       count=len(rows))
    counts = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)),
                               shape=(len(tokens), len(vocabulary)))
    counts.sum_duplicates()
    df = np.bincount(counts.indices, minlength=len(vocabulary))
    idf = np.log(len(tokens) / np.maximum(df, 1))
    counts.data = (1.0 + np.log(counts.data)) * idf[counts.indices]
    norms = np.sqrt(np.asarray(counts.multiply(counts).sum(axis=1)).ravel())
    inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sparse.csr_matrix(sparse.diags(inverse) @ counts)


def logistic_scores(x: Features, y: np.ndarray, weight: np.ndarray,
                    score: Features, lam: float = 1.0) -> np.ndarray:
    """Fit L2-regularised logistic regression (labels ``y`` in {-1, 1}, example weights
    ``weight``, unpenalised intercept) by L-BFGS-B (:func:`.lbfgsb.minimize`: scipy's, without
    its wrapper) and return the linear scores of the rows ``score``."""
    dim = x.shape[1]
    signed = -weight * y  # (each product below as the textbook form orders it: same bits)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = y * (x @ theta[:dim] + theta[dim])
        grad_z = signed * np.exp(-np.logaddexp(0.0, z))
        value = float(weight @ np.logaddexp(0.0, -z) + 0.5 * lam * theta[:dim] @ theta[:dim])
        grad = np.empty(dim + 1)
        grad[:dim] = x.T @ grad_z + lam * theta[:dim]
        grad[dim] = grad_z.sum()
        return value, grad

    theta = lbfgsb.minimize(loss, np.zeros(dim + 1))
    return np.asarray(score @ theta[:dim]).ravel() + theta[dim]


class _Topic:
    """One topic's state: batches (pool indices in rank order), each batch's sample (in
    hand-out order), labels, whether it stopped, and its Generator."""

    def __init__(self, features: Features, fusion: np.ndarray, budget: int,
                 rng: np.random.Generator) -> None:
        self.features = features
        self.fusion = fusion
        self.budget = budget
        self.rng = rng
        self.batches: list[np.ndarray] = []
        self.chosen: list[np.ndarray] = []
        self.codes = np.full(len(fusion), -1, dtype=np.int64)
        self.labels = np.full(len(fusion), np.nan)
        self.stopped = False

    @property
    def pending(self) -> np.ndarray:
        if not self.chosen:
            return np.zeros(0, dtype=np.int64)
        last = self.chosen[-1]
        return last[np.isnan(self.labels[last])]

    def batch_of(self) -> np.ndarray:
        """Each pooled document's batch (0-based), -1 for documents no batch reached (kept
        as the batches are formed: read it, do not change it)."""
        return self.codes

    def add_batch(self, members: np.ndarray, chosen: np.ndarray) -> None:
        """Append a batch (pool indices in rank order) and its sample."""
        self.codes[members] = len(self.batches)
        self.batches.append(members)
        self.chosen.append(chosen)

    def next_batch(self, first: int, rate: float, knee: bool) -> None:
        """Form the next batch and draw its sample (or mark the topic stopped)."""
        judged = int(np.sum(~np.isnan(self.labels)))
        codes = self.batch_of()
        rest = np.flatnonzero(codes < 0)
        if judged >= self.budget or not len(rest) or (knee and self.knee_reached(codes)):
            self.stopped = True
            return
        size = _batch_size(first, len(self.fusion), len(self.batches))
        scores = self.scores(rest)
        members = rest[np.lexsort((rest, -self.fusion[rest], -scores))[:size]]
        n = min(math.ceil(rate * len(members)), self.budget - judged)
        self.add_batch(members, self.rng.choice(members, size=n, replace=False))

    def scores(self, rest: np.ndarray) -> np.ndarray:
        """The learner's scores of the documents ``rest`` (fusion order until a relevant
        document is judged; see the module docstring, step 4)."""
        judged = np.flatnonzero(~np.isnan(self.labels))
        relevant = self.labels[judged] >= 1
        if not relevant.any():
            return self.fusion[rest]
        unjudged = np.flatnonzero(np.isnan(self.labels))
        train = np.concatenate([judged, unjudged])
        y = np.concatenate([np.where(relevant, 1.0, -1.0), -np.ones(len(unjudged))])
        weight = np.concatenate([np.ones(len(judged)),
                                 np.full(len(unjudged), min(1.0, 100 / max(len(unjudged), 1)))])
        return logistic_scores(self.features[train], y, weight, self.features[rest])

    def knee_reached(self, codes: np.ndarray) -> bool:
        """The knee stopping rule (module docstring) on the estimated gain curve."""
        sizes = np.array([len(b) for b in self.batches], dtype=np.float64)
        reached = codes >= 0
        found = np.bincount(codes[reached], weights=self.labels[reached] >= 1,
                            minlength=len(sizes))
        sampled = np.array([len(c) for c in self.chosen], dtype=np.float64)
        x = np.concatenate([[0.0], np.cumsum(sizes)])
        y = np.concatenate([[0.0], np.cumsum(found * sizes / np.maximum(sampled, 1))])
        s, r = x[-1], y[-1]
        if s < 150 or r <= 0:
            return False
        knee = int(np.argmax(y * s - x * r))
        if x[knee] <= 0 or x[knee] >= s:
            return False
        ratio = (y[knee] / x[knee]) / ((r - y[knee] + 1) / (s - x[knee]))
        return bool(ratio >= 156 - min(r, 150))


@register
class DynamicSelector(Selector):
    """Dynamic Sampling: CAL batches as strata, a simple random sample judged from each (see
    the module docstring)."""

    name: ClassVar[str] = "dynamic"
    design: ClassVar[Design] = STRATIFIED
    summary: ClassVar[str] = ("Dynamic Sampling: CAL batches as strata (Cormack & Grossman, "
                              "SIGIR 2018/2019)")
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("strategy", str, "D25", "share of each batch judged: D12, D25 or D50 "
              "(12/25/50%)", choices=tuple(STRATEGIES)),
        Param("rate", float, None, "share of each batch judged (instead of strategy)",
              check=lambda x: 0 < x <= 1, requirement="in (0, 1]"),
        Param("batch", int, 1, "size of the first batch (then b + ceil(b/10))",
              check=lambda n: n >= 1, requirement="at least 1"),
        Param("k", float, 60.0, "reciprocal-rank fusion constant in 1/(k + rank)",
              check=lambda x: x > 0, requirement="positive"),
        Param("stop", str, "none", "stopping rule: none, or knee (Cormack & Grossman's knee "
              "method)", choices=("none", "knee")),
        Param("corpus", str, None, "learn from TF-IDF vectors of the texts (needs corpus_dir)",
              choices=("cranfield",)),
        Param("corpus_dir", str, None, "the directory of the corpus' texts"),
    )

    @classmethod
    def reaches_every_document(cls, params: dict[str, Any]) -> bool:
        """No: the pooled documents no batch reached before the budget ran out form the
        stratum ``rest``, never sampled (pi = 0), and how many there are depends on the
        judgments."""
        return False

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        if "strategy" in params and "rate" in params:
            raise UsageError("give either strategy or rate, not both")
        if "rate" in params:  # the default strategy is not in force: keep it out of state()
            del self.params["strategy"]
            self.rate = self.params["rate"]
        else:
            self.rate = STRATEGIES[self.params["strategy"]]
        self.first = self.params["batch"]
        k = self.params["k"]
        self.knee = self.params["stop"] == "knee"
        texts = self._corpus()
        self._initial_rng = rng_state(rng)
        seeds = rng.integers(0, 2**63, size=len(pool.topics))
        self._topics: dict[str, _Topic] = {}
        self._docnos_of: dict[str, np.ndarray] = {}
        for topic, seed in zip(pool.topics, seeds, strict=True):
            tp = pool[topic]
            fusion = fusion_features(tp, k)
            features: Features = fusion if texts is None else texts[
                texts_index(self._corpus_ids, pool.docnos_of(topic))]
            self._topics[topic] = _Topic(features, fusion.sum(axis=1), self.budget_for(topic),
                                         np.random.default_rng(seed))

    _corpus_ids: pd.Index

    def _corpus(self) -> sparse.csr_matrix | None:
        """TF-IDF rows of the corpus (and ``_corpus_ids``), or None without a corpus."""
        corpus = self.params.get("corpus")
        if corpus is None:
            return None
        if "corpus_dir" not in self.params:
            raise UsageError("corpus=cranfield needs corpus_dir, the directory of its texts")
        documents = read_documents(str(self.params["corpus_dir"]))
        self._corpus_ids = pd.Index(documents["doc_id"].astype(str))
        matrix = tfidf_matrix(documents["text"].astype(str).tolist())
        return sparse.vstack([matrix, sparse.csr_matrix((1, matrix.shape[1]))], format="csr")

    def batch_size(self, topic: str) -> int:
        return max(1, self.budget_for(topic))  # a batch's sample is drawn before it is judged

    def propose(self, topic: str, n: int) -> list[str]:
        state = self._of_topic(self._topics, topic)
        self._check_batch(n)
        while not state.stopped and not len(state.pending):
            state.next_batch(self.first, self.rate, self.knee)
        return [str(d) for d in self._docnos(topic)[state.pending[:n]]]

    def _docnos(self, topic: str) -> np.ndarray:
        """``pool.docnos_of(topic)``, kept (the pool does not change)."""
        found = self._docnos_of.get(topic)
        if found is None:
            found = self._docnos_of[topic] = self.pool.docnos_of(topic)
        return found

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        state = self._of_topic(self._topics, topic)
        where, labels = self._received(topic, judgments, state.pending)
        state.labels[where] = labels

    def proposal_design(self, topic: str, docnos: list[str]) -> tuple[list[str], np.ndarray]:
        """Each proposed document's batch (its stratum) and the batch's sampling rate."""
        state = self._of_topic(self._topics, topic)
        codes = state.batch_of()
        positions = self._pool_positions(topic)
        batch = codes[[positions[d] for d in docnos]]
        rate = np.array([len(c) / max(len(b), 1) for b, c in zip(state.batches, state.chosen,
                                                                  strict=True)])
        return [f"b{j + 1:03d}" for j in batch], rate[batch]

    def sample(self) -> Sample:
        parts = []
        for topic, state in self._topics.items():
            codes = state.batch_of()
            n_batches = len(state.batches)
            sizes = np.bincount(codes[codes >= 0], minlength=n_batches)
            judged = np.bincount(codes[(codes >= 0) & ~np.isnan(state.labels)],
                                 minlength=n_batches)
            pi = np.append(judged / np.maximum(sizes, 1), 0.0)
            labels = np.array([f"b{j + 1:03d}" for j in range(n_batches)] + ["rest"],
                              dtype=object)
            parts.append(pd.DataFrame({
                "query_id": np.full(len(codes), topic, dtype=object),
                "doc_id": self.pool.docnos_of(topic), "relevance": state.labels,
                "stratum": labels[codes], "inclusion": pi[codes]}))
        frame = (pd.concat(parts, ignore_index=True) if parts
                 else pd.DataFrame(columns=_FRAME))
        return Sample(self.design, frame, meta=self._sample_meta())

    splits_state: ClassVar[bool] = True

    def state(self) -> dict[str, Any]:
        return {**self._state_header(self._initial_rng),
                "topics": {t: self.topic_state(t) for t in self._topics}}

    def topic_state(self, topic: str) -> dict[str, Any]:
        s = self._of_topic(self._topics, topic)
        judged = np.flatnonzero(~np.isnan(s.labels))
        return {"rng": rng_state(s.rng), "stopped": s.stopped,
                "batches": [b.tolist() for b in s.batches],
                "chosen": [c.tolist() for c in s.chosen],
                "judged": {"index": judged.tolist(), "label": s.labels[judged].tolist()}}

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> DynamicSelector:
        params = state.get("params", {})
        if "rate" in params and params.get("strategy") == "D25":  # a state saved before the
            state = {**state, "params": {k: v for k, v in params.items() if k != "strategy"}}
        selector = cls._from_header(pool, state)  # default strategy was left out of it
        for topic, saved in state["topics"].items():
            s = selector._topics[topic]
            s.rng = rng_from_state(saved["rng"])
            s.stopped = bool(saved["stopped"])
            for members, chosen in zip(saved["batches"], saved["chosen"], strict=True):
                s.add_batch(np.asarray(members, dtype=np.int64),
                            np.asarray(chosen, dtype=np.int64))
            s.labels[saved["judged"]["index"]] = saved["judged"]["label"]
        return selector


def texts_index(ids: pd.Index, docnos: np.ndarray) -> np.ndarray:
    """Rows of ``docnos`` in a corpus with document ids ``ids``; documents outside the corpus
    get the extra all-zero last row."""
    rows = ids.get_indexer(pd.Index(docnos.astype(str)))
    return np.where(rows >= 0, rows, len(ids))
