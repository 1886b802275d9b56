"""The web page (docs/web.md): server-rendered pages over the same services as every other interface.

`pages` holds what every page shares (templates, CSRF, the one HTML error handler); `routes` the pages, one module
per concern.

Jinja2 renders each page; htmx (vendored under `static/`, with its licence) swaps in search results and job rows
without a build step; the job page follows `GET /api/events`. Pages read through the services exactly as the REST
routes do, under the same guard (host, origin), authentication and memory mode. Every state-changing form carries a
CSRF token: an HMAC, under a key only this daemon holds, of the browser's `memcastle_csrf` cookie. A page on another
port of this machine can set that cookie (cookies are not kept apart by port, and such a page is "same-site"), but it
can neither read this daemon's pages nor compute the token for the cookie it set. The origin guard refuses any
`Origin` but the daemon's own before any of this runs.
"""

from __future__ import annotations

from fastapi import APIRouter

from memcastle.web.pages import STATIC
from memcastle.web.routes import audit, drawers, forgetting, jobs, knowledge, login, overview, search, work

router = APIRouter(include_in_schema=False)
for concern in (search, drawers, jobs, login, forgetting, knowledge, audit, overview, work):
    router.include_router(concern.router)

__all__ = ["STATIC", "router"]
