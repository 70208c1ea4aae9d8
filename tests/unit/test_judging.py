"""Judging outside sampleval: a sample started without qrels, labels imported from files
step by step, gives exactly the sample a simulation with the same labels gives, for every
selection method; the directory refuses estimates until every listed document is labelled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import CliResult
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.errors import UsageError
from sampleval.io import read_runs, write_qrels, write_run
from sampleval.io.samples import load_sample
from sampleval.judging.loop import TO_JUDGE, judge, read_to_judge, start
from sampleval.selection import METHODS, Budget, Selector, qrels_oracle, simulate

SEED = 4


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """Four runs of 20 documents on 4 topics, and the qrels of their depth-10 pool."""
    root = tmp_path_factory.mktemp("collection")
    made = make_collection(np.random.default_rng(SEED), n_topics=4, n_runs=4, n_docs=200,
                           depth=20, pool_depth=10, rel_rate=0.1)
    paths = []
    for name, frame in made.runs.items():
        paths.append(root / f"{name}.txt")
        write_run(Run.from_frame(frame, name), paths[-1])
    write_qrels(Qrels.from_frame(made.qrels), root / "qrels.txt")
    return paths, root / "qrels.txt"


def selector(method: str, paths: list[Path]) -> Selector:
    pool = Pool.from_runs(read_runs(paths), depth=10)
    return METHODS[method](pool, Budget(count=5), np.random.default_rng(SEED))


def tables(sample: Sample) -> dict[str, pd.DataFrame]:
    out = {}
    for name in ("frame", "draws", "rounds", "round_probs"):
        table = getattr(sample, name)
        if table is not None:
            out[name] = table.astype({c: str for c in ("query_id", "doc_id", "stratum")
                                      if c in table.columns}).reset_index(drop=True)
    return out


@pytest.mark.parametrize("method", sorted(n for n in METHODS.names()  # audit: machine labels
                                         if not METHODS[n].needs_predictions))
def test_outside_judging_gives_the_simulated_sample(method: str, files: tuple[list[Path], Path],
                                                    tmp_path: Path) -> None:
    paths, qrels_path = files
    qrels = Qrels.from_frame(pd.read_csv(qrels_path, sep=" ", header=None, dtype=str,
                                         names=["query_id", "iteration", "doc_id",
                                                "relevance"]))
    simulated = simulate(selector(method, paths), qrels_oracle(qrels)).sample()
    # the assessor's file: every listed document labelled as the oracle labels it (0 when
    # the qrels do not judge it), gathered step by step as a team would
    oracle = qrels_oracle(qrels)
    out = tmp_path / "s"
    progress = start(out, paths, selector(method, paths))
    labels: list[pd.DataFrame] = []
    for _ in range(100):
        if progress.complete:
            break
        listed = read_to_judge(out)
        assert listed["topic"].tolist() and not listed.duplicated(["topic", "docno"]).any()
        with pytest.raises(UsageError, match="proposed documents have no label yet"):
            load_sample(out)
        for topic, rows in listed.groupby("topic"):
            answer = oracle(str(topic), rows["docno"].tolist())
            labels.append(pd.DataFrame({"query_id": str(topic), "doc_id": list(answer),
                                        "relevance": list(answer.values())}))
        progress = judge(out, Qrels.from_frame(pd.concat(labels, ignore_index=True)))
    assert progress.complete and progress.pending == 0
    assert read_to_judge(out).empty
    got = tables(load_sample(out))
    want = tables(simulated)
    assert set(got) == set(want)
    for name, table in want.items():
        pd.testing.assert_frame_equal(got[name], table, check_dtype=False, obj=name)


def test_stop_ends_an_adaptive_sample(files: tuple[list[Path], Path], tmp_path: Path,
                                      cli: Callable[..., CliResult]) -> None:
    """The command line: listing, importing, a refused stop while documents lack labels, a
    stop once they have them, runs given again when their files moved, then estimates."""
    paths, qrels_path = files
    out = tmp_path / "s"
    started = cli("sample", "active", *paths, "--budget", "6", "--depth", "10", "--seed", "1",
                  "-o", out)
    assert started.code == 0, started.stderr
    assert f"listed in {out / TO_JUDGE}" in started.stdout
    listed = read_to_judge(out)
    assert set(listed.columns) == {"topic", "docno", "stratum", "inclusion"}
    assert ((listed["inclusion"] > 0) & (listed["inclusion"] <= 1)).all()
    partial = tmp_path / "partial.txt"
    first = listed.iloc[:1]
    partial.write_text(f"{first['topic'].iloc[0]} 0 {first['docno'].iloc[0]} 1\n")
    stop = cli("judge", out, partial, "--stop")
    assert stop.code == 2 and "lack a label" in stop.stderr
    assert read_to_judge(out).equals(listed)  # a refused step writes nothing
    moved = tmp_path / "moved"
    moved.mkdir()
    for path in paths:
        (moved / path.name).write_bytes(path.read_bytes())
    step = cli("judge", out, qrels_path, *(moved / p.name for p in paths))
    assert step.code == 0, step.stderr
    assert "labels imported" in step.stdout and "to judge next" in step.stdout
    finish = cli("judge", out, qrels_path, *(moved / p.name for p in paths), "--stop")
    assert finish.code == 0, finish.stderr
    assert "complete" in finish.stdout
    again = cli("judge", out, qrels_path)
    assert again.code == 2 and "complete" in again.stderr
    estimated = cli("estimate", out, *paths, "-f", "tsv")
    assert estimated.code == 0, estimated.stderr
    assert "AP~hh" in estimated.stdout  # the default AP of an active sample


def test_negative_labels_are_named_not_dropped(files: tuple[list[Path], Path], tmp_path: Path,
                                               cli: Callable[..., CliResult]) -> None:
    """Labels of -1 for listed documents (issue 27: a loop that writes -1 for "cannot judge"
    stalled on the same documents): one warning line names the file and its lines, the
    summary counts them, and the documents stay listed."""
    paths, _ = files
    out = tmp_path / "s"
    assert cli("sample", "stratified", *paths, "--budget", "4", "--depth", "10", "--seed",
               "1", "-o", out).code == 0
    listed = read_to_judge(out)
    labels = tmp_path / "labels.txt"
    lines = [f"{t} 0 {d} {-1 if i in (1, 3) else 0}"
             for i, (t, d) in enumerate(zip(listed["topic"], listed["docno"], strict=True))]
    labels.write_text("# made by a script\n" + "\n".join(lines) + "\n")
    step = cli("judge", out, labels)
    assert step.code == 0, step.stderr
    warned = [line for line in step.stderr.splitlines() if "outside the scale" in line]
    assert len(warned) == 1 and f"{labels}: lines 3, 5: label -1" in warned[0]
    assert "2 negative labels skipped" in step.stdout
    still = read_to_judge(out)
    assert set(still["docno"]) == {listed["docno"].iloc[1], listed["docno"].iloc[3]}
