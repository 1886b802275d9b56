"""The palace at a glance (`/overview`), its miners and their triggers (`/miners`), and the daemon's effective
settings (`/settings`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memcastle.errors import InvalidRequest
from memcastle.services.reader import palace_wide
from memcastle.web.pages import PageRoute, allow, check_csrf, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)
RECENT = 12  # jobs under "recent activity" when the page opens; the event stream adds what happens next


@router.get("/overview", response_class=HTMLResponse)
def overview_page(request: Request) -> HTMLResponse:
    """Health, counts by wing and by connector, the embedding backlog with its ETA, and recent activity."""
    palace_wide("the overview")
    allow(request, "read")
    services = services_of(request)
    status = services.status.status().to_json()
    by_connector: dict[str, dict[str, int]] = defaultdict(lambda: {"sources": 0, "documents": 0, "drawers": 0})
    for source in services.places.list_sources():
        counts = by_connector[source["connector"]]
        counts["sources"] += 1
        counts["documents"] += int(source["documents"] or 0)
        counts["drawers"] += int(source["drawers"] or 0)
    recent = [{**j.to_json(), "waiting": None} for j in services.jobs.list_jobs(None, None, RECENT)]
    return page(request, "overview.html", palace=status, wings=services.drawers.list_wings(),
                connectors=sorted(by_connector.items()), recent=recent, title="Overview")  # fmt: skip


@router.get("/miners", response_class=HTMLResponse)
def miners_page(request: Request) -> HTMLResponse:
    """Each miner: what it mines, its triggers, enabled or not, its last run and its next."""
    palace_wide("the miners page")
    allow(request, "read")
    miners = [m.to_json() for m in services_of(request).miners.list_miners()]
    return page(request, "miners.html", miners=miners, title="Miners")


@router.post("/miners/{name}/{action}")
def miner_action(request: Request, name: str, action: str, csrf: str = Form("")) -> Response:
    """Enable, disable or run a miner, then back to the miners page."""
    palace_wide("the miners page")
    check_csrf(request, csrf)
    miners = services_of(request).miners
    if action in ("enable", "disable"):
        allow(request, "control")
        miners.set_enabled(name, action == "enable")
    elif action == "run":
        allow(request, "write")
        miners.run(name, trigger="request", requested_by="web")
    else:
        raise InvalidRequest(f"unknown action {action!r}; one of enable, disable, run", field="action")
    return RedirectResponse("/miners", status_code=303)


@router.get("/settings", response_class=HTMLResponse)
def settings_page(request: Request) -> HTMLResponse:
    """Every effective setting with where its value came from; secrets and URL passwords masked."""
    palace_wide("the settings page")
    allow(request, "read")
    config: dict[str, Any] = services_of(request).runtime.config()
    return page(request, "settings.html", config=config, title="Settings")
