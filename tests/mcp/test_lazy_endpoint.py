"""The MCP endpoint is built off the start-up path: when the first MCP request asks, or a moment after the start,
and never for a daemon stopped before either."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from memcastle.mcp.endpoint import LazyEndpoint


class Built(Exception):
    """Stands for the server: the test only counts builds (a real one is built by every MCP test)."""


def counting_endpoint(warm_after: float) -> tuple[LazyEndpoint, list[str]]:
    builds: list[str] = []

    def build() -> Any:
        builds.append(threading.current_thread().name)
        raise Built  # the endpoint reports a failed build to the requests that wait for it

    return LazyEndpoint(build, warm_after=warm_after), builds


def test_the_server_is_built_a_moment_after_the_start_unasked() -> None:
    endpoint, builds = counting_endpoint(warm_after=0.05)

    async def run() -> None:
        async with endpoint.running():
            for _ in range(400):
                if builds:
                    break
                await asyncio.sleep(0.01)

    asyncio.run(run())
    assert len(builds) == 1
    assert builds[0] != threading.main_thread().name, "built on a thread, not on the event loop"


def test_a_request_builds_it_at_once_and_a_stop_before_builds_nothing() -> None:
    asked, asked_builds = counting_endpoint(warm_after=3600)
    idle, idle_builds = counting_endpoint(warm_after=3600)

    async def request(endpoint: LazyEndpoint) -> str:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            pass

        try:
            await asyncio.wait_for(endpoint({"type": "http", "path": "/mcp"}, receive, send), 30)
        except RuntimeError as error:
            return str(error)
        return "answered"

    async def run() -> str:
        async with asked.running():
            answer = await request(asked)
        async with idle.running():
            await asyncio.sleep(0.05)
        return answer

    answer = asyncio.run(run())
    assert asked_builds and "could not start" in answer, "the request waited for the build it asked for"
    assert idle_builds == [], "a daemon stopped before any MCP request never builds the server"
