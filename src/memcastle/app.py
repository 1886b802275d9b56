"""Composition root: read settings once, build the object graph of one palace, start and stop it."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memcastle import archive, integrity
from memcastle.archive import ArchiveJobs
from memcastle.clock import Clock, utc_now
from memcastle.config import Settings, file_tables
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
from memcastle.events import Changes, EventBus
from memcastle.integrity.audit import AUDIT, REPAIR, PalaceAudit
from memcastle.jobs.context import JobHandler
from memcastle.jobs.queue import JobQueue
from memcastle.jobs.signals import JobSignals
from memcastle.jobs.worker import DiskWatch, PoolShape, WorkerPool
from memcastle.knowledge import dedup, sweep
from memcastle.knowledge.dedup import DuplicateFinder
from memcastle.knowledge.extraction import ExtractionProvider, build_extraction_provider
from memcastle.knowledge.sweep import ExtractionLimits, ExtractionSweep
from memcastle.mining import pipeline
from memcastle.mining.pipeline import MineLimits, MinePipeline
from memcastle.mining.roots import MiningRoots
from memcastle.model import Job, NewDrawer
from memcastle.model.jobs import BACKGROUND_SWEEPS
from memcastle.model.lifecycle import Lifecycle
from memcastle.model.mining import MinerSpec, parse_duration
from memcastle.palace import Palace as Palace  # what `build` returns
from memcastle.preferences import NO_FRESHNESS, Freshness, Policy, load_policy
from memcastle.runtime.daemons import find_daemon, state_dir
from memcastle.search.backfill import KIND as backfill_kind
from memcastle.search.backfill import EmbeddingBackfill, model_key
from memcastle.search.embeddings import EmbeddingProvider, build_provider
from memcastle.search.engine import SearchEngine, SemanticLeg
from memcastle.search.fusion import FusionWeights
from memcastle.search.maintainer import IndexMaintainer
from memcastle.search.passages import PassageShape
from memcastle.search.second_stage import SecondStage
from memcastle.search.semantic import SemanticIndex
from memcastle.search.stored import StoredVectorIndex
from memcastle.search.transition import ModelTransition, Serving, builtin_for, previous_builtin
from memcastle.search.tuning import EngineTuning
from memcastle.services import Housekeeping, MiningSources, Services, Trust, Understanding
from memcastle.services.agents import CHECKPOINT_JOB
from memcastle.services.audit import ReadAudit
from memcastle.services.daemon_view import Admission, RuntimeService
from memcastle.services.jobs import JobService
from memcastle.services.lifecycle import KIND as LIFECYCLE
from memcastle.services.maintenance import palace_check_names, palace_checks
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


def open_store(settings: Settings, *, now: Clock = utc_now, lifecycle: Lifecycle | None = None) -> Store:
    """SQLite in the palace directory, or PostgreSQL when `store.url` names a server (SPEC §8)."""
    url = settings.store.url
    if not url:
        return SQLiteStore(settings.palace, now=now, lifecycle=lifecycle)
    if not url.startswith(("postgresql://", "postgres://")):
        raise settings.error("store.url", "must be empty (SQLite in the palace directory) or a postgresql:// URL")
    PostgresStore = postgres_store("store.url")

    # The palace directory still holds the palace-local files (preferences.toml, tokens.json).
    settings.palace.mkdir(parents=True, exist_ok=True)
    return PostgresStore(url, max_connections=settings.jobs.workers + 8, now=now, lifecycle=lifecycle)


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

    `now` is the clock every timestamp of this palace comes from (a test hands in its own). Each part is built
    finished, from the parts before it: store, search, the job queue, the services, the job handlers and workers."""
    configured = read_configuration(settings)
    _refuse_a_full_disk(settings)
    store = open_store(settings, now=now, lifecycle=configured.lifecycle)
    events = EventBus()
    meaning = _meaning(settings, store, configured.provider, Notices(settings.palace, now=now))
    search = _search_engine(settings, store, configured.policy, meaning, now)
    upkeep = _model_upkeep(store, search, configured.provider, meaning)
    reserve = (
        StorageReserve(settings.palace, settings.storage.reserve_bytes, exclusive=store.exclusive)
        if isinstance(store, SQLiteStore)
        else None
    )  # room held back for cancel, pause and forget on a full disk (ADR 0051): on the palace's own disk only
    signals = JobSignals(store.jobs)
    publish_job = partial(_publish_job, events)
    queue = JobQueue(store.jobs, signals, now=now, on_change=publish_job, reserve=reserve)
    jobs = JobService(
        store.jobs,
        queue,
        embeddings=configured.provider,
        extraction=configured.extraction,
        check_names=partial(_check_names, store, configured.provider),
    )
    audit = PalaceAudit(
        store.integrity, palace_checks(store, configured.provider, lambda: search, jobs.request_embedding)
    )
    duplicates = DuplicateFinder(store.near, settings.dedup.near_threshold, now=now, enabled=settings.dedup.enabled)
    core = Core(settings, configured, store, events, now, Changes())
    services = _services(core, jobs, search, duplicates, reserve, meaning.notices)
    handlers = _handlers(core, services, duplicates, upkeep, audit)
    shape = PoolShape(
        settings.jobs.workers,
        settings.jobs.lease_seconds,
        shared=store.backend != "sqlite",
        background=BACKGROUND_SWEEPS,
        background_workers=math.floor(settings.jobs.background_share * settings.jobs.workers),
    )
    disk = DiskWatch(_room(settings, store), settings.jobs.resume_free_bytes, _room_again(store, reserve))
    pool = WorkerPool(
        store.jobs,
        handlers,
        shape,
        disk=disk,
        now=now,
        on_change=publish_job,
        signals=signals,
        on_finished=services.job_finished,
    )
    return Palace(
        settings=settings,
        store=store,
        pool=pool,
        services=services,
        now=now,
        maintainer=upkeep.maintainer,
        triggers=_triggers(services, core.miner_changes),
        expiry=ExpiryTimer(services.lifecycle.request_erase) if configured.lifecycle.erases else None,
        reserve=reserve,
        model=meaning.serving.provider if configured.provider.is_enabled else None,
    )


