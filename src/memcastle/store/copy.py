"""A whole palace copied into another store: how `memcastle migrate --to postgresql://…` moves an embedded (SQLite)
palace up to PostgreSQL.

The copy goes table by table (`memcastle.store.PALACE_TABLES`, parents before children) through the two store methods
made for it: `export_rows` streams a table out of the source, `import_rows` writes every table into the target in
one transaction and refuses a target that already holds a palace. What is copied is the palace's memory, exactly:
drawers with their ids, timestamps and supersession links, the origin snapshots as their JSON text, tags, sources and
documents (so incremental mining continues where it stopped), embeddings (so nothing is re-embedded), entities,
mentions, facts and their links, extraction markers, drawer similarity links and near-duplicate bands. What a backend
derives (its full-text index, token counts, vector dimensions and indexes) the target computes for itself.

Not copied: jobs. They are the source palace's work history, not memory; nothing is left queued or running in the
target, and drawers keep the job id in their provenance even though that job lives only in the source.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from memcastle.errors import Conflict, MigrationError
from memcastle.store import PALACE_TABLES, Store
from memcastle.store.sql.base import Tx

CopyProgress = Callable[[str, int, bool], None]
"""Called with (table, rows copied so far, whether the table is done)."""


@dataclass(frozen=True)
class CopyReport:
    """What a copy moved: rows per table, where from and to (never with a password), how long it took."""

    source: str
    target: str
    tables: dict[str, int]
    seconds: float

    @property
    def rows(self) -> int:
        return sum(self.tables.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "tables": dict(self.tables),
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
        }


def copy_palace(source: Store, target: Store, *, progress: CopyProgress | None = None) -> CopyReport:
    """Copy every palace table of `source` into the empty palace `target`; check that both now hold the same."""
    started = time.monotonic()
    exported: dict[str, int] = {}

    def rows_of(table: str) -> Iterator[dict[str, Any]]:
        count = 0
        for row in source.copy.export_rows(table):
            yield row
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(table, count, False)
        exported[table] = count
        if progress is not None:
            progress(table, count, True)

    imported = target.copy.import_rows((table, rows_of(table)) for table in PALACE_TABLES)
    if imported != exported:
        raise MigrationError(f"the copy is incomplete: read {exported}, wrote {imported}")
    for what, source_count, target_count in (
        ("drawers", source.drawers.count_drawers(), target.drawers.count_drawers()),
        ("facts", source.facts.count_facts(), target.facts.count_facts()),
    ):
        if source_count != target_count:
            raise MigrationError(f"the copy holds {target_count} {what}, the source {source_count}")
    return CopyReport(
        source=source.location, target=target.location, tables=imported, seconds=time.monotonic() - started
    )


# --- what both backends check when they copy ------------------------------------------------------


def copied_table(table: str) -> None:
    """Refuse a table a palace copy does not move."""
    if table not in PALACE_TABLES:
        raise ValueError(f"{table!r} is not a table a palace copy moves; known: {', '.join(PALACE_TABLES)}")


def ensure_empty(tx: Tx, location: str, *, help: str) -> None:
    """Refuse a target that already holds anything, jobs included."""
    for table in (*PALACE_TABLES, "job"):
        if tx.one(f"SELECT 1 AS found FROM {table} LIMIT 1") is not None:
            raise Conflict(f"{location} already holds a palace ({table} is not empty)", help=help)


def check_columns(table: str, names: Collection[str], row: Mapping[str, object]) -> None:
    """Refuse a row with columns this palace's table does not have."""
    unknown = set(row) - set(names)
    if unknown:
        raise MigrationError(
            f"rows of {table} carry columns this palace has no place for: {sorted(unknown)}",
            help="copy between palaces of the same MemCastle version",
        )
