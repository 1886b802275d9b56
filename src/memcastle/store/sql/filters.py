"""The scope and time predicates (SPEC §3), written once for both backends: a fragment of SQL and its parameters.

Both are appended to a WHERE clause over `drawer d JOIN room r JOIN wing w`, so they act inside the query, before
any ranking or limit.
"""

from __future__ import annotations

from typing import Any

from memcastle.model import Scope, TimeWindow
from memcastle.store.sql.base import marks


def scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    """Wing, room, source kind, connector, agent and every required tag."""
    sql, params = "", list[Any]()
    for column, value in (
        ("w.name", scope.wing),
        ("r.name", scope.room),
        ("d.source_kind", scope.source_kind),
        ("d.connector", scope.connector),
        ("d.source_agent", scope.agent),
    ):
        if value:
            sql += f" AND {column} = ?"
            params.append(value)
    tags = sorted(set(scope.tags))
    if tags:
        sql += f" AND (SELECT COUNT(*) FROM drawer_tag t WHERE t.drawer_seq = d.seq AND t.tag IN ({marks(tags)})) = ?"
        params.extend([*tags, len(tags)])
    return sql, params


def time_sql(window: TimeWindow | None, include_historical: bool, now: str) -> tuple[str, list[Any]]:
    """Eligible for `[from, until)` iff valid_from < until and (valid_to is empty or valid_to > from); an instant t
    is the window that holds just t; no window means the instant `now`. On the record axis, t is an instant of
    record time instead."""
    if include_historical:
        return "", []
    if window is not None and window.axis == "record":
        # What the palace knew at that instant (recorded by then, not yet known to be closed), or at some point of the
        # window.
        if window.is_instant:
            return " AND d.created_at <= ? AND (d.closed_at IS NULL OR d.closed_at > ?)", [window.start, window.start]
        return " AND d.created_at < ? AND (d.closed_at IS NULL OR d.closed_at > ?)", [window.end, window.start]
    if window is None or window.is_instant:
        at = now if window is None else window.start
        return " AND d.valid_from <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [at, at]
    return " AND d.valid_from < ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [window.end, window.start]


def filter_sql(scope: Scope, window: TimeWindow | None, include_historical: bool, now: str) -> tuple[str, list[Any]]:
    """Scope then time, as one fragment."""
    where, params = scope_sql(scope)
    when, times = time_sql(window, include_historical, now)
    return where + when, params + times
