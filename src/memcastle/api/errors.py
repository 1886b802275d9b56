"""The one place where exceptions become HTTP responses, in the shape of `memcastle.errors.error_shape`."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memcastle.errors import (
    AccessDenied,
    InternalError,
    InvalidRequest,
    MemCastleError,
    NotFound,
    TooManyRequests,
    error_shape,
    field_path,
    http_status,
    invalid_arguments,
)
from memcastle.runtime.logs import REQUEST_ID
from memcastle.services import attached

log = logging.getLogger(__name__)


def error_body(message: str, code: str, help: str = "", **extra: Any) -> dict[str, Any]:
    """An error answer made here rather than from an error (`error_shape`), with the request's id."""
    body = {"error": message, "code": code, "help": help, **{k: v for k, v in extra.items() if v is not None}}
    return with_request_id(body)


def with_request_id(body: dict[str, Any]) -> dict[str, Any]:
    """An error answer with the id of the request it answers (`api.request_ids`), when there is one."""
    current = REQUEST_ID.get()
    return {**body, "request_id": current} if current is not None else body


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def answers(app: FastAPI, method: str, path: str) -> bool:
    """Whether some route of `app` takes `method` on `path` (asked of the router itself, included routers too)."""
    scope = {"type": "http", "path": path, "method": method, "root_path": ""}
    return any(route.matches(scope)[0] is Match.FULL for route in app.router.routes)


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method some route of `app` answers on `path`; where a route names the path itself (no parameter), only
    the methods of such routes (`/api/miners/reload` is that resource, not a miner named `reload`)."""
    from memcastle.api.routes import router  # the REST routes, flat (the app includes them router by router)

    fixed = [m for m in METHODS if any(_answers(route, m, path) for route in router.routes if _fixed(route))]
    return fixed or [method for method in METHODS if answers(app, method, path)]


def _answers(route: Any, method: str, path: str) -> bool:
    return bool(route.matches({"type": "http", "path": path, "method": method, "root_path": ""})[0] is Match.FULL)


def _fixed(route: Any) -> bool:
    return "{" not in str(getattr(route, "path", "{"))


def unreadable_body(cause: BaseException | None) -> InvalidRequest:
    """The body that could not be read as JSON, and why: not UTF-8, or nested past what a decoder takes."""
    if isinstance(cause, UnicodeDecodeError):
        why = f"it is not valid UTF-8 (byte {cause.start})"
    elif isinstance(cause, RecursionError):
        why = "it is nested too deeply"
    else:
        why = "it is not valid JSON"
    return InvalidRequest(f"the body could not be read: {why}", field="body", help="send a JSON object in UTF-8")


def accepted_fields(request: Request, loc: tuple[Any, ...]) -> list[str]:
    """The fields the object holding an unknown one takes (a body's top level, or a nested object's), by the names a
    client sends; empty when that cannot be told."""
    route = request.scope.get("route")
    body = getattr(route, "body_field", None)
    model: Any = getattr(getattr(body, "field_info", None), "annotation", None) if loc[:1] == ("body",) else None
    for part in loc[1:-1]:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        annotation = getattr(field, "annotation", None)
        model = next((a for a in getattr(annotation, "__args__", (annotation,)) if hasattr(a, "model_fields")), None)
    fields = getattr(model, "model_fields", None)
    if not fields:
        return []
    return sorted(field.alias or name for name, field in fields.items())


def respond(
    request: Request,
    error: MemCastleError,
    status: int | None = None,
    *,
    headers: dict[str, str] | None = None,
    details: list[dict[str, Any]] | None = None,
) -> Response:
    """The one renderer of a failure: a person's browser gets the error page (a page's own route, or a page asked
    for where no route answered), everyone else the JSON shape (`memcastle.errors.error_shape`), with `details` for a
    refused body. The CLI reads that shape back into the same error (`memcastle.errors.from_answer`)."""
    status = status or http_status(error)
    _count(request, error.code)
    if _page_wanted(request):
        from memcastle.web.pages import error_page

        return error_page(request, error, status)
    body = with_request_id({**error_shape(error), **({"details": details} if details is not None else {})})
    return JSONResponse(body, status_code=status, headers=headers)


def _count(request: Request, code: str) -> None:
    """An error answer, counted by its code and interface for the metrics (an app without services counts none)."""
    from memcastle.api.auth import interface_of

    state = request.app.state
    if getattr(state, "services", None) is not None:
        attached(state).metrics.error(code, interface_of(request.scope))


def _page_wanted(request: Request) -> bool:
    if not getattr(request.app.state, "web", False):
        return False
    from memcastle.web.pages import PageRoute, wants_page

    return isinstance(request.scope.get("route"), PageRoute) or wants_page(request)


def refusal_of(request: Request, exc: RequestValidationError) -> tuple[InvalidRequest, list[dict[str, Any]]]:
    """A request pydantic refused, as the invalid request it is (naming its first field, with the fields the object
    takes when it was an unknown one), and every refusal."""
    errors = exc.errors()
    details = [{"field": field_path(tuple(e.get("loc", ()))), "message": e.get("msg")} for e in errors]
    refusal = invalid_arguments(errors, "see the OpenAPI schema at /openapi.json")
    first = errors[0] if errors else {}
    if first.get("type") == "extra_forbidden":
        accepted = accepted_fields(request, tuple(first.get("loc", ())))
        if accepted:
            refusal = InvalidRequest(
                f"{refusal.message}; accepted: {', '.join(accepted)}", field=refusal.field, help=refusal.help
            )
    return refusal, details


def install_error_handlers(app: FastAPI) -> None:
    """Every failure, whatever raised it, through `respond`."""

    @app.exception_handler(MemCastleError)
    async def on_memcastle_error(request: Request, exc: MemCastleError) -> Response:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AccessDenied) and exc.unauthenticated else None
        if isinstance(exc, TooManyRequests):
            headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
        return respond(request, exc, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> Response:
        refusal, details = refusal_of(request, exc)
        return respond(request, refusal, 400, details=details)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's answer to a body it could not decode at all: said as the invalid request it is, naming it.
            return respond(request, unreadable_body(exc.__cause__), 400)
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            # Starlette names only the first route that matched the path; GET and POST of one path are two routes.
            headers["Allow"] = ", ".join(allowed_methods(request.app, request.url.path))
        if exc.status_code in (404, 405) and _page_wanted(request):
            missing = NotFound(f"there is no page at {request.url.path}", help="the pages are in the menu above")
            return respond(request, missing, exc.status_code)
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(exc.status_code, "http_error")
        _count(request, code)
        return JSONResponse(error_body(str(exc.detail), code), status_code=exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return respond(request, InternalError.of(exc), 500)
