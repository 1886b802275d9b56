"""The embedded SQLite palace: one file, WAL, one writer connection behind a lock, readers beside it.

The shared tables (`memcastle.store.sql`) hold every rule; this module holds what is SQLite's own: connections and
migrations, the FTS5 lexical leg, vectors as BLOBs, the single-writer job claim and the whole-palace copy.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import numpy as np

from memcastle.clock import format_instant, to_datetime, utc_now
from memcastle.errors import MigrationError, StorageFull
from memcastle.model import Job, LexicalQuery
from memcastle.model.lifecycle import Lifecycle
from memcastle.model.scripts import has_unspaced, index_text
from memcastle.store import VectorChunk
from memcastle.store.copy import check_columns, copied_table, ensure_empty
from memcastle.store.migrate import MIGRATIONS_TABLE, failed, pending
from memcastle.store.sql.archive import ArchiveTables
from memcastle.store.sql.audit import AuditTables
from memcastle.store.sql.base import Role, Row, SqlStore, Tx
from memcastle.store.sql.drawers import DrawerTables, NameTaken
from memcastle.store.sql.embeddings import EmbeddingTables
from memcastle.store.sql.entities import EntityTables
from memcastle.store.sql.facts import FactTables
from memcastle.store.sql.forgetting import ForgetTables
from memcastle.store.sql.graph import GraphTables
from memcastle.store.sql.idempotency import RequestKeyTables
from memcastle.store.sql.jobs import JobTables
from memcastle.store.sql.miners import MinerTables
from memcastle.store.sql.mining import MiningTables
from memcastle.store.sql.near import NearTables
from memcastle.store.sql.neighbours import ContextPass, index_written, renew_around
from memcastle.store.sql.rows import job_from_row
from memcastle.store.sql.vectors import MARK_EMBEDDED, VectorWrite, vector_chunk
from memcastle.store.sqlite.failures import sqlite_errors, storage_failure
from memcastle.store.sqlite.files import mark_in_use, refuse_a_lost_database
from memcastle.store.sqlite.fulltext import fts5_match
from memcastle.store.sqlite.integrity import SQLiteIntegrity
from memcastle.store.sqlite.search import SQLiteSearch
from memcastle.store.sqlite.written import CONTEXT_ROWS

log = logging.getLogger(__name__)

DB_FILE = "palace.sqlite3"


class SQLiteTx:
    """A `Tx` over one sqlite3 connection (qmark placeholders are SQLite's own)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.written: list[int] = []  # the drawers this transaction inserted, indexed when it commits

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return cast("Row | None", self.conn.execute(sql, params).fetchone())

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return cast("list[Row]", self.conn.execute(sql, params).fetchall())

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)


