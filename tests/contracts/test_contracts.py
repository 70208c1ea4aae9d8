"""Contracts every registered selection method and estimator family keeps, built from the
registries: a method or a family (a plugin's too, see ``test_plugins.py``) is tested the
moment it is registered.

Selection methods, with their declared defaults, on a small collection judged by an oracle:
the defaults construct; the budget is spent exactly (distinct judgments, or draws for a
method whose budget counts draws); no document is proposed twice; stopping, saving the state
as JSON, restoring it and continuing gives the very sample and state an uninterrupted run
gives; the sample survives its directory; the design it reports agrees with its samples
(each capability it claims holds of them). Estimator families: every declared measure and
option parses back from its printed name; a census gives the exact measure for every base a
family declares, when the family accepts a census; on a sample of each design the family
accepts, every measure estimates finite values (a family that reads predicted relevance gets
noisy predictions in both).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.cli.sample import estimator_families
from sampleval.core.design import CAPABILITIES, Design
from sampleval.core.inclusion import judged_design
from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.errors import UsageError
from sampleval.estimation.estimates import estimate
from sampleval.estimation.family import FAMILIES, Base, EstimatorFamily
from sampleval.estimation.spec import EstimateSpec, parse_estimate
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, Selector, qrels_oracle, simulate

TOPICS = ("1", "2", "3")
N_DOCS, DEPTH, BUDGET = 240, 120, 42
WITH_REPLACEMENT = ("with-replacement", "importance")


def collection() -> tuple[list[Run], Qrels]:
    """Five runs per topic over 60 documents, orderings correlated (a shared attractiveness
    plus noise, distinct scores), graded qrels of every document."""
    rng = np.random.default_rng(9)
    runs: dict[str, list[pd.DataFrame]] = {f"r{i}": [] for i in range(5)}
    qrels = []
    for topic in TOPICS:
        docs = np.array([f"{topic}-d{i:02d}" for i in range(N_DOCS)])
        grade = rng.choice([0, 1, 2], N_DOCS, p=[0.6, 0.3, 0.1])
        appeal = grade + rng.normal(0, 1, N_DOCS)
        for i, name in enumerate(runs):
            score = appeal + rng.normal(0, 0.8 + 0.2 * i, N_DOCS)
            top = np.argsort(-score)[:DEPTH]
            runs[name].append(pd.DataFrame({"query_id": topic, "doc_id": docs[top],
                                            "score": score[top]}))
        qrels.append(pd.DataFrame({"query_id": topic, "doc_id": docs, "relevance": grade}))
    return ([Run.from_frame(pd.concat(parts), name) for name, parts in runs.items()],
            Qrels.from_frame(pd.concat(qrels)))


RUNS, QRELS = collection()
POOL = Pool.from_runs(RUNS)
ORACLE = qrels_oracle(QRELS)
MACHINE = Predictions.from_frame(QRELS.frame[["query_id", "doc_id"]].assign(
    prediction=np.where(np.random.default_rng(5).random(len(QRELS.frame)) < 0.9,
                        QRELS.frame["relevance"], 0).astype(float)))
"""A machine judge for the methods that need one: the grades, 10% of them called 0."""


def construct(name: str, budget: Budget, rng: np.random.Generator) -> Selector:
    """The method ``name``, given the machine's labels (:data:`MACHINE`) when it needs them."""
    cls = METHODS[name]
    if cls.needs_predictions:
        return cls(POOL, budget, rng, predictions=MACHINE)
    return cls(POOL, budget, rng)


def make(name: str, seed: int = 1) -> Selector:
    return construct(name, Budget(count=BUDGET), np.random.default_rng(seed))


def judge_all(selector: Selector, batch: int | None = None, rounds: int | None = None
              ) -> dict[str, list[str]]:
    """Judge with the oracle (``simulate``); every docno proposed, per topic."""
    proposed: dict[str, list[str]] = {t: [] for t in POOL.topics}

    def recording(topic: str, docs: list[str]) -> dict[str, float]:
        proposed[topic] += docs
        return ORACLE(topic, docs)

    simulate(selector, recording, batch, rounds)
    return proposed


def tables(sample: Sample) -> dict[str, pd.DataFrame | None]:
    return {name: getattr(sample, name) for name in ("frame", "draws", "rounds",
                                                     "round_probs")}


