"""Judge until confident, committed design: the last phase is the pilot's whole plan by
default (issue 32: the interim phase halved it, and the committed rule's intervals then
under-covered on Cranfield, 0.75 at stopping; docs/research/anytime.md, "The committed rule's
coverage on Cranfield")."""

from __future__ import annotations

from typing import Any

import numpy as np

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.judging.confident import ConfidentJudging, Target
from sampleval.selection import METHODS, Budget, qrels_oracle
from sampleval.selection.base import Oracle


def synthetic_pool(seed: int, depth: int, **params: Any) -> tuple[Qrels, Pool]:
    """A synthetic collection (:func:`~sampleval.datasets.synthetic.make_collection` with
    ``params``, the runs and the pool at ``depth``): its qrels and its pool."""
    from sampleval.datasets.synthetic import make_collection

    made = make_collection(np.random.default_rng(seed), depth=depth, pool_depth=depth,
                           **params)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    qrels = Qrels.from_frame(made.qrels)
    return qrels, Pool.from_runs(runs, depth=depth, qrels=qrels)


def judge_the_pilot(judging: ConfidentJudging, oracle: Oracle) -> None:
    """Judge a committed campaign's pilot with ``oracle`` and estimate it (the next
    :meth:`~ConfidentJudging.next_batch` would plan the phase after it)."""
    while not judging.phases[-1] or judging.phases[-1][-1].open:
        topic, docnos = judging.next_batch() or ("", [])
        judging.observe(topic, oracle(topic, docnos))
    judging._refresh()


def test_the_phase_after_the_pilot_is_final_by_default(
        sparse_collection: tuple[list[Run], Qrels, Pool]) -> None:
    """The last phase alone estimates the documents not judged before it (the earlier ones
    count with pi = 1), so AP's ratio bias at stopping grows as it shrinks. By default
    (``ConfidentJudging`` without ``interim``) the phase planned from the pilot is meant
    to be final: no topic is owed a further phase once it is committed, its size is the
    plan's, and at the end every judgment after the pilot is in the last phase of a topic
    with two phases (an interim phase of half the plan, the default before, left every
    topic owed one more and its last phase about half of what followed the pilot)."""
    _, qrels, pool = sparse_collection
    oracle = qrels_oracle(qrels)
    selector = METHODS["stratified"](pool, Budget(rate=0.6), np.random.default_rng(3))
    judging = ConfidentJudging(selector, Target("AP", 0.03), start=6, batch=3)
    judge_the_pilot(judging, oracle)
    plan = judging.plan()
    assert plan.sum() > 0 and judging.owed.all()  # the pilot owes every topic a phase
    batch = judging.next_batch()  # commits the phase after the pilot
    assert batch is not None
    second = np.array([p[1].budget if len(p) > 1 else 0 for p in judging.phases])
    assert (second == plan).all()
    assert not judging.owed.any()  # meant to be final
    topic, docnos = batch
    judging.observe(topic, oracle(topic, docnos))
    status = judging.run(oracle)
    assert status.judged > 6 * len(pool.topics)
    two = [i for i, p in enumerate(judging.phases) if len(p) == 2]
    assert two
    frame = judging.sample().frame
    for i in two:
        rows = frame[frame["query_id"] == judging.topics[i]]
        last = rows["stratum"].str.startswith("1:") & rows["relevance"].notna()
        assert int(last.sum()) == int(judging.judged[i]) - 6


def test_an_owed_phase_never_plans_beyond_the_topic_s_room() -> None:
    """With an interim phase every topic is owed one more; where its cap (here a fifth of
    its pool) leaves less room than the phase that reaches every stratum, the owed phase is
    planned at its whole room, not beyond it (projected there at an infinite design factor,
    the plan turned NaN: ``invalid value encountered in multiply``)."""
    import warnings

    qrels, pool = synthetic_pool(11, n_topics=10, n_runs=6, n_docs=400, depth=30,
                                 rel_rate=0.03)
    selector = METHODS["stratified"](pool, Budget(rate=0.2), np.random.default_rng(3))
    judging = ConfidentJudging(selector, Target("AP", 0.03), start=10, batch=3, interim=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        judging.run(qrels_oracle(qrels))
    assert (judging.judged <= judging.capacity).all()
