"""Logging in with a palace token (kept in an HttpOnly, SameSite=Strict cookie) and out."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memcastle.web.pages import TOKEN_COOKIE, PageRoute, check_csrf, page

router = APIRouter(include_in_schema=False, route_class=PageRoute)


def _local(target: str) -> str:
    """Where to go after logging in: a path of this daemon only (never another site)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return page(request, "login.html", next=_local(next), failed=False, title="Log in")


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, token: str = Form(""), csrf: str = Form(""), next: str = Form("/")) -> Response:
    """Check the token against the palace's tokens and keep it in an HttpOnly, SameSite=Strict cookie."""
    check_csrf(request, csrf)
    tokens = request.app.state.tokens
    if tokens is None:
        return RedirectResponse(_local(next), status_code=303)  # authentication is off: nothing to log in to
    if not token.strip() or tokens.verify(token.strip()) is None:
        return page(request, "login.html", status=401, next=_local(next), failed=True, title="Log in")
    answer = RedirectResponse(_local(next), status_code=303)
    answer.set_cookie(TOKEN_COOKIE, token.strip(), httponly=True, samesite="strict", path="/")
    return answer


@router.post("/logout")
def logout(request: Request, csrf: str = Form("")) -> Response:
    check_csrf(request, csrf)
    answer = RedirectResponse("/login", status_code=303)
    answer.delete_cookie(TOKEN_COOKIE, path="/")
    return answer
