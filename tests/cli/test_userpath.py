"""A new user's everyday path, walked from the README: the defects found on the way, each
with the test that failed before its fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_everyday import POOL_DEPTH, collection, drawn

from conftest import CliResult
from sampleval.core.design import as_design
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.estimation.defaults import CUTOFF, DEFAULTS
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.estimation.setup import estimator_of, simple_random
from sampleval.io import write_run
from sampleval.judging.confident import Target
from sampleval.measures.evaluation import evaluate
from sampleval.measures.names import parse_measure
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate


def _outside(name: str = "elsewhere") -> Run:
    """A run of every topic of the collection whose documents no run pooled (a run of
    another collection, or of another round's documents)."""
    runs, _ = collection()
    rows = [(topic, f"other-{topic}-{k}", float(20 - k))
            for topic in runs[0].topics for k in range(12)]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return Run.from_frame(frame, name)


def test_a_run_with_nothing_in_the_frame_is_estimated_not_a_traceback() -> None:
    """A run none of whose documents lies in the sample's frame, estimated alone: every
    estimate 0 with frame share 0 (documents outside the frame count as not relevant).
    Before, AP~ht's default (few=completed) failed with a numpy broadcasting error: the
    completion's rank table was as wide as the deepest frame document any run retrieved (none
    here), narrower than the runs' rankings."""
    sample = drawn("stratified")
    rows = estimate(sample, [_outside()], ["AP", "P@5", "nDCG@5"])
    mean = rows[rows["query_id"] == MEAN_TOPIC]
    assert len(mean) == 3
    assert (mean["value"].astype(float) == 0).all()
    assert (mean["frame_share"].astype(float) == 0).all()


def test_the_same_from_the_command_line(tmp_path: Path,
                                        cli: Callable[..., CliResult]) -> None:
    sample_dir = tmp_path / "sample"
    drawn("stratified").save(sample_dir)
    path = tmp_path / "elsewhere.txt"
    write_run(_outside(), str(path))
    out = cli("estimate", str(sample_dir), str(path), "-f", "tsv")
    assert "Traceback" not in out.stderr
    assert "elsewhere\tall\tAP~ht\t0.0" in out.stdout


@pytest.mark.parametrize("target", ["P(rel=2)@5:0.05", "AP(rel=2):0.02",
                                    "nDCG(gains={1:1,2:5})@10:0.02"])
def test_a_target_with_its_own_relevance_level_is_refused_not_read_at_level_1(
        target: str) -> None:
    """``--target P(rel=2)@5:0.05`` (sample, campaign create, plan, simulate's
    ``target=``): judging has no per-measure relevance level, so the target is refused in one
    line, as ``estimate -m`` refuses the measure. Before, ``(rel=2)`` and the gains were
    dropped and judging stopped on P@5 at level 1, a target nobody asked for."""
    with pytest.raises(UsageError, match="relevance level"):
        Target.parse(target).spec("stratified")


def test_a_plain_target_resolves_as_estimate_resolves_it() -> None:
    for name in ("AP", "P@5", "nDCG@10", "map", "P_10", "R@20", "xinfAP", "AP~ht"):
        assert Target.parse(f"{name}:0.05").spec("stratified") == estimator_of(
            name, as_design("stratified"))


def test_every_plain_measure_of_the_defaults_table_is_taken() -> None:
    """``DCG`` and ``DCG@k`` are rows of the defaults table (``sampleval methods
    --defaults``), so ``estimate -m DCG@5`` means ``DCG@5~ht`` on a stratified sample, as
    ``-m P@5`` means ``P@5~ht``. Before, both were refused: ``DCG@5`` as an "unknown
    estimated measure (did you mean infNDCG?)", ``DCG`` as having no estimator."""
    runs, _ = collection()
    sample = drawn("stratified")
    plain = estimate(sample, runs, ["DCG", "DCG@5", "P@5"])
    named = estimate(sample, runs, ["DCG~ht", "DCG@5~ht", "P@5~ht"])
    pd.testing.assert_frame_equal(plain, named)


def test_an_unknown_measure_names_the_plain_measures_too() -> None:
    runs, _ = collection()
    with pytest.raises(UsageError, match="methods --defaults"):
        estimate(drawn("stratified"), runs, ["foo"])


def test_judgments_of_another_pool_are_named(tmp_path: Path,
                                             cli: Callable[..., CliResult]) -> None:
    """``sampleval judge SAMPLE FILE`` where no line of FILE is of a listed document (the
    labels of another sample, another round's qrels): one warning naming the file, as well
    as the count; before, only "0 labels imported (N other judgments left aside)"."""
    runs, qrels = collection()
    paths = []
    for run in runs:
        paths.append(tmp_path / f"{run.name}.txt")
        write_run(run, str(paths[-1]))
    sample_dir = tmp_path / "s"
    out = cli("sample", "stratified", *paths, "--budget", "4", "--depth", "5", "--seed", "1",
              "-o", sample_dir)
    assert out.code == 0, out.stderr
    other = tmp_path / "other-qrels.txt"
    frame = qrels.to_frame()
    other.write_text("".join(f"{q} 0 other-{d} {int(r)}\n" for q, d, r in zip(
        frame["query_id"], frame["doc_id"], frame["relevance"], strict=True)))
    out = cli("judge", sample_dir, other)
    assert out.code == 0, out.stderr
    assert "0 labels imported" in out.stdout
    assert f"{other}: none of its" in out.stderr and "another" in out.stderr


NO_EXACT = {"DCG@k": "evaluate has no DCG@k (nor has trec_eval)"}
"""The plain measures of the defaults table that have no exact measure to compare with."""


def census_measures() -> dict[str, str]:
    """Each plain measure of the defaults table's stratified column (a census at rate 1 is
    a stratified sample), at cutoff 5, and its exact measure (``evaluate``'s name). Read
    from the table, so that a measure added to it is checked too: the list was written by
    hand before and left NumRelRet out, whose default then kept sample_eval's smoothing."""
    out = {}
    for key in DEFAULTS["stratified"]:
        if key not in NO_EXACT:
            plain = key.replace(CUTOFF, "@5")
            out[plain] = str(parse_measure(plain))
    return out


@pytest.mark.parametrize("method", ["stratified", "uniform", "strata"])
def test_a_census_estimates_every_plain_measure_exactly(method: str) -> None:
    """Every pooled document judged (rate 1): each plain measure, by the estimator the
    defaults table gives the design, is the exact measure of the runs cut at the pool depth
    against the pool's judgments, per topic, to rounding."""
    runs, qrels = collection()
    selector = METHODS[method](Pool.from_runs(runs, depth=POOL_DEPTH), Budget(rate=1.0),
                               np.random.default_rng(5))
    sample = simulate(selector, qrels_oracle(qrels)).sample()
    judged = sample.frame[sample.frame["relevance"].notna()]
    assert len(judged) == len(sample.frame)
    pooled = Qrels.from_frame(judged[["query_id", "doc_id", "relevance"]])
    measures = census_measures()
    assert "NumRelRet" in measures and "AP" in measures
    estimated = estimate(sample, runs, list(measures))
    exact = evaluate(pooled, runs, list(measures.values()), depth=POOL_DEPTH)
    for plain, name in measures.items():
        spec = estimator_of(plain, sample.design, simple_random=simple_random(sample))
        got = estimated[estimated["measure"] == spec.name].set_index(["run", "query_id"])
        want = exact[exact["measure"] == name].set_index(["run", "query_id"])
        assert len(got) == len(want) > 0, plain
        both = got["value"].astype(float).align(want["value"].astype(float), join="inner")
        assert len(both[0]) == len(want), plain
        np.testing.assert_allclose(*both, rtol=0, atol=1e-12, err_msg=f"{method} {plain}")


def test_a_topic_without_a_judgment_is_left_out_not_scored_0(
        tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """NIST sampled qrels in which one topic has no sampled document (every line rel -1):
    that topic has no estimate, so it is left out of every run's mean with one warning
    naming it, as the campaign's live leaderboard leaves out the topics nobody judged yet.
    Before, every run scored 0 +- 0 there (P@5 with a zero-width interval) and the means
    fell, with only "2% of the frame was unreachable" said."""
    runs, _ = collection()
    sample_dir = tmp_path / "s"
    drawn("stratified").save(sample_dir)
    exported = tmp_path / "sampled.txt"
    assert cli("export", sample_dir, "-o", exported, "--as", "sample-qrels").code == 0
    lines = exported.read_text().splitlines()
    topic = lines[0].split()[0]
    unjudged = [" ".join([*line.split()[:4], "-1"]) if line.split()[0] == topic else line
                for line in lines]
    (tmp_path / "unjudged.txt").write_text("\n".join(unjudged) + "\n")
    (tmp_path / "without.txt").write_text(
        "\n".join(line for line in lines if line.split()[0] != topic) + "\n")
    paths = []
    for run in runs:
        paths.append(tmp_path / f"{run.name}.txt")
        write_run(run, str(paths[-1]))
    args = ("-M", str(POOL_DEPTH), "-m", "AP,P@5", "-q", "-f", "tsv")
    got = cli("estimate", tmp_path / "unjudged.txt", *paths, *args)
    want = cli("estimate", tmp_path / "without.txt", *paths, *args)
    assert got.code == want.code == 0, got.stderr + want.stderr
    assert got.stdout == want.stdout
    assert f"topic {topic}" in got.stderr and "left out" in got.stderr
    pairs = cli("compare", tmp_path / "unjudged.txt", *paths, "-M", str(POOL_DEPTH), "-m",
                "AP", "-f", "tsv")
    assert pairs.code == 0, pairs.stderr
    assert f"\t{len(runs[0].topics) - 1}\t" in pairs.stdout.splitlines()[1]  # topics paired
