"""Search at the service seam: a request validated into a `SearchQuery` (every refusal names the option), then run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memcastle.clock import parse_instant
from memcastle.errors import InvalidRequest, NotFound
from memcastle.metrics import Metrics
from memcastle.model import (
    ANY_TIME,
    CURRENT,
    AsOf,
    Between,
    Drawer,
    Scope,
    SearchQuery,
    SearchResult,
    When,
)
from memcastle.model.options import declared_options
from memcastle.model.requests import SearchRequest
from memcastle.model.time import Axis
from memcastle.search.engine import SearchEngine
from memcastle.services.audit import Record, unrecorded
from memcastle.services.ids import resolve_id
from memcastle.services.reader import reader, visibility
from memcastle.services.validation import MAX_QUERY_CHARS, check_limit, check_name, check_tags, check_text
from memcastle.store import DrawerStore, EmbeddingStore

PINNED_IN_RECALL = 10  # at most this many pinned drawers join a recall (docs/lifecycle.md, "Pin and hide")


class SearchService:
    """`search` (any scope) and `recall` (the agent-facing search: a wing at most)."""

    def __init__(
        self,
        engine: SearchEngine,
        store: DrawerStore,
        *,
        record: Record = unrecorded,
        vectors: EmbeddingStore | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._metrics = metrics or Metrics()
        self._vectors = vectors
        self._engine = engine
        self._store = store
        self._record = record

    def close(self) -> None:
        self._engine.close()

    def search(self, request: SearchRequest) -> SearchResult:
        with self._metrics.timing_search(reader().interface) as labels:
            result = self._engine.search(self.query(request))
            labels["ranking"] = result.ranking
        self._record("search", query=request.query, drawer_ids=[hit.drawer.id for hit in result.hits])
        return result

    def warm(self) -> None:
        """Run one search as the first would, unrecorded, so that the thread's reader, the index's first pages and the
        ranking's first run are ready before a client's first search (the daemon's front does, once)."""
        self._engine.warm(self.query(SearchRequest(query="memory", limit=1)))

    @staticmethod
    def query(request: SearchRequest) -> SearchQuery:
        """The request validated, its scope narrowed to the wings the client may read (`services.reader`): the
        store leaves every other wing out of each leg, expansion and snippet, before any ranking or limit."""
        query = build_query(request)
        return replace(query, scope=visibility().narrow(query.scope))

    def supply_vector(self, drawer_id: str, vector: Sequence[float]) -> dict[str, Any]:
        """A caller's own vector for a drawer (`PUT /api/drawers/{id}/embedding`): for a current drawer the client
        may write, finite and non-zero, of the palace's dimension, stored as the drawer's one passage for the model
        searches rank by and marked `supplied`. It stays until the model changes: the sweep then embeds the drawer
        with the new model like any other."""
        drawer = self._readable(drawer_id)
        visibility().writable(drawer.wing, drawer.room)
        if drawer.valid_to is not None:
            raise InvalidRequest(f"drawer {drawer.id} is closed: only a current drawer is searched", field="drawer_id")
        model = self._engine.ranks_by
        if model is None or self._vectors is None:
            raise InvalidRequest(
                "this palace has no embeddings (embeddings.provider is 'none'): a vector would never be searched",
                field="vector",
            )
        values = [float(v) for v in vector]
        if not values or not all(math.isfinite(v) for v in values) or not any(values):
            raise InvalidRequest("the vector must be non-zero and of finite numbers", field="vector")
        dimension = self._engine.dimension
        if dimension is not None and len(values) != dimension:
            raise InvalidRequest(
                f"the vector has {len(values)} dimensions; this palace's vectors ({model}) have {dimension}",
                field="vector",
            )
        matrix = np.asarray([values], dtype=np.float32)
        self._vectors.put_embeddings(model, [(drawer.id, matrix / np.linalg.norm(matrix))], supplied=True)
        self._engine.take_new_vectors()
        return self._vector_view(drawer.id, model)

    def vector_state(self, drawer_id: str) -> dict[str, Any]:
        """The drawer's vectors for the model searches rank by: whether it has them, and whether a caller gave them."""
        return self._vector_view(self._readable(drawer_id).id, self._engine.ranks_by)

    def _vector_view(self, drawer_id: str, model: str | None) -> dict[str, Any]:
        state = self._vectors.vector_state(model, drawer_id) if model and self._vectors else None
        return {"drawer_id": drawer_id, "model": model, "embedded": state is not None,
                "dimension": state[0] if state else None, "supplied": bool(state and state[1])}  # fmt: skip

    def _readable(self, drawer_id: str) -> Drawer:
        drawer = self._store.get_drawer(resolve_id(self._store, "drawer", drawer_id, field="drawer_id"))
        if not visibility().can_read(drawer.wing, drawer.room):
            raise NotFound(f"no drawer {drawer_id}")
        return drawer

    def waiting_for_vector(self, drawer_id: str) -> bool:
        return self._engine.waiting_for_vector(drawer_id)

    def has_exact_match(self, request: SearchRequest, depth: int) -> bool:
        """Whether the lexical leg of this search, `depth` deep, finds a drawer holding every term of the query (what
        hybrid fusion asks during a backlog: `memcastle.search.fusion`)."""
        return self._engine.lexical_leg_exact(self.query(request), depth, self._engine.fill_rows)[1]

    def count_matching(self, request: SearchRequest, at_most: int = 1000) -> int:
        """How many drawers the search's scope holds that have every word of its query (counted up to `at_most`):
        what a page of hits is out of. Drawers found for their meaning alone are not counted."""
        return self._engine.count_matching(self.query(request), max(1, min(at_most, 10_000)))

    def recall(self, request: SearchRequest) -> SearchResult:
        """The agent-facing search: a wing at most, never a room."""
        if request.room is not None:
            raise InvalidRequest("recall searches a whole wing; drop room or use search", field="room")
        query = self.query(request)
        with self._metrics.timing_search(reader().interface) as labels:
            result = self._engine.search(query)
            labels["ranking"] = result.ranking
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
    for declared in declared_options(SearchRequest):  # each closed vocabulary checked against its declaration
        value = getattr(request, declared.name)
        if declared.option.choices and value is not None and value not in declared.option.choices:
            listed = ", ".join(declared.option.choices)
            raise InvalidRequest(f"unknown {declared.name} {value!r}; one of {listed}", field=declared.name)
    when = when_of(request, default_time)
    vector = None
    if request.query_embedding is not None:
        vector = tuple(float(v) for v in request.query_embedding)
        if not vector or not all(math.isfinite(v) for v in vector) or not any(vector):
            raise InvalidRequest("query_embedding must be a non-zero vector of finite numbers", field="query_embedding")
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
        vector=vector,
        rerank=request.rerank,
    )
