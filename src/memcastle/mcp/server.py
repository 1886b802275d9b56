"""MCP tools over `Services` (SPEC §7): each validates its arguments (pydantic), passes the session's memory-mode
gate, calls one service method and answers the domain values' JSON. A `MemCastleError` becomes a tool error in one
place (`tool_error`); anything else is a bug the SDK reports as a generic tool failure."""

from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.types import ASGIApp

from memcastle import __version__
from memcastle.errors import AccessDenied, Conflict, InvalidRequest, MemCastleError, error_shape, invalid_arguments
from memcastle.mcp.endpoint import MCP_PATH
from memcastle.model.vocabulary import EntityKind, FactState, JobState, Predicate, Ranking, SourceKind
from memcastle.modes import HEADER as MODE_HEADER
from memcastle.modes import MODES, Access, enforce_mode, narrows, parse_mode
from memcastle.services import ForgetRequest, SearchRequest, Services

REQUESTER = "mcp"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")

# The domain's closed vocabularies (memcastle.model.vocabulary), so the tool schemas list the allowed values.

INSTRUCTIONS = """\
MemCastle is your long-term memory: verbatim evidence (drawers) with provenance, searchable across sessions.
- At the start of a session call memcastle_wake_up with your agent name: your last diary entry and recent checkpoints.
- Before answering questions about past work, decisions or code history, call memcastle_search (or memcastle_recall).
- Before trusting a hit, read its `origin` (where it came from, which revision, when) and `signals.preference` (how the
  source-preference policy ranked it and why); prefer current, well-sourced evidence and say when sources conflict.
- When a decision is made or work changes state, call memcastle_checkpoint; save other useful context with
  memcastle_note.
- At the end of a session write memcastle_diary_write: what was done, what is open, what comes next.
- If a tool says memory is disabled or read-only, respect it: do not try to work around the mode.
"""


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, the data access its memory-mode gate checks, and its behaviour hints."""

    name: str
    title: str
    access: Access
    read_only: bool
    destructive: bool = False
    idempotent: bool = True

    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )


TOOLS: Mapping[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("memcastle_status", "Memory server status", "open", read_only=True),
        ToolSpec("memcastle_search", "Search memory", "read", read_only=True),
        ToolSpec("memcastle_recall", "Recall from memory", "read", read_only=True),
        ToolSpec("memcastle_wake_up", "Wake up: resume from memory", "read", read_only=True),
        ToolSpec("memcastle_diary_write", "Write a diary entry", "write", read_only=False),
        ToolSpec("memcastle_diary_read", "Read a diary", "read", read_only=True),
        ToolSpec("memcastle_note", "Save a note", "write", read_only=False),
        ToolSpec("memcastle_checkpoint", "Checkpoint decisions and state", "write", read_only=False, idempotent=False),
        ToolSpec("memcastle_history", "Drawer history", "read", read_only=True),
        ToolSpec("memcastle_fact_list", "List facts", "read", read_only=True),
        ToolSpec("memcastle_fact_history", "Fact history", "read", read_only=True),
        ToolSpec("memcastle_mine", "Mine a source", "write", read_only=False, idempotent=False),
        ToolSpec("memcastle_job_list", "List jobs", "read", read_only=True),
        ToolSpec("memcastle_job_get", "Get a job", "read", read_only=True),
        ToolSpec("memcastle_set_mode", "Set this session's memory mode", "open", read_only=False),
        ToolSpec("memcastle_explain_preference", "Explain a drawer's source preference", "read", read_only=True),
        ToolSpec("memcastle_duplicates", "Duplicates of a drawer", "read", read_only=True),
        ToolSpec("memcastle_forget", "Forget for good", "write", read_only=False, destructive=True, idempotent=False),
    )
}

# --- argument types -------------------------------------------------------------------------------

Query = Annotated[str, Field(min_length=1, description="what to look for, in words (not a regex)")]
Limit = Annotated[int, Field(ge=1, le=200, description="how many results, 1-200")]
WingFilter = Annotated[str | None, Field(description="only this wing (a project or area of the palace)")]
RoomFilter = Annotated[str | None, Field(description="only this room (a topic within a wing)")]
TagFilter = Annotated[tuple[str, ...], Field(description="only drawers carrying every one of these tags")]
Instant = Annotated[str | None, Field(description="an RFC 3339 instant, e.g. 2025-03-01T12:00:00Z")]
AgentName = Annotated[
    str,
    Field(
        min_length=1, description="your stable agent identity, e.g. 'claude-code'; use the same one in every session"
    ),
]
DrawerId = Annotated[str, Field(min_length=1, description="a drawer id, as returned in hits and drawers")]
IdempotencyKey = Annotated[
    str | None,
    Field(
        description="a fresh key (e.g. a UUID) per write; send the same key when you retry it after a timeout, "
        "and the first write's answer comes back instead of a second copy"
    ),
]


class FactArgument(BaseModel):
    """An explicit fact: subject – predicate – object, entities named in words."""

    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, description="the entity the fact is about, e.g. 'memcastle'")
    predicate: Predicate
    object: str = Field(min_length=1, description="the other entity, e.g. 'sqlite'")
    confidence: float = Field(1.0, ge=0, le=1, description="how sure, 0-1")
    valid_from: str | None = Field(None, description="when it became true (RFC 3339); default now")
    subject_kind: EntityKind | None = None
    object_kind: EntityKind | None = None


class CheckpointItem(BaseModel):
    """One decision or piece of state to keep."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="the decision or state, verbatim, with its reason")
    wing: str | None = Field(None, description="wing (project); default 'default'")
    room: str | None = Field(None, description="room; default 'checkpoints'")
    name: str | None = Field(None, description="a name, unique among the room's current drawers")
    tags: tuple[str, ...] = Field((), description="extra tags; 'checkpoint' is always added")
    fact: FactArgument | None = Field(None, description="an explicit fact this drawer is the evidence for")


