"""The Sample: saving and loading without loss, format detection, inclusion probabilities."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.core.inclusion import judged_design
from sampleval.core.sample import Sample
from sampleval.errors import InputError, UsageError
from sampleval.io.samples import load_sample


def with_replacement_sample() -> Sample:
    """Topic 1: frame a..d; two rounds (3 draws, then 2) from fixed distributions; a and c
    were drawn."""
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["a", "b", "c", "d"],
                          "relevance": [1.0, np.nan, 0.5, np.nan], "stratum": "",
                          "inclusion": np.nan})
    p = {"a": (0.5, 0.4), "c": (0.2, 0.3)}
    round_probs = pd.DataFrame([("1", t + 1, d, p[d][t]) for d in p for t in range(2)],
                               columns=["query_id", "round", "doc_id", "probability"])
    rounds = pd.DataFrame({"query_id": "1", "round": [1, 2], "size": [3, 2]})
    draws = pd.DataFrame({"query_id": "1", "round": [1, 1, 1, 2, 2],
                          "doc_id": ["a", "a", "c", "c", "a"],
                          "probability": [0.5, 0.5, 0.2, 0.3, 0.4]})
    return Sample(design="with-replacement", frame=frame, draws=draws, rounds=rounds,
                  round_probs=round_probs, meta={"method": "active", "seed": 3})


def test_every_table_round_trips(tmp_path: Path) -> None:
    sample = with_replacement_sample()
    loaded = Sample.load(sample.save(tmp_path / "s"))
    assert loaded.design == sample.design and loaded.meta == sample.meta
    for name in ("frame", "draws", "rounds", "round_probs"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(sample, name),
                                      check_dtype=False)
    header = json.loads((tmp_path / "s" / "sample.json").read_text())
    assert header["format"] == "sampleval-sample" and header["version"] == 2
    # the tables are plain Parquet: pandas alone reads them, float64 bit for bit
    plain = pd.read_parquet(tmp_path / "s" / "round_probs.parquet")
    assert plain["probability"].tolist() == sample.round_probs["probability"].tolist()


def test_version_1_directories_are_still_read(tmp_path: Path) -> None:
    """The TSV layout sampleval wrote before format 2 (empty cells: none)."""
    old = tmp_path / "old"
    old.mkdir()
    (old / "sample.json").write_text(json.dumps({
        "format": "sampleval-sample", "version": 1, "design": "with-replacement",
        "tables": ["draws", "frame", "round_probs", "rounds"], "meta": {"method": "active"}}))
    (old / "frame.tsv").write_text("query_id\tdoc_id\trelevance\tstratum\tinclusion\n"
                                   "1\ta\t1\t\t\n1\tb\t\t\t\n1\tc\t0.5\t\t\n")
    (old / "draws.tsv").write_text("query_id\tround\tdoc_id\tprobability\n1\t1\ta\t0.5\n"
                                   "1\t1\tc\t0.25\n")
    (old / "rounds.tsv").write_text("query_id\tround\tsize\n1\t1\t2\n")
    (old / "round_probs.tsv").write_text("query_id\tround\tdoc_id\tprobability\n"
                                         "1\t1\ta\t0.5\n1\t1\tc\t0.25\n")
    sample = load_sample(old)
    assert sample.design == "with-replacement"
    assert sample.frame["relevance"].tolist()[::2] == [1.0, 0.5]
    assert np.isnan(sample.frame["relevance"].iloc[1])
    assert sample.frame["stratum"].tolist() == ["", "", ""]
    again = Sample.load(sample.save(tmp_path / "new"))  # rewritten as version 2
    pd.testing.assert_frame_equal(again.frame, sample.frame, check_dtype=False)
    assert json.loads((tmp_path / "new" / "sample.json").read_text())["version"] == 2


def test_a_sample_prints_a_summary() -> None:
    text = str(with_replacement_sample())
    assert text == repr(with_replacement_sample())
    assert text == ("Sample(design='with-replacement', method='active', 1 topics, 4 frame "
                    "documents, 2 judged (2 relevant); tables: frame, draws, rounds, "
                    "round_probs)")


def test_a_sample_is_never_written_over_another(tmp_path: Path) -> None:
    first = with_replacement_sample().save(tmp_path / "s")
    before = {f.name: f.read_bytes() for f in first.iterdir()}
    with pytest.raises(UsageError, match="holds a sample already"):
        Sample.from_sample_qrels(pd.DataFrame({
            "query_id": "1", "iteration": "0", "doc_id": ["x"], "stratum": "1",
            "relevance": [1.0]})).save(first)
    assert {f.name: f.read_bytes() for f in first.iterdir()} == before
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        with_replacement_sample().save(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    assert Sample.load(with_replacement_sample().save(tmp_path / "empty")).design == (
        "with-replacement")


def test_with_replacement_inclusion_probabilities() -> None:
    """pi_i = 1 - prod_t (1 - p_t(i))^N_t; pi_ij = pi_i + pi_j - [1 - prod_t (1 - p_t(i) -
    p_t(j))^N_t] (Li & Kanoulas, CIKM 2017, sec. 3)."""
    sample = with_replacement_sample()
    design = judged_design(sample, sample.topic("1"))
    pi_a = 1 - (1 - 0.5) ** 3 * (1 - 0.4) ** 2
    pi_c = 1 - (1 - 0.2) ** 3 * (1 - 0.3) ** 2
    pi_ac = pi_a + pi_c - (1 - (1 - 0.5 - 0.2) ** 3 * (1 - 0.4 - 0.3) ** 2)
    assert design.pi == pytest.approx([pi_a, pi_c], abs=1e-15)
    assert design.pi_joint[0, 1] == pytest.approx(pi_ac, abs=1e-15)
    assert design.pi_joint[1, 0] == pytest.approx(pi_ac, abs=1e-15)


def test_with_replacement_inclusion_by_simulation() -> None:
    """The closed forms against 200,000 simulated with-replacement draws (4 SE)."""
    rng = np.random.default_rng(5)
    probs = [np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.5, 0.1])]  # docs a, b, c per round
    sizes = [3, 2]
    trials = 200_000
    seen = np.zeros((trials, 3), dtype=bool)
    for p, n in zip(probs, sizes, strict=True):
        draws = rng.choice(3, size=(trials, n), p=p)
        for doc in range(3):
            seen[:, doc] |= (draws == doc).any(axis=1)
    frame = pd.DataFrame({"query_id": "1", "doc_id": ["a", "b", "c"], "relevance": 1.0,
                          "stratum": "", "inclusion": np.nan})
    round_probs = pd.DataFrame([("1", t + 1, d, probs[t][i]) for i, d in enumerate("abc")
                                for t in range(2)],
                               columns=["query_id", "round", "doc_id", "probability"])
    sample = Sample(design="with-replacement", frame=frame, round_probs=round_probs,
                    rounds=pd.DataFrame({"query_id": "1", "round": [1, 2], "size": sizes}),
                    draws=pd.DataFrame(columns=["query_id", "round", "doc_id", "probability"]))
    design = judged_design(sample, sample.topic("1"))
    empirical = seen.mean(axis=0)
    assert np.all(np.abs(empirical - design.pi) <= 4 * np.sqrt(design.pi * (1 - design.pi)
                                                                / trials))
    joint = (seen[:, 0] & seen[:, 2]).mean()
    expected = design.pi_joint[0, 2]
    assert abs(joint - expected) <= 4 * np.sqrt(expected * (1 - expected) / trials)


def test_stratified_inclusion_probabilities() -> None:
    """pi_i = n_h/N_h; pi_ij = n_h(n_h-1)/(N_h(N_h-1)) within a stratum, pi_i pi_j across."""
    frame = pd.DataFrame({"query_id": "1", "iteration": "0",
                          "doc_id": ["a", "b", "c", "d", "e"],
                          "stratum": ["1", "1", "1", "2", "2"],
                          "relevance": [1.0, 0.0, -1.0, 2.0, -1.0]})
    sample = Sample.from_sample_qrels(frame)
    design = judged_design(sample, sample.topic("1"))
    assert design.pi == pytest.approx([2 / 3, 2 / 3, 1 / 2])
    assert design.pi_joint[0, 1] == pytest.approx(2 * 1 / (3 * 2))
    assert design.pi_joint[0, 2] == pytest.approx(2 / 3 * 1 / 2)


def test_formats_are_detected(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("1 0 a 1\n1 0 b -1\n")
    (tmp_path / "sq").write_text("1 0 a 1 1\n1 0 b 2 -1\n")
    (tmp_path / "p").write_text("1 a 1 MTC 0.25\n1 b 0 MTC 1\n")
    assert load_sample(tmp_path / "q").meta["from"] == "qrels"
    assert load_sample(tmp_path / "sq").design == "stratified"
    assert load_sample(tmp_path / "p").design == "inclusion"
    assert load_sample(tmp_path / "p", "sample-qrels").design == "stratified"
    with pytest.raises(UsageError):
        load_sample(tmp_path / "q", "parquet")


def test_a_broken_header_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sample.json").write_text('{"format": "other", "version": 1}')
    with pytest.raises(InputError, match="not a sampleval-sample header of version 1 or 2"):
        Sample.load(tmp_path / "s")
    with pytest.raises(InputError, match="no such directory"):
        Sample.load(tmp_path / "missing")
