"""``sampleval sample_eval`` against NIST's own ``sample_eval.pl``, byte for byte.

Three sample designs drawn (seeded) from the depth-k pool of 20 TREC-COVID round-5 runs and
judged from the round-5 qrels, each compared on two runs (one that was pooled, one that
was not); and a hand-made case that exercises the script's quirks (leading zeros of run
topics, repeated documents, short runs, topics missing on either side, fractional grades, a
stratum with nothing sampled, score ties). The script runs with ``perl``: without it (or
without ../shared) the tests skip with a message, and in CI (``CI`` set) they fail.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import SHARED_DATA, need
from sampleval.compat.sample_eval import sample_eval
from sampleval.core.pool import Pool
from sampleval.io import read_qrels, read_runs
from sampleval.io.samples import write_sample_qrels

SCRIPT = SHARED_DATA.parent / "reference" / "sample_eval.pl"
SAMPLEVAL = Path(sys.executable).parent / "sampleval"
POOLED_RUNS = 20
COMPARED = (0, 110)  # run positions (sorted by file name): one pooled, one not

# name: (pool depth, [(deepest best rank of the stratum, stratum label, sampling rate)])
DESIGNS = {
    "nist-3-strata": (100, [(10, "1", 1.0), (30, "2", 0.3), (100, "3", 0.1)]),
    "uniform-infAP": (50, [(50, "1", 0.2)]),
    "5-strata-text-one-empty": (200, [(5, "top", 1.0), (20, "b", 0.5), (50, "c", 0.2),
                                       (120, "d", 0.05), (200, "e", 0.0)]),
}


def needed(path: Path, what: str) -> Path:
    """``path`` if it exists; else skip (fail in CI) naming ``what``."""
    need(path.exists(), f"{what} missing: {path}")
    return path


@pytest.fixture(scope="module")
def script() -> Path:
    """NIST's sample_eval.pl, and perl to run it."""
    if shutil.which("perl") is None:
        message = "perl not found: cannot run NIST's sample_eval.pl"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return needed(SCRIPT, "NIST's sample_eval.pl")


def perl(script: Path, qrels: Path, run: Path) -> str:
    result = subprocess.run(["perl", str(script), "-q", str(qrels), str(run)],
                            capture_output=True, check=True, timeout=120)
    return result.stdout.decode()


def draw(pool: Pool, strata: list[tuple[int, str, float]], seed: int) -> pd.DataFrame:
    """Sampled qrels of ``pool``: strata by best rank, a simple random sample of each at its
    rate, labels from the pool's (unjudged: 0), the rest -1."""
    rng = np.random.default_rng(seed)
    parts = []
    for tp in pool:
        best = tp.best_rank()
        stratum = np.empty(tp.size, dtype=object)
        relevance = np.full(tp.size, -1.0)
        labels = np.nan_to_num(tp.labels, nan=0.0)
        low = 0
        for high, label, rate in strata:
            members = np.flatnonzero((best > low) & (best <= high))
            stratum[members] = label
            chosen = rng.choice(members, size=round(rate * len(members)), replace=False)
            relevance[chosen] = labels[chosen]
            low = high
        parts.append(pd.DataFrame({"query_id": tp.topic, "iteration": "0",
                                   "doc_id": pool.docnos[tp.doc_ids], "stratum": stratum,
                                   "relevance": relevance}))
    return pd.concat(parts)


