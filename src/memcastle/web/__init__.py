"""The web page (docs/web.md): server-rendered pages over the same services as every other interface.

Jinja2 renders each page; htmx (vendored under `static/`, with its licence) swaps in search results and job rows
without a build step; the job page follows `GET /api/events`. Pages read through the services exactly as the REST
routes do, under the same guard (host, origin), authentication and memory mode. Every state-changing form carries a
CSRF token: an HMAC, under a key only this daemon holds, of the browser's `memcastle_csrf` cookie. A page on another
port of this machine can set that cookie (cookies are not kept apart by port, and such a page is "same-site"), but it
can neither read this daemon's pages nor compute the token for the cookie it set. The origin guard refuses any
`Origin` but the daemon's own before any of this runs.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memcastle.errors import AccessDenied, InvalidRequest, MemCastleError, http_status
from memcastle.modes import HEADER, enforce_mode, parse_mode
from memcastle.services import ForgetRequest, SearchRequest, Services

if TYPE_CHECKING:
    from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
STATIC = HERE / "static"
CSRF_COOKIE = "memcastle_csrf"
HTMX = "htmx-2.0.11.min.js"

router = APIRouter(include_in_schema=False)


def _services(request: Request) -> Services:
    return request.app.state.services  # type: ignore[no-any-return]


def _mode(request: Request) -> str:
    return parse_mode(request.headers.get(HEADER), field="X-MemCastle-Mode")


@functools.cache
def _templates() -> Jinja2Templates:
    """The Jinja2 environment, made by the first page served: Jinja2 is not on the daemon's start-up path."""
    from fastapi.templating import Jinja2Templates

    return Jinja2Templates(directory=str(HERE / "templates"))


def _csrf_token(request: Request, cookie: str) -> str:
    key: bytes = request.app.state.csrf_key
    return hmac.new(key, cookie.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def _page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    cookie = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
    logged_in = bool(request.cookies.get("memcastle_token"))
    shared = {"csrf": _csrf_token(request, cookie), "htmx": HTMX, "logged_in": logged_in}
    answer = _templates().TemplateResponse(request, template, {**shared, **context}, status_code=status)
    if request.cookies.get(CSRF_COOKIE) != cookie:
        answer.set_cookie(CSRF_COOKIE, cookie, httponly=True, samesite="strict", path="/")
    return answer


def _check_csrf(request: Request, token: str) -> None:
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not token or not secrets.compare_digest(_csrf_token(request, cookie), token):
        raise AccessDenied("the form's CSRF token does not match; reload the page and try again")


def _error(request: Request, exc: MemCastleError) -> HTMLResponse:
    return _page(request, "error.html", status=http_status(exc), error=exc)


# --- search ---------------------------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def search_page(
    request: Request,
    query: str = "",
    q: str = "",
    wing: str = "",
    room: str = "",
    tags: str = "",
    source_kind: str = "",
    connector: str = "",
    ranking: str = "auto",
    time: str = "current",
    as_of: str = "",
    from_: Annotated[str, Query(alias="from")] = "",
    until: str = "",
    known_at: str = "",
    known_from: str = "",
    known_until: str = "",
    expand: bool = False,
    preferences: str = "on",
    limit: int = 10,
) -> HTMLResponse:
    """The search page; with `query` (`q` is its earlier name), its hits (only the hits for an htmx request)."""
    query = query or q
    services = _services(request)
    form = {"query": query, "wing": wing, "room": room, "tags": tags, "source_kind": source_kind,
            "connector": connector, "ranking": ranking, "time": time, "as_of": as_of, "from": from_, "until": until,
            "known_at": known_at, "known_from": known_from, "known_until": known_until, "expand": expand,
            "preferences": preferences, "limit": limit}  # fmt: skip
    result = None
    error = None
    if query.strip():
        try:
            enforce_mode(_mode(request), "read")
            result = services.search.search(
                SearchRequest(
                    query=query,
                    limit=limit,
                    wing=wing or None,
                    room=room or None,
                    tags=tuple(t.strip() for t in tags.split(",") if t.strip()),
                    source_kind=source_kind or None,
                    connector=connector or None,
                    ranking=ranking,
                    as_of=(as_of or None) if time == "as_of" else None,
                    from_=(from_ or None) if time == "window" else None,
                    until=(until or None) if time == "window" else None,
                    include_historical=time == "historical",
                    known_at=(known_at or None) if time == "known_at" else None,
                    known_from=(known_from or None) if time == "known_window" else None,
                    known_until=(known_until or None) if time == "known_window" else None,
                    expand=expand,
                    preferences=preferences,
                )
            )
        except MemCastleError as exc:
            error = exc
    wings = services.drawers.wing_names()
    template = "_hits.html" if request.headers.get("hx-request") and query else "search.html"
    return _page(request, template, form=form, result=result, error=error, wings=wings, title="Search")


