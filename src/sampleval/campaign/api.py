"""The JSON API (described at ``/api/openapi.json``): what assessors' pages and scripts
call, and what organisers read. Authentication and scoping: :mod:`.web`. Scripts' judging
calls reach :func:`next_document` and :func:`judge` through :mod:`.hot`, without FastAPI's
routing (the same endpoints, the same answers)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from sampleval.campaign.organise import (
    NAME,
    TOPIC_ID,
    campaign_status,
    goal,
    judgment_log,
    progress_text,
)
from sampleval.campaign.service import Judged, Offer, TopicState
from sampleval.campaign.timing import request_timing, span
from sampleval.campaign.web import (
    Credentials,
    caller,
    in_campaign,
    organiser,
    service_of,
    writer,
)

router = APIRouter(prefix="/api")

CampaignName = Annotated[str, Path(pattern=f"^{NAME.pattern}$", max_length=64,
                                   description="the campaign's name")]
TopicId = Annotated[str, Path(pattern=f"^{TOPIC_ID.pattern}$", max_length=64,
                              description="a topic id of the campaign")]
KEY = r"^[A-Za-z0-9_-]{8,64}$"



class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JudgmentIn(Strict):
    """A judgment of a proposed document."""

    docno: str = Field(min_length=1, max_length=256)
    label: float = Field(strict=True, allow_inf_nan=False,
                         description="one of the campaign's grades, as a JSON number (a "
                                     "string or a boolean is refused)")
    seconds: float | None = Field(None, ge=0, le=86400, allow_inf_nan=False,
                                  description="time spent on the document")
    key: str = Field(pattern=KEY, description="idempotency key: a fresh random key per "
                                              "judgment, sent again on a retry")


class UndoIn(Strict):
    key: str | None = Field(None, pattern=KEY, description="the judgment to retract "
                                                           "(default: your latest)")


class TopicOut(BaseModel):
    id: str
    title: str
    description: str
    narrative: str
    judged: int
    budget: int = Field(description="the topic's budget, in budget_unit")
    budget_unit: str = Field(description="what the budget counts: judgments, or draws (a "
                                         "document drawn twice is judged once)")
    goal: int = Field(description="documents to judge: the budget, or for a budget in "
                                  "draws its bound until the topic is done")
    progress: str = Field(description="e.g. '3 of 8 judged'")
    done: bool


class DocumentOut(BaseModel):
    docno: str
    title: str
    text: str
    has_text: bool


class OfferOut(BaseModel):
    status: str = Field(description="judge: a document to judge; wait: others are finishing "
                                    "the open batch, ask again soon; done: nothing more")
    topic: TopicOut
    document: DocumentOut | None
    mine: int = Field(description="your standing judgments on this topic")
    note: str = Field("", description="with status done: why, when the campaign stopped "
                                      "before its budget (its target is met)")


class JudgmentOut(BaseModel):
    key: str
    docno: str
    label: float
    created_at: datetime
    replayed: bool = Field(description="true when this was a retry of a stored judgment")


class JudgeOut(BaseModel):
    judgment: JudgmentOut
    next: OfferOut


class UndoOut(BaseModel):
    undone: JudgmentOut
    next: OfferOut


class GradeOut(BaseModel):
    value: float
    label: str


class MeOut(BaseModel):
    name: str
    role: str
    campaign: str
    grades: list[GradeOut]
    topics: list[TopicOut]


def _json(model: BaseModel, status: int = 200) -> Response:
    """A model as the response, serialised once (the hot endpoints skip FastAPI's second
    validation of what they return; ``response_model`` still describes it)."""
    return Response(model.model_dump_json(), status_code=status,
                    media_type="application/json")


def topic_out(state: TopicState) -> TopicOut:
    judged, done = state.judged(), state.done and not state.open
    return TopicOut(id=state.qid, title=state.title, description=state.description,
                    narrative=state.narrative, judged=judged, budget=state.budget,
                    budget_unit=state.budget_unit,
                    goal=goal(state.budget, judged, done, state.budget_unit),
                    progress=progress_text(state.budget, judged, done, state.budget_unit),
                    done=done)


def offer_out(offer: Offer) -> OfferOut:
    document = None if offer.docno is None else DocumentOut(
        docno=offer.docno, title=offer.title, text=offer.text, has_text=offer.has_text)
    return OfferOut(status=offer.status, topic=topic_out(offer.topic), document=document,
                    mine=offer.mine, note=offer.note)


def judgment_out(judged: Judged) -> JudgmentOut:
    return JudgmentOut(key=judged.key, docno=judged.docno, label=judged.label,
                       created_at=judged.created_at, replayed=judged.replayed)


@router.get("/health", summary="whether the server is up (no login needed)")
def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/me", response_model=MeOut, summary="who you are, your campaign and topics")
def me(request: Request, token: Credentials) -> MeOut:
    who = caller(request, token)
    service = service_of(request)
    runtime = service.runtime(who.person.campaign_id)
    return MeOut(name=who.person.name, role=who.person.role, campaign=who.person.campaign,
                 grades=[GradeOut(value=g.value, label=g.label) for g in runtime.info.grades],
                 topics=[topic_out(t) for t in service.topics_of(who.person)])


@router.get("/campaigns/{campaign}/topics", response_model=list[TopicOut],
            summary="your topics (an organiser: all) with their progress")
def topics(campaign: CampaignName, request: Request,
           token: Credentials) -> list[TopicOut]:
    who = caller(request, token)
    person = in_campaign(who, campaign)
    return [topic_out(t) for t in service_of(request).topics_of(person)]


@router.get("/campaigns/{campaign}/topics/{topic}/next", response_model=OfferOut,
            summary="the next document for you to judge on a topic")
def next_document(campaign: CampaignName, topic: TopicId, request: Request,
                  token: Credentials) -> Response:
    with request_timing() as timing:
        with span("auth"):
            who = caller(request, token)
        person = in_campaign(who, campaign)
        offer = service_of(request).next_document(person, topic)
        return timing.attach(_json(offer_out(offer)))


@router.post("/campaigns/{campaign}/topics/{topic}/judgments", response_model=JudgeOut,
             status_code=201, summary="judge a document offered to you (idempotent by key)",
             responses={200: {"description": "a retry: the judgment was stored before",
                              "model": JudgeOut},
                        409: {"description": "the document was not offered to you, is "
                                             "leased to or judged by another assessor, you "
                                             "judged it already (and the campaign does "
                                             "not allow re-judging), or the topic is "
                                             "finished; the reason is in detail"}})
def judge(campaign: CampaignName, topic: TopicId, body: JudgmentIn, request: Request,
          token: Credentials) -> Response:
    with request_timing() as timing:
        with span("auth"):
            who = writer(request, token)
        person = in_campaign(who, campaign)
        service = service_of(request)
        judged, offer = service.judge_and_offer(person, topic, body.docno, body.label,
                                                body.seconds, body.key)
        return timing.attach(_json(JudgeOut(judgment=judgment_out(judged),
                                            next=offer_out(offer)),
                                   200 if judged.replayed else 201))


@router.post("/campaigns/{campaign}/topics/{topic}/undo", response_model=UndoOut,
             summary="retract your latest judgment on a topic (kept, marked retracted)")
def undo(campaign: CampaignName, topic: TopicId, body: UndoIn, request: Request,
         token: Credentials) -> Response:
    with request_timing() as timing:
        with span("auth"):
            who = writer(request, token)
        person = in_campaign(who, campaign)
        undone, offer = service_of(request).undo(person, topic, body.key)
        return timing.attach(_json(UndoOut(undone=judgment_out(undone),
                                           next=offer_out(offer))))


@router.get("/campaigns/{campaign}/status", summary="progress, people and live estimates "
                                                    "(organisers)")
def status(campaign: CampaignName, request: Request,
           token: Credentials) -> dict[str, Any]:
    who = caller(request, token)
    organiser(who, campaign)
    found = campaign_status(service_of(request).store, campaign)
    return {
        "campaign": campaign, "method": found.campaign.method,
        "judged": found.judged, "budget": found.budget,
        "budget_unit": found.campaign.budget_unit, "goal": found.goal,
        "topics": [vars(t) for t in found.topics],
        "people": [vars(p) for p in found.people],
        "estimates": {"rows": found.estimates, "note": found.estimates_note,
                      "computed_at": found.estimated_at,
                      "judgments": found.estimated_judgments,
                      "stale_since": found.stale_since},
        "target": found.confidence,
        "stopped": found.campaign.stopped, "stopped_at": found.stopped_at,
        "server_writes": service_of(request).write_counts(),
    }


@router.get("/campaigns/{campaign}/judgments", summary="every judgment: who, when, label, "
                                                       "seconds, retracted (organisers)")
def judgments(campaign: CampaignName, request: Request,
              token: Credentials) -> list[dict[str, Any]]:
    who = caller(request, token)
    organiser(who, campaign)
    return judgment_log(service_of(request).store, campaign)


@router.get("/campaigns/{campaign}/export", summary="the sample as a zip of its directory "
                                                    "(organisers)",
            response_class=Response,
            responses={200: {"content": {"application/zip": {}}}})
def export(campaign: CampaignName, request: Request, token: Credentials,
           label: Annotated[str, Query(pattern=f"^{NAME.pattern}$", max_length=64,
                                       description="latest, majority, mean or an "
                                                   "assessor's name")] = "latest"
           ) -> Response:
    who = caller(request, token)
    organiser(who, campaign)
    from sampleval.campaign.live import export_archive

    live = request.app.state.live
    url = service_of(request).store.url
    data, fallback = (live.run(export_archive, url, campaign, label) if live is not None
                      else export_archive(url, campaign, label))
    return Response(data, media_type="application/zip", headers={
        "content-disposition": f'attachment; filename="{campaign}-{label}.zip"',
        "x-label-fallback": str(fallback)})
