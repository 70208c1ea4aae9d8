"""The audit of a machine judge (sampleval.estimation.audit) and simultaneous rank intervals
(sampleval.estimation.ranks): issue 31."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import conftest
from sampleval import cli
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.estimation.audit import (
    agreement,
    audit,
    contrast_variance,
    covariance_of_means,
    leaderboard_tau,
)
from sampleval.estimation.estimates import estimate
from sampleval.estimation.ranks import covers_ranks, design_rank_intervals, rank_intervals
from sampleval.io.samples import load_sample
from sampleval.measures.evaluation import evaluate


def _collection(seed: int = 7) -> tuple[list[Run], pd.DataFrame]:
    data = make_collection(np.random.default_rng(seed), n_topics=12, n_runs=6, n_docs=600,
                           depth=40, pool_depth=40)
    return [Run.from_frame(f, n) for n, f in data.runs.items()], data.qrels


def _machine(qrels: pd.DataFrame, seed: int = 3) -> pd.DataFrame:
    """A noisy judge: 10% of the labels flipped between relevant and not."""
    flip = np.random.default_rng(seed).random(len(qrels)) < 0.1
    grades = np.where(flip, 1.0 - (qrels["relevance"] > 0), qrels["relevance"])
    return pd.DataFrame({"query_id": qrels["query_id"], "doc_id": qrels["doc_id"],
                         "prediction": grades})


def _sample_file(qrels: pd.DataFrame, path: Path, share: float, seed: int = 1) -> Path:
    """A uniform ``share`` sample of ``qrels`` in NIST's sampled-qrels format (one stratum
    per topic; -1: pooled, not judged)."""
    rng = np.random.default_rng(seed)
    rel = qrels["relevance"].where(rng.random(len(qrels)) < share, -1)
    qrels.assign(iter=0, stratum="all", relevance=rel)[
        ["query_id", "iter", "doc_id", "stratum", "relevance"]].to_csv(
        path, sep=" ", header=False, index=False)
    return path


def test_bias_is_machine_minus_estimate(tmp_path: Path) -> None:
    """On a sample: estimate is estimate()'s mean, machine is evaluate() with the machine's
    labels as qrels, and bias = machine - estimate to 1e-12; relative bias sums to 0."""
    runs, qrels = _collection()
    sample = load_sample(_sample_file(qrels, tmp_path / "s.txt", 0.3), "sample-qrels")
    machine = _machine(qrels)
    table = audit(sample, runs, machine, ["AP~ht", "P@10~ht"], depth=40, control="none")
    ours = estimate(sample, runs, ["AP~ht", "P@10~ht"], depth=40)
    ours = ours[ours["query_id"] == "all"].set_index(["run", "measure"])["value"]
    exact = evaluate(Qrels.from_frame(machine.rename(columns={"prediction": "relevance"})),
                     runs, ["AP", "P@10"], depth=40)
    exact = exact[exact["query_id"] == "all"].set_index(["run", "measure"])["value"]
    for row in table.itertuples():
        assert row.estimate == pytest.approx(ours[row.run, row.measure], abs=1e-12)
        base = row.measure.split("~")[0]
        assert row.machine == pytest.approx(exact[row.run, base], abs=1e-12)
        assert abs(row.bias - (row.machine - row.estimate)) <= 1e-12
        assert row.lo < row.bias < row.hi
        assert row.relative_lo < row.relative < row.relative_hi
    for _, rows in table.groupby("measure"):
        assert abs(rows["relative"].sum()) < 1e-12
        assert (rows["p_adjusted"] >= rows["p"]).all()


def test_relative_bias_is_tested_on_t_with_topics_less_one_degrees(tmp_path: Path) -> None:
    """p = 2 P(t_{T-1} > |relative| / sd), sd = half-width / t quantile (P@10~ht: no
    bias-aware widening), above the normal reference's p; reference='normal' gives that."""
    from scipy import stats

    runs, qrels = _collection()
    sample = load_sample(_sample_file(qrels, tmp_path / "s.txt", 0.3), "sample-qrels")
    table = audit(sample, runs, _machine(qrels), ["P@10~ht"], depth=40)
    df = table["topics"].to_numpy() - 1
    sd = (table["relative_hi"] - table["relative"]).to_numpy() / stats.t.ppf(0.975, df)
    stat = table["relative"].abs().to_numpy() / sd
    assert table["p"].to_numpy() == pytest.approx(2 * stats.t.sf(stat, df), rel=1e-9)
    assert (table["p"].to_numpy() > 2 * stats.norm.sf(stat)).all()


