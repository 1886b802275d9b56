"""The whole-palace copy on PostgreSQL (`memcastle.store.copy`, `memcastle migrate`): every palace table out as
neutral rows, and an empty palace filled from them in one transaction, derived columns computed here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from memcastle.store import PALACE_TABLES
from memcastle.store.copy import check_columns, copied_table, ensure_empty
from memcastle.store.postgres.fulltext import CONFIG, search_text, token_count
from memcastle.store.sql.base import Role, Row, dumps

if TYPE_CHECKING:
    from memcastle.store.postgres import PostgresStore


class PalaceCopyRows(Role):
    """The copy role of the PostgreSQL store: it reads and writes through the store's transactions."""

    db: PostgresStore

    def _table_columns(self, conn: psycopg.Connection[Any], table: str) -> list[Row]:
        return conn.execute(
            "SELECT column_name AS name, udt_name AS type, is_identity = 'YES' AS identity "
            "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s "
            "ORDER BY ordinal_position",
            (table,),
        ).fetchall()

    def export_rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of one palace table (`memcastle.store.PALACE_TABLES`), in primary-key order, as neutral rows:
        JSON as its stored text, drawer content exact, vectors as float32 arrays, derived columns left out."""
        copied_table(table)
        with self.db._read() as tx:
            conn = tx.conn
            columns = self._table_columns(conn, table)
            keys = [
                r["name"]
                for r in conn.execute(
                    "SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                    "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary "
                    "ORDER BY array_position(i.indkey::int2[], a.attnum)",
                    (table,),
                ).fetchall()
            ]
            chosen = [c for c in columns if (table, c["name"]) not in _DERIVED_COLUMNS]
            select = ", ".join(
                f'"{c["name"]}"::text AS "{c["name"]}"' if c["type"] in ("json", "jsonb") else f'"{c["name"]}"'
                for c in chosen
            )
            order = f" ORDER BY {', '.join(keys)}" if keys else ""
            # A server-side cursor in its own read transaction: a table of any size streams in batches.
            with conn.transaction(), conn.cursor(name=f"memcastle_export_{table}", binary=True) as cursor:
                cursor.execute(f"SELECT {select} FROM {table}{order}")
                while batch := cursor.fetchmany(1000):
                    for row in batch:
                        yield _exported(table, row)

    def import_rows(self, tables: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]) -> dict[str, int]:
        """Fill an empty palace with exported rows, table by table, in one transaction: all of it or nothing.

        Ids and sequence numbers are kept (identity sequences continue after them); the full-text vectors, token
        counts and vector dimensions are computed here. Refused (Conflict) when this palace already holds anything,
        jobs included."""
        counts: dict[str, int] = {}
        dimensions: set[int] = set()
        with self.db._write() as tx:
            ensure_empty(
                tx, self.db.location, help="copy into an empty database (or one whose palace tables are empty)"
            )
            conn = tx.conn
            for table, rows in tables:
                copied_table(table)
                columns = self._table_columns(conn, table)
                names = [c["name"] for c in columns]
                marks = ", ".join(
                    f"to_tsvector('{CONFIG}', %s)"
                    if c["type"] == "tsvector"
                    else "%b"
                    if c["type"] == "vector"
                    else "%s"
                    for c in columns
                )
                overriding = " OVERRIDING SYSTEM VALUE" if any(c["identity"] for c in columns) else ""
                statement = f"INSERT INTO {table} ({', '.join(names)}){overriding} VALUES ({marks})"
                count = 0
                batch: list[tuple[Any, ...]] = []
                with conn.cursor() as cursor:
                    for row in rows:
                        batch.append(_imported(table, columns, row, dimensions))
                        if len(batch) >= 500:
                            cursor.executemany(statement, batch)
                            count += len(batch)
                            batch.clear()
                    if batch:
                        cursor.executemany(statement, batch)
                counts[table] = count + len(batch)
                for column in (c["name"] for c in columns if c["identity"]):
                    conn.execute(
                        f"SELECT setval(pg_get_serial_sequence(%s, %s), "
                        f"COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)",
                        (table, column),
                    )
        for dimension in sorted(dimensions):
            self.db._ensure_vector_index(dimension)
        with self.db._read() as tx:
            tx.conn.execute(f"ANALYZE {', '.join(PALACE_TABLES)}")
        return counts


# Columns this backend derives from others; a palace copy leaves them out and recomputes them. (`content_exact` is
# read, folded into `content` and recomputed too.)
_DERIVED_COLUMNS = {
    ("drawer", "token_count"),
    ("drawer", "search"),
    ("drawer_context", "token_count"),
    ("drawer_context", "search"),
    ("embedding", "dimension"),
}


def _exported(table: str, row: Row) -> dict[str, Any]:
    item = dict(row)
    if table == "drawer":
        exact = item.pop("content_exact", None)
        if exact is not None:
            item["content"] = bytes(exact).decode("utf-8")
    elif table == "embedding":
        item["vector"] = np.asarray(item["vector"].to_numpy(), dtype=np.float32)
    return item


def _imported(table: str, columns: Sequence[Row], row: Mapping[str, Any], dimensions: set[int]) -> tuple[Any, ...]:
    """A neutral row as this table's column values, derived columns computed."""
    check_columns(table, {c["name"] for c in columns}, row)
    derived: dict[str, Any] = {}
    if table == "drawer":
        text, exact = _storable(row["content"])
        words = search_text(row["content"])
        derived = {"content": text, "content_exact": exact, "token_count": token_count(words), "search": words}
    elif table == "drawer_context":
        words = search_text(row["context"])
        derived = {"token_count": token_count(words), "search": words}
    elif table == "embedding":
        vector = np.asarray(row["vector"], dtype=np.float32)
        dimensions.add(int(vector.shape[0]))
        derived = {"vector": vector, "dimension": int(vector.shape[0])}
    values = []
    for column in columns:
        name = column["name"]
        value = derived[name] if name in derived else row.get(name)
        if value is not None and column["type"] == "bool":
            value = bool(value)
        elif value is not None and column["type"] in ("json", "jsonb") and not isinstance(value, str):
            value = dumps(value)
        values.append(value)
    return tuple(values)


def _storable(content: str) -> tuple[str, bytes | None]:
    """Content as TEXT can hold it, plus the exact bytes when it could not (NUL)."""
    if "\x00" not in content:
        return content, None
    return content.replace("\x00", "\ufffd"), content.encode("utf-8")