class SQLiteStore(SqlStore):
    """A palace in `<palace>/palace.sqlite3`: its connections, composed of the shared roles and SQLite's own."""

    NO_INDEX = "+"

    backend = "sqlite"

    def __init__(self, palace: Path, *, now: Callable[[], str] = utc_now, lifecycle: Lifecycle | None = None) -> None:
        self.lifecycle = lifecycle or Lifecycle()
        self.path = palace / DB_FILE
        self.location = str(self.path)
        self._now = now
        self._lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        with sqlite_errors(self.path):
            palace.mkdir(parents=True, exist_ok=True)
            refuse_a_lost_database(palace, self.path)
            try:
                self._writer = self._connect()
                self._writer.execute("PRAGMA journal_mode=WAL")
                # What is deleted is overwritten with zeros, so a forgotten drawer leaves no bytes in free pages.
                self._writer.execute("PRAGMA secure_delete=ON")
            except sqlite3.DatabaseError as exc:
                if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_NOTADB:
                    raise
                raise MigrationError(
                    f"{self.path} is not a MemCastle palace database: {exc}",
                    help="point --palace at a palace directory, or move the file away",
                ) from None
            self._migrate()
            with self._write() as tx:
                rescan(tx)  # the drawers stored before migration 16, once
            self._empty_log()  # a forget that committed before a crash leaves its old pages in the log until now
            self._context_pass = ContextPass(self._write, CONTEXT_ROWS)
            self._context_pass.start()
            mark_in_use(palace, self._now())
        self.drawers = SQLiteDrawers(self)
        self.search = SQLiteSearch(self)
        self.embeddings = SQLiteEmbeddings(self, self.drawers)
        self.near = NearTables(self)
        self.mining = MiningTables(self, self.drawers, self.near)
        self.graph = GraphTables(self, self.drawers)
        self.entities = EntityTables(self)
        self.facts = FactTables(self)
        self.forgetting = SQLiteForgetting(self)
        self.archive = SQLiteArchive(self, self.drawers, self.embeddings)
        self.jobs = SQLiteJobs(self)
        self.request_keys = RequestKeyTables(self)
        self.miners = MinerTables(self)
        self.audit = AuditTables(self)
        self.integrity = SQLiteIntegrity(self)
        self.copy = SQLiteCopy(self)
        self.forgetting.merge_index()  # what a forget on a full disk left owed, once there is room

    # --- connections ----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        # NORMAL is durable across application crashes in WAL mode; only an OS crash may lose the last commits.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def _read(self) -> Iterator[SQLiteTx]:
        with sqlite_errors(self.path):
            yield SQLiteTx(self._reader())

    @contextmanager
    def _write(self) -> Iterator[SQLiteTx]:
        with sqlite_errors(self.path), self._lock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                tx = SQLiteTx(conn)
                yield tx
                if tx.written:
                    index_written(tx, tx.written, CONTEXT_ROWS)
                conn.execute("COMMIT")
            except BaseException:
                # A COMMIT refused (a full disk) leaves the transaction open; SQLite may have rolled it back already.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def exclusive(self) -> threading.RLock:
        """The palace's write lock: while it is held, no other write of this process runs (`store.reserve`)."""
        return self._lock

    def close(self) -> None:
        self._context_pass.stop()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._lock:
            self._writer.close()

    def _migrate(self) -> None:
        conn = self._writer
        with self._lock:
            try:
                conn.execute(MIGRATIONS_TABLE)
                applied = {row[0] for row in conn.execute("SELECT version FROM schema_migration")}
            except sqlite3.DatabaseError as exc:
                if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_NOTADB:
                    raise
                raise MigrationError(f"{self.path} is not a MemCastle palace database: {exc}") from None
            for migration in pending(applied, "sqlite", str(self.path)):
                record = (
                    "INSERT INTO schema_migration(version, name, applied_at) VALUES "
                    f"({migration.version}, '{migration.name}', '{self._now()}');"
                )
                try:
                    conn.executescript(f"BEGIN IMMEDIATE;\n{migration.sql}\n;{record}\nCOMMIT;")
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise (storage_failure(exc, self.path) or failed(migration, str(self.path), str(exc))) from exc

    @contextmanager
    def _snapshot(self) -> Iterator[SQLiteTx]:
        """One read transaction on a connection of its own: in WAL mode it sees the palace as of its first read."""
        conn = self._connect()
        conn.execute("PRAGMA query_only=ON")
        try:
            with sqlite_errors(self.path):
                conn.execute("BEGIN")
                yield SQLiteTx(conn)
                conn.execute("COMMIT")
        finally:
            conn.close()

    def _empty_log(self) -> None:
        """Copy the write-ahead log into the database and truncate it to nothing: until then it holds the pages as
        they were before. Readers finishing a statement are waited for (the busy timeout)."""
        with self._lock:
            for _ in range(3):
                try:
                    busy = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                except sqlite3.Error as exc:  # a full disk: the log is copied in later (the next forget or start)
                    log.warning("the write-ahead log of %s could not be emptied: %s", self.path, exc)
                    return
                if not busy:
                    return
            log.warning("the write-ahead log of %s could not be emptied: readers held it", self.path)


# --- the roles' steps that are SQLite's own ---------------------------------------------------------------------


RESCAN_BATCH = 2_000  # drawers read per step of the scan migration 16 asks for


def respace(tx: Tx, seq: int, content: str) -> None:
    """Index a drawer holding a script written without spaces a character at a time (`memcastle.model.scripts`):
    a rebuild indexed its text whole; FTS5 is told that text to delete, then given the spaced one."""
    row = tx.one("SELECT context FROM drawer_context WHERE seq = ?", (seq,))
    context = row["context"] if row is not None else ""
    tx.run(
        "INSERT INTO drawer_fts(drawer_fts, rowid, content, context) VALUES ('delete', ?, ?, ?)",
        (seq, content, context),
    )
    tx.run("INSERT INTO drawer_fts(rowid, content, context) VALUES (?, ?, ?)", (seq, index_text(content), context))


def rescan(tx: Tx) -> int:
    """The scan migration 16 (and an import) asks for, in `drawer_fts_rescan`: every drawer from `after_seq` on that
    holds such text is indexed again, spaced; the row goes when the scan is done. Returns the drawers re-indexed."""
    row = tx.one("SELECT after_seq FROM drawer_fts_rescan")
    if row is None:
        return 0
    after, done = int(row["after_seq"]), 0
    while True:
        rows = tx.all("SELECT seq, content FROM drawer WHERE seq > ? ORDER BY seq LIMIT ?", (after, RESCAN_BATCH))
        for found in rows:
            if has_unspaced(found["content"]):
                respace(tx, int(found["seq"]), found["content"])
                done += 1
        if len(rows) < RESCAN_BATCH:
            break
        after = int(rows[-1]["seq"])
    tx.run("DELETE FROM drawer_fts_rescan")
    return done


