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
from contextlib import AbstractContextManager, contextmanager
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
    LexicalQuery,
    Scope,
    ScoredDrawer,
    TermStatistics,
)
from memcastle.model.lifecycle import Lifecycle
from memcastle.model.scripts import POSTGRES_PATTERN
from memcastle.store.migrate import MIGRATIONS_TABLE, failed, pending
from memcastle.store.postgres.context import CONTEXT_ROWS
from memcastle.store.postgres.copying import PalaceCopyRows, _storable
from memcastle.store.postgres.corpus import CorpusStatistics
from memcastle.store.postgres.fulltext import (
    CONFIG,
    bm25_sql,
    match_params,
    search_text,
    term_bound,
    token_count,
)
from memcastle.store.postgres.integrity import PostgresIntegrity
from memcastle.store.postgres.jobs import PostgresJobs
from memcastle.store.postgres.locks import LOCK_NAMESPACE, MIGRATION_LOCK
from memcastle.store.postgres.vectors import HNSW_MAX_DIMENSION, PostgresEmbeddings
from memcastle.store.sql.archive import ArchiveTables
from memcastle.store.sql.audit import AuditTables
from memcastle.store.sql.base import Row, SqlStore, Tx
from memcastle.store.sql.drawers import DrawerTables, NameTaken
from memcastle.store.sql.entities import EntityTables
from memcastle.store.sql.facts import FactTables
from memcastle.store.sql.filters import filter_sql
from memcastle.store.sql.forgetting import ForgetTables
from memcastle.store.sql.graph import GraphTables
from memcastle.store.sql.idempotency import RequestKeyTables
from memcastle.store.sql.miners import MinerTables
from memcastle.store.sql.mining import MiningTables
from memcastle.store.sql.near import NearTables
from memcastle.store.sql.neighbours import ContextPass, index_written, renew_around
from memcastle.store.sql.search import SearchTables


@functools.lru_cache(maxsize=1024)
def _bind(sql: str) -> str:
    """The shared SQL's `?` placeholders as psycopg's `%s` (a literal `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresTx:
    """A `Tx` over one psycopg connection."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        self.conn = conn
        self.written: list[int] = []  # the drawers this transaction inserted, given their context when it commits

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


class PostgresStore(SqlStore):
    """A palace in a PostgreSQL database (with the pgvector extension): its pool, composed of the shared roles and
    PostgreSQL's own."""

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
        lifecycle: Lifecycle | None = None,
    ) -> None:
        self.lifecycle = lifecycle or Lifecycle()
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
        self.drawers = PostgresDrawers(self)
        self.search = PostgresSearch(self)
        self.embeddings = PostgresEmbeddings(self, self.drawers)
        self.near = NearTables(self)
        self.mining = MiningTables(self, self.drawers, self.near)
        self.graph = GraphTables(self, self.drawers)
        self.entities = PostgresEntities(self)
        self.facts = FactTables(self)
        self.forgetting = PostgresForgetting(self)
        self._context_pass = ContextPass(self._write, CONTEXT_ROWS)
        self._context_pass.start()
        self.archive = PostgresArchive(self, self.drawers, self.embeddings)
        self.jobs = PostgresJobs(self)
        self.request_keys = RequestKeyTables(self)
        self.miners = MinerTables(self)
        self.audit = AuditTables(self)
        self.integrity = PostgresIntegrity(self)
        self.copy = PalaceCopyRows(self)

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

    @contextmanager
    def _write(self) -> Iterator[PostgresTx]:
        with _text_errors(), self._pool.connection() as conn, conn.transaction():
            tx = PostgresTx(conn)
            yield tx
            if tx.written:
                index_written(tx, tx.written, CONTEXT_ROWS)

    def close(self) -> None:
        self._context_pass.stop()
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
                conn.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_NAMESPACE, MIGRATION_LOCK))
                try:
                    self._apply_migrations(conn)
                finally:
                    if not conn.closed and not conn.broken:
                        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_NAMESPACE, MIGRATION_LOCK))
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
                    step = AFTER_MIGRATION.get(migration.version)
                    if step is not None:
                        step(conn)
                    conn.execute(
                        "INSERT INTO schema_migration(version, name, applied_at) VALUES (%s, %s, %s)",
                        (migration.version, migration.name, self._now()),
                    )
            except psycopg.Error as exc:
                raise failed(migration, self.location, str(exc).strip()) from exc

    def _recount_corpus(self) -> None:
        threading.Thread(
            target=self._corpus.recount_with, args=(self._read,), name="fulltext-recount", daemon=True
        ).start()

    def _ensure_vector_index(self, dimension: int) -> None:
        """An HNSW index (cosine) over the vectors of one dimension, made the first time that size is stored.

        The semantic leg searches through it (`nearest_passages`, `memcastle.search.stored`). It is made outside the
        write transaction (and committed) so a rolled-back write cannot leave this process believing in an index that
        does not exist."""
        if dimension in self._vector_indexes or dimension > HNSW_MAX_DIMENSION:
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


