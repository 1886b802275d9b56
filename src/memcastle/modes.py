"""Memory modes per client: full, read_only, disabled — the gate follows data access.

The rule (`parse_mode`, `enforce_mode`) is shared by every interface; HTTP reads the mode from `X-MemCastle-Mode`,
MCP from the session (`memcastle_set_mode`) and falls back to the same header, the CLI from `--mode`.
"""

from __future__ import annotations

from typing import Literal, get_args

from memcastle.errors import AccessDenied, InvalidRequest

Mode = Literal["full", "read_only", "disabled"]
MODES: tuple[str, ...] = get_args(Mode)
Access = Literal["open", "read", "write"]
HEADER = "x-memcastle-mode"
HTTP_SWITCH = "send X-MemCastle-Mode: {mode}"


def parse_mode(value: str | None, *, field: str) -> str:
    """The mode named by `value` (absent or blank means full); an unknown one is refused naming `field`."""
    mode = (value or "").strip().lower() or "full"
    if mode not in MODES:
        raise InvalidRequest(
            f"unknown memory mode {mode!r}; one of {', '.join(MODES)}",
            field=field,
            help=f"{field} must be one of {', '.join(MODES)}",
        )
    return mode


def enforce_mode(mode: str, access: Access, *, switch: str = HTTP_SWITCH) -> None:
    """Refuse what `mode` forbids; `disabled` refuses reads too, never an empty answer.

    `switch` tells the client how to change its mode (`{mode}` is filled in)."""
    if access == "open" or mode == "full":
        return
    if mode == "disabled":
        raise AccessDenied("memory is disabled for this client", help=switch.format(mode="full or read_only"))
    if access == "write":
        raise AccessDenied(
            "this client is in read_only mode: writes are refused", help=switch.format(mode="full") + " to write"
        )
