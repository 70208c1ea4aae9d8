"""The ``audit`` selection method (sampleval.selection.audit): stratified by the machine's
label, each run's top documents weighted as its own (issue 31, item 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import UsageError
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.selection.audit import best_run_prior


def _setting(seed: int = 3) -> tuple[Pool, pd.DataFrame, Predictions]:
    data = make_collection(np.random.default_rng(seed), n_topics=4, n_runs=10, n_docs=800,
                           depth=60, pool_depth=60, rel_rate=0.05)
    runs = [Run.from_frame(f, n) for n, f in data.runs.items()]
    pool = Pool.from_runs(runs, depth=60, qrels=Qrels.from_frame(data.qrels))
    flip = np.random.default_rng(seed).random(len(data.qrels)) < 0.2
    labels = np.where(flip, 1.0 - (data.qrels["relevance"] > 0), data.qrels["relevance"])
    machine = Predictions.from_frame(data.qrels.assign(prediction=labels)[
        ["query_id", "doc_id", "prediction"]])
    return pool, data.qrels, machine


def test_strata_never_mix_the_machine_labels_and_spend_the_budget() -> None:
    pool, _, machine = _setting()
    selector = METHODS["audit"](pool, Budget(count=60), np.random.default_rng(0),
                                predictions=machine)
    for topic in pool.topics:
        tp = pool[topic]
        layout = selector._layout(tp, 60)
        relevant = machine.for_topic(topic, pool.docnos_of(topic)) >= 0.5
        assert layout.counts.sum() == 60
        for code in np.unique(layout.codes[layout.codes > 0]):
            inside = relevant[layout.codes == code]
            assert inside.all() or not inside.any()
            assert str(layout.labels[code]).startswith("relevant" if inside[0] else "other")
        assert not layout.unreached().any()


def test_a_runs_own_top_documents_are_judged_more_likely_than_under_stratified() -> None:
    """A run whose top documents no other run retrieved weighs 1/R of the mean AP-prior
    there: ``stratified`` judges them rarely, ``audit`` (the largest prior) as if that run
    were alone (top=1); the sizes' parts each sum to 1."""
    data = make_collection(np.random.default_rng(3), n_topics=3, n_runs=10, n_docs=800,
                           depth=60, pool_depth=60, rel_rate=0.05)
    frames = dict(data.runs)
    name = next(iter(frames))
    own = frames[name].copy()
    top = own.groupby("query_id")["score"].rank(ascending=False, method="first") <= 3
    own.loc[top, "doc_id"] = "own-" + own.loc[top, "query_id"].astype(str) + "-" + own.loc[
        top, "doc_id"].astype(str)
    frames[name] = own
    pool = Pool.from_runs([Run.from_frame(f, n) for n, f in frames.items()], depth=60)
    machine = Predictions.from_frame(pd.DataFrame({"query_id": ["1"], "doc_id": ["x"],
                                                   "prediction": [1.0]}))
    audit = METHODS["audit"](pool, Budget(count=40), np.random.default_rng(0),
                             predictions=machine, top=1.0)
    plain = METHODS["stratified"](pool, Budget(count=40), np.random.default_rng(0))
    ours, theirs = [], []
    for topic in pool.topics:
        tp = pool[topic]
        docnos = np.asarray(pool.docnos_of(topic)).astype(str)
        mine = np.char.startswith(docnos, "own-")
        assert mine.sum() == 3
        ours.extend(_inclusion(audit, tp, 40)[mine])
        theirs.extend(_inclusion(plain, tp, 40)[mine])
        assert best_run_prior(tp).sum() == pytest.approx(1.0)
    assert (np.array(ours) >= np.array(theirs)).all()
    assert np.mean(ours) > 1.3 * np.mean(theirs)


def _inclusion(selector: object, tp: object, budget: int) -> np.ndarray:
    layout = selector._layout(tp, budget)  # type: ignore[attr-defined]
    sizes = np.bincount(layout.codes, minlength=len(layout.labels))
    pi = np.divide(layout.counts, sizes, out=np.zeros(len(sizes)), where=sizes > 0)
    return pi[layout.codes]


def test_needs_the_machine_labels_and_samples_a_stratified_design() -> None:
    pool, qrels, machine = _setting()
    with pytest.raises(UsageError, match="predictions"):
        METHODS["audit"](pool, Budget(rate=0.1), np.random.default_rng(0))
    sample = simulate(METHODS["audit"](pool, Budget(rate=0.1), np.random.default_rng(0),
                                       predictions=machine),
                      qrels_oracle(Qrels.from_frame(qrels))).sample()
    assert sample.design == "stratified"
    for topic in sample.topics:
        ts = sample.topic(topic)
        sizes, n = ts.strata()
        assert (n[sizes > 0] >= 1).all()