# --- the roles' steps that are PostgreSQL's own -----------------------------------------------------------------


class PostgresDrawers(DrawerTables):
    """NUL-safe content and the full-text vector, written with the row."""

    db: PostgresStore

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
        tx.written.append(int(inserted["seq"]))  # its neighbours' words, when the transaction commits
        return int(inserted["seq"])


class PostgresSearch(SearchTables):
    """The lexical leg on tsvector with FTS5's BM25 (`memcastle.store.postgres.fulltext`)."""

    db: PostgresStore

    def count_matching(self, query: LexicalQuery, scope: Scope, at_most: int) -> int:
        words = [search_text(term) for term in query.terms]
        if (query.require_all and any(not w for w in words)) or not any(words):
            return 0
        words = [w for w in words if w]
        glue = " && " if query.require_all else " || "
        match = glue.join([f"phraseto_tsquery('{CONFIG}', ?)"] * len(words))
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        with self.db._read() as tx:
            row = tx.one(
                "SELECT COUNT(*) AS n FROM (SELECT 1 FROM drawer d JOIN room r ON r.id = d.room_id "
                f"JOIN wing w ON w.id = r.wing_id WHERE d.search @@ ({match}){where} LIMIT ?) AS found",
                (*words, *params, at_most),
            )
        return int(row["n"]) if row else 0

    def lexical_candidates(self, query: LexicalQuery, scope: Scope, limit: int) -> list[ScoredDrawer]:
        """BM25's best `limit` eligible drawers, ties by id, with FTS5's statistics (kept in memory: see
        `memcastle.store.postgres.corpus`).

        An any-term query scores only the drawers holding one of its rarest terms first, adding terms from the rarest
        down until its `limit`-th score beats the most that the terms left out could give a drawer holding none of the
        others (MaxScore): the same answer as scoring every match, without scoring the many rows that hold only a
        common term. With `max_rows`, only the rarest terms the budget allows are matched (each found drawer is
        still scored by every term), and a query none of whose terms can rank matches nothing
        (`LexicalQuery.matches_nothing`).
        """
        words = [search_text(term) for term in query.terms]
        if query.require_all and any(not w for w in words):
            return []  # a required term with no word in it can match nothing
        words = [w for w in words if w]
        if not words or limit <= 0:
            return []
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        with self.db._read() as tx:
            near = bool(query.context_weight)
            stats = self.db._corpus.read(tx, words, recount=self.db._recount_corpus, near=near)
            if query.matches_nothing(stats.frequencies, stats.drawers):
                return []
            idf = stats.idf()

            def best(matching: list[str]) -> list[Row]:
                sql = bm25_sql(len(words), len(matching), query.require_all, where, query.context_weight)
                asked = match_params(matching, query.require_all, query.context_weight)
                return tx.all(sql, (words, idf, *asked, *params, stats.average_length or 1.0, limit))

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
        return self._marked_own(query, [ScoredDrawer(drawer_id=r["id"], signal=float(r["score"])) for r in rows])

    def _holding(self, drawer_ids: Sequence[str], terms: Sequence[str]) -> set[str]:
        words = [w for w in (search_text(term) for term in terms) if w]
        if not words:
            return set()
        anyone = " || ".join([f"phraseto_tsquery('{CONFIG}', ?)"] * len(words))
        rows = self._all(
            f"SELECT id FROM drawer WHERE id = ANY(?) AND search @@ ({anyone})", (list(drawer_ids), *words)
        )
        return {r["id"] for r in rows}

    def term_statistics(self, words: Sequence[str]) -> TermStatistics:
        """From the corpus statistics kept in memory (`corpus.CorpusStatistics`), as the lexical leg ranks with."""
        texts = [search_text(word) for word in words]
        kept = [t for t in texts if t]
        with self.db._read() as tx:
            stats = self.db._corpus.read(tx, kept, recount=self.db._recount_corpus, own_length=True)
        by_text = dict(zip(kept, stats.frequencies, strict=True))
        return TermStatistics(stats.drawers, stats.average_length, tuple(by_text.get(t, 0) for t in texts))


