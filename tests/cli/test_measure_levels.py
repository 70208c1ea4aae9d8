"""A measure with its own relevance level (``P(rel=2)@5``, ``AP(rel=2)``) through ``estimate``,
``compare`` and the library (issue 28): each estimator at its own level, the command's
(``-l``, ``level=``) for the others, as ``simulate`` groups its targets by level. Before,
``estimate -m 'P(rel=2)@5'`` was refused with a line pointing to ``-l``, so two levels could
not be estimated in one command."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_everyday import POOL_DEPTH, collection, drawn, means

from conftest import CliResult
from sampleval.core.design import as_design
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.errors import UsageError
from sampleval.estimation.compare import compare
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.estimation.setup import estimator_of
from sampleval.estimation.spec import EstimateSpec, parse_estimate
from sampleval.io import write_run
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate
from sampleval.simulation.targets import parse_target

LEVELLED = {"P@5": "P@5~ht", "P(rel=2)@5": "P(rel=2)@5~ht", "AP(rel=2)": "AP(rel=2)~ht",
            "AP": "AP~ht", "R(rel=2)@5": "R(rel=2)@5~ht", "Rprec(rel=2)": "Rprec(rel=2)~ht"}
"""Plain measures, mixed levels, and the estimator each names on a stratified sample."""


def _census() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The estimates of :data:`LEVELLED` from a census of the pool and the exact measures."""
    runs, qrels = collection()
    selector = METHODS["stratified"](Pool.from_runs(runs, depth=POOL_DEPTH), Budget(rate=1.0),
                                     np.random.default_rng(5))
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    judged = sample.frame[["query_id", "doc_id", "relevance"]]
    exact = evaluate(Qrels.from_frame(judged), runs, list(LEVELLED), depth=POOL_DEPTH)
    return estimate(sample, runs, list(LEVELLED)), exact


def test_a_census_gives_each_measure_at_its_own_level_exactly() -> None:
    """Mixed levels in one call; each row named as ir_measures names the measure, with its
    estimator; the grades make level 2 differ from level 1 (else the test could not fail)."""
    estimated, exact = _census()
    assert list(dict.fromkeys(estimated["measure"])) == list(LEVELLED.values())
    for plain, name in LEVELLED.items():
        got = estimated[estimated["measure"] == name].set_index(["run", "query_id"])["value"]
        want = exact[exact["measure"] == plain].set_index(["run", "query_id"])["value"]
        assert len(got) == len(want) > 0, plain
        np.testing.assert_allclose(*got.astype(float).align(want.astype(float), join="inner"),
                                   rtol=0, atol=1e-12, err_msg=plain)
    p5 = exact[exact["measure"] == "P@5"]["value"].to_numpy()
    assert not np.allclose(p5, exact[exact["measure"] == "P(rel=2)@5"]["value"].to_numpy())


def test_the_measures_own_level_wins_over_the_commands() -> None:
    """``P(rel=2)@5`` is ``P@5`` at level 2 whatever ``level=`` says; ``P@5`` takes the
    command's level; ``P(rel=1)@5`` stays at level 1 under ``level=2``."""
    runs, _ = collection()
    sample = drawn("stratified")
    columns = ["run", "query_id", "value", "lo", "hi"]
    own = estimate(sample, runs, ["P(rel=2)@5", "P(rel=1)@5"], level=2)
    at_two = estimate(sample, runs, ["P@5"], level=2)
    at_one = estimate(sample, runs, ["P@5"])
    for name, want in (("P(rel=2)@5~ht", at_two), ("P(rel=1)@5~ht", at_one)):
        got = own[own["measure"] == name][columns].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want[columns].reset_index(drop=True))
    assert set(own["estimator"]) == {"P(rel=2)@5~ht", "P(rel=1)@5~ht"}


