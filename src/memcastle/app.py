"""Composition root: read settings once, build the object graph of one palace, start and stop it."""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memcastle import archive, integrity
from memcastle.archive import ArchiveJobs
from memcastle.clock import Clock, utc_now
from memcastle.config import Settings
from memcastle.config.layers import layers_from_settings
from memcastle.config.lifecycle import load_lifecycle
from memcastle.config.miners import load_miners
from memcastle.config.toml import line_for
from memcastle.connectors.builtin import builtin_connectors
from memcastle.connectors.consent import ConsentBook
from memcastle.connectors.contract import Connector
from memcastle.connectors.external import load_external
from memcastle.connectors.registry import ConnectorRegistry, load_registry
from memcastle.errors import ConfigError, Conflict, NotFound, StorageFull
from memcastle.events import EventBus
from memcastle.integrity.audit import AUDIT, REPAIR, PalaceAudit
from memcastle.jobs.context import JobHandler
from memcastle.jobs.queue import JobQueue
from memcastle.jobs.worker import WorkerPool
from memcastle.knowledge import dedup, sweep
from memcastle.knowledge.dedup import DuplicateFinder
from memcastle.knowledge.extraction import ExtractionProvider, build_extraction_provider
from memcastle.knowledge.sweep import ExtractionSweep
from memcastle.mining import pipeline
from memcastle.mining.pipeline import MinePipeline
from memcastle.mining.roots import MiningRoots
from memcastle.model import NewDrawer
from memcastle.model.lifecycle import Lifecycle
from memcastle.model.mining import MinerSpec, parse_duration
from memcastle.preferences import NO_FRESHNESS, Freshness, Policy, load_policy
from memcastle.runtime.daemons import find_daemon, state_dir
from memcastle.search import snippets
from memcastle.search.backfill import KIND as backfill_kind
from memcastle.search.backfill import EmbeddingBackfill, model_key
from memcastle.search.embeddings import EmbeddingProvider, build_provider
from memcastle.search.engine import SearchEngine, SemanticLeg
from memcastle.search.fusion import FusionWeights
from memcastle.search.maintainer import IndexMaintainer
from memcastle.search.second_stage import SecondStage
from memcastle.search.semantic import SemanticIndex
from memcastle.search.stored import StoredVectorIndex
from memcastle.search.transition import ModelTransition, Serving, builtin_for, previous_builtin
from memcastle.services import Services
from memcastle.services.agents import CHECKPOINT_JOB
from memcastle.services.audit import ReadAudit
from memcastle.services.lifecycle import KIND as LIFECYCLE
from memcastle.services.maintenance import palace_checks
from memcastle.services.runtime import Admission, RuntimeService
from memcastle.store import NearestStore, Store
from memcastle.store.copy import CopyProgress, CopyReport, copy_palace
from memcastle.store.notices import Notices
from memcastle.store.reserve import StorageReserve
from memcastle.store.sqlite import DB_FILE, SQLiteStore
from memcastle.store.sqlite.failures import NEARLY_FULL_BYTES, free_bytes
from memcastle.triggers import TriggerManager
from memcastle.triggers.expiry import ExpiryTimer

if TYPE_CHECKING:
    from memcastle.store.postgres import PostgresStore as PostgresStoreType

log = logging.getLogger(__name__)
# After the drain, a requeued job's thread finishes the unit of work it is in (a provider call on a loaded machine)
# before the store is closed: waited for in steps of the grace, up to the most (a provider stuck past its timeout).
STOP_GRACE_SECONDS = 30.0
STOP_WAIT_SECONDS = 600.0


WARM_MODEL_AFTER = 1.0  # seconds after a start before the query model is loaded, so that the start does not wait


