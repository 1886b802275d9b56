"""What the route modules share: the services of the request, who asked, and the query and header types."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Header, Path, Query, Request

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
_AgentName = Annotated[
    str | None, Query(min_length=1, max_length=200, pattern=_TEXT, description="the agent's identity")
]


def agent_named(
    agent: _AgentName = None,
    agent_identity: Annotated[
        str | None, Query(min_length=1, max_length=200, pattern=_TEXT, description="`agent` by the original's name")
    ] = None,
) -> str:
    """The agent a read is for: `agent`, or `agent_identity` (the original MemCastle's name); one is required, and
    both only when they agree."""
    if agent is not None and agent_identity is not None and agent != agent_identity:
        raise InvalidRequest("agent and agent_identity name two agents: give one", field="agent_identity")
    named = agent or agent_identity
    if named is None:
        raise InvalidRequest("agent is required: the agent's identity (agent_identity also reads)", field="agent")
    return named


AgentQuery = Annotated[str, Depends(agent_named)]
QInstant = Annotated[
    str | None,
    Query(min_length=1, description="an RFC 3339 instant (or a date)", json_schema_extra={"format": "date-time"}),
]
JobAction = Annotated[
    Literal["pause", "resume", "cancel", "retry", "force-cancel"],
    Path(description="what to do with the job (force-cancel: the original MemCastle's name for cancel)"),
]