class SQLiteDrawers(DrawerTables):
    db: SQLiteStore

    def _insert_drawer_row(self, tx: Tx, row: Mapping[str, Any]) -> int | None:
        assert isinstance(tx, SQLiteTx)  # this store's transactions are its own
        columns = ", ".join(row)
        try:
            cursor = tx.conn.execute(
                f"INSERT INTO drawer({columns}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
            )
        except sqlite3.IntegrityError:
            raise NameTaken from None  # the id was checked in this transaction, and there is one writer
        assert cursor.lastrowid is not None
        tx.written.append(cursor.lastrowid)  # indexed, with its neighbours' words, when the transaction commits
        return cursor.lastrowid


class SQLiteEmbeddings(EmbeddingTables):
    """Vectors as little-endian float32 blobs."""

    db: SQLiteStore

    def _store_vectors(self, model: str, writes: list[VectorWrite], *, supplied: bool = False) -> None:
        """Vectors as little-endian float32 blobs, one row per passage."""
        with self._write() as tx:
            for write in writes:
                found = tx.one("SELECT seq FROM drawer WHERE id = ?", (write.drawer_id,))
                if found is None:
                    continue
                seq = found["seq"]
                if write.replaces:
                    tx.run("DELETE FROM embedding WHERE model = ? AND drawer_seq = ?", (model, seq))
                tx.many(
                    "INSERT INTO embedding(model, drawer_seq, passage, vector, passages) VALUES (?,?,?,?,?) "
                    "ON CONFLICT (model, drawer_seq, passage) DO NOTHING",
                    [(model, seq, index, vector.tobytes(), write.total) for index, vector in write.rows()],
                )
                if write.completes:
                    tx.run(MARK_EMBEDDED, (model, seq, write.dimension, int(supplied)))

    def _vectors_by_id(self, row_ids: list[int]) -> list[tuple[int, np.ndarray]]:
        rows = self._all(f"SELECT id, vector FROM embedding WHERE id IN ({','.join('?' * len(row_ids))})", row_ids)
        return [(int(r["id"]), np.frombuffer(r["vector"], dtype="<f4")) for r in rows]

    def load_embeddings(self, model: str, after_id: int, dimension: int, *, limit: int) -> VectorChunk:
        """The vectors after row `after_id`, read back from their blobs (see `EmbeddingStore.load_embeddings`).
        `+e.model` keeps the planner on the row-id range: the model index would walk the whole palace."""
        rows = self._all(
            "SELECT e.id, d.id AS drawer_id, e.passage, e.vector, e.passages FROM embedding e "
            "JOIN drawer d ON d.seq = e.drawer_seq WHERE +e.model = ? AND e.id > ? ORDER BY e.id LIMIT ?",
            (model, after_id, limit),
        )
        matrix = None
        if rows:
            matrix = np.frombuffer(b"".join(r["vector"] for r in rows), dtype="<f4").reshape(len(rows), -1)
        return vector_chunk(rows, matrix, after_id, dimension)


class SQLiteForgetting(ForgetTables):
    db: SQLiteStore

    def _match_sql(self, query: LexicalQuery) -> tuple[str, list[Any]]:
        match = fts5_match(LexicalQuery(query.terms, require_all=True), column="content")  # not its neighbours'
        return "d.seq IN (SELECT rowid FROM drawer_fts WHERE drawer_fts MATCH ?)", [match]

    def _erase_fulltext(self, tx: Tx) -> None:
        """FTS5 keeps an external-content row's terms until told the row's text: `delete` it, then `optimize` merges
        every segment into one without the deleted entries (FTS5 before SQLite 3.42 has no secure-delete), and the
        freed pages are zeroed by `secure_delete`."""
        # Told the words as they were indexed: the drawer's own (spaced, `respace`) and its neighbours'.
        CONTEXT_ROWS.unindex(tx, [int(r["seq"]) for r in tx.all("SELECT seq FROM forget_set")])
        # The merge is owed until it is made, in a transaction of its own: on a full disk the forget still commits.
        tx.run("INSERT INTO index_merge_owed(id, since) VALUES (1, ?) ON CONFLICT DO NOTHING", (self._now(),))

    def _after_erase(self, tx: Tx) -> None:
        renew_around(tx, [int(r["seq"]) for r in tx.all("SELECT seq FROM forget_set")], CONTEXT_ROWS)

    def _after_forget(self) -> None:
        self.merge_index()

    def merge_index(self) -> bool:
        """Merge the full-text index without the words of forgotten drawers, if a forget left that owed, and empty
        the write-ahead log; whether nothing is owed any more (False: no room yet, it is made later)."""
        try:
            with self._write() as tx:
                if tx.one("SELECT 1 AS owed FROM index_merge_owed") is None:
                    return True
                tx.run("INSERT INTO drawer_fts(drawer_fts) VALUES ('optimize')")
                tx.run("DELETE FROM index_merge_owed")
        except StorageFull as exc:
            log.warning("the full-text index keeps forgotten words until there is room to merge it: %s", exc.message)
            return False
        self.db._empty_log()
        return True


