"""Forgetting from the page: a preview of what would go (the same transaction, rolled back), then the erase."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse

from memcastle.errors import InvalidRequest
from memcastle.services import ForgetRequest, SearchRequest
from memcastle.web.pages import PageRoute, allow, check_csrf, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)


def _forget_request(drawer: str, query: str, wing: str) -> ForgetRequest:
    if drawer:
        return ForgetRequest(kind="drawer", drawer_id=drawer)
    if query.strip():
        return ForgetRequest(kind="search", search=SearchRequest(query=query, wing=wing or None))
    raise InvalidRequest("say what to forget: a drawer, or a search", field="drawer")


@router.get("/forget", response_class=HTMLResponse)
def forget_preview(request: Request, drawer: str = "", query: str = "", q: str = "", wing: str = "") -> HTMLResponse:
    """What a forget would erase, with the button that erases it (`q` is `query`'s earlier name)."""
    query = query or q
    allow(request, "write")
    preview = services_of(request).forgetting.forget(_forget_request(drawer, query, wing), dry_run=True)
    return page(request, "forget.html", preview=preview, drawer=drawer, query=query, wing=wing, done=None,
                title="Forget")  # fmt: skip


@router.post("/forget", response_class=HTMLResponse)
def forget(
    request: Request, csrf: str = Form(""), drawer: str = Form(""), query: str = Form(""), wing: str = Form("")
) -> HTMLResponse:
    check_csrf(request, csrf)
    allow(request, "write")
    done = services_of(request).forgetting.forget(
        _forget_request(drawer, query, wing), dry_run=False, requested_by="web"
    )
    return page(request, "forget.html", preview=None, drawer=drawer, query=query, wing=wing, done=done, title="Forget")
