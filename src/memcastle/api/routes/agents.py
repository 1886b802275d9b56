"""An agent's own memory: diary, wake-up, checkpoints."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from memcastle.api.access import reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    CheckpointOut,
    DiaryEntryOut,
    DiaryOut,
    JobAnswer,
    WakeUpOut,
)
from memcastle.api.routes.common import (
    AgentQuery,
    IdempotencyKey,
    Limit,
    QName,
    idempotency_key,
    requester,
    services,
)
from memcastle.api.schemas import (
    CheckpointBody,
    DiaryBody,
)
from memcastle.model.requests import CheckpointItem, request_of

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


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
    response_model=CheckpointOut | JobAnswer,
    responses={
        200: {"model": CheckpointOut, "description": "a replayed retry (same idempotency key)"},
        202: {"model": JobAnswer, "description": "emergency: queued as a durable job"},
    },
    tags=["agents"],
    dependencies=[Depends(writes)],
)
def checkpoint(
    body: CheckpointBody, request: Request, response: Response, key: IdempotencyKey = None
) -> dict[str, Any]:
    if body.emergency:
        response.status_code = 202
        return {"job": services(request).queue_checkpoint(body.items, body.agent, requester(request)).to_json()}
    written = services(request).agents.write_checkpoint(
        [request_of(CheckpointItem, item) for item in body.items],
        agent=body.agent,
        idempotency_key=idempotency_key(key, body.idempotency_key),
        requested_by=requester(request),
    )
    if written.replayed:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"
    return {"drawers": [d.to_json() for d in written.drawers], "replayed": written.replayed}
