"""Drawers and where they live: content hashing, origin and provenance, wings, rooms, pages."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from memcastle.model.vocabulary import RANKINGS as RANKINGS  # re-exported where they were
from memcastle.model.vocabulary import SOURCE_KINDS as SOURCE_KINDS

T = TypeVar("T")

JSON = dict[str, Any]


REQUESTERS = ("cli", "http", "mcp", "job", "web")


def content_hash(text: str) -> str:
    """SHA-256 of the verbatim content."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_NON_ALNUM = re.compile(r"[\W_]+")


def normalize_text(text: str) -> str:
    """Case-folded, every run of non-alphanumerics (in any script) collapsed to one space: the dedup normal form.

    A text of chunk size is normalized once however many readers it has (a mined drawer's near-duplicate keys, when
    its document is cut, and its fingerprint, when its batch is filed): the last few hundred are remembered, looked up
    by the string's cached hash."""
    if len(text) <= _CACHED_CHARS:
        return _normalized(text)
    return _normalize(text)


_CACHED_CHARS = 16_384


@functools.lru_cache(maxsize=512)  # more than the drawers of a mined batch
def _normalized(text: str) -> str:
    return _normalize(text)


def _normalize(text: str) -> str:
    if text.isascii():  # most code and much prose: the same result by a byte table, ~3× faster than the regex
        return " ".join(text.encode("ascii").translate(_ASCII_NORMAL).decode("ascii").split())
    return _NON_ALNUM.sub(" ", text.casefold()).strip()


# ASCII letters lower-cased, digits kept, every other byte a space (`[\W_]` in ASCII).
_ASCII_NORMAL = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else (c + 32 if 65 <= c <= 90 else 32) for c in range(256))


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
    lines: tuple[int, int] | None = None  # the chunk's first and last line in the document, for line-based documents

    def to_json(self) -> JSON:
        out: JSON = {
            "connector": self.connector,
            "source_id": self.source_id,
            "document": self.document,
            "chunk": self.chunk,
            "revision": self.revision,
            "metadata": dict(self.metadata),
            "occurred_at": self.occurred_at,
        }
        if self.lines is not None:
            out["lines"] = list(self.lines)
        return out

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
            lines=_line_range(data.get("lines")),
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
    expires_at: str | None = None  # its own expiry (a note or checkpoint kept for so long); canonical instant


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
    created_at: str  # when the palace learnt it (record time; `valid_from` is when it held: event time)
    closed_at: str | None = None  # when the palace learnt that it closed
    closed_reason: str | None = None  # why it closed without a successor ("removed at source")
    pinned: bool = False  # always enters its wing's wake-up and recall (a person's mark; versions keep it)
    hidden: bool = False  # left out of search, recall and wake-up unless asked for
    expires_at: str | None = None  # its own expiry; `[[lifecycle]]` rules may give it an earlier one

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
            "closed_at": self.closed_at,
            "closed_reason": self.closed_reason,
            "pinned": self.pinned,
            "hidden": self.hidden,
            "expires_at": self.expires_at,
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
class PlaceTotals:
    """A wing's, or a room's, counts: current drawers, every version, its rooms (a wing's), the last filing."""

    wing: str
    room: str | None
    created_at: str
    drawers: int
    versions: int
    rooms: int | None
    last_filed_at: str | None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"wing": self.wing, "created_at": self.created_at, "drawers": self.drawers,
                               "versions": self.versions, "last_filed_at": self.last_filed_at}  # fmt: skip
        if self.room is None:
            out["rooms"] = self.rooms
        else:
            out["room"] = self.room
        return out


@dataclass(frozen=True)
class Page(Generic[T]):
    """A page of a listing; `next_after` is the cursor for the following page, None at the end."""

    items: tuple[T, ...]
    next_after: str | None


@dataclass(frozen=True)
class RequestKey:
    """An idempotency key as the store holds it: the operation and request digest it was first used with, and once
    `state` is `done`, what that request wrote (`result`)."""

    key: str
    operation: str
    digest: str
    state: str
    result: Mapping[str, Any] | None
    created_at: str


def _line_range(value: Any) -> tuple[int, int] | None:
    """An origin's `[first, last]` line pair, or None (origins filed before lines were recorded have none)."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return int(value[0]), int(value[1])
    return None