# --- drawers --------------------------------------------------------------------------------------------------


@router.get("/drawer/{drawer_id}", response_class=HTMLResponse)
def drawer_page(request: Request, drawer_id: str) -> HTMLResponse:
    services = _services(request)
    try:
        enforce_mode(_mode(request), "read")
        drawer = services.drawers.get_drawer(drawer_id)
        history = services.drawers.drawer_history(drawer_id)
        duplicates = services.drawers.duplicates(drawer_id)
        trace = services.drawers.preference_trace(drawer_id)
    except MemCastleError as exc:
        return _error(request, exc)
    return _page(
        request,
        "drawer.html",
        drawer=drawer,
        history=list(reversed(history)),
        duplicates=duplicates,
        trace=trace,
        title=drawer.name or f"Drawer {drawer.id[:8]}",
    )


# --- browse ---------------------------------------------------------------------------------------------------


@router.get("/browse", response_class=HTMLResponse)
def browse_page(request: Request, wing: str = "", room: str = "", after: str = "") -> HTMLResponse:
    services = _services(request)
    try:
        enforce_mode(_mode(request), "read")
        wings = services.drawers.list_wings()
        rooms = services.drawers.list_rooms(wing) if wing else []
        page = services.drawers.list_drawers(wing, room or None, 50, after or None) if wing and room else None
    except MemCastleError as exc:
        return _error(request, exc)
    return _page(request, "browse.html", wings=wings, wing=wing, rooms=rooms, room=room, page=page, title="Browse")


# --- jobs -----------------------------------------------------------------------------------------------------


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(request: Request) -> HTMLResponse:
    jobs = _services(request).jobs
    listed = [{**j.to_json(), "waiting": jobs.why_waiting(j)} for j in jobs.list_jobs(None, None, 50)]
    return _page(request, "jobs.html", jobs=listed, title="Jobs")


@router.get("/jobs/{job_id}/row", response_class=HTMLResponse)
def job_row(request: Request, job_id: str) -> HTMLResponse:
    jobs = _services(request).jobs
    try:
        job = jobs.get_job(job_id)
    except MemCastleError as exc:
        return _error(request, exc)
    return _page(request, "_job_row.html", job={**job.to_json(), "waiting": jobs.why_waiting(job)})


@router.post("/jobs/{job_id}/{action}", response_class=HTMLResponse)
def job_control(request: Request, job_id: str, action: str, csrf: str = Form("")) -> Response:
    jobs = _services(request).jobs
    try:
        _check_csrf(request, csrf)
        enforce_mode(_mode(request), "control")
        if action not in ("pause", "resume", "cancel", "retry"):
            raise InvalidRequest(f"unknown action {action!r}", field="action")
        job = jobs.control_job(job_id, action)
    except MemCastleError as exc:
        return _error(request, exc)
    if not request.headers.get("hx-request"):
        return RedirectResponse("/jobs", status_code=303)
    return _page(request, "_job_row.html", job={**job.to_json(), "waiting": jobs.why_waiting(job)})


# --- login ----------------------------------------------------------------------------------------------------

TOKEN_COOKIE = "memcastle_token"


