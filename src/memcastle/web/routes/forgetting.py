"""Forgetting from the page: a preview of what would go (the same transaction, rolled back), then the erase."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from memcastle.errors import InvalidRequest
from memcastle.services import ForgetRequest
from memcastle.web.pages import PageRoute, allow, check_csrf, page, services_of
from memcastle.web.routes.search import kept_fields, search_form, search_request

router = APIRouter(include_in_schema=False, route_class=PageRoute)
# What shapes a search's ranking but not which drawers match: not part of what a forget erases.
IGNORED = frozenset({"ranking", "expand", "preferences", "limit", "page"})


def _forget_request(values: Mapping[str, Any]) -> tuple[ForgetRequest, dict[str, Any]]:
    """A drawer, or the search the form describes — every filter of the search page's form (scope, tags, kind,
    connector, time), not only its words."""
    drawer = str(values.get("drawer") or "")
    form = search_form(values)
    if drawer:
        return ForgetRequest(kind="drawer", drawer_id=drawer), form
    if form["query"].strip():
        return ForgetRequest(kind="search", search=search_request(form)), form
    raise InvalidRequest("say what to forget: a drawer, or a search", field="drawer")


@router.get("/forget", response_class=HTMLResponse)
def forget_preview(request: Request) -> HTMLResponse:
    """What a forget would erase, with the button that erases it."""
    allow(request, "write")
    asked, form = _forget_request(request.query_params)
    preview = services_of(request).forgetting.forget(asked, dry_run=True)
    return _page(request, asked, form, preview=preview, done=None)


@router.post("/forget", response_class=HTMLResponse)
async def forget(request: Request) -> HTMLResponse:
    values = await request.form()
    check_csrf(request, str(values.get("csrf") or ""))
    allow(request, "write")
    asked, form = _forget_request(values)
    done = services_of(request).forgetting.forget(asked, dry_run=False, requested_by="web")
    return _page(request, asked, form, preview=None, done=done)


def _page(request: Request, asked: ForgetRequest, form: dict[str, Any], **outcome: Any) -> HTMLResponse:
    scope = [(k, v) for k, v in kept_fields(form) if k not in IGNORED] if asked.kind == "search" else []
    return page(request, "forget.html", drawer=asked.drawer_id or "", query=form["query"], scope=scope,
                title="Forget", **outcome)  # fmt: skip