def test_controlled_estimate_is_the_difference_estimator(tmp_path: Path) -> None:
    """With the machine's labels as control variates, estimate = machine - (AP~ht of the
    sample with the machine's labels - AP~ht of the sample) to 1e-12, the same judged
    documents in both; P@10~ht (no control) is estimate()'s."""
    runs, qrels = _collection()
    machine = _machine(qrels)
    sample = load_sample(_sample_file(qrels, tmp_path / "s.txt", 0.3), "sample-qrels")
    robot = load_sample(_sample_file(machine.rename(columns={"prediction": "relevance"}),
                                     tmp_path / "m.txt", 0.3), "sample-qrels")
    with pytest.warns(UserWarning, match="too narrow"):
        table = audit(sample, runs, machine, ["AP~ht", "P@10~ht"], depth=40,
                      control="machine").set_index(["run", "measure"])
    people = estimate(sample, runs, ["AP~ht", "P@10~ht"], depth=40)
    people = people[people["query_id"] == "all"].set_index(["run", "measure"])["value"]
    theirs = estimate(robot, runs, ["AP~ht"], depth=40)
    theirs = theirs[theirs["query_id"] == "all"].set_index(["run", "measure"])["value"]
    for (run, measure), row in table.iterrows():
        if measure == "AP~ht":
            want = row["machine"] - (theirs[run, measure] - people[run, measure])
        else:
            want = people[run, measure]
        assert row["estimate"] == pytest.approx(want, abs=1e-12)
        assert row["lo"] <= row["bias"] <= row["hi"]


def test_controlled_audit_of_a_judge_that_agrees_on_the_sample_is_exact(tmp_path: Path
                                                                         ) -> None:
    """A judge that gives the people's labels on every judged document (whatever it says
    elsewhere) has estimated bias exactly machine - machine's own estimate: zero-width
    intervals, and nothing flagged; without control, the same judge gets intervals."""
    runs, qrels = _collection()
    sample = load_sample(_sample_file(qrels, tmp_path / "s.txt", 0.3), "sample-qrels")
    perfect = qrels.rename(columns={"relevance": "prediction"})
    with pytest.warns(UserWarning, match="too narrow"):
        table = audit(sample, runs, perfect, depth=40, control="machine")
    assert (table["hi"] - table["lo"]).abs().max() < 1e-12
    assert (table["relative_hi"] - table["relative_lo"]).abs().max() < 1e-12
    assert table["relative"].abs().max() < 1e-12
    assert not table["flagged"].any()
    plain = audit(sample, runs, perfect, depth=40, control="none")
    assert (plain["hi"] - plain["lo"]).min() > 0


def test_difference_jackknife_covariance_diagonal_is_the_jackknife_variance() -> None:
    """The stratified jackknife covariance's diagonal is stratum_jackknife's variance, and
    the variance of any contrast c is c' S c (the jackknife of the contrast)."""
    from ht_reference import stratum_jackknife, stratum_rows
    from sampleval.estimation.engine.replicates import strata_covariance

    rng = np.random.default_rng(4)
    m, width = 25, 5
    stratum = rng.integers(0, 3, m)
    sizes = np.array([30, 40, 50])
    n = np.bincount(stratum, minlength=3) + 3
    reps, rest = rng.normal(size=(m, width)), rng.normal(size=(3, width))
    strata = (stratum, sizes, n)
    cov = strata_covariance(reps.T, rest.T, stratum, sizes, n.astype(np.float64))
    c = rng.normal(size=width)
    variance, _ = stratum_jackknife(strata, lambda h, rows: stratum_rows(reps, rest, h, rows),
                                    width)
    assert np.diagonal(cov) == pytest.approx(variance, rel=1e-12)
    contrast, _ = stratum_jackknife(
        strata, lambda h, rows: stratum_rows(reps, rest, h, rows) @ c[:, None], 1)
    assert c @ cov @ c == pytest.approx(contrast[0], rel=1e-12)


