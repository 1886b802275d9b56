"""How long drawers live (docs/lifecycle.md, "Expiry"): a drawer's own `expires_at`, and `[[lifecycle]]` rules that
give the drawers they match an expiry some time after they began to hold.

Expiry is evaluated when the palace is read, like source preferences: a rule changed in the configuration applies at
the next start, to every drawer it matches, with nothing mined or written again. An expired drawer reads as a drawer
closed at its expiry with the reason `expired` — no longer eligible for current searches, recall or wake-up, still
there for a search at an earlier time, `include_historical`, its history and its id.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from memcastle.clock import format_instant, to_datetime
from memcastle.model.drawers import Drawer

EXPIRED = "expired"


_MISSING = object()


def _lookup(metadata: object, path: tuple[str, ...]) -> object:
    node = metadata
    for segment in path:
        if not isinstance(node, dict) or segment not in node:
            return _MISSING
        node = node[segment]
    return node


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "other"


def _scalar_equals(found: object, expected: object) -> bool:
    """Type-strict, as preference criteria compare: 1 ≠ "1" ≠ true; numbers as JSON numbers (1 == 1.0)."""
    kind = _kind(found)
    return kind != "other" and kind == _kind(expected) and found == expected


@dataclass(frozen=True)
class ExpiryRule:
    """Drawers that match every given criterion expire `after` seconds after their `valid_from`."""

    after: float
    connector: str | None = None
    wing: str | None = None
    room: str | None = None
    tag: str | None = None
    forget_after: float | None = None  # erased for good (the forget cascade) this long after it expired
    # A metadata criterion, as a preference's: the value at this dot path of the origin's metadata snapshot equals
    # `equals`, type-strict (1 is not "1" is not true).
    path: tuple[str, ...] = ()
    equals: str | int | float | bool | None = None

    def forget_threshold(self, at: str) -> str | None:
        """The latest `valid_from` of a drawer this rule has erased by the instant `at`; None if it erases none."""
        if self.forget_after is None:
            return None
        return format_instant(to_datetime(at) - timedelta(seconds=self.after + self.forget_after))

    def matches(self, drawer: Drawer) -> bool:
        origin = drawer.source.origin
        return (
            (self.connector is None or (origin is not None and origin.connector == self.connector))
            and (self.wing is None or drawer.wing == self.wing)
            and (self.room is None or drawer.room == self.room)
            and (self.tag is None or self.tag in drawer.tags)
            and (
                not self.path
                or (origin is not None and _scalar_equals(_lookup(origin.metadata, self.path), self.equals))
            )
        )

    def threshold(self, at: str) -> str:
        """The latest `valid_from` of a drawer this rule has expired by the instant `at`."""
        return format_instant(to_datetime(at) - timedelta(seconds=self.after))


@dataclass(frozen=True)
class Lifecycle:
    """The expiry rules in force (none by default: drawers live until superseded, invalidated or forgotten)."""

    rules: tuple[ExpiryRule, ...] = ()

    @property
    def erases(self) -> bool:
        """Whether any rule erases what it expired (`forget_after`)."""
        return any(rule.forget_after is not None for rule in self.rules)

    def expiry_of(self, drawer: Drawer) -> str | None:
        """When the drawer expires (its own `expires_at` or the earliest rule matching it), if ever."""
        candidates = [drawer.expires_at] if drawer.expires_at else []
        for rule in self.rules:
            if rule.matches(drawer):
                candidates.append(format_instant(to_datetime(drawer.valid_from) + timedelta(seconds=rule.after)))
        return min(candidates) if candidates else None

    def apply(self, drawer: Drawer, now: str) -> Drawer:
        """The drawer as read at `now`: one that expired before it closed reads as closed at its expiry."""
        expiry = self.expiry_of(drawer)
        if expiry is None or expiry > now or (drawer.valid_to is not None and drawer.valid_to <= expiry):
            return drawer
        return replace(drawer, valid_to=expiry, closed_at=drawer.closed_at or expiry, closed_reason=EXPIRED)
