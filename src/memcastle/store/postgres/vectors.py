"""Passage vectors on PostgreSQL: pgvector rows, one HNSW index per dimension, and the nearest passages searched in
the database (`memcastle.store.NearestStore`, `memcastle.search.stored`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memcastle.model import Scope
from memcastle.store import VectorChunk
from memcastle.store.postgres.locks import EMBEDDING_LOCK, LOCK_NAMESPACE
from memcastle.store.sql.embeddings import EmbeddingTables
from memcastle.store.sql.filters import filter_sql
from memcastle.store.sql.vectors import MARK_EMBEDDED, VectorWrite, vector_chunk

if TYPE_CHECKING:
    from memcastle.store.postgres import PostgresStore

# HNSW on pgvector's `vector` type indexes at most 2,000 dimensions.
HNSW_MAX_DIMENSION = 2000
_HNSW_EF_SEARCH = 100  # candidates kept while walking pgvector's graph (its default, 40, caps recall lower)
_HNSW_MAX_SCAN = 20_000  # rows a filtered walk visits at most before the exact form takes over (pgvector's default)


def nearest_sql(dimension: int, where: str, *, exact: bool = False) -> str:
    """The nearest passages of one dimension among eligible drawers, in the HNSW index's own terms (its expression
    and its partial condition), or `exact`: ordered by an expression no index serves, so every eligible row is
    scored. Parameters: the query vector, the model, the `where` parameters, the vector, the limit."""
    typed = f"vector({dimension:d})"
    order = f"((e.vector::{typed}) <=> ?::{typed}) + 0" if exact else f"(e.vector::{typed}) <=> ?::{typed}"
    return (
        f"SELECT d.id, (e.vector::{typed}) <=> ?::{typed} AS distance FROM embedding e "
        "JOIN drawer d ON d.seq = e.drawer_seq JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
        f"WHERE e.dimension = {dimension:d} AND e.model = ?{where} ORDER BY {order} LIMIT ?"
    )


class PostgresEmbeddings(EmbeddingTables):
    """pgvector rows and their HNSW indexes: this store searches its vectors itself (`NearestStore`)."""

    db: PostgresStore

    def _store_vectors(self, model: str, writes: list[VectorWrite], *, supplied: bool = False) -> None:
        """pgvector rows under an advisory lock, with an HNSW index per dimension."""
        items = writes
        for dimension in sorted({write.dimension for write in items if write.dimension}):
            self.db._ensure_vector_index(dimension)
        with self.db._write() as tx:
            conn = tx.conn
            # One embedding writer at a time, so row ids become visible in id order and the in-memory index,
            # which loads "everything after the last id it saw", never skips a row committed late.
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, EMBEDDING_LOCK))
            for write in items:
                found = conn.execute("SELECT seq FROM drawer WHERE id = %s", (write.drawer_id,)).fetchone()
                if found is None:
                    continue
                seq = found["seq"]
                if write.replaces:
                    conn.execute("DELETE FROM embedding WHERE model = %s AND drawer_seq = %s", (model, seq))
                if write.dimension:
                    with conn.cursor() as cursor:
                        cursor.executemany(
                            "INSERT INTO embedding(model, drawer_seq, passage, dimension, vector, passages) "
                            "VALUES (%s,%s,%s,%s,%b,%s) ON CONFLICT (model, drawer_seq, passage) DO NOTHING",
                            [
                                (model, seq, index, write.dimension, vector, write.total)
                                for index, vector in write.rows()
                            ],
                        )
                if write.completes:
                    tx.run(MARK_EMBEDDED, (model, seq, write.dimension, int(supplied)))

    def nearest_passages(self, model: str, vector: np.ndarray, limit: int, scope: Scope) -> list[tuple[str, float]]:
        """The nearest passages through the HNSW index of the vector's dimension (see `NearestStore`). Scope and time
        filter inside the walk: pgvector's iterative scan goes on through the graph until `limit` rows pass them (or
        `hnsw.max_scan_tuples` were visited), instead of filtering a fixed number of neighbours afterwards."""
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        dimension = int(vector.shape[0])
        with self.db._write() as tx:  # a transaction, for SET LOCAL
            tx.run(f"SET LOCAL hnsw.ef_search = {min(max(_HNSW_EF_SEARCH, limit), 1000):d}")
            if self.db._iterative_scan:
                tx.run("SET LOCAL hnsw.iterative_scan = relaxed_order")
                tx.run(f"SET LOCAL hnsw.max_scan_tuples = {_HNSW_MAX_SCAN:d}")
            rows = tx.all(nearest_sql(dimension, where), (vector, model, *params, vector, limit))
            if len(rows) < limit:
                # Fewer than asked: the scope holds no more, or the walk stopped at max_scan_tuples before finding
                # them (a narrow scope in a large palace). The exact form tells which, scoring the eligible rows.
                rows = tx.all(nearest_sql(dimension, where, exact=True), (vector, model, *params, vector, limit))
        # relaxed_order: the walk may return neighbours slightly out of order.
        return sorted(((r["id"], 1.0 - float(r["distance"])) for r in rows), key=lambda found: (-found[1], found[0]))

    def nearest_passage_of(self, model: str, vector: np.ndarray, drawer_ids: Sequence[str]) -> dict[str, int]:
        """Each drawer's passages scored exactly (a drawer has a handful; the `embedding` key finds them)."""
        if not drawer_ids:
            return {}
        dimension = int(vector.shape[0])
        typed = f"vector({dimension:d})"
        rows = self._all(
            f"SELECT DISTINCT ON (d.id) d.id, e.passage FROM drawer d JOIN embedding e ON e.drawer_seq = d.seq "
            f"AND e.model = ? AND e.dimension = {dimension:d} WHERE d.id = ANY(?) "
            f"ORDER BY d.id, (e.vector::{typed}) <=> ?::{typed}, e.passage",
            (model, list(drawer_ids), vector),
        )
        return {r["id"]: int(r["passage"]) for r in rows}

    def embedded_among(self, model: str, drawer_ids: Sequence[str]) -> set[str]:
        if not drawer_ids:
            return set()
        rows = self._all(
            "SELECT d.id FROM drawer d JOIN embedded m ON m.drawer_seq = d.seq AND m.model = ? WHERE d.id = ANY(?)",
            (model, list(drawer_ids)),
        )
        return {r["id"] for r in rows}

    def vector_count(self, model: str) -> tuple[int, int | None]:
        row = self._one(
            "SELECT count(*) AS n, (SELECT dimension FROM embedding WHERE model = ? ORDER BY id DESC LIMIT 1) AS dim "
            "FROM embedding WHERE model = ?",
            (model, model),
        )
        if row is None or not row["n"]:
            return 0, None
        return int(row["n"]), int(row["dim"])

    def _vectors_by_id(self, row_ids: list[int]) -> list[tuple[int, np.ndarray]]:
        with self.db._read() as tx, tx.conn.cursor(binary=True) as cursor:
            rows = cursor.execute("SELECT id, vector FROM embedding WHERE id = ANY(%s)", (row_ids,)).fetchall()
        return [(int(r["id"]), r["vector"].to_numpy()) for r in rows]

    def load_embeddings(self, model: str, after_id: int, dimension: int, *, limit: int) -> VectorChunk:
        """The vectors after row `after_id`, through pgvector's binary form (see `EmbeddingStore.load_embeddings`):
        a walk of the primary key from `after_id`."""
        with self.db._read() as tx, tx.conn.cursor(binary=True) as cursor:
            rows = cursor.execute(
                "SELECT e.id, d.id AS drawer_id, e.passage, e.vector, e.passages FROM embedding e "
                "JOIN drawer d ON d.seq = e.drawer_seq WHERE e.id > %s AND e.model = %s ORDER BY e.id LIMIT %s",
                (after_id, model, limit),
            ).fetchall()
        matrix = np.vstack([r["vector"].to_numpy() for r in rows]) if rows else None
        return vector_chunk(rows, matrix, after_id, dimension)
