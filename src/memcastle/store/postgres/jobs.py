"""Job claims on PostgreSQL: several daemons claim side by side (SKIP LOCKED), a job whose daemon died is taken
over when its lease expires, and leases are stamped on the database's clock."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcastle.model import Job, JobStatus, recovery_spent
from memcastle.store.postgres.locks import COALESCE_LOCK_NAMESPACE
from memcastle.store.sql.base import Tx
from memcastle.store.sql.jobs import JobTables

if TYPE_CHECKING:
    from memcastle.store.postgres import PostgresStore, PostgresTx

# Leases are stamped on the database's clock: every daemon compares against the same one, whatever host it runs on.
_STAMP = """'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'"""
_DB_NOW = f"to_char(clock_timestamp() AT TIME ZONE 'UTC', {_STAMP})"
_DB_LATER = f"to_char((clock_timestamp() + make_interval(secs => ?)) AT TIME ZONE 'UTC', {_STAMP})"


class PostgresJobs(JobTables):
    """SKIP LOCKED claims and lease takeover, leases on the database clock."""

    db: PostgresStore

    def _lease_until(self, lease_seconds: float) -> tuple[str, list[Any]]:
        return _DB_LATER, [float(lease_seconds)]

    def _lock_coalesce_key(self, tx: Tx, key: str) -> None:
        # Two daemons asking for the same run at once: the second finds the first one's queued job.
        tx.run("SELECT pg_advisory_xact_lock(?, hashtext(?))", (COALESCE_LOCK_NAMESPACE, key))

    def _claim(self, owner: str, lease_seconds: float, kinds: list[str]) -> Job | None:
        """The best queued job — or a running one whose lease has expired (its daemon died) — leased to `owner`.

        Taking a job over counts as crash recovery (running → queued → running), within the same budget."""
        now = self._now()
        passed: list[str] = []
        with self.db._write() as tx:
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
                    if row["recovery_attempts"] >= self.db._recovery_budget:
                        tx.run(
                            "UPDATE job SET status = 'failed', finished_at = ?, lease_owner = NULL, "
                            "lease_expires_at = NULL, error = ? WHERE id = ?",
                            (now, recovery_spent(row["recovery_attempts"], self.db._recovery_budget), row["id"]),
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
            "SELECT pg_try_advisory_xact_lock(?, hashtext(?)) AS ok", (COALESCE_LOCK_NAMESPACE, coalesce_key)
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
