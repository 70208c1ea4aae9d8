"""The designs (:mod:`sampleval.core.design`, issue 28 step 2): one class per design, each
its name on disk and in the defaults table, with capabilities that say what applies to its
samples (no code outside the estimators' engine tests a design's name)."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import CliResult
from sampleval.cli.sample import estimator_families
from sampleval.core.design import (
    _REGISTRY,
    CAPABILITIES,
    REPLICATE_SCHEMES,
    STRATIFIED,
    VARIANCE_FORMS,
    Design,
    design_named,
    designs,
)
from sampleval.core.pool import Pool
from sampleval.core.run import Run
from sampleval.core.sample import DESIGNS, HEADER, Sample
from sampleval.errors import InputError, UsageError
from sampleval.estimation.engine.views import TopicView, topic_draws
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.setup import accepts
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate

ROOT = Path(__file__).resolve().parents[2]

REQUIRES = {"ht": "has_joint_probabilities", "stat": "has_joint_probabilities",
            "hh": "has_draws", "is": "has_iid_draws", "nist": "has_strata",
            "trec_eval": "has_strata", "ppi": "is_probability_design"}
"""The capability each family needs: what ``accepts`` will read once families declare it."""


@pytest.mark.parametrize("design", designs(), ids=str)
def test_a_design_is_its_name(design: Design) -> None:
    assert design == design.name and design_named(design.name) == design
    assert type(design_named(design.name)) is type(design)
    assert json.dumps({"design": design}) == json.dumps({"design": design.name})
    assert type(pickle.loads(pickle.dumps(design))) is type(design)
    assert set(design.capabilities()) == set(CAPABILITIES)
    assert design.variance_form in VARIANCE_FORMS
    assert design.replicate_scheme in REPLICATE_SCHEMES
    assert design.units_kind in ("documents", "draws")


@pytest.mark.parametrize("design", designs(), ids=str)
def test_capabilities_are_consistent(design: Design) -> None:
    if design.has_joint_probabilities:
        assert design.has_inclusion_probabilities and design.variance_form != "per-draw"
    if design.has_iid_draws:
        assert design.has_draws and design.units_kind == "draws"
    if design.independent_inclusions:
        assert design.variance_form in ("independent", "exact")
    if design.has_strata:
        assert design.replicate_scheme == "strata"
    if not design.is_probability_design:
        assert design.is_deterministic and design.variance_form == "none"
    if design.is_deterministic and design.is_probability_design:  # a census
        assert design.variance_form == "exact" and design.reaches_every_document


def test_the_built_in_designs() -> None:
    assert DESIGNS == ("census", "stratified", "poisson", "inclusion", "with-replacement",
                       "importance", "pooled")
    assert [d.name for d in designs()] == list(DESIGNS)


@pytest.mark.parametrize("family", FAMILIES.names())
def test_each_family_accepts_the_designs_of_one_capability(family: str) -> None:
    """Every family's declared designs are those with one capability (:data:`REQUIRES`), so
    that families can accept designs by capability without changing which they accept."""
    declared = FAMILIES[family]
    assert family in REQUIRES, f"say which capability {family} needs"
    by_capability = {d.name for d in designs() if getattr(d, REQUIRES[family])}
    assert declared.requires == (REQUIRES[family],)
    assert by_capability == set(declared.designs)
    assert {d.name for d in designs() if accepts(declared, d)} == by_capability


def test_a_new_design_is_accepted_by_its_capabilities() -> None:
    """A design added as one class (here a Poisson-like design with draws) is accepted by
    every family whose capabilities it has, with no edit of the families (issue 28 step 4:
    ``EstimatorFamily.accepts`` reads capabilities, not names)."""

    class Drawn(Design):
        name = "toy-drawn"
        independent_inclusions = True
        has_draws = True
        variance_form = "independent"
        replicate_scheme = "weighted"

    try:
        new = design_named("toy-drawn")
        accepting = {name for name in FAMILIES.names() if accepts(FAMILIES[name], new)}
        assert accepting == {"ht", "stat", "hh", "ppi"}
        assert "toy-drawn" in FAMILIES["hh"].designs
        assert not FAMILIES["ht"].accepts("no-such-design")
    finally:
        _REGISTRY.pop("toy-drawn", None)
    assert "toy-drawn" not in [d.name for d in designs()]


def test_an_unknown_design_is_refused_in_one_line(tmp_path: Path) -> None:
    frame = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1.0],
                          "stratum": [""], "inclusion": [1.0]})
    with pytest.raises(UsageError, match="unknown design 'cluster' \\(one of census, "):
        Sample("cluster", frame)
    saved = Sample("census", frame).save(tmp_path / "s")
    header = json.loads((saved / HEADER).read_text())
    (saved / HEADER).write_text(json.dumps({**header, "design": "cluster"}))
    with pytest.raises(InputError, match=re.escape(f"{saved / HEADER}: unknown design")):
        Sample.load(saved)


def test_a_sample_carries_its_design_object() -> None:
    frame = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"],
                          "relevance": [1.0, np.nan], "stratum": ["1", "1"],
                          "inclusion": [0.5, 0.5]})
    sample = Sample("stratified", frame)
    assert sample.design is not None and type(sample.design) is type(STRATIFIED)
    assert sample.design.has_strata and repr(sample).startswith(
        "Sample(design='stratified', ")


def test_the_units_of_draws_are_the_engines_draws() -> None:
    """``Design.units`` of an importance sample gives the draws the estimators read
    (:func:`sampleval.estimation.engine.views.topic_draws`), in order, with Q."""
    runs = [Run.from_frame(pd.DataFrame({
        "query_id": "1", "doc_id": [f"d{i}" for i in rng.permutation(30)],
        "score": np.arange(30, 0, -1.0)}), f"r{k}")
        for k, rng in enumerate(np.random.default_rng(s) for s in range(3))]
    from sampleval.core.qrels import Qrels

    qrels = Qrels.from_frame(pd.DataFrame({"query_id": "1", "doc_id": [f"d{i}" for i in
                                                                        range(30)],
                                           "relevance": np.arange(30) % 2}))
    pool = Pool.from_runs(runs)
    sample = simulate(METHODS["importance"](pool, Budget(count=12),
                                            np.random.default_rng(2)),
                      qrels_oracle(qrels)).sample()
    ts = sample.topic("1")
    units = sample.design.units(sample, ts)
    index, probs = topic_draws(sample, TopicView(pool["1"], ts, np.zeros((3, 0))))
    assert units.kind == "draws"
    np.testing.assert_array_equal(units.index, index)
    np.testing.assert_array_equal(units.probability, probs)


@pytest.mark.parametrize("design", designs(), ids=str)
def test_inclusion_is_known_where_the_engine_computes_it(design: Design) -> None:
    """``inclusion_known`` is what the prediction-powered family's ``has_inclusion`` decides
    by name today, for a sample with and without the rounds' tables."""
    from sampleval.estimation.engine.units import has_inclusion

    frame = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1.0],
                          "stratum": ["1"], "inclusion": [1.0]})
    bare = Sample(design, frame)
    assert design.inclusion_known(bare) == (has_inclusion(bare)
                                                 and design.is_probability_design)
    if design.has_draws:
        tables = Sample(design, frame, rounds=pd.DataFrame(columns=["query_id", "round",
                                                                    "size"]),
                        round_probs=pd.DataFrame(columns=["query_id", "round", "doc_id",
                                                          "probability"]))
        assert design.inclusion_known(tables) == has_inclusion(tables)


