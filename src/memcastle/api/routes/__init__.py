"""REST routes under /api (SPEC §7), one module per concern as `services/` is: each route parses, calls one service
method, and renders JSON. `router` holds them all, in this order, as one table (the tests read it)."""

from fastapi import APIRouter

from memcastle.api.openapi import DeclaredRoute
from memcastle.api.routes import (
    agents,
    compat,
    drawers,
    events,
    facts,
    forgetting,
    jobs,
    mining,
    search,
    status,
    webhooks,
)

# The app includes each concern's router on its own (`CONCERN_ROUTERS`), health first: FastAPI prepares a router's
# routes when a request is first routed into it, so a health check prepares the status routes only, not all of them.
CONCERN_ROUTERS = tuple(
    m.router for m in (status, drawers, search, agents, facts, forgetting, jobs, mining, events, webhooks, compat)
)
router = APIRouter(route_class=DeclaredRoute)
for concern in CONCERN_ROUTERS:
    router.routes.extend(concern.routes)

__all__ = ["CONCERN_ROUTERS", "router"]
