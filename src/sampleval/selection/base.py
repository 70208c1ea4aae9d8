"""The Selector protocol: every way of choosing what to judge, behind one interface.

A selector is created from a :class:`~sampleval.core.pool.Pool`, a per-topic budget and a
seeded ``numpy.random.Generator``. It has three duties (``../shared/DESIGN.md``):

1. ``propose(topic, n)``: the next documents to judge for a topic (docnos, at most ``n``;
   fewer or none when the budget or the design is exhausted);
2. ``observe(topic, judgments)``: take the labels of proposed documents (``{docno: label}``)
   and update its state (distributions over runs, bandit arms, a learner);
3. ``sample()``: the :class:`~sampleval.core.sample.Sample` so far, with the exact design
   (strata and rates, or draw probabilities per round) that estimators need.

The same object serves a simulation (labels from an oracle, :func:`simulate`) and a real
campaign (labels from people, possibly after a restart): ``state()`` returns a JSON-ready
dict and ``restore(pool, state)`` rebuilds the selector, so that stopping after any round,
saving, loading in a fresh process and continuing gives the very sample an uninterrupted run
gives. Methods register with :func:`register` and declare their parameters once
(:mod:`.params`); the CLI, the simulator and the campaign server find them by name in
:data:`METHODS`, which imports every module of this package on first use (a new method is a
new file here, or a plugin module: :mod:`sampleval.declare`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
import pandas as pd

from sampleval.core.design import GUARANTEES, Design
from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.sample import Sample
from sampleval.declare import Param, Registry, resolve
from sampleval.errors import UsageError


@dataclass(frozen=True)
class Budget:
    """Documents to judge per topic: an absolute number, or a fraction of the topic's pool
    (``rate``; the pool is the selector's Pool, i.e. its depth-k pool)."""

    count: int | None = None
    rate: float | None = None

    def __post_init__(self) -> None:
        if (self.count is None) == (self.rate is None):
            raise UsageError("give the budget as a number of documents or as a rate, not both")
        if self.count is not None and self.count < 1:
            raise UsageError("the budget must be at least one document per topic")
        if self.rate is not None and not 0 < self.rate <= 1:
            raise UsageError("the budget rate must lie in (0, 1]")

    def for_topic(self, pool_size: int) -> int:
        """The number of judgments this budget allows for a topic whose pool has
        ``pool_size`` documents (a rate rounds up, so every non-empty pool gets one)."""
        if self.count is not None:
            return min(self.count, pool_size)
        assert self.rate is not None
        return min(pool_size, math.ceil(self.rate * pool_size))

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "rate": self.rate}


T = TypeVar("T", bound="Selector")
V = TypeVar("V")


