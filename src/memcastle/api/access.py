"""The HTTP side of memory modes: the client's mode from `X-MemCastle-Mode`, as route dependencies."""

from __future__ import annotations

from fastapi import Request

from memcastle.modes import HEADER, Access, enforce_mode, parse_mode


def client_mode(request: Request) -> str:
    return parse_mode(request.headers.get(HEADER), field="X-MemCastle-Mode")


def check_access(request: Request, access: Access) -> None:
    """Refuse what the client's mode forbids."""
    enforce_mode(client_mode(request), access)


def reads(request: Request) -> None:
    check_access(request, "read")


def writes(request: Request) -> None:
    check_access(request, "write")


def opens(request: Request) -> None:
    check_access(request, "open")


def controls(request: Request) -> None:
    check_access(request, "control")
