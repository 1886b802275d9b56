"""Job control as users see it: submit, pause, resume, cancel, retry — each a legal transition or a refusal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memcastle.clock import Clock, utc_now
from memcastle.errors import IllegalTransition
from memcastle.jobs.context import JobListener, ignore_change
from memcastle.jobs.signals import JobSignals
from memcastle.model import Job, JobStatus, NewJob
from memcastle.store import JobStore
from memcastle.store.reserve import StorageReserve, spending_reserve


class JobQueue:
    """Submits jobs to the store and wakes the pool; translates control requests into transitions."""

    def __init__(
        self,
        store: JobStore,
        signals: JobSignals | None,
        *,
        now: Clock = utc_now,
        on_change: JobListener | None = None,
        reserve: StorageReserve | None = None,
    ) -> None:
        # Control must work on a full disk: a write refused for want of room spends the reserve (ADR 0051).
        self._reserve = reserve
        self._store = store
        self._now = now
        self._signals = signals
        self._on_change = on_change or ignore_change

    def as_known(self, job: Job) -> Job:
        """The job as it is: a running one whose worker stopped it for a storage failure, but could not yet write
        the pause down (the disk is full), is paused with that reason, whatever the store still says."""
        reason = self._signals.unrecorded_pause(job.id) if self._signals is not None else None
        if reason is None or job.status is not JobStatus.RUNNING:
            return job
        return replace(job, status=JobStatus.PAUSED, error=reason, lease_owner=None, lease_expires_at=None)

    def submit(self, new: NewJob) -> tuple[Job, bool]:
        """Queue a job (or join a queued one with the same coalesce key); returns (job, created)."""
        job, created = self._store.create_job(new)
        if created:
            self._on_change(job)
        if self._signals is not None:
            self._signals.wake()
        return job, created

    def pause(self, job_id: str) -> Job:
        self._settled(job_id)
        job = self._store.get_job(job_id)
        if job.status is not JobStatus.RUNNING:
            raise IllegalTransition.of(job_id, job.status.value, JobStatus.PAUSED.value)
        return self._told(self._room_for(lambda: self._store.request_job_stop(job_id, pause=True)))

    def resume(self, job_id: str) -> Job:
        self._settled(job_id)
        self._require(job_id, JobStatus.PAUSED, JobStatus.QUEUED)
        # A job paused by a storage failure carried it as its error: resumed, it is no longer true.
        job = self._told(
            self._room_for(lambda: self._store.transition_job(job_id, JobStatus.QUEUED, pause_requested=0, error=None))
        )
        if self._signals is not None:
            self._signals.wake()
        return job

    def cancel(self, job_id: str) -> Job:
        self._settled(job_id)
        job = self._store.get_job(job_id)
        if job.status in (JobStatus.QUEUED, JobStatus.PAUSED):
            return self._told(
                self._room_for(
                    lambda: self._store.transition_job(
                        job_id, JobStatus.CANCELLED, finished_at=self._now(), cancel_requested=1
                    )
                )
            )
        if job.status is JobStatus.RUNNING:
            return self._told(self._room_for(lambda: self._store.request_job_stop(job_id, cancel=True)))
        raise IllegalTransition.of(job_id, job.status.value, JobStatus.CANCELLED.value)

    def retry(self, job_id: str) -> Job:
        self._require(job_id, JobStatus.FAILED, JobStatus.QUEUED)
        # A retry is a person's decision to run the job again: it starts with a fresh recovery budget.
        job = self._told(
            self._room_for(
                lambda: self._store.transition_job(
                    job_id, JobStatus.QUEUED, error=None, finished_at=None, cancel_requested=0, pause_requested=0,
                    recovery_attempts=0,
                )
            )
        )  # fmt: skip
        if self._signals is not None:
            self._signals.wake()
        return job

    def _room_for(self, write: Callable[[], Job]) -> Job:
        return spending_reserve(self._reserve, write)

    def _settled(self, job_id: str) -> None:
        """A pause a full disk kept from being written is written first (`JobSignals.settle`)."""
        if self._signals is not None:
            signals = self._signals
            spending_reserve(self._reserve, lambda: signals.settle(job_id))

    def _told(self, job: Job) -> Job:
        self._on_change(job)
        return job

    def _require(self, job_id: str, expected: JobStatus, target: JobStatus) -> None:
        """Resume and retry are user actions with one legal origin each (running → queued is recovery only)."""
        job = self._store.get_job(job_id)
        if job.status is not expected:
            raise IllegalTransition.of(job_id, job.status.value, target.value)
