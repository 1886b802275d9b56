"""Find the daemon of a palace through the registry and talk to it over HTTP.

The client is the standard library's `http.client`: a command line that makes one or two JSON calls to a local
daemon should not import an HTTP stack at every start (see docs/adr/0014-a-light-command-line.md).
"""

from __future__ import annotations

import json as jsonlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from memcastle.config import Settings
from memcastle.errors import DaemonNotRunning, MemCastleError, from_answer
from memcastle.runtime.daemons import find_daemon, state_dir

if TYPE_CHECKING:
    import http.client


class DaemonClient:
    """HTTP calls to the palace's running daemon; error answers become `MemCastleError`s again."""

    def __init__(self, settings: Settings, *, timeout: float = 60.0) -> None:
        entry, why = find_daemon(state_dir(), settings.palace)
        if entry is None:
            raise DaemonNotRunning(
                why or "no daemon", help="start one with: memcastle daemon start (or memcastle serve in the foreground)"
            )
        self.address = entry.address
        self.timeout = timeout
        self.headers = {
            "X-MemCastle-Client": "cli",
            "X-MemCastle-Mode": settings.mode,
            "Accept": "application/json",
        }
        if settings.auth.token:
            self.headers["Authorization"] = f"Bearer {settings.auth.token}"
        parts = urlsplit(entry.address)
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port
        self._base = parts.path.rstrip("/")

    def _connection(self) -> http.client.HTTPConnection:
        import http.client

        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def call(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None) -> Any:
        pairs = [(k, _param(item)) for k, v in (params or {}).items() for item in _items(v)]
        query = urlencode(pairs)
        target = self._base + "/api" + path + (f"?{query}" if query else "")
        headers = dict(self.headers)
        body = None
        if json is not None:
            body = jsonlib.dumps(json).encode("utf-8")
            headers["Content-Type"] = "application/json"
        import http.client

        # One connection per call: a request is never sent twice on a connection the daemon closed meanwhile.
        connection = self._connection()
        try:
            connection.request(method, target, body=body, headers=headers)
            response = connection.getresponse()
            status, reason, raw = response.status, response.reason, response.read()
        except (OSError, http.client.HTTPException) as exc:  # timeouts and refusals are OSErrors
            raise DaemonNotRunning(
                f"the daemon at {self.address} did not answer: {exc or type(exc).__name__}",
                help="is it still starting, or did it stop? try: memcastle status",
            ) from None
        finally:
            connection.close()
        text = raw.decode("utf-8", errors="replace")
        if status >= 400:
            raise _error_from(status, reason, text)
        return jsonlib.loads(text)

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, json=body if body is not None else {})


def _items(value: Any) -> list[Any]:
    """A parameter's values: none for None, one each for a list (repeated as `k=a&k=b`)."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _error_from(status: int, reason: str, text: str) -> MemCastleError:
    """The daemon's error answer as the error it raised (`memcastle.errors.from_answer`)."""
    try:
        body = jsonlib.loads(text)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"error": text or reason}
    return from_answer(status, body)