# --- the memory mode of each session --------------------------------------------------------------


class SessionModes:
    """Memory modes chosen with `memcastle_set_mode`, one per MCP session id.

    Bounded: past `capacity` sessions the least recently set is forgotten (ended sessions are never told to us)."""

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._modes: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str) -> str | None:
        with self._lock:
            return self._modes.get(session_id)

    def set(self, session_id: str, mode: str) -> None:
        with self._lock:
            self._modes[session_id] = mode
            self._modes.move_to_end(session_id)
            while len(self._modes) > self._capacity:
                self._modes.popitem(last=False)


def _headers(ctx: Context) -> Mapping[str, str]:
    return ctx.headers or {}


def session_of(ctx: Context) -> str | None:
    """The MCP session id of the calling connection; None on sessionless transports (2026-07-28, stateless)."""
    # The session manager routes on this header and answers 404 for an unknown id, so it names a live session.
    return _headers(ctx).get(MCP_SESSION_ID_HEADER) or None


def mode_of(ctx: Context, modes: SessionModes) -> tuple[str, str]:
    """(mode, where it came from): the session's choice, else the X-MemCastle-Mode header, else full."""
    session = session_of(ctx)
    chosen = modes.get(session) if session else None
    if chosen is not None:
        return chosen, "session"
    header = _headers(ctx).get(MODE_HEADER)
    if header is not None:
        return parse_mode(header, field="X-MemCastle-Mode"), "header"
    return "full", "default"


# --- errors: the one translation point ------------------------------------------------------------


def tool_error(exc: MemCastleError) -> CallToolResult:
    """A `MemCastleError` as an MCP tool error: the message and hint as text, `{error, code, help, field}` as data."""
    data = error_shape(exc)
    text = exc.message + (f"\nhint: {exc.help}" if exc.help else "")
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=True)


# --- the server -----------------------------------------------------------------------------------

ARGUMENTS_HELP = "the tool's input schema (tools/list) names every argument, its type and its range"


