"""The scope and time predicates (SPEC §3), written once for both backends: a fragment of SQL and its parameters.

Both are appended to a WHERE clause over `drawer d JOIN room r JOIN wing w`, so they act inside the query, before
any ranking or limit.
"""

from __future__ import annotations

from typing import Any

from memcastle.model import AnyTime, AsOf, Between, Current, Scope, When
from memcastle.model.lifecycle import ExpiryRule, Lifecycle
from memcastle.store.sql.base import marks

NO_RULES = Lifecycle()


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
    if scope.places is not None:
        # A scoped client's wings and rooms: none left means nothing is visible.
        alternatives = []
        for wing, room in scope.places:
            alternatives.append("w.name = ?" if room is None else "(w.name = ? AND r.name = ?)")
            params.extend([wing] if room is None else [wing, room])
        sql += f" AND ({' OR '.join(alternatives)})" if alternatives else " AND 1 = 0"
    if not scope.hidden:
        sql += " AND NOT d.hidden"
    tags = sorted(set(scope.tags))
    if tags:
        sql += f" AND (SELECT COUNT(*) FROM drawer_tag t WHERE t.drawer_seq = d.seq AND t.tag IN ({marks(tags)})) = ?"
        params.extend([*tags, len(tags)])
    return sql, params


def metadata_sql(path: tuple[str, ...], equals: str | int | float | bool, dialect: str) -> tuple[str, list[Any]]:
    """The origin's metadata holds `equals` at `path`, type-strict (1 is not "1" is not true), in either dialect; false,
    never NULL, where there is no origin or no such value."""
    if isinstance(equals, bool):
        kinds = {"sqlite": ("'true'", "'false'"), "postgres": ("'boolean'", "'boolean'")}[dialect]
        kind = kinds[0] if equals else kinds[1]
        value: Any = "true" if equals else "false"
    elif isinstance(equals, int | float):
        kind, value = ("'integer', 'real'" if dialect == "sqlite" else "'number'"), str(equals)
    else:
        kind, value = ("'text'" if dialect == "sqlite" else "'string'"), equals
    if dialect == "sqlite":
        where = "$.metadata" + "".join(f'."{segment}"' for segment in path)
        if isinstance(equals, bool):
            return f"COALESCE(json_type(d.origin, ?) = {kind}, 0)", [where]
        cast = "CAST(? AS REAL)" if isinstance(equals, int | float) else "?"
        sql = f"CASE WHEN json_type(d.origin, ?) IN ({kind}) THEN json_extract(d.origin, ?) = {cast} ELSE 0 END"
        return sql, [where, where, value]
    segments = ["metadata", *path]
    cast = "CAST(? AS numeric)" if isinstance(equals, int | float) and not isinstance(equals, bool) else "?"
    left = "(d.origin #>> ?)::numeric" if cast != "?" else "d.origin #>> ?"
    sql = f"CASE WHEN json_typeof(d.origin #> ?) = {kind} THEN {left} = {cast} ELSE FALSE END"
    return sql, [segments, segments, value]


def rule_sql(rule: ExpiryRule, dialect: str = "sqlite") -> tuple[str, list[Any]]:
    """The drawers a `[[lifecycle]]` rule matches: every criterion it gives."""
    match, values = "1 = 1", list[Any]()
    # COALESCE: a written drawer has no connector, and NOT (NULL AND …) would leave it out of every search.
    for column, value in (("COALESCE(d.connector, '')", rule.connector), ("w.name", rule.wing), ("r.name", rule.room)):
        if value is not None:
            match += f" AND {column} = ?"
            values.append(value)
    if rule.tag is not None:
        match += " AND EXISTS (SELECT 1 FROM drawer_tag t WHERE t.drawer_seq = d.seq AND t.tag = ?)"
        values.append(rule.tag)
    if rule.path and rule.equals is not None:
        sql, more = metadata_sql(rule.path, rule.equals, dialect)
        match += f" AND {sql}"
        values.extend(more)
    return match, values


def expiry_sql(lifecycle: Lifecycle, at: str, dialect: str = "sqlite") -> tuple[str, list[Any]]:
    """Not expired at the instant `at`: its own `expires_at` later, and no rule matching it whose time since its
    `valid_from` has run out."""
    sql, params = " AND (d.expires_at IS NULL OR d.expires_at > ?)", list[Any]([at])
    for rule in lifecycle.rules:
        match, values = rule_sql(rule, dialect)
        sql += f" AND NOT ({match} AND d.valid_from <= ?)"
        params.extend([*values, rule.threshold(at)])
    return sql, params


def time_sql(when: When, now: str, lifecycle: Lifecycle = NO_RULES, dialect: str = "sqlite") -> tuple[str, list[Any]]:
    """Event time: eligible at an instant t iff valid_from <= t < valid_to (valid_to empty: still valid) and not
    expired at t; for the window [from, until) iff valid_from < until, (valid_to is empty or valid_to > from) and not
    expired at from. Record time asks what the palace knew: recorded by then (or within the window), not yet known to
    be closed, and not expired. Any time: every version, expired ones too."""
    match when:
        case AnyTime():
            return "", []
        case Current():
            sql, params, at = " AND d.valid_from <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [now, now], now
        case AsOf(at=at, axis="valid"):
            sql, params = " AND d.valid_from <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [at, at]
        case AsOf(at=at, axis="record"):
            sql, params = " AND d.created_at <= ? AND (d.closed_at IS NULL OR d.closed_at > ?)", [at, at]
        case Between(start=start, end=end, axis="valid"):
            sql, params, at = " AND d.valid_from < ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [end, start], start
        case Between(start=start, end=end, axis="record"):
            sql, params, at = " AND d.created_at < ? AND (d.closed_at IS NULL OR d.closed_at > ?)", [end, start], start
        case _:
            raise AssertionError(f"unknown time {when!r}")
    expired, more = expiry_sql(lifecycle, at, dialect)
    return sql + expired, params + more


def filter_sql(
    scope: Scope, now: str, lifecycle: Lifecycle = NO_RULES, dialect: str = "sqlite"
) -> tuple[str, list[Any]]:
    """Scope then time, as one fragment."""
    where, params = scope_sql(scope)
    when, times = time_sql(scope.when, now, lifecycle, dialect)
    return where + when, params + times
