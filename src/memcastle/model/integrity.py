"""What an audit of a palace finds: one finding per check, with a count, a few examples and what repair does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    """One check's result. `count` rows (or files) are wrong; `examples` names a few; `repair` says what
    `memcastle repair --apply` does about them (None: nothing it can do safely — a person decides)."""

    check: str
    what: str
    count: int
    examples: tuple[str, ...] = ()
    repair: str | None = None
    applies: bool = True  # False: the check does not apply to this backend or palace (and found nothing)

    @property
    def ok(self) -> bool:
        return self.count == 0

    def to_json(self) -> JSON:
        return {
            "check": self.check,
            "what": self.what,
            "count": self.count,
            "examples": list(self.examples),
            "repair": self.repair,
            "applies": self.applies,
        }

    @classmethod
    def from_json(cls, data: JSON) -> Finding:
        return cls(
            check=str(data["check"]),
            what=str(data["what"]),
            count=int(data["count"]),
            examples=tuple(str(e) for e in data.get("examples", [])),
            repair=data.get("repair"),
            applies=bool(data.get("applies", True)),
        )


@dataclass(frozen=True)
class AuditReport:
    findings: tuple[Finding, ...] = field(default=())

    @property
    def problems(self) -> int:
        return sum(f.count for f in self.findings)

    def to_json(self) -> JSON:
        return {"ok": self.problems == 0, "problems": self.problems, "findings": [f.to_json() for f in self.findings]}
