"""What the palace believes: the effective source preferences, and facts (by default where sources disagree)."""

from __future__ import annotations

from typing import Any

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
def facts_page(request: Request, state: str | None = None, subject: str = "", limit: int = 50) -> HTMLResponse:
    """Facts, by default where sources disagree: one card per conflict — the question it answers, each claim with
    its evidence, the preferred claim first with the basis in words. Without a state asked for and no conflict, the
    current facts: the page opens on what exists."""
    allow(request, "read")
    facts = services_of(request).facts
    asked = state
    state = "conflicting" if state is None else state
    found = facts.list_facts(state=state or None, subject=subject or None, limit=limit)
    if asked is None and not found:
        current = facts.list_facts(state="current", subject=subject or None, limit=limit)
        if current:
            state, found = "current", current
    listed = [f.to_json() for f in found]
    return page(request, "facts.html", facts=listed, conflicts=conflict_cards(listed), state=state, subject=subject,
                title="Facts", no_conflict=asked is None and state == "current")  # fmt: skip


def conflict_cards(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The facts of each conflict group together (a group is named by its preferred member), the preferred one
    first, then the others newest first; facts in no conflict are left to the plain list."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for fact in facts:
        preferred = fact["lifecycle"].get("preferred_id")
        if preferred:
            groups.setdefault(preferred, []).append(fact)
    cards = []
    for members in groups.values():
        members.sort(key=lambda f: (not f["lifecycle"].get("preferred"), _negated(f["valid_from"])))
        first = members[0]
        cards.append({"subject": first["subject"], "predicate": first["predicate"].replace("_", " "),
                      "claims": members, "basis": first["lifecycle"].get("basis")})  # fmt: skip
    return cards


def _negated(instant: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in instant)


@router.get("/facts/{fact_id}", response_class=HTMLResponse)
def fact_page(request: Request, fact_id: str) -> HTMLResponse:
    facts = services_of(request).facts
    allow(request, "read")
    fact = facts.get_fact(fact_id).to_json()
    history = [f.to_json() for f in facts.fact_history(fact_id)]
    known = {f["id"]: f for f in history}
    links = []
    for link in fact["lifecycle"]["links"]:
        other_id = link["to"] if link["from"] == fact["id"] else link["from"]
        other = known.get(other_id) or facts.get_fact(other_id).to_json()
        links.append({**link, "outgoing": link["from"] == fact["id"], "other": other})
    return page(request, "fact.html", fact=fact, history=history, links=links, title="Fact")


@router.get("/graph", response_class=HTMLResponse)
def graph_page(request: Request, entity: str = "", drawer: str = "", depth: int = 1) -> HTMLResponse:
    """The entities and facts around an entity or a drawer, bounded (`/api/graph`): drawn with Cytoscape.js, and
    listed as text beside the picture."""
    allow(request, "read")
    graph = None
    if entity or drawer:
        graph = services_of(request).facts.graph(entity=entity or None, drawer=drawer or None, depth=depth, limit=80)
    return page(request, "graph.html", graph=graph, entity=entity, drawer=drawer, depth=depth, title="Graph")
