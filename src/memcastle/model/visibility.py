"""Which wings (or rooms) a client may read and, separately, write: a scoped token's limits (docs/security.md,
ADR 0030).

One value, decided once per request by the token that authenticated it and handed to every service operation:
reads narrow their `Scope` to it (so the store leaves everything else out before any ranking or limit), a read by id
outside it is "not found", and a write outside it is refused naming the scope. `EVERYTHING` is what an unscoped
token, the configured secret, and a daemon without authentication see.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from memcastle.errors import AccessDenied, NotFound
from memcastle.model.search import Scope

Place = tuple[str, str | None]  # a wing, or one room of it


def place_of(entry: str) -> Place:
    """A scope entry as a place: `team` is the wing, `team/notes` its room `notes` (a wing whose name holds a `/` can
    be scoped only room by room)."""
    wing, _, room = entry.partition("/")
    return (wing, room or None)


def _allows(entries: frozenset[str] | None, wing: str, room: str | None) -> bool:
    """Whether a drawer of `wing`/`room` (or, with no room, the whole wing) lies inside the entries."""
    return entries is None or wing in entries or (room is not None and f"{wing}/{room}" in entries)


@dataclass(frozen=True)
class Visibility:
    """The wings — or rooms of them, as `wing/room` — readable and writable (None: everything). Writing needs no
    read: a token may file into a wing it cannot search (an inbox), and read one it may not write to (a shared
    reference)."""

    read: frozenset[str] | None = None
    write: frozenset[str] | None = None

    @classmethod
    def of(cls, read: Iterable[str] | None, write: Iterable[str] | None) -> Visibility:
        return cls(None if read is None else frozenset(read), None if write is None else frozenset(write))

    @property
    def is_whole(self) -> bool:
        """Nothing is hidden and every write is allowed."""
        return self.read is None and self.write is None

    @property
    def reads_everything(self) -> bool:
        return self.read is None

    def can_read(self, wing: str, room: str | None = None) -> bool:
        """A drawer of this wing and room may be read (with no room: the whole wing may)."""
        return _allows(self.read, wing, room)

    def can_write(self, wing: str, room: str | None = None) -> bool:
        return _allows(self.write, wing, room)

    def sees_wing(self, wing: str) -> bool:
        """Some of the wing is readable (the whole of it, or a room): it is listed."""
        return self.read is None or any(place_of(entry)[0] == wing for entry in self.read)

    def narrow(self, scope: Scope) -> Scope:
        """The scope limited to the readable places: what the store then filters by, inside every query."""
        if self.read is None:
            return scope
        allowed = {place_of(entry) for entry in self.read}
        if scope.places is not None:
            allowed &= set(scope.places)
        return replace(scope, places=tuple(sorted(allowed, key=lambda p: (p[0], p[1] or ""))))

    def readable(self, wing: str, what: str, room: str | None = None) -> None:
        """A read by id of something in `wing` (and `room`): outside the scope it does not exist for this client."""
        if not self.can_read(wing, room):
            raise NotFound(f"no {what}")

    def writable(self, wing: str, room: str | None = None) -> None:
        """A write into `wing` (and `room`; none: the whole wing): refused outside the write scope, naming it."""
        if not self.can_write(wing, room):
            allowed = ", ".join(sorted(self.write or ())) or "nothing"
            where = f"wing {wing!r}" if room is None else f"{wing}/{room}"
            raise AccessDenied(
                f"this token may write only to {allowed}; not to {where}",
                help="ask for a token whose --write scope includes it",
            )

    def whole_palace(self, operation: str) -> None:
        """An operation over the whole palace (its jobs, miners, settings, an export of everything): only for a
        client that sees all of it."""
        if self.read is not None or self.write is not None:
            raise AccessDenied(
                f"{operation} covers the whole palace; this token is limited to {self.describe()}",
                help="use a token without --read/--write limits",
            )

    def describe(self) -> str:
        parts = []
        if self.read is not None:
            parts.append(f"reading {', '.join(sorted(self.read)) or 'nothing'}")
        if self.write is not None:
            parts.append(f"writing {', '.join(sorted(self.write)) or 'nothing'}")
        return " and ".join(parts) or "the whole palace"

    def to_json(self) -> dict[str, Any]:
        return {
            "read": None if self.read is None else sorted(self.read),
            "write": None if self.write is None else sorted(self.write),
        }


EVERYTHING = Visibility()
