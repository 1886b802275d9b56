"""Finding and reading memory: search, recall, one drawer in full, its history, copies and preference, and the
palace's wings and rooms."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field

from memcastle.errors import InvalidRequest
from memcastle.mcp.tools.base import (
    READS,
    DrawerId,
    Env,
    Full,
    MaxChars,
    Query,
    tool,
)
from memcastle.model.options import Declared, declared_options
from memcastle.model.requests import request_of
from memcastle.services import SearchRequest
from memcastle.services.views import MIN_BUDGET, drawer_view, fit, search_view, shorter_hit, size

F = TypeVar("F", bound=Callable[..., Any])
KEYWORD = inspect.Parameter.KEYWORD_ONLY

# An agent's context is small: five hits unless it asks for more.
AGENT_DEFAULTS = {"limit": 5}
BUDGET = Annotated[int | None, Field(ge=MIN_BUDGET)]


def _argument(declared: Declared, brief: bool) -> inspect.Parameter:
    """A tool's argument for a declared search option: its kind as a type, its brief as its description (with
    `brief`)."""
    option = declared.option
    described = Field(description=option.brief if brief else None, alias="from" if declared.name == "from_" else None)
    kinds: dict[str, Any] = {
        "count": Annotated[int, Field(ge=option.bounds[0], le=option.bounds[1])] if option.bounds else int,
        "name": str | None,
        "tags": tuple[str, ...],
        "instant": str | None,
        "flag": bool,
    }
    if option.kind == "choice":
        chosen: Any = Literal[option.choices]
        kind = chosen | None if declared.default is None else chosen
    else:
        kind = kinds[option.kind]
    default = AGENT_DEFAULTS.get(declared.name, declared.default)
    return inspect.Parameter(declared.name, KEYWORD, default=default, annotation=Annotated[kind, described])


def search_arguments(tool_name: str) -> Callable[[F], F]:
    """Give a search tool the arguments of the search options it offers (`Option.agents`; a recall's only what a
    recall takes), between the query and how the answer is shaped. A recall's go undescribed: the search beside it
    in every tool list describes them once."""
    recall = tool_name == "memcastle_recall"
    offered = [d for d in declared_options(SearchRequest) if d.option.agents == "both" or
               (d.option.agents == "search" and not recall)]  # fmt: skip
    parameters = [
        inspect.Parameter("env", KEYWORD, annotation=Env),
        inspect.Parameter("query", KEYWORD, annotation=str if recall else Query),
        *(_argument(d, brief=not recall) for d in offered if d.option.recall or not recall),
        inspect.Parameter("full", KEYWORD, default=False, annotation=bool if recall else Full),
        inspect.Parameter("max_chars", KEYWORD, default=None, annotation=BUDGET if recall else MaxChars),
    ]

    def declare(fn: F) -> F:
        fn.__dict__["__signature__"] = inspect.Signature(parameters, return_annotation=dict[str, Any])
        return fn

    return declare


@tool("memcastle_search", "Search memory", "read", READS)
@search_arguments("memcastle_search")
def search(env: Env, query: str, full: bool = False, max_chars: int | None = None, **options: Any) -> dict[str, Any]:
    """Search memory before answering about past work, decisions, code or talks. Hits: origin, snippet (best
    passage), chars (read all: memcastle_get_drawer), signals (coverage: query words held), preference."""
    result = env.services.search.search(request_of(SearchRequest, options, query=query))
    return fit(search_view(result, full=full), "hits", max_chars, shrink=shorter_hit)


@tool("memcastle_recall", "Recall from memory", "read", READS)
@search_arguments("memcastle_recall")
def recall(env: Env, query: str, full: bool = False, max_chars: int | None = None, **options: Any) -> dict[str, Any]:
    """Recall across a wing: memcastle_search without room, connector or record time, plus the wing's pinned
    drawers."""
    result = env.services.search.recall(request_of(SearchRequest, options, query=query))
    return fit(search_view(result, full=full), "hits", max_chars, shrink=shorter_hit)


@tool("memcastle_get_drawer", "Read one drawer", "read", READS, aliases={"id": "drawer_id"})
def get_drawer(
    env: Env,
    drawer_id: DrawerId,
    lines: Annotated[tuple[int, int] | None, Field(description="[first, last], numbered as in origin")] = None,
    max_chars: MaxChars = None,
) -> dict[str, Any]:
    """A drawer verbatim: a hit in full, or the lines you need."""
    drawer = env.services.drawers.get_drawer(drawer_id)
    out = drawer_view(drawer, content=False)
    text = drawer.content.splitlines(keepends=True) or [""]
    origin = drawer.source.origin
    first = origin.lines[0] if origin is not None and origin.lines else 1
    last = first + len(text) - 1
    start, end = first, last
    if lines is not None:
        start, end = lines
        if start > end or end < first or start > last:
            raise InvalidRequest(f"lines must be a range within {first}-{last}", field="lines")
        start, end = max(start, first), min(end, last)
    chosen = text[start - first : end - first + 1]
    if max_chars is not None:
        room = max_chars - size(out) - 120
        kept: list[str] = []
        used = 0
        for line in chosen:
            if used + len(line) + 1 > room:
                break
            kept.append(line)
            used += len(line) + 1
        if not kept:
            raise InvalidRequest(f"max_chars {max_chars} does not hold line {start}; raise it", field="max_chars")
        if len(kept) < len(chosen):
            out["more"] = f"lines {start + len(kept)}-{end} left out by max_chars: ask for them with lines"
        chosen = kept
    out["lines"] = [start, start + len(chosen) - 1]
    out["content"] = "".join(chosen)
    return out


@tool("memcastle_history", "Drawer history", "read", READS, aliases={"id": "drawer_id"})
def history(env: Env, drawer_id: DrawerId, full: Full = False) -> dict[str, Any]:
    """A drawer's versions, oldest first: is a hit current, how did it change?"""
    return {"versions": [drawer_view(d, content=full) for d in env.services.drawers.drawer_history(drawer_id)]}


@tool("memcastle_duplicates", "Copies of a drawer", "read", READS, aliases={"id": "drawer_id"})
def duplicates(env: Env, drawer_id: DrawerId) -> dict[str, Any]:
    """Drawers with the same or nearly the same text: other sources for it."""
    found = env.services.drawers.duplicates(drawer_id)
    return {
        "duplicates": [
            {**drawer_view(d.drawer, content=False), "verdict": d.verdict, "similarity": d.similarity} for d in found
        ]
    }


@tool("memcastle_explain_preference", "Explain a drawer's source preference", "read", READS,
      aliases={"id": "drawer_id"})  # fmt: skip
def explain_preference(env: Env, drawer_id: DrawerId) -> dict[str, Any]:
    """How source trust ranks a drawer, criterion by criterion."""
    return env.services.drawers.preference_trace(drawer_id).to_json()


@tool("memcastle_wing_list", "List wings and rooms", "read", READS, other_names={"memcastle_room_list": {}})
def wing_list(env: Env, wing: Annotated[str | None, Field(description="its rooms instead")] = None) -> dict[str, Any]:
    """Wings (projects, areas) with drawer counts; with wing, its rooms."""
    drawers = env.services.drawers
    if wing is not None:
        return {"wing": wing, "rooms": [{"room": r.name, "drawers": r.drawers} for r in drawers.list_rooms(wing)]}
    return {"wings": [{"wing": w.name, "drawers": w.drawers} for w in drawers.list_wings()]}
