"""An honest OpenAPI schema: every route declares its answer model and the error answers it can give.

`DeclaredRoute` is the route class of every `/api` router: it adds the error statuses a route can answer, each with
the one error body (`ErrorBody`), and sends answers without the keys a model declares but a value leaves unset.
`honest_openapi` drops the `422` FastAPI adds by default: validation errors are answered with `400`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts

from memcastle.api.responses import ErrorBody

WHY: dict[int, str] = {
    400: "invalid request: the field at fault is named (a bad mode header, a malformed or out-of-range value)",
    401: "authentication is on and the bearer token is missing or not valid",
    403: "refused: a foreign Host or Origin, or the client's memory mode does not allow it",
    404: "the thing named does not exist",
    409: "conflicts with the palace's current state (a name taken, an illegal job transition, an idempotency key)",
    413: "the body is larger than server.max_body_bytes",
    415: "a state change must send a JSON body (Content-Type: application/json)",
    429: "too many requests in the last minute (a flooded webhook): Retry-After says when one fits",
    502: "an embedding or extraction provider failed",
    503: "the palace's storage failed to read or write (an I/O error, a damaged file); nothing half-written is kept",
    507: "the disk holding the palace is full: the write was refused, nothing acknowledged was lost",
}
# Routes that can answer 404 although their path names nothing: a request field names a thing that may be missing.
NOT_FOUND_WITHOUT_PATH_PARAMETERS = frozenset(
    {
        "/api/mine",
        "/api/search",
        "/api/recall",
        "/api/facts",
        "/api/checkpoint",
        "/api/wake-up",
        "/api/drawers",
        "/api/forget",
        "/api/graph",
        "/api/jobs",
    }
)
# Routes that call a provider while the client waits (the query's embedding).
PROVIDER_ROUTES = frozenset({"/api/search", "/api/recall"})
_PARAMETER = re.compile(r"\{[^}]+\}")
REF = "#/components/schemas/"


def error_statuses(path: str, methods: set[str]) -> list[int]:
    statuses = [400, 401, 403]
    if _PARAMETER.search(path) or path in NOT_FOUND_WITHOUT_PATH_PARAMETERS:
        statuses.append(404)
    if methods - {"GET", "HEAD", "OPTIONS"}:
        statuses += [409, 413, 415, 507]
    if path in PROVIDER_ROUTES:
        statuses.append(502)
    if path.startswith("/hooks/"):
        statuses.append(429)
    statuses.append(503)
    return sorted(statuses)


class DeclaredRoute(APIRoute):
    """A route that answers without unset keys and declares its error statuses. The statuses are added to the schema
    when it is built (`honest_openapi`), not given to FastAPI as `responses={…: {"model": ErrorBody}}`: FastAPI builds
    a validator for every such model of every route, at import and again when the app first routes a request, which
    was a third of the daemon's start-up for a schema only `/openapi.json` reads."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        methods = {m.upper() for m in kwargs.get("methods") or ["GET"]}
        self.error_statuses = [s for s in error_statuses(path, methods) if s not in (kwargs.get("responses") or {})]
        kwargs["response_model_exclude_unset"] = True
        super().__init__(path, endpoint, **kwargs)


def _declare_errors(app: FastAPI, schema: dict[str, Any]) -> None:
    """Each declared route's error statuses, answered with the one error body, in the built schema."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    error_schema = ErrorBody.model_json_schema(ref_template=REF + "{model}")
    components.update(error_schema.pop("$defs", {}))
    components.setdefault(ErrorBody.__name__, error_schema)
    body = {"application/json": {"schema": {"$ref": REF + ErrorBody.__name__}}}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, DeclaredRoute):
            continue
        operations = schema.get("paths", {}).get(context.path_format, {})
        for method in route.methods or ():
            operation = operations.get(method.lower())
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            for status in route.error_statuses:
                responses.setdefault(str(status), {"description": WHY[status], "content": body})
            operation["responses"] = dict(sorted(responses.items()))


def honest_openapi(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """`app.openapi` without the 422 answers FastAPI would declare and the daemon never sends."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    operation.get("responses", {}).pop("422", None)
            _declare_errors(app, schema)
            components = schema.get("components", {}).get("schemas", {})
            for unused in ("HTTPValidationError", "ValidationError"):
                components.pop(unused, None)
            app.openapi_schema = schema
        return app.openapi_schema

    return build
