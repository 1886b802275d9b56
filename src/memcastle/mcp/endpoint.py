"""The daemon's MCP endpoint, built off the start-up path.

The MCP SDK takes longer to import than the rest of the daemon together, so the HTTP app starts without it: once
the app's lifespan has started, `LazyEndpoint` imports and builds the MCP server in a thread — when the first MCP
request arrives, or `WARM_AFTER` seconds after the start, whichever comes first, so that the build does not compete
with the start itself — and runs its session manager in a task of its own (its anyio scopes are entered and left in
that task). `/api/health` and the REST routes answer at once; an MCP request that arrives before the server is ready
waits for it instead of failing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

MCP_PATH = "/mcp"
WARM_AFTER = 1.5  # seconds after the start before the MCP server is built unasked


class LazyEndpoint:
    """An ASGI endpoint for MCP_PATH whose server `build` makes when the app starts."""

    def __init__(self, build: Callable[[], MCPServer], *, warm_after: float = WARM_AFTER) -> None:
        self._build = build
        self._warm_after = warm_after
        self._wanted: asyncio.Event | None = None
        self._server: MCPServer | None = None
        self._endpoint: ASGIApp | None = None
        self._ready: asyncio.Event | None = None
        self._failed: BaseException | None = None

    @property
    def server(self) -> MCPServer:
        """The built server (building it now when the app has not started: tests, the schema)."""
        if self._server is None:
            self._server = self._build()
        return self._server

    def sessions(self) -> int:
        """The MCP sessions open now (0 before the server is built: none could be)."""
        if self._server is None:
            return 0
        manager = self._server.session_manager
        return len(getattr(manager, "_server_instances", {}))  # the SDK keeps no public count

    def _prepare(self) -> tuple[MCPServer, ASGIApp]:
        from memcastle.mcp.server import http_endpoint

        server = self.server
        return server, http_endpoint(server)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: build the server in the background and serve sessions until the app stops."""
        self._ready, self._wanted, stop = asyncio.Event(), asyncio.Event(), asyncio.Event()
        wanted = self._wanted

        async def serve() -> None:
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wanted.wait(), self._warm_after)
                server, endpoint = await asyncio.to_thread(self._prepare)
                async with server.session_manager.run():
                    self._endpoint = endpoint
                    assert self._ready is not None
                    self._ready.set()
                    await stop.wait()
            except BaseException as error:
                self._failed = error
                assert self._ready is not None
                self._ready.set()
                raise

        task = asyncio.create_task(serve(), name="memcastle-mcp")
        try:
            yield
        finally:
            stop.set()
            if self._endpoint is None:
                task.cancel()  # not built yet: a stop does not wait for a server no one will use
            try:
                await task
            except (Exception, asyncio.CancelledError):  # noqa: BLE001 - reported to the requests it failed
                pass
            self._endpoint = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._ready is None:
            raise RuntimeError("the MCP endpoint answers only while the app's lifespan runs")
        if self._wanted is not None:
            self._wanted.set()
        await self._ready.wait()
        if self._endpoint is None:
            raise RuntimeError(f"the MCP server could not start: {self._failed!r}")
        await self._endpoint(scope, receive, send)
