"""Build the ASGI application for one palace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from memcastle import __version__
from memcastle.api.errors import error_body, install_error_handlers
from memcastle.api.routes import router
from memcastle.app import Palace


def create_app(palace: Palace, *, request_shutdown: Callable[[], None] | None = None) -> FastAPI:
    """The daemon's HTTP surface; `request_shutdown` is what `POST /api/shutdown` calls."""
    app = FastAPI(title="MemCastle", version=__version__,
                  description="A local-first memory server for AI agents: evidence with provenance.")
    app.state.services = palace.services
    app.state.palace = palace
    app.state.request_shutdown = request_shutdown or (lambda: None)
    max_body = int(palace.settings["server.max_body_bytes"])

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_body:
            return JSONResponse(error_body(f"the body is larger than {max_body} bytes", "too_large",
                                           "raise server.max_body_bytes or send less"), status_code=413)
        return await call_next(request)

    install_error_handlers(app)
    app.include_router(router)
    return app
