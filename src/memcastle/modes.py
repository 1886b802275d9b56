"""Memory modes per client: full, read_only, disabled — the gate follows data access, and a mode is a ceiling.

The mode a client is given (the `X-MemCastle-Mode` header, which the CLI's and the stdio bridge's `--mode` send; the
default is full) is the most it can have: an MCP session may narrow its own mode (`memcastle_set_mode`), never widen
it, and no refusal suggests widening. Stopping the daemon and controlling jobs need `full`.
"""

from __future__ import annotations

from typing import Literal, get_args

from memcastle.errors import AccessDenied, InvalidRequest

Mode = Literal["full", "read_only", "disabled"]
MODES: tuple[str, ...] = get_args(Mode)
# open: anyone (health, status); read / write: memory; control: the daemon and its jobs (shutdown, pause, cancel …)
Access = Literal["open", "read", "write", "control"]
HEADER = "x-memcastle-mode"
_RANK = {"disabled": 0, "read_only": 1, "full": 2}


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


def narrows(current: str, wanted: str) -> bool:
    """True when `wanted` allows no more than `current` does."""
    return _RANK[wanted] <= _RANK[current]


def enforce_mode(mode: str, access: Access) -> None:
    """Refuse what `mode` forbids; `disabled` refuses reads too, never an empty answer."""
    if access == "open" or mode == "full":
        return
    given = "the mode this client was given is a ceiling: only whoever starts or configures the client can change it"
    if mode == "disabled":
        raise AccessDenied("memory is disabled for this client", help=given)
    if access == "write":
        raise AccessDenied("this client is in read_only mode: writes are refused", help=given)
    if access == "control":
        raise AccessDenied(
            "this client is in read_only mode: stopping the daemon and controlling jobs need full", help=given
        )
