"""Job records on either SQL backend: coalescing, the one transition table with lease fencing, checkpoints.

Claims differ (one SQLite writer; SKIP LOCKED and lease takeover on PostgreSQL) and stay in each backend; everything
else a job's life needs is here, once.
"""

from __future__ import annotations

import uuid
from abc import abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any

from memcastle.errors import IllegalTransition, LeaseLost, NotFound
from memcastle.model import Job, JobStatus, NewJob, Progress, is_legal_transition
from memcastle.store.sql.base import Role, Tx, dumps
from memcastle.store.sql.rows import job_from_row

JOB_FIELDS = frozenset(
    {
        "started_at",
        "finished_at",
        "result",
        "error",
        "checkpoint",
        "progress",
        "lease_owner",
        "lease_expires_at",
        "attempt",
        "recovery_attempts",
        "pause_requested",
        "cancel_requested",
    }
)
_JSON_FIELDS = frozenset({"result", "checkpoint", "progress"})
_FLAG_FIELDS = frozenset({"pause_requested", "cancel_requested"})


def check_transition(job: Job, target: JobStatus, owner: str | None) -> None:
    """The transition table, then the fence: a worker may change only a job it still holds the lease of."""
    if not is_legal_transition(job.status, target):
        raise IllegalTransition.of(job.id, job.status.value, target.value)
    if owner is not None and job.lease_owner != owner:
        raise LeaseLost.of(job.id)


def job_value(key: str, value: Any) -> Any:
    """A job field as both backends store it."""
    if key not in JOB_FIELDS:
        raise ValueError(f"not a job field: {key!r}")
    if key in _FLAG_FIELDS:
        return bool(value)
    if key in _JSON_FIELDS and value is not None and not isinstance(value, str):
        return dumps(value)
    return value


