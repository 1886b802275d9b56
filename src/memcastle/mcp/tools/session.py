"""The server and this session: status, and the session's memory mode."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memcastle.errors import AccessDenied, Conflict, InvalidRequest
from memcastle.mcp.sessions import mode_key
from memcastle.mcp.tools.base import READS, WRITES, Env, tool
from memcastle.modes import MODES, narrows, parse_mode


@tool("memcastle_status", "Memory server status", "open", READS)
def status(env: Env) -> dict[str, Any]:
    """Is memory up, what it holds, warnings, this session's memory mode."""
    mode, source = env.mode()
    return {**env.services.status.status().to_json(), "mode": mode, "mode_source": source}


@tool("memcastle_set_mode", "Set this session's memory mode", "open", WRITES)
def set_mode(
    env: Env,
    mode: Annotated[str, Field(json_schema_extra={"enum": list(MODES)})],
) -> dict[str, Any]:
    """Narrow this session's (or token's) memory mode: read_only refuses writes, disabled reads too; never widen."""
    chosen = parse_mode(mode, field="mode")
    key = mode_key(env.ctx)
    if key is None:
        raise Conflict(
            "this connection has no MCP session or token to keep a memory mode for",
            help="send the X-MemCastle-Mode header with each request instead, or connect with a bearer token "
            "or a session (an initialize handshake)",
        )
    try:
        previous: str | None = env.mode()[0]
    except InvalidRequest:
        previous = "disabled"  # an unknown X-MemCastle-Mode header: nothing can be assumed about the ceiling
    assert previous is not None
    if not narrows(previous, chosen):
        raise AccessDenied(
            f"memcastle_set_mode can only narrow this session's mode ({previous}), never widen it to {chosen}",
            help="the mode a client is given is a ceiling: only whoever starts or configures the client can change it",
        )
    env.modes.set(":".join(key), chosen)
    return {"mode": chosen, "previous": previous, "scope": key[0]}
