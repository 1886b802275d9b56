"""What a mine job is given and what it reports: `MineParams`, validated by `MiningService.submit_mine` and kept as
the job's parameters, and `MineTally`, the counts and reasons it reports (kept in its checkpoint as it goes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_REASONS = 200
COUNTERS = (
    "documents",
    "created",
    "superseded",
    "invalidated",
    "candidates",
    "unchanged",
    "skipped",
    "errors",
    "redacted",
    "removed",
    "removed_documents",
)


@dataclass(frozen=True)
class MineParams:
    """A mine job's parameters: the connector, the source it reads (locator and options: the source's id derives
    from them), the wing (None: the connector's default), whether unchanged documents are read again, and whether
    documents gone from the source have their drawers closed (None: the connector's default)."""

    connector: str
    locator: str
    options: Mapping[str, str]
    wing: str | None = None
    full: bool = False
    notice_removed: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "locator": self.locator,
            "options": dict(self.options),
            "wing": self.wing,
            "full": self.full,
            "notice_removed": self.notice_removed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MineParams:
        """A job's parameters as stored (an older job may lack the later keys)."""
        return cls(
            connector=str(data["connector"]),
            locator=str(data.get("locator") or ""),
            options={str(k): str(v) for k, v in dict(data.get("options") or {}).items()},
            wing=data.get("wing"),
            full=bool(data.get("full", False)),
            notice_removed=data.get("notice_removed"),
        )


@dataclass
class MineTally:
    """The counts and reasons a mine job reports; saved in its checkpoint so a resumed job keeps counting."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    redacted_by_kind: dict[str, int] = field(default_factory=dict)

    def redacted(self, found: Mapping[str, int]) -> None:
        for kind, count in found.items():
            self.counts["redacted"] += count
            self.redacted_by_kind[kind] = self.redacted_by_kind.get(kind, 0) + count

    def skip(self, document: str, reason: str) -> None:
        self.counts["skipped"] += 1
        if len(self.skipped) < MAX_REASONS:
            self.skipped.append({"document": document, "reason": reason})

    def warn(self, document: str, message: str) -> None:
        self.counts["errors"] += 1
        if len(self.warnings) < MAX_REASONS:
            self.warnings.append({"document": document, "reason": message})

    def to_json(self) -> dict[str, Any]:
        return {
            **self.counts,
            "redacted_by_kind": dict(sorted(self.redacted_by_kind.items())),
            "skipped_documents": self.skipped,
            "warnings": self.warnings,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MineTally:
        tally = cls()
        for key in COUNTERS:
            tally.counts[key] = int(data.get(key, 0))
        tally.skipped = list(data.get("skipped_documents", []))
        tally.warnings = list(data.get("warnings", []))
        tally.redacted_by_kind = {str(k): int(v) for k, v in dict(data.get("redacted_by_kind", {})).items()}
        return tally