@pytest.mark.parametrize("control", ["none", "machine"])
def test_census_gives_the_exact_bias_with_zero_width(control: str) -> None:
    runs, qrels = _collection()
    census = Sample.from_qrels(Qrels.from_frame(qrels))
    machine = _machine(qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = audit(census, runs, machine, depth=40, control=control)
    human = evaluate(Qrels.from_frame(qrels), runs, ["AP"], depth=40)
    robot = evaluate(Qrels.from_frame(machine.rename(columns={"prediction": "relevance"})),
                     runs, ["AP"], depth=40)
    human = human[human["query_id"] == "all"].set_index("run")["value"]
    robot = robot[robot["query_id"] == "all"].set_index("run")["value"]
    for row in table.itertuples():
        assert row.bias == pytest.approx(robot[row.run] - human[row.run], abs=1e-12)
        assert row.lo == row.bias == row.hi
        assert row.relative_lo == row.relative == row.relative_hi
    truth = robot - human
    assert table["relative"].to_numpy() == pytest.approx(
        (truth - truth.mean())[table["run"]].to_numpy(), abs=1e-12)
    # every true rank (the exact AP's) lies in its interval
    exact_rank = 1 + (human.to_numpy()[None, :] > human.to_numpy()[:, None]).sum(axis=1)
    ranks = pd.Series(exact_rank, index=human.index)[table["run"]].to_numpy()
    assert (table["rank"].to_numpy() == ranks).all()
    assert ((table["rank_lo"] <= ranks) & (ranks <= table["rank_hi"])).all()
    # rank intervals about these topics: a census knows the ranking (no tied means here)
    assert (table["rank_lo"] == table["rank_hi"]).all()
    assert leaderboard_tau(table)["AP~ht"] == pytest.approx(
        float(pd.Series(robot).corr(pd.Series(human), method="kendall")))


def test_relative_variance_is_the_contrast_variance() -> None:
    """From per-run variances and pair-difference variances of a known covariance, the
    relative bias's variance is d' C d for d = a (e_r - 1/R), topic by topic."""
    rng = np.random.default_rng(0)
    topics, runs = 3, 5
    a = rng.random((topics, runs))
    covs = []
    for _ in range(topics):
        x = rng.normal(size=(runs, runs))
        covs.append(x @ x.T)
    variances = np.array([np.diag(c) for c in covs])
    pairs = np.column_stack(np.triu_indices(runs, k=1))
    pair_var = np.array([[c[i, i] + c[j, j] - 2 * c[i, j] for i, j in pairs] for c in covs])
    got = contrast_variance(covariance_of_means(a, variances, pair_var, pairs))
    for r in range(runs):
        want = 0.0
        for t in range(topics):
            d = a[t] * (np.eye(runs)[r] - 1.0 / runs)
            want += d @ covs[t] @ d
        assert got[r] == pytest.approx(want, rel=1e-10)


def _constructed() -> tuple[pd.DataFrame, pd.DataFrame]:
    """One topic, 10 documents: human grades and the machine's."""
    human = [0, 0, 0, 0, 1, 1, 2, 2, 0, 1]
    robot = [0, 0, 1, 0, 1, 0, 2, 1, 0, 1]
    docs = [f"d{i}" for i in range(10)]
    qrels = pd.DataFrame({"query_id": "1", "doc_id": docs, "relevance": human})
    return qrels, pd.DataFrame({"query_id": "1", "doc_id": docs, "prediction": robot})


def _hand_kappa(table: np.ndarray) -> float:
    p = table / table.sum()
    po, pe = np.trace(p), p.sum(axis=1) @ p.sum(axis=0)
    return float((po - pe) / (1 - pe))


def test_kappa_and_confusion_by_hand_on_a_census() -> None:
    qrels, machine = _constructed()
    got = agreement(Sample.from_qrels(Qrels.from_frame(qrels)), machine)
    # rows machine 0/1/2, columns human 0/1/2
    table = np.array([[4, 1, 0], [1, 2, 1], [0, 0, 1]], dtype=float)
    cells = got[got["statistic"] == "confusion"].set_index(["machine", "human"])
    for i in range(3):
        for j in range(3):
            row = cells.loc[(str(i), str(j))]
            assert row["value"] == pytest.approx(table[i, j] / 10, abs=1e-12)
            assert row["lo"] == pytest.approx(row["value"], abs=1e-9)
    kappas = got.set_index("statistic")
    assert kappas.loc["kappa_graded", "value"] == pytest.approx(_hand_kappa(table))
    binary = np.array([[4, 1], [1, 4]], dtype=float)  # relevant: grade >= 1
    assert kappas.loc["kappa", "value"] == pytest.approx(_hand_kappa(binary))
    assert kappas.loc["kappa", "value"] == pytest.approx(0.6)


def test_confusion_interval_on_a_simple_random_sample(tmp_path: Path) -> None:
    """A simple random sample of n of N: each share is the sample's share with variance
    (1 - n/N) p (1 - p) / (n - 1), the textbook estimator."""
    qrels, machine = _constructed()
    judged = [0, 2, 4, 5, 6, 7]
    rel = qrels["relevance"].where(qrels.index.isin(judged), -1)
    path = tmp_path / "srs.txt"
    qrels.assign(iter=0, stratum="all", relevance=rel)[
        ["query_id", "iter", "doc_id", "stratum", "relevance"]].to_csv(
        path, sep=" ", header=False, index=False)
    got = agreement(load_sample(path, "sample-qrels"), machine)
    cells = got[got["statistic"] == "confusion"].set_index(["machine", "human"])
    n, big_n = 6, 10
    # judged: (m, h) = (0,0) (1,0) (1,1) (0,1) (2,2) (1,2)
    for (m, h), count in {("0", "0"): 1, ("1", "0"): 1, ("1", "1"): 1, ("0", "1"): 1,
                          ("2", "2"): 1, ("1", "2"): 1, ("0", "2"): 0}.items():
        p = count / n
        half = 1.959963984540054 * np.sqrt((1 - n / big_n) * p * (1 - p) / (n - 1))
        assert cells.loc[(m, h), "value"] == pytest.approx(p)
        assert cells.loc[(m, h), "hi"] - cells.loc[(m, h), "value"] == pytest.approx(
            half, rel=1e-5, abs=1e-9)


def test_rank_intervals_are_simultaneous_by_monte_carlo() -> None:
    """Per-topic values = true mean + shared topic effect + noise: the true ranks (of the
    means) all lie in their intervals in >= 90% of 150 seeded trials (nominal 95%; the
    bootstrap's max-t quantile is approximate with 30 topics), and the intervals are not
    trivial."""
    rng = np.random.default_rng(11)
    means = np.array([0.30, 0.29, 0.25, 0.20, 0.20, 0.12, 0.05])
    true_rank = 1 + (means[None, :] > means[:, None]).sum(axis=1)
    covered, widths = 0, []
    for _ in range(150):
        values = (means[None, :] + rng.normal(0, 0.1, (30, 1))
                  + rng.normal(0, 0.05, (30, len(means))))
        got = rank_intervals(pd.DataFrame(values), rng=rng, replicates=400)
        lo, hi = got["rank_lo"].to_numpy(), got["rank_hi"].to_numpy()
        # tied true means: either of the tied ranks is true
        ok = (lo <= true_rank + (means[None, :] == means[:, None]).sum(axis=1) - 1) & (
            true_rank <= hi)
        covered += bool(ok.all())
        widths.append(float((hi - lo).mean()))
    assert covered / 150 >= 0.9
    assert np.mean(widths) < len(means) - 1.5


def test_design_rank_intervals_are_simultaneous_by_monte_carlo() -> None:
    """Estimates ~ N(true means, S) with a correlated S known to the intervals: every true
    rank inside together in >= 95% - 2 Monte Carlo s.e. of 400 seeded trials, intervals
    not trivial; and narrower than Bonferroni's (the max-t quantile uses the
    correlation)."""
    rng = np.random.default_rng(5)
    means = np.array([0.30, 0.29, 0.25, 0.20, 0.20, 0.12, 0.05, 0.04])
    x = rng.normal(size=(8, 8))
    cov = 1e-4 * (x @ x.T / 8 + 2.0 * np.ones((8, 8)))  # a shared component, as topics give
    root = np.linalg.cholesky(cov)
    covered, widths = 0, []
    for _ in range(400):
        drawn = means + root @ rng.normal(size=8)
        got = design_rank_intervals(pd.Series(drawn), cov, rng=rng, replicates=400)
        lo, hi = got["rank_lo"].to_numpy(), got["rank_hi"].to_numpy()
        covered += covers_ranks(lo, hi, means)
        widths.append(float((hi - lo).mean()))
    assert covered / 400 >= 0.95 - 2 * np.sqrt(0.05 * 0.95 / 400)
    assert np.mean(widths) < len(means) - 3


def test_design_rank_intervals_without_variance_are_the_ranks() -> None:
    """A census (zero covariance) gives each run its exact rank; ties share the interval
    of their tied ranks."""
    means = pd.Series([0.2, 0.5, 0.2, 0.1], index=list("abcd"))
    got = design_rank_intervals(means, np.zeros((4, 4)))
    assert got["rank"].tolist() == [2, 1, 2, 4]
    assert got["rank_lo"].tolist() == [2, 1, 2, 4]
    assert got["rank_hi"].tolist() == [3, 1, 3, 4]


def test_rank_intervals_of_clearly_different_runs_are_points() -> None:
    values = pd.DataFrame({"a": np.linspace(0.8, 0.9, 20), "b": np.linspace(0.4, 0.5, 20),
                           "c": np.linspace(0.0, 0.1, 20)})
    got = rank_intervals(values)
    assert got["rank"].tolist() == [1, 2, 3]
    assert got["rank_lo"].tolist() == [1, 2, 3] and got["rank_hi"].tolist() == [1, 2, 3]


def _write_runs(tmp_path: Path, runs: list[Run]) -> list[str]:
    names = []
    for run in runs:
        path = tmp_path / f"{run.name}.txt"
        frame = run.to_frame()
        frame.assign(q0="Q0", rank=1, tag=run.name)[
            ["query_id", "q0", "doc_id", "rank", "score", "tag"]].to_csv(
            path, sep=" ", header=False, index=False)
        names.append(str(path))
    return names


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs, qrels = _collection()
    sample = _sample_file(qrels, tmp_path / "s.txt", 0.3)
    predictions = tmp_path / "machine.txt"
    _machine(qrels).assign(iter=0)[["query_id", "iter", "doc_id", "prediction"]].to_csv(
        predictions, sep=" ", header=False, index=False)
    paths = _write_runs(tmp_path, runs)
    base = ["audit", str(sample), *paths, "--predictions", str(predictions), "-M", "40"]
    cli.run([*base, "--figure", str(tmp_path / "bias.png")])
    shown = capsys.readouterr().out
    assert "AP~ht: machine judge" in shown and "kappa" in shown
    assert (tmp_path / "bias.png").stat().st_size > 0
    cli.run([*base, "-f", "json", "-m", "P@10~ht"])
    got = json.loads(capsys.readouterr().out)
    assert len(got["runs"]) == len(runs) and set(got["tau"]) == {"P@10~ht"}
    assert {"bias", "relative_lo", "flagged", "rank_hi"} <= set(got["runs"][0])
    cli.run([*base, "-f", "tsv"])
    blocks = capsys.readouterr().out.split("\n\n")
    assert blocks[0].startswith("run\tmeasure\ttopics\tmachine\testimate\tbias")
    assert blocks[1].startswith("statistic\tmachine\thuman") and "measure\ttau" in blocks[2]
    cli.run(["estimate", str(sample), *paths, "-m", "AP~ht", "--ranks", "-f", "tsv"])
    header, *lines = capsys.readouterr().out.splitlines()
    assert "\trank\trank_lo\trank_hi\t" in header and len(lines) == len(runs)
    cli.run(["compare", str(sample), *paths, "-m", "AP~ht", "-M", "40", "--ranks", "-f",
             "json"])
    got = json.loads(capsys.readouterr().out)
    assert len(got["pairs"]) == 15 and [r["rank"] for r in got["ranks"]] == list(range(1, 7))
    bad = conftest.run_cli(*base[:-4], "--predictions", tmp_path / "no.txt")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_circular_judge_calls_the_favoured_runs_top_k_relevant() -> None:
    from sampleval.core.pool import Pool
    from sampleval.simulation.predictors import circular, pool_truth

    runs, qrels = _collection()
    pool = Pool.from_runs(runs, depth=40)
    truth = pool_truth(pool, Qrels.from_frame(qrels))
    got = circular(truth, pool, "run03", 3)
    top = pd.concat(r.to_frame(depth=3) for r in runs if r.name == "run03")
    called = set(zip(top["query_id"], top["doc_id"], strict=True))
    keys = list(zip(got["query_id"], got["doc_id"], strict=True))
    favoured = np.array([k in called for k in keys])
    assert favoured.sum() == len(called)
    assert (got["prediction"].to_numpy()[favoured] >= 1).all()
    rest = ~favoured
    assert (got["prediction"].to_numpy()[rest] == truth["relevance"].clip(lower=0)
            .to_numpy()[rest]).all()


def test_a_family_that_reads_predictions_is_audited_with_them(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """The audit takes any family that gives ``parts`` and ``differences``: one that reads
    predictions (as ``~ppi`` will) gets the machine's labels in its topic views, and its
    parts are the estimates (a stand-in family: P@10 of the predictions, variance 0.01)."""
    from dataclasses import replace

    from sampleval.estimation.family import FAMILIES

    seen = []

    def values_of(views: list) -> np.ndarray:  # type: ignore[type-arg]
        out = []
        for view in views:
            seen.append(view.predictions is not None)
            at = view.frame_at_rank[:, :10]
            predicted = np.append(view.predictions, 0.0)[np.where(at >= 0, at, -1)]
            out.append((predicted >= 1).sum(axis=1) / 10)
        return np.array(out)

    def parts(names, views, sample, spec, level):  # type: ignore[no-untyped-def]
        values = values_of(views)
        return values, np.full_like(values, 0.01), np.zeros_like(values)

    def differences(names, views, sample, spec, level, pairs):  # type: ignore[no-untyped-def]
        values = values_of(views)
        return values[:, pairs[:, 0]] - values[:, pairs[:, 1]], np.full(
            (len(views), len(pairs)), 0.02)

    monkeypatch.setitem(FAMILIES._items, "ppi", replace(FAMILIES["ppi"], parts=parts,
                                                        differences=differences))
    runs, qrels = _collection()
    sample = load_sample(_sample_file(qrels, tmp_path / "s.txt", 0.3), "sample-qrels")
    machine = _machine(qrels)
    table = audit(sample, runs, machine, ["P@10~ppi"], depth=40)
    assert seen and all(seen)
    exact = evaluate(Qrels.from_frame(machine.rename(columns={"prediction": "relevance"})),
                     runs, ["P@10"], depth=40)
    exact = exact[exact["query_id"] == "all"].set_index("run")["value"]
    for row in table.itertuples():
        # the stand-in estimates the machine's own P@10: no bias, half-width 1.96 sqrt(0.01/T)
        assert row.estimate == pytest.approx(exact[row.run], abs=1e-12)
        assert row.hi - row.bias == pytest.approx(1.96 * np.sqrt(0.01 / row.topics), rel=1e-3)


def test_audit_of_ap_ppi_uses_the_machine_labels_as_predictions(tmp_path: Path) -> None:
    """``audit -m AP~ppi``: the estimate is estimate()'s AP~ppi with the machine's labels as
    predictions (1e-12), bias = machine - estimate, and on a census the bias is exact with
    a zero-width interval."""
    runs, qrels = _collection()
    machine = _machine(qrels)
    sample = load_sample(_sample_file(qrels, tmp_path / "s.txt", 0.3), "sample-qrels")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = audit(sample, runs, machine, ["AP~ppi"], depth=40)
        ours = estimate(sample, runs, ["AP~ppi"], depth=40, predictions=machine)
        census = audit(Sample.from_qrels(Qrels.from_frame(qrels)), runs, machine, ["AP~ppi"],
                       depth=40)
    ours = ours[ours["query_id"] == "all"].set_index("run")["value"]
    assert table["estimate"].to_numpy() == pytest.approx(ours[table["run"]].to_numpy(),
                                                         abs=1e-12)
    assert (table["hi"] > table["lo"]).all()
    human = evaluate(Qrels.from_frame(qrels), runs, ["AP"], depth=40)
    human = human[human["query_id"] == "all"].set_index("run")["value"]
    assert census["bias"].to_numpy() == pytest.approx(
        (census["machine"] - human[census["run"]].to_numpy()).to_numpy(), abs=1e-12)
    assert (census["lo"] == census["hi"]).all()


def test_rounding_with_no_variance_is_not_flagged(tmp_path: Path) -> None:
    """Estimates equal to the machine's measures up to rounding, with no variance (as
    AP~ppi's with predictions equal to the people's labels): no run is flagged, p = 1; a
    real excess with no variance still is (before, |1e-17| / 0 = inf flagged every run)."""
    from dataclasses import replace

    from sampleval.estimation.audit import human_estimates, judge_rows, machine_predictions

    runs, qrels = _collection()
    sample = load_sample(_sample_file(qrels, tmp_path / "s.txt", 0.3), "sample-qrels")
    machine = machine_predictions(sample, _machine(qrels))
    plain = human_estimates(sample, runs, "P@10~ht", depth=40)
    exact = judge_rows(sample, plain, machine)["machine"].to_numpy()
    noise = np.array([1, -2, 3, -1, 2, -3]) * 1e-17
    zero = np.zeros_like(plain.covariance)
    rows = judge_rows(sample, replace(plain, estimate=exact + noise, covariance=zero), machine)
    assert not rows["flagged"].any()
    assert (rows["p"] == 1.0).all()
    shifted = exact + np.r_[0.01, np.zeros(len(exact) - 1)]
    rows = judge_rows(sample, replace(plain, estimate=shifted, covariance=zero), machine)
    assert rows["flagged"].all()  # every relative bias is a real excess here