def _refuse_a_full_disk(settings: Settings) -> None:
    """A start writes (jobs a dead daemon left are requeued, the log grows), and opening the palace may first free
    room by folding its log back in: whether the start then fits is luck. On a full disk it is refused plainly,
    before anything is opened, instead of serving until the first write fails."""
    if not settings.store.url:
        free = free_bytes(settings.palace)
        if free is not None and free < NEARLY_FULL_BYTES:
            raise StorageFull.of(str(settings.palace), free)


def _publish_job(events: EventBus, job: Job) -> None:
    events.publish("job", job.to_json())


def _check_names(store: Store, provider: EmbeddingProvider) -> list[str]:
    """The palace audit's checks: the store's, then those of the vectors (`services.maintenance`)."""
    return [*store.integrity.check_names(), *palace_check_names(store, provider)]


def _room(settings: Settings, store: Store) -> Callable[[], int | None] | None:
    """The room left on the palace's disk, to resume jobs a full disk paused (a PostgreSQL server's is not ours)."""
    return partial(free_bytes, settings.palace) if store.backend == "sqlite" else None


@dataclass(frozen=True)
class Meaning:
    """What search by meaning ranks with: the model serving queries now (a palace embedded by another builtin model
    ranks by it until the configured one has embedded every drawer) and its index, and how to make another's."""

    serving: Serving
    index: SemanticLeg | None
    make_index: Callable[[str], SemanticLeg]
    notices: Notices


def _meaning(settings: Settings, store: Store, provider: EmbeddingProvider, notices: Notices) -> Meaning:
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

    serving = Serving(provider, model_key(provider))
    previous = previous_builtin(store.embeddings, serving.key, store.embeddings.embedded_models())
    if provider.is_enabled and previous is not None:
        serving = Serving(builtin_for(previous, settings.embeddings.threads), previous)
    index = make_index(serving.key) if provider.is_enabled else None
    return Meaning(serving, index, make_index, notices)


def _search_engine(settings: Settings, store: Store, policy: Policy, meaning: Meaning, now: Clock) -> SearchEngine:
    tuning = EngineTuning(
        weights=FusionWeights(
            method=settings.search.fusion,
            k=settings.search.rrf_k,
            lexical=settings.search.lexical_weight,
            semantic=settings.search.semantic_weight,
        ),
        passages=(settings.embeddings.passage_chars, settings.embeddings.passage_overlap),
        fill_rows=settings.search.fill_rows,
        context_weight=settings.search.context_weight,
        parallel=settings.search.parallel,
        freshness=_freshness(settings),
        second_stage=SecondStage(
            settings.search.rerank, depth=settings.search.rerank_depth, weight=settings.search.rerank_weight
        ),
    )
    return SearchEngine(
        store,
        meaning.serving.provider,
        meaning.index,
        tuning=tuning,
        # The drawers the semantic leg misses: those the model it ranks by has not embedded.
        pending=store.embeddings.count_missing_embeddings if meaning.index is not None else None,
        policy=policy,
        now=now,
    )


@dataclass(frozen=True)
class ModelUpkeep:
    """What keeps the vectors in step: the in-memory index's maintainer, and the move to the configured model when
    the palace was embedded by another."""

    maintainer: IndexMaintainer | None
    transition: ModelTransition | None


