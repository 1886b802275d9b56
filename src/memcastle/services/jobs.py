"""Jobs at the service seam: submit, list, control; the background sweeps and the follow-ups of a finished job."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memcastle import integrity
from memcastle.archive import IMPORT
from memcastle.errors import InvalidRequest
from memcastle.integrity.audit import AUDIT, REPAIR
from memcastle.jobs.queue import JobQueue
from memcastle.knowledge.dedup import COALESCE_KEY as LINK_KEY
from memcastle.knowledge.dedup import KIND as LINK
from memcastle.knowledge.extraction import ExtractionProvider
from memcastle.knowledge.sweep import COALESCE_KEY as EXTRACT_KEY
from memcastle.knowledge.sweep import KIND as EXTRACT
from memcastle.mining.pipeline import KIND as MINE
from memcastle.model import PRIORITY_NAMES, Job, JobStatus, NewJob, Submitted
from memcastle.search.backfill import COALESCE_KEY as EMBED_KEY
from memcastle.search.backfill import KIND as EMBED
from memcastle.search.embeddings import EmbeddingProvider
from memcastle.services.ids import resolve_id
from memcastle.services.validation import check_limit
from memcastle.store import JobStore


class JobService:
    """Durable background work, as users and the other services ask for it."""

    def __init__(
        self,
        store: JobStore,
        queue: JobQueue,
        *,
        embeddings: EmbeddingProvider,
        extraction: ExtractionProvider,
        check_names: Callable[[], list[str]] = list,
    ) -> None:
        self._store = store
        self.queue = queue
        self._embeddings = embeddings
        self._extraction = extraction
        self._check_names = check_names

    def known_checks(self, names: Sequence[str]) -> list[str]:
        """`names` when every one is a check of the palace audit; an unknown one is refused by name."""
        known = self._check_names()
        unknown = [name for name in names if name not in known]
        if unknown:
            raise InvalidRequest(
                f"no audit check named {', '.join(map(repr, unknown))}; the checks are: {', '.join(known)}",
                field="checks",
            )
        return list(dict.fromkeys(names))

    def checks_found(self, job_id: str) -> list[str]:
        """The checks a finished audit job found something for that a repair can fix (`repair` set), in its order:
        what `repair` based on that audit does. A job that is not a finished audit is refused, saying why."""
        job = self.get_job(job_id)
        if job.kind != AUDIT:
            raise InvalidRequest(f"job {job.id[:8]} is a {job.kind} job, not an audit", field="based_on_job")
        if job.status is not JobStatus.COMPLETED or not isinstance(job.result, Mapping):
            raise InvalidRequest(
                f"audit {job.id[:8]} is {job.status.value}: base a repair on a finished audit", field="based_on_job"
            )
        findings = job.result.get("findings") or []
        return [f["check"] for f in findings if f.get("count") and f.get("repair")]

    def submit_job(
        self,
        kind: str,
        params: Mapping[str, Any],
        *,
        priority: str = "normal",
        requested_by: str = "http",
        coalesce_key: str | None = None,
        joins_paused: bool = False,
    ) -> Submitted:
        if priority not in PRIORITY_NAMES:
            raise InvalidRequest(f"unknown priority {priority!r}; one of {', '.join(PRIORITY_NAMES)}", field="priority")
        job, created = self.queue.submit(
            NewJob(
                kind=kind,
                params=dict(params),
                priority=PRIORITY_NAMES[priority],
                requested_by=requested_by,
                coalesce_key=coalesce_key,
                joins_paused=joins_paused,
            )
        )
        return Submitted(job, created)

    def submit_verify(self, *, batch: int, pace_ms: int, priority: str = "normal", requested_by: str = "http") -> Job:
        """Re-hash every current drawer in the background (`integrity`)."""
        job = self.submit_job(
            integrity.KIND, {"batch": batch, "pace_ms": pace_ms}, priority=priority, requested_by=requested_by
        ).job
        return job

    def submit_audit(self, *, priority: str = "normal", requested_by: str = "http") -> Job:
        """Check the palace in the background (`memcastle.integrity.audit`): a report, nothing changed."""
        return self.submit_job(AUDIT, {}, priority=priority, requested_by=requested_by).job

    def submit_repair(
        self, *, checks: Sequence[str] = (), batch: int = 500, priority: str = "normal", requested_by: str = "http"
    ) -> Job:
        """Fix what the audit finds (only `checks` when named), a batch per transaction, in the background."""
        params = {"checks": list(checks), "batch": batch}
        return self.submit_job(REPAIR, params, priority=priority, requested_by=requested_by).job

    def resolve(self, job_id: str) -> str:
        """The whole id a job id or unique prefix of it stands for (`memcastle.services.ids`)."""
        return resolve_id(self._store, "job", job_id, field="job_id")

    def get_job(self, job_id: str) -> Job:
        return self.queue.as_known(self._store.get_job(self.resolve(job_id)))

    def why_waiting(self, job: Job) -> str | None:
        """For a queued job, what it waits for and behind what; None for any other status."""
        if job.status is not JobStatus.QUEUED:
            return None
        running = self._store.running_jobs()
        if job.coalesce_key:
            same = next((r for r in running if r.coalesce_key == job.coalesce_key), None)
            if same is not None:
                return f"behind the running {same.kind} job {same.id[:8]} of the same source; it starts when that ends"
        ahead = [
            q
            for q in self._store.list_jobs(JobStatus.QUEUED.value, None, 200)
            if q.id != job.id and (q.priority, job.created_at) > (job.priority, q.created_at)
        ]
        busy = ", ".join(sorted(f"{r.kind} ({r.progress.current}/{r.progress.total or '?'})" for r in running))
        if ahead:
            return f"behind {len(ahead)} queued job(s) of higher priority or older; running: {busy or 'nothing'}"
        if running:
            lower = [r for r in running if r.priority < job.priority]
            if lower:
                return f"next; every worker is busy ({busy}); background work gives way at its next checkpoint"
            return f"next; every worker is busy ({busy})"
        return "next; a worker picks it up in a moment"

    def list_jobs(self, status: str | None, kind: str | None, limit: int = 50, before: str | None = None) -> list[Job]:
        """Newest first; `before` (a job id or a unique prefix of one) pages on to the jobs created before it."""
        if status is not None and status not in {s.value for s in JobStatus}:
            raise InvalidRequest(
                f"unknown job status {status!r}; one of {', '.join(s.value for s in JobStatus)}", field="status"
            )
        limit = check_limit(limit)
        cursor = self._cursor(before) if before else None
        found = self._store.list_jobs(status, kind, limit, cursor)
        if status == JobStatus.PAUSED.value:  # and those paused while the pause could not be written yet
            found = sorted(
                [*found, *self._store.list_jobs(JobStatus.RUNNING.value, kind, limit, cursor)],
                key=lambda job: (job.created_at, job.id),
                reverse=True,
            )
        jobs = [self.queue.as_known(job) for job in found]
        return [job for job in jobs if status is None or job.status.value == status][:limit]

    def _cursor(self, before: str) -> str:
        """The job a page continues from: not found (404) when there is none, like a listing of drawers `after`."""
        cursor = resolve_id(self._store, "job", before, field="before")
        return self._store.get_job(cursor).id

    def control_job(self, job_id: str, action: str) -> Job:
        actions = {
            "pause": self.queue.pause,
            "resume": self.queue.resume,
            "cancel": self.queue.cancel,
            "retry": self.queue.retry,
            "force-cancel": self.queue.cancel,  # the original MemCastle's: a running job is cancelled at once anyway
        }
        if action not in actions:
            raise InvalidRequest(f"unknown job action {action!r}; one of {', '.join(actions)}", field="action")
        return actions[action](self.resolve(job_id))

    # --- the background sweeps ------------------------------------------------------------------

    def request_embedding(self, *, requested_by: str = "job") -> Job | None:
        """Queue the background embed sweep (joining a queued one); None when embeddings are off."""
        if not self._embeddings.is_enabled:
            return None
        job = self.submit_job(
            EMBED, {}, priority="background", requested_by=requested_by, coalesce_key=EMBED_KEY, joins_paused=True
        ).job
        return job

    def request_extraction(self, *, requested_by: str = "job") -> Job | None:
        """Queue the background extraction sweep (joining a queued one); None when extraction is off."""
        if not self._extraction.is_enabled:
            return None
        job = self.submit_job(
            EXTRACT, {}, priority="background", requested_by=requested_by, coalesce_key=EXTRACT_KEY, joins_paused=True
        ).job
        return job

    def request_linking(self, *, requested_by: str = "job") -> Job:
        """Queue the sweep that links queued drawers to their copies (joining a queued one). It runs at `low`: the
        embed and extract sweeps (`background`, minutes or hours over a large mine) give way to it at their next
        batch, and it gives way to a mine; it takes seconds where they take minutes."""
        return self.submit_job(
            LINK, {}, priority="low", requested_by=requested_by, coalesce_key=LINK_KEY, joins_paused=True
        ).job

    def request_sweeps(self) -> None:
        """New or changed drawers: embed them and read them for facts, in the background."""
        self.request_embedding()
        self.request_extraction()

    def after_job(self, job: Job) -> None:
        """Follow-ups of a finished job: a mine that filed drawers starts the sweeps."""
        if job.kind == MINE and job.status is JobStatus.COMPLETED and job.result:
            if int(job.result.get("created", 0)) + int(job.result.get("superseded", 0)) > 0:
                self.request_sweeps()
            if int(job.result.get("copies_pending", 0)) > 0:
                self.request_linking()
        if job.kind == IMPORT and job.status is JobStatus.COMPLETED and job.result:
            if sum(dict(job.result.get("added", {})).values()):
                self.request_sweeps()  # what came without vectors or facts is embedded and read here
