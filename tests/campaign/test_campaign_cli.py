"""The campaign command line end to end on TREC-COVID round 5 (a few topics and runs, a
shallow pool): ``campaign create``, ``campaign simulate`` through the HTTP service with
oracle assessors from the qrels (a server it starts, and ``--url`` of a running one),
``campaign export``, then ``sampleval estimate`` on the export prints exactly what it
prints for ``sampleval sample`` with the same method, seed and budget. Also the commands'
one-line errors."""

from __future__ import annotations

import gzip
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from sampleval.campaign.server import ServerProcess
from sampleval.campaign.store import database_url
from sampleval.cli import main

TOPICS = {"1", "2", "3"}
RUNS = 10


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """``sampleval ARGS`` as the console script runs it (``sampleval.cli.main``: errors as
    one line and exit code 2), in this process: the servers it starts are the only other
    processes."""
    def run(*args: str | Path, check: bool = True) -> Done:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["sampleval", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        if check:
            assert code == 0, err
        return Done(code, out, err)

    return run


@pytest.fixture(scope="module")
def covid_runs(covid: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten round-5 runs cut to topics 1-3 (every document they retrieved for them)."""
    folder = tmp_path_factory.mktemp("covid-runs")
    for path in sorted((covid / "round5" / "runs").iterdir())[:RUNS]:
        with gzip.open(path, "rt") as lines:
            kept = [line for line in lines if line.split(maxsplit=1)[0] in TOPICS]
        (folder / path.name.removesuffix(".gz")).write_text("".join(kept))
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("method,params", [("active", []), ("strata", ["--param",
                                                                      "strategy=2strata"])])
def test_export_then_estimate_is_sample_then_estimate(covid: Path, covid_runs: Path,
                                                      tmp_path: Path, method: str,
                                                      params: list[str], run_cli) -> None:
    db = tmp_path / "campaigns.db"
    qrels = covid / "qrels" / "qrels.covid-round5.txt"
    created = run_cli("campaign", "create", "covid", "--runs", covid_runs, "--method", method,
                      "--budget", "25", "--depth", "20", "--seed", "42", "--grades", "0,1,2",
                      "--topics", covid / "topics.covid-round5.xml", *params, "--db", db)
    assert "organiser token:" in created.stdout and "3 topics" in created.stdout
    if method == "active":  # a server of its own
        simulated = run_cli("campaign", "simulate", "covid", "--qrels", qrels,
                            "--assessors", "2", "--db", db)
    else:  # a running server
        with ServerProcess(database_url(str(db))) as server:
            simulated = run_cli("campaign", "simulate", "covid", "--qrels", qrels,
                                "--assessors", "3", "--db", db, "--url", server.url)
    assert "75 judgments" in simulated.stdout, simulated.stdout
    run_cli("campaign", "export", "covid", "-o", tmp_path / "exported", "--db", db)
    run_cli("sample", method, covid_runs, "--qrels", qrels, "-o", tmp_path / "sampled",
            "-n", "25", "-M", "20", "-s", "42", *params)
    for form in (["-f", "tsv", "-q"], []):
        exported = run_cli("estimate", tmp_path / "exported", covid_runs, *form).stdout
        sampled = run_cli("estimate", tmp_path / "sampled", covid_runs, *form).stdout
        assert exported == sampled
        assert len(exported.splitlines()) > RUNS
    status = run_cli("campaign", "status", "covid", "--db", db).stdout
    assert "75 of 75 judged" in status and "oracle-1" in status
    assert "coronavirus origin" in status  # the topic statements were read


@pytest.mark.slow
def test_a_campaign_selects_by_predictions_as_sample_does(covid: Path, covid_runs: Path,
                                                          tmp_path: Path, run_cli) -> None:
    """``campaign create --predictions`` with stratified:size=residual: the selector keeps
    the predictions in its saved state, so the campaign judged by an oracle exports the very
    sample ``sampleval sample`` draws with them; its status shows live estimates, and the
    export's P@10~ppi estimates are those of the sample."""
    import numpy as np

    from sampleval.core.pool import Pool
    from sampleval.io import read_qrels, read_runs
    from sampleval.io.predictions import write_predictions
    from sampleval.simulation.predictors import flipped, pool_truth

    db = tmp_path / "campaigns.db"
    qrels = covid / "qrels" / "qrels.covid-round5.txt"
    pool = Pool.from_runs(read_runs([covid_runs]), depth=20)
    predicted = tmp_path / "predicted.txt"
    write_predictions(flipped(pool_truth(pool, read_qrels(qrels)), 0.3,
                              np.random.default_rng(3)), predicted)
    params = ["--param", "size=residual", "--predictions", predicted]
    run_cli("campaign", "create", "guided", "--runs", covid_runs, "--method", "stratified",
            "--budget", "25", "--depth", "20", "--seed", "42", "--grades", "0,1,2", *params,
            "--db", db)
    simulated = run_cli("campaign", "simulate", "guided", "--qrels", qrels, "--assessors",
                        "2", "--db", db)
    assert "75 judgments" in simulated.stdout, simulated.stdout
    assert "P@10~ht" in run_cli("campaign", "status", "guided", "--db", db).stdout
    run_cli("campaign", "export", "guided", "-o", tmp_path / "exported", "--db", db)
    run_cli("sample", "stratified", covid_runs, "--qrels", qrels, "-o", tmp_path / "sampled",
            "-n", "25", "-M", "20", "-s", "42", *params)
    ppi = ["-f", "tsv", "-m", "P@10~ppi,P@10~ht", "--predictions", predicted]
    exported = run_cli("estimate", tmp_path / "exported", covid_runs, *ppi).stdout
    assert exported == run_cli("estimate", tmp_path / "sampled", covid_runs, *ppi).stdout
    assert "P@10~ppi" in exported
    unused = run_cli("campaign", "create", "plain", "--runs", covid_runs, "--method",
                     "uniform", "--budget", "5", "--predictions", predicted, "--db", db,
                     check=False)
    assert unused.returncode == 2
    assert unused.stderr == "sampleval: error: method 'uniform' does not use predictions\n"


def test_campaign_commands_fail_in_one_line(covid_runs: Path, tmp_path: Path,
                                            run_cli) -> None:
    db = tmp_path / "c.db"
    cases = [
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "nope", "--budget",
          "5", "--db", db], "nope"),
        (["campaign", "create", "x y", "--runs", covid_runs, "--method", "uniform",
          "--budget", "5", "--db", db], "campaign name"),
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "uniform", "--budget",
          "5", "--grades", "1", "--db", db], "--grades"),
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "uniform", "--budget",
          "5", "--param", "k=1", "--db", db], "parameter"),
        (["campaign", "status", "x", "--db", db], "no campaign named 'x'"),
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "uniform", "--budget",
          "5", "--db", tmp_path / "missing" / "c.db"], "does not exist"),
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "uniform", "--budget",
          "5", "--target-run", "r", "--db", db], "only with --target"),
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "uniform", "--budget",
          "5", "--target", "AP", "--db", db], "cannot read the target"),
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "uniform", "--budget",
          "5", "--target", "AP:0.05", "--target-run", "nope", "--db", db], "not in the pool"),
    ]
    for args, words in cases:
        done = run_cli(*args, check=False)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("sampleval: error:") and words in done.stderr, (
            args, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    run_cli("campaign", "create", "x", "--runs", covid_runs, "--method", "uniform",
            "--budget", "5", "--db", db)
    later = [
        (["campaign", "create", "x", "--runs", covid_runs, "--method", "uniform", "--budget",
          "5", "--db", db], "exists already"),
        (["campaign", "add-assessor", "x", "ann", "--topics", "1,99", "--db", db],
         "no topic '99'"),
        (["campaign", "export", "x", "-o", tmp_path / "out", "--label", "nobody", "--db",
          db], "--label"),
    ]
    for args, words in later:
        done = run_cli(*args, check=False)
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
    added = run_cli("campaign", "add-assessor", "x", "ann", "--topics", "1,2", "--db", db,
                    "--base-url", "http://judging.example.org:9000/").stdout
    assert "http://judging.example.org:9000/login?token=" in added
    assert "assessor of topics 1, 2" in added
    made = run_cli("campaign", "create", "y", "--runs", covid_runs, "--method", "uniform",
                   "--budget", "5", "--target", "AP:0.05", "--start", "3", "--db", db,
                   "--base-url", "http://127.0.0.1:8123").stdout
    assert "organiser login: http://127.0.0.1:8123/login?token=" in made  # before: :8000
    assert "target AP:0.05 (every run;" in made and "after 3 judgments per topic" in made
    shown = " ".join(run_cli("campaign", "status", "y", "--db", db).stdout.split())
    assert "Target: target AP~ht half-width <= 0.05: no half-width yet" in shown
    assert f"{3 * 3} judgments to go before every topic has its first 3" in shown


def test_stop_anytime_needs_a_target(covid_runs: Path, tmp_path: Path, run_cli) -> None:
    bad = run_cli("campaign", "create", "x", "--runs", covid_runs, "--method", "uniform",
                  "--budget", "5", "--stop", "anytime", "--db", tmp_path / "c.db", check=False)
    assert bad.returncode == 2
    assert "--stop apply only with --target" in bad.stderr


@pytest.mark.slow  # end to end (a server judges); the status and the rule: test_campaign_anytime
def test_create_with_stop_anytime_and_its_status(covid: Path, covid_runs: Path, tmp_path: Path,
                                                  run_cli) -> None:
    """``campaign create --target ... --stop anytime`` says so, and ``campaign status``
    shows the anytime-valid half-widths."""
    db = tmp_path / "c.db"
    created = run_cli("campaign", "create", "any", "--runs", covid_runs, "--method",
                      "uniform", "--budget", "25", "--depth", "20", "--seed", "3",
                      "--grades", "0,1,2", "--target", "P@10:0.05", "--stop", "anytime",
                      "--start", "10", "--db", db)
    assert "target P@10:0.05 (anytime-valid)" in created.stdout, created.stdout
    run_cli("campaign", "simulate", "any", "--qrels",
            covid / "qrels" / "qrels.covid-round5.txt", "--assessors", "2", "--db", db)
    status = " ".join(run_cli("campaign", "status", "any", "--db", db).stdout.split())
    assert "widest anytime-valid" in status and "anytime-valid 95% half-width" in status
    assert "not reachable within the topics' budgets" in status  # 25 per topic: far short
