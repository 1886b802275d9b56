"""Bearer-token authentication as ASGI middleware: everything but `GET /api/health` needs a valid token."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from memcastle.api.errors import error_body
from memcastle.runtime.tokens import TokenStore

PUBLIC = {("GET", "/api/health")}


class BearerAuth:
    """401 with `WWW-Authenticate: Bearer` unless the request carries a token the palace knows."""

    def __init__(self, app: ASGIApp, tokens: TokenStore) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"]) in PUBLIC:
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token.strip() and self.tokens.verify(token.strip()) is not None:
            await self.app(scope, receive, send)
            return
        message = "a bearer token is required" if not header else "the bearer token is not valid"
        body = json.dumps(
            error_body(
                message,
                "unauthorized",
                "create one with: memcastle auth token create NAME; send it as "
                "Authorization: Bearer TOKEN (the CLI reads MEMCASTLE_AUTH_TOKEN)",
            )
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="memcastle"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
