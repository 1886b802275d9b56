"""Search at the service seam: a request validated into a `SearchQuery` (every refusal names the option), then run."""

from __future__ import annotations

from dataclasses import replace

from memcastle.clock import parse_instant
from memcastle.errors import InvalidRequest
from memcastle.model import (
    ANY_TIME,
    CURRENT,
    RANKINGS,
    SOURCE_KINDS,
    AsOf,
    Between,
    Scope,
    SearchQuery,
    SearchResult,
    When,
)
from memcastle.model.requests import SearchRequest
from memcastle.model.time import Axis
from memcastle.search.engine import SearchEngine
from memcastle.services.audit import Record, unrecorded
from memcastle.services.reader import visibility
from memcastle.services.validation import MAX_QUERY_CHARS, check_limit, check_name, check_tags, check_text
from memcastle.store import DrawerStore

PINNED_IN_RECALL = 10  # at most this many pinned drawers join a recall (docs/lifecycle.md, "Pin and hide")


class SearchService:
    """`search` (any scope) and `recall` (the agent-facing search: a wing at most)."""

    def __init__(self, engine: SearchEngine, store: DrawerStore, *, record: Record = unrecorded) -> None:
        self._engine = engine
        self._store = store
        self._record = record

    def close(self) -> None:
        self._engine.close()

    def search(self, request: SearchRequest) -> SearchResult:
        result = self._engine.search(self.query(request))
        self._record("search", query=request.query, drawer_ids=[hit.drawer.id for hit in result.hits])
        return result

    @staticmethod
    def query(request: SearchRequest) -> SearchQuery:
        """The request validated, its scope narrowed to the wings the client may read (`services.reader`): the
        store leaves every other wing out of each leg, expansion and snippet, before any ranking or limit."""
        query = build_query(request)
        return replace(query, scope=visibility().narrow(query.scope))

    def waiting_for_vector(self, drawer_id: str) -> bool:
        return self._engine.waiting_for_vector(drawer_id)

    def has_exact_match(self, request: SearchRequest, depth: int) -> bool:
        """Whether the lexical leg of this search, `depth` deep, finds a drawer holding every term of the query (what
        hybrid fusion asks during a backlog: `memcastle.search.fusion`)."""
        return self._engine.lexical_leg_exact(self.query(request), depth, self._engine.fill_rows)[1]

    def recall(self, request: SearchRequest) -> SearchResult:
        """The agent-facing search: a wing at most, never a room."""
        if request.room is not None:
            raise InvalidRequest("recall searches a whole wing; drop room or use search", field="room")
        query = self.query(request)
        result = self._engine.search(query)
        # A pinned drawer always enters the recall of its scope: those the search did not find come after the hits.
        found = {hit.drawer.id for hit in result.hits}
        pinned = [d for d in self._store.pinned_drawers(query.scope, PINNED_IN_RECALL) if d.id not in found]
        hits = [hit.drawer.id for hit in result.hits]
        self._record("recall", query=request.query, drawer_ids=[*hits, *(d.id for d in pinned)])
        return replace(result, pinned=tuple(pinned)) if pinned else result


def _between(start: str | None, end: str | None, names: tuple[str, str], axis: Axis) -> Between:
    """A half-open window from two request fields that go together."""
    if start is None or end is None:
        raise InvalidRequest(f"{names[0]} and {names[1]} go together", field=names[0] if start is None else names[1])
    first, last = parse_instant(start, field=names[0]), parse_instant(end, field=names[1])
    if last <= first:
        raise InvalidRequest(f"{names[1]} must be later than {names[0]}", field=names[1])
    return Between(start=first, end=last, axis=axis)


def when_of(request: SearchRequest, default: When = CURRENT) -> When:
    """The one time a request's temporal fields ask for (`default` when none is given); two forms together are
    refused, naming both."""
    forms = [
        name
        for name, present in (
            ("as_of", request.as_of is not None),
            ("from/until", request.from_ is not None or request.until is not None),
            ("include_historical", request.include_historical),
            ("known_at", request.known_at is not None),
            ("known_from/known_until", request.known_from is not None or request.known_until is not None),
        )
        if present
    ]
    if len(forms) > 1:
        raise InvalidRequest(f"choose one temporal form, not {' and '.join(forms)}", field=",".join(forms))
    if request.known_at is not None:
        return AsOf(parse_instant(request.known_at, field="known_at"), axis="record")
    if request.as_of is not None:
        return AsOf(parse_instant(request.as_of, field="as_of"))
    if request.from_ is not None or request.until is not None:
        return _between(request.from_, request.until, ("from", "until"), "valid")
    if request.known_from is not None or request.known_until is not None:
        return _between(request.known_from, request.known_until, ("known_from", "known_until"), "record")
    return ANY_TIME if request.include_historical else default


def build_query(request: SearchRequest, default_time: When = CURRENT) -> SearchQuery:
    """Validate a search request into a `SearchQuery`; every refusal names the option."""
    if not isinstance(request.query, str) or not request.query.strip():
        raise InvalidRequest("query must not be empty", field="query")
    check_text(request.query, "query")
    if len(request.query) > MAX_QUERY_CHARS:
        raise InvalidRequest(f"query has {len(request.query)} characters; at most {MAX_QUERY_CHARS}", field="query")
    if request.ranking not in RANKINGS:
        raise InvalidRequest(f"unknown ranking {request.ranking!r}; one of {', '.join(RANKINGS)}", field="ranking")
    if request.source_kind is not None and request.source_kind not in SOURCE_KINDS:
        raise InvalidRequest(
            f"unknown source_kind {request.source_kind!r}; one of {', '.join(SOURCE_KINDS)}", field="source_kind"
        )
    if request.preferences not in ("on", "off"):
        raise InvalidRequest("preferences must be 'on' or 'off'", field="preferences")
    when = when_of(request, default_time)
    return SearchQuery(
        text=request.query,
        limit=check_limit(request.limit),
        scope=Scope(
            wing=check_name(request.wing, "wing"),
            room=check_name(request.room, "room"),
            tags=check_tags(request.tags),
            source_kind=request.source_kind,
            connector=check_name(request.connector, "connector"),
            when=when,
            hidden=bool(request.include_hidden),
        ),
        ranking=request.ranking,
        expand=request.expand,
        preferences=request.preferences == "on",
    )
