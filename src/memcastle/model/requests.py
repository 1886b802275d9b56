"""Requests as the interfaces receive them, before validation, and how an interface builds one.

Every interface names a request's fields as the request does (`from` is `from_` in Python): a REST body's fields, an
MCP tool's arguments, a CLI command's options and a web form's inputs map onto a request by name (`request_of`), so
an option is declared on the request and on each interface that offers it, and nothing restates the mapping. What
an interface holds beyond the request (MCP's `full` and `max_chars`, the CLI's output format) is its own and stays
with it. `tests/test_one_contract.py` checks that each interface offers every field of the requests it builds, or
says why not. The services validate a request once (`memcastle.services.search.build_query`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, TypeVar

T = TypeVar("T")


def field_names(request_type: type[Any]) -> tuple[str, ...]:
    """The fields of a request dataclass, in order."""
    assert is_dataclass(request_type), request_type
    return tuple(f.name for f in fields(request_type))


def request_of(request_type: type[T], values: Mapping[str, Any], **overrides: Any) -> T:
    """`request_type` from the values an interface received (by field name; lists become tuples); the others are the
    interface's own. `overrides` set fields the interface decides itself."""
    names = set(field_names(request_type))
    chosen = {name: tuple(v) if isinstance(v, list) else v for name, v in values.items() if name in names}
    chosen.update(overrides)
    return request_type(**chosen)


@dataclass(frozen=True)
class SearchRequest:
    """A search as the interfaces receive it, before validation."""

    query: str
    limit: int = 10
    wing: str | None = None
    room: str | None = None
    tags: Sequence[str] = ()
    source_kind: str | None = None
    connector: str | None = None
    ranking: str = "auto"
    as_of: str | None = None
    from_: str | None = None
    until: str | None = None
    include_historical: bool = False
    expand: bool = False
    preferences: str = "on"
    known_at: str | None = None
    known_from: str | None = None
    known_until: str | None = None
