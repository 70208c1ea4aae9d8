"""A real browser on the campaign pages: Playwright drives Debian's headless Chromium
(through its executable path: no browser is downloaded). An assessor logs in with their
link, judges Cranfield abstracts with the mouse and with the keyboard, undoes a judgment,
meets hostile document text (shown as text, never run), and the organiser's page then shows
the progress, the live estimates and the target's half-widths. Screenshots go to the test
artifacts."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from textwrap import shorten

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("playwright.sync_api")

from playwright.sync_api import sync_playwright

from campaign_support import CHROMIUM, artifacts, need
from sampleval.campaign.organise import Design, add_person, create_campaign, parse_grades
from sampleval.campaign.server import ServerProcess
from sampleval.campaign.simulation import Assessor, drive
from sampleval.campaign.store import Store
from sampleval.campaign.topics import read_topics
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.cranfield import read_documents, read_qrels, read_queries
from sampleval.datasets.retrieval import cranfield_runs
from sampleval.selection import Budget, qrels_oracle
from sampleval.selection.base import Oracle

HOSTILE = ' <script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> &amp;'
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
TOPICS = ("1", "2")


def build(folder: Path, cranfield: Path) -> tuple[str, str, str]:
    """A campaign over two Cranfield queries (five retrieval models' runs, real texts;
    topic 2's texts carry hostile markup); its store URL, organiser and assessor tokens."""
    runs = []
    for run in cranfield_runs(cranfield, depth=20):
        frame = run.to_frame()
        runs.append(Run.from_frame(frame[frame["query_id"].isin(TOPICS)], run.name))
    pooled = Pool.from_runs(runs, depth=20)
    documents = read_documents(cranfield).set_index("doc_id")
    first = {str(d) for d in pooled.docnos_of("1")}
    with (folder / "corpus.jsonl").open("w") as out:
        for docno in sorted(first | {str(d) for d in pooled.docnos_of("2")}):
            row = documents.loc[docno]
            text = row["text"] + ("" if docno in first else HOSTILE)
            out.write(json.dumps({"id": docno, "title": row["title"].capitalize(),
                                  "text": text}) + "\n")
    queries = read_queries(cranfield).set_index("query_id")
    (folder / "topics.xml").write_text("<topics>" + "".join(
        f'<topic number="{t}"><query>{shorten(queries.loc[t, "text"], 70)}</query>'
        f'<question>{queries.loc[t, "text"]}</question><narrative>Relevant documents answer '
        f'the question; partly relevant ones help towards an answer.</narrative></topic>'
        for t in TOPICS) + "</topics>")
    url = f"sqlite:///{folder}/browser.db"
    store = Store(url)
    grades = tuple(parse_grades("0:not relevant,1:partly relevant,2:relevant"))
    organiser = create_campaign(store, Design("cranfield", "strata", Budget(8), depth=20,
                                              seed=4, grades=grades, target="AP:0.1"), runs,
                                read_topics(folder / "topics.xml"), folder / "corpus.jsonl")
    alice = add_person(store, "cranfield", "alice", list(TOPICS))[0]
    store.close()
    return url, organiser, alice


def cranfield_oracle(cranfield: Path) -> Oracle:
    """Cranfield's graded judgments on this campaign's scale (grades 3-4: relevant, 1-2:
    partly relevant)."""
    qrels = read_qrels(cranfield).to_frame()
    scaled = qrels.assign(relevance=qrels["relevance"].map(lambda g: 2 if g >= 3 else
                                                           1 if g >= 1 else 0))
    return qrels_oracle(Qrels.from_frame(scaled))


@pytest.mark.slow
def test_an_assessor_judges_in_the_browser_and_the_organiser_watches(
        tmp_path: Path, cranfield_dir: Path) -> None:
    need(CHROMIUM.exists(), f"Debian's chromium ({CHROMIUM})")
    url, organiser, alice = build(tmp_path, cranfield_dir)
    shots = artifacts()
    with ServerProcess(url, refresh=0.5, log=shots / "browser-server.log") as server, \
            sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            tempfile.mkdtemp(prefix="sampleval-chromium-"), executable_path=str(CHROMIUM),
            headless=True, args=FLAGS, viewport={"width": 1280, "height": 860})
        context.set_default_timeout(30_000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))

        page.goto(f"{server.url}/login?token={alice}")  # one click: the link signs in
        page.wait_for_url("**/c/cranfield/judge")
        assert "Topic 1" in page.inner_text(".statement")
        page.evaluate("window.__marker = 'the same page'")
        docno = page.inner_text("#docno")

        def next_document(previous: str) -> str:
            page.wait_for_function("previous => document.getElementById('docno')"
                                   ".textContent !== previous", arg=previous)
            return page.inner_text("#docno")

        page.click("button.grade[data-key='2']")  # the mouse
        second = next_document(docno)
        page.keyboard.press("1")  # the keyboard
        third = next_document(second)
        page.keyboard.press("u")  # undo: the second document comes back
        assert next_document(third) == second
        assert "Undone" in page.inner_text("#message")
        page.keyboard.press("0")  # judged again
        assert next_document(second) == third
        page.click("button.grade[data-key='2']")
        next_document(third)
        assert page.evaluate("window.__marker") == "the same page"  # never reloaded
        assert page.inner_text("#progress-text").startswith("3 of 8 judged")
        page.screenshot(path=str(shots / "assessor-page.png"))

        page.click("nav.topics a:has-text('2')")  # hostile texts: a server-rendered one ...
        page.wait_for_url("**/judge?topic=2")
        first_hostile = page.inner_text("#docno")
        assert "<script>window.__pwned = 1</script>" in page.inner_text("#doc-text")
        page.keyboard.press("1")  # ... and one set by the script
        next_document(first_hostile)
        assert "<script>window.__pwned = 1</script>" in page.inner_text("#doc-text")
        assert "&amp;" in page.inner_text("#doc-text")
        assert page.locator("#doc-text script, #doc-text img").count() == 0
        assert page.evaluate("window.__pwned") is None

        page.goto(f"{server.url}/login?token={organiser}")
        page.wait_for_url("**/c/cranfield/organiser")
        assert "4 of 16 judged" in page.inner_text("#overall")
        assert "1" in page.inner_text("#people")  # alice's one undone judgment
        # the rest of the campaign by alice's oracle twin through the API; the page follows
        drive(server.url, "cranfield", [Assessor("alice", alice, list(TOPICS))],
              cranfield_oracle(cranfield_dir))
        page.wait_for_function("() => document.getElementById('overall').textContent"
                               ".includes('16 of 16')", timeout=60_000)  # refreshed live
        deadline = time.monotonic() + 90
        while not page.locator("table.board").count() and time.monotonic() < deadline:
            time.sleep(1)
            page.reload()
        while "16 judgments" not in page.inner_text("#estimates") and (
                time.monotonic() < deadline):
            time.sleep(1)
            page.reload()
        boards = page.locator("table.board")
        assert boards.count() >= 1, page.inner_text("#estimates")
        assert "AP~ht" in page.inner_text("#estimates")
        assert page.locator("table.board tbody tr").count() >= 5  # the five runs
        assert "alice" in page.inner_text("#people")
        target = page.inner_text("#target")  # the target: every run's half-width against it
        assert "at most 0.1" in target and "Widest now" in target, target
        assert page.locator("#half-widths tbody tr").count() == 5
        page.screenshot(path=str(shots / "organiser-page.png"), full_page=True)
        context.close()
    assert errors == []
