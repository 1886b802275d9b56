"""Finding and reading memory: search, recall, one drawer in full, its history, copies and preference, and the
palace's wings and rooms."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memcastle.errors import InvalidRequest
from memcastle.mcp.tools.base import (
    DrawerId,
    Env,
    From,
    Full,
    MaxChars,
    Query,
    Room,
    Tags,
    Until,
    Wing,
    tool,
)
from memcastle.model.requests import request_of
from memcastle.model.vocabulary import Ranking, Rerank, SourceKind, Switch
from memcastle.services import SearchRequest
from memcastle.services.views import MIN_BUDGET, drawer_view, fit, search_view, shorter_hit, size

SearchLimit = Annotated[int, Field(ge=1, le=200)]
Kind = Annotated[SourceKind | None, Field()]
Historical = Annotated[bool, Field(description="superseded versions too")]
AsOf = Annotated[str | None, Field(description="RFC 3339: what held then")]
Expand = Annotated[bool, Field(description="add graph neighbours")]
Preferences = Annotated[Switch, Field(description="source trust")]
Rescore = Annotated[Rerank | None, Field(description="second stage")]


@tool("memcastle_search", "Search memory", "read", read_only=True)
def search(
    env: Env,
    query: Query,
    limit: SearchLimit = 5,
    wing: Wing = None,
    room: Room = None,
    tags: Tags = (),
    source_kind: Kind = None,
    connector: Annotated[str | None, Field()] = None,
    ranking: Annotated[Ranking, Field()] = "auto",
    as_of: AsOf = None,
    from_: From = None,
    until: Until = None,
    include_historical: Historical = False,
    known_at: Annotated[str | None, Field(description="what memory held then")] = None,
    known_from: Annotated[str | None, Field(description="with known_until")] = None,
    known_until: Annotated[str | None, Field()] = None,
    expand: Expand = False,
    preferences: Preferences = "on",
    rerank: Rescore = None,
    full: Full = False,
    max_chars: MaxChars = None,
) -> dict[str, Any]:
    """Search memory before answering about past work, decisions, code or talks. Hits: origin, snippet (best
    passage), chars (read all: memcastle_get_drawer), signals (coverage: query words held), preference."""
    result = env.services.search.search(request_of(SearchRequest, locals()))
    return fit(search_view(result, full=full), "hits", max_chars, shrink=shorter_hit)


@tool("memcastle_recall", "Recall from memory", "read", read_only=True)
def recall(
    env: Env,
    query: str,
    limit: SearchLimit = 5,
    wing: str | None = None,
    tags: tuple[str, ...] = (),
    source_kind: SourceKind | None = None,
    as_of: str | None = None,
    from_: Annotated[str | None, Field(alias="from")] = None,
    until: str | None = None,
    include_historical: bool = False,
    ranking: Ranking = "auto",
    expand: bool = False,
    preferences: Switch = "on",
    rerank: Rescore = None,
    full: bool = False,
    max_chars: Annotated[int | None, Field(ge=MIN_BUDGET)] = None,
) -> dict[str, Any]:
    """Recall across a wing: memcastle_search without room, connector or record time, plus the wing's pinned
    drawers."""
    result = env.services.search.recall(request_of(SearchRequest, locals()))
    return fit(search_view(result, full=full), "hits", max_chars, shrink=shorter_hit)


@tool("memcastle_get_drawer", "Read one drawer", "read", read_only=True, aliases={"id": "drawer_id"})
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


@tool("memcastle_history", "Drawer history", "read", read_only=True, aliases={"id": "drawer_id"})
def history(env: Env, drawer_id: DrawerId, full: Full = False) -> dict[str, Any]:
    """A drawer's versions, oldest first: is a hit current, how did it change?"""
    return {"versions": [drawer_view(d, content=full) for d in env.services.drawers.drawer_history(drawer_id)]}


@tool("memcastle_duplicates", "Copies of a drawer", "read", read_only=True, aliases={"id": "drawer_id"})
def duplicates(env: Env, drawer_id: DrawerId) -> dict[str, Any]:
    """Drawers with the same or nearly the same text: other sources for it."""
    found = env.services.drawers.duplicates(drawer_id)
    return {
        "duplicates": [
            {**drawer_view(d.drawer, content=False), "verdict": d.verdict, "similarity": d.similarity} for d in found
        ]
    }


@tool("memcastle_explain_preference", "Explain a drawer's source preference", "read", read_only=True,
      aliases={"id": "drawer_id"})  # fmt: skip
def explain_preference(env: Env, drawer_id: DrawerId) -> dict[str, Any]:
    """How source trust ranks a drawer, criterion by criterion."""
    return env.services.drawers.preference_trace(drawer_id).to_json()


@tool("memcastle_wing_list", "List wings and rooms", "read", read_only=True, other_names={"memcastle_room_list": {}})
def wing_list(env: Env, wing: Annotated[str | None, Field(description="its rooms instead")] = None) -> dict[str, Any]:
    """Wings (projects, areas) with drawer counts; with wing, its rooms."""
    drawers = env.services.drawers
    if wing is not None:
        return {"wing": wing, "rooms": [{"room": r.name, "drawers": r.drawers} for r in drawers.list_rooms(wing)]}
    return {"wings": [{"wing": w.name, "drawers": w.drawers} for w in drawers.list_wings()]}
