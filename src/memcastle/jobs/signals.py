"""What the job queue and the worker pool share, made before either: the wake-up the queue gives the workers, the
pool's owner name, and the pauses a storage failure made that could not be written down yet (a full disk) — so that
the queue and the pool are each finished when built, neither holding the other."""

from __future__ import annotations

import os
import socket
import threading
import uuid

from memcastle.errors import Conflict
from memcastle.model import JobStatus
from memcastle.store import JobStore


class JobSignals:
    """The queue's side of the pool: wake it, and know (and settle) the pauses it could not record yet."""

    def __init__(self, store: JobStore) -> None:
        self._store = store
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.wakeup = threading.Event()
        # Guards `stalled` and the pool's storage backoff: a job paused for a storage failure whose pause could not
        # be written yet, with its reason.
        self.lock = threading.Lock()
        self.stalled: dict[str, str] = {}

    def wake(self) -> None:
        self.wakeup.set()

    def unrecorded_pause(self, job_id: str) -> str | None:
        """The reason a job was paused for a storage failure, while the pause itself could not be written yet."""
        with self.lock:
            return self.stalled.get(job_id)

    def settle(self, job_id: str) -> None:
        """Write down the pause of a job a storage failure stopped, if it could not be written yet: a person's
        resume, cancel or retry then acts on the job as it is (a `StorageError` when writes still fail)."""
        with self.lock:
            message = self.stalled.get(job_id)
        if message is not None:
            self.record(job_id, message)

    def record(self, job_id: str, message: str) -> None:
        try:
            self._store.transition_job(
                job_id, JobStatus.PAUSED, owner=self.owner, lease_owner=None, lease_expires_at=None, error=message
            )
        except Conflict:
            pass  # no longer ours (taken over on a shared palace, or requeued by a drain)
        with self.lock:
            self.stalled.pop(job_id, None)
