"""What every tool module shares: `tool`, which declares a tool beside its function; the `Env` a tool runs with; the
argument types; and the vocabulary other clients use (`prepare`).

A tool is a plain function `fn(env, **arguments) -> dict`: its signature is its input schema (pydantic types with
descriptions), its docstring the description an agent reads, `tool(...)` its name, memory-mode access and hints.
`memcastle.mcp.server` binds every declared tool to the daemon's services."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from memcastle.errors import InvalidRequest
from memcastle.mcp.sessions import SessionModes, mode_of
from memcastle.modes import Access
from memcastle.services import Services
from memcastle.services.views import MIN_BUDGET

REQUESTER = "mcp"

Adapt = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Env:
    """What a tool runs with: the palace's services and the calling MCP session."""

    services: Services
    ctx: Context
    modes: SessionModes

    def mode(self) -> tuple[str, str]:
        return mode_of(self.ctx, self.modes)


@dataclass(frozen=True)
class Hints:
    """What a tool does to the palace, as MCP's behaviour hints say it: only reads; writes, the same call again
    changing nothing more (idempotent) or adding again; erases for good (destructive)."""

    read_only: bool
    destructive: bool = False
    idempotent: bool = True


READS = Hints(read_only=True)
WRITES = Hints(read_only=False)  # the same call again changes nothing more
ADDS = Hints(read_only=False, idempotent=False)  # the same call again adds again
ERASES = Hints(read_only=False, destructive=True, idempotent=False)
REPAIRS = Hints(read_only=False, destructive=True)  # may drop what cannot be kept; again, nothing more


@dataclass(frozen=True)
class ToolSpec:
    """A declared tool: its function, name, the data access its memory-mode gate checks, its behaviour hints, and
    the other names its arguments go by (`aliases`: given name → own name; `adapt` reshapes arguments sent in
    another client's structure before they are checked)."""

    fn: Callable[..., dict[str, Any]]
    name: str
    title: str
    access: Access
    hints: Hints
    aliases: Mapping[str, str] = field(default_factory=dict)
    adapt: Adapt | None = None
    other_names: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    palace_wide: bool = False  # works on the whole palace: refused for a token limited to some wings

    @property
    def read_only(self) -> bool:
        return self.hints.read_only

    def annotations(self) -> ToolAnnotations:
        """The hints, where they differ from MCP's defaults (read-only false, idempotent false); destructive and
        idempotent mean something only for a tool that writes. The open-world hint is left out:
        every tool works on the palace alone, which the server's instructions say once."""
        hints = self.hints
        if hints.read_only:
            return ToolAnnotations(read_only_hint=True)
        # A destructive tool says so although it is the default: a client that asks before such calls should not
        # have to know the default.
        return ToolAnnotations(destructive_hint=hints.destructive, idempotent_hint=True if hints.idempotent else None)


TOOLS: dict[str, ToolSpec] = {}  # every declared tool, in the order the modules declare them
# Tool names other clients call (the original MemCastle's), not listed: → (the tool, the arguments the name implies)
OTHER_NAMES: dict[str, tuple[str, Mapping[str, Any]]] = {}


def tool(
    name: str,
    title: str,
    access: Access,
    hints: Hints,
    *,
    aliases: Mapping[str, str] | None = None,
    adapt: Adapt | None = None,
    other_names: Mapping[str, Mapping[str, Any]] | None = None,
    palace_wide: bool = False,
) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    """Declare the decorated function as the MCP tool `name`."""

    def declare(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        if name in TOOLS or name in OTHER_NAMES:
            raise RuntimeError(f"MCP tool {name} is declared twice")
        TOOLS[name] = ToolSpec(
            fn, name, title, access, hints, aliases or {}, adapt, other_names or {}, palace_wide,
        )  # fmt: skip
        for other, implied in (other_names or {}).items():
            OTHER_NAMES[other] = (name, implied)
        return fn

    return declare


def known_tools(names: Sequence[str] | None, field: str = "tools") -> list[str] | None:
    """A token's tool set, each a declared tool or a profile (`memcastle.mcp.profiles`: `core`, `full`), refused
    by name otherwise; None for every tool."""
    from memcastle.mcp.profiles import expand

    if names is None:
        return None
    return expand(names, list(TOOLS), field=field)


# --- the vocabulary of other clients -------------------------------------------------------------------------------

# Names the original MemCastle's tools (and earlier MemCastle versions) gave arguments, wherever a tool takes the
# argument they stand for (docs/mcp.md, "Other names").
COMMON_ALIASES = {"agent_identity": "agent", "since": "from", "known_since": "known_from"}
# Python names of arguments whose wire name is a keyword.
PYTHON_NAMES = {"from": "from_"}


def prepare(spec: ToolSpec, arguments: Mapping[str, Any], accepted: frozenset[str]) -> dict[str, Any]:
    """The arguments under the tool's own names: another client's structure reshaped (`adapt`), a nested `filter`
    object flattened, aliases renamed; an argument the tool does not take is refused by name with the ones it
    takes, never dropped."""
    given = dict(arguments)
    if spec.adapt is not None:
        given = spec.adapt(given)
    nested = given.pop("filter", None) if "filter" not in accepted else None
    if nested is not None:
        if not isinstance(nested, dict):
            raise InvalidRequest("filter must be an object of filters (wing, room, tags, …)", field="filter")
        for key, value in nested.items():
            if key in given:
                raise InvalidRequest(f"{key} is given both inside filter and beside it: give it once", field=key)
            given[key] = value
    out: dict[str, Any] = {}
    for key, value in given.items():
        own = key if key in accepted else spec.aliases.get(key, COMMON_ALIASES.get(key, key))
        if own in out:
            raise InvalidRequest(f"{key} and {own} are the same argument of {spec.name}: give one", field=key)
        out[own] = value
    unknown = sorted(set(out) - accepted)
    if unknown:
        listed = ", ".join(sorted(accepted))
        raise InvalidRequest(
            f"{spec.name} has no argument {unknown[0]!r}; it takes: {listed}",
            field=unknown[0],
            help="the tool's input schema (tools/list) describes each argument; docs/mcp.md lists the other names "
            "arguments go by",
        )
    return out


# --- argument types ------------------------------------------------------------------------------------------------

# Descriptions only where the name does not say it: the whole tool list is read by every agent at every start.
Query = Annotated[str, Field(min_length=1, description="in words")]
Limit = Annotated[int, Field(ge=1, le=200)]
Wing = Annotated[str | None, Field()]
Room = Annotated[str | None, Field()]
Tags = Annotated[tuple[str, ...], Field(description="all of these")]
Instant = Annotated[str | None, Field(description="RFC 3339")]
From = Annotated[str | None, Field(alias="from", description="window start, with until")]
Until = Annotated[str | None, Field()]
AgentName = Annotated[str, Field(min_length=1, description="your stable name, e.g. claude-code")]
DrawerId = Annotated[str, Field(min_length=1)]
FactId = Annotated[str, Field(min_length=1)]
JobId = Annotated[str, Field(min_length=1)]
Full = Annotated[bool, Field(description="whole text, not the snippet")]
MaxChars = Annotated[int | None, Field(ge=MIN_BUDGET, description="answer size cap; whole items")]
Reason = Annotated[str | None, Field()]
IdempotencyKey = Annotated[str | None, Field(description="same key on a retry")]
