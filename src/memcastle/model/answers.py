"""What read operations answer: typed values each interface renders with `to_json` (REST and MCP as JSON, the CLI
through its output rule, the web page through its templates).

The wire shapes are those the API has always had (docs/api.md); only their construction is typed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memcastle.model.drawers import Drawer
from memcastle.model.graph import Assertion, Entity, EntityHint, FactLink, Mention
from memcastle.model.mining import MinerSpec
from memcastle.model.vocabulary import FactState

JSON = dict[str, Any]


# --- facts --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConflictChoice:
    """In a conflict, the fact the policy prefers among the group's members, and why (ADR 048)."""

    preferred_id: str
    basis: str


@dataclass(frozen=True)
class FactView:
    """A fact as read at one instant: the assertion, its entities' names, its computed state and links, the
    preference level of its evidence, and in a conflict the group's preferred member."""

    fact: Assertion
    subject_name: str | None
    object_name: str | None
    state: FactState
    links: tuple[FactLink, ...]
    level: str
    adjustment: float
    conflict: ConflictChoice | None = None
    resolved: Mapping[str, Any] | None = None  # what decided the level: the evidence's connector and criterion

    @property
    def preference(self) -> dict[str, Any]:
        """The level, its adjustment and what it was resolved from (ADR 048: every fact says why it ranks so)."""
        found = dict(self.resolved or {})
        return {
            "level": self.level,
            "adjustment": self.adjustment,
            "connector": found.get("connector"),
            "criterion": found.get("criterion"),
        }

    @property
    def id(self) -> str:
        return self.fact.id

    def to_json(self) -> JSON:
        fact = self.fact
        lifecycle: JSON = {
            "state": self.state,
            "links": [link.to_json() for link in self.links],
            "preference": self.preference,
        }
        if self.conflict is not None:
            lifecycle.update(
                {
                    "preferred": self.conflict.preferred_id == fact.id,
                    "preferred_id": self.conflict.preferred_id,
                    "basis": self.conflict.basis,
                }
            )
        return {
            **fact.to_json(),
            # Facts are read in words: subject and object are the entities' names, their ids beside them.
            "subject": self.subject_name if self.subject_name is not None else fact.subject,
            "object": self.object_name if self.object_name is not None else fact.object,
            "subject_id": fact.subject,
            "object_id": fact.object,
            "subject_name": self.subject_name,
            "object_name": self.object_name,
            "lifecycle": lifecycle,
        }


@dataclass(frozen=True)
class Superseded:
    """A correction: the replacement opened and the fact it closed."""

    fact: FactView
    superseded: FactView

    def to_json(self) -> JSON:
        return {"fact": self.fact.to_json(), "superseded": self.superseded.to_json()}


@dataclass(frozen=True)
class Linked:
    """An explicit link recorded between two facts, with both as they read now."""

    link: FactLink
    source: FactView
    target: FactView

    def to_json(self) -> JSON:
        return {"link": self.link.to_json(), "from": self.source.to_json(), "to": self.target.to_json()}


@dataclass(frozen=True)
class EntityView:
    """An entity with the drawers that mention it and the hints left for a person (possible duplicates)."""

    entity: Entity
    mentions: tuple[Mention, ...]
    hints: tuple[EntityHint, ...]

    def to_json(self) -> JSON:
        return {
            **self.entity.to_json(),
            "mentions": [{"drawer": m.drawer_id, "spelling": m.spelling} for m in self.mentions],
            "hints": [
                {"entity": h.entity_id, "other": h.other_id, "kind": h.kind, "reason": h.reason} for h in self.hints
            ],
        }


# --- drawers ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Duplicate:
    """Another drawer linked to one as an exact, normalized or near copy (linked, never merged)."""

    drawer: Drawer
    verdict: str
    similarity: float | None
    linked_at: str

    def to_json(self) -> JSON:
        return {
            "drawer": self.drawer.to_json(),
            "verdict": self.verdict,
            "similarity": self.similarity,
            "linked_at": self.linked_at,
        }


@dataclass(frozen=True)
class PreferenceTrace:
    """How the effective policy resolves one drawer's frozen origin, step by step (`preferences.explain`)."""

    drawer_id: str
    trace: Mapping[str, Any]

    def to_json(self) -> JSON:
        return {"drawer_id": self.drawer_id, **self.trace}


# --- miners -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LastRun:
    """A miner's last run: its job (`gone` once the job record was pruned), when and what asked for it."""

    job_id: str
    status: str
    at: str | None
    trigger: str | None
    result: Mapping[str, Any] | None = None
    error: str | None = None

    def to_json(self) -> JSON:
        return {
            "job_id": self.job_id,
            "status": self.status,
            "at": self.at,
            "trigger": self.trigger,
            "result": dict(self.result) if self.result else None,
            "error": self.error,
        }


@dataclass(frozen=True)
class MinerView:
    """A miner with its triggers, whether it is enabled, its last and next run, and whether the config file's miner
    of the same name shadows it."""

    spec: MinerSpec
    enabled: bool
    last_run: LastRun | None
    next_run: str | None
    shadowed: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def triggers(self) -> list[str]:
        spec = self.spec
        return [
            trigger
            for trigger, present in (
                ("watch", spec.watch),
                ("schedule", spec.every),
                ("poll", spec.poll),
                ("webhook", spec.webhook),
            )  # fmt: skip
            if present
        ]

    def to_json(self) -> JSON:
        return {
            **self.spec.to_json(),
            "triggers": self.triggers,
            "enabled": self.enabled,
            "state": "enabled" if self.enabled else "disabled",
            "last_run": self.last_run.to_json() if self.last_run else None,
            "next_run": self.next_run,
            "shadowed": self.shadowed,
        }