def assert_same_sample(a: Sample, b: Sample) -> None:
    assert a.design == b.design and a.meta == b.meta
    for name, table in tables(a).items():
        other = tables(b)[name]
        if table is None:
            assert other is None, name
        else:
            assert other is not None, name
            pd.testing.assert_frame_equal(table.reset_index(drop=True),
                                          other.reset_index(drop=True), check_dtype=False)


# -- selection methods ---------------------------------------------------------------------

@pytest.mark.parametrize("name", METHODS.names())
def test_declared_defaults_construct(name: str) -> None:
    cls = METHODS[name]
    for param in cls.parameters:
        if param.default is not None:
            assert param.convert(param.default, name) == param.default, param.name
    assert cls.budget_unit in ("judgments", "draws")
    selector = make(name)
    defaults = {p.name: p.default for p in cls.parameters if p.default is not None}
    assert {k: selector.params.get(k) for k in defaults} == defaults
    assert isinstance(cls.summary, str) and cls.summary


@pytest.mark.parametrize("name", METHODS.names())
def test_budget_spent_exactly_without_repeats(name: str) -> None:
    selector = make(name)
    proposed = judge_all(selector)
    sample = selector.sample()
    judged = sample.judged()
    for topic in POOL.topics:
        docs = proposed[topic]
        assert len(docs) == len(set(docs)), "a document proposed twice"
        mine = judged[judged["query_id"] == topic]
        assert sorted(mine["doc_id"]) == sorted(docs)
        assert selector.propose(topic, 5) == []  # done
        if selector.budget_unit == "draws":
            assert sample.draws is not None
            assert len(sample.draws[sample.draws["query_id"] == topic]) == BUDGET
            assert len(docs) <= BUDGET
        else:
            assert len(docs) == BUDGET
    if sample.design not in WITH_REPLACEMENT and sample.draws is not None:
        assert not sample.draws.duplicated(["query_id", "doc_id"]).any()


@pytest.mark.parametrize("name", METHODS.names())
@pytest.mark.parametrize(("batch", "stop"), [(None, 1), (1, 3)])
def test_stop_save_restore_continue(name: str, batch: int | None, stop: int) -> None:
    whole = make(name, seed=3)
    judge_all(whole, batch)
    first = make(name, seed=3)
    judge_all(first, batch, rounds=stop)
    resumed = METHODS[name].restore(POOL, json.loads(json.dumps(first.state())))
    judge_all(resumed, batch)
    assert_same_sample(resumed.sample(), whole.sample())
    assert resumed.state() == whole.state()


@pytest.mark.parametrize("name", METHODS.names())
def test_sample_survives_its_directory(name: str, tmp_path: Path) -> None:
    selector = make(name)
    judge_all(selector)
    sample = selector.sample()
    assert_same_sample(Sample.load(sample.save(tmp_path / "s")), sample)


def reached(sample: Sample, topic: str) -> np.ndarray:
    """Whether each of the topic's frame documents could have been judged: pi_i > 0, or for
    a design of draws a positive draw probability in every round (round 0's p-bar, or Q)."""
    ts = sample.topic(topic)
    if sample.design.has_draws:
        assert sample.round_probs is not None
        rows = sample.rows("round_probs", topic)
        rows = rows[rows["round"] == 0]
        positive = np.zeros(len(ts.docnos), dtype=bool)
        where = ts.locate(rows["doc_id"].to_numpy(dtype=object).astype(str))
        positive[where[where >= 0]] = rows["probability"].to_numpy()[where >= 0] > 0
        return positive
    return ts.inclusion > 0


