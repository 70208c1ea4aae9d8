"""Differential tests: ``sampleval trec_eval`` against NIST's trec_eval 10.0 itself, byte for
byte, on random small collections and on TREC-COVID round 5, for every measure and option.

The C program is built from usnistgov/trec_eval (commit f425365, version 10.0) by
``scripts/build_trec_eval.sh`` (``make trec_eval``; ``make test`` tries it) into
``~/.cache/sampleval``; ``SAMPLEVAL_TREC_EVAL`` may name another build. Without it these
tests skip, saying so. Where trec_eval 10 and sampleval differ on purpose (docs/guide/trec_eval.md,
"Differences"), the test checks the documented difference instead of skipping the case:

- a topic of the judgments the run lacks, without ``-c``: trec_eval 10.0 exits 4; sampleval
  skips the topic, so its output equals trec_eval's on the judgments of the run's topics;
- ``rbp`` reads two variables trec_eval never initialises (``m_rbp.c``: ``min``, ``max``), so
  its value depends on what an earlier measure left on the stack: with ``-m all_trec`` (alone
  or with -J, -l, -M, -c) sampleval matches it; with ``yaap``, ``dcg`` or ``ideal_dcg`` added,
  trec_eval's first topic's rbp changes, so rbp is not asked for with those;
- ``prefs_avgjg_Rnonrel`` on negative levels (``-R qrels_prefs`` on qrels with -1 grades):
  trec_eval reads out of bounds, so those cases read qrels without negative grades.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from sampleval.compat.trec_eval import run as sampleval_trec_eval
from sampleval.errors import InputError, UsageError

CACHE = Path(os.environ.get("SAMPLEVAL_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sampleval")
BUILT = CACHE / "trec_eval-10.0" / "trec_eval"  # where scripts/build_trec_eval.sh puts it


@pytest.fixture(scope="module")
def binary() -> str:
    path = Path(os.environ.get("SAMPLEVAL_TREC_EVAL", BUILT))
    if not os.access(path, os.X_OK):
        pytest.skip(f"trec_eval binary not built ({path}): run 'make trec_eval' "
                    "(scripts/build_trec_eval.sh; TREC_EVAL_SRC=<trec_eval source or clone>)")
    return str(path)


def theirs(binary: str, args: Sequence[str]) -> tuple[int, str]:
    done = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout


def ours(args: Sequence[str]) -> tuple[int, str]:
    out = io.StringIO()
    try:
        sampleval_trec_eval(list(args), out)
    except (InputError, UsageError):
        return 2, ""
    return 0, out.getvalue()


def same(binary: str, args: Sequence[str]) -> str:
    """Both outputs, asserted identical and successful; returns the output."""
    code, expected = theirs(binary, args)
    assert code == 0, f"trec_eval {' '.join(args)} exited {code}"
    ours_code, got = ours(args)
    assert ours_code == 0
    assert got == expected, f"sampleval trec_eval {' '.join(args)}"
    return got


# -- random small collections ------------------------------------------------------------------

def collection(seed: int, where: Path) -> dict[str, Path]:
    """A random collection: qrels (grades -1..4, ties of documents across topics), a run with
    tied scores that misses some judged topics and retrieves an unjudged one, preferences
    with several subgroups per group, qrels of judgment groups, z-scores."""
    rng = np.random.default_rng(seed)
    topics = [f"t{i}" for i in range(int(rng.integers(2, 7)))]
    docs = [f"D{j:03d}" for j in range(40)]
    qrels, prefs, groups, run = [], [], [], []
    for topic in topics:
        pool = list(rng.choice(docs, int(rng.integers(3, 26)), replace=False))
        for doc in pool:
            qrels.append(f"{topic} {rng.integers(0, 2)} {doc} {rng.choice([-1, 0, 0, 1, 2, 3, 4])}")
        for g in range(int(rng.integers(1, 5))):
            hidden = {d: int(rng.choice([0, 0, 1, 2, 3, 5])) for d in pool}
            subgroups = int(rng.choice([1, 1, 2, 3]))
            for s in range(subgroups):
                sub = pool if subgroups == 1 else list(
                    rng.choice(pool, int(rng.integers(2, len(pool) + 1)), replace=False))
                prefs += [f"{topic} g{g} s{s} {d} {hidden[d]}" for d in sub]
            judged = rng.choice(pool, int(rng.integers(1, len(pool) + 1)), replace=False)
            groups += [f"{topic} j{g} {d} {rng.choice([-1, 0, 0, 1, 2, 3])}" for d in judged]
        if rng.random() < 0.8:
            retrieved = rng.choice(docs, int(rng.integers(1, 36)), replace=False)
            for rank, doc in enumerate(retrieved):
                score = rng.choice([1.0, 2.0, 3.0, round(float(rng.random()), 6)])
                run.append(f"{topic} Q0 {doc} {rank} {score} r{seed}_{rank % 3}")
    if not run:  # every topic missed: retrieve the first
        run.append(f"{topics[0]} Q0 D000 1 1.0 r{seed}")
    run.append(f"zz Q0 D001 1 1.0 r{seed}")  # a topic no one judged
    order = rng.permutation(len(run))
    measures = ["map", "P_5", "ndcg", "num_ret", "recip_rank"]
    zscores = [f"{t} {m} {rng.normal(0.3, 0.1):.4f} {abs(rng.normal(0.2, 0.1)):.4f}"
               for t in topics for m in measures if rng.random() < 0.8]
    texts = {"qrels": qrels, "prefs": list(rng.permutation(prefs)), "groups": groups,
             "run": ["# a comment line"] + [run[i] for i in order], "zscores": zscores}
    paths = {}
    for name, lines in texts.items():
        paths[name] = where / f"{seed}.{name}"
        paths[name].write_text("\n".join(lines) + "\n")
    present = {line.split()[0] for line in run}
    paths["qrels_present"] = where / f"{seed}.qrels_present"
    paths["qrels_present"].write_text("".join(f"{line}\n" for line in qrels
                                              if line.split()[0] in present))
    paths["qrels_nonneg"] = where / f"{seed}.qrels_nonneg"
    paths["qrels_nonneg"].write_text("".join(f"{line}\n" for line in qrels
                                             if not line.endswith(" -1")))
    return paths


# option sets run with -c on every collection (qrels file first, run second)
WITH_C = [
    ["-q", "-c", "-m", "all_trec"],
    ["-q", "-c", "-J", "-l2", "-m", "all_trec"],
    ["-c", "-M", "5", "-m", "all_trec"],
    ["-q", "-c", "-l0", "-m", "all_trec"],
    ["-q", "-c", "-n", "-m", "official", "-m", "relstring.8"],
    ["-c", "-q", "-N", "60", "-m", "set", "-m", "utility.2,-1,0,0", "-m", "yaap",
     "-m", "dcg", "-m", "ideal_dcg"],
    ["-c", "-q", "-m", "P.3,7,1", "-m", "ndcg.1=3,2=9,4=4.5", "-m", "ndcg_cut.2,9",
     "-m", "iprec_at_recall..25,.5,.95", "-m", "11pt_avg.0.5,0.2", "-m", "Rndcg.0=1",
     "-m", "G.2=0.5", "-m", "ndcg_rel.1=0.4,2=0.9", "-m", "success.1,4", "-m", "set_F.0.5"],
]


@pytest.mark.parametrize("seed", range(12))
def test_random_collections(binary: str, seed: int, tmp_path: Path) -> None:
    f = collection(seed, tmp_path)
    for options in WITH_C:
        same(binary, [*options, str(f["qrels"]), str(f["run"])])
    # without -c: trec_eval 10 stops at a judged topic the run lacks; sampleval skips it,
    # which is trec_eval's output on the judgments of the run's topics
    args = ["-q", "-m", "all_trec", str(f["qrels"]), str(f["run"])]
    if theirs(binary, args)[0] != 0:
        assert ours(args) == (0, same(binary, ["-q", "-m", "all_trec", str(f["qrels_present"]),
                                               str(f["run"])]))
    else:
        same(binary, args)
    same(binary, ["-q", "-c", "-R", "prefs", "-m", "all_prefs", str(f["prefs"]), str(f["run"])])
    same(binary, ["-q", "-c", "-R", "qrels_prefs", "-m", "all_prefs", str(f["qrels_nonneg"]),
                  str(f["run"])])
    same(binary, ["-q", "-c", "-R", "qrels_jg", "-m", "qrels_jg", str(f["groups"]),
                  str(f["run"])])
    same(binary, ["-q", "-c", "-Z", str(f["zscores"]), "-m", "map", "-m", "P.5", "-m", "ndcg",
                  "-m", "num_ret", "-m", "recip_rank", str(f["qrels"]), str(f["run"])])


def test_repeated_documents_as_trec_eval(binary: str, tmp_path: Path) -> None:
    """A docno repeated in an evaluated topic within the -M cut stops both; cut below it, or
    in a topic not judged, both evaluate the run, to the same output."""
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 a 1\n")
    run = tmp_path / "run"
    run.write_text("1 Q0 a 1 3 x\n1 Q0 b 2 2 x\n1 Q0 c 3 1.5 x\n1 Q0 a 4 1 x\n"
                   "2 Q0 a 1 1 x\n3 Q0 q 1 2 x\n3 Q0 q 2 1 x\n")
    for args in (["-q", "-m", "all_trec"], ["-M", "4", "-m", "num_ret"], ["-c", "-m", "map"]):
        assert theirs(binary, [*args, str(qrels), str(run)])[0] != 0
        assert ours([*args, str(qrels), str(run)])[0] == 2
    for args in (["-q", "-M", "3", "-m", "all_trec"], ["-M", "1", "-c", "-m", "official"]):
        same(binary, [*args, str(qrels), str(run)])


# -- TREC-COVID round 5 --------------------------------------------------------------------------

ROUND5_RUNS = ("BRPHJ_BM25", "uw_fb2", "xj4wang_run1")


@pytest.fixture(scope="module")
def round5(covid: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Plain copies of three round-5 runs (trec_eval reads no gzip), one with topics 1, 17 and
    33 removed (for -c); the round-5 qrels, and a copy without its two -1 grades (for
    qrels_prefs: trec_eval reads out of bounds on negative levels, docs/guide/trec_eval.md)."""
    import gzip

    where = tmp_path_factory.mktemp("round5")
    qrels = covid / "qrels" / "qrels.covid-round5.txt"
    out = {"qrels": qrels, "qrels_nonneg": where / "qrels_nonneg"}
    out["qrels_nonneg"].write_text("".join(line for line in qrels.read_text().splitlines(True)
                                           if not line.split()[3].startswith("-")))
    for name in ROUND5_RUNS:
        out[name] = where / name
        out[name].write_bytes(gzip.decompress((covid / "round5" / "runs" /
                                               f"{name}.gz").read_bytes()))
    lines = out[ROUND5_RUNS[1]].read_text().splitlines(keepends=True)
    out["missing"] = where / "missing"
    out["missing"].write_text("".join(line for line in lines
                                      if line.split()[0] not in ("1", "17", "33")))
    return out


@pytest.mark.parametrize(("run", "options"), [
    ("BRPHJ_BM25", ["-q", "-m", "all_trec"]),
    ("uw_fb2", ["-q", "-J", "-m", "all_trec"]),
    ("xj4wang_run1", ["-q", "-l2", "-M100", "-m", "all_trec"]),
    ("missing", ["-q", "-c", "-m", "all_trec"]),
    ("BRPHJ_BM25", ["-q", "-m", "ndcg.1=3,2=9", "-m", "rbp.p=0.5,2=4", "-m", "Rndcg.0=1",
                       "-m", "11pt_avg.0.5,0.2,0.9", "-m", "P.5,7", "-m", "official"]),
    ("uw_fb2", ["-q", "-R", "qrels_jg", "-m", "qrels_jg"]),
    ("xj4wang_run1", ["-q", "-R", "qrels_prefs", "-m", "all_prefs"]),
])
def test_trec_covid_round5(binary: str, round5: dict[str, Path], run: str,
                           options: list[str]) -> None:
    qrels = round5["qrels_nonneg" if "qrels_prefs" in options else "qrels"]
    same(binary, [*options, str(qrels), str(round5[run])])
