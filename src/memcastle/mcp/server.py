"""The MCP server over `Services` (SPEC §7): binds every tool `memcastle.mcp.tools` declares — its arguments checked
(other clients' names translated, an unknown one refused by name, then pydantic), its session's memory mode gated,
one service call, the answer as compact JSON text. A `MemCastleError` becomes a tool error in one place
(`tool_error`); anything else is a bug, logged with its traceback and answered in the same shape as an
`InternalError` (never the SDK's bare "Error executing tool")."""

from __future__ import annotations

import difflib
import inspect
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from pydantic import ValidationError
from starlette.types import ASGIApp

from memcastle import __version__
from memcastle.errors import (
    AccessDenied,
    InternalError,
    InvalidRequest,
    MemCastleError,
    NotFound,
    error_shape,
    invalid_arguments,
)
from memcastle.mcp.endpoint import MCP_PATH
from memcastle.mcp.instructions import DEFAULT_BUDGET, instructions_for
from memcastle.mcp.profiles import HEADER as PROFILE_HEADER
from memcastle.mcp.profiles import tool_set
from memcastle.mcp.sessions import SessionModes, mode_of, session_of
from memcastle.mcp.tools import TOOLS, Env, ToolSpec, prepare
from memcastle.mcp.tools.base import OTHER_NAMES, PYTHON_NAMES
from memcastle.model.visibility import EVERYTHING
from memcastle.modes import enforce_mode
from memcastle.runtime.logs import REQUEST_ID, request_id_of
from memcastle.runtime.tokens import token_of
from memcastle.services import Services
from memcastle.services.reader import Reader, palace_wide, reading_as
from memcastle.services.views import within

log = logging.getLogger(__name__)

SET_MODE = "memcastle_set_mode"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WIRE_NAMES = {python: wire for wire, python in PYTHON_NAMES.items()}

# --- errors: the one translation point ------------------------------------------------------------


# What an agent can do about an error that came without its own hint, by its code: every tool error says one thing.
DEFAULT_HELP = {
    "invalid_request": "correct the argument named (field) and call again; tools/list gives each argument's range",
    "unknown_option": "tools/list names every argument a tool takes",
    "not_found": "memcastle_search (or a listing) gives ids that exist; 8 characters of one are enough",
    "conflict": "read the current state first (the id it names), then decide; do not retry as it is",
    "ambiguous_id": "give more characters of the id",
    "illegal_transition": "read the item's current state first; the call does not apply to it",
    "forbidden": "the user decides what this connection may do (its token, its memory mode); tell them",
    "too_many_requests": "wait a moment and call again",
    "provider_error": "call again later, or without the part that needs the provider (e.g. ranking lexical)",
    "storage_full": "tell the user: the palace's disk is full, nothing was written",
    "storage_error": "tell the user: the palace could not be written; nothing was acknowledged",
    "internal": "call again; if it persists, tell the user (the daemon's log has the details)",
}
GENERIC_HELP = "tell the user what failed; the daemon's log has the details"


def tool_error(exc: MemCastleError, request_id: str | None = None) -> CallToolResult:
    """A `MemCastleError` as an MCP tool error: the message and hint as text, `{error, code, help, field}` as data;
    an error raised without a hint gets its code's (`DEFAULT_HELP`), so no tool error leaves the agent guessing."""
    if not exc.help:
        exc.help = DEFAULT_HELP.get(exc.code, GENERIC_HELP)
    data = error_shape(exc)
    text = exc.message + f"\nhint: {exc.help}"
    if request_id is not None:  # the HTTP request that carried the call: its log lines carry the same id
        data["request_id"] = request_id
        text += f"\nrequest: {request_id}"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=True)


# --- the server -----------------------------------------------------------------------------------

ARGUMENTS_HELP = "the tool's input schema (tools/list) names every argument, its type and its range"


