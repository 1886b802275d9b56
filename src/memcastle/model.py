"""Domain values: frozen dataclasses shared by every layer (SPEC §1)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")

JSON = dict[str, Any]

SOURCE_KINDS = ("file", "note", "transcript", "commit", "manual", "other")
RANKINGS = ("auto", "lexical", "semantic", "hybrid")
REQUESTERS = ("cli", "http", "mcp", "job", "web")


def content_hash(text: str) -> str:
    """SHA-256 of the verbatim content."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_NON_ALNUM = re.compile(r"[\W_]+")


def normalize_text(text: str) -> str:
    """Case-folded, every run of non-alphanumerics (in any script) collapsed to one space: the dedup normal form."""
    return _NON_ALNUM.sub(" ", text.casefold()).strip()


def fingerprint(text: str) -> str:
    """SHA-256 of the normalized text."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Origin:
    """Where a mined drawer came from, with the document's metadata frozen at that revision."""

    connector: str
    source_id: str
    document: str
    chunk: int
    revision: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    occurred_at: str | None = None

    def to_json(self) -> JSON:
        return {
            "connector": self.connector,
            "source_id": self.source_id,
            "document": self.document,
            "chunk": self.chunk,
            "revision": self.revision,
            "metadata": dict(self.metadata),
            "occurred_at": self.occurred_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Origin:
        return cls(
            connector=data["connector"],
            source_id=data["source_id"],
            document=data["document"],
            chunk=int(data["chunk"]),
            revision=data["revision"],
            metadata=dict(data.get("metadata") or {}),
            occurred_at=data.get("occurred_at"),
        )


@dataclass(frozen=True)
class Source:
    """What kind of thing a drawer holds and who or what it came from."""

    kind: str = "manual"
    uri: str | None = None
    agent: str | None = None
    origin: Origin | None = None

    def to_json(self) -> JSON:
        return {
            "kind": self.kind,
            "uri": self.uri,
            "agent": self.agent,
            "origin": self.origin.to_json() if self.origin else None,
        }


@dataclass(frozen=True)
class Provenance:
    """Which interface asked for a write, and under which job."""

    requested_by: str = "http"
    job_id: str | None = None
    reason: str | None = None  # why a supersession was asked for, kept on the replacement

    def to_json(self) -> JSON:
        data: JSON = {"requested_by": self.requested_by, "job_id": self.job_id}
        if self.reason is not None:
            data["reason"] = self.reason
        return data

    @classmethod
    def from_json(cls, data: JSON) -> Provenance:
        return cls(requested_by=data.get("requested_by", "http"), job_id=data.get("job_id"), reason=data.get("reason"))


@dataclass(frozen=True)
class NewDrawer:
    """A drawer about to be written; the store assigns timestamps and hashes."""

    wing: str
    room: str
    content: str
    name: str | None = None
    source: Source = field(default_factory=Source)
    tags: tuple[str, ...] = ()
    provenance: Provenance = field(default_factory=Provenance)
    id: str | None = None
    valid_from: str | None = None


@dataclass(frozen=True)
class Drawer:
    """One verbatim chunk: the atomic stored unit."""

    id: str
    wing: str
    room: str
    name: str | None
    content: str
    content_hash: str
    fingerprint: str
    source: Source
    tags: tuple[str, ...]
    provenance: Provenance
    valid_from: str
    valid_to: str | None
    supersedes: str | None
    superseded_by: str | None
    created_at: str

    @property
    def is_current(self) -> bool:
        return self.valid_to is None

    def to_json(self) -> JSON:
        return {
            "id": self.id,
            "wing": self.wing,
            "room": self.room,
            "name": self.name,
            "content": self.content,
            "content_hash": self.content_hash,
            "fingerprint": self.fingerprint,
            "source": self.source.to_json(),
            "tags": list(self.tags),
            "provenance": self.provenance.to_json(),
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Wing:
    name: str
    drawers: int
    created_at: str


@dataclass(frozen=True)
class Room:
    wing: str
    name: str
    drawers: int
    created_at: str


@dataclass(frozen=True)
class Page(Generic[T]):
    """A page of a listing; `next_after` is the cursor for the following page, None at the end."""

    items: tuple[T, ...]
    next_after: str | None


# --- jobs -----------------------------------------------------------------------------------------


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


# --- search ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeWindow:
    """Half-open window [start, end); an instant is start == end (eligible iff valid at that instant)."""

    start: str | None
    end: str | None
    is_instant: bool = False


@dataclass(frozen=True)
class LexicalQuery:
    """What the lexical leg asks a store for: these terms, every one required or any one enough.

    Each backend turns it into its own full-text dialect; user text never reaches the engine as syntax."""

    terms: tuple[str, ...]
    require_all: bool = True


class SimilarDrawer(NamedTuple):
    """A current drawer of the same room with the same hash (`exact`) or normalized text (`normalized`)."""

    drawer_id: str
    verdict: str


class DrawerPlace(NamedTuple):
    """Where a drawer lives and what mined it: fixed for the drawer's whole life."""

    wing: str
    room: str
    source_kind: str
    connector: str | None


@dataclass(frozen=True)
class Scope:
    """Filters applied inside the query, before any limit."""

    wing: str | None = None
    room: str | None = None
    tags: tuple[str, ...] = ()
    source_kind: str | None = None
    connector: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class SearchQuery:
    """A validated search request (SPEC §3)."""

    text: str
    limit: int = 10
    scope: Scope = field(default_factory=Scope)
    ranking: str = "auto"
    window: TimeWindow | None = None  # None = current
    include_historical: bool = False
    expand: bool = False
    preferences: bool = True


@dataclass(frozen=True)
class ScoredDrawer:
    """A drawer id with its base signal from one ranking leg (higher is better)."""

    drawer_id: str
    signal: float


@dataclass(frozen=True)
class Hit:
    drawer: Drawer
    score: float
    signals: Mapping[str, Any]
    via: tuple[str, ...] | None = None

    def to_json(self) -> JSON:
        out: JSON = {
            "drawer": self.drawer.to_json(),
            "score": self.score,
            "signals": dict(self.signals),
            "origin": self.drawer.source.origin.to_json() if self.drawer.source.origin else None,
        }
        if self.via is not None:
            out["via"] = list(self.via)
        return out


@dataclass(frozen=True)
class SearchResult:
    hits: tuple[Hit, ...]
    ranking: str
    warnings: tuple[str, ...] = ()

    def to_json(self) -> JSON:
        return {"hits": [h.to_json() for h in self.hits], "ranking": self.ranking, "warnings": list(self.warnings)}


# The only ways a job's status may change (SPEC §1); anything else is refused.
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


RECOVERY_BUDGET = 3
"""How many times a job interrupted by a crash (or taken over from a dead daemon) is requeued before it fails."""


def recovery_spent(recovery_attempts: int, budget: int = RECOVERY_BUDGET) -> str:
    """The error a job fails with once a crash would exceed its recovery budget."""
    return (
        f"interrupted by a daemon crash {recovery_attempts + 1} times; recovery budget ({budget}) spent — "
        "retry it once the cause is fixed"
    )


# --- mining ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentRecord:
    """What the palace remembers of one source document: its revision and the drawer of each chunk."""

    source_id: str
    external_id: str
    revision: str
    chunk_hashes: tuple[str, ...]
    drawer_ids: tuple[str, ...]
    updated_at: str


@dataclass(frozen=True)
class SourceRecord:
    """A mined source: connector + locator + options, and the cursor discovery resumes from."""

    id: str
    connector: str
    locator: str
    options: Mapping[str, str]
    cursor: str | None
    updated_at: str


@dataclass(frozen=True)
class DocumentChanges:
    """Everything one document's mining writes, applied by the store in a single transaction."""

    source: SourceRecord
    record: DocumentRecord
    created: tuple[NewDrawer, ...] = ()
    superseded: tuple[tuple[str, NewDrawer], ...] = ()  # (old drawer id, replacement)
    invalidated: tuple[str, ...] = ()
    at: str | None = None


# --- knowledge graph ------------------------------------------------------------------------------

FACT_STATES = ("current", "conflicting", "superseded", "invalidated", "historical")
LINK_KINDS = ("confirms", "contradicts", "supersedes", "refines", "invalidates")
SINGLE_VALUED_PREDICATES = frozenset({"located_in"})


@dataclass(frozen=True)
class Entity:
    id: str
    name: str
    kind: str
    key: str
    aliases: tuple[str, ...]
    created_at: str

    def to_json(self) -> JSON:
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "key": self.key,
            "aliases": list(self.aliases),
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Mention:
    drawer_id: str
    entity_id: str
    spelling: str


@dataclass(frozen=True)
class EntityHint:
    """A suggestion that two entities may be the same; never acted on automatically."""

    entity_id: str
    other_id: str
    kind: str
    reason: str


@dataclass(frozen=True)
class Assertion:
    """A fact edge with its provenance; `valid_to` is set only by an explicit close."""

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: str
    valid_to: str | None
    drawer_id: str | None
    extractor: str
    job_id: str | None
    origin: Mapping[str, Any] | None
    explicit: bool
    created_at: str

    def to_json(self) -> JSON:
        return {
            "id": self.id,
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "confidence": self.confidence,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "provenance": {
                "drawer": self.drawer_id,
                "extractor": self.extractor,
                "job_id": self.job_id,
                "origin": dict(self.origin) if self.origin else None,
            },
            "explicit": self.explicit,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class FactLink:
    """An immutable record between two facts; states are computed from these when read."""

    id: str
    from_id: str
    to_id: str
    kind: str
    origin: str  # inferred | explicit
    reason: str
    at: str
    evidence_drawer: str | None = None

    def to_json(self) -> JSON:
        return {
            "id": self.id,
            "from": self.from_id,
            "to": self.to_id,
            "kind": self.kind,
            "origin": self.origin,
            "reason": self.reason,
            "at": self.at,
            "evidence_drawer": self.evidence_drawer,
        }


@dataclass(frozen=True)
class DrawerLink:
    """Mined evidence that says the same thing as other evidence: linked, never merged."""

    from_id: str
    to_id: str
    verdict: str  # exact | normalized | near
    similarity: float
    created_at: str


@dataclass(frozen=True)
class GraphWrite:
    """Everything one extraction batch writes, in one transaction with the drawers' read markers."""

    extractor: str
    read_drawers: tuple[str, ...]
    entities: tuple[Entity, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # (entity id, alias)
    hints: tuple[EntityHint, ...] = ()
    mentions: tuple[Mention, ...] = ()
    assertions: tuple[Assertion, ...] = ()
    links: tuple[FactLink, ...] = ()


# --- configured miners ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MinerSpec:
    """A named miner from `[[miners]]`: a connector, a locator, options and a wing, to mine again by name."""

    name: str
    connector: str
    locator: str
    options: Mapping[str, str] = field(default_factory=dict)
    wing: str | None = None
    full: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "connector": self.connector,
            "locator": self.locator,
            "options": dict(self.options),
            "wing": self.wing,
            "full": self.full,
        }
