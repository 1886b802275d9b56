"""The search page: the form, and its hits (only the hits for an htmx request)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from memcastle.errors import InvalidRequest, MemCastleError
from memcastle.model.requests import SearchRequest, request_of
from memcastle.web.pages import PageRoute, allow, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)

# The fields each choice of the form's `time` reads; the others are ignored (the form keeps them for the next choice).
TIME_FIELDS = {
    "current": (),
    "as_of": ("as_of",),
    "window": ("from", "until"),
    "historical": ("include_historical",),
    "known_at": ("known_at",),
    "known_window": ("known_from", "known_until"),
}
TIMES = frozenset(field for fields in TIME_FIELDS.values() for field in fields)


@router.get("/", response_class=HTMLResponse)
def search_page(
    request: Request,
    query: str = "",
    q: str = "",
    wing: str = "",
    room: str = "",
    tags: str = "",
    source_kind: str = "",
    connector: str = "",
    ranking: str = "auto",
    time: str = "current",
    as_of: str = "",
    from_: Annotated[str, Query(alias="from")] = "",
    until: str = "",
    known_at: str = "",
    known_from: str = "",
    known_until: str = "",
    expand: bool = False,
    preferences: str = "on",
    include_hidden: bool = False,
    limit: int = 10,
) -> HTMLResponse:
    """The search page; with `query` (`q` is its earlier name), its hits. A refused search is shown beside the form
    it came from, not as an error page."""
    query = query or q
    services = services_of(request)
    form = {"query": query, "wing": wing, "room": room, "tags": tags, "source_kind": source_kind,
            "connector": connector, "ranking": ranking, "time": time, "as_of": as_of, "from": from_, "until": until,
            "known_at": known_at, "known_from": known_from, "known_until": known_until, "expand": expand,
            "preferences": preferences, "include_hidden": include_hidden, "limit": limit}  # fmt: skip
    result = None
    error = None
    if query.strip():
        try:
            allow(request, "read")
            result = services.search.search(search_request(form))
        except MemCastleError as exc:
            error = exc
    wings = services.drawers.wing_names()
    template = "_hits.html" if request.headers.get("hx-request") and query else "search.html"
    return page(request, template, form=form, result=result, error=error, wings=wings, title="Search")


def search_request(form: dict[str, Any]) -> SearchRequest:
    """The search the form asks for: its inputs by their request names, blanks as unset, tags comma-separated."""
    chosen = TIME_FIELDS.get(form["time"])
    if chosen is None:
        raise InvalidRequest(f"unknown time {form['time']!r}; one of {', '.join(TIME_FIELDS)}", field="time")
    values = {("from_" if k == "from" else k): (v or None) for k, v in form.items() if k not in TIMES or k in chosen}
    values["include_historical"] = "include_historical" in chosen
    values["tags"] = tuple(t.strip() for t in form["tags"].split(",") if t.strip())
    return request_of(SearchRequest, values, limit=form["limit"], ranking=form["ranking"],
                      preferences=form["preferences"], expand=form["expand"],
                      include_hidden=form["include_hidden"])  # fmt: skip