class Selector(ABC):
    """Base class of every selection method (see the module docstring)."""

    name: ClassVar[str]
    design: ClassVar[Design]
    """The design of the samples it makes (:mod:`sampleval.core.design`: ``STRATIFIED``,
    ``WITH_REPLACEMENT``, ``POOLED`` ...), whose capabilities decide what applies to them."""
    summary: ClassVar[str] = ""
    """One line: what the method is, and the paper it follows."""
    parameters: ClassVar[tuple[Param, ...]] = ()
    """Its parameters (``--param NAME=VALUE``), declared once (:class:`.params.Param`)."""
    budget_unit: ClassVar[str] = "judgments"
    """What the budget counts: ``judgments`` (distinct documents judged) or ``draws``
    (i.i.d. draws, a document drawn twice judged once: fewer judgments than the budget)."""
    takes_predictions: ClassVar[bool] = False
    """Whether it can use predicted relevance (``predictions=``; ``--predictions FILE``)."""
    needs_predictions: ClassVar[bool] = False
    """Whether it cannot select without them (``audit`` stratifies by the machine's labels)."""

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator, *,
                 predictions: Predictions | None = None, **params: Any) -> None:
        self.pool = pool
        self.budget = budget
        self.rng = rng
        resolved = resolve(self.parameters, params, self.name)
        self.params: dict[str, Any] = {k: v for k, v in resolved.items() if v is not None}
        """Every parameter's value (given, else its default; unset ones left out)."""
        self.check_predictions(predictions is not None)
        self.predicted: dict[str, np.ndarray] | None = None if predictions is None else {
            t: predictions.for_topic(t, pool.docnos_of(t)) for t in pool.topics}
        """Each topic's predicted relevance of its pooled documents (pool order, 0 where none
        is given), when predictions were given."""
        self._predictions_source = None if predictions is None else predictions.source
        self._positions: dict[str, dict[str, int]] = {}

    @classmethod
    def uses_predictions(cls, params: dict[str, Any]) -> bool:
        """Whether the method with these (resolved) parameters uses predictions; methods
        that take them under some parameters only say which."""
        return cls.takes_predictions

    @classmethod
    def draws_reach_every_document(cls, params: dict[str, Any]) -> bool:
        """Whether every draw of a sample made with these (resolved) parameters could have
        drawn every pooled document, however the draws adapted: what makes the per-draw
        (Hansen-Hurwitz) estimators unbiased for every measure, so that they become the
        default ones (:func:`sampleval.estimation.spec.estimator_for`). Recorded in the
        method's samples (:data:`sampleval.core.design.GUARANTEES`). False unless the
        method says so."""
        return False

    @classmethod
    def reaches_every_document(cls, params: dict[str, Any]) -> bool:
        """Whether, with these (resolved) parameters and a budget of
        :meth:`judgments_to_cover`, every pooled document has a chance of being judged: the
        design's capability (``design.reaches_every_document``), or for a design of draws
        whether every draw can reach every document (:meth:`draws_reach_every_document`)."""
        return cls.design.reaches_every_document or cls.draws_reach_every_document(params)

    @classmethod
    def simple_random_sample(cls, params: dict[str, Any]) -> bool:
        """Whether a sample made with these (resolved) parameters is one simple random
        sample of each topic's frame (``uniform``), whose AP has a default estimator of its
        own (:data:`sampleval.estimation.defaults.SIMPLE_RANDOM`). Recorded in the method's
        samples (:data:`sampleval.core.design.GUARANTEES`). False unless the method says
        so."""
        return False

    @classmethod
    def check_predictions(cls, given: bool) -> None:
        """UsageError when predictions are given to a method that does not use them, or
        missing for one that needs them."""
        if given and not cls.takes_predictions:
            raise UsageError(f"method {cls.name!r} does not use predictions")
        if not given and cls.needs_predictions:
            raise UsageError(f"method {cls.name!r} needs the machine's labels: give them "
                             "(--predictions FILE; in the library, predictions=)")

    @abstractmethod
    def propose(self, topic: str, n: int) -> list[str]:
        """Up to ``n`` docnos of ``topic`` to judge next (none when done)."""

    @abstractmethod
    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        """Record labels of documents this selector proposed for ``topic``."""

    @abstractmethod
    def sample(self) -> Sample:
        """The judgments so far, with their design."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """Everything needed to continue later, JSON-ready (the RNG's state included)."""

    @classmethod
    @abstractmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> Selector:
        """The selector ``state()`` described, over the same ``pool``."""

    splits_state: ClassVar[bool] = False
    """Whether ``state()`` is a part that never changes after creation plus one part per
    topic, ``state()["topics"][topic]``, that only ``propose`` and ``observe`` on that topic
    change: then a store may save, after each batch, just the topic that moved
    (:meth:`topic_state`), and ``restore`` takes the first state with each topic's latest
    part put in."""

    def topic_state(self, topic: str) -> dict[str, Any]:
        """``state()["topics"][topic]`` alone, for a method whose state splits by topic
        (:attr:`splits_state`); without computing the other topics' parts."""
        raise NotImplementedError(f"{self.name}: the state does not split by topic")

    def proposal_design(self, topic: str, docnos: list[str]) -> tuple[list[str], np.ndarray]:
        """For documents just proposed for ``topic``: the stratum each will have in the sample
        ("" where the design has none) and its inclusion probability under the design as it
        stands (1 for a deterministic design; NaN where the design fixes it only later).
        Judging outside sampleval lists both beside the documents to judge."""
        n = len(docnos)
        return [""] * n, np.full(n, 1.0 if self.design.is_deterministic else np.nan)

    def budget_for(self, topic: str) -> int:
        return self.budget.for_topic(self.pool[topic].size)

    def batch_size(self, topic: str) -> int:
        """How many documents ``propose`` may hand out for ``topic`` at once without changing
        the sample (1 for a method that adapts after every judgment; a round or the whole
        plan for methods that fix them in advance): the simulator's default batch."""
        return 1

    def judgments_to_cover(self, topic: str) -> int:
        """How many judgments of ``topic`` this design hands out before every part of its
        frame can be sampled (for stratified designs: every stratum it samples has a
        judged document; a stratum without one is outside the frame for every estimate).
        Any prefix of a sequential design's draws is a sample of the whole frame: 1."""
        return 1

    def _of_topic(self, per_topic: Mapping[str, V], topic: str) -> V:
        """``per_topic[topic]``, or a UsageError naming a topic the pool lacks."""
        if topic not in per_topic:
            raise UsageError(f"topic {topic!r} is not in the pool")
        return per_topic[topic]

    @staticmethod
    def _check_batch(n: int) -> None:
        if n < 1:
            raise UsageError(f"propose at least one document, not {n}")

    def _received(self, topic: str, judgments: Mapping[str, float],
                  proposed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pool-local indices (into ``pool.docnos_of(topic)``) and labels of ``judgments``;
        every document must be among the ``proposed`` indices and every label finite."""
        positions = self._pool_positions(topic)
        allowed = set(np.asarray(proposed).tolist())
        where = np.fromiter((positions.get(d, -1) for d in judgments), dtype=np.int64,
                            count=len(judgments))
        for docno, position in zip(judgments, where.tolist(), strict=True):
            if position not in allowed:
                raise UsageError(f"topic {topic}: document {docno} was not proposed")
        labels = np.fromiter(judgments.values(), dtype=np.float64, count=len(judgments))
        if not np.isfinite(labels).all():
            raise UsageError(f"topic {topic}: labels must be finite numbers")
        return where, labels

    def _pool_positions(self, topic: str) -> dict[str, int]:
        """Each pooled docno of ``topic`` -> its index in ``pool.docnos_of(topic)``."""
        positions = self._positions.get(topic)
        if positions is None:
            docnos = self.pool.docnos_of(topic)
            positions = self._positions[topic] = {d: i for i, d in enumerate(docnos)}
        return positions

    def _sample_meta(self) -> dict[str, Any]:
        """What every Sample records of the method that made it."""
        meta: dict[str, Any] = {"method": self.name, "params": dict(self.params),
                                 "budget": self.budget.to_dict(),
                                 "pool_depth": self.pool.depth,
                                 "runs": list(self.pool.run_names),
                                 "guarantees": {name: bool(getattr(self, name)(self.params))
                                                for name in GUARANTEES}}
        if self.predicted is not None:
            meta["predictions"] = self._predictions_source or "given"
        return meta

    def _state_header(self, rng: dict[str, Any] | None = None) -> dict[str, Any]:
        """The part of ``state()`` every method shares: method, parameters, budget, the pool
        it works on, and the RNG (``rng``: a saved RNG state to record instead of the
        current one)."""
        header: dict[str, Any] = {
            "method": self.name, "params": dict(self.params), "budget": self.budget.to_dict(),
            "runs": list(self.pool.run_names),
            "pool_sizes": {t: tp.size for t, tp in self.pool.topic_pools.items()},
            "rng": rng_state(self.rng) if rng is None else rng}
        if self.predicted is not None:
            header["predicted"] = {t: v.tolist() for t, v in self.predicted.items()}
            header["predictions_source"] = self._predictions_source
        return header

    @classmethod
    def _from_header(cls: type[T], pool: Pool, state: dict[str, Any]) -> T:
        """A new selector from a state's shared part, once the state is known to be this
        method's, over this pool."""
        if state.get("method") != cls.name:
            raise UsageError(f"the saved state is of method {state.get('method')!r}, "
                             f"not {cls.name!r}")
        sizes = {t: tp.size for t, tp in pool.topic_pools.items()}
        if state.get("runs") != list(pool.run_names) or state.get("pool_sizes") != sizes:
            raise UsageError("the saved state was made over another pool (runs, topics or "
                             "pool sizes differ)")
        predicted = state.get("predicted")
        predictions = None if predicted is None else Predictions.from_frame(pd.DataFrame({
            "query_id": np.concatenate([np.full(len(v), t, dtype=object)
                                        for t, v in predicted.items()]),
            "doc_id": np.concatenate([pool.docnos_of(t) for t in predicted]),
            "prediction": np.concatenate([np.asarray(v, dtype=np.float64)
                                          for v in predicted.values()])}),
            state.get("predictions_source"))
        return cls(pool, Budget(**state["budget"]), rng_from_state(state["rng"]),
                   predictions=predictions, **state["params"])


S = TypeVar("S", bound=type[Selector])
METHODS: Registry[type[Selector]] = Registry("selection method", "sampleval.selection")


def register(cls: S) -> S:
    """Class decorator: make a Selector available by its ``name`` (a name taken by another
    method is an error)."""
    METHODS.add(cls.name, cls)
    return cls


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    """A Generator's state as JSON-ready data."""
    return {"bit_generator": type(rng.bit_generator).__name__,
            "state": _jsonable(rng.bit_generator.state)}


def rng_from_state(saved: dict[str, Any]) -> np.random.Generator:
    """The Generator :func:`rng_state` described, in the same state."""
    bit_generator = getattr(np.random, saved["bit_generator"])()
    bit_generator.state = saved["state"]
    return np.random.Generator(bit_generator)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


Oracle = Callable[[str, list[str]], dict[str, float]]


def qrels_oracle(qrels: Qrels) -> Oracle:
    """An assessor that answers from qrels; a document they do not judge is not relevant."""
    judged = qrels.judged()
    table = {t: dict(zip(rows["doc_id"], rows["relevance"], strict=True))
             for t, rows in judged.groupby("query_id", sort=False)}

    def answer(topic: str, docnos: list[str]) -> dict[str, float]:
        known = table.get(topic, {})
        return {d: float(known.get(d, 0.0)) for d in docnos}

    return answer


def simulate(selector: Selector, oracle: Oracle, batch: int | None = None,
             rounds: int | None = None) -> Selector:
    """Judge with ``oracle`` until every topic's budget is spent (or for at most ``rounds``
    rounds per topic), asking for ``batch`` documents at a time (default: the selector's
    ``batch_size``); return the selector, whose ``sample()`` is the result."""
    for topic in selector.pool.topics:
        done = 0
        size = selector.batch_size(topic) if batch is None else batch
        while rounds is None or done < rounds:
            proposed = selector.propose(topic, size)
            if not proposed:
                break
            selector.observe(topic, oracle(topic, proposed))
            done += 1
    return selector
