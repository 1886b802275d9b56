"""Find the daemon of a palace through the registry and talk to it over HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcastle.config import Settings
from memcastle.errors import (
    AccessDenied,
    Conflict,
    DaemonNotRunning,
    InvalidRequest,
    MemCastleError,
    NotFound,
    ProviderError,
)
from memcastle.runtime.daemons import find_daemon, state_dir

if TYPE_CHECKING:
    import httpx


class DaemonClient:
    """HTTP calls to the palace's running daemon; error answers become `MemCastleError`s again."""

    def __init__(self, settings: Settings, *, timeout: float = 60.0) -> None:
        entry, why = find_daemon(state_dir(), settings.palace)
        if entry is None:
            raise DaemonNotRunning(why or "no daemon", help="start one with: memcastle serve")
        self.address = entry.address
        headers = {"X-MemCastle-Client": "cli", "X-MemCastle-Mode": settings["mode"]}
        if settings["auth.token"]:
            headers["Authorization"] = f"Bearer {settings['auth.token']}"
        import httpx  # not at import time: `memcastle --help` and the commands that need no daemon stay light

        # The daemon serves plain HTTP: no TLS context to build (loading the CA bundle costs more than the request).
        self._http = httpx.Client(
            base_url=entry.address,
            headers=headers,
            timeout=timeout,
            trust_env=False,
            verify=not entry.address.startswith("http://"),
        )

    def call(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None) -> Any:
        import httpx

        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, "/api" + path, json=json, params=clean)
        except httpx.TransportError as exc:
            raise DaemonNotRunning(
                f"the daemon at {self.address} did not answer: {exc}",
                help="is it still starting, or did it stop? try: memcastle status",
            ) from None
        if response.status_code >= 400:
            raise _error_from(response)
        return response.json()

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, json=body if body is not None else {})


def _error_from(response: httpx.Response) -> MemCastleError:
    try:
        body = response.json()
        message, code, help_text = body.get("error", response.text), body.get("code", ""), body.get("help", "")
    except ValueError:
        message, code, help_text = response.text or response.reason_phrase, "", ""
    status = response.status_code
    error: MemCastleError
    if status == 400:
        error = InvalidRequest(message, field=body.get("field") if isinstance(body, dict) else None)
    elif status == 404:
        error = NotFound(message)
    elif status == 409:
        error = Conflict(message)
    elif status in (401, 403):
        error = AccessDenied(message, unauthenticated=status == 401)
    elif status == 502:
        error = ProviderError(message)
    else:
        error = MemCastleError(message)
    if help_text:
        error.help = help_text
    if code:
        error.code = code
    return error