def _model_upkeep(store: Store, search: SearchEngine, provider: EmbeddingProvider, meaning: Meaning) -> ModelUpkeep:
    memory = meaning.index if isinstance(meaning.index, SemanticIndex) else None
    maintainer = IndexMaintainer(memory) if memory is not None else None
    if not provider.is_enabled or meaning.serving.key == model_key(provider):
        return ModelUpkeep(maintainer, None)
    log.info("searches rank by %s until %s has embedded every drawer", meaning.serving.key, model_key(provider))

    def switched(new: SemanticLeg) -> None:
        if maintainer is not None and isinstance(new, SemanticIndex):
            maintainer.switch(new)

    transition = ModelTransition(
        store.embeddings,
        search,
        meaning.serving,
        Serving(provider, model_key(provider)),
        meaning.make_index,
        on_switch=switched,
    )
    return ModelUpkeep(maintainer, transition)


@dataclass(frozen=True)
class Core:
    """What the services and the job handlers are built from."""

    settings: Settings
    configured: Configuration
    store: Store
    events: EventBus
    now: Clock
    miner_changes: Changes  # made before the miners' service and the triggers, which follow it


def _services(
    core: Core,
    jobs: JobService,
    search: SearchEngine,
    duplicates: DuplicateFinder,
    reserve: StorageReserve | None,
    notices: Notices,
) -> Services:
    settings, configured, store, now = core.settings, core.configured, core.store, core.now
    audit = ReadAudit(
        store.audit,
        enabled=settings.audit.enabled,
        retention_seconds=_duration(settings, "audit.retention"),
        max_records=settings.audit.max_records,
        now=now,
    )
    admission = Admission(
        mode=settings.mode,
        auth=settings.auth.enabled,
        log_level=settings.logging.level,
        log_format=settings.logging.format,
    )
    runtime = RuntimeService(
        store, admission=admission, describe=settings.describe, config_file=str(settings.config_file), now=now
    )
    return Services(
        store,
        jobs,
        search,
        MiningSources(
            configured.connectors,
            configured.miners,
            configured.roots,
            core.miner_changes,
            reread=partial(_reread_miners, settings),
        ),
        Understanding(configured.provider, configured.extraction, duplicates, settings.dedup.entity_fuzzy),
        Trust(configured.policy, partial(_reread_policy, settings)),
        Housekeeping(
            settings.palace,
            now,
            events=core.events,
            room=_room(settings, store),
            audit=audit,
            reserve=reserve,
            notices=notices,
            runtime=runtime,
        ),
    )


def _reread_miners(settings: Settings) -> dict[str, MinerSpec]:
    return load_miners(file_tables(settings.config_file).get("miners"))


def _reread_policy(settings: Settings) -> Policy:
    return load_policy(layers_from_settings(settings))


def _handlers(
    core: Core, services: Services, duplicates: DuplicateFinder, upkeep: ModelUpkeep, audit: PalaceAudit
) -> dict[str, JobHandler]:
    """What each job kind runs."""
    settings, configured, store, now, events = core.settings, core.configured, core.store, core.now, core.events
    mine_pipeline = MinePipeline(
        store,
        configured.connectors,
        MineLimits(settings.mining.chunk_chars, settings.mining.max_documents),
        roots=configured.roots,
        link_copies=duplicates.enabled,
        now=now,
        on_filed=lambda job_id, filed: events.publish("drawers", mined_event(job_id, filed)),
    )
    archives = ArchiveJobs(store, settings.palace)
    handlers: dict[str, JobHandler] = {
        LIFECYCLE: services.lifecycle.erase_expired,
        CHECKPOINT_JOB: services.agents.checkpoint_job,
        integrity.KIND: partial(integrity.verify_palace, store.drawers),
        pipeline.KIND: mine_pipeline.run,
        dedup.KIND: duplicates.run,
        archive.EXPORT: archives.export,
        archive.IMPORT: archives.import_,
        AUDIT: audit.audit,
        REPAIR: audit.repair,
    }
    if configured.extraction.is_enabled:
        handlers[sweep.KIND] = ExtractionSweep(
            store,
            configured.extraction,
            configured.policy,
            ExtractionLimits(
                settings.extraction.min_confidence, settings.extraction.max_entities, settings.extraction.max_relations
            ),
            batch_size=settings.extraction.batch_size,
            code=settings.extraction.code,
            fuzzy=settings.dedup.entity_fuzzy,
            now=now,
        ).run
    if configured.provider.is_enabled:
        handlers[backfill_kind] = EmbeddingBackfill(
            store.embeddings,
            configured.provider,
            batch_size=settings.embeddings.batch_size,
            passages=PassageShape(
                settings.embeddings.passage_chars,
                settings.embeddings.passage_overlap,
                settings.embeddings.sentence_chars,
            ),
            finish=upkeep.transition.complete if upkeep.transition is not None else None,
        ).run
    return handlers


def _triggers(services: Services, miner_changes: Changes) -> TriggerManager:
    """The miners' watch and schedule triggers, following every change to the miners (`MinerService`)."""
    return TriggerManager(
        services.miners.effective,
        services.miners.run,
        refusal=services.miners.refusal,
        probe=lambda spec: services.mining.change_token(spec.connector, spec.locator, spec.options),
        changes=miner_changes,
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
