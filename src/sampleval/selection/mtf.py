"""Move-to-Front pooling (Cormack, Palmer & Clarke, "Efficient construction of large test
collections", SIGIR 1998, the section on Move-to-Front Pooling), and the run-walking machinery
it shares with the bandit selectors of :mod:`sampleval.selection.mab`.

MTF treats the runs as sources with priorities and judges, per topic, the next unjudged
document of the source with the highest priority. The rule implemented here (per topic,
with a fixed number of judgments per topic), as the reference code of Li & Kanoulas's MTF
baseline (CIKM 2017; repository dli1/activesampling, ``MTFModel``) runs it:

1. every run starts with the same priority (0), and the first run is drawn at random
   (uniformly among the runs with a ranking for the topic; seeded);
2. a run keeps the turn while its documents are relevant (label >= 1, trec_eval's default
   relevance level); a non-relevant document lowers its priority by one and passes the turn
   to the run with the highest priority, ties going to the earlier run in pool order (the
   start run has no precedence once it has missed);
3. a run whose documents are all judged (or pending) drops out; a document already judged
   through another run is skipped without changing any priority.

With equal starting priorities this visits the runs round-robin after the start run, each
run judging until it finds a non-relevant document.

The choice is deterministic given the start run: the sample has design ``pooled`` (judged
documents pi = 1, unjudged pi = 0), and no sampling estimator applies (no family accepts a
``pooled`` design). What remains is the exact measures on the judged set alone, unjudged
documents counting as non-relevant (trec_eval on ``sample().to_qrels()``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sampleval.core.design import POOLED, Design
from sampleval.core.pool import Pool, TopicPool
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.selection.base import Budget, Selector, register, rng_from_state, rng_state


class _Walk:
    """One topic's progress down the runs' rankings: a cursor per run, the documents taken
    (judged or pending) in proposal order with the run each came from, and their labels."""

    def __init__(self, tp: TopicPool, docnos: np.ndarray) -> None:
        self.ranking = tp.ranking
        self.lengths = tp.lengths
        self.docnos = docnos
        self.cursor = np.zeros(len(tp.lengths), dtype=np.int64)
        self.live = tp.lengths > 0
        self.taken = np.zeros(tp.size, dtype=bool)
        self.docs: list[int] = []
        self.runs: list[int] = []
        self.labels: list[float | None] = []
        self.pending: dict[str, int] = {}

    def next_doc(self, run: int) -> int:
        """The run's best-ranked document not yet taken (-1 when none is left). The cursor
        only moves forward, past taken documents, so a topic costs O(n_runs x depth) in all."""
        c, end = int(self.cursor[run]), int(self.lengths[run])
        if c < end and not self.taken[self.ranking[run, c]]:
            return int(self.ranking[run, c])
        row = self.ranking[run, c:end]
        free = np.flatnonzero(~self.taken[row])
        if free.size == 0:
            self.cursor[run] = end
            return -1
        self.cursor[run] = c + free[0]
        return int(row[free[0]])

    def exhausted(self, runs: np.ndarray) -> np.ndarray:
        """Which of ``runs`` have no document left (as :meth:`next_doc` of each would say,
        and moving their cursors as it does): a run whose cursor's document is free is
        answered at once, the others by :meth:`next_doc`."""
        cursor = self.cursor[runs]
        free = cursor < self.lengths[runs]
        free[free] = ~self.taken[self.ranking[runs[free], cursor[free]]]
        out = np.zeros(len(runs), dtype=bool)
        for i in np.flatnonzero(~free):
            out[i] = self.next_doc(int(runs[i])) < 0
        return out

    def take(self, doc: int, run: int) -> str:
        self.taken[doc] = True
        docno = str(self.docnos[doc])
        self.pending[docno] = len(self.docs)
        self.docs.append(doc)
        self.runs.append(run)
        self.labels.append(None)
        return docno

    def to_json(self) -> dict[str, Any]:
        return {"docnos": [str(self.docnos[d]) for d in self.docs], "runs": list(self.runs),
                "labels": list(self.labels)}

    def load(self, saved: dict[str, Any]) -> None:
        index = {str(d): i for i, d in enumerate(self.docnos)}
        for docno, run, label in zip(saved["docnos"], saved["runs"], saved["labels"],
                                     strict=True):
            if docno not in index:
                raise UsageError(f"the saved state names {docno!r}, which is not in the pool")
            self.take(index[docno], int(run))
            if label is not None:
                del self.pending[docno]
                self.labels[-1] = float(label)


class RunWalker(Selector):
    """Base of the selectors whose arms are the runs: each step picks a run (``_choose``) and
    judges its best-ranked document not judged or proposed before; each label goes back to the
    run it came from (``_learn``). Per topic, at most the topic's budget, and never past the
    point where every run is exhausted.

    ``propose(topic, n)`` makes n steps under the current state, before any of their labels
    are known; ``observe`` then applies the labels in proposal order. With n = 1 (the default
    of :func:`~sampleval.selection.base.simulate`) this is the method as published.
    """

    design: ClassVar[Design] = POOLED

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self._initial_rng = rng_state(rng)
        self._walks = {t: _Walk(pool[t], pool.docnos_of(t)) for t in pool.topics}
        # each topic draws from its own Generator, so the order topics are worked on in
        # does not change the sample
        seeds = rng.integers(0, 2**63, size=len(pool.topics))
        self._rngs = {t: np.random.default_rng(s) for t, s in zip(pool.topics, seeds,
                                                                    strict=True)}

    # -- what a method defines --------------------------------------------------------------

    @abstractmethod
    def _choose(self, topic: str, live: np.ndarray) -> int:
        """The run to take the next document from, among ``live`` runs (-1: none is live).
        A returned run may turn out to be exhausted; it is then marked dead and the method
        asked again, so the choice must be a function of the state alone."""

    @abstractmethod
    def _learn(self, topic: str, run: int, label: float) -> None:
        """Take the label of a document chosen from ``run``."""

    @abstractmethod
    def _arms_state(self, topic: str) -> dict[str, Any]:
        """The method's per-topic state, JSON-ready."""

    @abstractmethod
    def _load_arms(self, topic: str, saved: dict[str, Any]) -> None:
        """Set the per-topic state from what :meth:`_arms_state` gave."""

    # -- the protocol ----------------------------------------------------------------------

    def propose(self, topic: str, n: int) -> list[str]:
        walk = self._walk(topic)
        room = min(n, self.budget_for(topic) - len(walk.docs))
        out: list[str] = []
        while len(out) < room:
            run = self._choose(topic, walk.live)
            if run < 0:
                break
            doc = walk.next_doc(run)
            if doc < 0:
                walk.live[run] = False
                continue
            out.append(walk.take(doc, run))
        return out

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        walk = self._walk(topic)
        unknown = [d for d in judgments if d not in walk.pending]
        if unknown:
            raise UsageError(f"topic {topic}: {', '.join(map(str, unknown[:5]))} not proposed "
                             f"and awaiting a label")
        for position in sorted(walk.pending[d] for d in judgments):
            docno = str(walk.docnos[walk.docs[position]])
            label = float(judgments[docno])
            if not np.isfinite(label):
                raise UsageError(f"topic {topic}: the label of {docno} is not a number")
            del walk.pending[docno]
            walk.labels[position] = label
            self._learn(topic, walk.runs[position], label)

    def sample(self) -> Sample:
        frames = []
        for topic, walk in self._walks.items():
            labels = np.full(len(walk.docnos), np.nan)
            known = [(d, x) for d, x in zip(walk.docs, walk.labels, strict=True) if x is not None]
            if known:
                docs, values = zip(*known, strict=True)
                labels[list(docs)] = values
            frames.append(pd.DataFrame({
                "query_id": np.full(len(labels), topic, dtype=object), "doc_id": walk.docnos,
                "relevance": labels, "stratum": "",
                "inclusion": np.where(np.isnan(labels), 0.0, 1.0)}))
        columns = ["query_id", "doc_id", "relevance", "stratum", "inclusion"]
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
        return Sample(self.design, frame, meta=self._sample_meta())

    splits_state: ClassVar[bool] = True

    def state(self) -> dict[str, Any]:
        return {**self._state_header(self._initial_rng),
                "topics": {t: self.topic_state(t) for t, w in self._walks.items() if w.docs}}

    def topic_state(self, topic: str) -> dict[str, Any]:
        return {**self._walk(topic).to_json(), "arms": self._arms_state(topic),
                "rng": rng_state(self._rngs[topic])}

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> Selector:
        selector = cls._from_header(pool, state)  # built from the initial RNG, as at first
        for topic, saved in state["topics"].items():
            selector._walk(topic).load(saved)
            selector._load_arms(topic, saved["arms"])
            selector._rngs[topic] = rng_from_state(saved["rng"])
        return selector

    def _walk(self, topic: str) -> _Walk:
        return self._of_topic(self._walks, topic)


