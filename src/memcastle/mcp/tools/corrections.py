"""Correcting memory: a drawer replaced by a better version (its history kept), pinned or hidden, or forgotten for
good."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from memcastle.errors import InvalidRequest
from memcastle.mcp.tools.base import ADDS, ERASES, REQUESTER, WRITES, DrawerId, Env, Reason, tool
from memcastle.services import ForgetRequest, SearchRequest
from memcastle.services.views import drawer_view


@tool("memcastle_drawer_supersede", "Correct a drawer", "write", ADDS,
      aliases={"id": "drawer_id", "payload": "content"})  # fmt: skip
def drawer_supersede(
    env: Env,
    drawer_id: DrawerId,
    content: Annotated[str, Field(min_length=1, description="the corrected text, whole")],
    reason: Reason = None,
    agent: Annotated[str | None, Field(description="you, the corrector")] = None,
) -> dict[str, Any]:
    """Correct a wrong or outdated drawer; the old version stays in its history."""
    replacement = env.services.drawers.supersede_drawer(
        drawer_id, content, reason=reason, requested_by=REQUESTER, agent=agent
    )
    return {"drawer": drawer_view(replacement, content=False)}


@tool("memcastle_drawer_mark", "Pin or hide a drawer", "write", WRITES, aliases={"id": "drawer_id"})
def drawer_mark(
    env: Env, drawer_id: DrawerId, pinned: bool | None = None, hidden: bool | None = None
) -> dict[str, Any]:
    """Pin (always in wake-up and recall) or hide (never searched) a drawer."""
    marked = env.services.drawers.mark(drawer_id, pinned=pinned, hidden=hidden)
    return {"drawer": drawer_view(marked, content=False)}


@tool("memcastle_forget", "Forget for good", "write", ERASES)
def forget(
    env: Env,
    scope: Annotated[
        Literal["drawer", "document", "source", "room", "wing", "search"],
        Field(),
    ],
    drawer_id: Annotated[str | None, Field()] = None,
    source_id: Annotated[str | None, Field(description="document, source")] = None,
    document: Annotated[str | None, Field()] = None,
    wing: Annotated[str | None, Field(description="room, wing; search filter")] = None,
    room: Annotated[str | None, Field(description="room; search filter")] = None,
    query: Annotated[str | None, Field(description="search: every word")] = None,
    dry_run: Annotated[bool | None, Field(description="only count (broad scopes' default)")] = None,
) -> dict[str, Any]:
    """Erase for good what the user asks to forget (secrets, private data), never to correct: dry-run first,
    show the user the list."""
    search = None
    if scope == "search":
        if query is None:
            raise InvalidRequest("scope search needs query", field="query")
        search, wing, room = SearchRequest(query=query, wing=wing, room=room), None, None
    elif query is not None:
        raise InvalidRequest("query is only for scope search", field="query")
    request = ForgetRequest(
        kind=scope, drawer_id=drawer_id, source_id=source_id, document=document, wing=wing, room=room, search=search
    )
    return env.services.forgetting.forget(request, dry_run=dry_run, requested_by=REQUESTER).to_json()
