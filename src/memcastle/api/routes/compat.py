"""Routes a client written for the original MemCastle (Rust) calls, each an alias onto the one service operation the
native route calls (docs/http-api.md, "Compatibility with MemCastle (Rust)"): `POST /api/jobs` tagged by `type`,
and an entity's mentions and candidates on their own paths. Field names and body shapes of the original that native
routes take too (`text` and `filter`, `agent_identity`, `embedding`, `name`, `force-cancel`, `?shape=flat`) live
with those routes. Also here: drawers addressed by wing, room and name, the triggers (which live on the miners), a
miner defined by `PUT`, and the one token of `/api/auth/token`."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import Field

from memcastle.api.access import controls, palace_wide, reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    CandidatesOut,
    DrawerOut,
    DrawerPage,
    ForgetOut,
    JobAnswer,
    MinerAnswer,
    MinersOut,
    NoteOut,
    Open,
    Shape,
)
from memcastle.api.routes.common import Limit, requester, services
from memcastle.api.schemas import Body, Content, EmptyBody, MinerBody, Name, Tags
from memcastle.errors import InvalidRequest, NotFound
from memcastle.model import Drawer, Job
from memcastle.model.answers import MinerView
from memcastle.model.requests import MinerDefinition, MineRequest, request_of
from memcastle.services import ForgetRequest, Services

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


class TriggerOut(Shape):
    name: str = Field(description="the miner the triggers belong to")
    triggers: list[str] = Field(description="watch, schedule, poll, webhook")
    enabled: bool
    miner: Open = Field(description="the miner, as GET /api/miners/{name} shows it")


class TriggersOut(Shape):
    triggers: list[TriggerOut]


class MentionsOut(Shape):
    mentions: list[Open] = Field(description="each drawer that mentions the entity, with the name as it spelled it")


# The fields each job type takes (beyond `type`); any other is refused by name.
JOB_FIELDS = {
    "mine": {"path", "provider", "locator", "wing", "full"},
    "audit": set(),
    "extract": set(),
    "embed": set(),
    "repair": {"dry_run"},
}


class RoomDrawerBody(Body):
    """A drawer written into a room by its path: its text, a name unique in the room, tags."""

    content: Content
    name: Name | None = None
    tags: Tags = Field(default_factory=list)


class OriginalJobBody(Body):
    """The original's job submission: a body tagged by `type`."""

    type: Literal["mine", "audit", "extract", "embed", "repair"] = Field(
        description="what to run (a checkpoint: POST /api/checkpoint)"
    )
    path: str | None = Field(None, description="mine: an absolute folder (the directory connector)")
    provider: Name | None = Field(None, description="mine: a connector by name (pi, git, notes, …)")
    locator: str | None = Field(None, description="mine: what the provider reads")
    wing: Name | None = None
    full: bool = False
    dry_run: bool = Field(True, description="repair: true (the default) only reports, as an audit")


