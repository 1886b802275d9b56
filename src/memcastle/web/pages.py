"""What every page shares: the services, the memory mode, the templates, the CSRF token, and the one HTML error
handler (`PageRoute`): a page raises a `MemCastleError` and the reader gets the error page with the status the
error's class carries, as REST gives it in JSON and the CLI as an exit code."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from fastapi.routing import APIRoute

from memcastle.errors import AccessDenied, MemCastleError, http_status
from memcastle.modes import HEADER, Access, enforce_mode, parse_mode
from memcastle.services import Services

if TYPE_CHECKING:
    from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
STATIC = HERE / "static"
CSRF_COOKIE = "memcastle_csrf"
TOKEN_COOKIE = "memcastle_token"
HTMX = "htmx-2.0.11.min.js"


def services_of(request: Request) -> Services:
    return request.app.state.services  # type: ignore[no-any-return]


def allow(request: Request, action: Access) -> None:
    """Refuse the page unless the request's memory mode allows `action` (read, write, control)."""
    enforce_mode(parse_mode(request.headers.get(HEADER), field="X-MemCastle-Mode"), action)


@functools.cache
def _templates() -> Jinja2Templates:
    """The Jinja2 environment, made by the first page served: Jinja2 is not on the daemon's start-up path."""
    from fastapi.templating import Jinja2Templates

    return Jinja2Templates(directory=str(HERE / "templates"))


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


def check_csrf(request: Request, token: str) -> None:
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not token or not secrets.compare_digest(_csrf_token(request, cookie), token):
        raise AccessDenied("the form's CSRF token does not match; reload the page and try again")


class PageRoute(APIRoute):
    """A page's route: a `MemCastleError` it raises becomes the error page, with its class's status."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except MemCastleError as exc:
                return page(request, "error.html", status=http_status(exc), error=exc)

        return handle
