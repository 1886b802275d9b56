"""The application seam: every interface (HTTP, MCP, CLI through HTTP) calls these services and nothing below.

Services             the aggregate an interface is handed; one service per concern:
├── .status          StatusService    health, counts, providers, warnings
├── .drawers         DrawerService    notes, supersession, history, listings, copies, preference traces
├── .search          SearchService    search and recall (requests validated into SearchQuery)
├── .agents          AgentService     diary, checkpoint, wake-up
├── .mining          MiningService    mines, connectors
├── .miners          MinerService     named miners (config file and API), enabled state, runs by hand or trigger
├── .jobs            JobService       jobs, the background sweeps, follow-ups of a finished job
├── .facts           FactService      facts and entities, explicit decisions
├── .forgetting      ForgetService    forget a scope with everything derived from it; tombstones
├── .places          PlaceService     sources; rename and delete wings and rooms
├── .lifecycle       LifecycleService erasing what `[[lifecycle]]` rules expired long enough ago
├── .archives        ArchiveService   export and import of portable archives
└── .events          EventBus         the live events every write and job change is told to (GET /api/events)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcastle.errors import MemCastleError
from memcastle.events import EventBus
from memcastle.metrics import Metrics
from memcastle.model import Job, JobStatus
from memcastle.model.answers import PreferenceCheck
from memcastle.model.requests import CheckpointItem, SearchRequest, request_of
from memcastle.search.engine import SearchEngine
from memcastle.services.agents import CHECKPOINT_JOB, AgentService
from memcastle.services.archives import ArchiveService
from memcastle.services.audit import ReadAudit
from memcastle.services.daemon_view import RuntimeService
from memcastle.services.drawers import DrawerService
from memcastle.services.facts import FactService
from memcastle.services.forgetting import ForgetRequest, ForgetService
from memcastle.services.idempotency import RequestKeys
from memcastle.services.jobs import JobService
from memcastle.services.lifecycle import LifecycleService
from memcastle.services.miners import MinerService
from memcastle.services.mining import MiningService
from memcastle.services.parts import Housekeeping, MiningSources, Trust, Understanding
from memcastle.services.places import PlaceService
from memcastle.services.search import SearchService, build_query
from memcastle.services.status import StatusService
from memcastle.services.webhooks import WebhookService
from memcastle.store import Store

__all__ = ["ForgetRequest", "Housekeeping", "MiningSources", "SearchRequest", "Services", "Trust", "Understanding",
           "build_query"]  # fmt: skip


class Services:
    """One palace's operations, by concern."""

    def __init__(
        self,
        store: Store,
        jobs: JobService,
        search: SearchEngine,
        sources: MiningSources,
        understanding: Understanding,
        trust: Trust,
        house: Housekeeping,
    ) -> None:
        now = house.now
        self.store = store
        self.runtime = house.runtime or RuntimeService(store, now=now)
        self.audit = house.audit or ReadAudit(store.audit, enabled=False, now=now)
        record = self.audit.record
        self.policy = policy = trust.policy
        self._reread_policy = trust.reread
        self.jobs = jobs
        self.facts = FactService(store, policy, now=now, record=record, fuzzy=understanding.entity_fuzzy)
        keys = RequestKeys(store.request_keys, now, sole_writer=store.backend == "sqlite")
        self.events = house.events or EventBus()
        publish = self.events.publish
        duplicates = understanding.duplicates
        self.drawers = DrawerService(store, self.jobs, duplicates, policy, keys, publish, now=now, record=record)
        self.metrics = house.metrics or Metrics()
        self.search = SearchService(
            search, store.drawers, record=record, vectors=store.embeddings, metrics=self.metrics
        )
        self.agents = AgentService(store.drawers, self.drawers, self.facts, keys, record=record)
        self.mining = MiningService(sources.connectors, self.jobs, sources.roots, sources=store.mining)
        self.miners = MinerService(
            store.miners,
            store.jobs,
            self.mining,
            sources.miners,
            publish=publish,
            now=now,
            changes=sources.changes,
            reread=sources.reread,
        )
        self.webhooks = WebhookService(self.miners, store.miners, now=now)
        self.forgetting = ForgetService(
            store, search, self.mining.active_mines, publish, self.events.purge, audit=self.audit, reserve=house.reserve
        )
        self.places = PlaceService(store, self.forgetting, self.mining.active_mines)
        self.lifecycle = LifecycleService(store.drawers, self.jobs, self.forgetting, now=now)
        self.archives = ArchiveService(self.jobs, sources.roots)
        self.status = StatusService(
            store,
            house,
            understanding,
            search,
            paused=lambda: self.jobs.list_jobs(JobStatus.PAUSED.value, None, 200),
            runtime=self.runtime,
        )

    def job_finished(self, job: Job) -> None:
        """A job ended: counted for the metrics, then its follow-ups (`JobService.after_job`)."""
        self.metrics.job_finished(job.kind, job.status.value)
        self.jobs.after_job(job)

    def queue_checkpoint(self, items: Sequence[Any], agent: str | None, requested_by: str) -> Job:
        """An emergency checkpoint: checked now as a write would be, then queued as a durable high-priority job —
        committed before this returns, so it is written even if the agent's process is gone a moment later."""
        checked = [request_of(CheckpointItem, item) for item in items]
        agent = self.agents.check_checkpoint(checked, agent=agent)
        params = {"items": [item.to_json() for item in checked], "agent": agent, "requested_by": requested_by}
        return self.jobs.submit_job(CHECKPOINT_JOB, params, priority="high", requested_by=requested_by).job

    def check_preferences(self) -> PreferenceCheck:
        """The preference files read again now: whether they are valid, and whether they still say what the daemon
        ranks with (an edit takes effect at the next start)."""
        layers = self.policy.to_json()["layers"]
        if self._reread_policy is None:
            return PreferenceCheck(ok=True, current=True, layers=layers)
        try:
            fresh = self._reread_policy()
        except MemCastleError as exc:
            return PreferenceCheck(ok=False, current=False, layers=layers, error=exc.message)
        return PreferenceCheck(
            ok=True, current=fresh.to_json() == self.policy.to_json(), layers=fresh.to_json()["layers"]
        )


def attached(state: object) -> Services:
    """The services an application was built around (`app.state.services`, set by `api.app.create_app`), typed."""
    found = getattr(state, "services", None)
    if not isinstance(found, Services):
        raise RuntimeError("this application was built without a palace's services")
    return found
