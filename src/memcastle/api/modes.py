"""Memory modes per client (`X-MemCastle-Mode`): full, read_only, disabled — the gate follows data access."""

from __future__ import annotations

from typing import Literal

from fastapi import Request

from memcastle.config import MODES
from memcastle.errors import AccessDenied, InvalidRequest

Access = Literal["open", "read", "write"]
HEADER = "x-memcastle-mode"


def client_mode(request: Request) -> str:
    mode = request.headers.get(HEADER, "full").strip().lower() or "full"
    if mode not in MODES:
        raise InvalidRequest(f"unknown memory mode {mode!r}; one of {', '.join(MODES)}", field="X-MemCastle-Mode")
    return mode


def check_access(request: Request, access: Access) -> None:
    """Refuse what the client's mode forbids; `disabled` refuses reads too, never an empty answer."""
    mode = client_mode(request)
    if access == "open" or mode == "full":
        return
    if mode == "disabled":
        raise AccessDenied("memory is disabled for this client", help="send X-MemCastle-Mode: full or read_only")
    if access == "write":
        raise AccessDenied("this client is in read_only mode: writes are refused",
                           help="send X-MemCastle-Mode: full to write")


def reads(request: Request) -> None:
    check_access(request, "read")


def writes(request: Request) -> None:
    check_access(request, "write")


def opens(request: Request) -> None:
    check_access(request, "open")
