"""The live estimates (``campaign.live``): the leaderboard over the topics judged so far,
equal to ``sampleval estimate`` on the export restricted to them; the worker supervised
(killed mid-campaign: exports work and the target still stops the campaign)."""

from __future__ import annotations

import io
import uuid
import warnings
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("sqlalchemy")

from campaign_support import collection
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


@pytest.mark.parametrize("method", [n for n in METHODS.names()
                                    if METHODS[n].design != "pooled"] + ["mtf"])
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
