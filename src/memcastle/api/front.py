"""The daemon's front: its socket answers `GET /api/health` before the HTTP application is built.

FastAPI and the routes (their models and validators) are most of a start's CPU, and the first answer a starting
daemon gives — the health check a launcher polls — needs none of them. `DeferredApp` is the ASGI application the
daemon serves: it builds the real one in a thread when the first other request arrives, or `WARM_AFTER` seconds
after the start, whichever comes first (so the build does not compete with the start itself, and a person opening
the web page finds it built), then runs the real one's lifespan in a task of its own. Until then it answers the
health check itself (a request from an allowed `Host`, with no `Origin` and no mode header: anything else waits for
the application, which then answers it as ever). Requests that arrive before the application is ready wait for it
instead of failing; once it is, every request goes straight to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from memcastle.api.guard import HostPolicy

WARM_AFTER = 1.0  # seconds after the start before the application is built unasked
HEALTH = b'{"ok":true}'


class DeferredApp:
    """An ASGI application that `build` makes on first use (a FastAPI app: its lifespan is run here)."""

    def __init__(
        self,
        build: Callable[[], Any],
        policy: HostPolicy,
        *,
        warm_after: float = WARM_AFTER,
        warm: Callable[[], None] = lambda: None,
    ) -> None:
        self._build = build
        self._warm = warm
        self._policy = policy
        self._warm_after = warm_after
        self._app: ASGIApp | None = None
        self._wanted: asyncio.Event | None = None
        self._ready: asyncio.Event | None = None
        self._failed: BaseException | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is not None:
            await self._app(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif self._answers_itself(scope):
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": HEALTH})
        else:
            if self._wanted is None or self._ready is None:
                raise RuntimeError("the daemon's application answers only while its lifespan runs")
            self._wanted.set()
            await self._ready.wait()
            await self.built()(scope, receive, send)

    def built(self) -> ASGIApp:
        """The application, once built (what it failed with, when it could not be)."""
        if self._app is None:
            raise RuntimeError(f"the daemon's application could not be built: {self._failed!r}")
        return self._app

    def _answers_itself(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("path") != "/api/health":
            return False
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host")
        return (
            b"origin" not in headers
            and b"x-memcastle-mode" not in headers
            and (host is None or self._policy.allows(host.decode("latin-1")))
        )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        self._wanted, self._ready, stop = asyncio.Event(), asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(self._serve(stop), name="memcastle-app")
        await send({"type": "lifespan.startup.complete"})
        message = await receive()
        assert message["type"] == "lifespan.shutdown"
        stop.set()
        if not self._ready.is_set():
            task.cancel()  # not built yet: a stop does not wait for an application no one used
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await task
        await send({"type": "lifespan.shutdown.complete"})

    async def _serve(self, stop: asyncio.Event) -> None:
        assert self._wanted is not None and self._ready is not None
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wanted.wait(), self._warm_after)
            app = await asyncio.to_thread(self._build)
            async with app.router.lifespan_context(app):
                # A route that runs in the thread pool starts anyio's backend (an import) and a worker on first use,
                # and its first search opens the worker's reader: done here with `warm`, not by the first search.
                from anyio import to_thread  # not imported before the health check answers

                with contextlib.suppress(Exception):
                    await to_thread.run_sync(self._warm)
                self._app = app
                self._ready.set()
                await stop.wait()
        except BaseException as error:
            self._failed = error
            self._ready.set()
            raise
