"""Which memory mode each MCP client runs in: chosen with `memcastle_set_mode`, else the client's
`X-MemCastle-Mode` header, else full. A choice is kept for the MCP session; a sessionless client (the protocol of
2026-07-28, the SDK's default negotiation) has none, so its choice is kept for the bearer token it authenticated with;
a client with neither has nothing to keep a choice for, and is not offered `memcastle_set_mode`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from mcp.server.mcpserver import Context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from memcastle.modes import HEADER as MODE_HEADER
from memcastle.modes import parse_mode
from memcastle.runtime.tokens import token_of


class SessionModes:
    """Memory modes chosen with `memcastle_set_mode`, one per key (`mode_key`: an MCP session, else a token).

    Bounded: past `capacity` sessions the least recently set is forgotten (ended sessions are never told to us)."""

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._modes: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str) -> str | None:
        with self._lock:
            return self._modes.get(session_id)

    def set(self, session_id: str, mode: str) -> None:
        with self._lock:
            self._modes[session_id] = mode
            self._modes.move_to_end(session_id)
            while len(self._modes) > self._capacity:
                self._modes.popitem(last=False)


def _headers(ctx: Context) -> Mapping[str, str]:
    return ctx.headers or {}


def session_of(ctx: Context) -> str | None:
    """The MCP session id of the calling connection; None on sessionless transports (2026-07-28, stateless)."""
    # The session manager routes on this header and answers 404 for an unknown id, so it names a live session.
    return _headers(ctx).get(MCP_SESSION_ID_HEADER) or None


def mode_key(ctx: Context) -> tuple[str, str] | None:
    """What a mode choice is kept for: ("session", its id), else ("token", its name) for a sessionless client that
    authenticated, else None."""
    session = session_of(ctx)
    if session:
        return "session", session
    record = token_of(ctx.request_context.request)
    return ("token", record.name) if record is not None else None


def mode_of(ctx: Context, modes: SessionModes) -> tuple[str, str]:
    """(mode, where it came from): the session's (or token's) choice, else the X-MemCastle-Mode header, else full."""
    key = mode_key(ctx)
    chosen = modes.get(":".join(key)) if key else None
    if chosen is not None and key is not None:
        return chosen, key[0]
    header = _headers(ctx).get(MODE_HEADER)
    if header is not None:
        return parse_mode(header, field="X-MemCastle-Mode"), "header"
    return "full", "default"
