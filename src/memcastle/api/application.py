"""Build the ASGI application for one palace: REST under /api and MCP at /mcp, on one listener."""

from __future__ import annotations

import functools
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI
from starlette.routing import Route
from starlette.staticfiles import StaticFiles

from memcastle import __version__
from memcastle.api.access import ModeCeiling, route_groups
from memcastle.api.auth import BearerAuth, ReaderContext
from memcastle.api.errors import answers, install_error_handlers
from memcastle.api.guard import BrowserGuard, HostPolicy
from memcastle.api.limits import BodyLimit
from memcastle.api.metrics_route import scrape
from memcastle.api.openapi import honest_openapi
from memcastle.api.request_ids import RequestIds
from memcastle.api.routes import CONCERN_ROUTERS
from memcastle.api.token_routes import router as token_router
from memcastle.mcp.endpoint import MCP_PATH, LazyEndpoint
from memcastle.runtime.tokens import TokenStore
from memcastle.services import Services
from memcastle.web import STATIC as WEB_STATIC
from memcastle.web import router as web_router

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer


@dataclass(frozen=True)
class McpSurface:
    """The MCP endpoint's defaults (`[mcp]`): the tool profile a session lists unless it chooses (`mcp.tools`), and
    the characters an answer holds when the call does not say (`mcp.max_chars`)."""

    tools: str = "core"
    max_chars: int = 16_000


DEFAULT_MCP = McpSurface()


def create_app(
    services: Services,
    *,
    max_body_bytes: int,
    allowed_hosts: Sequence[str],
    tokens: TokenStore | None = None,
    request_shutdown: Callable[[], None] | None = None,
    mode: str = "full",
    web: bool = True,
    mcp: McpSurface = DEFAULT_MCP,
) -> FastAPI:
    """The daemon's HTTP surface over `services`; `tokens` switches bearer authentication on; `request_shutdown` is
    what `POST /api/shutdown` calls; `mode` (the daemon's configured one) is the ceiling of every client's mode;
    `mcp` the tool profile an MCP session lists unless it chooses and an MCP answer's size when the call does not
    set one. The
    composition root (`memcastle.daemon.http_app`) reads the settings.

    The MCP endpoint answers only while the app's lifespan runs (uvicorn with lifespan on; TestClient as a context
    manager)."""

    def build_mcp() -> MCPServer:
        from memcastle.mcp.server import build_mcp_server

        return build_mcp_server(
            services,
            allowed_hosts=allowed_hosts,
            max_body_bytes=max_body_bytes,
            tools=mcp.tools,
            max_chars=mcp.max_chars,
        )

    mcp_endpoint = LazyEndpoint(build_mcp)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp_endpoint.running():
            yield

    app = FastAPI(
        title="MemCastle",
        version=__version__,
        lifespan=lifespan,
        description="A local-first memory server for AI agents: evidence with provenance.",
        dependencies=[Depends(route_groups)],
    )
    app.state.services = services
    app.state.web = web  # an unknown path or a malformed query asked by a browser gets the error page
    app.state.mcp = mcp_endpoint
    app.state.tokens = tokens
    # The web page's CSRF tokens are HMACs under this key: held by this process only, new at every start.
    app.state.csrf_key = secrets.token_bytes(32)
    app.state.request_shutdown = request_shutdown or (lambda: None)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(ModeCeiling, ceiling=mode)
    app.add_middleware(ReaderContext)  # inside BearerAuth: it reads the token BearerAuth verified
    if tokens is not None:
        # Added after the body limit, so it runs before it: nothing of an unauthenticated request is read.
        app.add_middleware(BearerAuth, tokens=tokens)
    # Added last, so it runs first, on every route: a rebinding Host or a foreign Origin gets no further.

    @functools.lru_cache(maxsize=4096)
    def routed(method: str, path: str) -> bool:
        return answers(app, method, path)

    app.add_middleware(BrowserGuard, policy=HostPolicy(allowed_hosts), routed=routed)
    app.add_middleware(RequestIds)  # outermost: every answer, a refusal at the door too, carries the request's id
    install_error_handlers(app)
    app.openapi = honest_openapi(app)  # type: ignore[method-assign]
    for concern in CONCERN_ROUTERS:
        app.include_router(concern)
    app.include_router(token_router)
    if web:  # `web.enabled = false`: no page, no static files; the API and MCP as ever
        app.include_router(web_router)
        app.mount("/static", StaticFiles(directory=WEB_STATIC), name="static")
    app.add_api_route("/metrics", partial(scrape, services, mcp_endpoint), methods=["GET"], include_in_schema=False)
    # A raw ASGI endpoint (every method: POST messages, GET the event stream, DELETE the session), not a FastAPI route.
    app.router.routes.append(Route(MCP_PATH, mcp_endpoint, include_in_schema=False))
    return app


def prepare_routes(app: FastAPI) -> FastAPI:
    """Have FastAPI prepare every included router's routes now (it does so for a router when a request is first routed
    into it: ~20 ms for the search routes, paid by the first search). The daemon's front calls it while it builds the
    application, off the request path (`api.front`); a FastAPI without the hook prepares them as before."""
    for route in app.router.routes:
        prepare = getattr(route, "effective_candidates", None)
        if callable(prepare):
            prepare()
    return app
