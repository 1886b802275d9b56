"""Requests as the interfaces receive them, before validation, and how an interface builds one.

Every interface names a request's fields as the request does (`from` is `from_` in Python): a REST body's fields, an
MCP tool's arguments, a CLI command's options and a web form's inputs map onto a request by name (`request_of`), so
an option is declared on the request and on each interface that offers it, and nothing restates the mapping. What
an interface holds beyond the request (MCP's `full` and `max_chars`, the CLI's output format) is its own and stays
with it. `tests/test_one_contract.py` checks that each interface offers every field of the requests it builds, or
says why not. The services validate a request once (`memcastle.services.search.build_query`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import Any, TypedDict, TypeVar, get_type_hints

from memcastle.model.mining import DEFAULT_DEBOUNCE
from memcastle.model.options import option
from memcastle.model.vocabulary import RANKINGS, RERANK_MODES, SOURCE_KINDS, SWITCH

T = TypeVar("T")


def field_names(request_type: type[Any]) -> tuple[str, ...]:
    """The fields of a request dataclass, in order."""
    assert is_dataclass(request_type), request_type
    return tuple(f.name for f in fields(request_type))


def request_of(request_type: type[T], values: Mapping[str, Any] | Any, **overrides: Any) -> T:
    """`request_type` from the values an interface received — a mapping, or a body or argument model — by field
    name; the others are the interface's own. Lists become tuples, and a field whose type is itself a request is
    built the same way from its value. `overrides` set fields the interface decides itself."""
    given = values if isinstance(values, Mapping) else dict(values)
    hints = _hints(request_type)  # type: ignore[arg-type]
    chosen: dict[str, Any] = {}
    for name in field_names(request_type):
        if name not in given:
            continue
        value = given[name]
        nested = _request_type(hints[name])
        if nested is not None and value is not None and not isinstance(value, nested):
            value = request_of(nested, value)
        chosen[name] = tuple(value) if isinstance(value, list) else value
    chosen.update(overrides)
    return request_type(**chosen)


@functools.cache
def _hints(request_type: type[Any]) -> dict[str, Any]:
    return get_type_hints(request_type)


def _request_type(hint: Any) -> type[Any] | None:
    """The request dataclass a field holds (alone or or-None), if any."""
    for candidate in (hint, *getattr(hint, "__args__", ())):
        if isinstance(candidate, type) and is_dataclass(candidate):
            return candidate
    return None


@dataclass(frozen=True)
class SearchRequest:
    """A search as the interfaces receive it, before validation: each option declared once, here
    (`memcastle.model.options`)."""

    query: str
    limit: int = option(10, "how many hits (1-200)", "count", bounds=(1, 200))
    wing: str | None = option(None, "only this wing", "name", scope=True)
    room: str | None = option(None, "only this room", "name", scope=True, recall=False)
    tags: Sequence[str] = option((), "required tags, all of them", "tags", brief="all of these", cli=("--tag",),
                                 scope=True)  # fmt: skip
    source_kind: str | None = option(None, "only drawers of this source kind", "choice", choices=SOURCE_KINDS,
                                     cli=("--source-kind", "--kind"), scope=True)  # fmt: skip
    connector: str | None = option(None, "only drawers mined by this connector", "name", scope=True, agents="search")
    ranking: str = option("auto", "how hits are ranked: by words, by meaning or both", "choice", choices=RANKINGS)
    as_of: str | None = option(None, "what was current at this instant", "instant", brief="RFC 3339: what held then",
                               scope=True)  # fmt: skip
    from_: str | None = option(None, "window start (with until)", "instant", brief="window start, with until",
                               scope=True)  # fmt: skip
    until: str | None = option(None, "window end (with from)", "instant", scope=True)
    include_historical: bool = option(False, "include closed (superseded) versions", "flag",
                                      brief="superseded versions too", cli=("--include-historical", "--historical"),
                                      scope=True)  # fmt: skip
    expand: bool = option(False, "add drawers related through the knowledge graph", "flag",
                          brief="add graph neighbours")  # fmt: skip
    preferences: str = option("on", "source preferences: off shows the ranking without them", "choice",
                              choices=SWITCH, brief="source trust")  # fmt: skip
    rerank: str | None = option(None, "the second stage over the fused pool; default the palace's search.rerank",
                                "choice", choices=RERANK_MODES, brief="second stage")  # fmt: skip
    known_at: str | None = option(None, "what the palace knew at this instant (record time)", "instant",
                                  brief="what memory held then", scope=True, agents="search")  # fmt: skip
    known_from: str | None = option(None, "what the palace knew at some point of a window (with known_until)",
                                    "instant", brief="with known_until", scope=True, agents="search")  # fmt: skip
    known_until: str | None = option(None, "record-time window end (with known_from)", "instant", scope=True,
                                     agents="search")  # fmt: skip
    include_hidden: bool = option(False, "the drawers a person hid too", "flag", agents="none")
    query_embedding: Sequence[float] | None = None  # the caller's own query vector, for the semantic leg


class NoteFields(TypedDict, total=False):
    """What a note carries besides its text (`DrawerService.save_note`): where it is filed (default wing and room
    `notes`), its tags, who wrote it, a name unique in its room, and when it expires (an instant, or 7d from now)."""

    wing: str | None
    room: str | None
    tags: Sequence[str]
    agent: str | None
    name: str | None
    expires_at: str | None


@dataclass(frozen=True)
class FactSpec:
    """An explicit fact as an interface states it, before validation (`FactService.add`): entity names, the
    predicate, and the drawer that shows it, if any."""

    subject: str
    predicate: str
    object: str
    confidence: float = 1.0
    valid_from: str | None = None
    subject_kind: str | None = None
    object_kind: str | None = None
    evidence_drawer: str | None = None


@dataclass(frozen=True)
class FactCorrection:
    """What a superseded fact's replacement changes (`FactService.supersede`): each field given replaces the old
    fact's, the others carry over; `reason` is recorded on the link between them."""

    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    confidence: float | None = None
    subject_kind: str | None = None
    object_kind: str | None = None
    evidence_drawer: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class CheckpointItem:
    """One decision or piece of state an agent keeps (`AgentService.checkpoint`), with the fact it states, if any."""

    content: str
    wing: str | None = None
    room: str | None = None
    name: str | None = None
    tags: tuple[str, ...] = ()
    expires_at: str | None = None  # an RFC 3339 instant, or a duration from now (7d)
    fact: FactSpec | None = None

    def to_json(self) -> dict[str, Any]:
        """The item as a retry must repeat it (what an idempotency key is checked against)."""
        out: dict[str, Any] = {k: v for k, v in asdict(self).items() if v not in (None, ())}
        if "tags" in out:
            out["tags"] = list(out["tags"])
        return out


@dataclass(frozen=True)
class MineRequest:
    """A mine as the interfaces ask for it (`MiningService.submit_mine`): which connector reads which source, with
    its options, into which wing; `full` re-reads unchanged documents; `notice_removed` closes the drawers of
    documents gone from the source (None: the connector's default)."""

    connector: str
    locator: str = ""
    options: Mapping[str, str] | None = None
    wing: str | None = None
    full: bool = False
    notice_removed: bool | None = None


@dataclass(frozen=True)
class MinerDefinition:
    """A named miner defined through the API (`MinerService.define`): a mine request with a name, kept, and run on
    a watch of its files (after `debounce` quiet) or `every` so long (durations as seconds or text such as 5m)."""

    name: str
    connector: str
    locator: str = ""
    options: Mapping[str, str] | None = None
    wing: str | None = None
    full: bool = False
    watch: bool = False
    debounce: str | float = DEFAULT_DEBOUNCE
    every: str | float | None = None
    poll: str | float | None = None
    webhook: str | None = None
    secret_env: str | None = None
