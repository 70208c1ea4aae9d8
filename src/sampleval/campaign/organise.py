"""The organiser's side of the service layer: create a campaign, add people, progress,
current sample, live estimates and the export.

With :mod:`.service` (the assessors' side) and :mod:`.live` (estimates in the background)
this is the only code that touches selectors and the store together.

A campaign is created from runs, a selection method and a budget exactly as ``sampleval
sample`` would set up its simulation: ``Pool.from_runs(runs, depth)``, ``Budget`` and
``np.random.default_rng(seed)``; the selector then proposes each topic's first batch of
``batch_size(topic)`` documents, and its ``state()`` is saved with them. From then on every
batch is observed whole once judged, and the next proposed, in the order
:func:`sampleval.selection.simulate` uses, so a campaign judged by an oracle ends with the
very sample ``sampleval sample`` draws with the same method, seed and budget.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import statistics
import warnings
import zlib
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from sampleval.campaign import models as m
from sampleval.campaign.corpus import read_corpus
from sampleval.campaign.labels import RULES, Vote, choose
from sampleval.campaign.store import Store
from sampleval.campaign.target import (
    DEFAULT_START,
    campaign_selector,
    parse_target,
    restore_campaign_selector,
    target_status,
)
from sampleval.campaign.tokens import digest, new_secret
from sampleval.campaign.topics import Statement
from sampleval.core.pool import Pool
from sampleval.core.predictions import Predictions
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.declare import resolve
from sampleval.errors import SampleValError, UsageError
from sampleval.judging.confident import Target, is_anytime
from sampleval.selection.base import METHODS, Budget, Selector

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""Campaign and person names: letters, digits, '.', '_', '-' (they appear in URLs)."""
TOPIC_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
ROLES = ("assessor", "organiser")
MAX_GRADES = 10


@dataclass(frozen=True)
class Grade:
    """A grade of the campaign's scale: its value and the words on its button."""

    value: float
    label: str

    @property
    def text(self) -> str:
        """The value as written (``1``, not ``1.0``)."""
        return f"{self.value:g}"


def parse_grades(text: str) -> list[Grade]:
    """``0,1,2`` or ``0:not relevant,1:relevant,2:highly relevant`` as a scale (2 to 10
    distinct finite values, in the order given)."""
    grades: list[Grade] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        value_text, _, label = part.partition(":")
        try:
            value = float(value_text)
        except ValueError:
            raise UsageError(f"--grades: {value_text.strip()!r} is not a number") from None
        if not math.isfinite(value):
            raise UsageError(f"--grades: {value_text.strip()!r} is not a finite number")
        grades.append(Grade(value, label.strip() or f"{value:g}"))
    values = [g.value for g in grades]
    if len(set(values)) != len(values):
        raise UsageError("--grades: a grade is given twice")
    if not 2 <= len(grades) <= MAX_GRADES:
        raise UsageError(f"--grades: give 2 to {MAX_GRADES} grades, not {len(grades)}")
    return grades


@dataclass(frozen=True)
class Design:
    """What a campaign is created with (``campaign create``'s options)."""

    name: str
    method: str
    budget: Budget
    params: dict[str, str] = field(default_factory=dict)
    depth: int | None = None
    seed: int | None = None
    grades: tuple[Grade, ...] = (Grade(0.0, "0"), Grade(1.0, "1"))
    overlap: float = 0.0
    predictions: Predictions | None = None
    """Predicted relevance for a method that selects by it (``--predictions FILE``); the
    selector keeps each pooled document's value in its saved state."""
    target: str | None = None
    """``MEASURE:HALF_WIDTH``: stop handing out documents once met (:mod:`.target`)."""
    target_runs: tuple[str, ...] = ()
    """The runs the target concerns (none given: every run)."""
    target_start: int = DEFAULT_START
    """Judgments each topic receives before the target may stop the campaign."""
    target_stop: str = "committed"
    """How the target may stop the campaign (``--stop``, :data:`~sampleval.judging.confident.STOP_MODES`):
    ``anytime`` checks anytime-valid half-widths at every recomputation (a look)."""
    rejudge: bool = False
    """Whether an assessor may judge again a document they judged (``--rejudge``); without
    it a judgment is accepted only of a document offered to its assessor."""


