"""The live estimates (``campaign.live``): the leaderboard over the topics judged so far,
equal to ``sampleval estimate`` on the export restricted to them; the worker supervised
(killed mid-campaign: exports work and the target still stops the campaign)."""

from __future__ import annotations

import io
import os
import re
import signal
import tempfile
import time
import uuid
import warnings
import zipfile
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from campaign_support import collection
from campaign_support import wait_for as _wait
from sampleval.campaign import live as live_module
from sampleval.campaign.app import create_app
from sampleval.campaign.organise import (
    Design,
    add_person,
    create_campaign,
    estimates_now,
    export_sample,
    parse_grades,
)
from sampleval.campaign.service import CampaignService
from sampleval.campaign.store import Store
from sampleval.core.sample import Sample
from sampleval.io.qrels import write_qrels
from sampleval.io.runs import write_run
from sampleval.selection import METHODS, Budget

GRADES = tuple(parse_grades("0,1,2"))
QUICKER = {"dynamic": {"strategy": "D50"}}


def judge_topic(store: Store, campaign: str, topic: str, limit: int | None = None) -> int:
    """An assessor judges ``topic`` with the oracle until it is done (or ``limit``)."""
    oracle = collection().oracle
    token, _, _ = add_person(store, campaign, f"a{uuid.uuid4().hex[:6]}", [topic])
    service = CampaignService(store)
    person = service.person_by_token(token)
    assert person is not None
    done = 0
    while limit is None or done < limit:
        offer = service.next_document(person, topic)
        if offer.status != "judge":
            break
        service.judge(person, topic, offer.docno, oracle(topic, [offer.docno])[offer.docno],
                      1.0, uuid.uuid4().hex)
        done += 1
    service.close()
    return done


def restricted_export(sample: Sample, topics: set[str], folder: Path) -> Path:
    """The export with only ``topics``, as a user would cut it: every table filtered."""
    tables = {name: table[table["query_id"].astype(str).isin(topics)]
              for name in ("frame", "draws", "rounds", "round_probs")
              if (table := getattr(sample, name)) is not None}
    return Sample(sample.design, meta=sample.meta, **tables).save(folder)


@pytest.mark.parametrize("method", [n for n in METHODS.names()  # audit: needs machine labels
                                    if METHODS[n].design.is_probability_design
                                    and not METHODS[n].needs_predictions] + ["mtf"])
def test_the_leaderboard_leaves_out_unjudged_topics(method: str, tmp_path: Path,
                                                    cli) -> None:  # type: ignore[no-untyped-def]
    """1 of 4 topics judged: the leaderboard is the mean over that topic alone, says so,
    and equals ``sampleval estimate`` on the export restricted to it (before: the three
    unjudged topics entered the mean as 0 +- 0)."""
    c = collection()
    store = Store(f"sqlite:///{tmp_path}/s.db")
    with warnings.catch_warnings():  # small budgets leave strata unsampled: some methods warn
        warnings.simplefilter("ignore")
        create_campaign(store, Design("c", method, Budget(12), QUICKER.get(method, {}),
                                      depth=30, seed=5, grades=GRADES), c.runs)
    topic = "2"
    assert judge_topic(store, "c", topic) > 0
    rows, note, _, _ = estimates_now(store, "c")
    assert "over 1 of 4 topics" in note
    exported, _ = export_sample(store, "c")
    folder = restricted_export(exported, {topic}, tmp_path / "only")
    runs = tmp_path / "runs"
    runs.mkdir()
    for run in c.runs:
        write_run(run, runs / run.name)
    measures = sorted({r["measure"] for r in rows})
    args = ["estimate", folder, runs, "-f", "tsv"]
    if method == "mtf":
        args = ["evaluate", tmp_path / "qrels", runs, "-f", "tsv", "-m", ",".join(measures)]
        write_qrels(Sample.load(folder).to_qrels(), tmp_path / "qrels")
    else:
        args += ["-m", ",".join(measures)]
    done = cli(*args)
    assert done.code == 0, done.stderr
    want = pd.read_csv(io.StringIO(done.stdout), sep="\t", dtype={"topic": str})
    want = want[want["topic"] == "all"].set_index(["run", "measure"])["value"]
    got = pd.DataFrame(rows).set_index(["run", "measure"])["value"]
    assert len(got) == len(c.runs) * len(measures)
    pd.testing.assert_series_equal(got.sort_index(), want.loc[got.index].sort_index(),
                                   check_names=False, rtol=1e-12)
    store.close()


# -- the worker supervised ----------------------------------------------------------------------

TARGET = "AP~ht(few=none):0.15"
START = 10
BUDGET = 40


def _target_campaign(url: str) -> tuple[str, str, list[str]]:
    """A strata campaign with a target met well before its budget (as
    tests/campaign/test_campaign_target.py): the organiser's and an assessor's tokens, the topics."""
    store = Store(url)
    boss = create_campaign(store, Design("t", "strata", Budget(BUDGET), depth=50, seed=7,
                                         grades=GRADES, target=TARGET, target_start=START),
                           collection().runs)
    alice, topics, _ = add_person(store, "t", "alice")
    store.close()
    return boss, alice, topics


