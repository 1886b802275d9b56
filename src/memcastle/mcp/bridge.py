"""`memcastle mcp`: MCP on stdin/stdout for clients that only spawn processes, forwarded to the palace's daemon.

A proxy: a low-level MCP stdio server whose tools are the daemon's, listed and called through an MCP client session to
the daemon's streamable HTTP endpoint. That client session lives in a task of its own (anyio scopes are entered and
left in one task) so it can be replaced when the daemon restarts: a call that finds its session gone is sent again
on a new one when that is safe (the tool is read-only or idempotent), and a memory mode chosen with
`memcastle_set_mode` is chosen again on the new session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from memcastle import __version__
from memcastle.errors import AccessDenied, DaemonNotRunning, MemCastleError
from memcastle.mcp.endpoint import MCP_PATH
from memcastle.mcp.profiles import HEADER as PROFILE_HEADER
from memcastle.runtime import launcher
from memcastle.runtime.daemons import find_daemon, state_dir

SET_MODE = "memcastle_set_mode"
START_TIMEOUT = 30.0
CLOSE_TIMEOUT = 5.0
# What a request meets, besides MCPError, when the client session under it is torn down (the daemon went away).
UPSTREAM_ERRORS: tuple[type[Exception], ...] = (
    MCPError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx2.TransportError,
)
CONNECT_HELP = (
    "start the daemon with: memcastle daemon start (or memcastle serve in the foreground; or let the bridge start "
    "it: memcastle mcp --start)"
)

T = TypeVar("T")


def locate_daemon(palace: Path) -> str:
    """The address of the daemon serving `palace`, found through the registry."""
    entry, why = find_daemon(state_dir(), palace)
    if entry is None:
        raise DaemonNotRunning(why or f"no daemon serves palace {palace}", help=CONNECT_HELP)
    return entry.address


def start_daemon(palace: Path, *, config_file: Path | None, timeout: float = START_TIMEOUT) -> str:
    """Start `memcastle serve` for `palace` in the background (detached, log beside its registry file) and wait
    until a daemon answers; a daemon that is already running is used as it is."""
    return launcher.start_daemon(state_dir(), palace, config_file=config_file, timeout=timeout).entry.address


# --- the session to the daemon --------------------------------------------------------------------


class SessionLost(Exception):
    """The MCP session to the daemon ended while a request was on it; `may_have_run` unless the daemon said it did
    not know the session (so the request never ran)."""

    def __init__(self, message: str, *, may_have_run: bool) -> None:
        super().__init__(message)
        self.may_have_run = may_have_run


@dataclass
class _Upstream:
    client: Client
    address: str
    lost: anyio.Event = field(default_factory=anyio.Event)


class DaemonLink:
    """The bridge's MCP client session to the daemon, owned by `run` and replaced on demand."""

    def __init__(
        self, locate: Callable[[], str], *, mode: str, token: str | None = None, tools: str | None = None
    ) -> None:
        self._locate = locate
        self._headers = {"X-MemCastle-Mode": mode, "X-MemCastle-Client": "mcp"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        if tools:
            self._headers[PROFILE_HEADER] = tools
        self._upstream: _Upstream | None = None
        self._error: MemCastleError | None = None
        self._settled = anyio.Event()
        self._renewal = anyio.Event()
        self._closing = False
        self.finished = anyio.Event()
        self.mode: str | None = None  # what memcastle_set_mode last chose through this bridge

    @property
    def client(self) -> Client:
        """The current client (for its server info and instructions); only after `run` has started."""
        assert self._upstream is not None, "the link is not connected"
        return self._upstream.client

    @asynccontextmanager
    async def _connect(self, address: str) -> AsyncIterator[Client]:
        timeout = httpx2.Timeout(30.0, read=300.0)
        # A TLS context costs ~0.15 s to build (the CA bundle is read); a plain-HTTP daemon needs none.
        tls = address.startswith("https://")
        async with httpx2.AsyncClient(headers=self._headers, timeout=timeout, trust_env=False, verify=tls) as http:
            # A refused token would otherwise surface from the MCP client as a bare "error response".
            answer = await http.get(address + "/api/status")
            if answer.status_code in (401, 403):
                raise _refusal(answer)
            # legacy: the initialize handshake gives the daemon a session to keep this bridge's memory mode in.
            async with Client(
                streamable_http_client(address + MCP_PATH, http_client=http), mode="legacy", cache=None
            ) as client:
                yield client

    def close(self) -> None:
        """End the session politely (the daemon is told it is over); `finished` is set when it is."""
        self._closing = True
        self._renewal.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, then keep a session until `close`; the first failure to connect is raised to the starter."""
        try:
            await self._serve(task_status)
        finally:
            self.finished.set()

    async def _serve(self, task_status: TaskStatus[None]) -> None:
        started = False
        while not self._closing:
            address = "(unknown)"
            error: MemCastleError | None = None
            try:
                address = self._locate()
                async with self._connect(address) as client:
                    if self.mode is not None:
                        await client.call_tool(SET_MODE, {"mode": self.mode})
                    upstream = _Upstream(client, address)
                    try:
                        self._publish(upstream, None)
                        if not started:
                            started = True
                            task_status.started()
                        await self._renewal.wait()
                    finally:
                        upstream.lost.set()
            except MemCastleError as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001 — the connection edge: whatever broke it, the daemon is gone
                error = DaemonNotRunning(
                    f"the MemCastle daemon at {address} did not answer: {_describe(exc)}", help=CONNECT_HELP
                )
            if not started:
                assert error is not None
                raise error
            if error is not None and not self._renewal.is_set():
                self._publish(None, error)
                await self._renewal.wait()
            if not self._closing:
                self._renewal = anyio.Event()

    def _publish(self, upstream: _Upstream | None, error: MemCastleError | None) -> None:
        self._upstream, self._error = upstream, error
        self._settled.set()

    def _request_renewal(self) -> None:
        self._upstream = None
        self._settled = anyio.Event()
        self._renewal.set()

    async def _current(self) -> _Upstream:
        if self._settled.is_set() and self._upstream is None:
            self._request_renewal()  # the last attempt failed; the daemon may be back
        await self._settled.wait()
        if self._upstream is None:
            assert self._error is not None
            raise self._error
        return self._upstream

    async def _renew(self, broken: _Upstream) -> _Upstream:
        if self._upstream is broken and self._settled.is_set():
            self._request_renewal()
        return await self._current()

    async def request(self, operation: Callable[[Client], Awaitable[T]], *, repeatable: bool) -> T:
        """Run `operation` on the current session. When the session is gone, renew it and run again if the request
        never ran or is `repeatable` (read-only or idempotent); else raise SessionLost."""
        upstream = await self._current()
        try:
            return await _on(upstream, operation)
        except SessionLost as lost:
            upstream = await self._renew(upstream)
            if lost.may_have_run and not repeatable:
                raise
            return await _on(upstream, operation)


async def _on(upstream: _Upstream, operation: Callable[[Client], Awaitable[T]]) -> T:
    """`operation(client)`, or SessionLost when the session ends first or the daemon no longer knows it."""
    outcome: list[T] = []
    failure: list[Exception] = []

    async def attempt() -> None:
        try:
            outcome.append(await operation(upstream.client))
        except UPSTREAM_ERRORS as exc:
            failure.append(exc)
        tasks.cancel_scope.cancel()

    async def watch() -> None:
        await upstream.lost.wait()
        tasks.cancel_scope.cancel()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(attempt)
        tasks.start_soon(watch)
    if outcome:
        return outcome[0]
    error = failure[0] if failure else None
    if isinstance(error, MCPError) and _is_unknown_session(error):
        upstream.lost.set()
        raise SessionLost(str(error), may_have_run=False)
    if error is None or upstream.lost.is_set() or not isinstance(error, MCPError):
        upstream.lost.set()
        raise SessionLost(str(error) if error else "the connection to the daemon closed", may_have_run=True)
    raise error


def _is_unknown_session(exc: MCPError) -> bool:
    # The SDK's spelling of HTTP 404 for a session id the daemon does not know (it restarted).
    return "Session terminated" in str(exc)


def _refusal(answer: httpx2.Response) -> AccessDenied:
    try:
        body = answer.json()
    except ValueError:
        body = {}
    message = body.get("error") or f"the daemon refused the bridge ({answer.status_code})"
    return AccessDenied(
        message,
        unauthenticated=answer.status_code == 401,
        help=body.get("help") or "set auth.token (MEMCASTLE_AUTH_TOKEN) to a token of this palace",
    )


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return str(exc) or type(exc).__name__


# --- the stdio side -------------------------------------------------------------------------------


def build_bridge_server(link: DaemonLink, tools: list[Tool]) -> Server[Any]:
    """A stdio-facing MCP server that lists and calls the daemon's tools (`tools`: a first listing)."""
    info = link.client.server_info
    annotations = {tool.name: tool for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        cursor = params.cursor if params else None
        listed = await link.request(
            lambda client: client.list_tools(cursor=cursor, cache_mode="refresh"), repeatable=True
        )
        annotations.update({tool.name: tool for tool in listed.tools})
        return ListToolsResult(tools=listed.tools, next_cursor=listed.next_cursor)

    async def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        arguments = params.arguments or {}
        try:
            result = await link.request(
                lambda client: client.call_tool(params.name, arguments),
                repeatable=_is_repeatable(annotations.get(params.name)),
            )
        except SessionLost:
            return _bridge_error(
                DaemonNotRunning(
                    "the connection to the MemCastle daemon was lost during this call; it may or may not have run",
                    help="check (e.g. with memcastle_search or memcastle_job_list) before calling it again",
                )
            )
        except MemCastleError as exc:
            return _bridge_error(exc)
        if params.name == SET_MODE and not result.is_error:
            link.mode = str(arguments.get("mode"))
        return result

    return Server(
        info.name if info else "memcastle",
        version=info.version if info else __version__,
        instructions=link.client.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _is_repeatable(tool: Tool | None) -> bool:
    hints = tool.annotations if tool else None
    return bool(hints and (hints.read_only_hint or hints.idempotent_hint))


def _bridge_error(exc: MemCastleError) -> CallToolResult:
    """The bridge's own failures (the daemon is gone, the token is refused) as tool errors, shaped like the
    daemon's."""
    text = exc.message + (f"\nhint: {exc.help}" if exc.help else "")
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        is_error=True,
        structured_content={"error": exc.message, "code": exc.code, "help": exc.help},
    )


async def serve_bridge(
    locate: Callable[[], str], *, mode: str, token: str | None = None, tools: str | None = None
) -> None:
    """Connect to the daemon (raising DaemonNotRunning before any MCP traffic when it fails), then serve stdio
    until the client closes standard input. `mode`, `token` and `tools` (the tool profile or names the session
    lists) go with every request to the daemon."""
    link = DaemonLink(locate, mode=mode, token=token, tools=tools)
    async with anyio.create_task_group() as tasks:
        await tasks.start(link.run)
        listed = await link.request(lambda client: client.list_tools(), repeatable=True)
        server = build_bridge_server(link, listed.tools)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        link.close()
        with anyio.move_on_after(CLOSE_TIMEOUT):
            await link.finished.wait()
        tasks.cancel_scope.cancel()


def run_bridge(locate: Callable[[], str], *, mode: str, token: str | None = None, tools: str | None = None) -> None:
    """The `memcastle mcp` command's body."""
    try:
        anyio.run(lambda: serve_bridge(locate, mode=mode, token=token, tools=tools))
    except BaseExceptionGroup as group:
        errors = [e for e in group.exceptions if isinstance(e, MemCastleError)]
        if errors:
            raise errors[0] from None
        raise
