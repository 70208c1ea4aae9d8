"""A new expert user's walk through the guides beyond the everyday path (campaigns,
simulate, audit, predictions, plan, the drop-ins): the defects found, each with the test
that failed before its fix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _block_after(guide: str, marker: str) -> str:
    """The first fenced block of ``docs/guide/GUIDE`` after the line holding ``marker``."""
    text = (ROOT / "docs" / "guide" / guide).read_text(encoding="utf-8")
    found = re.search(re.escape(marker) + r".*?\n```[a-z]*\n(.*?)\n```", text, re.S)
    assert found, f"no block after {marker!r} in {guide}"
    return found.group(1)


@pytest.mark.slow
def test_simulate_guides_measured_example_runs_as_written(tmp_path: Path) -> None:
    """docs/guide/simulate.md's measured example, run in an empty directory as written
    (one trial instead of 20): it wrote into a directory nobody made (a traceback from
    write_qrels), then stopped in the first trial ('AP~ppi needs predictions')."""
    block = _block_after("simulate.md", "A measured example").replace("--trials 20",
                                                                      "--trials 1")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "sim-out" / "summary.csv").read_text()
    assert len(summary.splitlines()) == 5  # a header, 2 rates x (AP~ht, AP~ppi)


def _campaign_files(tmp_path: Path, grades: tuple[int, ...]) -> tuple[Path, Path]:
    """Synthetic runs and qrels (graded as ``grades``) written for a campaign."""
    from campaign_support import collection
    from sampleval.core.qrels import Qrels
    from sampleval.io import write_qrels, write_run

    data = collection()
    runs = tmp_path / "runs"
    runs.mkdir()
    for run in data.runs:
        write_run(run, str(runs / run.name))
    frame = data.qrels.to_frame()
    frame["relevance"] = frame["relevance"].clip(upper=max(grades))
    qrels = tmp_path / "qrels.txt"
    write_qrels(Qrels.from_frame(frame), str(qrels))
    return runs, qrels


def test_campaign_simulate_refuses_qrels_off_the_campaigns_scale(tmp_path: Path) -> None:
    """``campaign simulate`` with graded qrels (0, 1, 2) on a campaign of the default
    scale (0, 1): one line naming the qrels, a document and the scale, before any assessor
    judges. Before, the oracle assessors judged until one sent a 2 and the command stopped
    half-way with the server's 422 ('a simulated assessor stopped: oracle-2: POST ...')."""
    pytest.importorskip("fastapi")
    from conftest import run_cli

    runs, qrels = _campaign_files(tmp_path, (0, 1, 2))
    db = tmp_path / "c.db"
    run_cli("campaign", "create", "c", "--runs", runs, "--method", "stratified",
            "--budget", "10", "--depth", "20", "--seed", "1", "--db", db)
    done = run_cli("campaign", "simulate", "c", "--qrels", qrels, "--db", db)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{qrels}: topic " in done.stderr
    assert "is not a grade of campaign 'c' (0, 1); the qrels grade 0, 1, 2" in done.stderr
    assert "judgments" not in done.stdout


def test_judgments_of_an_open_round_are_said_not_silently_dropped(tmp_path: Path) -> None:
    """An ``active`` campaign (rounds of a third of the budget) with a few judgments and no
    round complete: ``status`` said 'no judgments yet' and ``export`` '0 judged documents'
    with nothing more, though the assessors had judged. Both now say how many judged
    documents wait for their round (the sample takes whole rounds only)."""
    pytest.importorskip("fastapi")
    from campaign_support import collection
    from conftest import run_cli
    from sampleval.campaign.organise import Design, add_person, create_campaign, parse_grades
    from sampleval.campaign.simulation import judge_in_turn
    from sampleval.campaign.store import Store
    from sampleval.selection import Budget

    data, url = collection(), f"sqlite:///{tmp_path}/c.db"
    store = Store(url)
    try:
        create_campaign(store, Design("c", "active", Budget(30), depth=30, seed=5,
                                      grades=tuple(parse_grades("0,1,2"))), data.runs)
        token = add_person(store, "c", "ann", ["1"])[0]
        assert judge_in_turn(store, [token], data.oracle, seed=3, limit=4) == 4
    finally:
        store.close()
    status = " ".join(run_cli("campaign", "status", "c", "--db", url).stdout.split())
    assert ("Estimates: no estimates yet: 4 judged documents wait for their batches to be "
            "judged in full") in status
    done = run_cli("campaign", "export", "c", "-o", tmp_path / "out", "--db", url)
    assert "0 judged documents over 0 topics" in done.stdout
    assert "warning: 4 judged documents wait for their batches" in done.stderr


