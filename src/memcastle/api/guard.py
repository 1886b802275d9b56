"""Browser-origin defence on every route (REST and MCP alike), as ASGI middleware.

A web page the user visits can make the browser send requests to 127.0.0.1, and after DNS rebinding it can even read
the answers. Three checks stop it, before anything else reads the request:

- `Host` must name this machine's loopback (any `127.x` address, `localhost`, `::1`) or a configured host: a
  rebound name (`evil.example.com`) is refused.
- `Origin`, when present, must be this daemon's own origin exactly — the scheme, host and port the request came to:
  a foreign page's request is refused, and so is a page served by any other program on this machine (another port
  of 127.0.0.1 is another origin, though cookies and "same-site" do not tell them apart). Clients that are not
  browsers send no `Origin`, and are unaffected.
- A request that may change state (POST, DELETE) on `/api` must declare a JSON body: a
  browser can send `text/plain` or a form across origins without asking first, but never `application/json`. A
  DELETE without any body is let through: a browser never sends a DELETE across origins without a preflight, which
  gets no CORS answer.

No CORS headers are ever sent, so no other origin may read an answer either.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from memcastle.api.asgi import HttpMiddleware

# The methods the routes change state with. Others (PUT, TRACE, a made-up verb) reach no route and are a 405; a
# browser cannot send them across origins without a preflight, which gets no CORS answer.
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_NAMES = frozenset({"localhost"})


def split_host(value: str) -> tuple[str, str | None]:
    """`name[:port]` or `[v6][:port]` → (name, port)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else None
    if value.count(":") == 1:
        name, port = value.split(":")
        return name, port
    return value, None


def is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostPolicy:
    """Which `Host` values (and so which origins) this daemon answers: loopback, plus the configured ones.

    A configured entry is `name` or `name:*` (any port) or `name:port` (that port only)."""

    def __init__(self, allowed: Sequence[str]) -> None:
        self._any_port: set[str] = set()
        self._exact: set[tuple[str, str]] = set()
        for entry in allowed:
            name, port = split_host(entry)
            if port is None or port == "*":
                self._any_port.add(name)
            else:
                self._exact.add((name, port))

    def allows(self, host: str) -> bool:
        name, port = split_host(host)
        if not name:
            return False
        return is_loopback(name) or name in self._any_port or (name, port or "") in self._exact

    def allows_origin(self, origin: str, *, scheme: str | None = None, host: str | None = None) -> bool:
        """Whether a browser `Origin` may talk to this daemon: on an answered host, and — when the request's own
        scheme and `Host` are known — exactly the origin the request was sent to (scheme, host and port)."""
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            return False
        if not self.allows(parts.netloc):
            return False
        if scheme is None or host is None:
            return True
        return _origin_of(parts.scheme, parts.netloc) == _origin_of(scheme, host)


_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def _origin_of(scheme: str, netloc: str) -> tuple[str, str, str]:
    """(scheme, host, port) with the scheme's default port filled in, as browsers compare origins."""
    scheme = {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme.lower())
    name, port = split_host(netloc)
    return scheme, name, port or _DEFAULT_PORTS.get(scheme, "")


class BrowserGuard(HttpMiddleware):
    """Refuse rebinding `Host`s (403 `forbidden_host`), foreign `Origin`s (403 `forbidden_origin`) and state-changing
    `/api` requests that do not declare JSON (415 `unsupported_media_type`)."""

    def __init__(self, app: ASGIApp, *, policy: HostPolicy, routed: Callable[[str, str], bool] | None = None) -> None:
        super().__init__(app)
        self.policy = policy
        # Whether a route takes (method, path): a method no route takes goes on to its 405, not to a 415.
        self.routed = routed

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {key.lower(): value.decode("latin-1") for key, value in scope.get("headers") or []}
        host = headers.get(b"host")
        origin = headers.get(b"origin")
        if host is not None and not self.policy.allows(host):
            await _refuse(
                send,
                403,
                f"this daemon does not answer for host {host!r}",
                "forbidden_host",
                "only loopback hosts are answered; list another in server.allowed_hosts",
            )
            return
        if origin is not None and not self.policy.allows_origin(origin, scheme=scope.get("scheme"), host=host):
            await _refuse(
                send,
                403,
                f"requests from origin {origin!r} are refused",
                "forbidden_origin",
                "the daemon answers browsers only from its own origin (the same scheme, host and port)",
            )
            return
        method = scope.get("method", "GET").upper()
        path = scope.get("path", "")
        if method in STATE_CHANGING and path.startswith("/api/") and (self.routed is None or self.routed(method, path)):
            media = headers.get(b"content-type", "").split(";")[0].strip().lower()
            # A DELETE with no body needs no type: no browser sends one across origins without a preflight.
            bodiless = (
                method == "DELETE"
                and headers.get(b"content-length", "0").strip() == "0"
                and (b"transfer-encoding" not in headers)
            )
            if media != "application/json" and not bodiless:
                await _refuse(
                    send,
                    415,
                    "requests that change state must send a JSON body "
                    f"(Content-Type: application/json), not {media or 'nothing'!r}",
                    "unsupported_media_type",
                    "send the body as JSON; {} when there is nothing to say",
                )
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str, code: str, help: str) -> None:
    from memcastle.api.errors import error_body  # FastAPI's: not imported before the app is (`api.front`)

    body = json.dumps(error_body(message, code, help)).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
