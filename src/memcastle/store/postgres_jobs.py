"""PostgreSQL job queue (mixed into `PostgresStore`): claims with SKIP LOCKED, leases on the database clock, fencing.

Several daemons claim from the same table. A claim may also take over a `running` job whose lease has expired —
that is how a surviving daemon picks up the work of one that was killed — and counts that as crash recovery. Every
write a lease protects is fenced by `lease_owner`, so a worker that lost its job is refused at its next checkpoint.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from memcastle.clock import utc_now
from memcastle.errors import IllegalTransition, LeaseLost, NotFound
from memcastle.model import Job, JobStatus, NewJob, Progress, is_legal_transition

Row = dict[str, Any]

# Advisory lock namespace of coalesce keys (the store's own locks use 0x4D43, "MC").
_COALESCE_LOCK_NAMESPACE = 0x4D44

# Same as `memcastle.jobs.worker.RECOVERY_BUDGET` (the store may not import upwards).
RECOVERY_BUDGET = 3

# Leases are stamped on the database's clock: every daemon compares against the same one, whatever host it runs on.
_STAMP = """'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'"""
_DB_NOW = f"to_char(clock_timestamp() AT TIME ZONE 'UTC', {_STAMP})"
_DB_LATER = f"to_char((clock_timestamp() + make_interval(secs => %s)) AT TIME ZONE 'UTC', {_STAMP})"

_JOB_FIELDS = {
    "started_at", "finished_at", "result", "error", "checkpoint", "progress", "lease_owner", "lease_expires_at",
    "attempt", "recovery_attempts", "pause_requested", "cancel_requested",
}
_JSON_JOB_FIELDS = {"result", "checkpoint", "progress"}
_BOOL_JOB_FIELDS = {"pause_requested", "cancel_requested"}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class JobTables:
    """Durable jobs: create (coalescing), claim, checkpoint, transition, stop requests."""

    _recovery_budget: int

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:  # provided by PostgresStore
        raise NotImplementedError

    def _read(self) -> AbstractContextManager[psycopg.Connection[Row]]:  # provided by PostgresStore
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[psycopg.Connection[Row]]:  # provided by PostgresStore
        raise NotImplementedError

    def create_job(self, new: NewJob) -> tuple[Job, bool]:
        with self._write() as conn:
            if new.coalesce_key:
                # Two daemons asking for the same run at once: the second finds the first one's queued job.
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                             (_COALESCE_LOCK_NAMESPACE, new.coalesce_key))
                row = conn.execute(
                    "SELECT id FROM job WHERE coalesce_key = %s AND status = 'queued' ORDER BY created_at LIMIT 1",
                    (new.coalesce_key,),
                ).fetchone()
                if row is not None:
                    return self._job(conn, row["id"]), False
            job_id = str(uuid.uuid4())
            conn.execute(
                "INSERT INTO job(id, kind, status, priority, params, created_at, progress, max_attempts,"
                " requested_by, coalesce_key) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (job_id, new.kind, JobStatus.QUEUED.value, new.priority, _dumps(dict(new.params)), utc_now(),
                 _dumps(Progress().to_json()), new.max_attempts, new.requested_by, new.coalesce_key),
            )
            return self._job(conn, job_id), True

    def _job(self, conn: psycopg.Connection[Row], job_id: str, *, lock: bool = False) -> Job:
        row = conn.execute(f"SELECT * FROM job WHERE id = %s{' FOR UPDATE' if lock else ''}", (job_id,)).fetchone()
        if row is None:
            raise NotFound(f"no job {job_id}")
        return _job(row)

    def get_job(self, job_id: str) -> Job:
        with self._read() as conn:
            return self._job(conn, job_id)

    def list_jobs(self, status: str | None, kind: str | None, limit: int) -> list[Job]:
        clauses, params = [], []
        if status:
            clauses.append("status = %s")
            params.append(status)
        if kind:
            clauses.append("kind = %s")
            params.append(kind)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._rows(f"SELECT * FROM job{where} ORDER BY created_at DESC LIMIT %s", (*params, limit))
        return [_job(r) for r in rows]

    def count_jobs(self) -> dict[str, int]:
        rows = self._rows("SELECT status, COUNT(*) AS n FROM job GROUP BY status")
        counts = {status.value: 0 for status in JobStatus}
        counts.update({r["status"]: int(r["n"]) for r in rows})
        return counts

    def transition_job(self, job_id: str, target: JobStatus, *, owner: str | None = None, **fields: Any) -> Job:
        unknown = set(fields) - _JOB_FIELDS
        if unknown:
            raise ValueError(f"not job fields: {sorted(unknown)}")
        with self._write() as conn:
            job = self._job(conn, job_id, lock=True)
            if not is_legal_transition(job.status, target):
                raise IllegalTransition(job_id, job.status.value, target.value)
            if owner is not None and job.lease_owner != owner:
                raise LeaseLost(job_id)
            sets = ["status = %s"]
            params: list[Any] = [target.value]
            for key, value in fields.items():
                sets.append(f"{key} = %s")
                params.append(_job_value(key, value))
            conn.execute(f"UPDATE job SET {', '.join(sets)} WHERE id = %s", (*params, job_id))
            return self._job(conn, job_id)

    def claim_next_job(self, owner: str, lease_seconds: float, kinds: Iterable[str]) -> Job | None:
        """The best queued job — or a running one whose lease has expired (its daemon died) — leased to `owner`."""
        kinds = list(kinds)
        if not kinds:
            return None
        now = utc_now()
        passed: list[str] = []
        with self._write() as conn:
            while True:
                # SKIP LOCKED: workers of every daemon claim side by side, each row goes to exactly one of them.
                # Jobs sharing a coalesce key run one at a time: a sweep queued behind a running one waits for it.
                row = conn.execute(
                    "SELECT id, status, recovery_attempts, coalesce_key FROM job q WHERE kind = ANY(%s) "
                    "AND NOT (id = ANY(%s)) AND ((status = 'queued' AND (coalesce_key IS NULL OR NOT EXISTS "
                    "(SELECT 1 FROM job r WHERE r.status = 'running' AND r.coalesce_key = q.coalesce_key))) "
                    f"OR (status = 'running' AND lease_expires_at < {_DB_NOW})) "
                    "ORDER BY priority DESC, created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
                    (kinds, passed),
                ).fetchone()
                if row is None:
                    return None
                recovered = 0
                if row["status"] == JobStatus.RUNNING.value:
                    # Taking over counts as crash recovery (running → queued → running), within the same budget.
                    if row["recovery_attempts"] >= self._recovery_budget:
                        conn.execute(
                            "UPDATE job SET status = 'failed', finished_at = %s, lease_owner = NULL, "
                            "lease_expires_at = NULL, error = %s WHERE id = %s",
                            (now, f"interrupted by a daemon crash {row['recovery_attempts'] + 1} times; recovery "
                                  f"budget ({self._recovery_budget}) spent — retry it once the cause is fixed",
                             row["id"]),
                        )
                        continue
                    recovered = 1
                elif row["coalesce_key"] is not None and not self._may_start(conn, row["id"], row["coalesce_key"]):
                    passed.append(row["id"])
                    continue
                conn.execute(
                    f"UPDATE job SET status = 'running', lease_owner = %s, lease_expires_at = {_DB_LATER}, "
                    "started_at = COALESCE(started_at, %s), attempt = attempt + 1, "
                    "recovery_attempts = recovery_attempts + %s, pause_requested = FALSE WHERE id = %s",
                    (owner, float(lease_seconds), now, recovered, row["id"]),
                )
                return self._job(conn, row["id"])

    def _may_start(self, conn: psycopg.Connection[Row], job_id: str, coalesce_key: str) -> bool:
        """No other job of this coalesce key runs, checked under the key's lock (two claims must not both pass).

        A try-lock: when another transaction holds the key (claiming or coalescing), this claim passes the job by
        for now rather than waiting, so claims that pass several keys can never deadlock each other."""
        locked = conn.execute("SELECT pg_try_advisory_xact_lock(%s, hashtext(%s)) AS ok",
                              (_COALESCE_LOCK_NAMESPACE, coalesce_key)).fetchone()
        if locked is None or not locked["ok"]:
            return False
        running = conn.execute("SELECT 1 FROM job WHERE status = 'running' AND coalesce_key = %s AND id <> %s",
                               (coalesce_key, job_id)).fetchone()
        return running is None

    def save_job_checkpoint(self, job_id: str, owner: str, checkpoint: Mapping[str, Any], progress: Progress,
                            lease_seconds: float) -> Job:
        with self._write() as conn:
            # Fenced by the lease: a worker whose job was taken over is refused here, at its next unit boundary.
            cursor = conn.execute(
                f"UPDATE job SET checkpoint = %s, progress = %s, lease_expires_at = {_DB_LATER} "
                "WHERE id = %s AND status = 'running' AND lease_owner = %s",
                (_dumps(dict(checkpoint)), _dumps(progress.to_json()), float(lease_seconds), job_id, owner),
            )
            if cursor.rowcount == 0:
                raise LeaseLost(job_id)
            return self._job(conn, job_id)

    def request_job_stop(self, job_id: str, *, pause: bool = False, cancel: bool = False) -> Job:
        with self._write() as conn:
            self._job(conn, job_id, lock=True)
            if pause:
                conn.execute("UPDATE job SET pause_requested = TRUE WHERE id = %s", (job_id,))
            if cancel:
                conn.execute("UPDATE job SET cancel_requested = TRUE WHERE id = %s", (job_id,))
            return self._job(conn, job_id)

    def running_jobs(self) -> list[Job]:
        return [_job(r) for r in self._rows("SELECT * FROM job WHERE status = 'running'")]

    def renew_job_lease(self, job_id: str, owner: str, lease_seconds: float) -> bool:
        """Extend a running job's lease from now (database clock) while `owner` still holds it; False otherwise."""
        with self._write() as conn:
            cursor = conn.execute(
                f"UPDATE job SET lease_expires_at = {_DB_LATER} WHERE id = %s AND status = 'running' "
                "AND lease_owner = %s",
                (float(lease_seconds), job_id, owner),
            )
            return cursor.rowcount == 1


def _job_value(key: str, value: Any) -> Any:
    if key in _BOOL_JOB_FIELDS:
        return bool(value)
    if key in _JSON_JOB_FIELDS and value is not None and not isinstance(value, str):
        return _dumps(value)
    if isinstance(value, (dict, list)):
        return _dumps(value)
    return value


def _job(row: Row) -> Job:
    progress = row["progress"]
    return Job(
        id=row["id"], kind=row["kind"], status=JobStatus(row["status"]), priority=row["priority"],
        params=row["params"], created_at=row["created_at"], started_at=row["started_at"],
        finished_at=row["finished_at"],
        progress=Progress(current=progress.get("current", 0), total=progress.get("total"),
                          message=progress.get("message")),
        attempt=row["attempt"], recovery_attempts=row["recovery_attempts"], max_attempts=row["max_attempts"],
        checkpoint=row["checkpoint"], result=row["result"] if row["result"] else None,
        error=row["error"], lease_owner=row["lease_owner"], lease_expires_at=row["lease_expires_at"],
        pause_requested=bool(row["pause_requested"]), cancel_requested=bool(row["cancel_requested"]),
        requested_by=row["requested_by"], coalesce_key=row["coalesce_key"],
    )
