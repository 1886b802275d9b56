"""The palace's health at a glance: counts, the providers and what they still have to do, and warnings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memcastle import __version__
from memcastle.knowledge.sweep import KIND as EXTRACT
from memcastle.knowledge.sweep import extractor_key
from memcastle.model import ANY_TIME, Job, JobStatus, Scope, paused_by_storage
from memcastle.model.answers import Backlog, EmbeddingStatus, ExtractionStatus, PalaceStatus
from memcastle.model.jobs import storage_cause
from memcastle.search.backfill import KIND as EMBED
from memcastle.search.backfill import model_key
from memcastle.search.engine import SearchEngine
from memcastle.services.daemon_view import RuntimeService
from memcastle.services.parts import Housekeeping, Understanding
from memcastle.services.reader import palace_wide, visibility
from memcastle.store import Store

# Below this much room on the palace's disk, status warns.
LOW_ROOM_BYTES = 64 << 20


class StatusService:
    """`GET /api/status` and `memcastle status`."""

    def __init__(
        self,
        store: Store,
        house: Housekeeping,
        understanding: Understanding,
        search: SearchEngine,
        *,
        paused: Callable[[], list[Job]] | None = None,
        runtime: RuntimeService | None = None,
    ) -> None:
        self._notices = house.notices  # what the daemon did on its own, shown until acknowledged
        self._runtime = runtime or house.runtime or RuntimeService(store)
        self._store = store
        self._room = house.room or (lambda: None)
        # The paused jobs, as the job service knows them (a pause a full disk kept from being written included).
        self._paused = paused or (lambda: store.jobs.list_jobs(JobStatus.PAUSED.value, None, 200))
        self._palace = house.palace
        self._embeddings = understanding.embeddings
        self._extraction = understanding.extraction
        self._search = search

    def status(self) -> PalaceStatus:
        if not visibility().reads_everything:
            return self._scoped_status()
        return PalaceStatus(
            version=__version__,
            palace=str(self._palace),
            backend=self._store.backend,
            location=self._store.location,
            drawers=self._store.drawers.count_drawers(current_only=True),
            drawers_total=self._store.drawers.count_drawers(),
            jobs=self._store.jobs.count_jobs(),
            embeddings=self.embedding_status(),
            extraction=self.extraction_status(),
            warnings=tuple(self._warnings()),
            daemon=self._runtime.daemon(),
            schema=self._runtime.schema(),
        )

    def _scoped_status(self) -> PalaceStatus:
        """The status of the part of the palace a scoped client reads: its drawers, the vectors and reads still to
        do for them, its facts; no jobs, no other wing's count. The providers' failures still show: they are the
        daemon's, not another wing's."""
        scope = visibility().narrow(Scope())
        search, embeddings, extraction = self._store.search, self._embeddings, self._extraction
        pending = search.count_in_scope(scope, missing_vectors=model_key(embeddings)) if embeddings.is_enabled else 0
        unread = search.count_in_scope(scope, unread_by=extractor_key(extraction)) if extraction.is_enabled else 0
        return PalaceStatus(
            version=__version__,
            palace=str(self._palace),
            backend=self._store.backend,
            location=self._store.location,
            drawers=search.count_in_scope(scope),
            drawers_total=search.count_in_scope(replace(scope, when=ANY_TIME, hidden=True)),
            jobs={},
            embeddings=EmbeddingStatus(
                embeddings.name,
                embeddings.model if embeddings.is_enabled else None,
                self._search.dimension if embeddings.is_enabled else None,
                pending,
                Backlog(passages_pending=0, eta_seconds=0) if not pending else Backlog(),
            ),
            extraction=ExtractionStatus(
                extraction.name,
                (extraction.model or None) if extraction.is_enabled else None,
                unread,
                search.count_facts_in(replace(scope, when=ANY_TIME, hidden=True)),
            ),
            warnings=tuple(w for w in self._warnings() if "provider failed" in w),
            daemon=self._runtime.daemon(),
        )

    def embeddings_pending(self) -> int:
        """How many drawers wait for vectors, without touching the semantic index (which may be loading)."""
        provider = self._embeddings
        return self._store.embeddings.count_missing_embeddings(model_key(provider)) if provider.is_enabled else 0

    def embedding_status(self) -> EmbeddingStatus:
        provider = self._embeddings
        if not provider.is_enabled:
            return EmbeddingStatus(provider.name, None, None, 0, self._embed_backlog(0))
        pending = self._store.embeddings.count_missing_embeddings(model_key(provider))
        return EmbeddingStatus(
            provider.name,
            provider.model,
            self._search.dimension,
            pending,
            self._embed_backlog(pending),
            enabled=True,
            index=self._search.index_status(),
        )

    def _embed_backlog(self, pending: int) -> Backlog:
        """Passages embedded and still to embed, with the rate and ETA, as the running embed sweep last measured
        them; unknown while no sweep has measured anything."""
        if not pending:
            return Backlog(passages_pending=0, eta_seconds=0)
        active = [j for j in self._store.jobs.list_jobs(None, EMBED, 5) if not j.is_finished]
        # The sweep at work tells how far it is: a request queued behind it has measured nothing yet.
        measured = [j for j in active if j.status is JobStatus.RUNNING] + [j for j in active if j.checkpoint]
        if not measured:
            return Backlog()
        state = measured[0].checkpoint
        return Backlog(
            passages_done=state.get("passages"),
            passages_pending=state.get("passages_pending"),
            passages_per_second=state.get("passages_per_second"),
            eta_seconds=state.get("eta_seconds"),
        )

    def extraction_status(self) -> ExtractionStatus:
        provider = self._extraction
        facts = self._store.facts.count_facts()
        if not provider.is_enabled:
            return ExtractionStatus(provider.name, None, 0, facts)
        return ExtractionStatus(
            provider.name, provider.model or None, self._store.graph.count_to_extract(extractor_key(provider)), facts
        )

    def acknowledge(self) -> int:
        """Clear the notices (`status.warnings` of what the daemon did on its own); how many there were."""
        palace_wide("acknowledging the palace's notices")
        return self._notices.acknowledge() if self._notices is not None else 0

    def _warnings(self) -> list[str]:
        warnings = [
            f"{n.text} ({n.at}; memcastle status --acknowledge clears this)"
            for n in (self._notices.current() if self._notices is not None else [])
        ]
        room = self._room()
        if room is not None and room < LOW_ROOM_BYTES:
            warnings.append(
                f"the palace's disk has only {room:,} bytes free ({self._palace}); writes are refused once it is full"
            )
        stuck = [job for job in self._paused() if paused_by_storage(job)]
        if stuck:
            warnings.append(
                f"{len(stuck)} job(s) paused because the palace's storage failed ({storage_cause(stuck[0])}); resume "
                "them once there is room (they resume by themselves once the disk has jobs.resume_free_bytes free)"
            )
        if self._embeddings.is_enabled:
            latest = self._store.jobs.list_jobs(None, EMBED, 1)
            if latest and latest[0].status is JobStatus.FAILED:
                warnings.append(f"the embedding provider failed: {latest[0].error}; search falls back to lexical")
        if self._extraction.is_enabled:
            latest = self._store.jobs.list_jobs(None, EXTRACT, 1)
            if latest and latest[0].status is JobStatus.FAILED:
                warnings.append(f"the extraction provider failed: {latest[0].error}")
        return warnings
