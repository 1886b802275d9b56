"""Memory modes per client: full, read_only, disabled — the gate follows data access, and a mode is a ceiling.

The mode a client is given is the narrowest of three: the `X-MemCastle-Mode` header it sends (the CLI's and the stdio
bridge's `--mode`; none means full), the mode of the bearer token it authenticated with, and the daemon's own
configured `mode`, which is a ceiling for every client. That is the most it can have: an MCP session may narrow its
own mode (`memcastle_set_mode`), never widen it, and no refusal suggests widening. Stopping the daemon and controlling
jobs need `full`.
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


def narrowest(*modes: str) -> str:
    """The mode that allows the least of `modes` (the client's, its token's, the daemon's configured one)."""
    return min(modes, key=_RANK.__getitem__)


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
