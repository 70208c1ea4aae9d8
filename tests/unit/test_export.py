"""From a sample back to files (issue 10): ``sampleval export`` in each format reads back as
the same judgments and estimates, ``evaluate`` reads a deterministic sample directory as its
qrels, and ``-h``, ``--version`` and ``sampleval methods`` (piped) work."""

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
from sampleval.estimation.estimates import estimate
from sampleval.io import read_qrels, write_run
from sampleval.io.samples import load_sample
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate


@pytest.fixture(scope="module")
def collection() -> tuple[list[Run], Qrels]:
    made = make_collection(np.random.default_rng(4), n_topics=6, n_runs=4, n_docs=200,
                           depth=20, pool_depth=10, rel_rate=0.1)
    return ([Run.from_frame(frame, name) for name, frame in made.runs.items()],
            Qrels.from_frame(made.qrels))


def drawn(runs: list[Run], qrels: Qrels, method: str, **params: object) -> Sample:
    selector = METHODS[method](Pool.from_runs(runs, depth=10), Budget(rate=0.4),
                               np.random.default_rng(2), **params)
    return simulate(selector, qrels_oracle(qrels)).sample()


def test_exports_read_back_as_the_same_sample(collection: tuple[list[Run], Qrels],
                                              tmp_path: Path,
                                              cli: Callable[..., CliResult]) -> None:
    """A stratified sample exported as NIST sampled qrels estimates exactly as the directory
    does; as qrels, judged documents keep their grade and the rest of the frame is -1; as
    prels, the judged documents keep their inclusion probabilities."""
    runs, qrels = collection
    sample = drawn(runs, qrels, "strata", strata="1-3:1,4-:0.3")
    sample.save(tmp_path / "s")
    for fmt in ("qrels", "sample-qrels", "prels"):
        done = cli("export", tmp_path / "s", "-o", tmp_path / f"out.{fmt}", "--as", fmt)
        assert done.code == 0, done.stderr
    names = ["xinfAP", "P@5~ht", "AP~ht"]
    pd.testing.assert_frame_equal(estimate(load_sample(tmp_path / "out.sample-qrels"), runs,
                                           names, depth=10),
                                  estimate(sample, runs, names))
    exported = read_qrels(tmp_path / "out.qrels").frame.set_index(["query_id", "doc_id"])
    frame = sample.frame.set_index(["query_id", "doc_id"])
    assert exported.index.sort_values().equals(frame.index.sort_values())
    assert (exported["relevance"].reindex(frame.index).to_numpy()
            == frame["relevance"].fillna(-1).to_numpy()).all()
    prels = load_sample(tmp_path / "out.prels", "prels").frame.set_index(["query_id", "doc_id"])
    judged = sample.judged().set_index(["query_id", "doc_id"])
    assert prels["inclusion"].reindex(judged.index).to_numpy() == pytest.approx(
        judged["inclusion"].to_numpy(), rel=1e-12)


def test_evaluate_reads_a_deterministic_sample(collection: tuple[list[Run], Qrels],
                                               tmp_path: Path,
                                               cli: Callable[..., CliResult]) -> None:
    """A depth-k sample's directory given to evaluate as its qrels measures as its judgments
    exported as qrels do."""
    runs, qrels = collection
    drawn(runs, qrels, "depth-k", k=5).save(tmp_path / "pooled")
    for run in runs:
        write_run(run, tmp_path / f"{run.name}.txt")
    files = [tmp_path / f"{r.name}.txt" for r in runs]
    assert cli("export", tmp_path / "pooled", "-o", tmp_path / "q.txt").code == 0
    direct = cli("evaluate", tmp_path / "pooled", *files, "-f", "tsv", "-m", "AP,P@5")
    assert direct.code == 0, direct.stderr
    assert direct.stdout == cli("evaluate", tmp_path / "q.txt", *files, "-f", "tsv",
                                "-m", "AP,P@5").stdout


def test_short_help_version_and_piped_methods(cli: Callable[..., CliResult]) -> None:
    """-h and --version exit 0; 'sampleval methods' piped keeps to 100 columns and names
    each design's default estimates."""
    for args, says in ((["-h"], "usage: sampleval"), (["--version"], "sampleval "),
                       (["methods"], "estimated by default: AP~ht, nDCG@10~ht, P@10~ht, "
                                     "NumRel~ht")):
        got = cli(*args)
        assert got.code == 0 and says in got.stdout, got.stderr
    assert max(len(line) for line in got.stdout.splitlines()) <= 100
