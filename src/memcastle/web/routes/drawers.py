"""One drawer with its history, copies and preference trace; browsing wings, rooms and their drawers."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memcastle.web.pages import PageRoute, allow, check_csrf, label, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)


@router.get("/drawer/{drawer_id}", response_class=HTMLResponse)
def drawer_page(request: Request, drawer_id: str) -> HTMLResponse:
    drawers = services_of(request).drawers
    allow(request, "read")
    drawer = drawers.get_drawer(drawer_id)
    return page(
        request,
        "drawer.html",
        drawer=drawer,
        history=list(reversed(drawers.drawer_history(drawer_id))),
        duplicates=[d.to_json() for d in drawers.duplicates(drawer_id)],
        trace=drawers.preference_trace(drawer_id).to_json(),
        title=label(drawer),
    )


@router.post("/drawer/{drawer_id}/marks")
def mark_drawer(
    request: Request, drawer_id: str, csrf: str = Form(""), pinned: bool | None = Form(None),
    hidden: bool | None = Form(None),
) -> Response:  # fmt: skip
    """Pin or unpin, hide or show the drawer, then back to its page."""
    check_csrf(request, csrf)
    allow(request, "write")
    marked = services_of(request).drawers.mark(drawer_id, pinned=pinned, hidden=hidden)
    return RedirectResponse(f"/drawer/{marked.id}", status_code=303)


@router.get("/browse", response_class=HTMLResponse)
def browse_page(request: Request, wing: str = "", room: str = "", after: str = "") -> HTMLResponse:
    drawers = services_of(request).drawers
    allow(request, "read")
    wings = drawers.list_wings()
    rooms = drawers.list_rooms(wing) if wing else []
    listed = drawers.list_drawers(wing, room or None, 50, after or None) if wing and room else None
    return page(request, "browse.html", wings=wings, wing=wing, rooms=rooms, room=room, page=listed, title="Browse")
