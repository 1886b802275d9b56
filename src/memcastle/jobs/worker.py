"""The bounded worker pool: claims queued jobs by priority, runs their handlers, records the outcome."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from memcastle.clock import Clock, utc_now
from memcastle.errors import Conflict, IllegalTransition, LeaseLost, StorageError
from memcastle.jobs.context import JobContext, JobHandler, JobListener, JobStopped
from memcastle.jobs.context import ignore_change as _ignore
from memcastle.jobs.signals import JobSignals
from memcastle.model import RECOVERY_BUDGET, STORAGE_PAUSE, Job, JobStatus, paused_by_storage, recovery_spent
from memcastle.store import JobStore

log = logging.getLogger(__name__)


# Owners of the pools of this process that are running (started, not yet drained).
_LIVE_OWNERS: set[str] = set()

# After a storage failure (a full disk, an I/O error), paused jobs are resumed after this many seconds, doubling
# while failures go on, up to the most; and only once the palace's disk has `jobs.resume_free_bytes` free, when it
# can be measured (a margin met by freeing a few megabytes would only fill the disk again: ADR 0051).
STORAGE_RETRY_FIRST = 2.0
STORAGE_RETRY_MOST = 60.0
RESUME_FREE_BYTES = 1 << 30


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


@dataclass(frozen=True)
class PoolShape:
    """How many workers run jobs, how long their lease on a job lasts, whether other daemons share the palace's jobs
    (PostgreSQL), and which job kinds are background sweeps and how many workers they may take at once (None: all;
    `jobs.background_share`)."""

    workers: int
    lease_seconds: float
    shared: bool = False
    background: Collection[str] = ()
    background_workers: int | None = None


@dataclass(frozen=True)
class DiskWatch:
    """The free bytes on the palace's disk (None: not measurable, a PostgreSQL palace), how many jobs a storage
    failure paused need free before they resume by themselves (0: only when a person resumes them), and who is told
    once there is room again."""

    room: Callable[[], int | None] | None = None
    resume_free_bytes: int = RESUME_FREE_BYTES
    on_room: Callable[[], object] | None = None


NO_DISK_WATCH = DiskWatch()


class WorkerPool:
    """`workers` threads that run job handlers; `drain()` stops them at the next unit boundary."""

    def __init__(
        self,
        store: JobStore,
        handlers: Mapping[str, JobHandler],
        shape: PoolShape,
        *,
        disk: DiskWatch = NO_DISK_WATCH,
        now: Clock = utc_now,
        on_change: JobListener | None = None,
        signals: JobSignals | None = None,
        on_finished: Callable[[Job], None] | None = None,
    ) -> None:
        workers, background_workers = shape.workers, shape.background_workers
        # `jobs.background_share`: the job kinds of the background sweeps (`background`) take at most this many of
        # the workers at once, so the others stay free for what a person or an agent asked for.
        self._background = frozenset(shape.background)
        self._background_cap = workers if background_workers is None else max(1, min(workers, background_workers))
        self._running_kinds: dict[str, str] = {}
        self._claim_lock = threading.Lock()
        self._store = store
        self._now = now
        self._on_change = on_change or _ignore
        # Several daemons may serve a shared palace (PostgreSQL) at once: their running jobs are theirs, not ours.
        self._shared = shape.shared
        self.on_finished = on_finished  # follow-ups of a finished job
        self._handlers = dict(handlers)
        self._workers = workers
        self._lease_seconds = shape.lease_seconds
        self.signals = signals or JobSignals(store)
        self.owner = self.signals.owner
        self._stopping = threading.Event()
        self._halted = threading.Event()
        self._threads: list[threading.Thread] = []
        self._helpers: list[threading.Thread] = []  # the lease heartbeat and the storage watch: they use the store too
        self._active: dict[str, threading.Thread] = {}
        self._active_lock = threading.Lock()
        # Storage failures: free bytes on the palace's disk (None: not measurable, a PostgreSQL palace), the jobs
        # whose pause could not be recorded yet (still `running` in the store, under this pool's lease), and when
        # the paused ones may be tried again.
        self._room = disk.room or (lambda: None)
        # Free bytes the disk must have before jobs a storage failure paused resume by themselves (0: never, only
        # when a person resumes them); `on_room` is told once there is (the storage reserve is laid again).
        self._resume_free = disk.resume_free_bytes
        self._on_room = disk.on_room or (lambda: None)
        self._storage_trouble = threading.Event()
        self._storage_trouble.set()  # look once at start: jobs a previous run paused for the disk
        self._storage_backoff = STORAGE_RETRY_FIRST
        self._storage_retry_at = 0.0

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
            self._helpers.append(heartbeat)
        storage = threading.Thread(target=self._watch_storage, name="memcastle-storage", daemon=True)
        storage.start()
        self._helpers.append(storage)

    def wake(self) -> None:
        self.signals.wakeup.set()

    def drain(self, timeout: float) -> list[str]:
        """Ask running jobs to stop, wait up to `timeout` seconds, requeue what did not stop; return those ids."""
        self._stopping.set()
        self.signals.wakeup.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        requeued = []
        try:
            running = self._store.running_jobs()
        except StorageError as exc:
            log.warning("the running jobs could not be read (%s); the next start recovers them", exc.message)
            running = []
        for job in running:
            if job.lease_owner != self.owner:
                continue
            try:
                # Clearing the lease fences the stuck thread: its next checkpoint is refused.
                self._store.transition_job(job.id, JobStatus.QUEUED, lease_owner=None, lease_expires_at=None)
                requeued.append(job.id)
            except Conflict:
                pass
            except StorageError as exc:  # left running: the next start recovers it
                log.warning("job %s could not be requeued (%s); the next start recovers it", job.id, exc.message)
        self._halted.set()
        self._storage_trouble.set()  # wakes the storage watch, which then sees the halt (a stop must not wait on it)
        _LIVE_OWNERS.discard(self.owner)
        return requeued

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for every worker thread to end (a drained job finishes the unit of work it
        is in, then finds its lease gone at the next checkpoint); True when none is left."""
        deadline = time.monotonic() + timeout
        threads = [*self._threads, *self._helpers]
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in threads)

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
        """Claim and run jobs until the pool drains. Nothing a job or the store raises ends the thread."""
        claim_failed = False
        while not self._stopping.is_set():
            try:
                job = self._claim()
                claim_failed = False
            except StorageError as exc:
                if not claim_failed:  # said once per episode: the next claims fail the same way
                    log.warning("jobs cannot be claimed: %s", exc.message)
                claim_failed = True
                self._note_storage_failure()
                self.signals.wakeup.wait(STORAGE_RETRY_FIRST)
                self.signals.wakeup.clear()
                continue
            except Exception:
                log.exception("claiming a job failed")
                job = None
            if job is None:
                self.signals.wakeup.wait(0.5)
                self.signals.wakeup.clear()
                continue
            try:
                self._on_change(job)
                self._run(job)
            except Exception:
                log.exception("job %s (%s): its outcome could not be handled; the worker goes on", job.id, job.kind)
            finally:
                with self._active_lock:
                    self._running_kinds.pop(job.id, None)

    def _claim(self) -> Job | None:
        """The next job this pool may run: any kind it handles, but no more background sweeps at once than its
        share of the workers."""
        with self._claim_lock:
            with self._active_lock:
                busy = sum(kind in self._background for kind in self._running_kinds.values())
            kinds: Collection[str] = self._handlers
            if busy >= self._background_cap:
                kinds = [kind for kind in self._handlers if kind not in self._background]
            job = self._store.claim_next_job(self.owner, self._lease_seconds, kinds)
            if job is not None:
                with self._active_lock:
                    self._running_kinds[job.id] = job.kind
            return job

    def _run(self, job: Job) -> None:
        with self._active_lock:
            self._active[job.id] = threading.current_thread()
            self._running_kinds[job.id] = job.kind
        try:
            self._run_handler(job)
        finally:
            with self._active_lock:
                self._active.pop(job.id, None)
                self._running_kinds.pop(job.id, None)

    def _run_handler(self, job: Job) -> None:
        try:
            self._run_and_record(job)
        except StorageError as exc:
            # The handler's own writes, or the recording of its outcome: run again from the last checkpoint once
            # writes work.
            self._pause_for_storage(job, exc)

    def _run_and_record(self, job: Job) -> None:
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
            if exc.existing_id == job.id:
                if self._stopping.is_set():
                    log.info("job %s was requeued by the drain; it resumes from its last checkpoint", job.id)
                else:
                    log.warning("job %s lost its lease; another worker owns it now", job.id)
                return
            self._fail(job, exc)
            return
        except StorageError:
            raise
        except Exception as exc:  # noqa: BLE001 - the worker is the one place that records any failure
            self._fail(job, exc)
            return
        self._finish(job, JobStatus.COMPLETED, result=dict(result), error=None)
        self._storage_recovered()

    def _stop(self, job: Job, reason: str) -> None:
        if reason == "cancel":
            self._finish(job, JobStatus.CANCELLED)
        elif reason == "pause":
            self._finish(job, JobStatus.PAUSED, finished=False)
        else:  # a shutdown, or a yield to waiting work of higher priority: back to the queue
            self._finish(job, JobStatus.QUEUED, finished=False)

    def _pause_for_storage(self, job: Job, exc: StorageError) -> None:
        """Pause a job the palace's storage failed under (a full disk, an I/O error); `_watch_storage` resumes it
        once writes work again. When even the pause cannot be written, the job is kept here until it can."""
        message = STORAGE_PAUSE + exc.message
        log.warning("job %s (%s) paused: %s", job.id, job.kind, exc.message)
        self._note_storage_failure()
        try:
            self._finish(job, JobStatus.PAUSED, finished=False, error=message)
        except StorageError:
            with self.signals.lock:
                self.signals.stalled[job.id] = message
            self._on_change(replace(job, status=JobStatus.PAUSED, error=message, lease_owner=None))

    def _note_storage_failure(self) -> None:
        with self.signals.lock:
            now = time.monotonic()
            if now >= self._storage_retry_at:
                self._storage_retry_at = now + self._storage_backoff
                self._storage_backoff = min(self._storage_backoff * 2, STORAGE_RETRY_MOST)
        self._storage_trouble.set()

    def _storage_recovered(self) -> None:
        with self.signals.lock:
            self._storage_backoff = STORAGE_RETRY_FIRST

    def _watch_storage(self) -> None:
        """While storage has failed: once the retry time has come and the disk has room, record the pauses that
        could not be written, then resume the jobs paused by the failure."""
        while not self._halted.is_set():
            self._storage_trouble.wait(1.0)
            if self._halted.is_set() or not self._storage_trouble.is_set():
                continue
            with self.signals.lock:
                wait = self._storage_retry_at - time.monotonic()
            if wait > 0:
                self._halted.wait(max(0.2, min(wait, 1.0)))
                continue
            if self._halted.is_set():
                break  # a drain woke it: nothing is resumed on a pool that stops
            try:
                self._resume_after_storage()
            except StorageError as exc:
                log.info("writes still fail (%s); trying again later", exc.message)
                self._note_storage_failure()
            except Exception:
                log.exception("resuming the jobs paused by a storage failure failed")
                self._note_storage_failure()

    def _resume_after_storage(self) -> None:
        """Write down the pauses that could not be written; then, once the disk has `jobs.resume_free_bytes` free
        (or its room cannot be measured), resume the jobs a storage failure paused."""
        with self.signals.lock:
            stalled = dict(self.signals.stalled)
        for job_id, message in stalled.items():
            self.signals.record(job_id, message)
        room = self._room()
        if room is not None and (self._resume_free <= 0 or room < self._resume_free):
            self._halted.wait(1.0)  # looked at again in a second: paused until there is room, or a person resumes
            return
        self._on_room()
        resumed = 0
        for job in self._store.list_jobs(JobStatus.PAUSED.value, None, 500):
            if not paused_by_storage(job):
                continue
            try:
                changed = self._store.transition_job(job.id, JobStatus.QUEUED, pause_requested=0, error=None)
            except Conflict:
                continue
            self._on_change(changed)
            resumed += 1
        with self.signals.lock:
            if not self.signals.stalled:
                self._storage_trouble.clear()
        if resumed:
            log.info("resumed %d job(s) paused by a storage failure", resumed)
            self.signals.wakeup.set()

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