class PostgresEntities(EntityTables):
    db: PostgresStore

    def _contains(self, column: str) -> str:
        # As SQLite's LIKE: ASCII case-insensitive, no escape character, matched against JSON text too.
        return f"{column}::text ILIKE ? ESCAPE ''"


class PostgresForgetting(ForgetTables):
    db: PostgresStore

    def _match_sql(self, query: LexicalQuery) -> tuple[str, list[Any]]:
        words = [search_text(term) for term in query.terms]
        if not words or any(not w for w in words):
            return "1 = 0", []  # a required term with no word in it can match nothing
        return "d.search @@ (" + " && ".join([f"phraseto_tsquery('{CONFIG}', ?)"] * len(words)) + ")", words

    def _erase_fulltext(self, tx: Tx) -> None:
        CONTEXT_ROWS.unindex(tx, [int(r["seq"]) for r in tx.all("SELECT seq FROM forget_set")])

    def _after_erase(self, tx: Tx) -> None:
        renew_around(tx, [int(r["seq"]) for r in tx.all("SELECT seq FROM forget_set")], CONTEXT_ROWS)

    def _after_forget(self) -> None:
        """The BM25 statistics only ever grew: count them again now that drawers are gone (other daemons of this
        palace recount on their own schedule, `corpus.RECOUNT_SECONDS`)."""
        self.db._corpus.recount_with(self._read)


class PostgresArchive(ArchiveTables):
    db: PostgresStore

    def _snapshot(self) -> AbstractContextManager[Tx]:
        return self.db._snapshot()

    def _vector_of(self, stored: Any) -> np.ndarray:
        return np.asarray(stored.to_numpy(), dtype=np.float32)


def _index_unspaced_again(conn: psycopg.Connection[Any]) -> None:
    """Migration 16's step: the drawers whose text holds a script written without spaces, indexed again as
    `search_text` now reads them (a character at a time), with their lengths."""
    rows = conn.execute(
        "SELECT seq, content FROM drawer WHERE content ~ %s",
        (POSTGRES_PATTERN,),
    ).fetchall()
    with conn.cursor() as cursor:
        for seq, content in rows:
            words = search_text(content)
            cursor.execute(
                f"UPDATE drawer SET search = to_tsvector('{CONFIG}', %s), token_count = %s WHERE seq = %s",
                (words, token_count(words), seq),
            )


# What a migration needs done in Python after its SQL, in the same transaction.
AFTER_MIGRATION: dict[int, Callable[[psycopg.Connection[Any]], None]] = {16: _index_unspaced_again}


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
        raise StorageFull.of(f"the PostgreSQL server's storage ({str(exc).strip()})", None) from exc
    except pg_errors.IoError as exc:
        raise StorageError(f"the PostgreSQL server's storage failed: {str(exc).strip()}") from exc
