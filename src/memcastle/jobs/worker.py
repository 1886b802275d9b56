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

from memcastle.clock import utc_now
from memcastle.errors import Conflict
from memcastle.jobs.context import JobContext, JobHandler, JobStopped
from memcastle.model import Job, JobStatus
from memcastle.store import Store

log = logging.getLogger(__name__)

RECOVERY_BUDGET = 3


class WorkerPool:
    """`workers` threads that run job handlers; `drain()` stops them at the next unit boundary."""

    def __init__(self, store: Store, handlers: Mapping[str, JobHandler], *, workers: int,
                 lease_seconds: float) -> None:
        self._store = store
        self.on_finished: Callable[[Job], None] | None = None  # follow-ups of a finished job
        self._handlers = dict(handlers)
        self._workers = workers
        self._lease_seconds = lease_seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._active: dict[str, threading.Thread] = {}
        self._active_lock = threading.Lock()

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    def recover(self) -> list[Job]:
        """Requeue jobs a dead daemon left running, within the recovery budget; fail the rest with a reason."""
        recovered = []
        for job in self._store.running_jobs():
            if job.recovery_attempts < RECOVERY_BUDGET:
                recovered.append(self._store.transition_job(
                    job.id, JobStatus.QUEUED, recovery_attempts=job.recovery_attempts + 1, lease_owner=None,
                    lease_expires_at=None,
                ))
            else:
                recovered.append(self._store.transition_job(
                    job.id, JobStatus.FAILED, finished_at=utc_now(), lease_owner=None, lease_expires_at=None,
                    error=f"interrupted by a daemon crash {job.recovery_attempts + 1} times; recovery budget "
                          f"({RECOVERY_BUDGET}) spent — retry it once the cause is fixed",
                ))
        return recovered

    def start(self) -> None:
        for index in range(self._workers):
            thread = threading.Thread(target=self._loop, name=f"memcastle-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

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
        return requeued

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                job = self._store.claim_next_job(self.owner, self._lease_seconds, self._handlers)
            except Exception:  # noqa: BLE001 - a broken claim must not kill the worker thread
                log.exception("claiming a job failed")
                job = None
            if job is None:
                self._wakeup.wait(0.5)
                self._wakeup.clear()
                continue
            self._run(job)

    def _run(self, job: Job) -> None:
        ctx = JobContext(self._store, job, self.owner, self._lease_seconds, self._stopping.is_set)
        handler = self._handlers[job.kind]
        try:
            result = handler(ctx)
        except JobStopped as stop:
            self._stop(job, stop.reason)
            return
        except Conflict as exc:
            if exc.existing_id == job.id:
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
        else:
            self._finish(job, JobStatus.QUEUED, finished=False)

    def _fail(self, job: Job, exc: BaseException) -> None:
        log.error("job %s (%s) failed: %s", job.id, job.kind, "".join(traceback.format_exception(exc)))
        self._finish(job, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")

    def _finish(self, job: Job, status: JobStatus, *, finished: bool = True, **fields: object) -> None:
        if finished:
            fields["finished_at"] = utc_now()
        try:
            finished_job = self._store.transition_job(job.id, status, owner=self.owner, lease_owner=None,
                                                      lease_expires_at=None, **fields)
        except Conflict:
            log.warning("job %s changed hands before it could be marked %s", job.id, status.value)
            return
        if self.on_finished is not None and finished_job.is_finished:
            try:
                self.on_finished(finished_job)
            except Exception:  # noqa: BLE001 - a follow-up must never take the worker down
                log.exception("follow-up of job %s failed", job.id)