def test_methods_lists_designs_and_capabilities(cli: Callable[..., CliResult]) -> None:
    tsv = cli("methods", "-f", "tsv")
    assert tsv.code == 0, tsv.stderr
    lines = [line.split("\t") for line in tsv.stdout.splitlines()]
    assert lines[0] == ["method", "design", *CAPABILITIES, "families"]
    for row in lines[1:]:
        cls = METHODS[row[0]]
        assert row[1] == cls.design.name
        assert row[2:-1] == [str(v).lower() for v in cls.design.capabilities().values()]
        assert row[-1] == ",".join(estimator_families(cls.design))
    assert [row[0] for row in lines[1:]] == METHODS.names()
    table = cli("methods")
    assert "      capabilities: is_probability_design, has_inclusion_probabilities" in (
        table.stdout)


def test_no_string_tests_of_the_design() -> None:
    """No code tests a design by its name: it asks the design's capabilities."""
    found = subprocess.run(
        ["grep", "-rnE", r"design (in \(|==|!=|not in)", str(ROOT / "src")],
        capture_output=True, text=True, check=False).stdout.splitlines()
    assert found == []


@pytest.mark.parametrize(("method", "params", "reach", "simple"), [
    ("active", {"uniform": 0.2}, True, False), ("active", {"uniform": 0.0}, False, False),
    ("uniform", {}, False, True), ("stratified", {}, False, False),
    ("importance", {}, False, False)])