@dataclass
class Palace:
    """A built palace: its store, worker pool and services."""

    settings: Settings
    store: Store
    pool: WorkerPool
    services: Services
    now: Clock = utc_now  # the clock every timestamp of this palace comes from
    maintainer: IndexMaintainer | None = None  # keeps the semantic leg's graph, when there are embeddings
    triggers: TriggerManager | None = None  # the miners' watch and schedule triggers
    expiry: ExpiryTimer | None = None  # asks for the erase of what `[[lifecycle]]` rules expired long ago
    reserve: StorageReserve | None = None  # room held back for cancel, pause and forget on a full disk
    model: EmbeddingProvider | None = None  # the model queries are embedded with, loaded at the start (`warm`)
    started: bool = field(default=False)
    stopped: bool = field(default=False)

    def start(self) -> None:
        """Recover jobs a crashed daemon left running, then start the workers. Returns without loading the vectors:
        the semantic index's background thread does (most of a minute at a million), while the daemon serves."""
        if self.reserve is not None:
            self.reserve.lay()
        for job in self.pool.recover():
            log.warning("job %s (%s) was interrupted; now %s", job.id, job.kind, job.status.value)
        if self.services.status.embeddings_pending():
            self.services.jobs.request_embedding()
        if self.services.status.extraction_status().pending:
            self.services.jobs.request_extraction()
        if self.store.near.count_pending():
            self.services.jobs.request_linking()  # what a mine filed and a stop or crash left unlinked
        self.pool.start()
        if self.maintainer is not None:
            self.maintainer.start()
        if self.triggers is not None:
            self.triggers.start()
        if self.expiry is not None:
            self.expiry.start()
        self.services.audit.start()
        # The query model loads lazily (the builtin one; its first load on a machine makes its int8 copy: seconds):
        # loaded on a thread a moment after the start, off the start and the request path; an `auto` search ranks
        # lexically until then and says so.
        warm = getattr(self.model, "warm", None)
        if callable(warm):
            warm(WARM_MODEL_AFTER, then=self.services.search.warm)
        stemmers = threading.Timer(WARM_MODEL_AFTER, snippets.warm)  # the words' stemmers, as the first search would
        stemmers.daemon = True
        stemmers.start()
        self.started = True

    def stop(self) -> list[str]:
        """Drain running jobs within `jobs.drain_seconds`, requeue the rest, close the store. A second call does
        nothing."""
        if self.stopped:
            return []
        self.stopped = True
        if self.started and self.triggers is not None:
            self.triggers.stop()  # no new runs are asked for while the jobs drain
        if self.started and self.expiry is not None:
            self.expiry.stop()
        requeued = self.pool.drain(self.settings.jobs.drain_seconds) if self.started else []
        if self.started and self.maintainer is not None:
            self.maintainer.stop()
        if self.started:
            # The store is closed only once no worker uses it: a unit of work (a batch of embeddings on a loaded
            # machine) finishes, finds its lease gone at its checkpoint and ends. Only a worker stuck past every
            # provider timeout is left behind, fenced (its lease is gone), after `STOP_WAIT_SECONDS`.
            waited = 0.0
            while not self.pool.join(STOP_GRACE_SECONDS):
                waited += STOP_GRACE_SECONDS
                if waited >= STOP_WAIT_SECONDS:
                    log.warning("a worker is still inside a unit of work after %.0f s; closing the store", waited)
                    break
                log.info("waiting for a worker to finish its unit of work (%.0f s so far)", waited)
        self.services.audit.stop()  # what was recorded is written before the store closes
        self.services.search.close()
        self.store.close()
        return requeued


def postgres_store(key: str) -> type[PostgresStoreType]:
    """The PostgreSQL store class; its drivers come with the `postgres` extra."""
    try:
        from memcastle.store.postgres import PostgresStore
    except ImportError as exc:
        raise ConfigError(
            f"a PostgreSQL palace needs the postgres extra ({exc.name} is not installed)",
            key=key,
            help='pip install "memcastle[postgres]"',
        ) from None
    return PostgresStore


def open_store(settings: Settings, *, now: Clock = utc_now) -> Store:
    """SQLite in the palace directory, or PostgreSQL when `store.url` names a server (SPEC §8)."""
    url = settings.store.url
    if not url:
        return SQLiteStore(settings.palace, now=now)
    if not url.startswith(("postgresql://", "postgres://")):
        raise settings.error("store.url", "must be empty (SQLite in the palace directory) or a postgresql:// URL")
    PostgresStore = postgres_store("store.url")

    # The palace directory still holds the palace-local files (preferences.toml, tokens.json).
    settings.palace.mkdir(parents=True, exist_ok=True)
    return PostgresStore(url, max_connections=settings.jobs.workers + 8, now=now)


