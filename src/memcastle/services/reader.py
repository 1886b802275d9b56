"""Who the current operation runs for: the client's `Reader` — its interface, token, MCP client and session, and
the `Visibility` of its token — set once at each edge.

The HTTP edge (`api.app.ReaderContext`, for REST and the web page) and the MCP tool runner (`mcp.server.bind`) set it
for the duration of one request or tool call; every service operation that reads or writes memory reads it here,
narrowing or refusing by its visibility (ADR 0030) and recording reads under its name (`services.audit`). Jobs,
triggers and start-up run outside any request: an internal reader that sees everything and is not audited.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from memcastle.model.visibility import EVERYTHING, Visibility

INTERNAL = "internal"


@dataclass(frozen=True)
class Reader:
    """The client an operation runs for."""

    interface: str = INTERNAL  # http | cli | web | mcp, or internal (jobs, triggers, start-up)
    token: str | None = None  # the bearer token's name (authentication on)
    client: str | None = None  # the MCP client's name, from its initialize
    session: str | None = None  # the MCP session id
    visibility: Visibility = EVERYTHING


INTERNAL_READER = Reader()
_current: ContextVar[Reader | None] = ContextVar("memcastle_reader", default=None)


def reader() -> Reader:
    return _current.get() or INTERNAL_READER


def visibility() -> Visibility:
    """The wings the current client may read and write."""
    return reader().visibility


@contextmanager
def reading_as(who: Reader) -> Iterator[None]:
    """Run the block for this client."""
    token = _current.set(who)
    try:
        yield
    finally:
        _current.reset(token)


def palace_wide(operation: str) -> None:
    """Refuse, for a scoped client, an operation over the whole palace (its jobs, miners and sources, its status,
    live events, tokens, an export or import): there is no part of it a scope could be applied to."""
    visibility().whole_palace(operation)
