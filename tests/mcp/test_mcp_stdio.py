"""`memcastle mcp`: the official `mcp` stdio client spawns the bridge, which forwards to a real daemon."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import TextContent

from memcastle.mcp.profiles import CORE
from memcastle.mcp.tools import TOOLS
from memcastle.runtime.daemons import find_daemon

ENTRY_ARGS = ["-c", "from memcastle.cli.main import run; run()"]


@asynccontextmanager
async def bridge(palace: Path, env: Mapping[str, str], log: Path, *args: str) -> AsyncIterator[Client]:
    """`memcastle --palace P ARGS…` spawned by the SDK's stdio client; the bridge's stderr goes to `log`."""
    params = StdioServerParameters(
        command=sys.executable, args=[*ENTRY_ARGS, "--palace", str(palace), *args], env=dict(env), cwd=str(log.parent)
    )
    with log.open("w") as errors:
        async with Client(stdio_client(params, errlog=errors)) as client:
            yield client


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run an async scenario; a failure inside the client's task groups is reported as itself."""
    try:
        anyio.run(scenario)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
            leaf = leaf.exceptions[0]
        raise leaf from None


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    [block] = result.content
    assert isinstance(block, TextContent)
    answer: dict[str, Any] = json.loads(block.text)
    return answer


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} was not refused: {result.content}"
    return result.content[0].text  # type: ignore[union-attr]


def test_the_bridge_serves_the_daemons_tools(module_daemon: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with bridge(module_daemon.palace, module_daemon.env, tmp_path / "bridge.log", "mcp") as client:
            assert client.server_info is not None and client.server_info.name == "memcastle"
            assert "memcastle_wake_up" in (client.instructions or "")
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == set(CORE), "the daemon's default profile"
            for name in CORE:
                assert tools[name].annotations == TOOLS[name].annotations(), name

            saved = await call(client, "memcastle_note", content="The bridge keeps otter-9 in the loop.", wing="stdio")
            found = await call(client, "memcastle_search", query="otter-9", wing="stdio")
            [hit] = found["hits"]
            assert hit["id"] == saved["drawer"]["id"]
            assert {"origin", "signals", "score", "snippet"} <= set(hit) and hit["signals"]["relevance"] == 1.0
            [kept] = (
                await call(
                    client, "memcastle_checkpoint", items=[{"content": "otter-9 stays on the bridge", "wing": "stdio"}]
                )
            )["drawers"]
            assert [v["id"] for v in (await call(client, "memcastle_history", drawer_id=kept["id"]))["versions"]] == [
                kept["id"]
            ]

            await call(client, "memcastle_set_mode", mode="read_only")
            assert "read_only" in await refused(client, "memcastle_note", content="refused", wing="stdio")
            await call(client, "memcastle_set_mode", mode="disabled")
            assert "disabled" in await refused(client, "memcastle_search", query="otter-9")
            status = await call(client, "memcastle_status")
            assert (status["mode"], status["mode_source"]) == ("disabled", "session")
            assert "mode" in await refused(client, "memcastle_set_mode", mode="sleepy")

        log = tmp_path / "full.log"
        async with bridge(module_daemon.palace, module_daemon.env, log, "mcp", "--tools", "full") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == set(TOOLS), "memcastle mcp --tools full"
            for name, spec in TOOLS.items():
                assert tools[name].annotations == spec.annotations(), name
            assert "are listed with the header" not in (client.instructions or "")

    run(scenario)


def test_the_cli_mode_is_sent_as_the_header(module_daemon: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with bridge(
            module_daemon.palace, module_daemon.env, tmp_path / "bridge.log", "--mode", "read_only", "mcp"
        ) as client:
            status = await call(client, "memcastle_status")
            assert (status["mode"], status["mode_source"]) == ("read_only", "header")
            await refused(client, "memcastle_note", content="refused by --mode", wing="stdio")
            await call(client, "memcastle_search", query="anything")

    run(scenario)


def test_the_bridge_without_a_daemon_exits_3_with_a_clear_message(
    xdg_home: Any, tmp_path: Path, cli_runner: Callable[..., Any]
) -> None:
    done = cli_runner(
        ["--palace", str(tmp_path / "nobody-home"), "mcp"], env=xdg_home.env(), input="", cwd=tmp_path, timeout=30
    )
    assert done.returncode == 3, done.stderr
    assert "no daemon" in done.stderr and "memcastle serve" in done.stderr and "--start" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # nothing that an MCP client could mistake for a message


def test_start_launches_a_daemon_and_bridges_to_it(xdg_home: Any, tmp_path: Path) -> None:
    palace = tmp_path / "started-palace"
    env = xdg_home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none", "MEMCASTLE_SERVER_PORT": "0"})

    async def scenario() -> None:
        async with bridge(palace, env, tmp_path / "bridge.log", "mcp", "--start") as client:
            status = await call(client, "memcastle_status")
            assert status["palace"] == str(palace.resolve())

    try:
        run(scenario)
        entry, why = find_daemon(xdg_home.state_dir, palace)
        assert entry is not None, why  # it outlives the bridge
    finally:
        entry, _ = find_daemon(xdg_home.state_dir, palace)
        if entry is not None:
            os.kill(entry.pid, signal.SIGTERM)


def test_the_bridge_reconnects_after_a_daemon_restart(daemon: Callable[..., Any], tmp_path: Path) -> None:
    first = daemon(tmp_path / "palace")

    async def scenario() -> None:
        async with bridge(first.palace, first.env, tmp_path / "bridge.log", "mcp") as client:
            await call(client, "memcastle_set_mode", mode="read_only")
            first.close()
            down = await refused(client, "memcastle_status")
            assert "daemon" in down and "memcastle serve" in down
            daemon(first.palace)
            status = await call(client, "memcastle_status")
            # A new session on the new daemon, with the mode chosen through the bridge chosen again.
            assert (status["mode"], status["mode_source"]) == ("read_only", "session")
            # The narrowed mode survives the reconnection as a ceiling too.
            await refused(client, "memcastle_set_mode", mode="full")
            search = await call(client, "memcastle_search", query="anything")
            assert "hits" in search

    run(scenario)