def migrate_palace(settings: Settings, url: str, *, progress: CopyProgress | None = None) -> CopyReport:
    """`memcastle migrate --to URL`: copy the embedded palace of `settings.palace` into the PostgreSQL palace at
    `url`, locally. The palace must be at rest (no daemon serves it) and the target empty."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError("must be a postgresql:// URL", key="--to")
    running, _ = find_daemon(state_dir(), settings.palace)
    if running is not None:
        raise Conflict(
            f"palace {settings.palace} is served by pid {running.pid} at {running.address}",
            help="stop it first (memcastle shutdown): migrate copies a palace at rest",
        )
    if not (settings.palace / DB_FILE).is_file():
        raise NotFound(
            f"no embedded palace in {settings.palace} (no {DB_FILE})",
            help="point --palace at the palace directory to copy",
        )
    PostgresStore = postgres_store("--to")

    source = SQLiteStore(settings.palace)
    try:
        target = PostgresStore(url, max_connections=2)
        try:
            return copy_palace(source, target, progress=progress)
        finally:
            target.close()
    finally:
        source.close()


def _duration(settings: Settings, key: str) -> float:
    """A duration setting (`30d`, `12h`) in seconds, or an error naming where the setting came from."""
    try:
        return parse_duration(str(settings.values[key]).strip())
    except ValueError as exc:
        raise settings.error(key, str(exc)) from None


def _freshness(settings: Settings) -> Freshness:
    """`search.freshness` as a half-life (empty: off), or an error naming where the setting came from."""
    value = settings.search.freshness.strip()
    if not value:
        return NO_FRESHNESS
    try:
        return Freshness(half_life=parse_duration(value))
    except ValueError as exc:
        raise settings.error("search.freshness", str(exc)) from None


def consent_file(settings: Settings) -> Path:
    """Where the out-of-process connectors a person agreed to are kept: beside the config file."""
    return settings.config_file.parent / "connectors.json"


def with_external(builtin: dict[str, Connector], consents: ConsentBook) -> dict[str, Connector]:
    """The built-in connectors, and the out-of-process ones agreed to and unchanged since."""
    return {**builtin, **load_external(consents.manifests(set(builtin)))}


# The job kinds `jobs.background_share` bounds: the sweeps that follow writes by themselves.
BACKGROUND_SWEEPS = (backfill_kind, sweep.KIND, dedup.KIND)

# The extraction settings the sweep reads; the rest of `extraction.*` configures the provider.
SWEEP_SETTINGS = ("extraction.batch_size", "extraction.code", "extraction.max_entities", "extraction.max_relations")


@dataclass(frozen=True)
class Configuration:
    """What a palace is built from besides its store, read and validated from the settings."""

    miners: dict[str, MinerSpec]
    lifecycle: Lifecycle
    policy: Policy
    roots: MiningRoots
    connectors: ConnectorRegistry
    provider: EmbeddingProvider
    extraction: ExtractionProvider


def read_configuration(settings: Settings) -> Configuration:
    """Everything a palace reads from its configuration — miners, lifecycle rules, preferences, mining roots and
    connectors, the providers, durations — validated, without opening the palace: `build` starts with it, and
    `memcastle doctor` runs it to report a configuration error before a start would."""
    miners = load_miners(settings.tables.get("miners"))
    lifecycle = load_lifecycle(settings.tables.get("lifecycle"))
    policy = load_policy(layers_from_settings(settings))
    roots = MiningRoots(settings.mining.roots, hard_links=settings.mining.hard_links)
    connectors = load_registry(
        with_external(
            builtin_connectors(
                max_file_bytes=settings.mining.max_file_bytes,
                github_api_url=settings.mining.github_api_url,
                github_wiki_url=settings.mining.github_wiki_url,
            ),
            ConsentBook(consent_file(settings)),
        ),
        access=roots,
    )
    for position, miner in enumerate(miners.values()):  # in the file's order
        if miner.connector not in connectors.names:
            raise ConfigError(
                f"unknown connector {miner.connector!r}; available: {', '.join(connectors.names)}",
                file=str(settings.config_file),
                line=line_for(settings.text, f"miners[{position}].connector"),
                key=f"miners[{position}].connector",
            )
    provider = build_provider(
        {
            key.removeprefix("embeddings."): value
            for key, value in settings.values.items()
            if key.startswith("embeddings.")
        }
    )
    extraction = build_extraction_provider(
        {
            key.removeprefix("extraction."): value
            for key, value in settings.values.items()
            if key.startswith("extraction.") and key not in SWEEP_SETTINGS
        }
    )
    _duration(settings, "audit.retention")
    _freshness(settings)
    return Configuration(miners, lifecycle, policy, roots, connectors, provider, extraction)


def build(settings: Settings, *, now: Clock = utc_now) -> Palace:
    """Build (not start) the palace the settings name; migrations run here, so a failure stops start-up.

    `now` is the clock every timestamp of this palace comes from (a test hands in its own)."""
    configured = read_configuration(settings)
    miners, lifecycle, policy, roots = configured.miners, configured.lifecycle, configured.policy, configured.roots
    connectors, provider, extraction = configured.connectors, configured.provider, configured.extraction
    if not settings.store.url:
        # A start writes (jobs a dead daemon left are requeued, the log grows), and opening the palace may first
        # free room by folding its log back in: whether the start then fits is luck. On a full disk it is refused
        # plainly, before anything is opened, instead of serving until the first write fails.
        free = free_bytes(settings.palace)
        if free is not None and free < NEARLY_FULL_BYTES:
            raise StorageFull(str(settings.palace), free)
    store = open_store(settings, now=now)
    store.lifecycle = lifecycle
    events = EventBus()
    duplicates = DuplicateFinder(store.near, settings.dedup.near_threshold, now=now, enabled=settings.dedup.enabled)
    mine_pipeline = MinePipeline(
        store,
        connectors,
        roots=roots,
        chunk_chars=settings.mining.chunk_chars,
        link_copies=duplicates.enabled,
        now=now,
        on_filed=lambda job_id, filed: events.publish("drawers", mined_event(job_id, filed)),
        max_documents=settings.mining.max_documents,
    )
    archives = ArchiveJobs(store, settings.palace)
    # The erase job forgets through the services, built after the pool: its handler finds them once they are.
    built: list[Services] = []
    handlers: dict[str, JobHandler] = {
        LIFECYCLE: lambda ctx: built[0].lifecycle.erase_expired(ctx),
        CHECKPOINT_JOB: lambda ctx: built[0].agents.checkpoint_job(ctx),
        integrity.KIND: partial(integrity.verify_palace, store.drawers),
        pipeline.KIND: mine_pipeline.run,
        dedup.KIND: duplicates.run,
        archive.EXPORT: archives.export,
        archive.IMPORT: archives.import_,
    }
    if extraction.is_enabled:
        extract_sweep = ExtractionSweep(
            store,
            extraction,
            policy,
            min_confidence=settings.extraction.min_confidence,
            batch_size=settings.extraction.batch_size,
            code=settings.extraction.code,
            max_entities=settings.extraction.max_entities,
            max_relations=settings.extraction.max_relations,
            fuzzy=settings.dedup.entity_fuzzy,
            now=now,
        )
        handlers[sweep.KIND] = extract_sweep.run
    index: SemanticLeg | None = None
    memory: SemanticIndex | None = None
    notices = Notices(settings.palace, now=now)

    def rebuilt(path: str, why: str) -> None:
        notices.add(
            "vector cache rebuilt",
            path,
            f"the vector cache {path} was damaged ({why}) and is being rebuilt from the palace's stored vectors; "
            "nothing was lost, and meaning search uses the exact scan meanwhile",
        )

    def make_index(key: str) -> SemanticLeg:
        if store.backend == "postgres":
            # Vectors stay in the database, searched through pgvector's HNSW index (search/stored.py).
            return StoredVectorIndex(cast("NearestStore", store.embeddings), key)
        return SemanticIndex(
            store,
            key,
            ann_path=settings.palace / "vectors" / f"{file_name(key)}.usearch",
            ann_min_rows=settings.search.ann_min_rows,
            on_rebuilt=rebuilt,
        )

    # A palace embedded by another builtin model ranks by it until the configured one has embedded every drawer.
    serving = Serving(provider, model_key(provider))
    previous = previous_builtin(store.embeddings, serving.key, store.embeddings.embedded_models())
    if provider.is_enabled and previous is not None:
        serving = Serving(builtin_for(previous, settings.embeddings.threads), previous)
    if provider.is_enabled:
        index = make_index(serving.key)
        memory = index if isinstance(index, SemanticIndex) else None
    search = SearchEngine(
        store,
        serving.provider,
        index,
        context_weight=settings.search.context_weight,
        weights=FusionWeights(
            method=settings.search.fusion,
            k=settings.search.rrf_k,
            lexical=settings.search.lexical_weight,
            semantic=settings.search.semantic_weight,
        ),
        # The drawers the semantic leg misses: those the model it ranks by has not embedded.
        pending=(
            lambda: store.embeddings.count_missing_embeddings(transition.serving.key if transition else serving.key)
        )
        if provider.is_enabled
        else None,
        policy=policy,
        freshness=_freshness(settings),
        second_stage=SecondStage(
            settings.search.rerank, depth=settings.search.rerank_depth, weight=settings.search.rerank_weight
        ),
        now=now,
        parallel=settings.search.parallel,
        passages=(settings.embeddings.passage_chars, settings.embeddings.passage_overlap),
        fill_rows=settings.search.fill_rows,
    )
    maintainer = IndexMaintainer(memory) if memory is not None else None
    transition: ModelTransition | None = None
    if provider.is_enabled:
        if serving.key != model_key(provider):
            log.info("searches rank by %s until %s has embedded every drawer", serving.key, model_key(provider))
            transition = ModelTransition(
                store.embeddings,
                search,
                serving,
                Serving(provider, model_key(provider)),
                make_index,
                on_switch=lambda new: (
                    maintainer.switch(new) if maintainer is not None and isinstance(new, SemanticIndex) else None
                ),
            )
        backfill = EmbeddingBackfill(
            store.embeddings,
            provider,
            batch_size=settings.embeddings.batch_size,
            passage_chars=settings.embeddings.passage_chars,
            passage_overlap=settings.embeddings.passage_overlap,
            sentence_chars=settings.embeddings.sentence_chars,
            finish=transition.complete if transition is not None else None,
        )
        handlers[backfill_kind] = backfill.run
    checks = palace_checks(
        store, provider, lambda: search, lambda: built[0].jobs.request_embedding(requested_by="repair")
    )
    palace_audit = PalaceAudit(store.integrity, checks)
    handlers[AUDIT], handlers[REPAIR] = palace_audit.audit, palace_audit.repair
    # The room left on the palace's disk, to resume jobs a full disk paused (a PostgreSQL server's is not ours).
    room = (lambda: free_bytes(settings.palace)) if store.backend == "sqlite" else None
    # Room held back for cancel, pause and forget on a full disk (ADR 0051): on the palace's own disk only.
    reserve = (
        StorageReserve(settings.palace, settings.storage.reserve_bytes, exclusive=store.exclusive)
        if isinstance(store, SQLiteStore)
        else None
    )
    pool = WorkerPool(
        store.jobs,
        handlers,
        workers=settings.jobs.workers,
        lease_seconds=settings.jobs.lease_seconds,
        shared=store.backend != "sqlite",
        now=now,
        on_change=lambda job: events.publish("job", job.to_json()),
        room=room,
        resume_free_bytes=settings.jobs.resume_free_bytes,
        on_room=_room_again(store, reserve),
        background=BACKGROUND_SWEEPS,
        background_workers=math.floor(settings.jobs.background_share * settings.jobs.workers),
    )
    queue = JobQueue(
        store.jobs, pool, now=now, on_change=lambda job: events.publish("job", job.to_json()), reserve=reserve
    )
    services = Services(
        store=store,
        queue=queue,
        search=search,
        palace=settings.palace,
        connectors=connectors,
        miners=miners,
        embeddings=provider,
        policy=policy,
        extraction=extraction,
        duplicates=duplicates,
        roots=roots,
        now=now,
        events=events,
        reread_policy=lambda: load_policy(layers_from_settings(settings)),
        room=room,
        reserve=reserve,
        notices=notices,
        audit=ReadAudit(
            store.audit,
            enabled=settings.audit.enabled,
            retention_seconds=_duration(settings, "audit.retention"),
            max_records=settings.audit.max_records,
            now=now,
        ),
        check_names=palace_audit.names,
        entity_fuzzy=settings.dedup.entity_fuzzy,
        runtime=RuntimeService(
            store,
            admission=Admission(
                mode=settings.mode,
                auth=settings.auth.enabled,
                log_level=settings.logging.level,
                log_format=settings.logging.format,
            ),
            describe=settings.describe,
            config_file=str(settings.config_file),
            now=now,
        ),
    )
    built.append(services)
    pool.on_finished = services.jobs.after_job
    triggers = TriggerManager(
        services.miners.effective,
        services.miners.run,
        refusal=services.miners.refusal,
        probe=lambda spec: services.mining.change_token(spec.connector, spec.locator, spec.options),
    )
    services.miners.on_change = triggers.reconcile
    return Palace(
        settings=settings,
        store=store,
        pool=pool,
        services=services,
        now=now,
        maintainer=maintainer,
        triggers=triggers,
        expiry=ExpiryTimer(services.lifecycle.request_erase) if lifecycle.erases else None,
        reserve=reserve,
        model=serving.provider if provider.is_enabled else None,
    )


def _room_again(store: Store, reserve: StorageReserve | None) -> Callable[[], object] | None:
    """What the palace does once a full disk has room again: the reserve laid again, an owed index merge made."""
    if reserve is None or not isinstance(store, SQLiteStore):
        return None
    forgetting = store.forgetting
    return lambda: (reserve.lay(), forgetting.merge_index())


def file_name(text: str) -> str:
    """`text` as a safe file name (model keys hold slashes and colons)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def mined_event(job_id: str, filed: Sequence[NewDrawer]) -> dict[str, Any]:
    """A mined document's new drawers, as the event stream names drawers (`services.events`: never their text)."""
    refs = [{"id": d.id, "wing": d.wing, "room": d.room, "kind": d.source.kind} for d in filed]
    return {"action": "filed", "drawers": refs, "job_id": job_id}