@pytest.fixture(scope="module")
def round5(covid: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each design's sampled qrels and the compared runs, as plain files."""
    out = tmp_path_factory.mktemp("sample_eval")
    paths = sorted((covid / "round5" / "runs").glob("*.gz"))
    qrels = read_qrels(covid / "qrels" / "qrels.covid-round5.txt")
    runs = read_runs(paths[:POOLED_RUNS])
    files = {}
    for seed, (name, (depth, strata)) in enumerate(DESIGNS.items()):
        pool = Pool.from_runs(runs, depth=depth, qrels=qrels)
        files[name] = out / f"{name}.qrels"
        write_sample_qrels(draw(pool, strata, seed), files[name])
    for i in COMPARED:
        files[f"run{i}"] = out / f"run{i}.txt"
        files[f"run{i}"].write_bytes(gzip.decompress(paths[i].read_bytes()))
    return files


@pytest.mark.shared
@pytest.mark.parametrize("design", list(DESIGNS))
def test_byte_identical_on_trec_covid(script: Path, round5: dict[str, Path],
                                      design: str) -> None:
    """Every line of ``-q`` output (per topic and over all) equals the script's."""
    for i in COMPARED:
        expected = perl(script, round5[design], round5[f"run{i}"])
        assert expected.count("\n") > 400  # 50 topics x 8 lines, then the means
        assert sample_eval(round5[design], round5[f"run{i}"], per_topic=True) == expected, (
            design, i)


def test_means_only_through_the_command(script: Path, tmp_path: Path) -> None:
    """Without -q the command prints the script's 19 summary lines, from '-' too."""
    qrels, run = quirky_files(tmp_path)
    expected = subprocess.run(["perl", str(script), str(qrels), str(run)],
                              capture_output=True, check=True).stdout.decode()
    got = subprocess.run([str(SAMPLEVAL), "sample_eval", str(qrels), "-"],
                         input=run.read_bytes(), capture_output=True, check=True)
    assert got.stdout.decode() == expected
    assert len(expected.splitlines()) == 19


def quirky_files(root: Path) -> tuple[Path, Path]:
    """Sampled qrels and a run that exercise what the script does besides its formulas."""
    qrels = root / "quirky.qrels"
    qrels.write_text("\n".join([
        # topic 1: strata a (all sampled), b (half), c (nothing sampled)
        "1 0 d1 a 2", "1 0 d2 a 0", "1 0 d3 a 1", "1 0 d4 b 1", "1 0 d5 b -1",
        "1 0 d6 b 0", "1 0 d7 b -1", "1 0 d8 c -1", "1 0 d9 c -1",
        # topic 2: a fractional grade (relevant: rel > 0), grades 1 and 2
        "2 0 e1 x 0.5", "2 0 e2 x 2", "2 0 e3 y -1", "2 0 e4 y 1",
        # topic 03 in the qrels: the run's 03 becomes 3 and does not match it
        "03 0 f1 x 1",
        # topic 9: no run retrieves it (counts in inum_rel over all)
        "9 0 g1 x 1", "9 0 g2 x 0",
    ]) + "\n")
    run = root / "quirky.run"
    lines = [
        # topic 1 written as 001: leading zeros go; d2 repeated (last line wins, both count)
        "001 Q0 d2 1 5.0 t", "001 Q0 d1 2 4.0 t", "001 Q0 x1 3 4.0 t", "001 Q0 d4 4 3.5 t",
        "001 Q0 d5 5 3.0 t", "001 Q0 d8 6 2.0 t", "001 Q0 d2 7 1.0 t", "001 Q0 d3 8 0.5 t",
        "001 Q0 d9 9 0.4 t",
        # topic 2: ties broken by docno descending
        "2 Q0 e1 1 1.0 t", "2 Q0 e2 2 1.0 t", "2 Q0 e3 3 1.0 t", "2 Q0 zz 4 0.9 t",
        "03 Q0 f1 1 1.0 t",
        # topic 7: not in the qrels
        "7 Q0 h1 1 1.0 t",
    ]
    lines += [f"2 Q0 n{k:03d} {k + 5} {0.5 - k / 1000} t" for k in range(60)]  # past 50
    run.write_text("\n".join(lines) + "\n")
    return qrels, run


def test_quirks_byte_identical(script: Path, tmp_path: Path) -> None:
    """The hand-made case prints exactly what the script prints, per topic and over all."""
    qrels, run = quirky_files(tmp_path)
    expected = perl(script, qrels, run)
    assert "num_ret\t\t1\t        9" in expected  # the repeated line counts
    assert sample_eval(qrels, run, per_topic=True) == expected


def test_no_common_topic_is_one_error_line(tmp_path: Path) -> None:
    """Where the script divides by zero, the command says why in one line (exit 2)."""
    qrels, run = tmp_path / "q", tmp_path / "r"
    qrels.write_text("5 0 d1 a 1\n")
    run.write_text("6 Q0 d1 1 1.0 t\n")
    got = subprocess.run([str(SAMPLEVAL), "sample_eval", str(qrels), str(run)],
                         capture_output=True, text=True)
    assert got.returncode == 2
    assert got.stderr.startswith("sampleval: error: ") and len(got.stderr.splitlines()) == 1
    assert "no topic in common" in got.stderr