def _local(target: str) -> str:
    """Where to go after logging in: a path of this daemon only (never another site)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return _page(request, "login.html", next=_local(next), failed=False, title="Log in")


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, token: str = Form(""), csrf: str = Form(""), next: str = Form("/")) -> Response:
    """Check the token against the palace's tokens and keep it in an HttpOnly, SameSite=Strict cookie."""
    try:
        _check_csrf(request, csrf)
    except MemCastleError as exc:
        return _error(request, exc)
    tokens = request.app.state.tokens
    if tokens is None:
        return RedirectResponse(_local(next), status_code=303)  # authentication is off: nothing to log in to
    if not token.strip() or tokens.verify(token.strip()) is None:
        return _page(request, "login.html", status=401, next=_local(next), failed=True, title="Log in")
    answer = RedirectResponse(_local(next), status_code=303)
    answer.set_cookie(TOKEN_COOKIE, token.strip(), httponly=True, samesite="strict", path="/")
    return answer


@router.post("/logout")
def logout(request: Request, csrf: str = Form("")) -> Response:
    try:
        _check_csrf(request, csrf)
    except MemCastleError as exc:
        return _error(request, exc)
    answer = RedirectResponse("/login", status_code=303)
    answer.delete_cookie(TOKEN_COOKIE, path="/")
    return answer


# --- forget ---------------------------------------------------------------------------------------------------


def _forget_request(drawer: str, query: str, wing: str) -> ForgetRequest:
    if drawer:
        return ForgetRequest(kind="drawer", drawer_id=drawer)
    if query.strip():
        return ForgetRequest(kind="search", search=SearchRequest(query=query, wing=wing or None))
    raise InvalidRequest("say what to forget: a drawer, or a search", field="drawer")


@router.get("/forget", response_class=HTMLResponse)
def forget_preview(request: Request, drawer: str = "", query: str = "", q: str = "", wing: str = "") -> HTMLResponse:
    query = query or q  # `q`: the earlier name
    """What a forget would erase (the same transaction, rolled back), with the button that erases it."""
    try:
        enforce_mode(_mode(request), "write")
        preview = _services(request).forgetting.forget(_forget_request(drawer, query, wing), dry_run=True)
    except MemCastleError as exc:
        return _error(request, exc)
    return _page(
        request, "forget.html", preview=preview, drawer=drawer, query=query, wing=wing, done=None, title="Forget"
    )


@router.post("/forget", response_class=HTMLResponse)
def forget(
    request: Request, csrf: str = Form(""), drawer: str = Form(""), query: str = Form(""), wing: str = Form("")
) -> HTMLResponse:
    try:
        _check_csrf(request, csrf)
        enforce_mode(_mode(request), "write")
        done = _services(request).forgetting.forget(
            _forget_request(drawer, query, wing), dry_run=False, requested_by="web"
        )
    except MemCastleError as exc:
        return _error(request, exc)
    return _page(request, "forget.html", preview=None, drawer=drawer, query=query, wing=wing, done=done, title="Forget")


# --- preferences and facts ------------------------------------------------------------------------------------


@router.get("/preferences", response_class=HTMLResponse)
def preferences_page(request: Request) -> HTMLResponse:
    """The effective source-preference policy, each field with the layer it came from."""
    services = _services(request)
    return _page(
        request,
        "preferences.html",
        policy=services.policy.to_json(),
        check=services.check_preferences(),
        title="Preferences",
    )


@router.get("/facts", response_class=HTMLResponse)
def facts_page(request: Request, state: str = "conflicting", subject: str = "", limit: int = 50) -> HTMLResponse:
    """Facts, by default where sources disagree: each conflict with its preferred fact and the basis for it."""
    try:
        enforce_mode(_mode(request), "read")
        facts = _services(request).facts.list_facts(state=state or None, subject=subject or None, limit=limit)
    except MemCastleError as exc:
        return _error(request, exc)
    return _page(request, "facts.html", facts=facts, state=state, subject=subject, title="Facts")


@router.get("/facts/{fact_id}", response_class=HTMLResponse)
def fact_page(request: Request, fact_id: str) -> HTMLResponse:
    services = _services(request)
    try:
        enforce_mode(_mode(request), "read")
        fact = services.facts.get_fact(fact_id)
        history = services.facts.fact_history(fact_id)
    except MemCastleError as exc:
        return _error(request, exc)
    return _page(request, "fact.html", fact=fact, history=history, title="Fact")
