"""Forgetting for good (a drawer, a source, a room, a wing, a search's drawers), tombstones, export and import, and
the read audit (what was read, by whom)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from memcastle.api.access import palace_wide, reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    ForgetOut,
    JobAnswer,
    ReadsOut,
    SweepOut,
    TombstonesOut,
)
from memcastle.api.routes.common import (
    Limit,
    requester,
    services,
)
from memcastle.api.schemas import (
    EmptyBody,
    ExportBody,
    ForgetBody,
    ForgetSearchBody,
    ImportBody,
)
from memcastle.model.requests import request_of
from memcastle.services import ForgetRequest, SearchRequest

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


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


@router.delete(
    "/sources/{source_id}",
    response_model=ForgetOut,
    tags=["forgetting"],
    dependencies=[Depends(writes), Depends(palace_wide)],
)
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


@router.get(
    "/tombstones",
    response_model=TombstonesOut,
    tags=["forgetting"],
    dependencies=[Depends(reads), Depends(palace_wide)],
)
def tombstones(request: Request, limit: Limit = 50) -> dict[str, Any]:
    return {"tombstones": [t.to_json() for t in services(request).forgetting.tombstones(limit)]}


@router.get(
    "/audit/reads",
    response_model=ReadsOut,
    tags=["security"],
    dependencies=[Depends(reads), Depends(palace_wide)],
)
def audit_reads(
    request: Request,
    token: Annotated[str | None, Query(description="reads by the bearer token of this name")] = None,
    agent: Annotated[str | None, Query(description="reads by the MCP client of this name")] = None,
    drawer: Annotated[str | None, Query(description="reads that returned this drawer (or fact) id")] = None,
    since: Annotated[str | None, Query(description="reads at or after this instant (RFC 3339)")] = None,
    limit: Limit = 50,
) -> dict[str, Any]:
    """What was read, newest first: who, when, the operation, the query and the ids returned (never the text)."""
    found = services(request).audit.reads(token=token, client=agent, item=drawer, since=since, limit=limit)
    return {"reads": [r.to_json() for r in found]}


@router.post(
    "/lifecycle/erase",
    status_code=202,
    response_model=SweepOut,
    tags=["lifecycle"],
    dependencies=[Depends(writes), Depends(palace_wide)],
)
def erase_expired(request: Request, body: EmptyBody) -> dict[str, Any]:
    """Erase now what `[[lifecycle]]` rules with `forget_after` expired long ago (the daemon also asks hourly)."""
    job = services(request).lifecycle.request_erase(requested_by=requester(request))
    if job is None:
        return {"job": None, "message": "no [[lifecycle]] rule has forget_after: nothing is erased by time"}
    return {"job": job.to_json()}


@router.post(
    "/export",
    status_code=202,
    response_model=JobAnswer,
    tags=["lifecycle"],
    dependencies=[Depends(writes), Depends(palace_wide)],
)
def export(body: ExportBody, request: Request) -> dict[str, Any]:
    """Write the palace to a portable archive at `path` (a new file), in the background."""
    job = services(request).archives.export(body.path, vectors=body.vectors, requested_by=requester(request))
    return {"job": job.to_json()}


@router.post(
    "/import",
    status_code=202,
    response_model=JobAnswer,
    tags=["lifecycle"],
    dependencies=[Depends(writes), Depends(palace_wide)],
)
def import_archive(body: ImportBody, request: Request) -> dict[str, Any]:
    """Load the archive at `path` into this palace, in the background (idempotent: what is here is skipped)."""
    job = services(request).archives.import_archive(body.path, requested_by=requester(request))
    return {"job": job.to_json()}


def _forget_search(body: ForgetSearchBody) -> SearchRequest:
    return request_of(SearchRequest, dict(body))
