"""Durable jobs: status, priority, progress, the one transition table and the recovery budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from memcastle.model.drawers import JSON


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Priority(IntEnum):
    """Named job priorities; higher runs first."""

    CRITICAL = 100
    HIGH = 75
    NORMAL = 50
    LOW = 25
    BACKGROUND = 0


PRIORITY_NAMES = {p.name.lower(): int(p) for p in Priority}


class JobKind(StrEnum):
    """Every kind of job, declared once: the palace builds one handler for each (`app.build`; embed and extract only
    with their providers on). The modules that run them name their kind from here."""

    MINE = "mine"
    EMBED = "embed"
    EXTRACT = "extract"
    LINK = "link"
    VERIFY = "verify"
    AUDIT = "audit"
    REPAIR = "repair"
    LIFECYCLE = "lifecycle"
    CHECKPOINT = "checkpoint"
    EXPORT = "export"
    IMPORT = "import"


# The background sweeps: they take at most `jobs.background_share` of the workers and give way to asked-for work.
BACKGROUND_SWEEPS = (JobKind.EMBED.value, JobKind.EXTRACT.value, JobKind.LINK.value)


@dataclass(frozen=True)
class Progress:
    current: int = 0
    total: int | None = None
    message: str | None = None

    def to_json(self) -> JSON:
        return {"current": self.current, "total": self.total, "message": self.message}


@dataclass(frozen=True)
class Job:
    """A durable unit of background work (SPEC §1)."""

    id: str
    kind: str
    status: JobStatus
    priority: int
    params: Mapping[str, Any]
    created_at: str
    started_at: str | None
    finished_at: str | None
    progress: Progress
    attempt: int
    recovery_attempts: int
    max_attempts: int
    checkpoint: Mapping[str, Any]
    result: Mapping[str, Any] | None
    error: str | None
    lease_owner: str | None
    lease_expires_at: str | None
    pause_requested: bool
    cancel_requested: bool
    requested_by: str
    coalesce_key: str | None = None

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)

    def to_json(self) -> JSON:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status.value,
            "priority": self.priority,
            "params": dict(self.params),
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "progress": self.progress.to_json(),
            "attempt": self.attempt,
            "recovery_attempts": self.recovery_attempts,
            "max_attempts": self.max_attempts,
            "checkpoint": dict(self.checkpoint),
            "result": dict(self.result) if self.result is not None else None,
            "error": self.error,
            "lease_owner": self.lease_owner,
            "lease_expires_at": self.lease_expires_at,
            "pause_requested": self.pause_requested,
            "cancel_requested": self.cancel_requested,
            "requested_by": self.requested_by,
        }


@dataclass(frozen=True)
class NewJob:
    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)
    priority: int = 50
    requested_by: str = "http"
    coalesce_key: str | None = None
    max_attempts: int = 3
    # A request joins a paused job of the same key too (the background sweeps: pausing one must not let the next
    # write start another beside it).
    joins_paused: bool = False


@dataclass(frozen=True)
class Submitted:
    """A job asked for: the one queued, or the queued (or paused) one of the same key the request joined."""

    job: Job
    created: bool

    def to_json(self) -> dict[str, Any]:
        return {"job": self.job.to_json(), "joined": not self.created}


JOB_TRANSITIONS: frozenset[tuple[JobStatus, JobStatus]] = frozenset(
    {
        (JobStatus.QUEUED, JobStatus.RUNNING),  # claim
        (JobStatus.RUNNING, JobStatus.PAUSED),
        (JobStatus.PAUSED, JobStatus.QUEUED),  # resume
        (JobStatus.RUNNING, JobStatus.COMPLETED),
        (JobStatus.RUNNING, JobStatus.FAILED),
        (JobStatus.QUEUED, JobStatus.CANCELLED),
        (JobStatus.PAUSED, JobStatus.CANCELLED),
        (JobStatus.RUNNING, JobStatus.CANCELLED),
        (JobStatus.RUNNING, JobStatus.QUEUED),  # crash recovery or shutdown, within budget
        (JobStatus.FAILED, JobStatus.QUEUED),  # retry
    }
)


def is_legal_transition(current: JobStatus, target: JobStatus) -> bool:
    """True when the transition table allows `current` → `target`."""
    return (current, target) in JOB_TRANSITIONS


# The error a job paused by a storage failure carries: the worker pool resumes such jobs by itself once writes work
# again (a user's pause carries no error and waits for the user).
STORAGE_PAUSE = (
    "paused while the palace's storage failed; resume it once there is room (it resumes by itself when the disk has "
    "jobs.resume_free_bytes free): "
)
# What the pause said before the margin (jobs paused then are still recognised).
_EARLIER_STORAGE_PAUSE = "paused while the palace's storage failed; it resumes by itself once writes work again: "


def paused_by_storage(job: Job) -> bool:
    return job.status is JobStatus.PAUSED and (job.error or "").startswith((STORAGE_PAUSE, _EARLIER_STORAGE_PAUSE))


def storage_cause(job: Job) -> str:
    """What failed, from a storage pause's message."""
    return (job.error or "").removeprefix(STORAGE_PAUSE).removeprefix(_EARLIER_STORAGE_PAUSE)


RECOVERY_BUDGET = 3
"""How many times a job interrupted by a crash (or taken over from a dead daemon) is requeued before it fails."""


def recovery_spent(recovery_attempts: int, budget: int = RECOVERY_BUDGET) -> str:
    """The error a job fails with once a crash would exceed its recovery budget."""
    return (
        f"interrupted by a daemon crash {recovery_attempts + 1} times; recovery budget ({budget}) spent — "
        "retry it once the cause is fixed"
    )
