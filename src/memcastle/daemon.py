"""`memcastle serve`: run one palace's daemon in the foreground on one listener."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn

from memcastle import __version__
from memcastle.api.front import DeferredApp
from memcastle.api.guard import HostPolicy
from memcastle.app import Palace, build
from memcastle.config import Settings
from memcastle.errors import ConfigError, Conflict, InvalidRequest, MemCastleError
from memcastle.runtime import logs
from memcastle.runtime.daemons import find_daemon, remove_entry, state_dir, write_entry
from memcastle.runtime.spool import set_aside, spooled
from memcastle.runtime.tokens import MIN_SECRET_CHARS, TokenStore

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("memcastle")


class _Server(uvicorn.Server):
    """uvicorn re-raises a captured SIGTERM once it stops, which would kill the process before jobs are drained;
    the daemon handles the signals itself instead."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def request_exit(self, *_: object) -> None:
        """Stop serving; the caller of `run` then drains the jobs.

        Installed as the SIGINT/SIGTERM handler as a bound method on purpose: sse-starlette finds the server through
        the handler's `__self__` and closes open MCP event streams at once instead of holding shutdown for
        `timeout_graceful_shutdown`."""
        self.should_exit = True


def check_exposure(settings: Settings) -> None:
    """Refuse to serve auth without a token, or a non-loopback address without auth unless explicitly allowed."""
    secret = settings.auth.token
    if settings.auth.enabled and secret and len(secret) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"a configured token must be at least {MIN_SECRET_CHARS} characters, not {len(secret)}",
            key="auth.token",
            help='generate one with: python3 -c "import secrets; print(secrets.token_urlsafe(32))"',
        )
    if settings.auth.enabled and not secret and not TokenStore(settings.palace).records():
        raise ConfigError(
            "auth.enabled is true but the palace has no token, so nobody could connect",
            key="auth.enabled",
            help="create one first: memcastle auth token create NAME (or set MEMCASTLE_AUTH_TOKEN for the daemon)",
        )
    host = settings.server.host
    loopback = host in ("localhost", "::1") or host.startswith("127.")
    if not loopback and not settings.auth.enabled and not settings.auth.allow_remote:
        raise ConfigError(
            f"binding {host} would expose the palace to the network without authentication",
            key="server.host",
            help="enable auth (auth.enabled = true, then memcastle auth token create NAME), or set "
            "auth.allow_remote = true if another layer protects it",
        )


def bind(host: str, port: int) -> tuple[socket.socket, str]:
    """A listening socket on `host`:`port` (0: any free port) and the address it answers at."""
    # IPPROTO_TCP (not 0) so asyncio sets TCP_NODELAY on accepted sockets: no Nagle stall on keep-alive replies.
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    bound_port = listener.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    return listener, f"http://{shown_host}:{bound_port}"


