"""The search page: the form, and its hits (only the hits for an htmx request)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from memcastle.errors import InvalidRequest, MemCastleError
from memcastle.model.options import declared_options
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


def _form_defaults() -> dict[str, Any]:
    """The form's fields and what each is when not given — the query, the declared search options by their wire
    names (blank for unset, tags as one comma-separated text) with the `time` choice standing for
    `include_historical`, and the page: a URL carries only what differs from these."""
    out: dict[str, Any] = {"query": ""}
    for declared in declared_options(SearchRequest):
        if declared.name == "include_historical":
            continue
        if declared.name == "as_of":
            out["time"] = "current"
        default = declared.default
        out[declared.wire] = "" if default is None or declared.option.kind == "tags" else default
    return {**out, "page": 1}


DEFAULTS = _form_defaults()
PAGE_SIZES = (5, 10, 20, 50)
DEEPEST = 200  # a search ranks at most this many hits (the API's largest limit): the last page ends there
COUNTED = 1000  # the drawers holding every word are counted up to this many ("1,000+")


def search_form(values: Mapping[str, Any]) -> dict[str, Any]:
    """The search form's fields from a query string or a posted form (the forget page's): the defaults for what is
    missing, `q` as `query`'s earlier name."""
    form = {key: values.get(key, default) for key, default in DEFAULTS.items()}
    form["query"] = form["query"] or values.get("q", "")
    for flag in ("expand", "include_hidden"):
        form[flag] = str(form[flag]).lower() in ("true", "on", "1", "yes")
    for number in ("limit", "page"):
        try:
            form[number] = int(form[number])
        except (TypeError, ValueError):
            raise InvalidRequest(f"{number} must be a whole number, not {form[number]!r}", field=number) from None
    if form["page"] < 1:
        raise InvalidRequest("page must be 1 or more", field="page")
    return form


def kept_fields(form: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The fields that differ from the defaults, as the URL and the forget page carry them."""
    return [
        (key, "true" if value is True else str(value))
        for key, value in form.items()
        if value != DEFAULTS[key] and value not in ("", False, None)
    ]


@router.get("/", response_class=HTMLResponse)
def search_page(request: Request) -> HTMLResponse:
    """The search page; with `query` (`q` is its earlier name), its hits. A refused search is shown beside the form
    it came from, not as an error page."""
    services = services_of(request)
    form = search_form(request.query_params)
    query, limit, page_number = form["query"], form["limit"], form["page"]
    result = None
    error = None
    shown: dict[str, Any] = {}
    if query.strip():
        try:
            allow(request, "read")
            if not 1 <= limit <= DEEPEST:
                raise InvalidRequest(f"limit must be from 1 to {DEEPEST}", field="limit")
            # Page p of a ranking is the ranking's first p × limit hits, less those of the pages before it.
            wanted = min(page_number * limit, DEEPEST)
            asked = search_request({**form, "limit": wanted})
            result = services.search.search(asked)
            shown = paged(result.hits, page_number, limit, wanted)
            shown["total"] = services.search.count_matching(asked, at_most=COUNTED)
        except MemCastleError as exc:
            error = exc
    wings = services.drawers.wing_names()
    kept = urlencode(kept_fields(form))
    htmx = bool(request.headers.get("hx-request"))
    template = "_hits.html" if htmx and query else "search.html"
    pages = {n: urlencode(kept_fields({**form, "page": n})) for n in (page_number - 1, page_number + 1) if n >= 1}
    answer = page(request, template, form=form, kept=urlencode(kept_fields({**form, "page": 1})), result=result,
                  shown=shown, pages=pages, sizes=PAGE_SIZES, error=error, wings=wings, title="Search")  # fmt: skip
    if htmx:  # the address pushed into the history: what the form asks, without its empty fields
        answer.headers["HX-Push-Url"] = "/?" + kept if kept else "/"
    return answer


def paged(hits: Sequence[Any], number: int, size: int, wanted: int) -> dict[str, Any]:
    """The hits of page `number` (the ranked hits; hits added through the graph only on the first page), where
    they start, and whether a next page may hold more (this one was full and the ranking was not cut short)."""
    direct = [h for h in hits if not h.via]
    start = (number - 1) * size
    return {
        "direct": direct[start : start + size],
        "related": [h for h in hits if h.via] if number == 1 else [],
        "first": start + 1,
        "more": len(direct) >= wanted and wanted < DEEPEST,
    }


def search_request(form: dict[str, Any]) -> SearchRequest:
    """The search the form asks for: its inputs by their request names, blanks as unset, tags comma-separated."""
    chosen = TIME_FIELDS.get(form["time"])
    if chosen is None:
        raise InvalidRequest(f"unknown time {form['time']!r}; one of {', '.join(TIME_FIELDS)}", field="time")
    values = {("from_" if k == "from" else k): (v or None) for k, v in form.items()
              if (k not in TIMES or k in chosen) and k != "page"}  # fmt: skip
    values["include_historical"] = "include_historical" in chosen
    values["tags"] = tuple(t.strip() for t in form["tags"].split(",") if t.strip())
    return request_of(SearchRequest, values, limit=form["limit"], ranking=form["ranking"],
                      preferences=form["preferences"], expand=form["expand"],
                      include_hidden=form["include_hidden"])  # fmt: skip
