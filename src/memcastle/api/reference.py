"""docs/http-api.md's Endpoints table, written from the routes themselves with cog (`cog -r docs/http-api.md`;
`cog --check` in CI fails when a route is added, removed or moved without it): every route of the REST routers and
the app's own (`/metrics`), in the order the app includes them, with what it takes and answers (`api.route_docs`).
A route without an entry, or an entry without a route, fails the generation."""

from __future__ import annotations

from fastapi.routing import APIRoute

from memcastle.api.route_docs import ROUTE_DOCS
from memcastle.api.routes import router
from memcastle.api.token_routes import router as token_router

HEADER = "| method + path | body / query | answer |\n|---|---|---|\n"
APP_ROUTES = ("GET /metrics",)  # added by the app itself (`api.application`), not by a router


def route_keys() -> list[str]:
    """Every route as `METHOD path`, in the app's order."""
    keys = [
        f"{method} {route.path}"
        for route in (*router.routes, *token_router.routes)
        if isinstance(route, APIRoute)
        for method in sorted(route.methods or ())
    ]
    return [*keys[:1], *APP_ROUTES, *keys[1:]]


def routes_table() -> str:
    keys = route_keys()
    unknown = sorted(set(ROUTE_DOCS) - set(keys))
    if unknown:
        raise KeyError(f"api/route_docs.py documents routes the app does not have: {', '.join(unknown)}")
    rows = []
    for key in keys:
        takes, answers = ROUTE_DOCS[key]  # a KeyError names a route without its entry
        takes = f" {takes} " if takes else " "
        rows.append(f"| `{key.replace(':path}', '}')}` |{takes}| {answers} |\n")
    return HEADER + "".join(rows)