# --- status -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backlog:
    """Passages embedded and still to embed, with the rate and ETA the running embed sweep last measured (None
    while no sweep has measured anything)."""

    passages_done: int | None = None
    passages_pending: int | None = None
    passages_per_second: float | None = None
    eta_seconds: float | None = None

    def to_json(self) -> JSON:
        return {
            "passages_done": self.passages_done,
            "passages_pending": self.passages_pending,
            "passages_per_second": self.passages_per_second,
            "eta_seconds": self.eta_seconds,
        }


@dataclass(frozen=True)
class EmbeddingStatus:
    """The embedding provider, its model, and what it still has to do."""

    provider: str
    model: str | None
    dimension: int | None
    pending: int
    backlog: Backlog
    enabled: bool = False
    index: Mapping[str, Any] | None = None  # the semantic index's own state (None while it has none), when enabled

    def to_json(self) -> JSON:
        out: JSON = {
            "provider": self.provider,
            "model": self.model,
            "dimension": self.dimension,
            "pending": self.pending,
            **self.backlog.to_json(),
        }
        if self.enabled:
            out["index"] = dict(self.index) if self.index is not None else None
        return out


@dataclass(frozen=True)
class ExtractionStatus:
    """The extraction provider, its model, the drawers it has still to read and the facts the palace holds."""

    provider: str
    model: str | None
    pending: int
    facts: int

    def to_json(self) -> JSON:
        return {"provider": self.provider, "model": self.model, "pending": self.pending, "facts": self.facts}


@dataclass(frozen=True)
class DaemonInfo:
    """The process serving the palace: who it is, where it listens, since when, and how it admits clients."""

    pid: int | None  # None when the palace is used in-process, not through a daemon
    address: str | None
    started_at: str | None
    uptime_seconds: float | None
    mode: str
    auth: bool
    log_level: str
    log_format: str

    def to_json(self) -> JSON:
        return {
            "pid": self.pid,
            "address": self.address,
            "started_at": self.started_at,
            "uptime_seconds": self.uptime_seconds,
            "mode": self.mode,
            "auth": self.auth,
            "logging": {"level": self.log_level, "format": self.log_format},
        }


@dataclass(frozen=True)
class SchemaInfo:
    """The palace's schema version, the newest this code knows, and the migrations it still lacks."""

    version: int
    latest: int
    pending: tuple[str, ...] = ()

    def to_json(self) -> JSON:
        return {"version": self.version, "latest": self.latest, "pending_migrations": list(self.pending)}


@dataclass(frozen=True)
class PalaceStatus:
    """The palace's health at a glance (`GET /api/status`, `memcastle status`)."""

    version: str
    palace: str
    backend: str
    location: str
    drawers: int
    drawers_total: int
    jobs: Mapping[str, int]
    embeddings: EmbeddingStatus
    extraction: ExtractionStatus
    warnings: tuple[str, ...] = field(default=())
    daemon: DaemonInfo | None = None
    schema: SchemaInfo | None = None  # None for a client that reads only part of the palace

    def to_json(self) -> JSON:
        return {
            "ok": True,
            "version": self.version,
            "palace": self.palace,
            "store": {"backend": self.backend, "location": self.location},
            "drawers": self.drawers,
            "drawers_total": self.drawers_total,
            "jobs": dict(self.jobs),
            "embeddings": self.embeddings.to_json(),
            "extraction": self.extraction.to_json(),
            "warnings": list(self.warnings),
            "daemon": self.daemon.to_json() if self.daemon else None,
            "schema": self.schema.to_json() if self.schema else None,
        }


# --- places and preferences ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Renamed:
    """A wing or room renamed: where its drawers now live, and what a later mine must be told."""

    wing: str
    room: str | None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> JSON:
        return {"wing": self.wing, "room": self.room, "warnings": list(self.warnings)}


@dataclass(frozen=True)
class PreferenceCheck:
    """The preference files read again: whether they are valid, and whether they still say what the daemon ranks with
    (an edit takes effect at the next start)."""

    ok: bool
    current: bool
    layers: Any
    error: str | None = None

    def to_json(self) -> JSON:
        return {"ok": self.ok, "error": self.error, "current": self.current, "layers": self.layers}


def standing_line(standing: Mapping[str, Any] | None) -> str | None:
    """What a hit's drawer evidences about a contested fact, in a line: `conflicting: Harbor located_in Frankfurt;
    stands: Harbor located_in Berlin (acfb7462), equal quality; later valid_from (…)` — or, for the claim that stands,
    its state and why it stands. The score's move, when the hit traded places for it, ends the line."""
    if not standing:
        return None
    moved = float(standing.get("adjustment") or 0.0)
    end = f" [{moved:+.3f}]" if moved else ""
    if standing.get("stands"):
        return f"{standing['state']}: {standing['fact']} stands, {standing['basis']}{end}"
    claim = f"{standing['standing']} ({str(standing['standing_id'])[:8]})"
    return f"{standing['state']}: {standing['fact']}; stands: {claim}, {standing['basis']}{end}"


TITLE_CHARS = 60  # a drawer titled by its text shows at most this much of it


def drawer_title(document: str | None, lines: Sequence[int] | None, name: str | None, text: str) -> str:
    """What a person calls a drawer (the web page's title, the terminal's heading): its document and lines when a
    source filed it (`json/encoder.py, lines 166–332`), else its name, else the start of its text."""
    if document:
        return f"{document}, lines {lines[0]}–{lines[1]}" if lines else document
    if name:
        return name
    words = " ".join(text.split())
    return words[: TITLE_CHARS - 1] + "…" if len(words) > TITLE_CHARS else words
