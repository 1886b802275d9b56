"""Ids a person and an agent can use: wherever an id is accepted, a unique prefix of at least `MIN_PREFIX`
characters stands for it (the web page and the terminal show ids that long); a prefix that starts several ids is
refused with them listed (`AmbiguousId`, HTTP 409), never guessed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from memcastle.errors import AmbiguousId

MIN_PREFIX = 8  # the shortest prefix that stands for an id; what the terminal and the web page show
SHOWN = 5  # candidates an ambiguous prefix lists


class IdIndex(Protocol):
    def ids_with_prefix(self, kind: str, prefix: str, limit: int) -> list[str]: ...


def resolve_id(
    store: IdIndex,
    kind: str,
    given: str,
    *,
    field: str | None = None,
    visible: Callable[[Sequence[str]], set[str]] | None = None,
) -> str:
    """The whole id `given` stands for: itself when it is one (or names nothing: the caller's lookup says so), the one
    id it starts when it has at least `MIN_PREFIX` characters. With `visible` (a scoped client), only the ids it may
    see are candidates: a prefix never names, or counts, what lies outside its scope."""
    if len(given) < MIN_PREFIX:
        return given
    found = store.ids_with_prefix(kind, given, SHOWN + 1 if visible is None else 200)
    if found and found[0] != given and visible is not None:
        shown = visible(found)
        found = [i for i in found if i in shown]
    if not found or found[0] == given:  # an id sorts before every longer id it starts
        return given
    if len(found) == 1:
        return found[0]
    raise AmbiguousId(kind, given, found[:SHOWN], field=field)
