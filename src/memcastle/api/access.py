"""The HTTP side of memory modes: the client's mode from `X-MemCastle-Mode`, as route dependencies.

The dependencies are coroutines: they only read a header, and FastAPI runs a plain function dependency on a worker
thread — a hop to a thread and back on every request."""

from __future__ import annotations

from fastapi import Request

from memcastle.modes import HEADER, Access, enforce_mode, parse_mode


def client_mode(request: Request) -> str:
    return parse_mode(request.headers.get(HEADER), field="X-MemCastle-Mode")


def check_access(request: Request, access: Access) -> None:
    """Refuse what the client's mode forbids."""
    enforce_mode(client_mode(request), access)


async def reads(request: Request) -> None:
    check_access(request, "read")


async def writes(request: Request) -> None:
    check_access(request, "write")


async def opens(request: Request) -> None:
    check_access(request, "open")


async def controls(request: Request) -> None:
    check_access(request, "control")