def test_a_judgments_time_is_utc_in_every_answer(tmp_path: Path) -> None:
    """The API's ``created_at`` of one judgment: ``...Z`` when first stored, and before
    this, ``...`` without a zone when the retry replayed it or an undo returned it (SQLite
    gives back naive datetimes), so a client parsing both could not compare them; so did
    the judgment log's and the status's times."""
    pytest.importorskip("fastapi")
    from campaign_support import collection
    from sampleval.campaign.organise import (
        Design,
        add_person,
        campaign_status,
        create_campaign,
        judgment_log,
    )
    from sampleval.campaign.service import CampaignService
    from sampleval.campaign.store import Store
    from sampleval.selection import Budget

    data, store = collection(), Store(f"sqlite:///{tmp_path}/c.db")
    try:
        create_campaign(store, Design("c", "stratified", Budget(5), depth=30, seed=5),
                        data.runs)
        token = add_person(store, "c", "ann", ["1"])[0]
        service = CampaignService(store)
        try:
            service.load_all()
            person = service.person_by_token(token)
            assert person is not None
            docno = service.next_document(person, "1").docno
            assert docno is not None
            first, _ = service.judge_and_offer(person, "1", docno, 1.0, 2.0, "k" * 12)
            again, _ = service.judge_and_offer(person, "1", docno, 1.0, 2.0, "k" * 12)
            undone, _ = service.undo(person, "1", "k" * 12)
        finally:
            service.close()
        assert again.replayed
        assert first.created_at == again.created_at == undone.created_at
        times = [first.created_at, again.created_at, undone.created_at]
        (logged,) = judgment_log(store, "c")
        times += [logged["created_at"], logged["retracted_at"]]
        assert all(t.tzinfo is not None for t in times), times
        assert campaign_status(store, "c").stopped_at is None
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.shared
def test_compare_md_s_example_is_what_its_commands_print(tmp_path: Path, covid: Path) -> None:
    """docs/guide/compare.md's example table (means, differences, intervals, p values) is
    what its two commands print; it had gone stale (UPrrf93-wt-r5 0.3122 where the command
    prints 0.3046, every row off)."""
    from conftest import run_cli

    text = (ROOT / "docs" / "guide" / "compare.md").read_text(encoding="utf-8")
    shown = [[c.strip() for c in line.strip("│").split("│")]
             for line in text[text.index("AP~ht: paired differences"):].splitlines()
             if line.startswith("│ ")][:6]
    runs = covid / "round5" / "runs"
    assert run_cli("sample", "stratified", runs, "--qrels",
                   covid / "qrels" / "qrels.covid-round5.txt", "-M", "100", "-r", "0.1",
                   "-s", "1", "-o", tmp_path / "s10").code == 0
    done = run_cli("compare", tmp_path / "s10", *(runs / f"{r}.gz" for r in (
        "UPrrf93-wt-r5", "BRPHJ_BM25", "covidex.r5.2s", "covidex.r5.d2q.2s")),
        "-M", "100", "-m", "AP~ht", "-f", "tsv")
    assert done.code == 0, done.stderr
    printed = []
    for line in done.stdout.splitlines()[1:]:
        c = line.split("\t")
        printed.append([c[0], c[1], f"{float(c[4]):.4f}", f"{float(c[5]):.4f}",
                        f"{float(c[6]):+.4f}", f"[{float(c[7]):+.4f}, {float(c[8]):+.4f}]"])
    assert printed == [row[:6] for row in shown]


