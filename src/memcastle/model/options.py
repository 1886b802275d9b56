"""A request's options, each declared once on its request's field (`option(...)`): its default, its kind, its help
and choices. Every interface derives its own parameter from the declaration — the REST body's field (generated into
`memcastle.api.schemas` with cog), the MCP tools' arguments, the command line's option and the web form's input — so
a new option is one field plus the service logic that reads it (CONTRIBUTING.md shows one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Literal

# How an interface types an option: a whole number within `bounds`; a wing, room or connector name; a list of tags; a
# closed vocabulary (`choices`); an instant (RFC 3339 or a date); a flag.
OptionKind = Literal["count", "name", "tags", "choice", "instant", "flag"]
# Which MCP tools offer it: both search and recall, memcastle_search only, or neither (see `Option.agents`).
AgentReach = Literal["both", "search", "none"]


@dataclass(frozen=True)
class Option:
    """What interfaces need beyond the field's name, type and default.

    `help` is what a person reads (`--help`, the REST schema, the web form's title); `brief` what an agent's tool
    list says, only where the name does not say it, since every agent reads the whole list at each start.
    `cli` spells the command-line option when `--name` does not; `scope` marks where-and-when options, which a
    forget by search takes too; `recall` whether a recall takes it; `agents` which MCP tools offer it."""

    help: str
    kind: OptionKind
    brief: str | None = None
    choices: tuple[str, ...] = ()
    bounds: tuple[int, int] | None = None
    cli: tuple[str, ...] = ()
    scope: bool = False
    recall: bool = True
    agents: AgentReach = "both"

    def flags(self, name: str) -> tuple[str, ...]:
        """The command line's spellings: `cli`, else `--name` with dashes."""
        return self.cli or ("--" + name.rstrip("_").replace("_", "-"),)


def option(default: Any, help: str, kind: OptionKind, **more: Any) -> Any:
    """A request field declared as an option (`dataclasses.field` with the `Option` as metadata)."""
    return field(default=default, metadata={"option": Option(help, kind, **more)})


@dataclass(frozen=True)
class Declared:
    """One declared option of a request: its field name, wire name (`from` for `from_`), default and `Option`."""

    name: str
    default: Any
    option: Option

    @property
    def wire(self) -> str:
        return self.name.rstrip("_")


def declared_options(request_type: type[Any]) -> Iterator[Declared]:
    """The options declared on `request_type`'s fields, in field order (fields that are no option are left out)."""
    for found in fields(request_type):
        declared = found.metadata.get("option")
        if isinstance(declared, Option):
            yield Declared(found.name, found.default, declared)