class JobTables(Role):
    """Durable jobs: create (coalescing), transition, checkpoint, stop requests, lease renewal."""

    @abstractmethod
    def _lease_until(self, lease_seconds: float) -> tuple[str, list[Any]]:
        """SQL for "now + lease_seconds" as a stamp, with its parameters (on whichever clock the backend trusts)."""

    def claim_next_job(self, owner: str, lease_seconds: float, kinds: Iterable[str]) -> Job | None:
        """The best queued job of one of `kinds`, leased to `owner` (none when no kind is asked for); each backend
        claims its own way (`_claim`)."""
        wanted = list(kinds)
        return self._claim(owner, lease_seconds, wanted) if wanted else None

    @abstractmethod
    def _claim(self, owner: str, lease_seconds: float, kinds: list[str]) -> Job | None: ...

    def _lock_coalesce_key(self, tx: Tx, key: str) -> None:
        """Serialize requests that may coalesce into one job (nothing to do with a single writer)."""

    def _job(self, tx: Tx, job_id: str, *, lock: bool = False) -> Job:
        row = tx.one(f"SELECT * FROM job WHERE id = ?{self.FOR_UPDATE if lock else ''}", (job_id,))
        if row is None:
            raise NotFound(f"no job {job_id}")
        return job_from_row(row)

    def create_job(self, new: NewJob) -> tuple[Job, bool]:
        """A new queued job, or the queued one of the same coalesce key (False: joined, not created)."""
        with self._write() as tx:
            if new.coalesce_key:
                self._lock_coalesce_key(tx, new.coalesce_key)
                joinable = "('queued', 'paused')" if new.joins_paused else "('queued')"
                row = tx.one(
                    f"SELECT id FROM job WHERE coalesce_key = ? AND status IN {joinable} ORDER BY created_at LIMIT 1",
                    (new.coalesce_key,),
                )
                if row is not None:
                    return self._job(tx, row["id"]), False
            job_id = str(uuid.uuid4())
            tx.run(
                "INSERT INTO job(id, kind, status, priority, params, created_at, progress, max_attempts,"
                " requested_by, coalesce_key) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    job_id,
                    new.kind,
                    JobStatus.QUEUED.value,
                    new.priority,
                    dumps(dict(new.params)),
                    self._now(),
                    dumps(Progress().to_json()),
                    new.max_attempts,
                    new.requested_by,
                    new.coalesce_key,
                ),
            )
            return self._job(tx, job_id), True

    def waiting_above(self, priority: int) -> bool:
        """Whether a job of higher priority is queued and could be claimed now (no job of its key is running)."""
        row = self._one(
            "SELECT 1 AS n FROM job q WHERE q.status = 'queued' AND q.priority > ? AND (q.coalesce_key IS NULL OR "
            "NOT EXISTS (SELECT 1 FROM job r WHERE r.status = 'running' AND r.coalesce_key = q.coalesce_key)) LIMIT 1",
            (priority,),
        )
        return row is not None

    def get_job(self, job_id: str) -> Job:
        with self._read() as tx:
            return self._job(tx, job_id)

    def list_jobs(self, status: str | None, kind: str | None, limit: int, before: str | None = None) -> list[Job]:
        clauses, params = [], []
        for column, value in (("status", status), ("kind", kind)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        if before is not None:  # (created_at, id) below the cursor job's: ties in the instant do not skip a job
            clauses.append(
                "(created_at < (SELECT created_at FROM job WHERE id = ?)"
                " OR (created_at = (SELECT created_at FROM job WHERE id = ?) AND id < ?))"
            )
            params.extend((before, before, before))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._all(f"SELECT * FROM job{where} ORDER BY created_at DESC, id DESC LIMIT ?", (*params, limit))
        return [job_from_row(r) for r in rows]

    def count_jobs(self) -> dict[str, int]:
        counts = {status.value: 0 for status in JobStatus}
        counts.update(
            {r["status"]: int(r["n"]) for r in self._all("SELECT status, COUNT(*) AS n FROM job GROUP BY status")}
        )
        return counts

    def running_jobs(self) -> list[Job]:
        return [job_from_row(r) for r in self._all("SELECT * FROM job WHERE status = 'running'")]

    def transition_job(self, job_id: str, target: JobStatus, *, owner: str | None = None, **fields: Any) -> Job:
        values = {key: job_value(key, value) for key, value in fields.items()}
        with self._write() as tx:
            check_transition(self._job(tx, job_id, lock=True), target, owner)
            sets = ", ".join(["status = ?", *(f"{key} = ?" for key in values)])
            tx.run(f"UPDATE job SET {sets} WHERE id = ?", (target.value, *values.values(), job_id))
            return self._job(tx, job_id)

    def save_job_checkpoint(
        self, job_id: str, owner: str, checkpoint: Mapping[str, Any], progress: Progress, lease_seconds: float
    ) -> Job:
        until, params = self._lease_until(lease_seconds)
        with self._write() as tx:
            # Fenced by the lease: a worker whose job was taken over is refused here, at its next unit boundary.
            changed = tx.run(
                f"UPDATE job SET checkpoint = ?, progress = ?, lease_expires_at = {until} "
                "WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (dumps(dict(checkpoint)), dumps(progress.to_json()), *params, job_id, owner),
            )
            if changed == 0:
                raise LeaseLost.of(job_id)
            return self._job(tx, job_id)

    def renew_job_lease(self, job_id: str, owner: str, lease_seconds: float) -> bool:
        """Extend a running job's lease from now while `owner` still holds it; False otherwise."""
        until, params = self._lease_until(lease_seconds)
        with self._write() as tx:
            return (
                tx.run(
                    f"UPDATE job SET lease_expires_at = {until} WHERE id = ? AND status = 'running' "
                    "AND lease_owner = ?",
                    (*params, job_id, owner),
                )
                == 1
            )

    def request_job_stop(self, job_id: str, *, pause: bool = False, cancel: bool = False) -> Job:
        with self._write() as tx:
            self._job(tx, job_id, lock=True)
            for flag, wanted in (("pause_requested", pause), ("cancel_requested", cancel)):
                if wanted:
                    tx.run(f"UPDATE job SET {flag} = TRUE WHERE id = ?", (job_id,))
            return self._job(tx, job_id)
