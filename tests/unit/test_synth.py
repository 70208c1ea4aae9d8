"""SYNTH (Schnabel et al., ICTIR 2016, sec. 3.1): the systems' definitions, seeding, the files
``sampleval`` reads back, and the paper's true DCGs and TOP values (Table 3)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sampleval.datasets.synth import SYNTH_ALPHA, main, make_synth, write_synth
from sampleval.io import read_qrels, read_runs
from sampleval.measures.evaluation import evaluate


def test_systems_follow_section_3_1() -> None:
    s = make_synth(np.random.default_rng(1), rankings=20, items=200,
                   reverses=(7, 150), shifts=(3, 5))
    assert set(s.systems) == {"OPT", "REVERSE-7", "REVERSE-150", "SHIFT-3", "SHIFT-5"}
    opt = s.systems["OPT"]
    assert (np.sort(opt, axis=1) == np.arange(200)).all()  # each ranking a permutation
    ranked = np.take_along_axis(s.grades, opt, axis=1)
    assert (np.diff(ranked, axis=1) <= 0).all()  # OPT sorts by true grade
    assert (s.systems["REVERSE-7"][:, :7] == opt[:, 6::-1]).all()
    assert (s.systems["REVERSE-7"][:, 7:] == opt[:, 7:]).all()
    shift = s.systems["SHIFT-5"]  # OPT moved 5 to the right, the last 5 back on top
    assert (shift[:, 5:] == opt[:, :-5]).all() and (shift[:, :5] == opt[:, -5:]).all()


def test_seeded_and_grades_follow_alpha() -> None:
    a = make_synth(np.random.default_rng(3), rankings=200, items=500)
    b = make_synth(np.random.default_rng(3), rankings=200, items=500)
    c = make_synth(np.random.default_rng(4), rankings=200, items=500)
    assert (a.grades == b.grades).all() and not (a.grades == c.grades).all()
    shares = np.bincount(a.grades.ravel(), minlength=5) / a.grades.size
    # 100,000 grades: each share within 4 standard errors of alpha / sum(alpha)
    p = np.array(SYNTH_ALPHA) / sum(SYNTH_ALPHA)
    assert np.abs(shares - p).max() < 4 * math.sqrt(0.25 / a.grades.size)
    per_ranking = make_synth(np.random.default_rng(3), rankings=200, items=500, draw="ranking")
    # one Dirichlet draw per ranking: the rankings' shares of grade 0 spread widely
    assert (per_ranking.grades == 0).mean(axis=1).std() > 0.2
    once = make_synth(np.random.default_rng(3), rankings=200, items=500, draw="once")
    assert (once.grades == 0).mean(axis=1).std() < 0.05


def test_papers_true_dcg_and_top() -> None:
    """At 300 x 2000, with the paper's 1/ln(rank + 1) discount: U_S of Table 3 (a topic's DCG
    has a standard deviation of about 8, so the mean of 300 is within 1.6 at 3.5 sigma) and
    TOP, the DCG of each system's top 5; the paper's SHIFT-5 row is our SHIFT-3."""
    s = make_synth(np.random.default_rng(0), rankings=300, shifts=(3, 5, 7))
    paper = {"OPT": (284.40, 16.98), "REVERSE-75": (277.63, 10.00),
             "REVERSE-150": (271.32, 8.51), "SHIFT-3": (274.94, 4.72),
             "SHIFT-7": (269.87, 0.00)}
    weights = 1.0 / np.log(np.arange(2, 7))
    for name, (u_s, top) in paper.items():
        assert s.dcg(name, discount="ln").mean() == pytest.approx(u_s, abs=1.6), name
        gains = np.take_along_axis(s.grades, s.systems[name][:, :5], axis=1)
        assert (gains @ weights).mean() == pytest.approx(top, abs=0.15), name
    assert s.dcg("SHIFT-5", discount="ln").mean() == pytest.approx(272.0, abs=1.6)
    assert s.dcg("OPT", "ln") == pytest.approx(s.dcg("OPT") / math.log(2))


def test_files_read_back_and_evaluate_to_the_same_dcg(tmp_path: Path) -> None:
    s = make_synth(np.random.default_rng(2), rankings=4, items=30, reverses=(10,), shifts=(2,))
    root = write_synth(s, tmp_path / "synth")
    runs = read_runs(sorted((root / "runs").iterdir()))
    qrels = read_qrels(root / "qrels.txt")
    assert sorted(r.name for r in runs) == ["OPT", "REVERSE-10", "SHIFT-2"]
    table = evaluate(qrels, runs, ["DCG"]).set_index(["run", "query_id", "measure"])
    top = evaluate(qrels, runs, ["DCG"], depth=5).set_index(["run", "query_id", "measure"])
    for name in s.systems:
        per_topic = s.dcg(name)
        for t in range(4):
            assert table.loc[(name, str(t + 1), "dcg"), "value"] == pytest.approx(per_topic[t])
        top5 = np.take_along_axis(s.grades, s.systems[name][:, :5], axis=1)
        expected = (top5 / np.log2(np.arange(2, 7))).sum(axis=1).mean()
        assert top.loc[(name, "all", "dcg"), "value"] == pytest.approx(expected)


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), "--rankings", "3", "--items", "10", "--reverses", "4",
                 "--shifts", "1,2", "--seed", "5"]) == 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "OPT.txt", "REVERSE-4.txt", "SHIFT-1.txt", "SHIFT-2.txt"]
    assert len((tmp_path / "qrels.txt").read_text().splitlines()) == 30
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--items", "10", "--reverses", "11"])
    assert "REVERSE-m needs" in capsys.readouterr().err
