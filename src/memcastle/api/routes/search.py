"""Search and recall (complete or compact hits, within a budget), and the embed sweep."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ConfigDict, ValidationError
from starlette.concurrency import run_in_threadpool

from memcastle.api.access import reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    CompactSearchOut,
    SearchOut,
    SweepOut,
)
from memcastle.api.routes.common import (
    requester,
    services,
)
from memcastle.api.schemas import (
    EmptyBody,
    SearchBody,
)
from memcastle.errors import InvalidRequest
from memcastle.model import SearchResult
from memcastle.model.requests import request_of
from memcastle.services import SearchRequest
from memcastle.services.views import fit, search_view, shorter_hit

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


# The two search routes are coroutines that run the search on a worker thread themselves: for a plain function
# route, FastAPI also validates the response on a worker thread, a second hop for the requests that matter most.
@router.post("/search", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def search(body: SearchBody, request: Request) -> dict[str, Any]:
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.search(query), body))


@router.post("/recall", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def recall(body: SearchBody, request: Request) -> dict[str, Any]:
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.recall(query), body))


@router.get("/search", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def search_get(request: Request) -> dict[str, Any]:
    """`POST /api/search` as a link: every field a query parameter (`q` for `query`; `tag` repeated, or `tags`
    comma-separated)."""
    body = query_body(request)
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.search(query), body))


@router.get("/recall", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def recall_get(request: Request) -> dict[str, Any]:
    """`POST /api/recall` as a link, with the same query parameters as `GET /api/search`."""
    body = query_body(request)
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.recall(query), body))


class SearchQueryString(SearchBody):
    # Text in, as a query string carries it: "10" is a limit and "true" a boolean here; unknown names still refused.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=False)


def query_body(request: Request) -> SearchBody:
    """A search's fields from the query string, validated as the JSON body is: an unknown or repeated parameter, or
    a wrong value, is a 400 naming it."""
    fields: dict[str, Any] = {}
    for name in request.query_params:
        values = request.query_params.getlist(name)
        key = {"q": "query", "tag": "tags"}.get(name, name)
        if key == "tags":
            fields.setdefault("tags", []).extend(t for v in values for t in v.split(",") if t)
        elif len(values) > 1 or key in fields:
            raise InvalidRequest(f"{name}: given more than once", field=key)
        else:
            fields[key] = values[0]
    try:
        return SearchQueryString.model_validate(fields)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("query", *e["loc"])} for e in exc.errors()]) from None


def _answer(result: SearchResult, body: SearchBody) -> dict[str, Any]:
    """The complete shape, or with `full: false` the compact one MCP answers with; `max_chars` keeps either within
    its budget."""
    answer = result.to_json() if body.full else search_view(result)
    return fit(answer, "hits", body.max_chars, shrink=shorter_hit)


@router.post("/embed", status_code=202, response_model=SweepOut, tags=["search"], dependencies=[Depends(writes)])
def embed(request: Request, body: EmptyBody) -> dict[str, Any]:
    job = services(request).jobs.request_embedding(requested_by=requester(request))
    if job is None:
        return {"job": None, "message": "embeddings are disabled (embeddings.provider = none)"}
    return {"job": job.to_json()}


def _search_request(body: SearchBody) -> SearchRequest:
    return request_of(SearchRequest, dict(body))
