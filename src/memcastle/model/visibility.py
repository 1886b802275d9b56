"""Which wings a client may read and, separately, write: a scoped token's limits (docs/security.md, ADR 0030).

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


@dataclass(frozen=True)
class Visibility:
    """The wings readable and writable (None: every wing). Writing needs no read: a token may file into a wing it
    cannot search (an inbox), and reading one it may not write to (a shared reference)."""

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

    def can_read(self, wing: str) -> bool:
        return self.read is None or wing in self.read

    def can_write(self, wing: str) -> bool:
        return self.write is None or wing in self.write

    def narrow(self, scope: Scope) -> Scope:
        """The scope limited to the readable wings: what the store then filters by, inside every query."""
        if self.read is None:
            return scope
        allowed = self.read if scope.wings is None else self.read & set(scope.wings)
        return replace(scope, wings=tuple(sorted(allowed)))

    def readable(self, wing: str, what: str) -> None:
        """A read by id of something in `wing`: outside the scope it does not exist for this client."""
        if not self.can_read(wing):
            raise NotFound(f"no {what}")

    def writable(self, wing: str) -> None:
        """A write into `wing`: refused outside the write scope, naming it."""
        if not self.can_write(wing):
            allowed = ", ".join(sorted(self.write or ())) or "no wing"
            raise AccessDenied(
                f"this token may write only to {allowed}; not to wing {wing!r}",
                help="ask for a token whose --write scope includes the wing",
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
            parts.append(f"reading {', '.join(sorted(self.read)) or 'no wing'}")
        if self.write is not None:
            parts.append(f"writing {', '.join(sorted(self.write)) or 'no wing'}")
        return " and ".join(parts) or "the whole palace"

    def to_json(self) -> dict[str, Any]:
        return {
            "read": None if self.read is None else sorted(self.read),
            "write": None if self.write is None else sorted(self.write),
        }


EVERYTHING = Visibility()
