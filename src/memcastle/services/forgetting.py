"""Forgetting at the service seam: a scope validated, a dry run by default for the broad ones, the erase, and the
in-memory indexes told (docs/lifecycle.md)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from memcastle.errors import Conflict, InvalidRequest, NotFound
from memcastle.model import (
    ANY_TIME,
    FORGET_SCOPES,
    DocumentScope,
    DrawerScope,
    ForgetReport,
    ForgetScope,
    Job,
    LexicalQuery,
    RoomScope,
    SearchScope,
    SourceScope,
    Tombstone,
    WingScope,
)
from memcastle.model.requests import SearchRequest
from memcastle.search.engine import SearchEngine
from memcastle.search.lexical import query_terms
from memcastle.services.audit import ReadAudit
from memcastle.services.events import Publish, ignore_event
from memcastle.services.ids import resolve_id
from memcastle.services.reader import visibility
from memcastle.services.search import build_query
from memcastle.services.validation import check_limit, check_name, check_text
from memcastle.store import Store
from memcastle.store.reserve import StorageReserve, spending_reserve

# The mine jobs queued or running, as (job, source id, wing it files into): a forget of their wing or source waits.
ActiveMines = Callable[[], list[tuple[Job, str, str]]]


@dataclass(frozen=True)
class ForgetRequest:
    """A forget as the interfaces receive it: exactly one scope."""

    kind: str
    drawer_id: str | None = None
    source_id: str | None = None
    document: str | None = None
    wing: str | None = None
    room: str | None = None
    search: SearchRequest | None = None


class ForgetService:
    """Erase drawers with everything derived from them; a tombstone stays."""

    def __init__(
        self,
        store: Store,
        engine: SearchEngine,
        active_mines: ActiveMines,
        publish: Publish = ignore_event,
        purge: Callable[[Collection[str]], object] | None = None,
        *,
        audit: ReadAudit | None = None,
        reserve: StorageReserve | None = None,
    ) -> None:
        self._reserve = reserve  # a forget gives room back: on a full disk it spends the reserve (ADR 0051)
        self._store = store
        self._audit = audit
        self._publish = publish
        self._purge = purge
        self._engine = engine
        self._active_mines = active_mines

    def forget(
        self, request: ForgetRequest, *, dry_run: bool | None = None, requested_by: str = "http"
    ) -> ForgetReport:
        """Forget the scope; `dry_run` None means the scope's default (a dry run for source, room, wing and search:
        they reach drawers the caller may not have looked at)."""
        scope = scope_of(request)
        if isinstance(scope, DrawerScope):
            scope = replace(scope, drawer_id=resolve_id(self._store, "drawer", scope.drawer_id, field="drawer_id"))
        if isinstance(scope, SourceScope | DocumentScope):
            scope = replace(scope, source_id=resolve_id(self._store, "source", scope.source_id, field="source_id"))
        self._within_scope(scope)
        if dry_run is None:
            dry_run = scope.broad
        if not dry_run:
            self._refuse_while_mining(scope)
            if self._audit is not None:
                self._audit.flush()  # the reads recorded so far are written, so the cascade erases their ids
        report = spending_reserve(
            self._reserve, lambda: self._store.forgetting.forget(scope, dry_run=dry_run, requested_by=requested_by)
        )
        if not dry_run:
            if self._audit is not None:
                self._audit.drop(report.drawer_ids)
            self._engine.forget(report.drawer_ids)
            if self._purge is not None:
                self._purge(report.drawer_ids)  # the live events that named them go too
            if report.tombstone is not None:
                self._publish("forget", {"tombstone": report.tombstone.to_json()})
        return report

    def _within_scope(self, scope: ForgetScope) -> None:
        """A scoped client forgets a drawer, room or wing of its write scope, and only what it may see of them."""
        seen = visibility()
        if seen.is_whole:
            return
        if isinstance(scope, DrawerScope):
            place = self._store.search.drawer_places([scope.drawer_id]).get(scope.drawer_id)
            if place is None or not (seen.can_read(place.wing, place.room) or seen.can_write(place.wing, place.room)):
                raise NotFound(f"no drawer {scope.drawer_id}")
            seen.writable(place.wing, place.room)
        elif isinstance(scope, RoomScope | WingScope):
            room = scope.room if isinstance(scope, RoomScope) else None
            if not (seen.sees_wing(scope.wing) or seen.can_write(scope.wing, room)):
                raise NotFound(f"no wing {scope.wing!r}")
            seen.writable(scope.wing, room)
        else:
            seen.whole_palace(f"forgetting by {scope.kind}")

    def tombstones(self, limit: int = 50) -> list[Tombstone]:
        return self._store.forgetting.tombstones(check_limit(limit))

    def _refuse_while_mining(self, scope: ForgetScope) -> None:
        """A mine filing into the wing, room or source being forgotten would write part of it back."""
        for job, source_id, wing in self._active_mines():
            if (isinstance(scope, SourceScope | DocumentScope) and source_id == scope.source_id) or (
                isinstance(scope, RoomScope | WingScope) and wing == scope.wing
            ):
                raise Conflict(
                    f"mine job {job.id} ({job.status.value}) writes to this {scope.kind}",
                    help=f"wait for it to finish, or cancel it (memcastle job cancel {job.id}), then forget again",
                )


def scope_of(request: ForgetRequest) -> ForgetScope:
    """Validate a request into a `ForgetScope`; every refusal names the field."""
    kind = request.kind
    if kind not in FORGET_SCOPES:
        raise InvalidRequest(f"unknown scope {kind!r}; one of {', '.join(FORGET_SCOPES)}", field="scope")
    wanted = {
        "drawer": ("drawer_id",),
        "document": ("source_id", "document"),
        "source": ("source_id",),
        "room": ("wing", "room"),
        "wing": ("wing",),
        "search": ("search",),
    }[kind]
    given = {
        name
        for name in ("drawer_id", "source_id", "document", "wing", "room", "search")
        if getattr(request, name) is not None
    }
    for name in wanted:
        if name not in given:
            raise InvalidRequest(f"forgetting a {kind} needs {name}", field=name)
    for name in sorted(given - set(wanted)):
        raise InvalidRequest(f"{name} is not part of a {kind} scope", field=name)
    for name in ("drawer_id", "source_id", "document"):
        value = getattr(request, name)
        if value is not None:
            check_text(value, name)
            if not value.strip():
                raise InvalidRequest(f"{name} must not be blank", field=name)
    wing, room = check_name(request.wing, "wing"), check_name(request.room, "room")
    named: dict[str, Callable[[], ForgetScope]] = {
        "drawer": lambda: DrawerScope(str(request.drawer_id)),
        "document": lambda: DocumentScope(str(request.source_id), str(request.document)),
        "source": lambda: SourceScope(str(request.source_id)),
        "room": lambda: RoomScope(str(wing), str(room)),
        "wing": lambda: WingScope(str(wing)),
    }
    if kind in named:
        return named[kind]()
    assert request.search is not None
    search = request.search
    # Without a time, every version that matches goes: forgetting text means its history too.
    query = build_query(search, default_time=ANY_TIME)
    terms = query_terms(query.text)
    if not terms:
        raise InvalidRequest("the query has no word to match", field="query")
    return SearchScope(
        query=LexicalQuery(tuple(terms), require_all=True),
        query_text=query.text,
        filters=replace(query.scope, hidden=True),  # what a person hid is forgotten like the rest
    )
