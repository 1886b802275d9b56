"""The read audit as a page: what an agent (or a token) saw, and who saw a drawer."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from memcastle.web.pages import PageRoute, allow, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)


@router.get("/audit", response_class=HTMLResponse)
def audit_page(
    request: Request, token: str = "", agent: str = "", drawer: str = "", since: str = "", limit: int = 50
) -> HTMLResponse:
    """Reads, newest first, narrowed to a token, an agent (MCP client) or a drawer: "what did this agent see",
    "who saw this drawer"."""
    allow(request, "read")
    found = services_of(request).audit.reads(
        token=token or None, client=agent or None, item=drawer or None, since=since or None, limit=limit
    )
    form = {"token": token, "agent": agent, "drawer": drawer, "since": since}
    return page(request, "audit.html", reads=[r.to_json() for r in found], form=form, title="Reads")
