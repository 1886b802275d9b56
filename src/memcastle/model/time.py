"""When a drawer must hold to be eligible (SPEC §3): one closed union, carried with the scope.

- `Current` — valid now (the default);
- `AsOf(at)` — valid at that instant (event time), or, on the record axis, what the palace knew then: recorded by
  then and not yet known to be closed;
- `Between(start, end)` — valid at some point of the half-open window [start, end), on either axis;
- `AnyTime` — every version, closed ones too (a search's `include_historical`).

Instants are canonical UTC strings (`memcastle.clock.parse_instant`); the interfaces' several spellings (`as_of`,
`from`/`until`, `known_at`, `known_from`/`known_until`, `include_historical`) are parsed into one of these once, at
the service seam, and each backend turns it into SQL with one `match` (`memcastle.store.sql.filters.time_sql`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memcastle.model.drawers import JSON

Axis = Literal["valid", "record"]  # event time (valid_from/valid_to) or record time (created_at/closed_at)


@dataclass(frozen=True)
class Current:
    """Valid now."""

    def to_json(self) -> JSON:
        return {"time": "current"}


@dataclass(frozen=True)
class AsOf:
    """Valid at the instant `at` (valid_from inclusive, valid_to exclusive), or known to the palace then."""

    at: str
    axis: Axis = "valid"

    def to_json(self) -> JSON:
        return {"time": "as_of", "at": self.at, "axis": self.axis}


@dataclass(frozen=True)
class Between:
    """Valid (or known) at some point of [start, end)."""

    start: str
    end: str
    axis: Axis = "valid"

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError(f"a window must end after it starts: [{self.start}, {self.end})")

    def to_json(self) -> JSON:
        return {"time": "between", "from": self.start, "until": self.end, "axis": self.axis}


@dataclass(frozen=True)
class AnyTime:
    """Every version, whenever it held."""

    def to_json(self) -> JSON:
        return {"time": "any"}


When = Current | AsOf | Between | AnyTime
CURRENT = Current()
ANY_TIME = AnyTime()