class MemCastleServer(MCPServer):
    """The SDK's server, with each tool's arguments put under its own names first (`prepare`: another client's
    names translated, an unknown argument refused by name), and arguments that fail the input schema answered like
    every other MemCastle error (`{error, code: invalid_request, help, field}`) instead of the validator's text."""

    accepted: dict[str, frozenset[str]]

    default_tools: frozenset[str]

    max_chars: int  # an answer's size when the call does not set max_chars (mcp.max_chars)

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """The session's tools (`listed_tools`): its profile's, or its token's when that is limited to some; an
        agent's context holds only what it lists."""
        listed = await super()._handle_list_tools(ctx, params)
        chosen = self.listed_tools(ctx.request)
        tools = [tool for tool in listed.tools if tool.name in chosen]
        return listed if len(tools) == len(listed.tools) else ListToolsResult(tools=tools)

    def listed_tools(self, request: Any, *, sessionless: bool | None = None) -> frozenset[str]:
        """What a request's session lists: the tools its `X-MemCastle-Tools` header names (a profile or tool
        names), else those of the token's `--tools` when it is limited, else the daemon's `mcp.tools` profile — and
        never a tool the token may not call, nor `memcastle_set_mode` where no choice can be kept (a sessionless
        client without a token; the instructions say why). `sessionless` says whether the client has a session when
        its request cannot (`initialize` comes before the session id); by default, whether the request carries one."""
        record = token_of(request)
        headers = getattr(request, "headers", None) or {}
        asked = headers.get(PROFILE_HEADER)
        if asked is not None:
            try:
                chosen = tool_set(asked, list(TOOLS))
            except InvalidRequest as exc:
                # The client's mistake, answered as a JSON-RPC error it can read: one line in the log, no traceback.
                log.warning("refused %s header: %s", PROFILE_HEADER, exc.message)
                raise MCPError(INVALID_PARAMS, f"{PROFILE_HEADER}: {exc.message}", error_shape(exc)) from None
        elif record is not None and record.tools is not None:
            chosen = frozenset(record.tools)
        else:
            chosen = self.default_tools
        if record is not None and record.tools is not None:
            chosen = chosen & frozenset(record.tools)
        if sessionless is None:
            sessionless = request is not None and not headers.get(MCP_SESSION_ID_HEADER)
        if record is None and sessionless:
            chosen = chosen - {SET_MODE}
        return chosen

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if name in OTHER_NAMES:  # a name another client calls a tool by, with the arguments it implies
            name, implied = OTHER_NAMES[name]
            arguments = {**(arguments or {}), **implied}
        spec = TOOLS.get(name)
        if spec is None and name not in self.accepted:
            return tool_error(unknown_tool(name))
        if spec is not None:
            try:
                arguments = prepare(spec, arguments or {}, self.accepted[name])
            except MemCastleError as exc:
                return tool_error(exc)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return tool_error(invalid_arguments(exc.__cause__.errors(), ARGUMENTS_HELP, located=False))


def scoped_instructions(server: MemCastleServer) -> Any:
    """Server middleware: a session is told only about the tools it lists (`listed_tools`: its profile, its
    token's tools), at `initialize` and `server/discover` alike, and when it lists only some, how to list all."""

    async def middleware(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict) and "instructions" in result:
            # initialize opens a session (the handshake protocol); server/discover is the sessionless protocol's.
            listed = server.listed_tools(ctx.request, sessionless=ctx.method == "server/discover")
            # A missing set_mode is explained by the instructions themselves, not as a tool to list.
            every = set(TOOLS) - ({SET_MODE} - listed)
            result = {**result, "instructions": instructions_for(listed, every=every, budget=server.max_chars)}
        return result

    return middleware


def unknown_tool(name: str) -> NotFound:
    """A tool that does not exist, with the nearest names there are (a misspelt or another server's name)."""
    nearest = difflib.get_close_matches(name, list(TOOLS), n=3, cutoff=0.5) or difflib.get_close_matches(
        f"memcastle_{name}", list(TOOLS), n=3, cutoff=0.5
    )
    hint = f"nearest: {', '.join(nearest)}" if nearest else "tools/list names every tool"
    return NotFound(f"unknown tool {name!r}", help=hint)