class SQLiteArchive(ArchiveTables):
    db: SQLiteStore

    def _snapshot(self) -> AbstractContextManager[Tx]:
        return self.db._snapshot()

    def _vector_of(self, stored: Any) -> np.ndarray:
        return np.frombuffer(stored, dtype="<f4")


class SQLiteJobs(JobTables):
    """One writer: the claim is a plain read and update inside its write transaction."""

    db: SQLiteStore

    def _lease_until(self, lease_seconds: float) -> tuple[str, list[Any]]:
        return "?", [format_instant(to_datetime(self._now()) + timedelta(seconds=lease_seconds))]

    def _claim(self, owner: str, lease_seconds: float, kinds: list[str]) -> Job | None:
        until, until_params = self._lease_until(lease_seconds)
        with self._write() as tx:
            # Jobs sharing a coalesce key run one at a time: a sweep queued behind a running one waits for it
            # instead of redoing the same drawers beside it.
            row = tx.one(
                f"SELECT id FROM job q WHERE status = 'queued' AND kind IN ({','.join('?' * len(kinds))}) AND "
                "(q.coalesce_key IS NULL OR NOT EXISTS (SELECT 1 FROM job r WHERE r.status = 'running' "
                "AND r.coalesce_key = q.coalesce_key)) ORDER BY priority DESC, created_at, id LIMIT 1",
                kinds,
            )
            if row is None:
                return None
            tx.run(
                f"UPDATE job SET status = 'running', lease_owner = ?, lease_expires_at = {until}, "
                "started_at = COALESCE(started_at, ?), attempt = attempt + 1, pause_requested = FALSE WHERE id = ?",
                (owner, *until_params, self._now(), row["id"]),
            )
            claimed = tx.one("SELECT * FROM job WHERE id = ?", (row["id"],))
            assert claimed is not None
            return job_from_row(claimed)


class SQLiteCopy(Role):
    """The whole-palace copy (`memcastle.store.copy`)."""

    db: SQLiteStore

    def export_rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of one palace table (`memcastle.store.PALACE_TABLES`), in primary-key order, as neutral rows."""
        copied_table(table)
        conn = self.db._reader()
        columns = conn.execute(f"PRAGMA table_info({table})").fetchall()
        keys = [c["name"] for c in sorted((c for c in columns if c["pk"]), key=lambda c: c["pk"])]
        order = f" ORDER BY {', '.join(keys)}" if keys else ""
        for row in conn.execute(f"SELECT * FROM {table}{order}"):
            item = dict(row)
            if table == "embedding":
                item["vector"] = np.frombuffer(item["vector"], dtype="<f4").astype(np.float32)
            yield item

    def import_rows(self, tables: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]) -> dict[str, int]:
        """Fill an empty palace with exported rows, table by table, in one transaction: all of it or nothing.

        Refused (Conflict) when this palace already holds anything, jobs included."""
        counts: dict[str, int] = {}
        with self.db._write() as tx:
            ensure_empty(tx, str(self.db.path), help="copy into an empty palace")
            conn = tx.conn
            for table, rows in tables:
                copied_table(table)
                names = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
                statement = f"INSERT INTO {table}({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
                count = 0
                batch: list[tuple[Any, ...]] = []
                for row in rows:
                    batch.append(_imported(table, names, row))
                    if len(batch) >= 500:
                        conn.executemany(statement, batch)
                        count += len(batch)
                        batch.clear()
                conn.executemany(statement, batch)
                counts[table] = count + len(batch)
            # Every imported text and its neighbours' words (`drawer_indexed`), whole, then spaced where needed.
            tx.run("INSERT INTO drawer_fts(drawer_fts) VALUES ('rebuild')")
            tx.run("INSERT INTO drawer_fts_rescan(after_seq) VALUES (0)")
            rescan(tx)
        return counts


def _imported(table: str, names: Sequence[str], row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A neutral row as this table's column values (the full-text index is filled by its trigger)."""
    check_columns(table, names, row)
    values = []
    for name in names:
        value = row.get(name)
        if table == "embedding" and name == "vector" and value is not None:
            value = np.asarray(value, dtype="<f4").tobytes()
        elif isinstance(value, bool):
            value = int(value)
        values.append(value)
    return tuple(values)