def test_predictions_no_measure_reads_are_refused(tmp_path: Path) -> None:
    """``estimate -m P@10 --predictions FILE`` read the file and silently ignored it (the
    default estimators read no predictions), as did ``compare``; now one line, as
    ``simulate`` says it. The messages docs/guide/predictions.md shows are the ones printed."""
    from test_everyday import collection, drawn

    from conftest import run_cli
    from sampleval.io import write_run

    runs, _ = collection()
    sample = tmp_path / "s"
    drawn("stratified").save(sample)
    paths = []
    for run in runs[:3]:
        write_run(run, str(tmp_path / run.name))
        paths.append(tmp_path / run.name)
    first = drawn("stratified").judged().iloc[0]
    preds = tmp_path / "preds.txt"
    preds.write_text(f"{first['query_id']} 0 {first['doc_id']} 1\n")
    shown = (ROOT / "docs" / "guide" / "predictions.md").read_text(encoding="utf-8")
    for command in (["estimate", sample, *paths, "-m", "P@10"],
                    ["compare", sample, *paths, "-m", "AP"]):
        done = run_cli(*command, "--predictions", preds)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.strip() in shown
    assert run_cli("estimate", sample, *paths, "-m", "P@10~ppi", "--predictions",
                   preds).returncode == 0
    for line, error in (("qid iter docno value", "preds.txt:1: value 'value' is not a finite "
                         "number"),
                        ("1 0 d -0.2", "value -0.2 is not in [0, ")):
        preds.write_text(line + "\n")
        done = run_cli("estimate", sample, *paths, "-m", "P@10~ppi", "--predictions", preds)
        assert done.returncode == 2 and error in done.stderr and error in shown, done.stderr


@pytest.mark.slow
def test_anytime_judging_outside_sampleval_goes_on_after_the_first_labels(tmp_path: Path
                                                                          ) -> None:
    """``sample active ... --target AP:0.03 --stop anytime -o DIR`` then ``judge DIR
    LABELS`` (docs/guide/anytime.md): the first step listed each topic's pilot in two
    proposals, the second repeating a document of the first (active draws with
    replacement), so the topic counted 20 handed out against 19 judged, waited forever for
    a label that had come, and ``judge`` declared the sample complete after the pilot. With
    the labels answering as the qrels do, it goes on as ``sample --qrels`` does."""
    import pandas as pd

    from conftest import run_cli
    from sampleval.core.pool import Pool
    from sampleval.core.qrels import Qrels
    from sampleval.io import write_qrels, write_run
    from sampleval.io.samples import load_sample
    from sampleval.selection import qrels_oracle

    runs, qrels = collection40()
    for run in runs:
        write_run(run, str(tmp_path / run.name))
    pool = Pool.from_runs(runs, depth=40)  # a label for every pooled document
    answer = qrels_oracle(qrels)
    labels = pd.DataFrame([(t, d, answer(t, [d])[d]) for t in pool.topics
                           for d in pool.docnos_of(t)],
                          columns=["query_id", "doc_id", "relevance"])
    write_qrels(Qrels.from_frame(labels), str(tmp_path / "qrels.txt"))
    paths = [tmp_path / r.name for r in runs]
    common = ["-r", "0.5", "-M", "40", "--param", "batch=5", "--target", "AP:0.01",
              "--stop", "anytime", "--seed", "4", "--start", "10"]
    assert run_cli("sample", "active", *paths, *common, "-o", tmp_path / "dir").returncode == 0
    for _ in range(200):
        done = run_cli("judge", tmp_path / "dir", tmp_path / "qrels.txt")
        assert done.returncode == 0, done.stderr
        if "the sample is complete" in done.stdout:
            break
    outside = load_sample(tmp_path / "dir").judged()
    assert len(outside) > 10 * len(runs[0].topics)  # more than the pilot
    simulated = run_cli("sample", "active", *paths, *common, "--qrels", tmp_path / "qrels.txt",
                        "-o", tmp_path / "sim")
    assert simulated.returncode == 0, simulated.stderr
    assert len(outside) == len(load_sample(tmp_path / "sim").judged())


def collection40() -> tuple[list[Any], Any]:
    """test_everyday's collection: 5 topics, runs 40 deep."""
    from test_everyday import collection

    return collection()
