"""Ids a person and an agent can use: wherever an id is accepted, a unique prefix of at least `MIN_PREFIX`
characters stands for it (the web page and the terminal show ids that long), in either case (ids are lower-case
hexadecimal); a shorter one is refused saying so; a prefix that starts several ids is refused with them listed
(`AmbiguousId`, HTTP 409), never guessed."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

from memcastle.errors import AmbiguousId, InvalidRequest

MIN_PREFIX = 8  # the shortest prefix that stands for an id; what the terminal and the web page show
SHOWN = 5  # candidates an ambiguous prefix lists


_HEXADECIMAL = re.compile(r"[0-9A-Fa-f-]+")


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
    see are candidates: a prefix never names, or counts, what lies outside its scope. A shorter prefix of an id is
    refused, saying `MIN_PREFIX` characters are needed."""
    if _HEXADECIMAL.fullmatch(given):
        given = given.lower()  # the ids shown are lower case; a prefix copied in upper case names the same id
    if len(given) < MIN_PREFIX:
        started = store.ids_with_prefix(kind, given, 1 if visible is None else 200) if given else []
        if visible is not None and started:
            shown = visible(started)
            started = [i for i in started if i in shown]
        if _HEXADECIMAL.fullmatch(given) and started not in ([], [given]):
            raise InvalidRequest(
                f"{field or kind + ' id'} {given!r} is too short: give the whole id or at least its first "
                f"{MIN_PREFIX} characters",
                field=field,
            )
        return given
    found = store.ids_with_prefix(kind, given, SHOWN + 1 if visible is None else 200)
    if found and found[0] != given and visible is not None:
        shown = visible(found)
        found = [i for i in found if i in shown]
    if not found or found[0] == given:  # an id sorts before every longer id it starts
        return given
    if len(found) == 1:
        return found[0]
    raise AmbiguousId.of(kind, given, found[:SHOWN], field=field)
