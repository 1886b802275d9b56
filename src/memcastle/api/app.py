"""Build the ASGI application for one palace: REST under /api and MCP at /mcp, on one listener."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.routing import Route

from memcastle import __version__
from memcastle.api.auth import BearerAuth
from memcastle.api.errors import install_error_handlers
from memcastle.api.limits import BodyLimit
from memcastle.api.routes import router
from memcastle.app import Palace
from memcastle.mcp import MCP_PATH, build_mcp_server, http_endpoint
from memcastle.runtime.tokens import TokenStore


def create_app(palace: Palace, *, request_shutdown: Callable[[], None] | None = None) -> FastAPI:
    """The daemon's HTTP surface; `request_shutdown` is what `POST /api/shutdown` calls.

    The MCP endpoint answers only while the app's lifespan runs (uvicorn with lifespan on; TestClient as a context
    manager)."""
    max_body_bytes = int(palace.settings["server.max_body_bytes"])
    mcp_server = build_mcp_server(palace.services, allowed_hosts=palace.settings["mcp.allowed_hosts"],
                                  max_body_bytes=max_body_bytes)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp_server.session_manager.run():
            yield

    app = FastAPI(title="MemCastle", version=__version__, lifespan=lifespan,
                  description="A local-first memory server for AI agents: evidence with provenance.")
    app.state.services = palace.services
    app.state.palace = palace
    app.state.mcp = mcp_server
    app.state.request_shutdown = request_shutdown or (lambda: None)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if palace.settings["auth.enabled"]:
        # Added last, so it runs first: nothing of an unauthenticated request is read, /mcp included.
        app.add_middleware(BearerAuth, tokens=TokenStore(palace.settings.palace))
    install_error_handlers(app)
    app.include_router(router)
    # A raw ASGI endpoint (every method: POST messages, GET the event stream, DELETE the session), not a FastAPI route.
    app.router.routes.append(Route(MCP_PATH, http_endpoint(mcp_server), include_in_schema=False))
    return app
