"""What a running job sees: its parameters, its saved checkpoint, and a way to report progress."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from memcastle.model import Job, Priority, Progress
from memcastle.store import JobStore

JobListener = Callable[[Job], object]  # told of a job's state or progress as it changes (the live event stream)
PROGRESS_INTERVAL = 0.25  # seconds between two progress reports of one job; its last checkpoint is always told


def ignore_change(job: Job) -> None:
    """The listener of a job engine nobody follows."""


class JobStopped(Exception):
    """Raised inside a handler at a unit boundary when the job must stop (pause, cancel or shutdown)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class JobContext:
    """The handle a job handler gets; `checkpoint()` saves progress and is where pause/cancel take effect."""

    def __init__(
        self,
        store: JobStore,
        job: Job,
        owner: str,
        lease_seconds: float,
        is_shutting_down: Callable[[], bool],
        *,
        on_progress: JobListener | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._on_progress = on_progress or ignore_change
        self._monotonic = monotonic
        self._told = -PROGRESS_INTERVAL
        self.job = job
        self._owner = owner
        self._lease_seconds = lease_seconds
        self._is_shutting_down = is_shutting_down
        self.state: dict[str, Any] = dict(job.checkpoint)

    @property
    def params(self) -> Mapping[str, Any]:
        return self.job.params

    @property
    def job_id(self) -> str:
        return self.job.id

    def checkpoint(
        self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
    ) -> None:
        """Durably save `state` (what a resumed run needs) and progress; then stop here if asked to."""
        self.state = dict(state)
        self.job = self._store.save_job_checkpoint(
            self.job.id,
            self._owner,
            self.state,
            Progress(current=current, total=total, message=message),
            self._lease_seconds,
        )
        now = self._monotonic()
        if now - self._told >= PROGRESS_INTERVAL or (total is not None and current >= total):
            self._told = now
            self._on_progress(self.job)
        self.raise_if_stopping()

    def raise_if_stopping(self) -> None:
        """Stop at this unit boundary when a cancel, pause or shutdown was requested."""
        job = self._store.get_job(self.job.id)
        # A cancel wins over a shutdown: the user asked for the job to end, not to be resumed later.
        if job.cancel_requested:
            raise JobStopped("cancel")
        if self._is_shutting_down():
            raise JobStopped("shutdown")
        if job.pause_requested:
            raise JobStopped("pause")
        if job.priority < Priority.NORMAL and self._store.waiting_above(job.priority):
            # Background work gives its worker up between batches to waiting work of higher priority (a mine, a
            # verify a user asked for) and goes back to the queue, to resume from this checkpoint.
            raise JobStopped("yield")


JobHandler = Callable[[JobContext], Mapping[str, Any]]