@dataclass(frozen=True)
class CampaignInfo:
    """A campaign's settings as the store holds them."""

    id: int
    name: str
    method: str
    params: dict[str, Any]
    budget: Budget
    depth: int | None
    seed: int
    grades: tuple[Grade, ...]
    overlap: float
    created_at: datetime
    target: str | None = None
    target_runs: tuple[str, ...] = ()
    target_start: int = DEFAULT_START
    stopped: str | None = None
    """Why the campaign stopped handing out documents (None: it has not)."""
    rejudge: bool = False
    """Whether an assessor may judge again a document they judged (:class:`Design`)."""
    target_stop: str = "committed"
    """How the target may stop the campaign (:class:`Design`)."""

    def parsed_target(self) -> Target | None:
        return None if self.target is None else parse_target(self.target, self.target_runs)

    @property
    def budget_unit(self) -> str:
        """What the method's budget counts (``Selector.budget_unit``): ``judgments``, or
        ``draws`` (``importance``: a document drawn twice is judged once, so a topic ends
        with fewer judgments than its budget)."""
        from sampleval.selection import METHODS

        return METHODS[self.method].budget_unit

    @classmethod
    def of(cls, row: m.Campaign) -> CampaignInfo:
        return cls(row.id, row.name, row.method, dict(row.params),
                   Budget(row.budget_count, row.budget_rate), row.depth, int(row.seed),
                   tuple(Grade(float(g["value"]), str(g["label"])) for g in row.grades),
                   row.overlap, row.created_at, row.target, tuple(row.target_runs or ()),
                   row.target_start or DEFAULT_START, row.stopped, bool(row.rejudge),
                   row.target_stop or "committed")


# -- encodings --------------------------------------------------------------------------------

def encode_run(run: Run) -> bytes:
    """A run's table as compressed Arrow IPC (read back by :func:`decode_run`)."""
    sink = io.BytesIO()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, run.table.schema, options=options) as writer:
        writer.write_table(run.table)
    return sink.getvalue()


def decode_run(name: str, data: bytes) -> Run:
    with pa.ipc.open_stream(io.BytesIO(data)) as reader:
        return Run(name=name, table=reader.read_all(), source=f"campaign run {name}")


def encode_state(state: dict[str, Any]) -> bytes:
    """A selector state as compressed JSON (the RNG state included)."""
    return zlib.compress(json.dumps(state, separators=(",", ":")).encode(), 1)


def decode_state(data: bytes) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(zlib.decompress(data))
    return decoded


def in_overlap(seed: int, topic: str, docno: str, share: float) -> bool:
    """Whether a document is one every assessor of its topic judges (agreement studies): a
    fixed pseudo-random share of the documents, from a hash (the selector's random
    generator is not touched)."""
    if share <= 0:
        return False
    word = hashlib.sha256(f"{seed}\x00{topic}\x00{docno}".encode()).digest()[:8]
    return int.from_bytes(word, "big") / 2**64 < share


# -- lookups ----------------------------------------------------------------------------------

def campaign_row(session: Session, name: str) -> m.Campaign:
    row = session.scalar(select(m.Campaign).where(m.Campaign.name == name))
    if row is None:
        known = session.scalars(select(m.Campaign.name).order_by(m.Campaign.name)).all()
        hint = f" (campaigns: {', '.join(known)})" if known else " (the store has none)"
        raise UsageError(f"no campaign named {name!r}{hint}")
    return row


def load_runs(session: Session, campaign_id: int) -> list[Run]:
    rows = session.execute(select(m.RunData.name, m.RunData.data)
                           .where(m.RunData.campaign_id == campaign_id)
                           .order_by(m.RunData.position)).all()
    return [decode_run(name, data) for name, data in rows]


def build_pool(info: CampaignInfo, runs: Sequence[Run]) -> Pool:
    """The campaign's pool, as ``sampleval sample`` builds it from the same runs."""
    return Pool.from_runs(runs, depth=info.depth)


def saved_state(session: Session, info: CampaignInfo) -> tuple[dict[str, Any], int]:
    """The selector state saved with the latest batch, and its version: the campaign's
    whole state with each topic's part saved since (``topic_states``, for a method whose
    state splits by topic) put in."""
    row = session.get(m.SelectorState, info.id)
    if row is None:
        raise UsageError(f"campaign {info.name!r} has no saved selector state")
    state = decode_state(row.state)
    parts = session.execute(select(m.Topic.qid, m.TopicSelectorState.state)
                            .join(m.TopicSelectorState)
                            .where(m.Topic.campaign_id == info.id)).all()
    if parts:
        state["topics"] = {**state.get("topics", {}),
                           **{qid: decode_state(data) for qid, data in parts}}
    return state, row.version