class MemCastleServer(MCPServer):
    """The SDK's server, with arguments that fail the input schema answered like every other MemCastle error
    (`{error, code: invalid_request, help, field}`) instead of the validator's own text."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return tool_error(invalid_arguments(exc.__cause__.errors(), ARGUMENTS_HELP))


def mcp_transport_security(allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding defence: only loopback `Host`/`Origin` values, plus the configured `mcp.allowed_hosts`."""
    extra = [form for host in allowed_hosts for form in ((host,) if ":" in host else (host, f"{host}:*"))]
    hosts = [*(f"{h}:*" for h in LOOPBACK_HOSTS), *LOOPBACK_HOSTS, *extra]
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def build_mcp_server(
    services: Services, *, allowed_hosts: Sequence[str], max_body_bytes: int = 8 * 1024 * 1024
) -> MCPServer:
    """The MemCastle MCP server; its streamable HTTP transport (`session_manager`) is configured for `MCP_PATH`."""
    server = MemCastleServer("memcastle", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    modes = SessionModes()
    connectors = ", ".join(c["name"] for c in services.mining.list_connectors())

    def tool(name: str, **format_args: str) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., Any]]:
        spec = TOOLS[name]

        def register(fn: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
            @functools.wraps(fn)
            def run(**arguments: Any) -> dict[str, Any] | CallToolResult:
                try:
                    if spec.access != "open":
                        ctx = arguments["ctx"]
                        mode, _ = mode_of(ctx, modes)
                        enforce_mode(mode, spec.access)
                    return fn(**arguments)
                except MemCastleError as exc:
                    return tool_error(exc)

            description = inspect.cleandoc(fn.__doc__ or "")
            if format_args:
                description = description.format(**format_args)
            server.add_tool(
                run,
                name=name,
                title=spec.title,
                description=description,
                annotations=spec.annotations(),
                structured_output=True,
            )
            return run

        return register

    # --- status and mode --------------------------------------------------------------------------

    @tool("memcastle_status")
    def status(ctx: Context) -> dict[str, Any]:
        """Is the memory server up, and what does it hold? Returns version, palace, drawer and job counts,
        embedding and extraction state, warnings, and this session's memory `mode` with `mode_source`
        (session, header or default). Always allowed, even when memory is disabled."""
        mode, source = mode_of(ctx, modes)
        return {**services.status.status(), "mode": mode, "mode_source": source}

    @tool("memcastle_set_mode")
    def set_mode(
        ctx: Context,
        mode: Annotated[str, Field(description="full | read_only | disabled", json_schema_extra={"enum": list(MODES)})],
    ) -> dict[str, Any]:
        """Narrow the memory mode of this MCP session only: 'full' (read and write), 'read_only' (searches work,
        every write is refused) or 'disabled' (reads are refused too: nothing is read from or written to memory;
        status and set_mode still work). A mode can only be narrowed, never widened: the mode this client was given
        (its X-MemCastle-Mode header, else full) is a ceiling. Other clients keep their own mode. Returns the new
        and the previous mode."""
        chosen = parse_mode(mode, field="mode")
        session = session_of(ctx)
        if session is None:
            raise Conflict(
                "this connection has no MCP session to keep a memory mode for",
                help="send the X-MemCastle-Mode header with each request instead, or connect with a "
                "session (streamable HTTP with an initialize handshake)",
            )
        try:
            previous: str | None = mode_of(ctx, modes)[0]
        except InvalidRequest:
            previous = "disabled"  # an unknown X-MemCastle-Mode header: nothing can be assumed about the ceiling
        assert previous is not None
        if not narrows(previous, chosen):
            raise AccessDenied(
                f"memcastle_set_mode can only narrow this session's mode ({previous}), never widen it to {chosen}",
                help="the mode a client is given is a ceiling: only whoever starts or configures the client can "
                "change it",
            )
        modes.set(session, chosen)
        return {"mode": chosen, "previous": previous, "scope": "session"}

    # --- reading ----------------------------------------------------------------------------------

    @tool("memcastle_search")
    def search(
        ctx: Context,
        query: Query,
        limit: Limit = 10,
        wing: WingFilter = None,
        room: RoomFilter = None,
        tags: TagFilter = (),
        source_kind: Annotated[SourceKind | None, Field(description="only this kind of source")] = None,
        connector: Annotated[str | None, Field(description="only drawers mined by this connector")] = None,
        ranking: Annotated[Ranking, Field(description="auto picks hybrid when embeddings exist")] = "auto",
        as_of: Annotated[str | None, Field(description="what was current at this RFC 3339 instant")] = None,
        since: Annotated[str | None, Field(description="window start, RFC 3339 (with until)")] = None,
        until: Annotated[str | None, Field(description="window end, RFC 3339 (with since)")] = None,
        include_historical: Annotated[bool, Field(description="also closed (superseded) versions")] = False,
        known_at: Annotated[
            str | None, Field(description="what the palace knew at this RFC 3339 instant (record time)")
        ] = None,
        known_since: Annotated[
            str | None, Field(description="what the palace knew at some point from this instant (with known_until)")
        ] = None,
        known_until: Annotated[str | None, Field(description="record-time window end (with known_since)")] = None,
        expand: Annotated[bool, Field(description="add drawers related through the knowledge graph")] = False,
        preferences: Annotated[Literal["on", "off"], Field(description="apply the source-preference policy")] = "on",
    ) -> dict[str, Any]:
        """Search memory before answering questions about past work, decisions, code history or conversations.
        Returns ranked `hits`; each has the verbatim `drawer` (content, wing/room, tags, source, provenance),
        `snippet` (the part that matched best, with the matched words' offsets and its lines), `origin` (where it
        came from: connector, source_id, document, chunk, lines, revision, occurred_at) and `signals`
        (why it ranked: lexical/semantic/fusion scores, relevance, and `preference`: how the source-preference
        policy adjusted it and why). Read origin and preference before trusting a hit. Narrow with wing, room,
        tags, source_kind or connector; travel in time with as_of (when things held: a commit's time, a
        session's start), or since+until, or include_historical, or known_at (what memory held at that instant;
        one of them). Refused when memory is disabled."""
        return services.search.search(
            SearchRequest(
                query=query,
                limit=limit,
                wing=wing,
                room=room,
                tags=tags,
                source_kind=source_kind,
                connector=connector,
                ranking=ranking,
                as_of=as_of,
                from_=since,
                until=until,
                include_historical=include_historical,
                expand=expand,
                preferences=preferences,
                known_at=known_at,
                known_from=known_since,
                known_until=known_until,
            )
        ).to_json()

    @tool("memcastle_recall")
    def recall(
        ctx: Context,
        query: Query,
        limit: Limit = 10,
        wing: WingFilter = None,
        tags: TagFilter = (),
        source_kind: Annotated[SourceKind | None, Field(description="only this kind of source")] = None,
        as_of: Annotated[str | None, Field(description="what was current at this RFC 3339 instant")] = None,
        include_historical: Annotated[bool, Field(description="also closed (superseded) versions")] = False,
    ) -> dict[str, Any]:
        """Quick recall across a whole wing (never a room): "what do I know about X?" before you answer. Same
        answer as memcastle_search: hits with the verbatim drawer, its `origin` and the ranking `signals`
        (including the source `preference`). Use memcastle_search for room, connector, ranking or time windows.
        Refused when memory is disabled."""
        return services.search.recall(
            SearchRequest(
                query=query,
                limit=limit,
                wing=wing,
                tags=tags,
                source_kind=source_kind,
                as_of=as_of,
                include_historical=include_historical,
            )
        ).to_json()

    @tool("memcastle_wake_up")
    def wake_up(
        ctx: Context,
        agent: AgentName,
        wing: WingFilter = None,
        max_items: Annotated[int, Field(ge=1, le=200, description="at most this many drawers")] = 10,
        max_bytes: Annotated[int, Field(ge=256, le=1_048_576, description="at most this many bytes of content")] = 8192,
    ) -> dict[str, Any]:
        """Call once at the start of every session: returns your latest `diary` entry and your most recent
        `checkpoints` (decisions and state you saved under this agent name; with `wing`, your project's and those
        in no project), trimmed by whole drawers to the budget (`omitted` says how many did not fit), so you resume
        where work left off. Each drawer carries its source and provenance. Refused when memory is disabled."""
        return services.agents.wake_up(agent, wing=wing, max_items=max_items, max_bytes=max_bytes)

    @tool("memcastle_diary_read")
    def diary_read(ctx: Context, agent: AgentName, wing: WingFilter = None, limit: Limit = 10) -> dict[str, Any]:
        """Read an agent's diary entries, newest first (`entries`: drawers in room 'diary'). Refused when memory
        is disabled."""
        return {"entries": [d.to_json() for d in services.agents.read_diary(agent, wing=wing, limit=limit)]}

    @tool("memcastle_history")
    def history(ctx: Context, drawer_id: DrawerId) -> dict[str, Any]:
        """Every version of a drawer, oldest first (`versions`). When a source document changed or a note was
        superseded, old versions stay with valid_from/valid_to and supersedes/superseded_by links: use it to see
        how something evolved, or whether a hit is still current. Refused when memory is disabled."""
        return {"versions": [d.to_json() for d in services.drawers.drawer_history(drawer_id)]}

    @tool("memcastle_fact_list")
    def fact_list(
        ctx: Context,
        subject: Annotated[str | None, Field(description="entity name the facts are about")] = None,
        predicate: Predicate | None = None,
        object: Annotated[str | None, Field(description="entity name on the other side")] = None,
        state: FactState | None = None,
        as_of: Annotated[str | None, Field(description="what held at this RFC 3339 instant")] = None,
        limit: Limit = 50,
    ) -> dict[str, Any]:
        """List facts (subject - predicate - object, extracted from drawers or recorded explicitly) with their
        lifecycle: state (current, conflicting, superseded, invalidated, historical), links, evidence drawer and
        origin, and, in a conflict, which fact is `preferred` and the `basis` (source preference or recency).
        Check the state before relying on a fact. Refused when memory is disabled."""
        return {
            "facts": services.facts.list_facts(
                subject=subject, predicate=predicate, object=object, state=state, as_of=as_of, limit=limit
            )
        }

    @tool("memcastle_fact_history")
    def fact_history(
        ctx: Context,
        fact_id: Annotated[str, Field(min_length=1, description="a fact id")],
    ) -> dict[str, Any]:
        """A fact and everything transitively linked to it (supersedes, contradicts, confirms, refines,
        invalidates), ordered by valid_from: how a piece of knowledge changed, and why. Refused when memory is
        disabled."""
        return {"facts": services.facts.fact_history(fact_id)}

    @tool("memcastle_explain_preference")
    def explain_preference(ctx: Context, drawer_id: DrawerId) -> dict[str, Any]:
        """How the source-preference policy ranks a drawer: its connector, each criterion tried with the value
        found, which matched and won, and the resulting adjustment. Use it when a hit's signals.preference
        matters to your answer. Refused when memory is disabled."""
        return services.drawers.preference_trace(drawer_id)

    @tool("memcastle_duplicates")
    def duplicates(ctx: Context, drawer_id: DrawerId) -> dict[str, Any]:
        """Drawers linked to this one as exact, normalized or near copies (linked, never merged), each with its
        verdict and similarity: other sources for the same text. Refused when memory is disabled."""
        return {"duplicates": services.drawers.duplicates(drawer_id)}

    @tool("memcastle_job_list")
    def job_list(
        ctx: Context,
        status: JobState | None = None,
        kind: Annotated[str | None, Field(description="mine, embed, extract or verify")] = None,
        limit: Limit = 50,
    ) -> dict[str, Any]:
        """Background jobs (mining, embedding, extraction, verification), newest first, with status and
        progress. Refused when memory is disabled."""
        return {"jobs": [j.to_json() for j in services.jobs.list_jobs(status, kind, limit)]}

    @tool("memcastle_job_get")
    def job_get(ctx: Context, job_id: Annotated[str, Field(min_length=1, description="a job id")]) -> dict[str, Any]:
        """One background job: status (queued, running, paused, completed, failed, cancelled), progress, and its
        result (counts) or error. Poll it after memcastle_mine. Refused when memory is disabled."""
        return services.jobs.get_job(job_id).to_json()

    # --- writing ----------------------------------------------------------------------------------

    @tool("memcastle_note")
    def note(
        ctx: Context,
        content: Annotated[str, Field(min_length=1, description="the text to remember, verbatim")],
        wing: Annotated[str | None, Field(description="wing (project or area); default 'default'")] = None,
        room: Annotated[str | None, Field(description="room (topic); default 'notes'")] = None,
        tags: Annotated[tuple[str, ...], Field(description="tags for later filtering")] = (),
        agent: Annotated[str | None, Field(description="who is writing: your agent identity")] = None,
        name: Annotated[str | None, Field(description="a name, unique among the room's current drawers")] = None,
        idempotency_key: IdempotencyKey = None,
    ) -> dict[str, Any]:
        """Save something worth remembering verbatim (a drawer): a finding, a user preference, context a later
        session will need. File it in a wing (project) and room (topic) so searches can scope to it. The same
        unnamed text from the same writer already in that room is returned instead of stored twice (`created`
        false). Returns the
        `drawer` with its id and provenance. Refused in read_only and disabled modes."""
        written = services.drawers.write_note(
            content,
            idempotency_key=idempotency_key,
            wing=wing,
            room=room,
            tags=tags,
            agent=agent,
            name=name,
            requested_by=REQUESTER,
        )
        return {"drawer": written.drawer.to_json(), "created": written.created, "replayed": written.replayed}

    @tool("memcastle_diary_write")
    def diary_write(
        ctx: Context,
        agent: AgentName,
        content: Annotated[str, Field(min_length=1, description="what you did, what is open, what comes next")],
        wing: Annotated[str | None, Field(description="wing (project); default 'default'")] = None,
    ) -> dict[str, Any]:
        """Write a diary entry at the end of a session or a milestone: what was done, what is open, what to do
        next. Stored verbatim in room 'diary' under your agent identity; memcastle_wake_up returns the latest
        entry next time. The exact same text again returns the existing entry. Refused in read_only and disabled
        modes."""
        return {"drawer": services.agents.write_diary(agent, content, wing=wing, requested_by=REQUESTER).to_json()}

    @tool("memcastle_checkpoint")
    def checkpoint(
        ctx: Context,
        items: Annotated[list[CheckpointItem], Field(min_length=1, description="decisions and state to keep")],
        agent: Annotated[str | None, Field(description="who is checkpointing: your agent identity")] = None,
        idempotency_key: IdempotencyKey = None,
    ) -> dict[str, Any]:
        """Checkpoint decisions and working state so they outlive the session: when a decision is made ("we
        chose X because Y"), when a task changes state, before a risky step. Each item becomes a drawer tagged
        'checkpoint' (room 'checkpoints' unless given) and may record an explicit fact with that drawer as its
        evidence. All items are validated before any is saved. memcastle_wake_up returns the most recent
        checkpoints. Refused in read_only and disabled modes."""
        written = services.agents.write_checkpoint(
            [item.model_dump(exclude_none=True) for item in items],
            agent=agent,
            idempotency_key=idempotency_key,
            requested_by=REQUESTER,
        )
        return {"drawers": [d.to_json() for d in written.drawers], "replayed": written.replayed}

    @tool("memcastle_mine", connectors=connectors)
    def mine(
        ctx: Context,
        connector: Annotated[str, Field(min_length=1, description="the connector's name (listed above)")],
        locator: Annotated[str, Field(description="what to mine: a path, repository or export file")] = "",
        options: Annotated[dict[str, str] | None, Field(description="connector options (key: value)")] = None,
        wing: Annotated[str | None, Field(description="wing to file the drawers in")] = None,
        full: Annotated[bool, Field(description="re-read every document, not only changed ones")] = False,
        notice_removed: Annotated[
            bool | None,
            Field(description="close the drawers of documents gone from the source (default: directory, notes)"),
        ] = None,
    ) -> dict[str, Any]:
        """Queue a background mine of a source (project directory, git repository, notes folder, chat export)
        into memory; returns the `job` at once: poll memcastle_job_get. Mining is incremental: unchanged
        documents are skipped, changed ones supersede their old drawers (history kept). A request for the same
        source joins one still queued (`joined` true). Connectors: {connectors}. Refused in read_only and
        disabled modes."""
        job, created = services.mining.submit_mine(
            connector, locator, options, wing=wing, full=full, notice_removed=notice_removed, requested_by=REQUESTER
        )
        return {"job": job.to_json(), "joined": not created}

    @tool("memcastle_forget")
    def forget(
        ctx: Context,
        scope: Annotated[
            Literal["drawer", "document", "source", "room", "wing", "search"],
            Field(
                description="what to forget: one drawer (with its history), a mined document or source, a room, "
                "a wing, or the drawers matching a search"
            ),
        ],
        drawer_id: Annotated[str | None, Field(description="for scope drawer")] = None,
        source_id: Annotated[str | None, Field(description="for scope document or source (see a hit's origin)")] = None,
        document: Annotated[str | None, Field(description="for scope document: the origin's document")] = None,
        wing: Annotated[str | None, Field(description="for scope room or wing; a filter for search")] = None,
        room: Annotated[str | None, Field(description="for scope room; a filter for search")] = None,
        query: Annotated[str | None, Field(description="for scope search: every word must match")] = None,
        dry_run: Annotated[
            bool | None,
            Field(description="only count what would go; the default for source, room, wing and search"),
        ] = None,
    ) -> dict[str, Any]:
        """Erase memory for good: the drawers of the scope and everything derived from them (search index,
        vectors, links, mentions, facts resting only on them). It cannot be undone; only a tombstone (when, which
        scope, how much) stays. Use it when the user asks to forget something (a secret, private data, a mistake),
        never to tidy up: to correct a drawer, supersede it instead. Run with dry_run first and show the user the
        counts and drawers it lists; broad scopes are dry runs unless dry_run is false. Refused in read_only and
        disabled modes."""
        search = None
        if scope == "search":
            if query is None:
                raise InvalidRequest("scope search needs query", field="query")
            search, wing, room = SearchRequest(query=query, wing=wing, room=room), None, None
        elif query is not None:
            raise InvalidRequest("query is only for scope search", field="query")
        request = ForgetRequest(
            kind=scope,
            drawer_id=drawer_id,
            source_id=source_id,
            document=document,
            wing=wing,
            room=room,
            search=search,
        )
        return services.forgetting.forget(request, dry_run=dry_run, requested_by=REQUESTER).to_json()

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