def _judge_until_stopped(client, alice: str, boss: str, topics: list[str],  # type: ignore[no-untyped-def]
                         judged: int = 0) -> int:
    """Judge round-robin until nothing is handed out; the judgments then made (counting
    ``judged`` made before)."""
    oracle = collection().oracle
    mine = {"Authorization": f"Bearer {alice}"}
    while True:
        offered = 0
        for qid in topics:
            offer = client.get(f"/api/campaigns/t/topics/{qid}/next", headers=mine).json()
            if offer["status"] != "judge":
                continue
            offered += 1
            docno = offer["document"]["docno"]
            answer = client.post(f"/api/campaigns/t/topics/{qid}/judgments", headers=mine,
                                 json={"docno": docno, "label": oracle(qid, [docno])[docno],
                                       "key": uuid.uuid4().hex})
            assert answer.status_code == 201
            judged += 1
        if not offered:
            return judged
        if judged >= len(topics) * START:  # let the target be checked
            _wait(lambda n=judged: _status(client, boss)["estimates"]["judgments"] == n)


def _status(client, boss: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    answer: dict = client.get("/api/campaigns/t/status",  # type: ignore[type-arg]
                              headers={"Authorization": f"Bearer {boss}"}).json()
    return answer


def _export(client, boss: str) -> Sample:  # type: ignore[no-untyped-def]
    answer = client.get("/api/campaigns/t/export", headers={"Authorization": f"Bearer {boss}"})
    assert answer.status_code == 200, answer.text
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive, \
            tempfile.TemporaryDirectory() as tmp:
        archive.extractall(tmp)
        return Sample.load(Path(tmp) / "t")


@pytest.mark.slow
def test_a_killed_worker_is_restarted_and_the_target_still_stops_the_campaign(
        tmp_path: Path) -> None:
    """SIGKILL to the estimates worker mid-campaign: the estimates say they are stale and
    since when, an export made while the worker is down works (in the server's process),
    the worker comes back, and the target still stops the campaign before its budget
    (before: exports answered 500 and the campaign ran to its budget)."""
    url = f"sqlite:///{tmp_path}/t.db"
    boss, alice, topics = _target_campaign(url)
    with TestClient(create_app(url, interval=0.05), base_url="http://127.0.0.1:8000") as client:
        live = client.app.state.live  # type: ignore[attr-defined]
        pid = _wait(lambda: live.worker_pid)
        oracle = collection().oracle
        mine = {"Authorization": f"Bearer {alice}"}
        for qid in topics:  # a few judgments, estimated once
            offer = client.get(f"/api/campaigns/t/topics/{qid}/next", headers=mine).json()
            docno = offer["document"]["docno"]
            client.post(f"/api/campaigns/t/topics/{qid}/judgments", headers=mine,
                        json={"docno": docno, "label": oracle(qid, [docno])[docno],
                              "key": uuid.uuid4().hex})
        _wait(lambda: _status(client, boss)["estimates"]["judgments"] == len(topics))
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        since = _wait(lambda: _status(client, boss)["estimates"]["stale_since"])
        stale = time.monotonic() - killed
        assert since.endswith(" UTC")
        page = _organiser_panel(client, boss)
        assert "Estimates are stale" in page and since in page
        assert len(_export(client, boss).judged()) == len(topics)
        _wait(lambda: live.worker_pid not in (None, pid))
        back = time.monotonic() - killed
        _wait(lambda: _status(client, boss)["estimates"]["stale_since"] is None)
        fresh = time.monotonic() - killed
        judged = _judge_until_stopped(client, alice, boss, topics, len(topics))
        status = _status(client, boss)
        assert status["stopped"].startswith(f"its target {TARGET} is met")
        assert judged < len(topics) * BUDGET
        assert live.restarts == 1
        print(f"worker killed: stale seen after {stale:.2f} s, restarted after {back:.2f} s, "
              f"estimates fresh after {fresh:.2f} s; stopped at its target after {judged} "
              f"of {len(topics) * BUDGET} judgments")


class _NoWorker(Executor):
    """A worker that cannot start (as when the machine is out of memory)."""

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        future: Future[Any] = Future()
        future.set_exception(OSError("cannot start a process"))
        return future


@pytest.mark.slow
def test_a_worker_that_cannot_be_restarted_leaves_the_estimates_to_the_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker killed and every restart failing: after GIVE_UP_AFTER tries the
    estimates and target checks run in the server's process, so the target still stops
    the campaign, and exports work throughout."""
    url = f"sqlite:///{tmp_path}/t.db"
    boss, alice, topics = _target_campaign(url)
    monkeypatch.setattr(live_module, "RESTART_DELAYS", (0.01,))
    with TestClient(create_app(url, interval=0.05), base_url="http://127.0.0.1:8000") as client:
        live = client.app.state.live  # type: ignore[attr-defined]
        pid = _wait(lambda: live.worker_pid)
        monkeypatch.setattr(live_module.LiveEstimates, "_new_worker", lambda self: _NoWorker())
        os.kill(pid, signal.SIGKILL)
        _wait(lambda: live.in_process)
        assert live.failed_restarts >= live_module.GIVE_UP_AFTER
        judged = _judge_until_stopped(client, alice, boss, topics)
        status = _status(client, boss)
        assert status["stopped"].startswith(f"its target {TARGET} is met")
        assert "computed in the server's process" in status["estimates"]["note"]
        assert judged < len(topics) * BUDGET
        assert len(_export(client, boss).judged()) == judged
        assert live.restarts == 0


def _organiser_panel(client, boss: str) -> str:  # type: ignore[no-untyped-def]
    form = client.get("/login")
    csrf = form.cookies.get("sv_login") or client.cookies.get("sv_login")
    client.post("/login", data={"token": boss, "csrf_token": csrf})
    text: str = client.get("/c/t/organiser/panel").text
    return text


def test_campaign_status_says_the_server_s_estimates_are_stale(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """What the supervisor stores when the worker dies (``mark_stale``) is said by
    ``campaign status``, with the time, until the next computation replaces it."""
    from sampleval.campaign.organise import campaign_status, mark_stale, save_estimates

    db = tmp_path / "s.db"
    store = Store(f"sqlite:///{db}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        create_campaign(store, Design("c", "strata", Budget(12), depth=30, seed=5,
                                      grades=GRADES), collection().runs)
    judge_topic(store, "c", "1", limit=3)
    rows, note, count, confidence = estimates_now(store, "c")
    save_estimates(store, 1, rows, note, count, confidence)
    assert campaign_status(store, "c").stale_since is None
    mark_stale(store, 1, "07:42:10 UTC")
    status = campaign_status(store, "c")
    assert status.stale_since == "07:42:10 UTC" and status.estimates == rows
    store.close()
    shown = " ".join(cli("campaign", "status", "c", "--db", db).stdout.split())
    assert "The server's live estimates are stale since 07:42:10 UTC" in shown
    store = Store(f"sqlite:///{db}")
    save_estimates(store, 1, rows, note, count, confidence)
    assert campaign_status(store, "c").stale_since is None
    store.close()


def test_the_leaderboard_carries_estimate_s_rank_intervals(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """3 of 4 topics judged: the rows the status API gives carry ``rank``, ``rank_lo``,
    ``rank_hi`` on the first measure, equal to ``sampleval estimate --ranks`` on the export
    restricted to those topics (None on the other measures), and the organiser page shows
    them as ``rank (lo-hi)`` in a "rank (95% simultaneous)" column (before: no rank
    fields, no column)."""
    from sampleval.campaign.organise import save_estimates

    c = collection()
    url = f"sqlite:///{tmp_path}/t.db"
    store = Store(url)
    with warnings.catch_warnings():  # small budgets leave strata unsampled
        warnings.simplefilter("ignore")
        boss = create_campaign(store, Design("t", "strata", Budget(12), depth=30, seed=5,
                                             grades=GRADES), c.runs)
    judged = {"1", "2", "4"}
    for topic in sorted(judged):
        assert judge_topic(store, "t", topic) > 0
    save_estimates(store, 1, *estimates_now(store, "t"))
    exported, _ = export_sample(store, "t")
    store.close()
    folder = restricted_export(exported, judged, tmp_path / "only")
    runs = tmp_path / "runs"
    runs.mkdir()
    for run in c.runs:
        write_run(run, runs / run.name)
    done = cli("estimate", folder, runs, "--ranks", "-f", "tsv")
    assert done.code == 0, done.stderr
    want = pd.read_csv(io.StringIO(done.stdout), sep="\t", dtype={"topic": str})
    first = str(want["measure"].iloc[0])
    want = want[(want["topic"] == "all") & (want["measure"] == first)].set_index("run")
    with TestClient(create_app(url, live=False), base_url="http://127.0.0.1:8000") as client:
        rows = _status(client, boss)["estimates"]["rows"]
        page = _organiser_panel(client, boss)
    assert rows[0]["measure"] == first
    ranked = {r["run"]: r for r in rows if r["measure"] == first}
    assert sorted(ranked) == sorted(want.index)
    for run, row in ranked.items():
        assert [row[c] for c in ("rank", "rank_lo", "rank_hi")] == [
            int(want.loc[run, c]) for c in ("rank", "rank_lo", "rank_hi")], run
    assert all(r["rank"] is None for r in rows if r["measure"] != first)
    # (3 topics: Holm's paired t-tests have 2 degrees of freedom and seldom order a pair;
    # the check is the intervals' equality with estimate --ranks, rank included)
    board = page[page.index(f'data-measure="{first}"'):]
    board = board[:board.index("</table>")]
    assert "rank (95% simultaneous)" in board
    for run, row in ranked.items():
        assert re.search(rf"<td>{re.escape(run)}</td>.*?<td class=\"num rank\">"
                         rf"{row['rank']} \({row['rank_lo']}-{row['rank_hi']}\)</td>",
                         board, re.S), run
