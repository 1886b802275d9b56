"""Search and recall (complete or compact hits, within a budget), and the embed sweep."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
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

SHAPES = ("nested", "flat")
# How hits are shaped: each drawer under `drawer` (nested), or its fields beside the hit's own (flat: the original
# MemCastle's `hit.content`).
Shape = Annotated[Literal["nested", "flat"], Query(description="nested: hit.drawer.content; flat: hit.content")]


# The two search routes are coroutines that run the search on a worker thread themselves: for a plain function
# route, FastAPI also validates the response on a worker thread, a second hop for the requests that matter most.
@router.post("/search", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def search(body: SearchBody, request: Request, shape: Shape = "nested") -> dict[str, Any]:
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.search(query), body, shape))


@router.post("/recall", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def recall(body: SearchBody, request: Request, shape: Shape = "nested") -> dict[str, Any]:
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.recall(query), body, shape))


@router.get("/search", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def search_get(request: Request) -> dict[str, Any]:
    """`POST /api/search` as a link: every field a query parameter (`q` for `query`; `tag` repeated, or `tags`
    comma-separated)."""
    body, shape = query_body(request)
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.search(query), body, shape))


@router.get("/recall", response_model=SearchOut | CompactSearchOut, tags=["search"], dependencies=[Depends(reads)])
async def recall_get(request: Request) -> dict[str, Any]:
    """`POST /api/recall` as a link, with the same query parameters as `GET /api/search`."""
    body, shape = query_body(request)
    query = _search_request(body)
    return await run_in_threadpool(lambda: _answer(services(request).search.recall(query), body, shape))


class SearchQueryString(SearchBody):
    # Text in, as a query string carries it: "10" is a limit and "true" a boolean here; unknown names still refused.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=False)


def query_body(request: Request) -> tuple[SearchBody, str]:
    """A search's fields from the query string, validated as the JSON body is: an unknown or repeated parameter, or
    a wrong value, is a 400 naming it; and the hit shape asked for (`shape`)."""
    fields: dict[str, Any] = {}
    shape = request.query_params.get("shape", "nested")
    if shape not in SHAPES:
        raise InvalidRequest(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}", field="shape")
    for name in request.query_params:
        if name == "shape":
            continue
        values = request.query_params.getlist(name)
        key = {"q": "query", "tag": "tags"}.get(name, name)
        if key == "tags":
            fields.setdefault("tags", []).extend(t for v in values for t in v.split(",") if t)
        elif len(values) > 1 or key in fields:
            raise InvalidRequest(f"{name}: given more than once", field=key)
        else:
            fields[key] = values[0]
    try:
        return SearchQueryString.model_validate(fields), shape
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("query", *e["loc"])} for e in exc.errors()]) from None


def _answer(result: SearchResult, body: SearchBody, shape: str = "nested") -> dict[str, Any]:
    """The complete shape, or with `full: false` the compact one MCP answers with; `max_chars` keeps either within
    its budget. `shape=flat` puts each complete hit's drawer fields beside its score and signals (`hit.content`), as
    the original MemCastle answers."""
    answer = result.to_json() if body.full else search_view(result)
    if shape == "flat" and body.full:
        answer["hits"] = [
            {**hit["drawer"], **{k: v for k, v in hit.items() if k != "drawer"}} for hit in answer["hits"]
        ]
    return fit(answer, "hits", body.max_chars, shrink=shorter_hit)


@router.post("/embed", status_code=202, response_model=SweepOut, tags=["search"], dependencies=[Depends(writes)])
def embed(request: Request, body: EmptyBody) -> dict[str, Any]:
    job = services(request).jobs.request_embedding(requested_by=requester(request))
    if job is None:
        return {"job": None, "message": "embeddings are disabled (embeddings.provider = none)"}
    return {"job": job.to_json()}


def _search_request(body: SearchBody) -> SearchRequest:
    return request_of(SearchRequest, dict(body))
