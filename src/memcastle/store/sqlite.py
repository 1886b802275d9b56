"""The embedded SQLite palace: one file, WAL, one writer connection behind a lock, readers beside it."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memcastle.clock import format_instant, parse_instant, to_datetime, utc_now
from memcastle.errors import (
    Conflict,
    IllegalTransition,
    LeaseLost,
    MigrationError,
    NotFound,
)
from memcastle.model import (
    DocumentChanges,
    DocumentRecord,
    Drawer,
    Job,
    JobStatus,
    NewDrawer,
    NewJob,
    Origin,
    Page,
    Progress,
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
    is_legal_transition,
)
from memcastle.store import PALACE_TABLES
from memcastle.store.history import SupersessionHistory
from memcastle.store.migrate import load_migrations
from memcastle.store.sqlite_graph import GraphTables

DB_FILE = "palace.sqlite3"

_DRAWER_SELECT = (
    "SELECT d.*, w.name AS wing_name, r.name AS room_name FROM drawer d "
    "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id"
)
_JOB_FIELDS = {
    "started_at", "finished_at", "result", "error", "checkpoint", "progress", "lease_owner", "lease_expires_at",
    "attempt", "recovery_attempts", "pause_requested", "cancel_requested",
}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class SQLiteStore(GraphTables, SupersessionHistory):
    """A palace in `<palace>/palace.sqlite3`."""

    backend = "sqlite"

    def __init__(self, palace: Path) -> None:
        palace.mkdir(parents=True, exist_ok=True)
        self.path = palace / DB_FILE
        self.location = str(self.path)
        self._lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        try:
            self._writer = self._connect()
            self._writer.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:
            raise MigrationError(f"{self.path} is not a MemCastle palace database: {exc}",
                                 help="point --palace at a palace directory, or move the file away") from None
        self._migrate()

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
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
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
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migration "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                applied = {row[0] for row in conn.execute("SELECT version FROM schema_migration")}
            except sqlite3.DatabaseError as exc:
                raise MigrationError(f"{self.path} is not a MemCastle palace database: {exc}") from None
            migrations = load_migrations("sqlite")
            newest = max((m.version for m in migrations), default=0)
            if applied and max(applied) > newest:
                raise MigrationError(
                    f"{self.path} has schema version {max(applied)}, newer than this MemCastle knows ({newest})",
                    help="upgrade MemCastle to serve this palace",
                )
            for migration in migrations:
                if migration.version in applied:
                    continue
                record = (
                    "INSERT INTO schema_migration(version, name, applied_at) VALUES "
                    f"({migration.version}, '{migration.name}', '{utc_now()}');"
                )
                try:
                    conn.executescript(f"BEGIN IMMEDIATE;\n{migration.sql}\n;{record}\nCOMMIT;")
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise MigrationError(
                        f"migration {migration.version:04d}_{migration.name} failed on {self.path}: {exc}",
                        help="the palace was left at its previous version; nothing was served",
                    ) from exc

    def schema_version(self) -> int:
        row = self._reader().execute("SELECT MAX(version) FROM schema_migration").fetchone()
        return int(row[0] or 0)

    # --- drawers --------------------------------------------------------------------------------

    def _room_id(self, conn: sqlite3.Connection, wing: str, room: str, at: str) -> int:
        conn.execute("INSERT OR IGNORE INTO wing(name, created_at) VALUES (?, ?)", (wing, at))
        wing_id = conn.execute("SELECT id FROM wing WHERE name = ?", (wing,)).fetchone()[0]
        conn.execute("INSERT OR IGNORE INTO room(wing_id, name, created_at) VALUES (?, ?, ?)", (wing_id, room, at))
        return int(conn.execute("SELECT id FROM room WHERE wing_id = ? AND name = ?", (wing_id, room)).fetchone()[0])

    def _insert_drawer(
        self, conn: sqlite3.Connection, new: NewDrawer, at: str, *, supersedes: str | None = None
    ) -> str:
        drawer_id = new.id or str(uuid.uuid4())
        existing = conn.execute("SELECT content_hash FROM drawer WHERE id = ?", (drawer_id,)).fetchone()
        if existing is not None:
            if existing[0] == content_hash(new.content):
                return drawer_id  # a replayed write lands on the record it made before
            raise Conflict(f"drawer {drawer_id} already exists with other content", existing_id=drawer_id)
        room_id = self._room_id(conn, new.wing, new.room, at)
        origin = new.source.origin
        try:
            cursor = conn.execute(
                "INSERT INTO drawer(id, room_id, name, content, content_hash, fingerprint, source_kind, source_uri,"
                " source_agent, connector, origin, tags, provenance, valid_from, valid_to, supersedes,"
                " superseded_by, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL,?,NULL,?)",
                (
                    drawer_id, room_id, new.name, new.content, content_hash(new.content), fingerprint(new.content),
                    new.source.kind, new.source.uri, new.source.agent, origin.connector if origin else None,
                    _dumps(origin.to_json()) if origin else None, _dumps(list(new.tags)),
                    _dumps(new.provenance.to_json()),
                    parse_instant(new.valid_from, field="valid_from") if new.valid_from else at, supersedes, at,
                ),
            )
        except sqlite3.IntegrityError:
            other = conn.execute(
                "SELECT id FROM drawer WHERE room_id = ? AND name = ? AND valid_to IS NULL", (room_id, new.name)
            ).fetchone()
            raise Conflict(
                f"room {new.wing}/{new.room} already has a current drawer named {new.name!r}",
                existing_id=other[0] if other else None,
                help="supersede the existing drawer to replace it",
            ) from None
        seq = cursor.lastrowid
        conn.executemany(
            "INSERT OR IGNORE INTO drawer_tag(drawer_seq, tag) VALUES (?, ?)", [(seq, tag) for tag in set(new.tags)]
        )
        return drawer_id

    def add_drawer(self, new: NewDrawer) -> Drawer:
        with self._write() as conn:
            drawer_id = self._insert_drawer(conn, new, utc_now())
        return self.get_drawer(drawer_id)

    def get_drawer(self, drawer_id: str) -> Drawer:
        row = self._reader().execute(f"{_DRAWER_SELECT} WHERE d.id = ?", (drawer_id,)).fetchone()
        if row is None:
            raise NotFound(f"no drawer {drawer_id}")
        return _drawer(row)

    def get_drawers(self, drawer_ids: Sequence[str]) -> dict[str, Drawer]:
        found: dict[str, Drawer] = {}
        ids = list(dict.fromkeys(drawer_ids))
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in self._reader().execute(f"{_DRAWER_SELECT} WHERE d.id IN ({marks})", batch):
                found[row["id"]] = _drawer(row)
        return found

    def find_current_copy(self, wing: str, room: str, content_hash: str, agent: str | None = None) -> Drawer | None:
        """An unnamed current drawer with this content in the room (written by `agent`, when one is given)."""
        agent_sql = " AND d.source_agent = ?" if agent is not None else ""
        row = self._reader().execute(
            f"{_DRAWER_SELECT} WHERE w.name = ? AND r.name = ? AND d.content_hash = ? AND d.valid_to IS NULL "
            f"AND d.name IS NULL{agent_sql} ORDER BY d.seq LIMIT 1",
            (wing, room, content_hash, *([agent] if agent is not None else [])),
        ).fetchone()
        return _drawer(row) if row else None

    def _close_current(self, conn: sqlite3.Connection, drawer_id: str, at: str, successor: str | None) -> None:
        row = conn.execute("SELECT valid_to, superseded_by FROM drawer WHERE id = ?", (drawer_id,)).fetchone()
        if row is None:
            raise NotFound(f"no drawer {drawer_id}")
        if row["valid_to"] is not None:
            raise Conflict(
                f"drawer {drawer_id} was already closed at {row['valid_to']}",
                existing_id=row["superseded_by"],
                help="supersede the current version instead (see its history)",
            )
        conn.execute("UPDATE drawer SET valid_to = ?, superseded_by = ? WHERE id = ?", (at, successor, drawer_id))

    def supersede_drawer(self, old_id: str, replacement: NewDrawer) -> Drawer:
        with self._write() as conn:
            new_id = self._supersede(conn, old_id, replacement, utc_now())
        return self.get_drawer(new_id)

    def _supersede(self, conn: sqlite3.Connection, old_id: str, replacement: NewDrawer, at: str) -> str:
        new_id = replacement.id or str(uuid.uuid4())
        self._close_current(conn, old_id, at, new_id)
        return self._insert_drawer(conn, _with_id(replacement, new_id, at), at, supersedes=old_id)

    def invalidate_drawer(self, drawer_id: str) -> Drawer:
        with self._write() as conn:
            self._close_current(conn, drawer_id, utc_now(), None)
        return self.get_drawer(drawer_id)

    def count_drawers(self, *, current_only: bool = False) -> int:
        where = " WHERE valid_to IS NULL" if current_only else ""
        return int(self._reader().execute(f"SELECT COUNT(*) FROM drawer{where}").fetchone()[0])

    def list_wings(self) -> list[Wing]:
        rows = self._reader().execute(
            "SELECT w.name, w.created_at, (SELECT COUNT(*) FROM drawer d JOIN room r ON r.id = d.room_id "
            "WHERE r.wing_id = w.id AND d.valid_to IS NULL) AS n FROM wing w ORDER BY w.name"
        )
        return [Wing(name=r["name"], drawers=r["n"], created_at=r["created_at"]) for r in rows]

    def list_rooms(self, wing: str) -> list[Room]:
        conn = self._reader()
        if conn.execute("SELECT 1 FROM wing WHERE name = ?", (wing,)).fetchone() is None:
            raise NotFound(f"no wing {wing!r}")
        rows = conn.execute(
            "SELECT r.name, r.created_at, (SELECT COUNT(*) FROM drawer d WHERE d.room_id = r.id "
            "AND d.valid_to IS NULL) AS n FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = ? "
            "ORDER BY r.name",
            (wing,),
        )
        return [Room(wing=wing, name=r["name"], drawers=r["n"], created_at=r["created_at"]) for r in rows]

    def list_drawers(self, wing: str | None, room: str | None, limit: int, after: str | None) -> Page[Drawer]:
        conn = self._reader()
        clauses, params = ["d.valid_to IS NULL"], []
        if wing:
            clauses.append("w.name = ?")
            params.append(wing)
        if room:
            clauses.append("r.name = ?")
            params.append(room)
        if after:
            seq = conn.execute("SELECT seq FROM drawer WHERE id = ?", (after,)).fetchone()
            if seq is None:
                raise NotFound(f"no drawer {after} to page after")
            clauses.append("d.seq > ?")
            params.append(seq[0])
        rows = conn.execute(
            f"{_DRAWER_SELECT} WHERE {' AND '.join(clauses)} ORDER BY d.seq LIMIT ?", (*params, limit + 1)
        ).fetchall()
        items = tuple(_drawer(r) for r in rows[:limit])
        return Page(items=items, next_after=items[-1].id if len(rows) > limit and items else None)

    def _drawers_where(self, where: str, params: Sequence[Any], limit: int) -> list[Drawer]:
        rows = self._reader().execute(f"{_DRAWER_SELECT} WHERE {where} ORDER BY d.seq LIMIT ?", (*params, limit))
        return [_drawer(r) for r in rows]

    def latest_drawers(self, scope: Scope, limit: int) -> list[Drawer]:
        where, params = _scope_sql(scope)
        rows = self._reader().execute(
            f"{_DRAWER_SELECT} WHERE d.valid_to IS NULL{where} ORDER BY d.created_at DESC, d.seq DESC LIMIT ?",
            (*params, limit),
        )
        return [_drawer(r) for r in rows]

    # --- retrieval ------------------------------------------------------------------------------

    def lexical_candidates(
        self, match: str, scope: Scope, window: TimeWindow | None, include_historical: bool, limit: int
    ) -> list[ScoredDrawer]:
        where, params = _scope_sql(scope)
        time_sql, time_params = _time_sql(window, include_historical)
        rows = self._reader().execute(
            "SELECT d.id, bm25(drawer_fts) AS rank FROM drawer_fts JOIN drawer d ON d.seq = drawer_fts.rowid "
            "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            f"WHERE drawer_fts MATCH ?{where}{time_sql} ORDER BY rank, d.id LIMIT ?",
            (match, *params, *time_params, limit),
        )
        # bm25() is lower-is-better; the signal is flipped so that higher is better everywhere.
        return [ScoredDrawer(drawer_id=r["id"], signal=-float(r["rank"])) for r in rows]

    def eligible_ids(self, drawer_ids: Sequence[str], scope: Scope, window: TimeWindow | None,
                     include_historical: bool) -> set[str]:
        """The subset of `drawer_ids` inside the scope and the temporal window."""
        where, params = _scope_sql(scope)
        time_sql, time_params = _time_sql(window, include_historical)
        found: set[str] = set()
        ids = list(dict.fromkeys(drawer_ids))
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self._reader().execute(
                "SELECT d.id FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
                f"WHERE d.id IN ({marks}){where}{time_sql}",
                (*batch, *params, *time_params),
            )
            found.update(r[0] for r in rows)
        return found

    def drawer_places(self, drawer_ids: Sequence[str]) -> dict[str, tuple[str, str, str, str | None]]:
        """(wing, room, source kind, connector) of each drawer: fixed for a drawer's whole life."""
        found: dict[str, tuple[str, str, str, str | None]] = {}
        ids = list(dict.fromkeys(drawer_ids))
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self._reader().execute(
                "SELECT d.id, w.name, r.name, d.source_kind, d.connector FROM drawer d JOIN room r ON r.id = d.room_id "
                f"JOIN wing w ON w.id = r.wing_id WHERE d.id IN ({marks})", batch)
            found.update({row[0]: (row[1], row[2], row[3], row[4]) for row in rows})
        return found

    def all_eligible_ids(self, scope: Scope, window: TimeWindow | None, include_historical: bool) -> set[str]:
        where, params = _scope_sql(scope)
        time_sql, time_params = _time_sql(window, include_historical)
        rows = self._reader().execute(
            "SELECT d.id FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            f"WHERE 1 = 1{where}{time_sql}",
            (*params, *time_params),
        )
        return {r[0] for r in rows}

    # --- embeddings -----------------------------------------------------------------------------

    def drawers_missing_embeddings(self, model: str, limit: int) -> list[Drawer]:
        rows = self._reader().execute(
            f"{_DRAWER_SELECT} WHERE NOT EXISTS (SELECT 1 FROM embedded e WHERE e.model = ? AND e.drawer_seq = d.seq)"
            " ORDER BY d.valid_to IS NOT NULL, d.seq LIMIT ?",
            (model, limit),
        )
        return [_drawer(r) for r in rows]

    def count_missing_embeddings(self, model: str) -> int:
        row = self._reader().execute(
            "SELECT (SELECT COUNT(*) FROM drawer) - (SELECT COUNT(*) FROM embedded WHERE model = ?)", (model,)
        ).fetchone()
        return max(0, int(row[0]))

    def put_embeddings(self, model: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store each drawer's passage vectors (float32, shape (passages, dimension)) and mark it embedded."""
        with self._write() as conn:
            for drawer_id, vectors in rows:
                found = conn.execute("SELECT seq FROM drawer WHERE id = ?", (drawer_id,)).fetchone()
                if found is None:
                    continue
                seq = found[0]
                matrix = np.asarray(vectors, dtype="<f4")
                dimension = int(matrix.shape[1]) if matrix.ndim == 2 and matrix.shape[0] else 0
                conn.execute("DELETE FROM embedding WHERE model = ? AND drawer_seq = ?", (model, seq))
                conn.executemany(
                    "INSERT INTO embedding(model, drawer_seq, passage, vector) VALUES (?,?,?,?)",
                    [(model, seq, index, matrix[index].tobytes()) for index in range(matrix.shape[0])],
                )
                conn.execute("INSERT OR REPLACE INTO embedded(model, drawer_seq, dimension) VALUES (?,?,?)",
                             (model, seq, dimension))

    def load_embeddings(self, model: str, after_id: int, dimension: int) -> tuple[list[str], np.ndarray, int]:
        """Passage vectors stored after `after_id`: (drawer id per row, matrix, last id)."""
        rows = self._reader().execute(
            "SELECT e.id, d.id AS drawer_id, e.vector FROM embedding e JOIN drawer d ON d.seq = e.drawer_seq "
            "WHERE e.model = ? AND e.id > ? ORDER BY e.id",
            (model, after_id),
        ).fetchall()
        if not rows:
            return [], np.zeros((0, dimension), dtype=np.float32), after_id
        matrix = np.frombuffer(b"".join(r["vector"] for r in rows), dtype="<f4").reshape(len(rows), -1)
        return [r["drawer_id"] for r in rows], matrix.astype(np.float32, copy=False), int(rows[-1]["id"])

    def drop_other_embeddings(self, model: str) -> int:
        """Remove vectors of models other than `model` (after a model change has been filled in)."""
        with self._write() as conn:
            removed = conn.execute("DELETE FROM embedding WHERE model != ?", (model,)).rowcount
            conn.execute("DELETE FROM embedded WHERE model != ?", (model,))
        return int(removed)

    # --- mining ---------------------------------------------------------------------------------

    def upsert_source(self, source: SourceRecord) -> SourceRecord:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO source(id, connector, locator, options, cursor, updated_at) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET locator = excluded.locator, options = excluded.options",
                (source.id, source.connector, source.locator, _dumps(dict(source.options)), source.cursor,
                 source.updated_at),
            )
        found = self.get_source(source.id)
        assert found is not None
        return found

    def get_source(self, source_id: str) -> SourceRecord | None:
        row = self._reader().execute("SELECT * FROM source WHERE id = ?", (source_id,)).fetchone()
        if row is None:
            return None
        return SourceRecord(id=row["id"], connector=row["connector"], locator=row["locator"],
                            options=json.loads(row["options"]), cursor=row["cursor"], updated_at=row["updated_at"])

    def get_document(self, source_id: str, external_id: str) -> DocumentRecord | None:
        row = self._reader().execute(
            "SELECT * FROM document WHERE source_id = ? AND external_id = ?", (source_id, external_id)
        ).fetchone()
        if row is None:
            return None
        return DocumentRecord(
            source_id=row["source_id"], external_id=row["external_id"], revision=row["revision"],
            chunk_hashes=tuple(json.loads(row["chunk_hashes"])), drawer_ids=tuple(json.loads(row["drawer_ids"])),
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
                "VALUES (?,?,?,?,?,?) ON CONFLICT(source_id, external_id) DO UPDATE SET revision = excluded.revision,"
                " chunk_hashes = excluded.chunk_hashes, drawer_ids = excluded.drawer_ids,"
                " updated_at = excluded.updated_at",
                (record.source_id, record.external_id, record.revision, _dumps(list(record.chunk_hashes)),
                 _dumps(list(record.drawer_ids)), at),
            )
            # The cursor advances only with the document that earned it, in the same transaction.
            conn.execute("UPDATE source SET cursor = ?, updated_at = ? WHERE id = ?",
                         (changes.source.cursor, at, changes.source.id))

    # --- jobs -----------------------------------------------------------------------------------

    def create_job(self, new: NewJob) -> tuple[Job, bool]:
        with self._write() as conn:
            if new.coalesce_key:
                row = conn.execute(
                    "SELECT id FROM job WHERE coalesce_key = ? AND status = 'queued' ORDER BY created_at LIMIT 1",
                    (new.coalesce_key,),
                ).fetchone()
                if row is not None:
                    return self._job(conn, row[0]), False
            job_id = str(uuid.uuid4())
            conn.execute(
                "INSERT INTO job(id, kind, status, priority, params, created_at, progress, max_attempts,"
                " requested_by, coalesce_key) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (job_id, new.kind, JobStatus.QUEUED.value, new.priority, _dumps(dict(new.params)), utc_now(),
                 _dumps(Progress().to_json()), new.max_attempts, new.requested_by, new.coalesce_key),
            )
            return self._job(conn, job_id), True

    def _job(self, conn: sqlite3.Connection, job_id: str) -> Job:
        row = conn.execute("SELECT * FROM job WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise NotFound(f"no job {job_id}")
        return _job(row)

    def get_job(self, job_id: str) -> Job:
        return self._job(self._reader(), job_id)

    def list_jobs(self, status: str | None, kind: str | None, limit: int) -> list[Job]:
        clauses, params = [], []
        if status:
            clauses.append("status = ?")
            params.append(status)
        if kind:
            clauses.append("kind = ?")
            params.append(kind)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._reader().execute(
            f"SELECT * FROM job{where} ORDER BY created_at DESC LIMIT ?", (*params, limit)
        )
        return [_job(r) for r in rows]

    def count_jobs(self) -> dict[str, int]:
        rows = self._reader().execute("SELECT status, COUNT(*) FROM job GROUP BY status")
        counts = {status.value: 0 for status in JobStatus}
        counts.update({r[0]: r[1] for r in rows})
        return counts

    def transition_job(self, job_id: str, target: JobStatus, *, owner: str | None = None, **fields: Any) -> Job:
        unknown = set(fields) - _JOB_FIELDS
        if unknown:
            raise ValueError(f"not job fields: {sorted(unknown)}")
        with self._write() as conn:
            job = self._job(conn, job_id)
            if not is_legal_transition(job.status, target):
                raise IllegalTransition(job_id, job.status.value, target.value)
            if owner is not None and job.lease_owner != owner:
                raise LeaseLost(job_id)
            sets = ["status = ?"]
            params: list[Any] = [target.value]
            for key, value in fields.items():
                sets.append(f"{key} = ?")
                params.append(_dumps(value) if isinstance(value, (dict, list)) else value)
            conn.execute(f"UPDATE job SET {', '.join(sets)} WHERE id = ?", (*params, job_id))
            return self._job(conn, job_id)

    def claim_next_job(self, owner: str, lease_seconds: float, kinds: Iterable[str]) -> Job | None:
        kinds = list(kinds)
        if not kinds:
            return None
        marks = ",".join("?" * len(kinds))
        now = utc_now()
        with self._write() as conn:
            # Jobs sharing a coalesce key run one at a time: a sweep queued behind a running one waits for it
            # instead of redoing the same drawers beside it.
            row = conn.execute(
                f"SELECT id FROM job q WHERE status = 'queued' AND kind IN ({marks}) AND (q.coalesce_key IS NULL "
                "OR NOT EXISTS (SELECT 1 FROM job r WHERE r.status = 'running' AND r.coalesce_key = q.coalesce_key)) "
                "ORDER BY priority DESC, created_at, id LIMIT 1",
                kinds,
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "UPDATE job SET status = 'running', lease_owner = ?, lease_expires_at = ?, "
                "started_at = COALESCE(started_at, ?), attempt = attempt + 1, pause_requested = 0 WHERE id = ?",
                (owner, _later(now, lease_seconds), now, row[0]),
            )
            return self._job(conn, row[0])

    def save_job_checkpoint(self, job_id: str, owner: str, checkpoint: Mapping[str, Any], progress: Progress,
                            lease_seconds: float) -> Job:
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE job SET checkpoint = ?, progress = ?, lease_expires_at = ? "
                "WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (_dumps(dict(checkpoint)), _dumps(progress.to_json()), _later(utc_now(), lease_seconds), job_id,
                 owner),
            )
            if cursor.rowcount == 0:
                raise LeaseLost(job_id)
            return self._job(conn, job_id)

    def request_job_stop(self, job_id: str, *, pause: bool = False, cancel: bool = False) -> Job:
        with self._write() as conn:
            self._job(conn, job_id)
            if pause:
                conn.execute("UPDATE job SET pause_requested = 1 WHERE id = ?", (job_id,))
            if cancel:
                conn.execute("UPDATE job SET cancel_requested = 1 WHERE id = ?", (job_id,))
            return self._job(conn, job_id)

    def running_jobs(self) -> list[Job]:
        return [_job(r) for r in self._reader().execute("SELECT * FROM job WHERE status = 'running'")]

    def renew_job_lease(self, job_id: str, owner: str, lease_seconds: float) -> bool:
        """Extend a running job's lease from now while `owner` still holds it; False otherwise."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE job SET lease_expires_at = ? WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (_later(utc_now(), lease_seconds), job_id, owner),
            )
            return cursor.rowcount == 1

    # --- whole-palace copy ----------------------------------------------------------------------

    def export_rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of one palace table (`memcastle.store.PALACE_TABLES`), in primary-key order, as neutral rows."""
        _copied_table(table)
        conn = self._reader()
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
        with self._write() as conn:
            for table in (*PALACE_TABLES, "job"):
                if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
                    raise Conflict(f"{self.path} already holds a palace ({table} is not empty)",
                                   help="copy into an empty palace")
            for table, rows in tables:
                _copied_table(table)
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
        return counts


