"""REST routes under /api (SPEC §7): each parses, calls one service method, and renders JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from memcastle.api.access import controls, opens, reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    CheckpointOut,
    CompactSearchOut,
    ConnectorsOut,
    DiaryEntryOut,
    DiaryOut,
    DrawerOut,
    DrawerPage,
    DrawerVersions,
    DuplicatesOut,
    EntitiesOut,
    EntityDetailOut,
    FactOut,
    FactsOut,
    ForgetOut,
    JobAnswer,
    JobOut,
    JobsOut,
    LinkedFactOut,
    MineOut,
    MinerAnswer,
    MinersOut,
    NoteOut,
    Ok,
    PreferencesOut,
    PreferenceTraceOut,
    RenamedOut,
    RoomsOut,
    SearchOut,
    ShutdownOut,
    SourcesOut,
    StatusOut,
    SupersededFactOut,
    SweepOut,
    TombstonesOut,
    WakeUpOut,
    WingsOut,
)
from memcastle.api.schemas import (
    CheckpointBody,
    DiaryBody,
    EmptyBody,
    ExportBody,
    FactBody,
    ForgetBody,
    ForgetSearchBody,
    ImportBody,
    InvalidateFactBody,
    LinkFactBody,
    MineBody,
    MinerBody,
    NoteBody,
    RenameBody,
    SearchBody,
    SupersedeBody,
    SupersedeFactBody,
    VerifyBody,
)
from memcastle.errors import InvalidRequest
from memcastle.events import KINDS as ALL_EVENT_KINDS
from memcastle.model import SearchResult
from memcastle.model.vocabulary import EntityKind, FactState, JobState, Predicate
from memcastle.services import ForgetRequest, SearchRequest, Services
from memcastle.services.views import fit, search_view, shorter_hit

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


def services(request: Request) -> Services:
    return request.app.state.services  # type: ignore[no-any-return]


def requester(request: Request) -> str:
    client = request.headers.get("x-memcastle-client", "http")
    return client if client in ("cli", "http", "web") else "http"


IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", description="the same key on a retry answers with the first write"),
]


def idempotency_key(header: str | None, field: str | None) -> str | None:
    """The key from the header or the body field; both may be sent only when they agree."""
    if header is not None and field is not None and header != field:
        raise InvalidRequest("the Idempotency-Key header and the idempotency_key field differ", field="idempotency_key")
    return header if header is not None else field


_TEXT = r"^[^\x00]*\S[^\x00]*$"
Limit = Annotated[int, Query(ge=1, le=200, description="at most this many (1–200)")]
QName = Annotated[str | None, Query(min_length=1, max_length=200, pattern=_TEXT)]
AgentQuery = Annotated[str, Query(min_length=1, max_length=200, pattern=_TEXT, description="the agent's identity")]
QInstant = Annotated[
    str | None,
    Query(min_length=1, description="an RFC 3339 instant (or a date)", json_schema_extra={"format": "date-time"}),
]
JobAction = Annotated[Literal["pause", "resume", "cancel", "retry"], Path(description="what to do with the job")]


@router.get("/health", response_model=Ok, tags=["status"], dependencies=[Depends(opens)])
def health() -> dict[str, Any]:
    return {"ok": True}


@router.get("/status", response_model=StatusOut, tags=["status"], dependencies=[Depends(opens)])
def status(request: Request) -> dict[str, Any]:
    return services(request).status.status()


@router.post(
    "/notes",
    status_code=201,
    response_model=NoteOut,
    responses={200: {"model": NoteOut, "description": "an exact unnamed copy already filed, or a replayed retry"}},
    tags=["drawers"],
    dependencies=[Depends(writes)],
)
def save_note(body: NoteBody, request: Request, response: Response, key: IdempotencyKey = None) -> dict[str, Any]:
    written = services(request).drawers.write_note(
        body.content,
        idempotency_key=idempotency_key(key, body.idempotency_key),
        wing=body.wing,
        room=body.room,
        tags=body.tags,
        agent=body.agent,
        name=body.name,
        requested_by=requester(request),
    )
    if not written.created or written.replayed:
        response.status_code = 200
    if written.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return {"drawer": written.drawer.to_json(), "created": written.created, "replayed": written.replayed}


@router.get("/drawers", response_model=DrawerPage, tags=["drawers"], dependencies=[Depends(reads)])
def list_drawers(
    request: Request, wing: QName = None, room: QName = None, limit: Limit = 50, after: str | None = None
) -> dict[str, Any]:
    page = services(request).drawers.list_drawers(wing, room, limit, after)
    return {"drawers": [d.to_json() for d in page.items], "next_after": page.next_after}


@router.get("/drawers/{drawer_id}", response_model=DrawerOut, tags=["drawers"], dependencies=[Depends(reads)])
def get_drawer(drawer_id: str, request: Request) -> dict[str, Any]:
    return services(request).drawers.get_drawer(drawer_id).to_json()


@router.get(
    "/drawers/{drawer_id}/history", response_model=DrawerVersions, tags=["drawers"], dependencies=[Depends(reads)]
)
def drawer_history(drawer_id: str, request: Request) -> dict[str, Any]:
    return {"versions": [d.to_json() for d in services(request).drawers.drawer_history(drawer_id)]}


@router.get(
    "/drawers/{drawer_id}/preference",
    response_model=PreferenceTraceOut,
    tags=["preferences"],
    dependencies=[Depends(reads)],
)
def drawer_preference(drawer_id: str, request: Request) -> dict[str, Any]:
    return services(request).drawers.preference_trace(drawer_id)


@router.get(
    "/drawers/{drawer_id}/duplicates", response_model=DuplicatesOut, tags=["drawers"], dependencies=[Depends(reads)]
)
def drawer_duplicates(drawer_id: str, request: Request) -> dict[str, Any]:
    return {"duplicates": services(request).drawers.duplicates(drawer_id)}


@router.get("/preferences", response_model=PreferencesOut, tags=["preferences"], dependencies=[Depends(opens)])
def preferences(request: Request) -> dict[str, Any]:
    return services(request).policy.to_json()


@router.post(
    "/drawers/{drawer_id}/supersede",
    status_code=201,
    response_model=DrawerOut,
    tags=["drawers"],
    dependencies=[Depends(writes)],
)
def supersede_drawer(drawer_id: str, body: SupersedeBody, request: Request) -> dict[str, Any]:
    drawers = services(request).drawers
    replacement = drawers.supersede_drawer(drawer_id, body.content, reason=body.reason, requested_by=requester(request))
    return replacement.to_json()


@router.get("/wings", response_model=WingsOut, tags=["drawers"], dependencies=[Depends(reads)])
def list_wings(request: Request) -> dict[str, Any]:
    return {
        "wings": [
            {"name": w.name, "drawers": w.drawers, "created_at": w.created_at}
            for w in services(request).drawers.list_wings()
        ]
    }


@router.get("/wings/{wing}/rooms", response_model=RoomsOut, tags=["drawers"], dependencies=[Depends(reads)])
def list_rooms(wing: str, request: Request) -> dict[str, Any]:
    return {
        "rooms": [
            {"wing": r.wing, "name": r.name, "drawers": r.drawers, "created_at": r.created_at}
            for r in services(request).drawers.list_rooms(wing)
        ]
    }


# The two search routes are coroutines that run the search on a worker thread themselves: for a plain function
# route, FastAPI also validates the response on a worker thread, a second hop for the requests that matter most.
@router.post("/search", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def search(body: SearchBody, request: Request) -> dict[str, Any]:
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.search(query), body))


@router.post("/recall", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def recall(body: SearchBody, request: Request) -> dict[str, Any]:
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.recall(query), body))


def _answer(result: SearchResult, body: SearchBody) -> dict[str, Any]:
    """The complete shape, or with `full: false` the compact one MCP answers with; `max_chars` keeps either within
    its budget."""
    answer = result.to_json() if body.full else search_view(result)
    return fit(answer, "hits", body.max_chars, shrink=shorter_hit)


@router.post("/embed", status_code=202, response_model=SweepOut, tags=["search"], dependencies=[Depends(writes)])
def embed(request: Request, body: EmptyBody) -> dict[str, Any]:
    job = services(request).jobs.request_embedding(requested_by=requester(request))
    if job is None:
        return {"job": None, "message": "embeddings are disabled (embeddings.provider = none)"}
    return {"job": job.to_json()}


@router.post("/diary", status_code=201, response_model=DiaryEntryOut, tags=["agents"], dependencies=[Depends(writes)])
def write_diary(body: DiaryBody, request: Request) -> dict[str, Any]:
    drawer = services(request).agents.write_diary(
        body.agent, body.content, wing=body.wing, requested_by=requester(request)
    )
    return {"drawer": drawer.to_json()}


@router.get("/diary", response_model=DiaryOut, tags=["agents"], dependencies=[Depends(reads)])
def read_diary(request: Request, agent: AgentQuery, wing: QName = None, limit: Limit = 10) -> dict[str, Any]:
    return {"entries": [d.to_json() for d in services(request).agents.read_diary(agent, wing=wing, limit=limit)]}


@router.get("/wake-up", response_model=WakeUpOut, tags=["agents"], dependencies=[Depends(reads)])
def wake_up(
    request: Request,
    agent: AgentQuery,
    wing: QName = None,
    max_items: Annotated[int, Query(ge=1, le=200)] = 10,
    max_bytes: Annotated[int, Query(ge=256, le=1_048_576)] = 8192,
) -> dict[str, Any]:
    return services(request).agents.wake_up(agent, wing=wing, max_items=max_items, max_bytes=max_bytes)


@router.post(
    "/checkpoint",
    status_code=201,
    response_model=CheckpointOut,
    responses={200: {"model": CheckpointOut, "description": "a replayed retry (same idempotency key)"}},
    tags=["agents"],
    dependencies=[Depends(writes)],
)
def checkpoint(
    body: CheckpointBody, request: Request, response: Response, key: IdempotencyKey = None
) -> dict[str, Any]:
    written = services(request).agents.write_checkpoint(
        [item.model_dump(exclude_none=True) for item in body.items],
        agent=body.agent,
        idempotency_key=idempotency_key(key, body.idempotency_key),
        requested_by=requester(request),
    )
    if written.replayed:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"
    return {"drawers": [d.to_json() for d in written.drawers], "replayed": written.replayed}


@router.post("/extract", status_code=202, response_model=SweepOut, tags=["facts"], dependencies=[Depends(writes)])
def extract(request: Request, body: EmptyBody) -> dict[str, Any]:
    job = services(request).jobs.request_extraction(requested_by=requester(request))
    if job is None:
        return {"job": None, "message": "extraction is disabled (extraction.provider = none)"}
    return {"job": job.to_json()}


@router.get("/facts", response_model=FactsOut, tags=["facts"], dependencies=[Depends(reads)])
def list_facts(
    request: Request,
    subject: QName = None,
    predicate: Annotated[Predicate | None, Query()] = None,
    object: QName = None,
    state: Annotated[FactState | None, Query()] = None,
    as_of: QInstant = None,
    limit: Limit = 50,
) -> dict[str, Any]:
    return {
        "facts": services(request).facts.list_facts(
            subject=subject, predicate=predicate, object=object, state=state, as_of=as_of, limit=limit
        )
    }


@router.get("/facts/{fact_id}", response_model=FactOut, tags=["facts"], dependencies=[Depends(reads)])
def get_fact(fact_id: str, request: Request, as_of: QInstant = None) -> dict[str, Any]:
    return services(request).facts.get_fact(fact_id, as_of=as_of)


@router.get("/facts/{fact_id}/history", response_model=FactsOut, tags=["facts"], dependencies=[Depends(reads)])
def fact_history(fact_id: str, request: Request) -> dict[str, Any]:
    return {"facts": services(request).facts.fact_history(fact_id)}


@router.post("/facts", status_code=201, response_model=FactOut, tags=["facts"], dependencies=[Depends(writes)])
def add_fact(body: FactBody, request: Request) -> dict[str, Any]:
    return services(request).facts.add(
        body.model_dump(exclude={"evidence_drawer"}),
        evidence_drawer=body.evidence_drawer,
        requested_by=requester(request),
    )


@router.post(
    "/facts/{fact_id}/supersede",
    status_code=201,
    response_model=SupersededFactOut,
    tags=["facts"],
    dependencies=[Depends(writes)],
)
def supersede_fact(fact_id: str, body: SupersedeFactBody, request: Request) -> dict[str, Any]:
    return services(request).facts.supersede(fact_id, body.model_dump(), requested_by=requester(request))


@router.post("/facts/{fact_id}/invalidate", response_model=FactOut, tags=["facts"], dependencies=[Depends(writes)])
def invalidate_fact(fact_id: str, body: InvalidateFactBody, request: Request) -> dict[str, Any]:
    return services(request).facts.invalidate(fact_id, body.reason)


@router.post(
    "/facts/{fact_id}/link",
    status_code=201,
    response_model=LinkedFactOut,
    tags=["facts"],
    dependencies=[Depends(writes)],
)
def link_fact(fact_id: str, body: LinkFactBody, request: Request) -> dict[str, Any]:
    return services(request).facts.link(fact_id, body.to, body.kind, body.reason)


@router.get("/entities", response_model=EntitiesOut, tags=["facts"], dependencies=[Depends(reads)])
def list_entities(
    request: Request, name: str | None = None, kind: Annotated[EntityKind | None, Query()] = None, limit: Limit = 50
) -> dict[str, Any]:
    return {"entities": [e.to_json() for e in services(request).facts.list_entities(name, kind, limit)]}


@router.get("/entities/{entity_id}", response_model=EntityDetailOut, tags=["facts"], dependencies=[Depends(reads)])
def get_entity(entity_id: str, request: Request) -> dict[str, Any]:
    return services(request).facts.get_entity(entity_id)


DryRun = Annotated[bool | None, Query(description="count what would go and change nothing")]


@router.post("/forget", response_model=ForgetOut, tags=["forgetting"], dependencies=[Depends(writes)])
def forget(body: ForgetBody, request: Request) -> dict[str, Any]:
    """Erase a scope's drawers and everything derived from them (a dry run by default for source, room, wing and
    search); a tombstone stays."""
    scope = ForgetRequest(
        kind=body.scope,
        drawer_id=body.drawer_id,
        source_id=body.source_id,
        document=body.document,
        wing=body.wing,
        room=body.room,
        search=_forget_search(body.search) if body.search is not None else None,
    )
    return services(request).forgetting.forget(scope, dry_run=body.dry_run, requested_by=requester(request)).to_json()


@router.delete("/drawers/{drawer_id}", response_model=ForgetOut, tags=["forgetting"], dependencies=[Depends(writes)])
def forget_drawer(drawer_id: str, request: Request, dry_run: DryRun = None) -> dict[str, Any]:
    """Forget one drawer with its whole version history."""
    scope = ForgetRequest(kind="drawer", drawer_id=drawer_id)
    return services(request).forgetting.forget(scope, dry_run=dry_run, requested_by=requester(request)).to_json()


@router.delete("/sources/{source_id}", response_model=ForgetOut, tags=["forgetting"], dependencies=[Depends(writes)])
def forget_source(source_id: str, request: Request, dry_run: DryRun = None) -> dict[str, Any]:
    """Forget every drawer mined from a source (a dry run unless dry_run=false)."""
    scope = ForgetRequest(kind="source", source_id=source_id)
    return services(request).forgetting.forget(scope, dry_run=dry_run, requested_by=requester(request)).to_json()


Force = Annotated[bool, Query(description="forget the drawers it holds with it")]


@router.delete("/wings/{wing}", response_model=ForgetOut, tags=["drawers"], dependencies=[Depends(writes)])
def delete_wing(wing: str, request: Request, force: Force = False, dry_run: bool = False) -> dict[str, Any]:
    """Delete a wing: an empty one, or with force one that holds drawers (a forget of them)."""
    return (
        services(request).places.delete(wing, force=force, dry_run=dry_run, requested_by=requester(request)).to_json()
    )


@router.delete("/wings/{wing}/rooms/{room}", response_model=ForgetOut, tags=["drawers"], dependencies=[Depends(writes)])
def delete_room(wing: str, room: str, request: Request, force: Force = False, dry_run: bool = False) -> dict[str, Any]:
    """Delete a room: an empty one, or with force one that holds drawers (a forget of them)."""
    places = services(request).places
    return places.delete(wing, room, force=force, dry_run=dry_run, requested_by=requester(request)).to_json()


@router.post("/wings/{wing}/rename", response_model=RenamedOut, tags=["drawers"], dependencies=[Depends(writes)])
def rename_wing(wing: str, body: RenameBody, request: Request) -> dict[str, Any]:
    return services(request).places.rename(wing, body.name)


@router.post(
    "/wings/{wing}/rooms/{room}/rename", response_model=RenamedOut, tags=["drawers"], dependencies=[Depends(writes)]
)
def rename_room(wing: str, room: str, body: RenameBody, request: Request) -> dict[str, Any]:
    return services(request).places.rename(wing, body.name, room=room)


@router.get("/tombstones", response_model=TombstonesOut, tags=["forgetting"], dependencies=[Depends(reads)])
def tombstones(request: Request, limit: Limit = 50) -> dict[str, Any]:
    return {"tombstones": [t.to_json() for t in services(request).forgetting.tombstones(limit)]}


@router.get("/sources", response_model=SourcesOut, tags=["mining"], dependencies=[Depends(reads)])
def sources(request: Request) -> dict[str, Any]:
    return {"sources": services(request).places.list_sources()}


@router.post("/export", status_code=202, response_model=JobAnswer, tags=["lifecycle"], dependencies=[Depends(writes)])
def export(body: ExportBody, request: Request) -> dict[str, Any]:
    """Write the palace to a portable archive at `path` (a new file), in the background."""
    job = services(request).archives.export(body.path, vectors=body.vectors, requested_by=requester(request))
    return {"job": job.to_json()}


@router.post("/import", status_code=202, response_model=JobAnswer, tags=["lifecycle"], dependencies=[Depends(writes)])
def import_archive(body: ImportBody, request: Request) -> dict[str, Any]:
    """Load the archive at `path` into this palace, in the background (idempotent: what is here is skipped)."""
    job = services(request).archives.import_archive(body.path, requested_by=requester(request))
    return {"job": job.to_json()}


def _forget_search(body: ForgetSearchBody) -> SearchRequest:
    return SearchRequest(
        query=body.query,
        wing=body.wing,
        room=body.room,
        tags=tuple(body.tags),
        source_kind=body.source_kind,
        connector=body.connector,
        as_of=body.as_of,
        from_=body.from_,
        until=body.until,
        include_historical=body.include_historical,
    )


def _search_request(body: SearchBody) -> SearchRequest:
    return SearchRequest(
        query=body.query,
        limit=body.limit,
        wing=body.wing,
        room=body.room,
        tags=tuple(body.tags),
        source_kind=body.source_kind,
        connector=body.connector,
        ranking=body.ranking,
        as_of=body.as_of,
        from_=body.from_,
        until=body.until,
        include_historical=body.include_historical,
        expand=body.expand,
        preferences=body.preferences,
        known_at=body.known_at,
        known_from=body.known_from,
        known_until=body.known_until,
    )


@router.get("/jobs", response_model=JobsOut, tags=["jobs"], dependencies=[Depends(reads)])
def list_jobs(
    request: Request,
    status: Annotated[JobState | None, Query()] = None,
    kind: str | None = None,
    limit: Limit = 50,
) -> dict[str, Any]:
    jobs = services(request).jobs
    return {"jobs": [{**j.to_json(), "waiting": jobs.why_waiting(j)} for j in jobs.list_jobs(status, kind, limit)]}


@router.get("/jobs/{job_id}", response_model=JobOut, tags=["jobs"], dependencies=[Depends(reads)])
def get_job(job_id: str, request: Request) -> dict[str, Any]:
    jobs = services(request).jobs
    job = jobs.get_job(job_id)
    return {**job.to_json(), "waiting": jobs.why_waiting(job)}


@router.post("/jobs/{job_id}/{action}", response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def control_job(job_id: str, action: JobAction, request: Request, body: EmptyBody) -> dict[str, Any]:
    return {"job": services(request).jobs.control_job(job_id, action).to_json()}


@router.post("/mine", status_code=202, response_model=MineOut, tags=["mining"], dependencies=[Depends(writes)])
def mine(body: MineBody, request: Request) -> dict[str, Any]:
    job, created = services(request).mining.submit_mine(
        body.connector,
        body.locator,
        body.options,
        wing=body.wing,
        full=body.full,
        notice_removed=body.notice_removed,
        requested_by=requester(request),
    )
    return {"job": job.to_json(), "joined": not created}


@router.get("/connectors", response_model=ConnectorsOut, tags=["mining"], dependencies=[Depends(opens)])
def connectors(request: Request) -> dict[str, Any]:
    return {"connectors": services(request).mining.list_connectors()}


@router.get("/miners", response_model=MinersOut, tags=["mining"], dependencies=[Depends(reads)])
def miners(request: Request) -> dict[str, Any]:
    return {"miners": services(request).miners.list_miners()}


@router.post("/miners", status_code=201, response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(writes)])
def define_miner(body: MinerBody, request: Request) -> dict[str, Any]:
    return {"miner": services(request).miners.define(body.model_dump())}


@router.get("/miners/{name}", response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(reads)])
def get_miner(name: str, request: Request) -> dict[str, Any]:
    return {"miner": services(request).miners.get_miner(name)}


@router.delete("/miners/{name}", response_model=Ok, tags=["mining"], dependencies=[Depends(writes)])
def remove_miner(name: str, request: Request) -> dict[str, Any]:
    services(request).miners.remove(name)
    return {"ok": True}


@router.post(
    "/miners/{name}/run", status_code=202, response_model=MineOut, tags=["mining"], dependencies=[Depends(writes)]
)
def run_miner(name: str, request: Request, body: EmptyBody) -> dict[str, Any]:
    job, created = services(request).miners.run(name, requested_by=requester(request))
    return {"job": job.to_json(), "joined": not created}


@router.post("/miners/{name}/enable", response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(writes)])
def enable_miner(name: str, request: Request, body: EmptyBody) -> dict[str, Any]:
    return {"miner": services(request).miners.set_enabled(name, True)}


@router.post("/miners/{name}/disable", response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(writes)])
def disable_miner(name: str, request: Request, body: EmptyBody) -> dict[str, Any]:
    return {"miner": services(request).miners.set_enabled(name, False)}


@router.post("/verify", status_code=202, response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def verify(body: VerifyBody, request: Request) -> dict[str, Any]:
    job = services(request).jobs.submit_verify(
        batch=body.batch, pace_ms=body.pace_ms, priority=body.priority, requested_by=requester(request)
    )
    return {"job": job.to_json()}


@router.post(
    "/shutdown", status_code=202, response_model=ShutdownOut, tags=["status"], dependencies=[Depends(controls)]
)
def shutdown(request: Request, body: EmptyBody) -> dict[str, Any]:
    request.app.state.request_shutdown()
    return {"ok": True, "message": "draining jobs, then exiting"}


@router.get(
    "/events",
    tags=["events"],
    dependencies=[Depends(reads)],
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "a stream of Server-Sent Events"}},
)
async def event_stream(
    request: Request,
    kinds: Annotated[str | None, Query(description="comma-separated: job, trigger, drawers, forget")] = None,
    last_event_id: Annotated[
        str | None, Header(description="the id of the last event seen, to resume after it")
    ] = None,
    after: Annotated[str | None, Query(description="as Last-Event-ID, for clients that cannot set it")] = None,
) -> EventSourceResponse:
    """Job progress and state changes, trigger runs, drawer writes (ids and places, never text) and forgets, as they
    happen. A client too slow to keep up is dropped; reconnecting with `Last-Event-ID` resumes after that event (a
    `reset` event first when some were missed)."""
    wanted = parse_kinds(kinds)
    bus = services(request).events

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async for event in bus.subscribe(last_id=last_event_id or after, kinds=wanted):
            yield ServerSentEvent(data=json.dumps(event.data, ensure_ascii=False), event=event.kind, id=event.id)

    return EventSourceResponse(stream(), ping=EVENT_PING_SECONDS, send_timeout=EVENT_SEND_TIMEOUT)


EVENT_KINDS = tuple(k for k in ALL_EVENT_KINDS if k != "reset")
EVENT_PING_SECONDS = 15  # a comment line now and then keeps proxies and idle timeouts from closing the stream
EVENT_SEND_TIMEOUT = 10.0  # a client whose socket takes longer than this to accept an event is dropped


def parse_kinds(kinds: str | None) -> frozenset[str] | None:
    if kinds is None or not kinds.strip():
        return None
    wanted = frozenset(k.strip() for k in kinds.split(",") if k.strip())
    unknown = wanted - set(EVENT_KINDS)
    if unknown:
        raise InvalidRequest(
            f"unknown event kind(s) {', '.join(sorted(unknown))}; one of {', '.join(EVENT_KINDS)}", field="kinds"
        )
    return wanted | {"reset"}
