"""The live event stream (Server-Sent Events)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from memcastle.api.access import reads
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.routes.common import (
    services,
)
from memcastle.errors import InvalidRequest
from memcastle.events import KINDS as ALL_EVENT_KINDS
from memcastle.services.events import SCOPED_KINDS, scoped_event
from memcastle.services.reader import palace_wide, visibility

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


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
    `reset` event first when some were missed). A token limited to some wings follows the writes of drawers it can
    read, and nothing else."""
    wanted = parse_kinds(kinds)
    seen = visibility()
    if not seen.reads_everything:
        if wanted is not None and wanted - SCOPED_KINDS:
            palace_wide(f"{', '.join(sorted(wanted - SCOPED_KINDS))} events")
        wanted = SCOPED_KINDS
    bus = services(request).events

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async for event in bus.subscribe(last_id=last_event_id or after, kinds=wanted):
            data = scoped_event(event.kind, event.data, seen)
            if data is not None:
                yield ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=event.kind, id=event.id)

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
