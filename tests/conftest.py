"""Fixtures shared by the whole suite: isolated XDG homes, settings, a built palace, an in-process client, and
real daemon subprocesses on ephemeral ports."""

from __future__ import annotations

import collections
import os
import subprocess
import sys

# The suite keeps the bytecode of what it imports (pytest's rewritten test modules, the package), even where
# PYTHONDONTWRITEBYTECODE is set: compiling 30,000 lines of tests again in every worker doubled the time to collect.
# The caches are `__pycache__` folders git ignores.
sys.dont_write_bytecode = False
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from addresses import LOCAL
from clocks import DistinctClock
from fastapi.testclient import TestClient
from live_daemon import STARTS_VARIABLE, Daemon, XdgHome, launch_daemon, make_home, run_cli
from postgres_support import PostgresServer, session_server
from served import Served, cli_in_process, serve_palace
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import Settings, load_settings
from memcastle.daemon import http_app


@pytest.fixture(scope="session", autouse=True)
def home_is_the_test_area(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Mining reads only inside `mining.roots`, by default the home directory: the suite's home is its own temp area,
    so what the tests mine lies inside it, and the real ~/.ssh is never within reach of a test."""
    base = tmp_path_factory.getbasetemp()
    previous = os.environ.get("HOME")
    os.environ["HOME"] = str(base)
    yield base
    if previous is None:
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = previous


@pytest.fixture(autouse=True)
def xdg_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> XdgHome:
    """No test may read or write the real user's MemCastle config, data or state."""
    home = make_home(tmp_path / "xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home.config))
    monkeypatch.setenv("XDG_DATA_HOME", str(home.data))
    monkeypatch.setenv("XDG_STATE_HOME", str(home.state))
    for variable in [v for v in os.environ if v.startswith("MEMCASTLE_")]:
        monkeypatch.delenv(variable)
    return home


@pytest.fixture
def palace_dir(tmp_path: Path) -> Path:
    return tmp_path / "palace"


@pytest.fixture
def settings(xdg_home: XdgHome, palace_dir: Path) -> Settings:
    """Settings for a palace in a temp dir; no environment, no config file.

    Embeddings are off: the foundation tests are about storage, jobs and interfaces, and must not wait on a model
    (tests/search covers the providers)."""
    return load_settings(
        flags={"palace": str(palace_dir), "jobs.drain_seconds": 3.0, "embeddings.provider": "none"},
        env={},
        config_file=None,
    )


@pytest.fixture
def palace(settings: Settings) -> Iterator[Palace]:
    """A built and started palace (real SQLite, real worker pool); drained and closed at teardown."""
    built = build(settings, now=DistinctClock())
    built.start()
    try:
        yield built
    finally:
        built.stop()


@pytest.fixture
def client(palace: Palace) -> Iterator[TestClient]:
    """The daemon's real HTTP surface, in-process."""
    with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as http:
        yield http


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (with pgvector) and a migrated template database; see
    tests/postgres_support.py. Skipped when none can be had — failed instead under `CI=true`."""
    yield from session_server()


# --- polling --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def poll() -> Callable[..., Any]:
    """`poll(predicate, timeout=…, what=…)`: wait until the predicate is truthy."""
    return wait_until


# --- the real console entry -----------------------------------------------------------------------


# Commands whose subject is a process of their own: a daemon (`serve`, `daemon …`), the stdio bridge, a copy to
# another store. Any other command runs through the console entry's `run()` in the test process.
OWN_PROCESS = frozenset({"serve", "daemon", "mcp", "migrate"})


@pytest.fixture(scope="session")
def cli_runner() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`cli_runner(args, env=…, input=…, cwd=…)` runs the real console entry: in this process
    (`served.cli_in_process`), or as a subprocess for the commands of `OWN_PROCESS`."""

    def run(args: Sequence[str], **options: Any) -> subprocess.CompletedProcess[str]:
        if OWN_PROCESS & set(args) or "timeout" in options:
            return run_cli(args, **options)
        return cli_in_process(args, **options)

    return run


# --- real daemons -----------------------------------------------------------------------------------


@pytest.fixture
def daemon(tmp_path: Path, xdg_home: XdgHome) -> Iterator[Callable[..., Served]]:
    """Factory: `daemon(palace=None, extra_env=None)` builds a palace in this test's XDG home and serves it on a real
    loopback socket from a thread (tests/served.py): a daemon's HTTP surface, registry entry and CLI reach, without a
    process start. Every one is stopped at teardown. A test about the process itself uses `daemon_process`."""
    started: list[Served] = []

    def start(palace: Path | None = None, *, extra_env: Mapping[str, str] | None = None) -> Served:
        served = serve_palace(palace or tmp_path / "palace", xdg_home, extra_env=extra_env)
        started.append(served)
        return served

    yield start
    for served in started:
        served.kill()


@pytest.fixture
def daemon_process(tmp_path: Path, xdg_home: XdgHome) -> Iterator[Callable[..., Daemon]]:
    """Factory: `daemon_process(palace=None, extra_env=None, wait=True)` starts a real `memcastle serve` subprocess
    in this test's XDG home — for tests whose subject is the process (signals, drain, the registry, crashes).

    Every daemon started is killed at teardown."""
    started: list[Daemon] = []

    def start(
        palace: Path | None = None,
        *,
        extra_env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        wait: bool = True,
    ) -> Daemon:
        process = launch_daemon(
            palace or tmp_path / "palace", xdg_home, extra_env=extra_env, extra_args=extra_args, wait=wait
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture(scope="module")
def module_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One served palace shared by a module's tests (each test keeps to its own wing so they stay independent)."""
    root = tmp_path_factory.mktemp("module-daemon")
    served = serve_palace(root / "palace", make_home(root / "xdg"))
    yield served
    served.kill()


@pytest.fixture(scope="module")
def module_daemon_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One `memcastle serve` subprocess shared by a module's tests whose subject is the process."""
    root = tmp_path_factory.mktemp("module-daemon")
    home = make_home(root / "xdg")
    process = launch_daemon(root / "palace", home)
    yield process
    process.kill()


# --- how many daemon processes a run starts -------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    """The controller names a file every worker's `live_daemon.count_start` appends to (workers inherit it)."""
    if hasattr(config, "workerinput"):
        return
    import tempfile

    handle, path = tempfile.mkstemp(prefix="memcastle-daemon-starts-")
    os.close(handle)
    os.environ[STARTS_VARIABLE] = path
    # One cache for the run: the builtin model's int8 copy (search/quantized.py) is made once, not once a worker.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="memcastle-test-cache-")
    # Every daemon, CLI and bridge process a test starts imports the package: compiled once here, each start reads
    # the bytecode instead of compiling ~250 modules again (where PYTHONDONTWRITEBYTECODE is set, none is written).
    import compileall

    compileall.compile_dir(Path(__file__).parents[1] / "src" / "memcastle", quiet=1, workers=0)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    path = os.environ.get(STARTS_VARIABLE)
    if hasattr(config, "workerinput") or not path or not os.path.exists(path):
        return
    import shutil

    with open(path, encoding="utf-8") as starts:
        started = [line.strip() for line in starts]
    os.unlink(path)
    shutil.rmtree(os.environ.get("XDG_CACHE_HOME", ""), ignore_errors=True)
    terminalreporter.write_line(f"subprocess daemon starts: {len(started)} (tests whose subject is the daemon process)")
    for name, times in sorted(collections.Counter(started).items()):
        terminalreporter.write_line(f"  {times} × {name}")
