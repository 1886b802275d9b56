"""Mining records and configured miners: sources, documents, a document's changes, `[[miners]]` entries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memcastle.model.drawers import NewDrawer


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
