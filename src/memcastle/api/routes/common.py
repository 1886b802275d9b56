"""What the route modules share: the services of the request, who asked, and the query and header types."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Header, Path, Query, Request

from memcastle.errors import InvalidRequest
from memcastle.services import Services, attached


def services(request: Request) -> Services:
    return attached(request.app.state)


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
