"""The HTTP side of memory modes: the client's mode from `X-MemCastle-Mode`, as route dependencies.

Before any route runs, the header is narrowed to what the client was granted (`narrow_mode`): by the daemon's own
configured mode (`ModeCeiling`) and by its bearer token's mode (`memcastle.api.auth`). So REST, MCP and the web page
all read one header that already holds the client's ceiling.

The dependencies are coroutines: they only read a header, and FastAPI runs a plain function dependency on a worker
thread — a hop to a thread and back on every request."""

from __future__ import annotations

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from memcastle.errors import AccessDenied, InvalidRequest
from memcastle.modes import HEADER, Access, enforce_mode, narrowest, parse_mode
from memcastle.runtime.tokens import WEB, token_of
from memcastle.services.reader import palace_wide as refuse_scoped

_HEADER = HEADER.encode("latin-1")


def narrow_mode(scope: Scope, ceiling: str) -> None:
    """Lower the request's `X-MemCastle-Mode` to `ceiling` when it asks for more (no header asks for full). An
    unknown mode is left as it is, for the route to refuse naming the header."""
    headers = list(scope.get("headers") or [])
    sent = next((value.decode("latin-1") for key, value in headers if key.lower() == _HEADER), None)
    try:
        asked = parse_mode(sent, field="X-MemCastle-Mode")
    except InvalidRequest:
        return
    granted = narrowest(asked, ceiling)
    if granted == asked and sent is not None:
        return
    scope["headers"] = [(k, v) for k, v in headers if k.lower() != _HEADER] + [(_HEADER, granted.encode("latin-1"))]


class ModeCeiling:
    """The daemon's configured `mode` as the ceiling of every client's mode."""

    def __init__(self, app: ASGIApp, *, ceiling: str) -> None:
        self.app = app
        self.ceiling = parse_mode(ceiling, field="mode")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.ceiling != "full":
            narrow_mode(scope, self.ceiling)
        await self.app(scope, receive, send)


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


async def route_groups(request: Request) -> None:
    """A token limited to some route groups (`--routes`: OpenAPI tags, and `web` for the pages) uses only those."""
    record = token_of(request)
    if record is None or record.routes is None:
        return
    route = request.scope.get("route")
    groups = set(getattr(route, "tags", None) or [WEB])
    if not groups & set(record.routes):
        raise AccessDenied(
            f"this token may use only the {', '.join(record.routes)} routes; "
            f"{request.method} {getattr(route, 'path', request.url.path)} is in {', '.join(sorted(groups))}",
            help="ask for a token whose --routes include it",
        )


async def palace_wide(request: Request) -> None:
    """The route works on the whole palace: refused for a token limited to some wings (`services.reader`)."""
    route = request.scope.get("route")
    refuse_scoped(f"{request.method} {getattr(route, 'path', request.url.path)}")
