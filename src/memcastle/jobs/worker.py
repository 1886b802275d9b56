"""The bounded worker pool: claims queued jobs by priority, runs their handlers, records the outcome."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping

from memcastle.clock import Clock, utc_now
from memcastle.errors import Conflict, IllegalTransition, LeaseLost
from memcastle.jobs.context import JobContext, JobHandler, JobListener, JobStopped
from memcastle.jobs.context import ignore_change as _ignore
from memcastle.model import RECOVERY_BUDGET, Job, JobStatus, recovery_spent
from memcastle.store import JobStore

log = logging.getLogger(__name__)


# Owners of the pools of this process that are running (started, not yet drained).
_LIVE_OWNERS: set[str] = set()


def owner_is_dead(owner: str | None) -> bool:
    """Whether a lease owner (`host:pid:nonce`) is provably gone: a process of this host that no longer exists, or a
    pool of this very process that is no longer running. Owners on other hosts are never judged dead here — their
    leases expire instead. (Daemons in containers need distinct host names, which is the default.)"""
    if owner is None:
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return owner not in _LIVE_OWNERS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, under another user
    return False


class WorkerPool:
    """`workers` threads that run job handlers; `drain()` stops them at the next unit boundary."""

    def __init__(
        self,
        store: JobStore,
        handlers: Mapping[str, JobHandler],
        *,
        workers: int,
        lease_seconds: float,
        shared: bool = False,
        now: Clock = utc_now,
        on_change: JobListener | None = None,
    ) -> None:
        self._store = store
        self._now = now
        self._on_change = on_change or _ignore
        # Several daemons may serve a shared palace (PostgreSQL) at once: their running jobs are theirs, not ours.
        self._shared = shared
        self.on_finished: Callable[[Job], None] | None = None  # follow-ups of a finished job
        self._handlers = dict(handlers)
        self._workers = workers
        self._lease_seconds = lease_seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self._halted = threading.Event()
        self._threads: list[threading.Thread] = []
        self._active: dict[str, threading.Thread] = {}
        self._active_lock = threading.Lock()

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    def recover(self) -> list[Job]:
        """Requeue jobs a dead daemon left running, within the recovery budget; fail the rest with a reason.

        One daemon per palace (SQLite): every running job was left by a dead daemon, so all of them are recovered.
        A shared palace (PostgreSQL): other daemons may be running their jobs right now, so only jobs whose owner is
        provably dead — a process of this host that no longer exists — are recovered here. Any other running job is
        left alone: if its daemon died, `claim_next_job` takes it over once its lease has expired, judged on the
        database's clock (the one clock every daemon shares) and with the same recovery budget."""
        recovered = []
        for job in self._store.running_jobs():
            if self._shared and not owner_is_dead(job.lease_owner):
                continue
            # On a shared palace the transition is fenced by the owner we saw: a job another daemon has claimed in
            # the meantime is not touched.
            owner = job.lease_owner if self._shared else None
            try:
                if job.recovery_attempts < RECOVERY_BUDGET:
                    recovered.append(
                        self._store.transition_job(
                            job.id,
                            JobStatus.QUEUED,
                            owner=owner,
                            recovery_attempts=job.recovery_attempts + 1,
                            lease_owner=None,
                            lease_expires_at=None,
                        )
                    )
                else:
                    recovered.append(
                        self._store.transition_job(
                            job.id,
                            JobStatus.FAILED,
                            owner=owner,
                            finished_at=self._now(),
                            lease_owner=None,
                            lease_expires_at=None,
                            error=recovery_spent(job.recovery_attempts),
                        )
                    )
            except (Conflict, IllegalTransition):
                if not self._shared:
                    raise
                log.info("job %s changed hands while it was being recovered; left to its new owner", job.id)
        return recovered

    def running_here(self) -> list[str]:
        """Ids of the jobs this pool's workers are running now."""
        with self._active_lock:
            return list(self._active)

    def start(self) -> None:
        _LIVE_OWNERS.add(self.owner)
        for index in range(self._workers):
            thread = threading.Thread(target=self._loop, name=f"memcastle-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        if self._shared:
            # Another daemon takes a job over once its lease expires, so a live daemon keeps the leases of its
            # running jobs fresh even through a unit of work longer than the lease (a slow provider call).
            heartbeat = threading.Thread(target=self._renew_leases, name="memcastle-leases", daemon=True)
            heartbeat.start()

    def wake(self) -> None:
        self._wakeup.set()

    def is_stopping(self) -> bool:
        return self._stopping.is_set()

    def drain(self, timeout: float) -> list[str]:
        """Ask running jobs to stop, wait up to `timeout` seconds, requeue what did not stop; return those ids."""
        self._stopping.set()
        self._wakeup.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        requeued = []
        for job in self._store.running_jobs():
            if job.lease_owner != self.owner:
                continue
            try:
                # Clearing the lease fences the stuck thread: its next checkpoint is refused.
                self._store.transition_job(job.id, JobStatus.QUEUED, lease_owner=None, lease_expires_at=None)
                requeued.append(job.id)
            except Conflict:
                pass
        self._halted.set()
        _LIVE_OWNERS.discard(self.owner)
        return requeued

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for every worker thread to end (a drained job finishes the unit of work it
        is in, then finds its lease gone at the next checkpoint); True when none is left."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def _renew_leases(self) -> None:
        """Renew the lease of every job this pool runs, a few times per lease, until the pool has drained.

        The lease says "this daemon is alive", not "this unit of work is quick": progress is what checkpoints
        record. A renewal the store refuses means another daemon has taken the job over; the worker learns it at
        its next checkpoint, which is fenced by the same lease."""
        interval = max(0.1, self._lease_seconds / 3)
        while not self._halted.wait(interval):
            with self._active_lock:
                running = list(self._active)
            for job_id in running:
                try:
                    renewed = self._store.renew_job_lease(job_id, self.owner, self._lease_seconds)
                except Exception:
                    log.exception("renewing the lease of job %s failed", job_id)
                    continue
                if not renewed:
                    with self._active_lock:
                        lost = self._active.pop(job_id, None) is not None  # else it just finished here
                    if lost:
                        log.warning("job %s lost its lease; another worker owns it now", job_id)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                job = self._store.claim_next_job(self.owner, self._lease_seconds, self._handlers)
            except Exception:
                log.exception("claiming a job failed")
                job = None
            if job is None:
                self._wakeup.wait(0.5)
                self._wakeup.clear()
                continue
            self._on_change(job)
            self._run(job)

    def _run(self, job: Job) -> None:
        with self._active_lock:
            self._active[job.id] = threading.current_thread()
        try:
            self._run_handler(job)
        finally:
            with self._active_lock:
                self._active.pop(job.id, None)

    def _run_handler(self, job: Job) -> None:
        ctx = JobContext(
            self._store, job, self.owner, self._lease_seconds, self._stopping.is_set, on_progress=self._on_change
        )
        handler = self._handlers[job.kind]
        try:
            result = handler(ctx)
        except JobStopped as stop:
            self._stop(job, stop.reason)
            return
        except LeaseLost as exc:
            if exc.job_id == job.id:
                if self._stopping.is_set():
                    log.info("job %s was requeued by the drain; it resumes from its last checkpoint", job.id)
                else:
                    log.warning("job %s lost its lease; another worker owns it now", job.id)
                return
            self._fail(job, exc)
            return
        except Exception as exc:  # noqa: BLE001 - the worker is the one place that records any failure
            self._fail(job, exc)
            return
        self._finish(job, JobStatus.COMPLETED, result=dict(result))

    def _stop(self, job: Job, reason: str) -> None:
        if reason == "cancel":
            self._finish(job, JobStatus.CANCELLED)
        elif reason == "pause":
            self._finish(job, JobStatus.PAUSED, finished=False)
        else:  # a shutdown, or a yield to waiting work of higher priority: back to the queue
            self._finish(job, JobStatus.QUEUED, finished=False)

    def _fail(self, job: Job, exc: BaseException) -> None:
        log.error("job %s (%s) failed: %s", job.id, job.kind, "".join(traceback.format_exception(exc)))
        self._finish(job, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")

    def _finish(self, job: Job, status: JobStatus, *, finished: bool = True, **fields: object) -> None:
        if finished:
            fields["finished_at"] = self._now()
        try:
            finished_job = self._store.transition_job(
                job.id, status, owner=self.owner, lease_owner=None, lease_expires_at=None, **fields
            )
        except Conflict:
            log.warning("job %s changed hands before it could be marked %s", job.id, status.value)
            return
        self._on_change(finished_job)
        if self.on_finished is not None and finished_job.is_finished:
            try:
                self.on_finished(finished_job)
            except Exception:
                log.exception("follow-up of job %s failed", job.id)
