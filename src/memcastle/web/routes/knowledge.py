"""What the palace believes: the effective source preferences, and facts (by default where sources disagree)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from memcastle.web.pages import PageRoute, allow, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)


@router.get("/preferences", response_class=HTMLResponse)
def preferences_page(request: Request) -> HTMLResponse:
    """The effective source-preference policy, each field with the layer it came from."""
    services = services_of(request)
    check = services.check_preferences().to_json()
    return page(request, "preferences.html", policy=services.policy.to_json(), check=check, title="Preferences")


@router.get("/facts", response_class=HTMLResponse)
def facts_page(request: Request, state: str = "conflicting", subject: str = "", limit: int = 50) -> HTMLResponse:
    """Facts, by default where sources disagree: each conflict with its preferred fact and the basis for it."""
    allow(request, "read")
    facts = services_of(request).facts.list_facts(state=state or None, subject=subject or None, limit=limit)
    return page(request, "facts.html", facts=[f.to_json() for f in facts], state=state, subject=subject, title="Facts")


@router.get("/facts/{fact_id}", response_class=HTMLResponse)
def fact_page(request: Request, fact_id: str) -> HTMLResponse:
    facts = services_of(request).facts
    allow(request, "read")
    fact = facts.get_fact(fact_id)
    history = [f.to_json() for f in facts.fact_history(fact_id)]
    return page(request, "fact.html", fact=fact.to_json(), history=history, title="Fact")
