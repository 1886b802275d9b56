"""A real daemon for a test: an isolated XDG home, the console entry run as a subprocess, a `memcastle serve --port 0`
started and awaited until it answers. Plain helpers (no fixtures), so any test module may import them; the fixtures
that use them are in conftest.py."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_use import ENTRY
from waiting import CEILING

from memcastle.runtime.daemons import DaemonEntry, find_daemon, registry_file

DAEMON_START_TIMEOUT = CEILING
# The file a run counts its daemon process starts in (one line a start; conftest.py prints the count).
STARTS_VARIABLE = "PYTEST_MEMCASTLE_DAEMON_STARTS"


def count_start() -> None:
    path = os.environ.get(STARTS_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as starts:
            starts.write(os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0] + "\n")


@dataclass(frozen=True)
class XdgHome:
    """The per-test XDG directories every MemCastle lookup is pointed at."""

    root: Path
    config: Path
    data: Path
    state: Path

    @property
    def state_dir(self) -> Path:
        """What `memcastle.config.state_dir()` resolves to under this home."""
        return self.state / "memcastle"

    @property
    def config_file(self) -> Path:
        return self.config / "memcastle" / "config.toml"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """An environment for a child process: this home, no inherited MEMCASTLE_* variables."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCASTLE_", "XDG_"))}
        base.update(
            {
                "XDG_CONFIG_HOME": str(self.config),
                "XDG_DATA_HOME": str(self.data),
                "XDG_STATE_HOME": str(self.state),
                "COLUMNS": "200",
                "PYTHONUNBUFFERED": "1",
            }
        )
        if os.environ.get("XDG_CACHE_HOME"):  # the run's cache: the builtin model's int8 copy is made once a run
            base["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
        base.update(extra or {})
        return base


def make_home(root: Path) -> XdgHome:
    home = XdgHome(root=root, config=root / "config", data=root / "data", state=root / "state")
    for folder in (home.config, home.data, home.state):
        folder.mkdir(parents=True, exist_ok=True)
    return home


def run_cli(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    input: str | None = None,
    cwd: Path | None = None,
    timeout: float = CEILING,
) -> subprocess.CompletedProcess[str]:
    """Run `memcastle ARGS` as a subprocess (stdout is a pipe, so the CLI answers in JSON)."""
    return subprocess.run(
        [*ENTRY, *args], env=dict(env), input=input, capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


def palace_cli(
    daemon: Any,
    args: Sequence[str],
    *,
    input: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    run: Callable[..., subprocess.CompletedProcess[str]] = run_cli,
) -> subprocess.CompletedProcess[str]:
    """`memcastle --palace P ARGS` against a daemon (its `palace`, `env` and `home`), run by `run`."""
    env = {**daemon.env, **(extra_env or {})}
    return run(["--palace", str(daemon.palace), *args], env=env, input=input, cwd=cwd or daemon.home.root)


@dataclass
class Daemon:
    """A `memcastle serve --port 0` subprocess and how to reach it."""

    proc: subprocess.Popen[bytes]
    palace: Path
    home: XdgHome
    log_path: Path
    entry: DaemonEntry | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        assert self.entry is not None
        return self.entry.address

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def registry_path(self) -> Path:
        return registry_file(self.home.state_dir, self.palace)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def http(self, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(base_url=self.address, timeout=timeout, trust_env=False)

    def cli(
        self, *args: str, input: str | None = None, extra_env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`memcastle --palace P ARGS` against this daemon."""
        return palace_cli(self, args, input=input, extra_env=extra_env, cwd=cwd)

    def wait_exit(self, timeout: float = CEILING) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL and reap (so the pid is really gone, not a zombie)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=CEILING)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=CEILING)
            except subprocess.TimeoutExpired:
                self.kill()


def launch_daemon(
    palace: Path,
    home: XdgHome,
    *,
    extra_env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    wait: bool = True,
) -> Daemon:
    """Start `memcastle --palace P serve --port 0`; when `wait`, return once it is registered and healthy.

    Embeddings are off unless `extra_env` turns them on, so no daemon test waits on a model."""
    env = home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none", **(extra_env or {})})
    count_start()
    log_path = home.root / f"daemon-{time.monotonic_ns()}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [*ENTRY, "--palace", str(palace), "serve", "--port", "0", *extra_args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=home.root,
        )
    daemon = Daemon(proc=proc, palace=palace, home=home, log_path=log_path, env=env)
    if wait:
        try:
            await_ready(daemon)
        except BaseException:
            daemon.kill()
            raise
    return daemon


def await_ready(daemon: Daemon, timeout: float = DAEMON_START_TIMEOUT) -> None:
    """Wait for the registry file, then for `/api/health` to answer at the address it names."""
    deadline = time.monotonic() + timeout
    while True:
        if daemon.proc.poll() is not None:
            pytest.fail(f"the daemon exited with {daemon.proc.returncode} before it was ready:\n{daemon.log()}")
        if daemon.registry_path.exists():
            entry, _ = find_daemon(daemon.home.state_dir, daemon.palace)
            if entry is not None and entry.pid == daemon.proc.pid:
                try:
                    answer = httpx.get(entry.address + "/api/health", timeout=2.0, trust_env=False)
                    if answer.status_code == 200 and answer.json() == {"ok": True}:
                        daemon.entry = entry
                        return
                except httpx.TransportError:
                    pass
        if time.monotonic() > deadline:
            daemon.kill()
            pytest.fail(f"the daemon was not ready within {timeout}s:\n{daemon.log()}")
        time.sleep(0.02)
