"""REST routes under /api (SPEC §7), one module per concern as `services/` is: each route parses, calls one service
method, and renders JSON. `router` holds them all, in this order, as one table (the tests read it)."""

from fastapi import APIRouter

from memcastle.api.openapi import DeclaredRoute
from memcastle.api.routes import agents, drawers, events, facts, forgetting, jobs, mining, search, status

router = APIRouter(route_class=DeclaredRoute)
for module in (status, drawers, search, agents, facts, forgetting, jobs, mining, events):
    router.routes.extend(module.router.routes)

__all__ = ["router"]
