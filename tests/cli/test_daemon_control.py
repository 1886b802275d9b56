"""`memcastle daemon start|stop|restart|status|install|uninstall` against real daemons in a temp XDG home."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_use import ENTRY
from waiting import CEILING, wait_until

from memcastle.runtime.daemons import find_daemon, is_alive, registry_file
from memcastle.runtime.launcher import is_healthy
from memcastle.runtime.service_unit import parse_systemd_command


@pytest.fixture
def home_env(xdg_home: Any) -> dict[str, str]:
    return xdg_home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none"})


@pytest.fixture
def palace(tmp_path: Path, xdg_home: Any) -> Iterator[Path]:
    """A palace whose daemon, whatever started it, is killed at teardown."""
    path = tmp_path / "bg-palace"
    yield path
    entry, _ = find_daemon(xdg_home.state_dir, path)
    if entry is not None:
        os.kill(entry.pid, signal.SIGKILL)


def daemon_cli(run: Callable[..., Any], palace: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    done = run(["--palace", str(palace), "daemon", *args], env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else {"stderr": done.stderr})


def test_start_status_restart_stop(cli_runner: Any, palace: Path, home_env: dict[str, str], xdg_home: Any) -> None:
    code, status = daemon_cli(cli_runner, palace, home_env, "status")
    assert code == 3 and status["running"] is False and "no daemon" in status["why"]

    code, started = daemon_cli(cli_runner, palace, home_env, "start", "--port", "0")
    assert code == 0 and started["started"] is True, started
    # It answers the moment start returns, and its log is where start said.
    assert httpx.get(started["address"] + "/api/health", timeout=10).status_code == 200
    log = Path(started["log"])
    assert log.exists() and "serving" in log.read_text()

    code, again = daemon_cli(cli_runner, palace, home_env, "start", "--port", "0")
    assert (code, again["started"], again["pid"]) == (0, False, started["pid"])

    code, status = daemon_cli(cli_runner, palace, home_env, "status")
    assert code == 0 and status["healthy"] is True
    assert (status["pid"], status["address"], status["log"]) == (started["pid"], started["address"], started["log"])

    code, restarted = daemon_cli(cli_runner, palace, home_env, "restart")
    assert code == 0, restarted
    assert restarted["stopped"]["pid"] == started["pid"] and restarted["pid"] != started["pid"]
    assert restarted["address"] == started["address"]  # the port a `--port 0` start picked is kept
    assert not is_alive(started["pid"])

    code, stopped = daemon_cli(cli_runner, palace, home_env, "stop")
    assert code == 0 and stopped["stopped"] is True and stopped["pid"] == restarted["pid"]
    assert not is_alive(restarted["pid"])
    assert not registry_file(xdg_home.state_dir, palace).exists()
    assert "MemCastle stopped" in log.read_text()  # it drained and said so, not killed

    code, stopped = daemon_cli(cli_runner, palace, home_env, "stop")
    assert code == 0 and stopped["stopped"] is False and "no daemon" in stopped["message"]


def test_a_killed_daemons_registry_entry_is_detected_and_cleaned(
    cli_runner: Any, palace: Path, home_env: dict[str, str], xdg_home: Any
) -> None:
    code, started = daemon_cli(cli_runner, palace, home_env, "start", "--port", "0")
    assert code == 0, started
    os.kill(started["pid"], signal.SIGKILL)
    wait_until(lambda: not is_alive(started["pid"]), what="the killed daemon to be gone")
    assert registry_file(xdg_home.state_dir, palace).exists()  # it had no chance to remove it

    code, status = daemon_cli(cli_runner, palace, home_env, "status")
    assert code == 3 and status["running"] is False
    assert f"stale registry file named pid {started['pid']}" in status["why"] and "removed" in status["why"]
    assert not registry_file(xdg_home.state_dir, palace).exists()

    code, restarted = daemon_cli(cli_runner, palace, home_env, "start", "--port", "0")
    assert code == 0 and restarted["started"] is True and restarted["pid"] != started["pid"]


def test_a_daemon_that_cannot_start_is_reported_with_its_log(
    cli_runner: Any, palace: Path, home_env: dict[str, str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, answer = daemon_cli(cli_runner, palace, home_env, "start", "--port", str(port))
    assert code == 3, answer
    assert "the daemon exited with code 1" in answer["stderr"] and "its log is" in answer["stderr"]
    assert "in use" in answer["stderr"]  # the log's last lines say why


def test_install_writes_a_unit_systemd_accepts_and_its_command_serves(
    cli_runner: Any, palace: Path, home_env: dict[str, str], xdg_home: Any, tmp_path: Path
) -> None:
    code, installed = daemon_cli(cli_runner, palace, home_env, "install", "--no-enable")
    assert code == 0 and installed["enabled"] is False, installed
    unit = Path(installed["path"])
    assert unit.parent == xdg_home.config / "systemd" / "user" and unit.name == installed["service"]
    text = unit.read_text()
    assert "WantedBy=default.target" in text and "Restart=on-failure" in text

    if shutil.which("systemd-analyze"):
        runtime = tmp_path / "runtime"
        runtime.mkdir(mode=0o700)
        verified = subprocess.run(
            ["systemd-analyze", "--user", "verify", str(unit)],
            env={**home_env, "XDG_RUNTIME_DIR": str(runtime)},
            capture_output=True,
            text=True,
            timeout=CEILING,
        )
        assert verified.returncode == 0, verified.stderr

    # The unit's own command line and environment, run as systemd would: a daemon of this palace answers.
    lines = text.splitlines()
    command = parse_systemd_command(next(line for line in lines if line.startswith("ExecStart="))[len("ExecStart=") :])
    assert command == installed["command"] and str(palace.resolve()) in command
    environment = dict(
        parse_systemd_command(line[len("Environment=") :])[0].split("=", 1)
        for line in lines
        if line.startswith("Environment=")
    )
    assert environment["XDG_STATE_HOME"] == str(xdg_home.state)  # the registry is where the CLI looks
    assert environment["PATH"] == home_env["PATH"]  # the programs connectors run (git, opencode) are found
    bare = {k: v for k, v in home_env.items() if not k.startswith("XDG_")}
    service = subprocess.Popen(
        [*command, "--port", "0"], env={**bare, **environment}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        # Registered before it listens: it is up once its entry is there and it answers.
        entry = wait_until(
            lambda: (found := find_daemon(xdg_home.state_dir, palace)[0]) and is_healthy(found.address) and found,
            what="the service's daemon to answer",
        )
        assert entry.pid == service.pid
        code, status = daemon_cli(cli_runner, palace, home_env, "status")
        assert code == 0 and status["service"]["installed"] is True and status["pid"] == service.pid
        code, stopped = daemon_cli(cli_runner, palace, home_env, "stop")
        assert code == 0 and stopped["pid"] == service.pid
        assert service.wait(timeout=CEILING) == 0  # a clean exit: Restart=on-failure leaves it stopped
    finally:
        service.kill()

    code, removed = daemon_cli(cli_runner, palace, home_env, "uninstall")
    assert code == 0 and removed["removed"] is True and not unit.exists()
    code, again = daemon_cli(cli_runner, palace, home_env, "uninstall")
    assert code == 1 and "no service is installed" in again["stderr"]


def test_the_launchd_agent_runs_the_same_command(cli_runner: Any, palace: Path, home_env: dict[str, str]) -> None:
    done = cli_runner(["--palace", str(palace), "daemon", "install", "--platform", "launchd", "--print"], env=home_env)
    assert done.returncode == 0, done.stderr
    agent = plistlib.loads(done.stdout.encode())
    assert agent["Label"].startswith("dev.memcastle.") and agent["RunAtLoad"] is True
    arguments = agent["ProgramArguments"]
    assert arguments[:2] == [*ENTRY[:2]] and arguments[-1] == "serve" and str(palace.resolve()) in arguments
    assert agent["StandardErrorPath"].endswith(".log")
