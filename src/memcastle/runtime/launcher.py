"""Starting and stopping a palace's daemon in the background: `memcastle daemon start|stop|restart|status` and the
MCP bridge's `--start`.

A background daemon is `memcastle serve` in a session of its own, its standard error appended to a log file beside
its registry file (`<key>.log` next to `<key>.json`); start returns once the daemon answers `/api/health`. Stop asks
it to drain (`POST /api/shutdown`, as `memcastle shutdown` does) and waits for the process to be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from memcastle.errors import DaemonNotRunning
from memcastle.runtime.daemons import DaemonEntry, find_daemon, is_alive, registry_file

START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0
# `python -c` rather than `-m memcastle`: the same command line as the `memcastle` script, whatever the current
# directory holds (a `memcastle/` folder there would shadow the package under `-m`).
ENTRY = ("-c", "from memcastle.cli.main import run; run()")
# Daemons this process started: kept so a long-lived starter (the MCP bridge, a test) reaps one that exits instead of
# leaving a zombie, and so dropping the handle of a daemon that is meant to outlive it warns of nothing.
_started: list[subprocess.Popen[bytes]] = []


def log_file(states: Path, palace: Path) -> Path:
    """Where a background daemon of `palace` appends its log."""
    return registry_file(states, palace).with_suffix(".log")


def serve_command(
    palace: Path,
    *,
    config_file: Path | None = None,
    host: str | None = None,
    port: int | None = None,
    verbose: int = 0,
    python: str | None = None,
) -> list[str]:
    """The command line that serves `palace` in the foreground (what a background start and a service run)."""
    return [
        python or sys.executable,
        *ENTRY,
        "--palace",
        str(palace.expanduser().resolve()),
        *(["--config", str(config_file.expanduser().resolve())] if config_file else []),
        *(["-" + "v" * verbose] if verbose else []),
        "serve",
        *(["--host", host] if host else []),
        *(["--port", str(port)] if port is not None else []),
    ]


@dataclass(frozen=True)
class Started:
    """A daemon that answers: `already` when it was running before the start was asked for."""

    entry: DaemonEntry
    log: Path
    already: bool


def start_daemon(
    states: Path,
    palace: Path,
    *,
    config_file: Path | None = None,
    host: str | None = None,
    port: int | None = None,
    timeout: float = START_TIMEOUT,
    verbose: int = 0,
    env: dict[str, str] | None = None,
) -> Started:
    """Start `memcastle serve` for `palace` in the background and wait until it answers `/api/health`; a daemon
    already serving the palace is used as it is. A daemon that exits first, or stays silent past `timeout`, raises
    `DaemonNotRunning` with the last lines of its log."""
    log = log_file(states, palace)
    entry, _ = find_daemon(states, palace)  # a stale entry of a killed daemon is removed here
    if entry is not None:
        return Started(entry, log, already=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = serve_command(palace, config_file=config_file, host=host, port=port, verbose=verbose)
    with log.open("ab") as sink:
        # A session of its own, so the daemon outlives the command (and, for the bridge, never writes to the MCP
        # conversation on standard output).
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            start_new_session=True,
            env=env,
        )
    _started[:] = [*(earlier for earlier in _started if earlier.poll() is None), process]
    deadline = time.monotonic() + timeout
    while True:
        entry, _ = find_daemon(states, palace)
        # Another start may have won the race: any live daemon of this palace will do.
        if entry is not None and is_healthy(entry.address):
            return Started(entry, log, already=entry.pid != process.pid)
        if process.poll() is not None and entry is None:
            raise DaemonNotRunning(
                f"the daemon exited with code {process.returncode}: {' / '.join(log_tail(log, 3))}",
                help=f"its log is {log}",
            )
        if time.monotonic() > deadline:
            raise DaemonNotRunning(f"the daemon did not answer within {timeout:g}s", help=f"its log is {log}")
        time.sleep(0.05)


@dataclass(frozen=True)
class Stopped:
    """What stopping did: the pid that exited, or None when no daemon ran (`why` says so)."""

    pid: int | None
    seconds: float
    address: str | None = None
    why: str | None = None
    forced: bool = False


def stop_daemon(
    states: Path,
    palace: Path,
    ask: Callable[[DaemonEntry], None],
    *,
    timeout: float = STOP_TIMEOUT,
    force: bool = False,
) -> Stopped:
    """Ask the daemon of `palace` to drain and exit (`ask` sends the request) and wait until its process is gone.
    If it is still there after `timeout`, `force` sends SIGTERM (which drains too, but needs no HTTP answer) and
    waits as long again; otherwise `DaemonNotRunning` is not raised but a `TimeoutError` naming the pid."""
    entry, why = find_daemon(states, palace)
    if entry is None:
        return Stopped(None, 0.0, why=why)
    started = time.monotonic()
    try:
        ask(entry)
    except DaemonNotRunning:
        if not force:
            raise
        os.kill(entry.pid, signal.SIGTERM)
    if _wait_gone(entry.pid, timeout):
        return Stopped(entry.pid, time.monotonic() - started, entry.address)
    if not force:
        raise TimeoutError(
            f"the daemon (pid {entry.pid}) is still draining after {timeout:g}s; wait, or stop it with --force"
        )
    os.kill(entry.pid, signal.SIGTERM)
    if _wait_gone(entry.pid, timeout):
        return Stopped(entry.pid, time.monotonic() - started, entry.address, forced=True)
    raise TimeoutError(f"the daemon (pid {entry.pid}) did not exit {2 * timeout:g}s after it was asked to")


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while is_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def is_healthy(address: str, *, timeout: float = 2.0) -> bool:
    """Does the daemon at `address` answer `GET /api/health` with 200? (The standard library's client: a command
    that starts a daemon should not import an HTTP stack for one request.)"""
    import http.client

    parts = urlsplit(address)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        connection.request("GET", parts.path.rstrip("/") + "/api/health")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def log_tail(path: Path, lines: int) -> Sequence[str]:
    """The last `lines` non-empty lines of a log file (none when it cannot be read)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.strip().splitlines() if line.strip()][-lines:]
