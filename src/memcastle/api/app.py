"""Build the ASGI application for one palace."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from memcastle import __version__
from memcastle.api.errors import install_error_handlers
from memcastle.api.limits import BodyLimit
from memcastle.api.routes import router
from memcastle.app import Palace


def create_app(palace: Palace, *, request_shutdown: Callable[[], None] | None = None) -> FastAPI:
    """The daemon's HTTP surface; `request_shutdown` is what `POST /api/shutdown` calls."""
    app = FastAPI(title="MemCastle", version=__version__,
                  description="A local-first memory server for AI agents: evidence with provenance.")
    app.state.services = palace.services
    app.state.palace = palace
    app.state.request_shutdown = request_shutdown or (lambda: None)
    app.add_middleware(BodyLimit, max_bytes=int(palace.settings["server.max_body_bytes"]))
    install_error_handlers(app)
    app.include_router(router)
    return app
