"""The seam between the shared SQL and a backend: `Tx`, one connection inside one transaction, and `SqlStore`."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memcastle.model.lifecycle import Lifecycle

Row = Mapping[str, Any]
# What an id names → its table.
ID_TABLES = {"drawer": "drawer", "job": "job", "fact": "assertion", "entity": "entity", "source": "source"}
BATCH = 500  # ids bound into one `IN (…)`: well under SQLite's variable limit, small enough for any planner


class Tx(Protocol):
    """One connection inside one transaction. SQL uses `?` placeholders; each backend binds them its own way."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...
    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...
    def run(self, sql: str, params: Sequence[Any] = ()) -> int: ...
    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...


class SqlStore(ABC):
    """The abstract base of both SQL palaces: connections, transactions and two dialect facts, composed of one role
    object per part of the `Store` contract (`Role`); each backend hands its roles what is its own."""

    backend: str
    location: str
    _now: Callable[[], str]
    # Appended to a SELECT whose row the transaction is about to change: PostgreSQL locks it (two writers must see
    # each other's close); SQLite has one writer, so there is nothing to lock.
    FOR_UPDATE = ""
    # Put before a column to keep the planner from choosing that column's index (SQLite's unary `+`); PostgreSQL's
    # planner needs no such hint and has no unary plus on text.
    NO_INDEX = ""
    # How long drawers live (`[[lifecycle]]` rules), applied when the palace is read; given by the composition root.
    lifecycle: Lifecycle = Lifecycle()

    @abstractmethod
    def _read(self) -> AbstractContextManager[Tx]:
        """A read-only view of the palace."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Tx]:
        """A write transaction: committed when the block ends, rolled back when it raises."""

    @abstractmethod
    def close(self) -> None: ...

    def ids_with_prefix(self, kind: str, prefix: str, limit: int) -> list[str]:
        """Up to `limit` ids of `kind` (drawer, job, fact, entity) that start with `prefix`, in order: a range scan
        of the id's unique index, the same on both backends (ids are ASCII; PostgreSQL's columns collate as "C")."""
        table = ID_TABLES[kind]
        if not prefix:
            return []
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self._all(f"SELECT id FROM {table} WHERE id >= ? AND id < ? ORDER BY id LIMIT ?", (prefix, upper, limit))
        return [row["id"] for row in rows]

    def schema_version(self) -> int:
        return self._count("SELECT MAX(version) AS n FROM schema_migration")

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        with self._read() as tx:
            return tx.one(sql, params)

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._read() as tx:
            return tx.all(sql, params)

    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        row = self._one(sql, params)
        return int(row["n"] or 0) if row else 0


class Role(ABC):  # noqa: B024 - abstract where a role leaves a step to its backend
    """One role of a SQL palace (its drawers, graph, jobs, …): the role's own methods, reading and writing through
    the palace's connections and dialect (`db`). Roles that build on another are handed it (`GraphTables(db,
    drawers)`); the backend composes them."""

    def __init__(self, db: SqlStore) -> None:
        self.db = db

    @property
    def backend(self) -> str:
        return self.db.backend

    @property
    def lifecycle(self) -> Lifecycle:
        return self.db.lifecycle

    @property
    def FOR_UPDATE(self) -> str:
        return self.db.FOR_UPDATE

    @property
    def NO_INDEX(self) -> str:
        return self.db.NO_INDEX

    def ids_with_prefix(self, kind: str, prefix: str, limit: int) -> list[str]:
        return self.db.ids_with_prefix(kind, prefix, limit)

    def _now(self) -> str:
        return self.db._now()

    def _in(self, sql: str, ids: Sequence[str], repeat: int = 1) -> list[Row]:
        """Rows of `sql` whose `{}` placeholders each take one batch of the distinct `ids`, over all batches."""
        rows: list[Row] = []
        with self._read() as tx:
            for batch in batches(ids):
                rows.extend(tx.all(sql.format(*[marks(batch)] * repeat), batch * repeat))
        return rows

    def _read(self) -> AbstractContextManager[Tx]:
        return self.db._read()

    def _write(self) -> AbstractContextManager[Tx]:
        return self.db._write()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self.db._one(sql, params)

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.db._all(sql, params)

    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.db._count(sql, params)


def dumps(value: Any) -> str:
    """JSON as both backends store it: compact, Unicode kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def batches(ids: Iterable[str], size: int = BATCH) -> Iterator[list[str]]:
    """Distinct ids, in order, a batch at a time."""
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), size):
        yield unique[start : start + size]


def marks(values: Sequence[Any]) -> str:
    """`?,?,…` for an `IN (…)` list."""
    return ",".join("?" * len(values))