@router.post("/jobs", status_code=202, response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def submit_job(body: OriginalJobBody, request: Request) -> dict[str, Any]:
    """Submit a job as the original MemCastle does: `mine` (a `path`, or a `provider` with its `locator`), `audit`,
    `extract`, `embed`, `repair` (`dry_run`, true by default: an audit). Each queues what its own route queues."""
    given = {name for name in body.model_fields_set if name != "type"}
    extra = sorted(given - JOB_FIELDS[body.type])
    if extra:
        raise InvalidRequest(f"a {body.type} job takes no {extra[0]}", field=extra[0])
    return {"job": _submitted(services(request), body, requester(request)).to_json()}


def _submitted(palace: Services, body: OriginalJobBody, requested_by: str) -> Job:
    jobs = palace.jobs
    if body.type == "mine":
        if (body.path is None) == (body.provider is None):
            raise InvalidRequest("give exactly one of path and provider", field="path")
        connector = "directory" if body.path is not None else str(body.provider)
        locator = body.path if body.path is not None else (body.locator or "")
        asked = MineRequest(connector=connector, locator=locator, wing=body.wing, full=body.full)
        return palace.mining.submit_mine(asked, requested_by=requested_by).job
    if body.type == "audit" or (body.type == "repair" and body.dry_run):
        return jobs.submit_audit(requested_by=requested_by)
    if body.type == "repair":
        return jobs.submit_repair(requested_by=requested_by)
    sweep = jobs.request_extraction if body.type == "extract" else jobs.request_embedding
    job = sweep(requested_by=requested_by)
    if job is None:
        raise InvalidRequest(
            f"{'extraction' if body.type == 'extract' else 'embeddings'} are off in this palace", field="type"
        )
    return job


@router.get("/entities/{entity_id}/mentions", response_model=MentionsOut, tags=["facts"], dependencies=[Depends(reads)])
def entity_mentions(entity_id: str, request: Request) -> dict[str, Any]:
    """The drawers that mention an entity, each with the name as it spelled it (`GET /api/entities/{id}`'s
    `mentions`)."""
    return {"mentions": services(request).facts.get_entity(entity_id).to_json()["mentions"]}


@router.get(
    "/entities/{entity_id}/candidates", response_model=CandidatesOut, tags=["facts"], dependencies=[Depends(reads)]
)
def entity_candidates(entity_id: str, request: Request) -> dict[str, Any]:
    """The entities this one may be, left for a person to look at (`GET /api/entities/{id}`'s `hints`)."""
    return {"candidates": services(request).facts.get_entity(entity_id).to_json()["hints"]}


# --- drawers addressed by wing, room and name --------------------------------------------------------------------


@router.get(
    "/wings/{wing}/rooms/{room}/drawers", response_model=DrawerPage, tags=["drawers"], dependencies=[Depends(reads)]
)
def room_drawers(wing: str, room: str, request: Request, limit: Limit = 50, after: str | None = None) -> dict[str, Any]:
    """The room's drawers (`GET /api/drawers?wing=&room=`)."""
    page = services(request).drawers.list_drawers(wing, room, limit, after)
    return {"drawers": [d.to_json() for d in page.items], "next_after": page.next_after}


@router.post(
    "/wings/{wing}/rooms/{room}/drawers",
    status_code=201,
    response_model=NoteOut,
    responses={200: {"model": NoteOut, "description": "an exact unnamed copy already filed in the room"}},
    tags=["drawers"],
    dependencies=[Depends(writes)],
)
def write_room_drawer(
    wing: str, room: str, body: RoomDrawerBody, request: Request, response: Response
) -> dict[str, Any]:
    """A drawer filed into the room, made with its wing if new (`POST /api/notes` with `wing` and `room`)."""
    written = services(request).drawers.write_note(
        body.content, wing=wing, room=room, name=body.name, tags=body.tags, requested_by=requester(request)
    )
    if not written.created:
        response.status_code = 200
    return {"drawer": written.drawer.to_json(), "created": written.created, "replayed": written.replayed}


@router.get(
    "/wings/{wing}/rooms/{room}/drawers/{drawer:path}",
    response_model=DrawerOut,
    tags=["drawers"],
    dependencies=[Depends(reads)],
)
def room_drawer(wing: str, room: str, drawer: str, request: Request) -> dict[str, Any]:
    """One drawer of the room by its name or id (`GET /api/drawers/{id}`)."""
    return _in_room(services(request), wing, room, drawer).to_json()


@router.delete(
    "/wings/{wing}/rooms/{room}/drawers/{drawer:path}",
    response_model=ForgetOut,
    tags=["forgetting"],
    dependencies=[Depends(writes)],
)
def forget_room_drawer(wing: str, room: str, drawer: str, request: Request) -> dict[str, Any]:
    """Forget one drawer of the room, by its name or id, with its history (`DELETE /api/drawers/{id}`)."""
    palace = services(request)
    found = _in_room(palace, wing, room, drawer)
    scope = ForgetRequest(kind="drawer", drawer_id=found.id)
    return palace.forgetting.forget(scope, dry_run=False, requested_by=requester(request)).to_json()


def _in_room(palace: Services, wing: str, room: str, drawer: str) -> Drawer:
    """The room's current drawer named `drawer`, else the drawer with that id (or unique prefix) when it is in the
    room; 404 otherwise."""
    after: str | None = None
    while True:
        page = palace.drawers.list_drawers(wing, room, 200, after)
        named = next((d for d in page.items if d.name == drawer), None)
        if named is not None:
            return named
        if page.next_after is None:
            break
        after = page.next_after
    try:
        found = palace.drawers.get_drawer(drawer)
    except NotFound:
        found = None
    if found is None or (found.wing, found.room) != (wing, room):
        raise NotFound(f"no drawer {drawer!r} in {wing}/{room}", help="GET /api/wings/{wing}/rooms/{room}/drawers")
    return found


# --- triggers, miners, the one token ------------------------------------------------------------------------------


@router.get("/triggers", response_model=TriggersOut, tags=["mining"], dependencies=[Depends(reads)])
def triggers(request: Request) -> dict[str, Any]:
    """The triggers of every miner (they live on the miners: `GET /api/miners`), a miner with none left out."""
    return {"triggers": [_trigger(m) for m in services(request).miners.list_miners() if m.triggers]}


@router.get("/triggers/{name}", response_model=TriggerOut, tags=["mining"], dependencies=[Depends(reads)])
def trigger(name: str, request: Request) -> dict[str, Any]:
    """One miner's triggers (`GET /api/miners/{name}`)."""
    return _trigger(services(request).miners.get_miner(name))


def _trigger(miner: MinerView) -> dict[str, Any]:
    view = miner.to_json()
    return {"name": miner.name, "triggers": miner.triggers, "enabled": miner.enabled, "miner": view}


@router.post(
    "/miners/reload",
    response_model=MinersOut,
    tags=["mining"],
    dependencies=[Depends(writes), Depends(palace_wide)],
)
def reload_miners(request: Request, body: EmptyBody) -> dict[str, Any]:
    """Read config.toml's `[[miners]]` again and follow them from now on; every miner after it (`GET /api/miners`).
    A malformed file is refused naming its line, and the miners stay as they were."""
    return {"miners": [m.to_json() for m in services(request).miners.reload()]}


@router.put("/miners/{name}", response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(writes)])
def set_miner(name: str, body: MinerBody, request: Request) -> dict[str, Any]:
    """Define or replace the miner `name` (`POST /api/miners`); the body's name, when given, must be it."""
    if body.name != name:
        raise InvalidRequest(f"the body names miner {body.name!r}, the path {name!r}", field="name")
    return {"miner": services(request).miners.define(request_of(MinerDefinition, body)).to_json()}
