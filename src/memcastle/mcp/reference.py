"""docs/mcp.md's Tools table, written from the tools themselves with cog (`cog -r docs/mcp.md`; `cog --check` in CI
fails when a tool, an argument or a hint changed without it): each tool's hints, its arguments with what their
types say (choices, bounds, defaults, descriptions; a search option's help from its one declaration), and what it
answers (`mcp.tools.answers`)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any, Literal, get_args, get_origin

from pydantic.fields import FieldInfo

from memcastle.mcp.tools import TOOLS
from memcastle.mcp.tools.answers import ANSWERS
from memcastle.mcp.tools.base import ToolSpec
from memcastle.model.options import declared_options
from memcastle.model.requests import SearchRequest

HEADER = "| tool | RO | D | I | arguments | answer |\n|---|---|---|---|---|---|\n"
# A search option's help, for the tools whose arguments are declared on `SearchRequest`.
OPTION_HELP = {d.name: d.option.help for d in declared_options(SearchRequest)}
SEARCHES = ("memcastle_search", "memcastle_recall")


def tools_table() -> str:
    """The table, a row per tool in the order the modules declare them."""
    return HEADER + "".join(_row(spec) + "\n" for spec in TOOLS.values())


def _row(spec: ToolSpec) -> str:
    hints = spec.hints
    if hints.read_only:
        flags = "yes | |"
    else:
        destructive = "**yes**" if hints.destructive else "no"
        flags = f"no | {destructive} | {'yes' if hints.idempotent else 'no'}"
    arguments = "; ".join(_arguments(spec)) or "—"
    return f"| `{spec.name}` | {flags} | {_cell(arguments)} | {ANSWERS[spec.name]} |"


def _arguments(spec: ToolSpec) -> Iterator[str]:
    for parameter in inspect.signature(spec.fn, eval_str=True).parameters.values():
        if parameter.name == "env" or parameter.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        name = "from" if parameter.name == "from_" else parameter.name
        optional = parameter.default is not inspect.Parameter.empty
        helps = OPTION_HELP if spec.name in SEARCHES else {}
        said = _said(helps.get(parameter.name), parameter.annotation, parameter.default if optional else None)
        yield f"`{name}{'?' if optional else ''}`" + (f" ({said})" if said else "")


def _said(help: str | None, annotation: Any, default: Any) -> str:
    """What an argument's type says: its choices or bounds, its default, its description."""
    kind, infos = _unwrapped(annotation)
    parts: list[str] = []
    choices = _choices(kind)
    if choices:
        parts.append(", ".join(choices))
    low = next((getattr(m, "ge", None) for i in infos for m in i.metadata if getattr(m, "ge", None) is not None), None)
    high = next((getattr(m, "le", None) for i in infos for m in i.metadata if getattr(m, "le", None) is not None), None)
    if low is not None and high is not None:
        parts.append(f"{low}–{high}")
    elif low is not None:
        parts.append(f"≥ {low}")
    if default not in (None, False, (), ""):
        parts.append(f"default {default}")
    description = help or next((i.description for i in infos if i.description), None)
    if description:
        parts.append(description)
    return "; ".join(parts)


def _unwrapped(annotation: Any) -> tuple[Any, list[FieldInfo]]:
    """The type under `Annotated` layers, and the pydantic fields those carried."""
    infos: list[FieldInfo] = []
    while hasattr(annotation, "__metadata__"):
        infos.extend(m for m in annotation.__metadata__ if isinstance(m, FieldInfo))
        annotation = annotation.__origin__
    return annotation, infos


def _choices(kind: Any) -> list[str]:
    """The values of a `Literal` (alone, or or-None)."""
    if get_origin(kind) is Literal:
        return [str(v) for v in get_args(kind)]
    for member in get_args(kind):
        found = _choices(_unwrapped(member)[0])
        if found:
            return found
    return []


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