def restore_selector(session: Session, info: CampaignInfo, pool: Pool
                     ) -> tuple[Selector, int]:
    """The selector as saved with the latest batch, and that state's version."""
    state, version = saved_state(session, info)
    return restore_campaign_selector(info.method, pool, state), version


# -- creating ---------------------------------------------------------------------------------

def create_campaign(store: Store, design: Design, runs: Sequence[Run],
                    statements: dict[str, Statement] | None = None,
                    corpus: str | Path | None = None) -> str:
    """Create a campaign; return the login token of its organiser (``organiser``)."""
    if not NAME.fullmatch(design.name):
        raise UsageError(f"campaign name {design.name!r}: use 1-64 letters, digits, '.', "
                         "'_' or '-', starting with a letter or digit")
    if not 0 <= design.overlap <= 1:
        raise UsageError("--overlap must lie in [0, 1]")
    if not runs:
        raise UsageError("a campaign needs at least one run")
    cls = METHODS[design.method]
    resolve(cls.parameters, design.params, cls.name)
    with store.read() as session:
        if session.scalar(select(m.Campaign.id).where(m.Campaign.name == design.name)):
            raise UsageError(f"a campaign named {design.name!r} exists already in this store")
    seed = design.seed if design.seed is not None else int(
        np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    pool = Pool.from_runs(runs, depth=design.depth)
    bad = [t for t in pool.topics if not TOPIC_ID.fullmatch(t)]
    if bad:
        raise UsageError(f"topic id {bad[0]!r} cannot be used in a campaign (letters, digits, "
                         "'.', '_', '-'; at most 64)")
    options: dict[str, Any] = dict(design.params)
    selector = cls(pool, design.budget, np.random.default_rng(seed),
                   predictions=design.predictions, **options)
    if design.target is not None:  # a target the design cannot estimate fails here
        selector = campaign_selector(selector, parse_target(design.target, design.target_runs),
                                     design.target_start, design.target_stop)
    first = {t: selector.propose(t, selector.batch_size(t)) for t in pool.topics}
    texts = _texts(corpus, pool) if corpus is not None else []
    token = new_secret()
    statements = statements or {}
    with store.write() as session:
        campaign = m.Campaign(
            name=design.name, method=cls.name, params=dict(selector.params),
            budget_count=design.budget.count, budget_rate=design.budget.rate,
            depth=design.depth, seed=str(seed),
            grades=[{"value": g.value, "label": g.label} for g in design.grades],
            overlap=design.overlap, target=design.target,
            target_runs=list(design.target_runs) or None,
            target_start=design.target_start if design.target is not None else None,
            target_stop=design.target_stop,
            rejudge=design.rejudge)
        session.add(campaign)
        session.flush()
        session.add_all(m.RunData(campaign_id=campaign.id, position=i, name=run.name,
                                  data=encode_run(run)) for i, run in enumerate(runs))
        for position, qid in enumerate(pool.topics):
            said = statements.get(qid, Statement(qid))
            topic = m.Topic(campaign_id=campaign.id, qid=qid, position=position,
                            title=said.title, description=said.description,
                            narrative=said.narrative, pool_size=pool[qid].size,
                            budget=selector.budget_for(qid), done=not first[qid])
            session.add(topic)
            session.flush()
            add_items(session, topic.id, qid, 1, first[qid], seed, design.overlap)
        if texts:
            session.execute(insert(m.Document), [
                {"campaign_id": campaign.id, "docno": t.docno, "title": t.title,
                 "text": t.text} for t in texts])
        session.add(m.SelectorState(campaign_id=campaign.id, version=1,
                                    state=encode_state(selector.state())))
        session.add(m.Person(campaign_id=campaign.id, name="organiser", role="organiser",
                             token_hash=digest(token)))
    return token


def add_items(session: Session, topic_id: int, qid: str, batch: int, docnos: Iterable[str],
              seed: int, overlap: float) -> None:
    """Record a batch of proposed documents."""
    rows = item_rows(topic_id, qid, batch, docnos, seed, overlap)
    if rows:
        session.execute(insert(m.Item), rows)


def item_rows(topic_id: int, qid: str, batch: int, docnos: Iterable[str], seed: int,
              overlap: float) -> list[dict[str, Any]]:
    """The ``items`` rows of a batch of proposed documents."""
    return [{"topic_id": topic_id, "batch": batch, "position": i, "docno": d,
             "overlap": in_overlap(seed, qid, d, overlap)} for i, d in enumerate(docnos)]


def _texts(corpus: str | Path, pool: Pool) -> list[Any]:
    pooled = {str(d) for t in pool.topics for d in pool.docnos_of(t)}
    found = {t.docno: t for t in read_corpus(corpus, pooled)}
    return list(found.values())


def add_person(store: Store, campaign: str, person: str, topics: Sequence[str] | None = None,
               role: str = "assessor") -> tuple[str, list[str], bool]:
    """Give ``person`` a new login token for ``campaign`` (an earlier one stops working)
    and, for an assessor, the ``topics`` to judge (default: all). Returns the token, the
    person's topics, and whether the person is new."""
    if role not in ROLES:
        raise UsageError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if not NAME.fullmatch(person):
        raise UsageError(f"person name {person!r}: use 1-64 letters, digits, '.', '_' or "
                         "'-', starting with a letter or digit")
    token = new_secret()
    with store.write() as session:
        info = campaign_row(session, campaign)
        all_topics = dict(session.execute(select(m.Topic.qid, m.Topic.id).where(
            m.Topic.campaign_id == info.id).order_by(m.Topic.position)).all())
        wanted = list(all_topics) if topics is None else list(dict.fromkeys(topics))
        unknown = [t for t in wanted if t not in all_topics]
        if unknown:
            raise UsageError(f"campaign {campaign!r} has no topic {unknown[0]!r}")
        row = session.scalar(select(m.Person).where(m.Person.campaign_id == info.id,
                                                    m.Person.name == person))
        new = row is None
        if row is None:
            row = m.Person(campaign_id=info.id, name=person, role=role,
                           token_hash=digest(token))
            session.add(row)
            session.flush()
        else:
            if row.role != role:
                raise UsageError(f"{person!r} is already the campaign's {row.role}")
            row.token_hash = digest(token)
            session.execute(delete(m.Session).where(
                m.Session.assessor_id == row.id))
        mine: list[str] = []
        if role == "assessor":
            have = set(session.scalars(select(m.Assignment.topic_id).where(
                m.Assignment.assessor_id == row.id)))
            session.add_all(m.Assignment(assessor_id=row.id, topic_id=all_topics[t])
                            for t in wanted if all_topics[t] not in have)
            have |= {all_topics[t] for t in wanted}
            mine = [t for t, i in all_topics.items() if i in have]
    return token, mine, new


# -- the current sample -----------------------------------------------------------------------

def votes_by_item(session: Session, campaign_id: int, observed: bool | None = None
                  ) -> dict[tuple[str, str], list[Vote]]:
    """The non-retracted judgments of the campaign's items, by (topic, docno); ``observed``
    True/False keeps only items whose batch was / was not observed yet."""
    query = (select(m.Topic.qid, m.Item.docno, m.Person.name, m.Judgment.label, m.Judgment.id)
             .join(m.Item, m.Judgment.item_id == m.Item.id)
             .join(m.Topic, m.Item.topic_id == m.Topic.id)
             .join(m.Person, m.Judgment.assessor_id == m.Person.id)
             .where(m.Judgment.campaign_id == campaign_id, m.Judgment.retracted_at.is_(None)))
    if observed is not None:
        query = query.where(m.Item.label.is_not(None) if observed else m.Item.label.is_(None))
    out: dict[tuple[str, str], list[Vote]] = {}
    for qid, docno, person, label, order in session.execute(query):
        out.setdefault((qid, docno), []).append(Vote(person, float(label), int(order)))
    return out


def current_sample(session: Session, info: CampaignInfo, pool: Pool) -> Sample:
    """The sample so far (:func:`current_selector`'s)."""
    return current_selector(session, info, pool).sample()


def current_selector(session: Session, info: CampaignInfo, pool: Pool) -> Selector:
    """The selector as saved with its latest batch, which has observed every completed
    batch, having also observed the judged part of each open batch (the latest judgment of
    each document), where the method accepts part of a batch (see ``Selector.observe``)."""
    selector, _ = restore_selector(session, info, pool)
    pending: dict[str, dict[str, float]] = {}
    for (qid, docno), votes in votes_by_item(session, info.id, observed=False).items():
        pending.setdefault(qid, {})[docno] = max(votes, key=lambda v: v.order).label
    for qid, labels in pending.items():
        with suppress(SampleValError):  # a method taking whole batches only: left out
            selector.observe(qid, labels)
    return selector


def waiting(session: Session, info: CampaignInfo, sample: Sample) -> int:
    """The documents with a standing judgment that ``sample`` (:func:`current_sample`'s)
    does not hold: the judged part of open batches of a method that takes whole batches
    only (``active``'s rounds); each enters the sample once its batch is judged in full."""
    judged = sample.judged()
    held = set(zip(judged["query_id"].astype(str), judged["doc_id"].astype(str), strict=True))
    return sum(key not in held for key in votes_by_item(session, info.id, observed=False))


def waiting_text(count: int) -> str:
    """What :func:`waiting` documents mean, for the leaderboard's note and ``export``."""
    return (f"{count} judged documents wait for their batches to be judged in full (the "
            "method takes whole batches only) and are not in the sample yet")


def labelled(sample: Sample, votes: dict[tuple[str, str], list[Vote]], rule: str
             ) -> tuple[Sample, int]:
    """``sample`` with each judged document's label chosen by ``rule`` (:mod:`.labels`)
    among its judgments; a document whose judgments were all retracted keeps the label the
    selector observed. Returns the sample and how many documents fell back to ``latest``."""
    by_topic: dict[str, dict[str, list[Vote]]] = {}
    for (qid, docno), mine in votes.items():
        by_topic.setdefault(qid, {})[docno] = mine
    chosen: dict[tuple[str, str], float] = {}
    fallback = 0
    for qid, items in by_topic.items():
        labels, missing = choose(items, rule)
        fallback += missing
        chosen.update({(qid, d): v for d, v in labels.items()})
    frame = sample.frame
    current = frame["relevance"].to_numpy(dtype=np.float64)
    keys = zip(frame["query_id"].astype(str), frame["doc_id"].astype(str), strict=True)
    relevance = np.fromiter((chosen.get(k, np.nan) for k in keys), dtype=np.float64,
                            count=len(frame))
    relevance = np.where(np.isnan(current), np.nan, np.where(np.isnan(relevance), current,
                                                              relevance))
    return replace(sample, frame=frame.assign(relevance=relevance)), fallback


def export_sample(store: Store, campaign: str, rule: str = "latest", *,
                  option: str = "--label") -> tuple[Sample, int]:
    """The campaign's sample with labels by ``rule`` (``latest``, ``majority``, ``mean`` or
    an assessor's name), and how many documents fell back to ``latest`` (see
    :func:`labelled`). ``option``: what the caller calls ``rule``, for the refusal of an
    unknown one (the command's ``--label``, the API's ``label`` parameter)."""
    with store.read() as session:
        info = CampaignInfo.of(campaign_row(session, campaign))
        if rule not in RULES:
            person = session.scalar(select(m.Person.id).where(
                m.Person.campaign_id == info.id, m.Person.name == rule,
                m.Person.role == "assessor"))
            if person is None:
                raise UsageError(f"{option} must be {', '.join(RULES)} or an assessor of "
                                 f"{campaign!r}, not {rule!r}")
        pool = build_pool(info, load_runs(session, info.id))
        sample = current_sample(session, info, pool)
        exported, fallback = labelled(sample, votes_by_item(session, info.id), rule)
    meta = {**exported.meta, "seed": info.seed, "campaign": info.name, "label": rule}
    return replace(exported, meta=meta), fallback


# -- estimates --------------------------------------------------------------------------------

EXACT_MEASURES = ("AP", "nDCG@10", "P@10")
"""What a pooled (deterministic) sample shows: exact measures on the judged documents."""


def judged_topics(sample: Sample) -> Sample:
    """``sample`` restricted to the topics with at least one judgment: a topic nobody has
    judged yet has no estimate (its frame is all unjudged), and counting it in the mean as
    0 +- 0 would pull every run's mean and interval towards 0."""
    judged = set(sample.judged()["query_id"].astype(str))
    return sample.restricted([t for t in sample.topics if t in judged])


def leaderboard(sample: Sample, runs: Sequence[Run], waits: int = 0
                ) -> tuple[list[dict[str, Any]], str]:
    """Every run's mean estimates (``run, measure, value, lo, hi``; 95% intervals) from
    ``sample`` over the topics judged so far (:func:`judged_topics`; the note says how many
    of all), the measures ``sampleval estimate`` shows by default, so the numbers are
    ``estimate``'s on the export restricted to those topics; for a pooled sample, exact
    measures with unjudged documents counted not relevant, without intervals. An
    explanation instead of rows when nothing can be estimated yet. What ``estimate`` warns
    of (runs outside the frame, per-topic values outside the measure's range) goes into
    the note the organiser page shows, not into the server's log at every refresh, and so
    do the ``waits`` judged documents the sample does not hold yet (:func:`waiting`).

    The first measure's rows (the one the table ranks by) also carry ``rank``, ``rank_lo``,
    ``rank_hi``: each run's simultaneous 95% rank interval from the per-topic values
    (:func:`sampleval.estimation.ranks.with_ranks`, seed 0), those of ``sampleval estimate
    --ranks`` on the same restricted export; the other measures' are None."""
    from sampleval.estimation.estimates import MEAN_TOPIC, estimate
    from sampleval.estimation.ranks import RANK_COLUMNS
    from sampleval.measures.evaluation import evaluate

    if not sample.judged().shape[0]:
        return [], f"no estimates yet: {waiting_text(waits)}" if waits else "no judgments yet"
    topics, sample = len(sample.topics), judged_topics(sample)
    try:
        with warnings.catch_warnings(record=True) as said:  # shown, not logged each time
            warnings.simplefilter("always")
            if not sample.design.is_probability_design:
                results = evaluate(sample.to_qrels(), runs, EXACT_MEASURES)
                results = results.assign(lo=np.nan, hi=np.nan)
                head = ("exact measures on the judged documents (a pooled design has no "
                        "intervals)")
            else:
                results = estimate(sample, runs)  # setup_for: depth, frame, defaults
                head = "95% confidence intervals"
            results = first_ranked(results)
    except SampleValError as exc:
        return [], f"no estimates yet: {exc}"
    over = f"means over {len(sample.topics)} of {topics} topics (those with judgments)"
    note = "; ".join([head, over, *([waiting_text(waits)] if waits else []),
                      *dict.fromkeys(str(w.message) for w in said)])
    means = results[results["query_id"] == MEAN_TOPIC]
    rows = [{"run": str(r["run"]), "measure": str(r["measure"]),
             **{c: _number(r[c]) for c in ("value", "lo", "hi")},
             **{c: _rank(r[c]) for c in RANK_COLUMNS}}
            for r in means.to_dict("records")]
    return rows, note


def first_ranked(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` (``estimate``'s or ``evaluate``'s, with per-topic rows) with ``rank``,
    ``rank_lo``, ``rank_hi`` on the first measure's ``all`` rows (NaN elsewhere): the
    numbers ``estimate --ranks`` gives that measure (same per-topic values, same seed)."""
    from sampleval.estimation.ranks import per_topic_values, with_ranks

    per_topic = per_topic_values(results)
    first = str(results["measure"].iloc[0]) if len(results) else ""
    return with_ranks(results, {first: per_topic[first]} if first in per_topic else {})


def rows_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Leaderboard rows as ``sampleval estimate`` results (topic ``all``)."""
    from sampleval.estimation.ranks import RANK_COLUMNS

    ranked = any(r.get("rank_lo") is not None for r in rows)  # rows stored before ranks: none
    columns = ["run", "measure", "value", "lo", "hi", *(RANK_COLUMNS if ranked else [])]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(query_id="all").astype({c: float for c in columns[2:]})


def _number(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _rank(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def estimates_now(store: Store, campaign: str
                  ) -> tuple[list[dict[str, Any]], str, int, dict[str, Any] | None]:
    """The leaderboard of the campaign's current sample (rows, note, judgments counted) and
    the target's status (None without a target)."""
    with store.read() as session:
        info = CampaignInfo.of(campaign_row(session, campaign))
        runs = load_runs(session, info.id)
        sample, confidence = confidence_now(session, info, build_pool(info, runs))
        count = judgment_count(session, info.id)
        waits = waiting(session, info, sample)
    rows, note = leaderboard(sample, runs, waits)
    return rows, note, count, confidence


def judgment_count(session: Session, campaign_id: int) -> int:
    """The campaign's standing (not retracted) judgments."""
    return int(session.scalar(select(func.count(m.Judgment.id)).where(
        m.Judgment.campaign_id == campaign_id, m.Judgment.retracted_at.is_(None))) or 0)


def save_estimates(store: Store, campaign_id: int, rows: list[dict[str, Any]], note: str,
                   judgments: int, confidence: dict[str, Any] | None = None) -> str | None:
    """Store the live estimates (and the target's status); when the status says the target
    is met, record that the campaign stops handing out documents. Returns why the campaign
    stopped when it stops now (None otherwise)."""
    with store.write() as session:
        row = session.get(m.Estimate, campaign_id)
        if row is None:
            session.add(m.Estimate(campaign_id=campaign_id, rows=rows, note=note,
                                   judgments=judgments, confidence=confidence))
        else:
            row.rows, row.note, row.judgments, row.computed_at = rows, note, judgments, m.now()
            row.confidence = confidence
        if confidence is None or not confidence.get("met"):
            return None
        campaign = session.get(m.Campaign, campaign_id)
        if campaign is None or campaign.stopped is not None:
            return None
        widest = confidence.get("widest")
        kind = "anytime-valid 95%" if is_anytime(confidence.get("stop")) else "95%"
        campaign.stopped = (f"its target {confidence['target']} is met" + (
            "" if widest is None else f" (widest {kind} half-width {widest:.4f})"))
        campaign.stopped_at = m.now()
        return campaign.stopped


STALE = "stale since "
"""How the note of stored estimates begins while the worker that computes them is down."""


def mark_stale(store: Store, campaign_id: int, since: str) -> None:
    """Say on the campaign's stored estimates that they are stale: the worker computing
    them stopped at ``since`` (:mod:`.live` restarts it). Rows, judgments counted and
    ``computed_at`` are kept until the next computation replaces them."""
    with store.write() as session:
        row = session.get(m.Estimate, campaign_id)
        if row is not None and not row.note.startswith(STALE):
            row.note = (f"{STALE}{since}; the estimates worker stopped and is being "
                        f"restarted: these are older estimates ({row.note})")


def confidence_now(session: Session, info: CampaignInfo, pool: Pool
                   ) -> tuple[Sample, dict[str, Any] | None]:
    """The current sample and, for a campaign with a target, the target's status
    (:func:`sampleval.campaign.target.target_status`)."""
    selector = current_selector(session, info, pool)
    sample = selector.sample()
    target = info.parsed_target()
    if target is None:
        return sample, None
    items = select(m.Topic.qid, func.count(m.Item.id)).join(m.Item).where(
        m.Topic.campaign_id == info.id, m.Topic.done.is_(True)).group_by(m.Topic.qid)
    judged = sample.judged()["query_id"].astype(str).value_counts()
    finished = {qid for qid, count in session.execute(items)
                if int(judged.get(qid, 0)) >= count}
    previous = session.get(m.Estimate, info.id)
    looks = (previous.confidence or {}).get("looks", []) if previous is not None else []
    return sample, target_status(selector, sample, target, info.target_start, finished,
                                 info.target_stop, looks)


def judgment_log(store: Store, campaign: str) -> list[dict[str, Any]]:
    """Every judgment of the campaign, retracted ones included, oldest first."""
    with store.read() as session:
        info = campaign_row(session, campaign)
        rows = session.execute(
            select(m.Judgment.id, m.Topic.qid, m.Item.docno, m.Person.name, m.Judgment.label,
                   m.Judgment.seconds, m.Judgment.created_at, m.Judgment.retracted_at,
                   m.Judgment.key)
            .join(m.Item, m.Judgment.item_id == m.Item.id)
            .join(m.Topic, m.Item.topic_id == m.Topic.id)
            .join(m.Person, m.Judgment.assessor_id == m.Person.id)
            .where(m.Judgment.campaign_id == info.id).order_by(m.Judgment.id)).all()
    return [{"id": r.id, "topic": r.qid, "docno": r.docno, "assessor": r.name,
             "label": r.label, "seconds": r.seconds, "created_at": m.aware(r.created_at),
             "retracted_at": m.aware_or_none(r.retracted_at), "key": r.key} for r in rows]


# -- progress ---------------------------------------------------------------------------------

def goal(budget: int, judged: int, done: bool, unit: str) -> int:
    """The documents a topic is to have judged: its budget, when the budget counts
    judgments; when it counts draws, the budget bounds them until the topic is done (a
    document drawn twice is judged once), then the judged ones are all."""
    return judged if unit == "draws" and done else budget


def progress_text(budget: int, judged: int, done: bool, unit: str) -> str:
    """``3 of 8 judged``, or with a budget in draws ``3 judged (budget: 8 draws)``."""
    if unit == "draws":
        return f"{judged} judged ({'done; ' if done else ''}budget: {budget} draws)"
    return f"{judged} of {budget} judged"


@dataclass(frozen=True)
class TopicProgress:
    qid: str
    title: str
    budget: int
    judged: int
    batches: int
    done: bool
    assessors: list[str]
    budget_unit: str = "judgments"

    @property
    def goal(self) -> int:
        return goal(self.budget, self.judged, self.done, self.budget_unit)


@dataclass(frozen=True)
class PersonProgress:
    name: str
    role: str
    topics: list[str]
    judgments: int
    retracted: int
    seconds: float
    median_seconds: float | None


@dataclass(frozen=True)
class Status:
    """A campaign's progress, people and latest stored estimates."""

    campaign: CampaignInfo
    topics: list[TopicProgress]
    people: list[PersonProgress]
    estimates: list[dict[str, Any]]
    estimates_note: str
    estimated_at: datetime | None
    estimated_judgments: int | None
    confidence: dict[str, Any] | None = None
    """The target's status with the latest estimates (:func:`.target.target_status`)."""
    stopped_at: datetime | None = None

    @property
    def judged(self) -> int:
        return sum(t.judged for t in self.topics)

    @property
    def budget(self) -> int:
        """The budgets' sum, in the method's unit (``campaign.budget_unit``)."""
        return sum(t.budget for t in self.topics)

    @property
    def goal(self) -> int:
        """The documents to judge (:func:`goal` summed over the topics)."""
        return sum(t.goal for t in self.topics)

    @property
    def done(self) -> bool:
        return all(t.done for t in self.topics)

    @property
    def stale_since(self) -> str | None:
        """When the stored estimates became stale (their worker stopped: :func:`mark_stale`),
        as ``HH:MM:SS UTC``; None while they are current."""
        note = self.estimates_note
        return note[len(STALE):].partition(";")[0] if note.startswith(STALE) else None

    def progress(self) -> str:
        """``40 of 48 judged``, or with a budget in draws ``40 judged (budget: 48 draws)``."""
        return progress_text(self.budget, self.judged, self.done, self.campaign.budget_unit)



def campaign_status(store: Store, campaign: str) -> Status:
    """Progress per topic and per person, and the estimates the server stored last."""
    with store.read() as session:
        info = CampaignInfo.of(campaign_row(session, campaign))
        topics = session.scalars(select(m.Topic).where(m.Topic.campaign_id == info.id)
                                 .order_by(m.Topic.position)).all()
        judged = dict(session.execute(
            select(m.Item.topic_id, func.count(func.distinct(m.Item.id)))
            .join(m.Judgment, m.Judgment.item_id == m.Item.id)
            .where(m.Judgment.campaign_id == info.id, m.Judgment.retracted_at.is_(None))
            .group_by(m.Item.topic_id)).all())
        batches = dict(session.execute(
            select(m.Item.topic_id, func.max(m.Item.batch)).join(m.Topic)
            .where(m.Topic.campaign_id == info.id).group_by(m.Item.topic_id)).all())
        people = session.scalars(select(m.Person).where(m.Person.campaign_id == info.id)
                                 .order_by(m.Person.role.desc(), m.Person.name)).all()
        assigned: dict[int, list[str]] = {}
        for person_id, qid in session.execute(
                select(m.Assignment.assessor_id, m.Topic.qid).join(m.Topic)
                .where(m.Topic.campaign_id == info.id).order_by(m.Topic.position)):
            assigned.setdefault(person_id, []).append(qid)
        seconds: dict[int, list[float]] = {}
        retracted: dict[int, int] = {}
        for person_id, secs, gone in session.execute(
                select(m.Judgment.assessor_id, m.Judgment.seconds, m.Judgment.retracted_at)
                .where(m.Judgment.campaign_id == info.id)):
            if gone is not None:
                retracted[person_id] = retracted.get(person_id, 0) + 1
            else:
                seconds.setdefault(person_id, []).append(float(secs or 0.0))
        estimate = session.get(m.Estimate, info.id)
        stopped_at = session.scalar(select(m.Campaign.stopped_at).where(
            m.Campaign.id == info.id))
    names = {p.id: p.name for p in people}
    by_topic: dict[str, list[str]] = {}
    for person_id, qids in assigned.items():
        for qid in qids:
            by_topic.setdefault(qid, []).append(names.get(person_id, "?"))
    return Status(
        campaign=info,
        topics=[TopicProgress(t.qid, t.title, t.budget, int(judged.get(t.id, 0)),
                              int(batches.get(t.id, 0)), t.done, sorted(by_topic.get(t.qid, [])),
                              info.budget_unit)
                for t in topics],
        people=[PersonProgress(p.name, p.role, assigned.get(p.id, []),
                               len(seconds.get(p.id, [])), retracted.get(p.id, 0),
                               sum(seconds.get(p.id, [])),
                               statistics.median(seconds[p.id]) if seconds.get(p.id) else None)
                for p in people],
        estimates=list(estimate.rows) if estimate else [],
        estimates_note=estimate.note if estimate else "not computed yet",
        estimated_at=m.aware(estimate.computed_at) if estimate else None,
        estimated_judgments=estimate.judgments if estimate else None,
        confidence=estimate.confidence if estimate else None,
        stopped_at=m.aware_or_none(stopped_at))
