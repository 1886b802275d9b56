"""Asking for work from the page: a mine (`/mine`: every connector with its declared options, as a form) and
maintenance (`/maintenance`: audit and repair, with their jobs); and agents' diaries (`/diaries`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memcastle.errors import InvalidRequest, MemCastleError
from memcastle.model.requests import MineRequest
from memcastle.services.reader import palace_wide
from memcastle.web.pages import PageRoute, allow, check_csrf, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)
DIARY_ROOM = "diary"


@router.get("/mine", response_class=HTMLResponse)
def mine_page(request: Request, connector: str = "") -> HTMLResponse:
    """Every connector, and for the one chosen its locator, wing and declared options as a form."""
    allow(request, "read")
    connectors = services_of(request).mining.list_connectors()
    chosen = next((c for c in connectors if c["name"] == connector), None)
    return page(request, "mine.html", connectors=connectors, chosen=chosen, error=None, values={}, title="Mine")


@router.post("/mine", response_class=HTMLResponse)
async def mine_submit(request: Request) -> Response:
    """Queue the mine the form describes and follow it on the jobs page; a refused one is shown on the form."""
    form = await request.form()
    check_csrf(request, str(form.get("csrf") or ""))
    allow(request, "write")
    services = services_of(request)
    name = str(form.get("connector") or "")
    connectors = services.mining.list_connectors()
    chosen = next((c for c in connectors if c["name"] == name), None)
    if chosen is None:
        raise InvalidRequest(f"no connector named {name!r}", field="connector")
    options = {k: str(form.get(f"option.{k}") or "").strip() for k in chosen["options"]}
    asked = MineRequest(
        connector=name,
        locator=str(form.get("locator") or "").strip(),
        options={k: v for k, v in options.items() if v},
        wing=str(form.get("wing") or "").strip() or None,
        full=form.get("full") == "true",
    )
    try:
        submitted = services.mining.submit_mine(asked, requested_by="web")
    except MemCastleError as exc:
        values = {"locator": asked.locator, "wing": asked.wing or "", "full": asked.full, **options}
        return page(request, "mine.html", status=400, connectors=connectors, chosen=chosen, error=exc, values=values,
                    title="Mine")  # fmt: skip
    return RedirectResponse(f"/jobs#job-{submitted.job.id}", status_code=303)


@router.get("/maintenance", response_class=HTMLResponse)
def maintenance_page(request: Request) -> HTMLResponse:
    """Audit and repair: what they check, the buttons, and their jobs with what they found or fixed."""
    palace_wide("the maintenance page")
    allow(request, "read")
    jobs = services_of(request).jobs
    listed = [j.to_json() for kind in ("audit", "repair") for j in jobs.list_jobs(None, kind, 10)]
    listed.sort(key=lambda j: j["created_at"], reverse=True)
    return page(request, "maintenance.html", jobs=listed, title="Maintenance")


@router.post("/maintenance/{action}")
async def maintenance_submit(request: Request, action: str) -> Response:
    palace_wide("the maintenance page")
    form = await request.form()
    check_csrf(request, str(form.get("csrf") or ""))
    allow(request, "control")
    jobs = services_of(request).jobs
    if action == "audit":
        job = jobs.submit_audit(requested_by="web")
    elif action == "repair":
        job = jobs.submit_repair(requested_by="web")
    else:
        raise InvalidRequest(f"unknown action {action!r}; audit or repair", field="action")
    return RedirectResponse(f"/maintenance#job-{job.id}", status_code=303)


@router.get("/diaries", response_class=HTMLResponse)
def diaries_page(request: Request, agent: str = "", wing: str = "") -> HTMLResponse:
    """The agents that keep a diary, and one agent's entries, newest first."""
    allow(request, "read")
    services = services_of(request)
    agents: dict[str, int] = {}
    for place in services.drawers.list_wings():
        rooms = {r.name for r in services.drawers.list_rooms(place.name)}
        if DIARY_ROOM in rooms:
            for drawer in services.drawers.list_drawers(place.name, DIARY_ROOM, 200, None).items:
                if drawer.source.agent:
                    agents[drawer.source.agent] = agents.get(drawer.source.agent, 0) + 1
    entries: list[Any] = services.agents.read_diary(agent, wing=wing or None, limit=50) if agent else []
    return page(request, "diaries.html", agents=sorted(agents.items()), agent=agent, wing=wing, entries=entries,
                title="Diaries")  # fmt: skip