@pytest.mark.parametrize("name", METHODS.names())
def test_design_agrees_with_its_samples(name: str) -> None:
    """The method's samples carry its Design, and every capability the design claims holds
    of them: pi_i in (0, 1] for the judged documents; pi_ij symmetric, pi_ii = pi_i and
    pi_ij <= min(pi_i, pi_j) (= pi_i pi_j for independent inclusions); strata, draws and
    i.i.d. draws where claimed; no design-based estimate of a deterministic choice; and
    where the method says every document is reachable (its design's capability, or every
    draw's reach), every pooled document has a chance of being judged once the budget
    covers every stratum."""
    cls = METHODS[name]
    selector = make(name)
    judge_all(selector)
    sample = selector.sample()
    design = sample.design
    assert isinstance(design, Design) and type(design) is type(cls.design)
    assert set(design.capabilities()) == set(CAPABILITIES)
    assert type(Sample(design.name, sample.frame).design) is type(design)  # as read back
    assert (sample.draws is not None) == design.has_draws, "draws iff has_draws"
    for topic in POOL.topics:
        ts = sample.topic(topic)
        judged = np.flatnonzero(ts.judged)
        assert design.has_strata or (ts.stratum == -1).all()
        if design.has_inclusion_probabilities:
            pi = judged_design(sample, ts).pi
            assert ((pi > 0) & (pi <= 1)).all(), topic
        if design.has_joint_probabilities:
            inc = judged_design(sample, ts)
            joint, pi = inc.pi_joint, inc.pi
            np.testing.assert_allclose(joint, joint.T, atol=1e-12)
            np.testing.assert_allclose(np.diag(joint), pi, atol=1e-12)
            assert (joint <= np.minimum.outer(pi, pi) + 1e-12).all(), topic
            assert (joint >= 0).all()
            if design.independent_inclusions:
                off = ~np.eye(len(pi), dtype=bool)
                np.testing.assert_allclose(joint[off], np.outer(pi, pi)[off], atol=1e-12)
        if design.has_draws:
            units = design.units(sample, ts) if design.units_kind == "draws" else None
            assert units is None or set(units.index) == set(judged), topic
        if design.has_iid_draws:
            assert sample.round_probs is not None
            q = sample.rows("round_probs", topic)
            assert (q["round"] == 0).all() and len(q) == len(ts.docnos)
            assert abs(q["probability"].sum() - 1) < 1e-9
    if not design.is_probability_design:
        with pytest.raises(UsageError, match="evaluated exactly"):
            estimate(sample, RUNS)
    if cls.reaches_every_document(selector.params):
        assert design.reaches_every_document or cls.draws_reach_every_document(selector.params)
        covering = max(selector.judgments_to_cover(t) for t in POOL.topics)
        budget = Budget(count=min(max(covering, BUDGET), min(POOL[t].size
                                                              for t in POOL.topics)))
        wide = construct(name, budget, np.random.default_rng(1))
        judge_all(wide)
        whole = wide.sample()
        for topic in POOL.topics:
            frame = whole.topic(topic)
            assert sorted(frame.docnos) == sorted(POOL.docnos_of(topic)), topic
            assert reached(whole, topic).all(), f"{name}, topic {topic}: unreachable documents"


# -- estimator families --------------------------------------------------------------------

def measure_specs(family: EstimatorFamily, base: Base) -> list[EstimateSpec]:
    """The base with each value of each option it takes (cutoff 10 where it takes one)."""
    cutoff = None if base.cutoff == "no" else 10
    specs = [EstimateSpec(family.name, base.name, cutoff)]
    for option in base.options:
        declared = family.option(option, base.name)
        assert declared is not None
        specs += [EstimateSpec(family.name, base.name, cutoff, ((option, value),))
                  for value in declared.choices if value != declared.default]
    return specs


FAMILY_BASES = [(f.name, b.name) for f in FAMILIES.values() for b in f.bases]


@pytest.mark.parametrize(("family", "base"), FAMILY_BASES)
def test_names_round_trip(family: str, base: str) -> None:
    declared = FAMILIES[family]
    for spec in measure_specs(declared, declared.base(base) or Base(base)):
        assert parse_estimate(spec.name) == spec
        assert parse_estimate(spec.name.upper()) == spec or spec.name.upper() != spec.name
    for option in declared.options:
        assert option.default is None or option.convert(option.default, family) == (
            option.default)


def predictions_for(family: EstimatorFamily) -> pd.DataFrame | None:
    """For a family that reads predicted relevance: noisy predictions of every judged
    document (uniform on [0, the largest grade], seeded); None for the others."""
    if not family.needs_predictions:
        return None
    frame = QRELS.frame[["query_id", "doc_id"]]
    top = max(1.0, float(QRELS.frame["relevance"].max()))
    return frame.assign(prediction=np.random.default_rng(3).uniform(0, top, len(frame)))


def census() -> Sample:
    frame = QRELS.frame.rename(columns={})[["query_id", "doc_id", "relevance"]]
    return Sample("census", frame.assign(relevance=frame["relevance"].astype(float),
                                         stratum="", inclusion=1.0))


