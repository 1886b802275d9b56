"""The scale-out palace on PostgreSQL + pgvector: several daemons may serve it at once (SPEC §8).

The shared tables (`memcastle.store.sql`) hold every rule, checked by one contract suite on both backends
(tests/store/test_contract.py). What is PostgreSQL's own is here: a connection pool, `?` bound as psycopg's `%s`,
row and advisory locks, content with NUL bytes, tsvector + BM25, pgvector storage and its HNSW index, job claims
with SKIP LOCKED and lease takeover on the database clock, and the whole-palace copy.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool, PoolTimeout

from memcastle.clock import utc_now
from memcastle.errors import InvalidRequest, MigrationError, StorageError, StorageFull
from memcastle.model import (
    RECOVERY_BUDGET,
    Job,
    JobStatus,
    LexicalQuery,
    Scope,
    ScoredDrawer,
    TermStatistics,
    recovery_spent,
)
from memcastle.store import VectorChunk
from memcastle.store.migrate import MIGRATIONS_TABLE, failed, pending
from memcastle.store.postgres.copying import PalaceCopyRows, _storable
from memcastle.store.postgres.corpus import CorpusStatistics
from memcastle.store.postgres.fulltext import CONFIG, bm25_sql, search_text, term_bound, token_count
from memcastle.store.sql.archive import ArchiveTables
from memcastle.store.sql.base import Row, Tx
from memcastle.store.sql.drawers import NameTaken
from memcastle.store.sql.filters import filter_sql
from memcastle.store.sql.forgetting import ForgetTables
from memcastle.store.sql.graph import GraphTables
from memcastle.store.sql.jobs import JobTables
from memcastle.store.sql.miners import MinerTables
from memcastle.store.sql.mining import MiningTables
from memcastle.store.sql.requests import RequestKeyTables
from memcastle.store.sql.vectors import VectorWrite, vector_chunk

# Advisory locks are keyed (namespace, key); the namespace keeps MemCastle's apart from other users of the database.
LOCK_NAMESPACE = 0x4D43  # "MC"
_COALESCE_LOCK_NAMESPACE = 0x4D44
_MIGRATION_LOCK = 1
_EMBEDDING_LOCK = 2

# HNSW on pgvector's `vector` type indexes at most 2,000 dimensions.
_HNSW_MAX_DIMENSION = 2000
_HNSW_EF_SEARCH = 100  # candidates kept while walking pgvector's graph (its default, 40, caps recall lower)
_HNSW_MAX_SCAN = 20_000  # rows a filtered walk visits at most before the exact form takes over (pgvector's default)

# Leases are stamped on the database's clock: every daemon compares against the same one, whatever host it runs on.
_STAMP = """'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'"""
_DB_NOW = f"to_char(clock_timestamp() AT TIME ZONE 'UTC', {_STAMP})"
_DB_LATER = f"to_char((clock_timestamp() + make_interval(secs => ?)) AT TIME ZONE 'UTC', {_STAMP})"


@functools.lru_cache(maxsize=1024)
def _bind(sql: str) -> str:
    """The shared SQL's `?` placeholders as psycopg's `%s` (a literal `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresTx:
    """A `Tx` over one psycopg connection."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        self.conn = conn

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self.conn.execute(_bind(sql), params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return cast("list[Row]", self.conn.execute(_bind(sql), params).fetchall())

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(_bind(sql), params).rowcount

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = list(rows)
        if batch:
            with self.conn.cursor() as cursor:
                cursor.executemany(_bind(sql), batch)


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


def _configure(conn: psycopg.Connection[Any]) -> None:
    register_vector(conn)
    # JSON columns come back as their text, exactly as SQLite's do, so one set of row mappers serves both.
    conn.adapters.register_loader("json", TextLoader)


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


class PostgresStore(
    PalaceCopyRows, ArchiveTables, ForgetTables, GraphTables, MiningTables, JobTables, RequestKeyTables, MinerTables
):
    """A palace in a PostgreSQL database (with the pgvector extension)."""

    backend = "postgres"
    FOR_UPDATE = " FOR UPDATE"

    def __init__(
        self,
        conninfo: str,
        *,
        max_connections: int = 10,
        connect_timeout: float = 10.0,
        recovery_budget: int = RECOVERY_BUDGET,
        now: Callable[[], str] = utc_now,
    ) -> None:
        self.conninfo = conninfo
        self.location = redact(conninfo)
        self._recovery_budget = recovery_budget
        self._corpus = CorpusStatistics()
        self._now = now
        self._vector_indexes: set[int] = set()
        self._vector_lock = threading.Lock()
        self._migrate(connect_timeout)
        pool_options: dict[str, Any] = {}
        if hasattr(ConnectionPool, "check_connection"):
            pool_options["check"] = ConnectionPool.check_connection  # a restarted server costs one retry, not an error
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max(2, max_connections),
            name="memcastle",
            open=False,
            kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": max(1, int(connect_timeout))},
            configure=_configure,
            timeout=max(30.0, connect_timeout),
            **pool_options,
        )
        try:
            self._pool.open(wait=True, timeout=max(30.0, connect_timeout))
        except PoolTimeout as exc:
            self._pool.close()
            raise MigrationError(
                f"cannot connect to the palace database {self.location}: {exc}",
                help="check that the PostgreSQL server is running and accepts connections",
            ) from None
        self._iterative_scan = self._pgvector_version() >= (0, 8)

    def _pgvector_version(self) -> tuple[int, ...]:
        """The installed pgvector's version: filtered walks of its graph (`hnsw.iterative_scan`) came in 0.8; before
        it, a walk that finds too few rows is answered by the exact form alone (`nearest_passages`)."""
        row = self._one("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        parts = str(row["extversion"] if row else "0").split(".")
        return tuple(int(part) for part in parts if part.isdigit())

    # --- connections ----------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[PostgresTx]:
        with _text_errors(), self._pool.connection() as conn:
            yield PostgresTx(conn)

    @contextmanager
    def _snapshot(self) -> Iterator[PostgresTx]:
        """A repeatable-read, read-only transaction: every statement sees the palace as of its first."""
        with _text_errors(), self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield PostgresTx(conn)

    def _vector_of(self, stored: Any) -> np.ndarray:
        return np.asarray(stored.to_numpy(), dtype=np.float32)

    @contextmanager
    def _write(self) -> Iterator[PostgresTx]:
        with _text_errors(), self._pool.connection() as conn, conn.transaction():
            yield PostgresTx(conn)

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
            raise MigrationError(
                f"migrating the palace database {self.location} failed: {str(exc).strip()}",
                help="the palace was left at its previous version; nothing was served",
            ) from None

    def _apply_migrations(self, conn: psycopg.Connection[Any]) -> None:
        try:
            conn.execute(MIGRATIONS_TABLE)
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migration")}
        except psycopg.Error as exc:
            raise MigrationError(f"{self.location} cannot hold a MemCastle palace: {str(exc).strip()}") from None
        for migration in pending(applied, "postgres", self.location):
            try:
                # DDL is transactional in PostgreSQL: a failing migration leaves no trace.
                with conn.transaction():
                    conn.execute(migration.sql.encode("utf-8"))  # bytes: several statements, sent as they are
                    conn.execute(
                        "INSERT INTO schema_migration(version, name, applied_at) VALUES (%s, %s, %s)",
                        (migration.version, migration.name, self._now()),
                    )
            except psycopg.Error as exc:
                raise failed(migration, self.location, str(exc).strip()) from exc

    # --- drawers: NUL-safe content and the full-text vector ---------------------------------------

    def _insert_drawer_row(self, tx: Tx, row: Mapping[str, Any]) -> int | None:
        assert isinstance(tx, PostgresTx)  # this store's transactions are its own
        text, exact = _storable(row["content"])
        words = search_text(row["content"])
        values = {**row, "content": text, "content_exact": exact, "token_count": token_count(words)}
        statement = (
            f"INSERT INTO drawer({', '.join(values)}, search) VALUES ({', '.join('?' * len(values))}, "
            f"to_tsvector('{CONFIG}', ?)) RETURNING seq"
        )
        try:
            with tx.conn.transaction():  # a savepoint: a clash must not abort the caller's transaction
                inserted = tx.one(statement, (*values.values(), words))
        except pg_errors.UniqueViolation as clash:
            if clash.diag.constraint_name == "drawer_current_name":
                raise NameTaken from None
            return None  # another writer stored this id between the check and the insert
        assert inserted is not None
        return int(inserted["seq"])

    def _contains(self, column: str) -> str:
        # As SQLite's LIKE: ASCII case-insensitive, no escape character, matched against JSON text too.
        return f"{column}::text ILIKE ? ESCAPE ''"

    def lexical_candidates(self, query: LexicalQuery, scope: Scope, limit: int) -> list[ScoredDrawer]:
        """BM25's best `limit` eligible drawers, ties by id, with FTS5's statistics (kept in memory: see
        `memcastle.store.postgres.corpus`).

        An any-term query scores only the drawers holding one of its rarest terms first, adding terms from the rarest
        down until its `limit`-th score beats the most that the terms left out could give a drawer holding none of the
        others (MaxScore): the same answer as scoring every match, without scoring the many rows that hold only a
        common term. With `max_rows`, only the rarest terms the budget allows are matched (each found drawer is
        still scored by every term).
        """
        words = [search_text(term) for term in query.terms]
        if query.require_all and any(not w for w in words):
            return []  # a required term with no word in it can match nothing
        words = [w for w in words if w]
        if not words or limit <= 0:
            return []
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        with self._read() as tx:
            stats = self._corpus.read(tx, words, recount=self._recount_corpus)
            idf = stats.idf()

            def best(matching: list[str]) -> list[Row]:
                sql = bm25_sql(len(words), len(matching), query.require_all, where)
                return tx.all(sql, (words, idf, *matching, *params, stats.average_length or 1.0, limit))

            if query.require_all:
                rows = best(words)
            else:
                order = sorted(range(len(words)), key=lambda i: (stats.frequencies[i], i))  # rarest first
                budget = LexicalQuery(tuple(words), require_all=False, max_rows=query.max_rows)
                within = len(budget.within_budget(stats.frequencies))  # the rarest terms: the first of `order`
                for taken in range(1, within + 1):
                    rows = best([words[i] for i in order[:taken]])
                    left_out = sum(term_bound(idf[i]) for i in order[taken:])
                    if len(rows) == limit and float(rows[-1]["score"]) > left_out:
                        break
        return [ScoredDrawer(drawer_id=r["id"], signal=float(r["score"])) for r in rows]

    def _match_sql(self, query: LexicalQuery) -> tuple[str, list[Any]]:
        words = [search_text(term) for term in query.terms]
        if not words or any(not w for w in words):
            return "1 = 0", []  # a required term with no word in it can match nothing
        return "d.search @@ (" + " && ".join([f"phraseto_tsquery('{CONFIG}', ?)"] * len(words)) + ")", words

    def _after_forget(self) -> None:
        """The BM25 statistics only ever grew: count them again now that drawers are gone (other daemons of this
        palace recount on their own schedule, `corpus.RECOUNT_SECONDS`)."""
        self._corpus.recount_with(self._read)

    def _recount_corpus(self) -> None:
        threading.Thread(
            target=self._corpus.recount_with, args=(self._read,), name="fulltext-recount", daemon=True
        ).start()

    # --- embeddings -----------------------------------------------------------------------------

    def _store_vectors(self, model: str, writes: list[VectorWrite]) -> None:
        """pgvector rows under an advisory lock, with an HNSW index per dimension."""
        items = writes
        for dimension in sorted({write.dimension for write in items if write.dimension}):
            self._ensure_vector_index(dimension)
        with self._write() as tx:
            conn = tx.conn
            # One embedding writer at a time, so row ids become visible in id order and the in-memory index,
            # which loads "everything after the last id it saw", never skips a row committed late.
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, _EMBEDDING_LOCK))
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
                    conn.execute(
                        "INSERT INTO embedded(model, drawer_seq, dimension) VALUES (%s,%s,%s) "
                        "ON CONFLICT (model, drawer_seq) DO UPDATE SET dimension = excluded.dimension",
                        (model, seq, write.dimension),
                    )

    def _ensure_vector_index(self, dimension: int) -> None:
        """An HNSW index (cosine) over the vectors of one dimension, made the first time that size is stored.

        The semantic leg searches through it (`nearest_passages`, `memcastle.search.stored`). It is made outside the
        write transaction (and committed) so a rolled-back write cannot leave this process believing in an index that
        does not exist."""
        if dimension in self._vector_indexes or dimension > _HNSW_MAX_DIMENSION:
            return
        with self._vector_lock:
            if dimension in self._vector_indexes:
                return
            statement = (
                f"CREATE INDEX IF NOT EXISTS embedding_hnsw_{dimension:d} ON embedding USING hnsw "
                f"((vector::vector({dimension:d})) vector_cosine_ops) WHERE dimension = {dimension:d}"
            )
            with self._read() as tx:
                try:
                    tx.conn.execute(statement)
                except pg_errors.UniqueViolation:
                    pass  # another daemon made the same index at the same moment
            self._vector_indexes.add(dimension)

    def nearest_passages(
        self,
        model: str,
        vector: np.ndarray,
        limit: int,
        scope: Scope,
    ) -> list[tuple[str, float]]:
        """The nearest passages through the HNSW index of the vector's dimension (see `NearestStore`). Scope and time
        filter inside the walk: pgvector's iterative scan goes on through the graph until `limit` rows pass them (or
        `hnsw.max_scan_tuples` were visited), instead of filtering a fixed number of neighbours afterwards."""
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        dimension = int(vector.shape[0])
        with self._write() as tx:  # a transaction, for SET LOCAL
            tx.run(f"SET LOCAL hnsw.ef_search = {min(max(_HNSW_EF_SEARCH, limit), 1000):d}")
            if self._iterative_scan:
                tx.run("SET LOCAL hnsw.iterative_scan = relaxed_order")
                tx.run(f"SET LOCAL hnsw.max_scan_tuples = {_HNSW_MAX_SCAN:d}")
            rows = tx.all(nearest_sql(dimension, where), (vector, model, *params, vector, limit))
            if len(rows) < limit:
                # Fewer than asked: the scope holds no more, or the walk stopped at max_scan_tuples before finding
                # them (a narrow scope in a large palace). The exact form tells which, scoring the eligible rows.
                rows = tx.all(nearest_sql(dimension, where, exact=True), (vector, model, *params, vector, limit))
        # relaxed_order: the walk may return neighbours slightly out of order.
        return sorted(((r["id"], 1.0 - float(r["distance"])) for r in rows), key=lambda found: (-found[1], found[0]))

    def term_statistics(self, words: Sequence[str]) -> TermStatistics:
        """From the corpus statistics kept in memory (`corpus.CorpusStatistics`), as the lexical leg ranks with."""
        texts = [search_text(word) for word in words]
        kept = [t for t in texts if t]
        with self._read() as tx:
            stats = self._corpus.read(tx, kept, recount=self._recount_corpus)
        by_text = dict(zip(kept, stats.frequencies, strict=True))
        return TermStatistics(stats.drawers, stats.average_length, tuple(by_text.get(t, 0) for t in texts))

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
        with self._read() as tx, tx.conn.cursor(binary=True) as cursor:
            rows = cursor.execute("SELECT id, vector FROM embedding WHERE id = ANY(%s)", (row_ids,)).fetchall()
        return [(int(r["id"]), r["vector"].to_numpy()) for r in rows]

    # --- jobs: SKIP LOCKED claims, leases on the database clock ----------------------------------

    def load_embeddings(self, model: str, after_id: int, dimension: int, *, limit: int) -> VectorChunk:
        """The vectors after row `after_id`, through pgvector's binary form (see `EmbeddingStore.load_embeddings`):
        a walk of the primary key from `after_id`."""
        with self._read() as tx, tx.conn.cursor(binary=True) as cursor:
            rows = cursor.execute(
                "SELECT e.id, d.id AS drawer_id, e.passage, e.vector, e.passages FROM embedding e "
                "JOIN drawer d ON d.seq = e.drawer_seq WHERE e.id > %s AND e.model = %s ORDER BY e.id LIMIT %s",
                (after_id, model, limit),
            ).fetchall()
        matrix = np.vstack([r["vector"].to_numpy() for r in rows]) if rows else None
        return vector_chunk(rows, matrix, after_id, dimension)

    def _lease_until(self, lease_seconds: float) -> tuple[str, list[Any]]:
        return _DB_LATER, [float(lease_seconds)]

    def _lock_coalesce_key(self, tx: Tx, key: str) -> None:
        # Two daemons asking for the same run at once: the second finds the first one's queued job.
        tx.run("SELECT pg_advisory_xact_lock(?, hashtext(?))", (_COALESCE_LOCK_NAMESPACE, key))

    def _claim(self, owner: str, lease_seconds: float, kinds: list[str]) -> Job | None:
        """The best queued job — or a running one whose lease has expired (its daemon died) — leased to `owner`.

        Taking a job over counts as crash recovery (running → queued → running), within the same budget."""
        now = self._now()
        passed: list[str] = []
        with self._write() as tx:
            while True:
                # SKIP LOCKED: workers of every daemon claim side by side, each row goes to exactly one of them.
                # Jobs sharing a coalesce key run one at a time: a sweep queued behind a running one waits for it.
                row = tx.one(
                    "SELECT id, status, recovery_attempts, coalesce_key FROM job q WHERE kind = ANY(?) "
                    "AND NOT (id = ANY(?)) AND ((status = 'queued' AND (coalesce_key IS NULL OR NOT EXISTS "
                    "(SELECT 1 FROM job r WHERE r.status = 'running' AND r.coalesce_key = q.coalesce_key))) "
                    f"OR (status = 'running' AND lease_expires_at < {_DB_NOW})) "
                    "ORDER BY priority DESC, created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
                    (kinds, passed),
                )
                if row is None:
                    return None
                recovered = 0
                if row["status"] == JobStatus.RUNNING.value:
                    if row["recovery_attempts"] >= self._recovery_budget:
                        tx.run(
                            "UPDATE job SET status = 'failed', finished_at = ?, lease_owner = NULL, "
                            "lease_expires_at = NULL, error = ? WHERE id = ?",
                            (now, recovery_spent(row["recovery_attempts"], self._recovery_budget), row["id"]),
                        )
                        continue
                    recovered = 1
                elif row["coalesce_key"] is not None and not self._may_start(tx, row["id"], row["coalesce_key"]):
                    passed.append(row["id"])
                    continue
                tx.run(
                    f"UPDATE job SET status = 'running', lease_owner = ?, lease_expires_at = {_DB_LATER}, "
                    "started_at = COALESCE(started_at, ?), attempt = attempt + 1, "
                    "recovery_attempts = recovery_attempts + ?, pause_requested = FALSE WHERE id = ?",
                    (owner, float(lease_seconds), now, recovered, row["id"]),
                )
                return self._job(tx, row["id"])

    def _may_start(self, tx: PostgresTx, job_id: str, coalesce_key: str) -> bool:
        """No other job of this coalesce key runs, checked under the key's lock (two claims must not both pass).

        A try-lock: when another transaction holds the key (claiming or coalescing), this claim passes the job by
        for now rather than waiting, so claims that pass several keys can never deadlock each other."""
        locked = tx.one(
            "SELECT pg_try_advisory_xact_lock(?, hashtext(?)) AS ok", (_COALESCE_LOCK_NAMESPACE, coalesce_key)
        )
        if locked is None or not locked["ok"]:
            return False
        return (
            tx.one(
                "SELECT 1 AS found FROM job WHERE status = 'running' AND coalesce_key = ? AND id <> ?",
                (coalesce_key, job_id),
            )
            is None
        )


# --- values in and out ----------------------------------------------------------------------------


@contextmanager
def _text_errors() -> Iterator[None]:
    """PostgreSQL text cannot hold NUL: say so as a bad request, as no other value would be refused. A server whose
    disk is full (SQLSTATE 53100) or that failed an I/O (58030) says so as the storage error it is."""
    try:
        yield
    except psycopg.DataError as exc:
        if "NUL" in str(exc):
            raise InvalidRequest(
                "text values may not contain NUL (\\x00) characters on the PostgreSQL store",
                help="remove the NUL characters",
            ) from None
        raise
    except pg_errors.DiskFull as exc:
        raise StorageFull(f"the PostgreSQL server's storage ({str(exc).strip()})", None) from exc
    except pg_errors.IoError as exc:
        raise StorageError(f"the PostgreSQL server's storage failed: {str(exc).strip()}") from exc
