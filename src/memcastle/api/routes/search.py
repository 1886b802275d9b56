"""Search and recall (complete or compact hits, within a budget), and the embed sweep."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
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
