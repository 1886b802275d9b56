"""The read audit's values: one record per answer that returned memory — who, when, the operation, the query as
redacted, and the ids returned (never their text); and the filter a listing of them takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ReadOperation = Literal["search", "recall", "wake_up", "diary", "drawer", "history", "facts", "fact", "entity"]


@dataclass(frozen=True)
class ReadRecord:
    """One answer that returned memory."""

    at: str
    interface: str  # http | cli | web | mcp
    operation: str  # a ReadOperation
    token: str | None = None  # the name of the bearer token it authenticated with (auth on)
    client: str | None = None  # the MCP client's name (its `clientInfo`), when it gave one
    session: str | None = None  # the MCP session id
    query: str | None = None  # what it asked for, redacted like any text
    drawer_ids: tuple[str, ...] = ()
    fact_ids: tuple[str, ...] = ()
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at,
            "interface": self.interface,
            "operation": self.operation,
            "token": self.token,
            "client": self.client,
            "session": self.session,
            "query": self.query,
            "drawer_ids": list(self.drawer_ids),
            "fact_ids": list(self.fact_ids),
        }


@dataclass(frozen=True)
class ReadQuery:
    """Which records to list, newest first: by token name, by MCP client (an agent), by a drawer or fact it returned,
    since an instant."""

    token: str | None = None
    client: str | None = None
    item: str | None = None
    since: str | None = None
    limit: int = 50