class ServedPalace:
    """An already built palace's HTTP surface on a real socket: bound at construction, served by `run` (the
    foreground daemon) or from a thread by `start` … `stop` (an embedding program, the test suite). Building,
    starting and stopping the palace stay the caller's."""

    def __init__(
        self,
        palace: Palace,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        bound: tuple[socket.socket, str] | None = None,
    ) -> None:
        self.palace = palace
        self.listener, self.address = bound or bind(host, port)
        settings = palace.settings
        # Served through the front (`api.front`): the health check answers before FastAPI and the routes are built.
        app = DeferredApp(
            lambda: prepared_app(palace, request_shutdown=self.request_exit),
            HostPolicy([*settings.server.allowed_hosts, *settings.mcp.allowed_hosts]),
            warm=palace.services.search.warm,
        )
        # ws="none": the daemon serves no WebSocket (its live events are server-sent), so uvicorn need not import a
        # WebSocket library at start.
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5, ws="none")
        self.server = _Server(config)
        self._thread: threading.Thread | None = None

    def request_exit(self, *_: object) -> None:
        """Stop serving (SIGINT, SIGTERM, `POST /api/shutdown`): `run` returns, a thread ends."""
        self.server.request_exit()

    def run(self) -> None:
        """Serve in this thread until asked to exit."""
        self.server.run(sockets=[self.listener])

    def start(self, timeout: float = 60.0) -> ServedPalace:
        """Serve from a thread of its own; returns once the socket answers."""
        self._thread = threading.Thread(target=self.run, name="memcastle-served", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the palace could not be served at {self.address}")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop serving and wait for the thread (open event streams are ended first: no wait on them)."""
        self.palace.services.events.close()
        self.request_exit()
        if self._thread is not None:
            self._thread.join(timeout)
        self.listener.close()


def serve(settings: Settings) -> None:
    """Build the palace, bind, register, serve until SIGINT/SIGTERM or POST /api/shutdown, then drain."""
    logs.configure(settings.logging.level, settings.logging.format)
    states = state_dir()
    running, _ = find_daemon(states, settings.palace)
    if running is not None:
        raise Conflict(
            f"palace {settings.palace} is already served by pid {running.pid} at {running.address}",
            help="stop it first (memcastle shutdown) or choose another --palace",
        )
    check_exposure(settings)
    bound = bind(settings.server.host, settings.server.port)  # a port in use stops the start before any build
    palace = build(settings)
    served = ServedPalace(palace, bound=bound)
    address = served.address
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, served.server.request_exit)
    palace.start()
    entry = write_entry(states, settings.palace, address, __version__)
    palace.services.runtime.serving(pid=os.getpid(), address=address, started_at=entry.started_at)
    file_spooled_checkpoints(palace, states)
    log.info("MemCastle %s serving palace %s at %s (pid registered)", __version__, settings.palace, address)
    if settings.logging.format == "text":  # a JSON log holds JSON lines only; the log line above says it
        print(f"MemCastle {__version__} serving {settings.palace} at {address}", file=sys.stderr, flush=True)
    try:
        served.run()
    finally:
        requeued = palace.stop()
        if requeued:
            log.info("requeued %d unfinished job(s): %s", len(requeued), ", ".join(requeued))
        remove_entry(states, settings.palace)
        log.info("MemCastle stopped")


def file_spooled_checkpoints(palace: Palace, states: Path) -> None:
    """Queue the emergency checkpoints written while no daemon answered (`runtime.spool`), then delete their files;
    one that cannot be filed is set aside with the reason in the log, never dropped."""
    for path, payload in spooled(states, palace.settings.palace):
        try:
            if not isinstance(payload, dict):
                raise InvalidRequest("the file is not a checkpoint's JSON body")
            job = palace.services.queue_checkpoint(
                payload.get("items") or [], payload.get("agent"), str(payload.get("requested_by") or "cli")
            )
        except MemCastleError as exc:
            log.warning("spooled checkpoint %s set aside as %s: %s", path.name, set_aside(path).name, exc.message)
            continue
        path.unlink(missing_ok=True)
        log.info("spooled checkpoint %s queued as job %s", path.name, job.id)


def prepared_app(palace: Palace, *, request_shutdown: Callable[[], None] | None = None) -> FastAPI:
    """`http_app` with every route prepared (`api.app.prepare_routes`): what the daemon's front builds in a thread."""
    from memcastle.api.application import prepare_routes

    return prepare_routes(http_app(palace, request_shutdown=request_shutdown))


def http_app(palace: Palace, *, request_shutdown: Callable[[], None] | None = None) -> FastAPI:
    """The HTTP application of a built palace, configured from its settings."""
    from memcastle.api.application import McpSurface, create_app

    settings = palace.settings
    return create_app(
        palace.services,
        max_body_bytes=int(settings.server.max_body_bytes),
        allowed_hosts=[*settings.server.allowed_hosts, *settings.mcp.allowed_hosts],
        tokens=TokenStore(settings.palace, secret=settings.auth.token or None) if settings.auth.enabled else None,
        request_shutdown=request_shutdown,
        mode=settings.mode,
        web=settings.web.enabled,
        mcp=McpSurface(settings.mcp.tools, settings.mcp.max_chars),
    )
