"""One drawer with its history, copies and preference trace; browsing wings, rooms and their drawers."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from memcastle.web.pages import PageRoute, allow, page, services_of

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
        duplicates=drawers.duplicates(drawer_id),
        trace=drawers.preference_trace(drawer_id),
        title=drawer.name or f"Drawer {drawer.id[:8]}",
    )


@router.get("/browse", response_class=HTMLResponse)
def browse_page(request: Request, wing: str = "", room: str = "", after: str = "") -> HTMLResponse:
    drawers = services_of(request).drawers
    allow(request, "read")
    wings = drawers.list_wings()
    rooms = drawers.list_rooms(wing) if wing else []
    listed = drawers.list_drawers(wing, room or None, 50, after or None) if wing and room else None
    return page(request, "browse.html", wings=wings, wing=wing, rooms=rooms, room=room, page=listed, title="Browse")
