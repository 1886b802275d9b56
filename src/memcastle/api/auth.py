"""Token authentication as ASGI middleware: everything but `GET /api/health`, the web page's login form and its
static files needs a valid token — as `Authorization: Bearer TOKEN`, or for the web page as the `memcastle_token`
cookie the login form sets (HttpOnly, SameSite=Strict). A page asked for without one is sent to the login form."""

from __future__ import annotations

import http.cookies
import json
import urllib.parse

from starlette.types import ASGIApp, Receive, Scope, Send

from memcastle.api.access import narrow_mode
from memcastle.api.asgi import HttpMiddleware
from memcastle.api.errors import error_body
from memcastle.model.visibility import EVERYTHING
from memcastle.runtime.tokens import TOKEN_STATE, TokenRecord, TokenStore
from memcastle.services.reader import Reader, reading_as

PUBLIC = {("GET", "/api/health"), ("GET", "/login"), ("POST", "/login")}
PUBLIC_PREFIXES = ("/static/", "/hooks/")  # a webhook delivery is verified by its own signature or token
COOKIE = "memcastle_token"


class BearerAuth:
    """401 with `WWW-Authenticate: Bearer` unless the request carries a token the palace knows."""

    def __init__(self, app: ASGIApp, tokens: TokenStore) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or (scope["method"], path) in PUBLIC or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        header = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        record = self.tokens.verify(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if record is None and not header:
            cookie = _cookie(headers.get(b"cookie", b"").decode("latin-1"), COOKIE)
            record = self.tokens.verify(cookie) if cookie else None
        if record is not None:
            if record.mode != "full":
                narrow_mode(scope, record.mode)  # a token's mode is a ceiling, as the daemon's is
            # Who is asking, for every interface behind this one (REST, MCP, the web page): `tokens.token_of`,
            # and through `app.ReaderContext` what it may see for every service operation the request runs.
            scope.setdefault("state", {})[TOKEN_STATE] = record
            await self.app(scope, receive, send)
            return
        if scope["method"] == "GET" and not path.startswith(("/api/", "/mcp", "/metrics")):
            # A person opening a page: the login form, which brings them back here.
            query = scope.get("query_string", b"").decode("latin-1")
            target = urllib.parse.quote(path + (f"?{query}" if query else ""), safe="")
            redirect = [(b"location", f"/login?next={target}".encode()), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 303, "headers": redirect})
            await send({"type": "http.response.body", "body": b""})
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


class ReaderContext(HttpMiddleware):
    """Every request runs for its `Reader` (`services.reader`): the interface it came through (the web page, REST —
    the CLI names itself in `X-MemCastle-Client` —, or MCP), the token `BearerAuth` verified and that token's wing
    scope. Installed inside `BearerAuth`, always (with authentication off the reader has no token and sees all)."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        record = token_of_scope(scope)
        who = Reader(
            interface=interface_of(scope),
            token=record.name if record is not None else None,
            visibility=record.visibility if record is not None else EVERYTHING,
        )
        with reading_as(who):
            await self.app(scope, receive, send)


def interface_of(scope: Scope) -> str:
    """Which interface a request came through: MCP, the web page, or REST — `cli` when the command line says so."""
    path = scope.get("path", "")
    if path.startswith("/mcp"):
        return "mcp"
    if path.startswith(("/api/", "/metrics")):
        sent = dict(scope.get("headers") or []).get(b"x-memcastle-client", b"http").decode("latin-1")
        return sent if sent in ("cli", "http", "web") else "http"
    return "web"


def token_of_scope(scope: Scope) -> TokenRecord | None:
    record = (scope.get("state") or {}).get(TOKEN_STATE)
    return record if isinstance(record, TokenRecord) else None


def _cookie(header: str, name: str) -> str | None:
    jar = http.cookies.SimpleCookie()
    try:
        jar.load(header)
    except http.cookies.CookieError:
        return None
    found = jar.get(name)
    return found.value if found is not None and found.value else None