def mcp_transport_security(allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding defence: only loopback `Host`/`Origin` values, plus the configured `mcp.allowed_hosts`."""
    extra = [form for host in allowed_hosts for form in ((host,) if ":" in host else (host, f"{host}:*"))]
    hosts = [*(f"{h}:*" for h in LOOPBACK_HOSTS), *LOOPBACK_HOSTS, *extra]
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def answer(data: Any) -> CallToolResult:
    """A tool's answer as an agent reads it: compact JSON, Unicode kept, once (no second, structured copy)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)])


def compact_schema(schema: Any) -> Any:
    """An input schema as short as it can say what the server checks: no generated titles or model docstrings,
    `anyOf [T, null]` as T, no empty defaults (omitting an optional argument is how it is left unset), and no
    `minLength: 1` or `additionalProperties: false` (the server refuses blanks and unknown fields by name)."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: compact_schema(value) for key, value in schema.items() if key != "title" or not isinstance(value, str)}
    if out.get("minLength") == 1:
        del out["minLength"]  # a blank string is refused by name all the same
    if out.get("additionalProperties") is False:
        del out["additionalProperties"]  # an unknown field is refused by name all the same
    if "$defs" in out:
        out["$defs"] = {name: {k: v for k, v in d.items() if k != "description"} for name, d in out["$defs"].items()}
    if "properties" in schema:
        out["properties"] = {name: compact_schema(value) for name, value in schema["properties"].items()}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (kept,) = [option for option in options if option != {"type": "null"}]
        del out["anyOf"]
        out = {**kept, **out}
    if "default" in out and out["default"] in (None, False, [], ""):
        del out["default"]  # leaving the argument out is how it is left unset
    return out


def bind(
    spec: ToolSpec, services: Services, modes: SessionModes, budget: int = DEFAULT_BUDGET
) -> tuple[Callable[..., CallToolResult], frozenset[str]]:
    """The tool as the SDK registers it — the function's own signature with the SDK's `ctx` in place of `env` —
    and the argument names it accepts. Its answer holds at most `budget` characters unless the call sets its own
    `max_chars` (a tool that takes one fits its items itself; any other answer is cut by `within`)."""
    signature = inspect.signature(spec.fn, eval_str=True)
    params = [p for p in signature.parameters.values() if p.name != "env"]
    takes_budget = any(p.name == "max_chars" for p in params)

    def run(ctx: Context, **arguments: Any) -> CallToolResult:
        # The SDK runs the call in its session's task, outside the HTTP request's context: its id is taken from
        # the request, for the answer and for every log line the call writes.
        request = ctx.request_context.request
        request_id = request_id_of(request.scope) if request is not None else None
        marked = REQUEST_ID.set(request_id)
        try:
            if spec.access != "open":
                enforce_mode(mode_of(ctx, modes)[0], spec.access)
            given = {PYTHON_NAMES.get(key, key): value for key, value in arguments.items()}
            # The client: the token of the HTTP request that carried this call, the MCP client and its session.
            with reading_as(mcp_reader(ctx)):
                allowed = token_tools(ctx)
                if allowed is not None and spec.name not in allowed:
                    raise AccessDenied(
                        f"this token may call only {', '.join(allowed)}; not {spec.name}",
                        help="ask for a token whose --tools include it",
                    )
                if spec.palace_wide:
                    palace_wide(spec.name)
                asked = given.get("max_chars")
                if takes_budget and asked is None:
                    given["max_chars"] = budget
                return answer(within(spec.fn(Env(services, ctx, modes), **given), asked or budget))
        except MemCastleError as exc:
            services.metrics.error(exc.code, "mcp")
            return tool_error(exc, request_id)
        except Exception as exc:  # a bug: answered in the documented shape, the traceback in the log
            log.exception("unexpected error in MCP tool %s", spec.name)
            services.metrics.error("internal", "mcp")
            return tool_error(InternalError.of(exc), request_id)
        finally:
            REQUEST_ID.reset(marked)

    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)
    run.__signature__ = signature.replace(parameters=[context, *params], return_annotation=CallToolResult)  # type: ignore[attr-defined]
    run.__annotations__ = {"ctx": Context, **{p.name: p.annotation for p in params}, "return": CallToolResult}
    run.__name__ = spec.fn.__name__
    return run, frozenset(WIRE_NAMES.get(p.name, p.name) for p in params)


def token_tools(ctx: Context) -> tuple[str, ...] | None:
    """The tools the calling token may use (None: all)."""
    record = token_of(ctx.request_context.request)
    return record.tools if record is not None else None


def mcp_reader(ctx: Context) -> Reader:
    """Who calls a tool: the bearer token of the HTTP request that carried the call (none on stdio, or with
    authentication off), the client's name from its initialize, and its session."""
    record = token_of(ctx.request_context.request)
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    return Reader(
        interface="mcp",
        token=record.name if record is not None else None,
        client=getattr(info, "name", None),
        session=session_of(ctx),
        visibility=record.visibility if record is not None else EVERYTHING,
    )


def build_mcp_server(
    services: Services,
    *,
    allowed_hosts: Sequence[str],
    max_body_bytes: int = 8 * 1024 * 1024,
    tools: str = "core",
    max_chars: int = DEFAULT_BUDGET,
) -> MCPServer:
    """The MemCastle MCP server; its streamable HTTP transport (`session_manager`) is configured for `MCP_PATH`;
    `tools` is the profile (or tool names) a session lists when it does not choose (`mcp.tools`)."""
    server = MemCastleServer(
        "memcastle", version=__version__, instructions=instructions_for(budget=max_chars), log_level="WARNING"
    )
    server.max_chars = max_chars
    server._lowlevel_server.middleware.append(scoped_instructions(server))
    server.default_tools = tool_set(tools, list(TOOLS), field="mcp.tools")
    modes = SessionModes()
    connectors = ", ".join(c["name"] for c in services.mining.list_connectors())
    server.accepted = {}
    for spec in TOOLS.values():
        run, accepted = bind(spec, services, modes, max_chars)
        description = inspect.cleandoc(spec.fn.__doc__ or "")
        # No title: the name says it, and every agent reads the whole list at every start.
        server.add_tool(
            run,
            name=spec.name,
            description=description,
            annotations=spec.annotations(),
            structured_output=False,
        )
        registered = server._tool_manager.get_tool(spec.name)
        assert registered is not None
        parameters = json.dumps(compact_schema(registered.parameters)).replace("{connectors}", connectors)
        registered.parameters = json.loads(parameters)
        server.accepted[spec.name] = accepted

    # Builds `server.session_manager` for MCP_PATH; the Starlette app it returns is not used, the daemon's own app
    # serves the route (`memcastle.mcp.endpoint.LazyEndpoint`). Sessions (not stateless) so each client keeps its
    # own memory mode.
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        max_request_body_size=max_body_bytes,
        transport_security=mcp_transport_security(allowed_hosts),
    )
    return server


def http_endpoint(server: MCPServer) -> ASGIApp:
    """The streamable HTTP endpoint to mount at MCP_PATH; it needs `server.session_manager.run()` to be running."""
    return StreamableHTTPASGIApp(server.session_manager)
