"""What every page shares: the services, the memory mode, the templates, the CSRF token, and the one HTML error
handler (`PageRoute`): a page raises a `MemCastleError` and the reader gets the error page with the status the
error's class carries, as REST gives it in JSON and the CLI as an exit code."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute

from memcastle.errors import AccessDenied, MemCastleError
from memcastle.model import Drawer
from memcastle.model.answers import drawer_title, standing_line
from memcastle.modes import HEADER, Access, enforce_mode, parse_mode
from memcastle.services import Services, attached

if TYPE_CHECKING:
    from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
STATIC = HERE / "static"
CSRF_COOKIE = "memcastle_csrf"
TOKEN_COOKIE = "memcastle_token"
HTMX = "htmx-2.0.11.min.js"


def services_of(request: Request) -> Services:
    return attached(request.app.state)


def allow(request: Request, action: Access) -> None:
    """Refuse the page unless the request's memory mode allows `action` (read, write, control)."""
    enforce_mode(parse_mode(request.headers.get(HEADER), field="X-MemCastle-Mode"), action)


@functools.cache
def _templates() -> Jinja2Templates:
    """The Jinja2 environment, made by the first page served: Jinja2 is not on the daemon's start-up path."""
    from fastapi.templating import Jinja2Templates

    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters.update(
        when=when, readable=readable, duration=duration, standing_line=standing_line, label=label
    )
    return templates


def label(drawer: Drawer) -> str:
    """What a person calls a drawer (`model.answers.drawer_title`)."""
    origin = drawer.source.origin
    document, lines = (origin.document, origin.lines) if origin is not None else (None, None)
    return drawer_title(document, lines, drawer.name, drawer.content) or f"Drawer {drawer.id[:8]}"


def when(instant: str | None, precision: str = "minute") -> str:
    """An instant as a person reads it: `2026-03-05 10:00 UTC` (`day`: `2026-03-05`; `second`: with seconds), never
    the microseconds of the stored form; "—" for none."""
    if not instant:
        return "—"
    text = str(instant)
    day, _, rest = text.partition("T")
    if precision == "day" or not rest:
        return day
    clock = rest[:8] if precision == "second" else rest[:5]
    zone = " UTC" if rest.endswith(("Z", "+00:00")) else ""
    return f"{day} {clock}{zone}"


def duration(start: str | None, end: str | None) -> str:
    """How long from `start` to `end` (instants), as a person says it: `0.4 s`, `12 s`, `3 min 5 s`, `2 h 10 min`."""
    from memcastle.clock import to_datetime

    if not start or not end:
        return "—"
    seconds = max(0.0, (to_datetime(end) - to_datetime(start)).total_seconds())
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def readable(value: Any) -> str:
    """A metadata value as text: a string as written, a list joined with commas, an object as `key: value` pairs,
    nothing escaped or quoted (the template escapes it for HTML)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(readable(v) for v in value) or "—"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {readable(v)}" for k, v in value.items()) or "—"
    return str(value)


def _csrf_token(request: Request, cookie: str) -> str:
    key: bytes = request.app.state.csrf_key
    return hmac.new(key, cookie.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """`template` rendered with the shared context (the CSRF token, htmx, whether a token is kept), setting the CSRF
    cookie when the browser has none."""
    cookie = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
    logged_in = bool(request.cookies.get(TOKEN_COOKIE))
    shared = {"csrf": _csrf_token(request, cookie), "htmx": HTMX, "logged_in": logged_in}
    answer = _templates().TemplateResponse(request, template, {**shared, **context}, status_code=status)
    if request.cookies.get(CSRF_COOKIE) != cookie:
        answer.set_cookie(CSRF_COOKIE, cookie, httponly=True, samesite="strict", path="/")
    return answer


ERROR_TITLES = {400: "Invalid request", 401: "Sign in", 403: "Not allowed", 404: "Not found", 405: "Not allowed here",
                409: "Conflict", 413: "Too large", 429: "Too many requests", 500: "Internal error",
                503: "Unavailable"}  # fmt: skip
API_PREFIXES = ("/api/", "/mcp", "/hooks/", "/openapi", "/docs", "/redoc", "/static/", "/metrics")


def error_page(request: Request, error: MemCastleError, status: int) -> HTMLResponse:
    """The error page: what went wrong and what to do, titled by the kind of error, with the request's id (its log
    lines carry it too)."""
    request_id = (request.scope.get("state") or {}).get("request_id")
    title = ERROR_TITLES.get(status, "Error")
    return page(request, "error.html", status=status, error=error, title=title, request_id=request_id)


def wants_page(request: Request) -> bool:
    """Whether an answer goes to a person's browser: a page is asked for (`Accept: text/html`) at a path that is not
    the API's, MCP's or a webhook's, which answer JSON to everyone."""
    path = request.url.path
    return path != "/api" and not path.startswith(API_PREFIXES) and "text/html" in request.headers.get("accept", "")


def check_csrf(request: Request, token: str) -> None:
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not token or not secrets.compare_digest(_csrf_token(request, cookie), token):
        raise AccessDenied("the form's CSRF token does not match; reload the page and try again")


class PageRoute(APIRoute):
    """A page's route: what it raises is answered with the error page, whatever the client accepts
    (`memcastle.api.errors.respond`)."""
