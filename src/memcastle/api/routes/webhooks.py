"""`POST /hooks/{miner}`: a webhook delivery asks for a run of a miner (`services.webhooks`). Outside `/api` and its
bearer tokens: a delivery is verified by its own signature or token; the daemon's Host rules and mode apply."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from memcastle.api.access import writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import WebhookOut
from memcastle.api.routes.common import services

router = APIRouter(route_class=DeclaredRoute)


@router.post(
    "/hooks/{name}",
    status_code=202,
    response_model=WebhookOut,
    responses={200: {"model": WebhookOut, "description": "a delivery seen before: nothing run"}},
    tags=["mining"],
    dependencies=[Depends(writes)],
)
async def deliver(name: str, request: Request, response: Response) -> dict[str, Any]:
    """Verify the delivery (HMAC-SHA256 of the raw body, or a token), then ask for a run of the miner; a delivery
    id seen within a week runs nothing (200 with `duplicate: true`); past the rate, 429 with Retry-After."""
    body = await request.body()
    headers = {key.lower(): value for key, value in request.headers.items()}
    answer = services(request).webhooks.deliver(name, body, headers)
    if answer["duplicate"]:
        response.status_code = 200
    return answer
