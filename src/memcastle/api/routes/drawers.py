"""Notes and drawers: writing, reading, history, copies, supersession; wings and rooms."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from memcastle.api.access import reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    DrawerOut,
    DrawerPage,
    DrawerVersions,
    DuplicatesOut,
    NoteOut,
    PlaceOut,
    PreferenceTraceOut,
    RenamedOut,
    RoomsOut,
    VectorStateOut,
    WingsOut,
)
from memcastle.api.routes.common import (
    IdempotencyKey,
    Limit,
    QName,
    idempotency_key,
    requester,
    services,
)
from memcastle.api.schemas import (
    EmbeddingBody,
    InvalidateBody,
    MarksBody,
    NoteBody,
    PlaceBody,
    RenameBody,
    SupersedeBody,
)

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


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
        expires_at=body.expires_at,
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
    return services(request).drawers.preference_trace(drawer_id).to_json()


@router.get(
    "/drawers/{drawer_id}/duplicates", response_model=DuplicatesOut, tags=["drawers"], dependencies=[Depends(reads)]
)
def drawer_duplicates(drawer_id: str, request: Request) -> dict[str, Any]:
    return {"duplicates": [d.to_json() for d in services(request).drawers.duplicates(drawer_id)]}


@router.post(
    "/drawers/{drawer_id}/supersede",
    status_code=201,
    response_model=DrawerOut,
    tags=["drawers"],
    dependencies=[Depends(writes)],
)
def supersede_drawer(drawer_id: str, body: SupersedeBody, request: Request) -> dict[str, Any]:
    drawers = services(request).drawers
    replacement = drawers.supersede_drawer(
        drawer_id, body.content, reason=body.reason, requested_by=requester(request), agent=body.agent
    )
    return replacement.to_json()


@router.post(
    "/drawers/{drawer_id}/invalidate", response_model=DrawerOut, tags=["drawers"], dependencies=[Depends(writes)]
)
def invalidate_drawer(drawer_id: str, body: InvalidateBody, request: Request) -> dict[str, Any]:
    """Close a current drawer with no replacement (it was wrong): it stays in history, `closed_reason` says why."""
    return services(request).drawers.invalidate_drawer(drawer_id, reason=body.reason).to_json()


@router.put(
    "/drawers/{drawer_id}/embedding", response_model=VectorStateOut, tags=["drawers"], dependencies=[Depends(writes)]
)
def supply_embedding(drawer_id: str, body: EmbeddingBody, request: Request) -> dict[str, Any]:
    """Your own vector for a drawer, of the palace's dimension, for the model searches rank by: marked `supplied`,
    kept until the model changes (then the drawer is embedded again like any other)."""
    return services(request).search.supply_vector(drawer_id, body.vector)


@router.get(
    "/drawers/{drawer_id}/embedding", response_model=VectorStateOut, tags=["drawers"], dependencies=[Depends(reads)]
)
def embedding_state(drawer_id: str, request: Request) -> dict[str, Any]:
    return services(request).search.vector_state(drawer_id)


@router.post("/drawers/{drawer_id}/marks", response_model=DrawerOut, tags=["drawers"], dependencies=[Depends(writes)])
def mark_drawer(drawer_id: str, body: MarksBody, request: Request) -> dict[str, Any]:
    """Pin or unpin, hide or show a drawer (its later versions keep the marks)."""
    return services(request).drawers.mark(drawer_id, pinned=body.pinned, hidden=body.hidden).to_json()


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


@router.post(
    "/wings",
    status_code=201,
    response_model=PlaceOut,
    responses={200: {"model": PlaceOut, "description": "the wing already existed"}},
    tags=["drawers"],
    dependencies=[Depends(writes)],
)
def create_wing(body: PlaceBody, request: Request, response: Response) -> dict[str, Any]:
    place, created = services(request).places.create(body.name)
    response.status_code = 201 if created else 200
    return {**place.to_json(), "created": created}


@router.post(
    "/wings/{wing}/rooms",
    status_code=201,
    response_model=PlaceOut,
    responses={200: {"model": PlaceOut, "description": "the room already existed"}},
    tags=["drawers"],
    dependencies=[Depends(writes)],
)
def create_room(wing: str, body: PlaceBody, request: Request, response: Response) -> dict[str, Any]:
    place, created = services(request).places.create(wing, body.name)
    response.status_code = 201 if created else 200
    return {**place.to_json(), "created": created}


@router.get("/wings/{wing}", response_model=PlaceOut, tags=["drawers"], dependencies=[Depends(reads)])
def show_wing(wing: str, request: Request) -> dict[str, Any]:
    return services(request).places.totals(wing).to_json()


@router.get("/wings/{wing}/rooms/{room}", response_model=PlaceOut, tags=["drawers"], dependencies=[Depends(reads)])
def show_room(wing: str, room: str, request: Request) -> dict[str, Any]:
    return services(request).places.totals(wing, room).to_json()


@router.post("/wings/{wing}/rename", response_model=RenamedOut, tags=["drawers"], dependencies=[Depends(writes)])
def rename_wing(wing: str, body: RenameBody, request: Request) -> dict[str, Any]:
    return services(request).places.rename(wing, body.name).to_json()


@router.post(
    "/wings/{wing}/rooms/{room}/rename", response_model=RenamedOut, tags=["drawers"], dependencies=[Depends(writes)]
)
def rename_room(wing: str, room: str, body: RenameBody, request: Request) -> dict[str, Any]:
    return services(request).places.rename(wing, body.name, room=room).to_json()