# --- row mapping ----------------------------------------------------------------------------------


def _copied_table(table: str) -> None:
    if table not in PALACE_TABLES:
        raise ValueError(f"{table!r} is not a table a palace copy moves; known: {', '.join(PALACE_TABLES)}")


def _imported(table: str, names: Sequence[str], row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A neutral row as this table's column values (the full-text index is filled by its trigger)."""
    unknown = set(row) - set(names)
    if unknown:
        raise MigrationError(f"rows of {table} carry columns this palace has no place for: {sorted(unknown)}",
                             help="copy between palaces of the same MemCastle version")
    values = []
    for name in names:
        value = row.get(name)
        if table == "embedding" and name == "vector" and value is not None:
            value = np.asarray(value, dtype="<f4").tobytes()
        elif isinstance(value, bool):
            value = int(value)
        values.append(value)
    return tuple(values)



def _with_id(new: NewDrawer, drawer_id: str, at: str) -> NewDrawer:
    return NewDrawer(wing=new.wing, room=new.room, content=new.content, name=new.name, source=new.source,
                     tags=new.tags, provenance=new.provenance, id=drawer_id, valid_from=at)


def _later(stamp: str, seconds: float) -> str:
    return format_instant(to_datetime(stamp) + timedelta(seconds=seconds))


def _drawer(row: sqlite3.Row) -> Drawer:
    origin = Origin.from_json(json.loads(row["origin"])) if row["origin"] else None
    provenance = json.loads(row["provenance"])
    return Drawer(
        id=row["id"], wing=row["wing_name"], room=row["room_name"], name=row["name"], content=row["content"],
        content_hash=row["content_hash"], fingerprint=row["fingerprint"],
        source=Source(kind=row["source_kind"], uri=row["source_uri"], agent=row["source_agent"], origin=origin),
        tags=tuple(json.loads(row["tags"])),
        provenance=Provenance.from_json(provenance),
        valid_from=row["valid_from"], valid_to=row["valid_to"], supersedes=row["supersedes"],
        superseded_by=row["superseded_by"], created_at=row["created_at"],
    )


def _job(row: sqlite3.Row) -> Job:
    progress = json.loads(row["progress"])
    return Job(
        id=row["id"], kind=row["kind"], status=JobStatus(row["status"]), priority=row["priority"],
        params=json.loads(row["params"]), created_at=row["created_at"], started_at=row["started_at"],
        finished_at=row["finished_at"],
        progress=Progress(current=progress.get("current", 0), total=progress.get("total"),
                          message=progress.get("message")),
        attempt=row["attempt"], recovery_attempts=row["recovery_attempts"], max_attempts=row["max_attempts"],
        checkpoint=json.loads(row["checkpoint"]), result=json.loads(row["result"]) if row["result"] else None,
        error=row["error"], lease_owner=row["lease_owner"], lease_expires_at=row["lease_expires_at"],
        pause_requested=bool(row["pause_requested"]), cancel_requested=bool(row["cancel_requested"]),
        requested_by=row["requested_by"], coalesce_key=row["coalesce_key"],
    )


def _scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    sql, params = "", []
    if scope.wing:
        sql += " AND w.name = ?"
        params.append(scope.wing)
    if scope.room:
        sql += " AND r.name = ?"
        params.append(scope.room)
    if scope.source_kind:
        sql += " AND d.source_kind = ?"
        params.append(scope.source_kind)
    if scope.connector:
        sql += " AND d.connector = ?"
        params.append(scope.connector)
    if scope.agent:
        sql += " AND d.source_agent = ?"
        params.append(scope.agent)
    tags = sorted(set(scope.tags))
    if tags:
        marks = ",".join("?" * len(tags))
        sql += f" AND (SELECT COUNT(*) FROM drawer_tag t WHERE t.drawer_seq = d.seq AND t.tag IN ({marks})) = ?"
        params.extend([*tags, len(tags)])
    return sql, params


def _time_sql(window: TimeWindow | None, include_historical: bool) -> tuple[str, list[Any]]:
    """The SPEC §3 temporal rule, applied inside the query before ranking and limit."""
    if include_historical:
        return "", []
    if window is None:
        now = utc_now()
        return " AND d.valid_from <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [now, now]
    if window.is_instant:
        return " AND d.valid_from <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [window.start, window.start]
    return " AND d.valid_from < ? AND (d.valid_to IS NULL OR d.valid_to > ?)", [window.end, window.start]