@register
class MTFSelector(RunWalker):
    """Move-to-Front pooling (Cormack, Palmer & Clarke, SIGIR 1998); see the module docstring
    for the exact rule."""

    name: ClassVar[str] = "mtf"
    summary: ClassVar[str] = ("Move-to-Front pooling from a random run (Cormack, Palmer & "
                              "Clarke, SIGIR 1998)")

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self._priority = {t: np.zeros(pool.n_runs, dtype=np.int64) for t in pool.topics}
        self._start = {t: self._draw_start(t) for t in pool.topics}

    def _draw_start(self, topic: str) -> int:
        """A run drawn uniformly among those with a ranking for the topic (-1: none)."""
        runs = np.flatnonzero(self.pool[topic].lengths > 0)
        return int(self._rngs[topic].choice(runs)) if len(runs) else -1

    def _choose(self, topic: str, live: np.ndarray) -> int:
        if not live.any():
            return -1
        priority = np.where(live, self._priority[topic], np.iinfo(np.int64).min)
        start = self._start[topic]
        if start >= 0 and live[start] and priority[start] == 0 == priority.max():
            return start  # the start run keeps the turn until its first miss
        return int(np.argmax(priority))  # the first maximum: ties by run order

    def _learn(self, topic: str, run: int, label: float) -> None:
        if label < 1.0:
            self._priority[topic][run] -= 1

    def _arms_state(self, topic: str) -> dict[str, Any]:
        return {"priority": self._priority[topic].tolist(), "start": self._start[topic]}

    def _load_arms(self, topic: str, saved: dict[str, Any]) -> None:
        self._priority[topic] = np.asarray(saved["priority"], dtype=np.int64)
        self._start[topic] = int(saved["start"])
