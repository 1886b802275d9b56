"""The scope and time predicates (SPEC §3), written once for both backends: a fragment of SQL and its parameters.

Both are appended to a WHERE clause over `drawer d JOIN room r JOIN wing w`, so they act inside the query, before
any ranking or limit.
"""

from __future__ import annotations

from typing import Any

from memcastle.model import AnyTime, AsOf, Between, Current, Scope, When
from memcastle.store.sql.base import marks


def scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    """Wing, room, source kind, connector, agent, hidden drawers (left out unless the scope includes them) and every
    required tag."""
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
    if not scope.hidden:
        sql += " AND NOT d.hidden"
    tags = sorted(set(scope.tags))
    if tags:
        sql += f" AND (SELECT COUNT(*) FROM drawer_tag t WHERE t.drawer_seq = d.seq AND t.tag IN ({marks(tags)})) = ?"
        params.extend([*tags, len(tags)])
    return sql, params


def time_sql(when: When, now: str) -> tuple[str, list[Any]]:
    """Event time: eligible at an instant t iff valid_from <= t < valid_to (valid_to empty: still valid); for the
    window [from, until) iff valid_from < until and (valid_to is empty or valid_to > from). Record time asks what the
    palace knew: recorded by then (or within the window) and not yet known to be closed."""
    match when:
        case AnyTime():
            return "", []
        case Current():
            return " AND d.valid_from <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [now, now]
        case AsOf(at=at, axis="valid"):
            return " AND d.valid_from <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [at, at]
        case AsOf(at=at, axis="record"):
            return " AND d.created_at <= ? AND (d.closed_at IS NULL OR d.closed_at > ?)", [at, at]
        case Between(start=start, end=end, axis="valid"):
            return " AND d.valid_from < ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [end, start]
        case Between(start=start, end=end, axis="record"):
            return " AND d.created_at < ? AND (d.closed_at IS NULL OR d.closed_at > ?)", [end, start]
    raise AssertionError(f"unknown time {when!r}")


def filter_sql(scope: Scope, now: str) -> tuple[str, list[Any]]:
    """Scope then time, as one fragment."""
    where, params = scope_sql(scope)
    when, times = time_sql(scope.when, now)
    return where + when, params + times