def test_compare_takes_a_measure_with_its_own_level() -> None:
    """The same pairs, differences and intervals as ``level=2`` with the plain measure; the
    means are ``estimate``'s."""
    runs, _ = collection()
    sample = drawn("stratified")
    own = compare(sample, runs, "P(rel=2)@5", correction="none")
    plain = compare(sample, runs, "P@5", level=2, correction="none")
    assert set(own["measure"]) == {"P(rel=2)@5~ht"}
    numbers = ["mean_a", "mean_b", "diff", "lo", "hi", "p"]
    pd.testing.assert_frame_equal(own[numbers], plain[numbers])
    mean = means(estimate(sample, runs, ["P(rel=2)@5"]))
    assert dict(zip(own["run_a"], own["mean_a"], strict=True)).items() <= mean.items()


def test_estimate_and_compare_commands_take_mixed_levels(
        tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    runs, _ = collection()
    drawn("stratified").save(tmp_path / "sample")
    paths = []
    for run in runs:
        paths.append(str(tmp_path / f"{run.name}.txt"))
        write_run(run, paths[-1])
    out = cli("estimate", str(tmp_path / "sample"), *paths, "-m", "P@5,P(rel=2)@5", "-f", "tsv")
    assert out.code == 0, out.stderr
    rows = pd.read_csv(io.StringIO(out.stdout), sep="\t", dtype={"topic": str})
    assert set(rows["measure"]) == {"P@5~ht", "P(rel=2)@5~ht"}
    want = estimate(drawn("stratified"), runs, ["P@5", "P(rel=2)@5"])
    mean = rows[rows["topic"] == MEAN_TOPIC].set_index(["run", "measure"])["value"]
    expected = want[want["query_id"] == MEAN_TOPIC].set_index(["run", "measure"])["value"]
    np.testing.assert_allclose(*mean.astype(float).align(expected.astype(float)), atol=1e-9)
    compared = cli("compare", str(tmp_path / "sample"), *paths, "-m", "P(rel=2)@5", "-f", "tsv")
    assert compared.code == 0, compared.stderr
    assert "\tP(rel=2)@5~ht\t" in compared.stdout


@pytest.mark.parametrize("name", ["P(rel=2)@5~ht", "AP(rel=2)~ht(variance=linear)",
                                  "xinfAP(rel=2,variance=appendix)", "iP(rel=3)@10",
                                  "NumRel(rel=2)~ht", "AP@10~ht(rel=2)"])
def test_an_estimator_with_a_level_parses_back_from_its_name(name: str) -> None:
    spec = parse_estimate(name)
    assert spec.level is not None and parse_estimate(spec.name) == spec
    assert parse_estimate(spec.full_name) == spec


@pytest.mark.parametrize(("name", "error"), [
    ("nDCG(rel=2)@10~ht", "takes no relevance level"),
    ("P(rel=2)@5~ht(rel=3)", "once"),
    ("AP(rel=two)~ht", "integer level"),
])
def test_a_level_where_none_is_declared_is_refused(name: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        parse_estimate(name)


def test_nDCG_declares_no_level_and_says_so() -> None:
    with pytest.raises(UsageError, match=r"unknown parameter 'rel'.*gains"):
        estimator_of("nDCG(rel=2)@10", as_design("stratified"), levels=True)


def test_a_caller_without_levels_refuses_them() -> None:
    """Judging (a campaign's target) computes at one level: it refuses, as before."""
    assert estimator_of("P(rel=2)@5", as_design("stratified"), levels=True) == EstimateSpec(
        "ht", "P", 5, level=2)
    with pytest.raises(UsageError, match="relevance level"):
        estimator_of("P(rel=2)@5~ht", as_design("stratified"))


def test_simulate_reads_an_estimators_level_as_its_truths() -> None:
    """``--measures 'P(rel=2)@5~ht'``: its truth is P(rel=2)@5, at level 2 (before, P@5 at
    level 1 while the estimator took level 1 too)."""
    target = parse_target("P(rel=2)@5~ht")
    assert str(target.exact) == "P(rel=2)@5" and target.level == 2
