"""Who the current operation runs for: the `Visibility` of the client's token, set once at each edge.

The HTTP edge (`api.auth.BearerAuth`, for REST and the web page) and the MCP tool runner (`mcp.server.bind`) set it
for the duration of one request or tool call; every service operation that reads or writes memory reads it here and
narrows or refuses accordingly (ADR 0030). Jobs, triggers and start-up run outside any request: they see everything.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from memcastle.model.visibility import EVERYTHING, Visibility

_current: ContextVar[Visibility] = ContextVar("memcastle_visibility", default=EVERYTHING)


def visibility() -> Visibility:
    """The wings the current client may read and write."""
    return _current.get()


@contextmanager
def seen_by(seen: Visibility) -> Iterator[None]:
    """Run the block for a client with this visibility."""
    token = _current.set(seen)
    try:
        yield
    finally:
        _current.reset(token)


def palace_wide(operation: str) -> None:
    """Refuse, for a scoped client, an operation over the whole palace (its jobs, miners and sources, its status,
    live events, tokens, an export or import): there is no part of it a scope could be applied to."""
    visibility().whole_palace(operation)
