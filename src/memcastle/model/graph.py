"""The knowledge graph's values: entities, mentions, hints, assertions, fact links, drawer links."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memcastle.model.drawers import JSON
from memcastle.model.vocabulary import FACT_STATES as FACT_STATES  # re-exported where it was

LINK_KINDS = ("confirms", "contradicts", "supersedes", "refines", "invalidates")
SINGLE_VALUED_PREDICATES = frozenset({"located_in"})


# Keys this long take part in one-edit matching (SPEC §4); shorter names are too easily one edit from another.
EDIT_MIN_CHARS = 6


def key_variants(key: str) -> set[str]:
    """The key and each of its one-character deletions: two keys within one edit share one of these."""
    if len(key) < EDIT_MIN_CHARS:
        return set()
    return {key, *(key[:i] + key[i + 1 :] for i in range(len(key)))}


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
class NearKeys:
    """What finds a drawer's near copies: its MinHash band keys and signature (both empty for a text too short to
    compare; its exact and normalized copies are still looked for)."""

    drawer_id: str
    bands: tuple[int, ...] = ()
    signature: bytes = b""


@dataclass(frozen=True)
class NearSubject:
    """A drawer whose copies are still to be looked for, with what finds them."""

    seq: int
    id: str
    room_id: int
    content_hash: str
    fingerprint: str
    current: bool
    bands: tuple[int, ...] = ()
    signature: bytes = b""


@dataclass(frozen=True)
class NearCandidate:
    """A current drawer that may be a copy of a subject: found by hash, fingerprint or shared band keys."""

    seq: int
    id: str
    room_id: int
    content_hash: str = ""
    fingerprint: str = ""


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
