"""The scale-out palace on PostgreSQL + pgvector: several daemons may serve it at once (SPEC §8).

The twin of `SQLiteStore`: the same `Store` protocol, the same values in and out, the same errors, checked by one
contract suite (tests/store/test_contract.py). What differs is underneath: a connection pool instead of one writer,
row locks and advisory locks instead of SQLite's single writer, and job leases that really matter, because another
daemon may be waiting to take a job over once its lease runs out.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from memcastle.clock import parse_instant, utc_now
from memcastle.errors import Conflict, InvalidRequest, MigrationError, NotFound
from memcastle.model import (
    DocumentChanges,
    DocumentRecord,
    Drawer,
    NewDrawer,
    Origin,
    Page,
    Provenance,
    Room,
    Scope,
    ScoredDrawer,
    Source,
    SourceRecord,
    TimeWindow,
    Wing,
    content_hash,
    fingerprint,
)
from memcastle.store import PALACE_TABLES
from memcastle.store.history import SupersessionHistory
from memcastle.store.migrate import load_migrations
from memcastle.store.postgres_fulltext import (
    CONFIG,
    bm25_sql,
    parse_match,
    search_text,
    token_count,
)
from memcastle.store.postgres_graph import GraphTables
from memcastle.store.postgres_jobs import RECOVERY_BUDGET, JobTables

Row = dict[str, Any]

# Advisory locks are keyed (namespace, key); the namespace keeps MemCastle's apart from other users of the database.
LOCK_NAMESPACE = 0x4D43  # "MC"
_MIGRATION_LOCK = 1
_EMBEDDING_LOCK = 2

# HNSW on pgvector's `vector` type indexes at most 2,000 dimensions.
_HNSW_MAX_DIMENSION = 2000

_DRAWER_SELECT = (
    "SELECT d.*, w.name AS wing_name, r.name AS room_name FROM drawer d "
    "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id"
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def redact(conninfo: str) -> str:
    """A connection string fit to show: user, host, port and database, never the password."""
    try:
        parts = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "postgresql://(unparsable connection string)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or "")
    port = f":{parts['port']}" if parts.get("port") else ""
    where = f"{host}{port}" if not host.startswith("/") else f"[{host}]{port}"
    return f"postgresql://{user}{where}/{parts.get('dbname') or ''}"


class PostgresStore(JobTables, GraphTables, SupersessionHistory):
    """A palace in a PostgreSQL database (with the pgvector extension)."""

    backend = "postgres"

    def __init__(self, conninfo: str, *, max_connections: int = 10, connect_timeout: float = 10.0,
                 recovery_budget: int = RECOVERY_BUDGET) -> None:
        self.conninfo = conninfo
        self.location = redact(conninfo)
        self._recovery_budget = recovery_budget
        self._vector_indexes: set[int] = set()
        self._vector_lock = threading.Lock()
        self._migrate(connect_timeout)
        pool_options: dict[str, Any] = {}
        if hasattr(ConnectionPool, "check_connection"):
            pool_options["check"] = ConnectionPool.check_connection  # a restarted server costs one retry, not an error
        self._pool = ConnectionPool(
            conninfo, min_size=1, max_size=max(2, max_connections), name="memcastle", open=False,
            kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": max(1, int(connect_timeout))},
            configure=register_vector, timeout=max(30.0, connect_timeout), **pool_options,
        )
        try:
            self._pool.open(wait=True, timeout=max(30.0, connect_timeout))
        except PoolTimeout as exc:
            self._pool.close()
            raise MigrationError(f"cannot connect to the palace database {self.location}: {exc}",
                                 help="check that the PostgreSQL server is running and accepts connections") from None

    # --- connections ----------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection[Row]]:
        with _text_errors(), self._pool.connection() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Row]]:
        with _text_errors(), self._pool.connection() as conn, conn.transaction():
            yield conn

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._read() as conn:
            return conn.execute(sql, params).fetchall()

    def _row(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        with self._read() as conn:
            return conn.execute(sql, params).fetchone()

    def close(self) -> None:
        self._pool.close()

    def _migrate(self, connect_timeout: float) -> None:
        try:
            conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=max(1, int(connect_timeout)))
        except psycopg.Error as exc:
            raise MigrationError(
                f"cannot open the palace database {self.location}: {str(exc).strip()}",
                help="check store.url (MEMCASTLE_STORE_URL) and that the PostgreSQL server is running",
            ) from None
        try:
            with conn:
                # Two daemons starting together: the second waits here until the first has finished migrating.
                conn.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_NAMESPACE, _MIGRATION_LOCK))
                try:
                    self._apply_migrations(conn)
                finally:
                    if not conn.closed and not conn.broken:
                        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_NAMESPACE, _MIGRATION_LOCK))
        except psycopg.Error as exc:
            raise MigrationError(f"migrating the palace database {self.location} failed: {str(exc).strip()}",
                                 help="the palace was left at its previous version; nothing was served") from None

    def _apply_migrations(self, conn: psycopg.Connection[Any]) -> None:
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migration "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migration")}
        except psycopg.Error as exc:
            raise MigrationError(f"{self.location} cannot hold a MemCastle palace: {str(exc).strip()}") from None
        migrations = load_migrations("postgres")
        newest = max((m.version for m in migrations), default=0)
        if applied and max(applied) > newest:
            raise MigrationError(
                f"{self.location} has schema version {max(applied)}, newer than this MemCastle knows ({newest})",
                help="upgrade MemCastle to serve this palace",
            )
        for migration in migrations:
            if migration.version in applied:
                continue
            try:
                # DDL is transactional in PostgreSQL: a failing migration leaves no trace.
                with conn.transaction():
                    conn.execute(migration.sql.encode("utf-8"))  # bytes: several statements, sent as they are
                    conn.execute("INSERT INTO schema_migration(version, name, applied_at) VALUES (%s, %s, %s)",
                                 (migration.version, migration.name, utc_now()))
            except psycopg.Error as exc:
                raise MigrationError(
                    f"migration {migration.version:04d}_{migration.name} failed on {self.location}: "
                    f"{str(exc).strip()}",
                    help="the palace was left at its previous version; nothing was served",
                ) from exc

    def schema_version(self) -> int:
        row = self._row("SELECT MAX(version) AS v FROM schema_migration")
        return int(row["v"] or 0) if row else 0

    # --- drawers --------------------------------------------------------------------------------

    def _room_id(self, conn: psycopg.Connection[Row], wing: str, room: str, at: str) -> int:
        conn.execute("INSERT INTO wing(name, created_at) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING", (wing, at))
        wing_row = conn.execute("SELECT id FROM wing WHERE name = %s", (wing,)).fetchone()
        assert wing_row is not None
        conn.execute("INSERT INTO room(wing_id, name, created_at) VALUES (%s, %s, %s) "
                     "ON CONFLICT (wing_id, name) DO NOTHING", (wing_row["id"], room, at))
        room_row = conn.execute("SELECT id FROM room WHERE wing_id = %s AND name = %s",
                                (wing_row["id"], room)).fetchone()
        assert room_row is not None
        return int(room_row["id"])

    def _insert_drawer(
        self, conn: psycopg.Connection[Row], new: NewDrawer, at: str, *, supersedes: str | None = None
    ) -> str:
        drawer_id = new.id or str(uuid.uuid4())
        digest = content_hash(new.content)
        existing = conn.execute("SELECT content_hash FROM drawer WHERE id = %s", (drawer_id,)).fetchone()
        if existing is not None:
            return _replayed(drawer_id, existing["content_hash"], digest)
        room_id = self._room_id(conn, new.wing, new.room, at)
        origin = new.source.origin
        text, exact = _storable(new.content)
        words = search_text(new.content)
        try:
            with conn.transaction():  # a savepoint: a clash must not abort the caller's transaction
                row = conn.execute(
                    "INSERT INTO drawer(id, room_id, name, content, content_exact, content_hash, fingerprint,"
                    " source_kind, source_uri, source_agent, connector, origin, tags, provenance, valid_from, valid_to,"
                    " supersedes, superseded_by, created_at, token_count, search) VALUES"
                    " (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,NULL,%s,NULL,%s,%s,"
                    f" to_tsvector('{CONFIG}', %s)) RETURNING seq",
                    (
                        drawer_id, room_id, new.name, text, exact, digest, fingerprint(new.content),
                        new.source.kind, new.source.uri, new.source.agent, origin.connector if origin else None,
                        _dumps(origin.to_json()) if origin else None, _dumps(list(new.tags)),
                        _dumps(new.provenance.to_json()),
                        parse_instant(new.valid_from, field="valid_from") if new.valid_from else at, supersedes, at,
                        token_count(words), words,
                    ),
                ).fetchone()
        except pg_errors.UniqueViolation as clash:
            if clash.diag.constraint_name != "drawer_current_name":
                # Another writer stored this id between the check and the insert.
                raced = conn.execute("SELECT content_hash FROM drawer WHERE id = %s", (drawer_id,)).fetchone()
                if raced is not None:
                    return _replayed(drawer_id, raced["content_hash"], digest)
                raise
            other = conn.execute(
                "SELECT id FROM drawer WHERE room_id = %s AND name = %s AND valid_to IS NULL", (room_id, new.name)
            ).fetchone()
            raise Conflict(
                f"room {new.wing}/{new.room} already has a current drawer named {new.name!r}",
                existing_id=other["id"] if other else None,
                help="supersede the existing drawer to replace it",
            ) from None
        assert row is not None
        tags = sorted(set(new.tags))
        if tags:
            conn.execute("INSERT INTO drawer_tag(drawer_seq, tag) SELECT %s, unnest(%s::text[]) "
                         "ON CONFLICT DO NOTHING", (row["seq"], tags))
        return drawer_id

    def add_drawer(self, new: NewDrawer) -> Drawer:
        with self._write() as conn:
            drawer_id = self._insert_drawer(conn, new, utc_now())
        return self.get_drawer(drawer_id)

    def get_drawer(self, drawer_id: str) -> Drawer:
        row = self._row(f"{_DRAWER_SELECT} WHERE d.id = %s", (drawer_id,))
        if row is None:
            raise NotFound(f"no drawer {drawer_id}")
        return _drawer(row)

    def get_drawers(self, drawer_ids: Sequence[str]) -> dict[str, Drawer]:
        ids = list(dict.fromkeys(drawer_ids))
        if not ids:
            return {}
        return {r["id"]: _drawer(r) for r in self._rows(f"{_DRAWER_SELECT} WHERE d.id = ANY(%s)", (ids,))}

    def find_current_copy(self, wing: str, room: str, content_hash: str, agent: str | None = None) -> Drawer | None:
        """An unnamed current drawer with this content in the room (written by `agent`, when one is given)."""
        agent_sql = " AND d.source_agent = %s" if agent is not None else ""
        row = self._row(
            f"{_DRAWER_SELECT} WHERE w.name = %s AND r.name = %s AND d.content_hash = %s AND d.valid_to IS NULL "
            f"AND d.name IS NULL{agent_sql} ORDER BY d.seq LIMIT 1",
            (wing, room, content_hash, *([agent] if agent is not None else [])),
        )
        return _drawer(row) if row else None

    def _close_current(self, conn: psycopg.Connection[Row], drawer_id: str, at: str, successor: str | None) -> None:
        # FOR UPDATE: of two writers closing the same drawer, the second sees the first one's close.
        row = conn.execute("SELECT valid_to, superseded_by FROM drawer WHERE id = %s FOR UPDATE",
                           (drawer_id,)).fetchone()
        if row is None:
            raise NotFound(f"no drawer {drawer_id}")
        if row["valid_to"] is not None:
            raise Conflict(
                f"drawer {drawer_id} was already closed at {row['valid_to']}",
                existing_id=row["superseded_by"],
                help="supersede the current version instead (see its history)",
            )
        conn.execute("UPDATE drawer SET valid_to = %s, superseded_by = %s WHERE id = %s", (at, successor, drawer_id))

    def supersede_drawer(self, old_id: str, replacement: NewDrawer) -> Drawer:
        with self._write() as conn:
            new_id = self._supersede(conn, old_id, replacement, utc_now())
        return self.get_drawer(new_id)

    def _supersede(self, conn: psycopg.Connection[Row], old_id: str, replacement: NewDrawer, at: str) -> str:
        new_id = replacement.id or str(uuid.uuid4())
        self._close_current(conn, old_id, at, new_id)
        return self._insert_drawer(conn, _with_id(replacement, new_id, at), at, supersedes=old_id)

    def invalidate_drawer(self, drawer_id: str) -> Drawer:
        with self._write() as conn:
            self._close_current(conn, drawer_id, utc_now(), None)
        return self.get_drawer(drawer_id)

    def count_drawers(self, *, current_only: bool = False) -> int:
        where = " WHERE valid_to IS NULL" if current_only else ""
        row = self._row(f"SELECT COUNT(*) AS n FROM drawer{where}")
        return int(row["n"]) if row else 0

    def list_wings(self) -> list[Wing]:
        rows = self._rows(
            "SELECT w.name, w.created_at, (SELECT COUNT(*) FROM drawer d JOIN room r ON r.id = d.room_id "
            "WHERE r.wing_id = w.id AND d.valid_to IS NULL) AS n FROM wing w ORDER BY w.name"
        )
        return [Wing(name=r["name"], drawers=int(r["n"]), created_at=r["created_at"]) for r in rows]

    def list_rooms(self, wing: str) -> list[Room]:
        with self._read() as conn:
            if conn.execute("SELECT 1 FROM wing WHERE name = %s", (wing,)).fetchone() is None:
                raise NotFound(f"no wing {wing!r}")
            rows = conn.execute(
                "SELECT r.name, r.created_at, (SELECT COUNT(*) FROM drawer d WHERE d.room_id = r.id "
                "AND d.valid_to IS NULL) AS n FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = %s "
                "ORDER BY r.name",
                (wing,),
            ).fetchall()
        return [Room(wing=wing, name=r["name"], drawers=int(r["n"]), created_at=r["created_at"]) for r in rows]

    def list_drawers(self, wing: str | None, room: str | None, limit: int, after: str | None) -> Page[Drawer]:
        clauses, params = ["d.valid_to IS NULL"], []
        if wing:
            clauses.append("w.name = %s")
            params.append(wing)
        if room:
            clauses.append("r.name = %s")
            params.append(room)
        with self._read() as conn:
            if after:
                seq = conn.execute("SELECT seq FROM drawer WHERE id = %s", (after,)).fetchone()
                if seq is None:
                    raise NotFound(f"no drawer {after} to page after")
                clauses.append("d.seq > %s")
                params.append(seq["seq"])
            rows = conn.execute(
                f"{_DRAWER_SELECT} WHERE {' AND '.join(clauses)} ORDER BY d.seq LIMIT %s", (*params, limit + 1)
            ).fetchall()
        items = tuple(_drawer(r) for r in rows[:limit])
        return Page(items=items, next_after=items[-1].id if len(rows) > limit and items else None)

    def _drawers_where(self, where: str, params: Sequence[Any], limit: int) -> list[Drawer]:
        rows = self._rows(f"{_DRAWER_SELECT} WHERE {where} ORDER BY d.seq LIMIT %s", (*params, limit))
        return [_drawer(r) for r in rows]

    def latest_drawers(self, scope: Scope, limit: int) -> list[Drawer]:
        where, params = _scope_sql(scope)
        rows = self._rows(
            f"{_DRAWER_SELECT} WHERE d.valid_to IS NULL{where} ORDER BY d.created_at DESC, d.seq DESC LIMIT %s",
            (*params, limit),
        )
        return [_drawer(r) for r in rows]

    # --- retrieval ------------------------------------------------------------------------------

    def lexical_candidates(
        self, match: str, scope: Scope, window: TimeWindow | None, include_historical: bool, limit: int
    ) -> list[ScoredDrawer]:
        terms, require_all = parse_match(match)
        words = [search_text(term) for term in terms]
        if require_all and any(not w for w in words):
            return []  # a required term with no word in it can match nothing
        words = [w for w in words if w]
        if not words or limit <= 0:
            return []
        where, params = _scope_sql(scope)
        time_sql, time_params = _time_sql(window, include_historical)
        rows = self._rows(bm25_sql(len(words), require_all, where + time_sql),
                          (words, *words, *params, *time_params, limit))
        return [ScoredDrawer(drawer_id=r["id"], signal=float(r["score"])) for r in rows]

    def eligible_ids(self, drawer_ids: Sequence[str], scope: Scope, window: TimeWindow | None,
                     include_historical: bool) -> set[str]:
        """The subset of `drawer_ids` inside the scope and the temporal window."""
        ids = list(dict.fromkeys(drawer_ids))
        if not ids:
            return set()
        where, params = _scope_sql(scope)
        time_sql, time_params = _time_sql(window, include_historical)
        rows = self._rows(
            "SELECT d.id FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            f"WHERE d.id = ANY(%s){where}{time_sql}",
            (ids, *params, *time_params),
        )
        return {r["id"] for r in rows}

    def drawer_places(self, drawer_ids: Sequence[str]) -> dict[str, tuple[str, str, str, str | None]]:
        """(wing, room, source kind, connector) of each drawer: fixed for a drawer's whole life."""
        ids = list(dict.fromkeys(drawer_ids))
        if not ids:
            return {}
        rows = self._rows(
            "SELECT d.id, w.name AS wing, r.name AS room, d.source_kind, d.connector FROM drawer d "
            "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id WHERE d.id = ANY(%s)", (ids,))
        return {r["id"]: (r["wing"], r["room"], r["source_kind"], r["connector"]) for r in rows}

    def all_eligible_ids(self, scope: Scope, window: TimeWindow | None, include_historical: bool) -> set[str]:
        where, params = _scope_sql(scope)
        time_sql, time_params = _time_sql(window, include_historical)
        rows = self._rows(
            "SELECT d.id FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            f"WHERE TRUE{where}{time_sql}",
            (*params, *time_params),
        )
        return {r["id"] for r in rows}

    # --- embeddings -----------------------------------------------------------------------------

    def drawers_missing_embeddings(self, model: str, limit: int) -> list[Drawer]:
        rows = self._rows(
            f"{_DRAWER_SELECT} WHERE NOT EXISTS (SELECT 1 FROM embedded e WHERE e.model = %s AND "
            "e.drawer_seq = d.seq) ORDER BY d.valid_to IS NOT NULL, d.seq LIMIT %s",
            (model, limit),
        )
        return [_drawer(r) for r in rows]

    def count_missing_embeddings(self, model: str) -> int:
        row = self._row(
            "SELECT (SELECT COUNT(*) FROM drawer) - (SELECT COUNT(*) FROM embedded WHERE model = %s) AS n", (model,)
        )
        return max(0, int(row["n"])) if row else 0

    def put_embeddings(self, model: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store each drawer's passage vectors (float32, shape (passages, dimension)) and mark it embedded."""
        items = []
        for drawer_id, vectors in rows:
            matrix = np.asarray(vectors, dtype=np.float32)
            items.append((drawer_id, matrix, int(matrix.shape[1]) if matrix.ndim == 2 and matrix.shape[0] else 0))
        for dimension in sorted({dimension for _, _, dimension in items if dimension}):
            self._ensure_vector_index(dimension)
        with self._write() as conn:
            # One embedding writer at a time, so row ids become visible in id order and the in-memory index,
            # which loads "everything after the last id it saw", never skips a row committed late.
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, _EMBEDDING_LOCK))
            for drawer_id, matrix, dimension in items:
                found = conn.execute("SELECT seq FROM drawer WHERE id = %s", (drawer_id,)).fetchone()
                if found is None:
                    continue
                seq = found["seq"]
                conn.execute("DELETE FROM embedding WHERE model = %s AND drawer_seq = %s", (model, seq))
                if dimension:
                    with conn.cursor() as cursor:
                        cursor.executemany(
                            "INSERT INTO embedding(model, drawer_seq, passage, dimension, vector) "
                            "VALUES (%s,%s,%s,%s,%b)",
                            [(model, seq, index, dimension, matrix[index]) for index in range(matrix.shape[0])],
                        )
                conn.execute(
                    "INSERT INTO embedded(model, drawer_seq, dimension) VALUES (%s,%s,%s) "
                    "ON CONFLICT (model, drawer_seq) DO UPDATE SET dimension = excluded.dimension",
                    (model, seq, dimension),
                )

    def _ensure_vector_index(self, dimension: int) -> None:
        """An HNSW index (cosine) over the vectors of one dimension, made the first time that size is stored.

        Semantic search reads the vectors into memory (search/semantic.py); the index is there for nearest-neighbour
        queries in SQL once a palace outgrows that. It is made outside the write transaction (and committed) so a
        rolled-back write cannot leave this process believing in an index that does not exist."""
        if dimension in self._vector_indexes or dimension > _HNSW_MAX_DIMENSION:
            return
        with self._vector_lock:
            if dimension in self._vector_indexes:
                return
            statement = (f"CREATE INDEX IF NOT EXISTS embedding_hnsw_{dimension:d} ON embedding USING hnsw "
                         f"((vector::vector({dimension:d})) vector_cosine_ops) WHERE dimension = {dimension:d}")
            with self._read() as conn:
                try:
                    conn.execute(statement)
                except pg_errors.UniqueViolation:
                    pass  # another daemon made the same index at the same moment
            self._vector_indexes.add(dimension)

    def load_embeddings(self, model: str, after_id: int, dimension: int) -> tuple[list[str], np.ndarray, int]:
        """Passage vectors stored after `after_id`: (drawer id per row, matrix, last id)."""
        with self._read() as conn, conn.cursor(binary=True) as cursor:
            rows = cursor.execute(
                "SELECT e.id, d.id AS drawer_id, e.vector FROM embedding e JOIN drawer d ON d.seq = e.drawer_seq "
                "WHERE e.model = %s AND e.id > %s ORDER BY e.id",
                (model, after_id),
            ).fetchall()
        if not rows:
            return [], np.zeros((0, dimension), dtype=np.float32), after_id
        matrix = np.vstack([r["vector"].to_numpy() for r in rows]).astype(np.float32, copy=False)
        return [r["drawer_id"] for r in rows], matrix, int(rows[-1]["id"])

    def drop_other_embeddings(self, model: str) -> int:
        """Remove vectors of models other than `model` (after a model change has been filled in)."""
        with self._write() as conn:
            removed = conn.execute("DELETE FROM embedding WHERE model <> %s", (model,)).rowcount
            conn.execute("DELETE FROM embedded WHERE model <> %s", (model,))
        return int(removed)

    # --- mining ---------------------------------------------------------------------------------

    def upsert_source(self, source: SourceRecord) -> SourceRecord:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO source(id, connector, locator, options, cursor, updated_at) VALUES (%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (id) DO UPDATE SET locator = excluded.locator, options = excluded.options",
                (source.id, source.connector, source.locator, _dumps(dict(source.options)), source.cursor,
                 source.updated_at),
            )
        found = self.get_source(source.id)
        assert found is not None
        return found

    def get_source(self, source_id: str) -> SourceRecord | None:
        row = self._row("SELECT * FROM source WHERE id = %s", (source_id,))
        if row is None:
            return None
        return SourceRecord(id=row["id"], connector=row["connector"], locator=row["locator"],
                            options=row["options"], cursor=row["cursor"], updated_at=row["updated_at"])

    def get_document(self, source_id: str, external_id: str) -> DocumentRecord | None:
        row = self._row("SELECT * FROM document WHERE source_id = %s AND external_id = %s", (source_id, external_id))
        if row is None:
            return None
        return DocumentRecord(
            source_id=row["source_id"], external_id=row["external_id"], revision=row["revision"],
            chunk_hashes=tuple(row["chunk_hashes"]), drawer_ids=tuple(row["drawer_ids"]),
            updated_at=row["updated_at"],
        )

    def apply_document(self, changes: DocumentChanges) -> None:
        at = changes.at or utc_now()
        record = changes.record
        with self._write() as conn:
            for drawer_id in changes.invalidated:
                self._close_current(conn, drawer_id, at, None)
            for old_id, replacement in changes.superseded:
                self._supersede(conn, old_id, replacement, at)
            for new in changes.created:
                self._insert_drawer(conn, new, at)
            conn.execute(
                "INSERT INTO document(source_id, external_id, revision, chunk_hashes, drawer_ids, updated_at) "
                "VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (source_id, external_id) DO UPDATE SET "
                "revision = excluded.revision, chunk_hashes = excluded.chunk_hashes, "
                "drawer_ids = excluded.drawer_ids, updated_at = excluded.updated_at",
                (record.source_id, record.external_id, record.revision, _dumps(list(record.chunk_hashes)),
                 _dumps(list(record.drawer_ids)), at),
            )
            # The cursor advances only with the document that earned it, in the same transaction.
            conn.execute("UPDATE source SET cursor = %s, updated_at = %s WHERE id = %s",
                         (changes.source.cursor, at, changes.source.id))

    # --- whole-palace copy ----------------------------------------------------------------------

    def _table_columns(self, conn: psycopg.Connection[Row], table: str) -> list[Row]:
        return conn.execute(
            "SELECT column_name AS name, udt_name AS type, is_identity = 'YES' AS identity "
            "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s "
            "ORDER BY ordinal_position", (table,)).fetchall()

    def export_rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of one palace table (`memcastle.store.PALACE_TABLES`), in primary-key order, as neutral rows:
        JSON as its stored text, drawer content exact, vectors as float32 arrays, derived columns left out."""
        _copied_table(table)
        with self._read() as conn:
            columns = self._table_columns(conn, table)
            keys = [r["name"] for r in conn.execute(
                "SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary "
                "ORDER BY array_position(i.indkey::int2[], a.attnum)", (table,)).fetchall()]
            chosen = [c for c in columns if (table, c["name"]) not in _DERIVED_COLUMNS]
            select = ", ".join(f'"{c["name"]}"::text AS "{c["name"]}"' if c["type"] in ("json", "jsonb")
                               else f'"{c["name"]}"' for c in chosen)
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
        with self._write() as conn:
            for table in (*PALACE_TABLES, "job"):
                if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
                    raise Conflict(f"{self.location} already holds a palace ({table} is not empty)",
                                   help="copy into an empty database (or one whose palace tables are empty)")
            for table, rows in tables:
                _copied_table(table)
                columns = self._table_columns(conn, table)
                names = [c["name"] for c in columns]
                marks = ", ".join(f"to_tsvector('{CONFIG}', %s)" if c["type"] == "tsvector"
                                  else "%b" if c["type"] == "vector" else "%s" for c in columns)
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
                    conn.execute(f"SELECT setval(pg_get_serial_sequence(%s, %s), "
                                 f"COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)", (table, column))
        for dimension in sorted(dimensions):
            self._ensure_vector_index(dimension)
        with self._read() as conn:
            conn.execute(f"ANALYZE {', '.join(PALACE_TABLES)}")
        return counts


# --- values in and out ----------------------------------------------------------------------------

# Columns this backend derives from others; a palace copy leaves them out and recomputes them. (`content_exact` is
# read, folded into `content` and recomputed too.)
_DERIVED_COLUMNS = {("drawer", "token_count"), ("drawer", "search"), ("embedding", "dimension")}


def _copied_table(table: str) -> None:
    if table not in PALACE_TABLES:
        raise ValueError(f"{table!r} is not a table a palace copy moves; known: {', '.join(PALACE_TABLES)}")


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
    names = {c["name"] for c in columns}
    unknown = set(row) - names
    if unknown:
        raise MigrationError(f"rows of {table} carry columns this palace has no place for: {sorted(unknown)}",
                             help="copy between palaces of the same MemCastle version")
    derived: dict[str, Any] = {}
    if table == "drawer":
        text, exact = _storable(row["content"])
        words = search_text(row["content"])
        derived = {"content": text, "content_exact": exact, "token_count": token_count(words), "search": words}
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
            value = _dumps(value)
        values.append(value)
    return tuple(values)



@contextmanager
def _text_errors() -> Iterator[None]:
    """PostgreSQL text cannot hold NUL: say so as a bad request, as no other value would be refused."""
    try:
        yield
    except psycopg.DataError as exc:
        if "NUL" in str(exc):
            raise InvalidRequest("text values may not contain NUL (\\x00) characters on the PostgreSQL store",
                                 help="remove the NUL characters") from None
        raise


def _storable(content: str) -> tuple[str, bytes | None]:
    """Content as TEXT can hold it, plus the exact bytes when it could not (NUL)."""
    if "\x00" not in content:
        return content, None
    return content.replace("\x00", "\ufffd"), content.encode("utf-8")


def _replayed(drawer_id: str, stored_hash: str, digest: str) -> str:
    if stored_hash == digest:
        return drawer_id  # a replayed write lands on the record it made before
    raise Conflict(f"drawer {drawer_id} already exists with other content", existing_id=drawer_id)


def _with_id(new: NewDrawer, drawer_id: str, at: str) -> NewDrawer:
    return NewDrawer(wing=new.wing, room=new.room, content=new.content, name=new.name, source=new.source,
                     tags=new.tags, provenance=new.provenance, id=drawer_id, valid_from=at)


def _drawer(row: Row) -> Drawer:
    origin = Origin.from_json(row["origin"]) if row["origin"] else None
    provenance = row["provenance"]
    content = bytes(row["content_exact"]).decode("utf-8") if row["content_exact"] is not None else row["content"]
    return Drawer(
        id=row["id"], wing=row["wing_name"], room=row["room_name"], name=row["name"], content=content,
        content_hash=row["content_hash"], fingerprint=row["fingerprint"],
        source=Source(kind=row["source_kind"], uri=row["source_uri"], agent=row["source_agent"], origin=origin),
        tags=tuple(row["tags"]),
        provenance=Provenance.from_json(provenance),
        valid_from=row["valid_from"], valid_to=row["valid_to"], supersedes=row["supersedes"],
        superseded_by=row["superseded_by"], created_at=row["created_at"],
    )


def _scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    sql, params = "", list[Any]()
    if scope.wing:
        sql += " AND w.name = %s"
        params.append(scope.wing)
    if scope.room:
        sql += " AND r.name = %s"
        params.append(scope.room)
    if scope.source_kind:
        sql += " AND d.source_kind = %s"
        params.append(scope.source_kind)
    if scope.connector:
        sql += " AND d.connector = %s"
        params.append(scope.connector)
    if scope.agent:
        sql += " AND d.source_agent = %s"
        params.append(scope.agent)
    tags = sorted(set(scope.tags))
    if tags:
        sql += " AND (SELECT COUNT(*) FROM drawer_tag t WHERE t.drawer_seq = d.seq AND t.tag = ANY(%s)) = %s"
        params.extend([tags, len(tags)])
    return sql, params


def _time_sql(window: TimeWindow | None, include_historical: bool) -> tuple[str, list[Any]]:
    """The SPEC §3 temporal rule, applied inside the query before ranking and limit."""
    if include_historical:
        return "", []
    if window is None:
        now = utc_now()
        return " AND d.valid_from <= %s AND (d.valid_to IS NULL OR d.valid_to > %s)", [now, now]
    if window.is_instant:
        return " AND d.valid_from <= %s AND (d.valid_to IS NULL OR d.valid_to > %s)", [window.start, window.start]
    return " AND d.valid_from < %s AND (d.valid_to IS NULL OR d.valid_to > %s)", [window.end, window.start]