def exact_value(base: str, cutoff: int | None) -> pd.Series:
    """The exact measure per (run, topic) with every document judged (DCG by hand: the
    evaluator has no DCG)."""
    if base == "DCG":
        grades = QRELS.frame.set_index(["query_id", "doc_id"])["relevance"]
        out = {}
        for run in RUNS:
            ranked = run.to_frame()
            for topic, rows in ranked.groupby("query_id"):
                rows = rows.sort_values("rank").head(cutoff or len(rows))
                gain = grades.loc[[(topic, d) for d in rows["doc_id"]]].to_numpy()
                out[(run.name, topic)] = float((np.maximum(gain, 0) /
                                                np.log2(rows["rank"].to_numpy() + 1)).sum())
        return pd.Series(out)
    name = {"NumRelRet": "NumRelRet"}.get(base, base) + ("" if cutoff is None else f"@{cutoff}")
    exact = evaluate(QRELS, RUNS, [name])
    exact = exact[exact["query_id"] != "all"]
    return exact.set_index(["run", "query_id"])["value"]


@pytest.mark.parametrize(("family", "base"), [
    (f, b) for f, b in FAMILY_BASES if "census" in FAMILIES[f].designs])
def test_census_is_exact(family: str, base: str) -> None:
    """Every family that accepts a census gives each declared measure exactly on one (the
    NIST estimators and infAP up to their smoothing constants, 1e-4)."""
    declared = FAMILIES[family]
    sample = census()
    for spec in measure_specs(declared, declared.base(base) or Base(base)):
        got = estimate(sample, RUNS, [spec.name], predictions=predictions_for(declared))
        got = got[got["query_id"] != "all"].set_index(["run", "query_id"])["value"]
        want = exact_value(spec.base, spec.cutoff)
        tolerance = 1e-4 if family in ("nist", "trec_eval") else 1e-9
        np.testing.assert_allclose(got.to_numpy(), want.loc[got.index].to_numpy(),
                                   rtol=0, atol=tolerance, err_msg=spec.name)


@functools.cache
def design_sample(design: str) -> Sample | None:
    """A sample of ``design`` (None when no registered method makes one and none is built
    here): from the first method of that design, else built directly."""
    for name in METHODS:
        if METHODS[name].design == design:
            selector = make(name)
            judge_all(selector)
            return selector.sample()
    if design in ("poisson", "inclusion"):
        rng = np.random.default_rng(4)
        frame = QRELS.frame.assign(relevance=QRELS.frame["relevance"].astype(float))
        pi = rng.uniform(0.2, 0.9, len(frame))
        kept = rng.random(len(frame)) < pi
        return Sample(design, frame.assign(
            relevance=np.where(kept, frame["relevance"], np.nan), stratum="", inclusion=pi))
    if design == "census":
        return census()
    return None


@pytest.mark.parametrize(("family", "design"), [
    (f.name, d) for f in FAMILIES.values() for d in f.designs])
def test_every_measure_on_every_accepted_design(family: str, design: str) -> None:
    sample = design_sample(design)
    if sample is None:
        pytest.skip(f"no way to make a {design} sample here")
    declared = FAMILIES[family]
    names = [s.name for b in declared.bases for s in measure_specs(declared, b)]
    while True:  # an option value made for other designs refuses in one line, naming both
        try:
            out = estimate(sample, RUNS, names, predictions=predictions_for(declared))
            break
        except UsageError as error:
            refused = [n for n in names if str(error).startswith(f"{n}: ")]
            assert refused and "=" in refused[0] and f"{design} sample" in str(error), error
            names.remove(refused[0])
    assert set(out["measure"]) == set(names)
    assert np.isfinite(out["value"]).all()
    if not declared.needs_predictions:  # a difference estimate can fall below 0 (ppi.py)
        assert (out["value"] >= -1e-12).all()
    bounded = out[out["lo"].notna()]
    assert (bounded["lo"] <= bounded["value"] + 1e-12).all()
    assert (bounded["value"] <= bounded["hi"] + 1e-12).all()


def test_registries_are_complete() -> None:
    """Every estimator family some method's design needs exists, and the listing derives
    from the declarations (no second list)."""
    for name, cls in METHODS.items():
        if cls.design != "pooled":
            assert estimator_families(cls.design), name
    assert len(METHODS) == len(METHODS.names()) and len(FAMILIES) == len(FAMILIES.names())



