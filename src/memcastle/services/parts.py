"""What `Services` is built from besides the store, the job service and the search engine, grouped by concern: where
mining reads from, what understands the text, which sources are trusted, and the palace's housekeeping."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memcastle.clock import Clock, utc_now
from memcastle.connectors.registry import ConnectorRegistry
from memcastle.events import Changes, EventBus
from memcastle.knowledge.dedup import DuplicateFinder
from memcastle.knowledge.extraction import ExtractionProvider
from memcastle.metrics import Metrics
from memcastle.mining.roots import MiningRoots
from memcastle.model import MinerSpec
from memcastle.preferences import Policy
from memcastle.search.embeddings import EmbeddingProvider
from memcastle.services.audit import ReadAudit
from memcastle.services.daemon_view import RuntimeService
from memcastle.store.notices import Notices
from memcastle.store.reserve import StorageReserve


@dataclass(frozen=True)
class MiningSources:
    """The connectors, the miners the config file declares, the folders mining may read (None: anywhere) and the
    signal told when a miner changes (the triggers follow it)."""

    connectors: ConnectorRegistry
    miners: Mapping[str, MinerSpec]
    roots: MiningRoots | None = None
    changes: Changes | None = None
    reread: Callable[[], Mapping[str, MinerSpec]] | None = None  # the config file's miners, read again


@dataclass(frozen=True)
class Understanding:
    """What reads meaning into text: the embedding and extraction providers, the duplicate finder, and whether
    entity names match loosely."""

    embeddings: EmbeddingProvider
    extraction: ExtractionProvider
    duplicates: DuplicateFinder
    entity_fuzzy: bool = True


@dataclass(frozen=True)
class Trust:
    """The source preferences ranked with, and how to read their files again (to tell an edit not yet in force)."""

    policy: Policy
    reread: Callable[[], Policy] | None = None


@dataclass(frozen=True)
class Housekeeping:
    """The palace's folder and clock, and what watches over it: the event bus, the free room on its disk, the read
    audit, the storage reserve, the notices, the daemon's runtime figures and its metrics (each made plain when not
    given)."""

    palace: Path
    now: Clock = utc_now
    events: EventBus | None = None
    room: Callable[[], int | None] | None = None
    audit: ReadAudit | None = None
    reserve: StorageReserve | None = None
    notices: Notices | None = None
    runtime: RuntimeService | None = None
    metrics: Metrics | None = None
