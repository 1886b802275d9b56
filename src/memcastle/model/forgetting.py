"""Forgetting: the scope of a forget, what it removed (or would remove), and the tombstone it leaves.

A forget erases drawers and everything derived from them (docs/lifecycle.md). What remains is a tombstone: when, by
whom, which scope and how much went — never any of the content. A search scope is recorded by a digest of its query,
since the query itself may be the very words being forgotten.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from memcastle.model.drawers import JSON
from memcastle.model.search import LexicalQuery, Scope
from memcastle.model.time import ANY_TIME

FORGET_SCOPES = ("drawer", "document", "source", "room", "wing", "search")
# Scopes that are dry runs unless confirmed: they reach drawers the caller may not have looked at one by one.
BROAD_SCOPES = frozenset({"source", "room", "wing", "search"})
PREVIEW_DRAWERS = 50  # drawers a report lists; the counts cover all of them


class Scoped:
    """What every forget scope has: its `kind` (one of `FORGET_SCOPES`), whether it is broad, and how its tombstone
    records it (its fields, nothing of a search's words)."""

    kind: ClassVar[str]

    @property
    def broad(self) -> bool:
        return self.kind in BROAD_SCOPES

    def to_json(self) -> JSON:
        return {"kind": self.kind, **vars(self)}


@dataclass(frozen=True)
class DrawerScope(Scoped):
    """One drawer with its whole history."""

    drawer_id: str
    kind: ClassVar[str] = "drawer"


@dataclass(frozen=True)
class DocumentScope(Scoped):
    """One mined document, every revision of it."""

    source_id: str
    document: str
    kind: ClassVar[str] = "document"


@dataclass(frozen=True)
class SourceScope(Scoped):
    """Every drawer mined from one source."""

    source_id: str
    kind: ClassVar[str] = "source"


@dataclass(frozen=True)
class RoomScope(Scoped):
    """A room with every drawer in it."""

    wing: str
    room: str
    kind: ClassVar[str] = "room"


@dataclass(frozen=True)
class WingScope(Scoped):
    """A wing with every room and drawer in it."""

    wing: str
    kind: ClassVar[str] = "wing"


@dataclass(frozen=True)
class SearchScope(Scoped):
    """The drawers whose text matches every term of a search, inside its filters (every version unless a time is
    given)."""

    query: LexicalQuery
    query_text: str
    filters: Scope = field(default_factory=lambda: Scope(when=ANY_TIME))  # with the time a search asks for
    kind: ClassVar[str] = "search"

    def to_json(self) -> JSON:
        """A search by the SHA-256 of its query, never its words."""
        out: dict[str, Any] = {"kind": self.kind}
        out["query_sha256"] = hashlib.sha256(self.query_text.encode("utf-8")).hexdigest()
        out["filters"] = {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in ((f.name, getattr(self.filters, f.name)) for f in fields(self.filters) if f.name != "when")
            if v
        }
        out.update(self.filters.when.to_json())
        return out


# What to forget: one value of its kind.
ForgetScope = DrawerScope | DocumentScope | SourceScope | RoomScope | WingScope | SearchScope


COUNTS = (
    "drawers",  # version chains: a drawer with its history counts once
    "versions",  # drawer records
    "passages",  # passage vectors
    "facts",  # facts removed: their only evidence was forgotten
    "facts_kept",  # facts that stay, with the forgotten evidence removed from their provenance
    "fact_links",
    "mentions",
    "entities",  # entities nothing mentions or states a fact about any more
    "drawer_links",  # duplicate links
    "documents",  # document records whose chunks were forgotten
    "rooms",
    "wings",
)


@dataclass(frozen=True)
class ForgottenDrawer:
    """One drawer a forget reaches, as its report lists it (a short preview, so a person can check the scope)."""

    id: str
    wing: str
    room: str
    valid_from: str
    valid_to: str | None
    document: str | None
    preview: str

    def to_json(self) -> JSON:
        return {
            "id": self.id,
            "wing": self.wing,
            "room": self.room,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "document": self.document,
            "preview": self.preview,
        }


@dataclass(frozen=True)
class Tombstone:
    id: str
    at: str
    requested_by: str
    scope: Mapping[str, Any]
    counts: Mapping[str, int]

    def to_json(self) -> JSON:
        return {
            "id": self.id,
            "at": self.at,
            "requested_by": self.requested_by,
            "scope": dict(self.scope),
            "counts": dict(self.counts),
        }


@dataclass(frozen=True)
class ForgetReport:
    """What a forget removed, or with `dry_run` what it would remove; `tombstone` is what it left."""

    scope: ForgetScope
    dry_run: bool
    counts: Mapping[str, int]
    drawers: tuple[ForgottenDrawer, ...]
    drawer_ids: tuple[str, ...] = ()  # every drawer removed (empty for a dry run), for the in-memory indexes
    tombstone: Tombstone | None = None

    def to_json(self) -> JSON:
        return {
            "dry_run": self.dry_run,
            "scope": self.scope.to_json(),
            "counts": dict(self.counts),
            "drawers": [d.to_json() for d in self.drawers],
            "more": max(0, int(self.counts.get("versions", 0)) - len(self.drawers)),
            "tombstone": self.tombstone.to_json() if self.tombstone else None,
        }