def test_a_sample_records_its_methods_guarantees(
        method: str, params: dict[str, float], reach: bool, simple: bool, tmp_path: Path,
        judged_collection: tuple[list[Run], object, Pool, pd.DataFrame]) -> None:
    """The method writes what it guarantees into the sample (``meta["guarantees"]``), and
    the design answers from the sample, before and after a save."""
    _, qrels, pool, _ = judged_collection
    sample = simulate(METHODS[method](pool, Budget(count=12), np.random.default_rng(4),
                                      **params), qrels_oracle(qrels)).sample()
    assert sample.meta["guarantees"] == {"draws_reach_every_document": reach,
                                         "simple_random_sample": simple}
    sample.save(tmp_path / "s")
    for s in (sample, Sample.load(tmp_path / "s")):
        assert s.design.draws_reach_every_document(s) is reach
        assert s.design.simple_random_sample(s) is simple


def test_estimation_reads_the_guarantees_from_the_sample_not_the_method(
        judged_collection: tuple[list[Run], object, Pool, pd.DataFrame]) -> None:
    """A sample made by a method this installation does not have (a plugin elsewhere) keeps
    its defaults: estimation asks the sample, never ``selection.METHODS``."""
    from dataclasses import replace

    from sampleval.estimation.setup import default_estimates

    _, qrels, pool, _ = judged_collection
    sample = simulate(METHODS["active"](pool, Budget(count=12), np.random.default_rng(4)),
                      qrels_oracle(qrels)).sample()
    elsewhere = replace(sample, meta={**sample.meta, "method": "a-plugin-not-installed"})
    assert elsewhere.design.draws_reach_every_document(elsewhere)
    assert default_estimates(elsewhere) == default_estimates(sample)
    assert "P@10~hh" in default_estimates(elsewhere)


@pytest.mark.parametrize(("meta", "reach", "simple"), [
    ({"method": "active", "params": {"uniform": 0.2}}, True, False),
    ({"method": "active", "params": {"uniform": 0.0}}, False, False),
    ({"method": "active", "params": {}}, False, False),
    ({"method": "uniform", "params": {}}, False, True),
    ({"method": "uniform", "params": {}, "confident": {}}, False, False),
    ({"from": "qrels"}, False, False)])
def test_samples_written_before_the_guarantees_keep_their_defaults(
        meta: dict[str, object], reach: bool, simple: bool) -> None:
    """A sample that records no guarantees (written before them) gets the answers the
    built-in methods gave then."""
    from sampleval.core.design import WITH_REPLACEMENT, guaranteed

    frame = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1.0],
                          "stratum": ["1"], "inclusion": [1.0]})
    for design in (STRATIFIED, WITH_REPLACEMENT):
        sample = Sample(design, frame, meta=meta)
        assert guaranteed(sample, "draws_reach_every_document") is reach
        assert guaranteed(sample, "simple_random_sample") is simple
    assert not Sample(STRATIFIED, frame, meta=meta).design.draws_reach_every_document(
        Sample(STRATIFIED, frame, meta=meta))  # no draws, nothing to reach with


def test_judging_until_confident_in_committed_phases_is_no_simple_random_sample(
        judged_collection: tuple[list[Run], object, Pool, pd.DataFrame]) -> None:
    """The phase-committed sample of ``uniform`` records that it is not one simple random
    sample (its phases were chosen by the estimates), whatever the method guarantees."""
    from sampleval.judging.confident import ConfidentJudging, Target

    _, qrels, pool, _ = judged_collection
    judging = ConfidentJudging(METHODS["uniform"](pool, Budget(rate=0.6),
                                                  np.random.default_rng(3)),
                               Target("AP~ht", 0.05), start=6, batch=4, committed=True)
    oracle = qrels_oracle(qrels)
    while (batch := judging.next_batch()) is not None:
        judging.observe(batch[0], oracle(*batch))
    sample = judging.sample()
    assert "confident" in sample.meta
    assert sample.meta["guarantees"]["simple_random_sample"] is False
    assert not sample.design.simple_random_sample(sample)
