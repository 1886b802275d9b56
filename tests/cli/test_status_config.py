"""What an operator asks a daemon left running: status's process and schema, the effective configuration (the same
from the API and the CLI, secrets masked), the log's level and format, and shell completion."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from daemon_use import ENTRY
from waiting import CEILING

from memcastle.app import build
from memcastle.runtime.daemons import find_daemon
from memcastle.store.migrate import load_migrations

TOKEN = "t" * 40
CONFIG = """
[embeddings]
url = "http://reader:hunter2-password@127.0.0.1:9/v1"

[jobs]
workers = 3
"""


def test_status_names_the_process_and_the_schema(daemon: Any) -> None:
    served = daemon(extra_env={"MEMCASTLE_MODE": "read_only"})  # registered under this process's pid
    done = served.cli("status")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    process = status["daemon"]
    assert (process["pid"], process["address"]) == (served.pid, served.address)
    assert process["mode"] == "read_only" and process["auth"] is False
    assert process["started_at"] == served.entry.started_at and process["uptime_seconds"] >= 0
    assert process["logging"] == {"level": "info", "format": "text"}
    latest = load_migrations("sqlite")[-1].version
    assert status["schema"] == {"version": latest, "latest": latest, "pending_migrations": []}

    shown = served.cli("--json", "status")  # the terminal lines come from the same fields
    assert json.loads(shown.stdout)["daemon"]["pid"] == served.pid


def test_a_palace_behind_the_code_shows_its_pending_migrations(settings: Any) -> None:
    palace = build(settings)
    try:
        newest = load_migrations("sqlite")[-1]
        with palace.store._write() as tx:  # a palace last opened by the release before the newest migration
            tx.run("DELETE FROM schema_migration WHERE version = ?", (newest.version,))
        schema = palace.services.status.status().schema
        assert schema is not None
        assert (schema.version, schema.latest) == (newest.version - 1, newest.version)
        assert schema.pending == (f"{newest.version:04d}_{newest.name}",)
    finally:
        palace.stop()


def test_the_api_and_the_cli_show_the_same_configuration_with_secrets_masked(daemon: Any, xdg_home: Any) -> None:
    config = xdg_home.config_file  # the file both the daemon and the CLI read
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(CONFIG, encoding="utf-8")
    served = daemon(extra_env={"MEMCASTLE_AUTH_TOKEN": TOKEN, "MEMCASTLE_LOGGING_LEVEL": "warning"})
    with served.http() as http:
        api = http.get("/api/config").json()
    local = json.loads(served.cli("config", "show").stdout)
    remote = json.loads(served.cli("config", "show", "--daemon").stdout)
    assert api == remote
    # This command resolves what the daemon did but for the flags `serve` itself was given (`--port 0`).
    assert [r for r in local["settings"] if r["key"] != "server.port"] == [
        r for r in api["settings"] if r["key"] != "server.port"
    ]
    assert local["config_file"] == api["config_file"] == str(config)
    values = {row["key"]: (row["value"], row["origin"]) for row in api["settings"]}
    assert values["jobs.workers"] == (3, "file " + str(config))
    assert values["logging.level"] == ("warning", "env MEMCASTLE_LOGGING_LEVEL")
    assert values["auth.token"][0] == "********"
    assert values["embeddings.url"][0] == "http://reader:********@127.0.0.1:9/v1"
    text = json.dumps(api)
    assert TOKEN not in text and "hunter2" not in text


def test_a_json_log_is_one_object_per_line(daemon_process: Any) -> None:
    served = daemon_process(extra_env={"MEMCASTLE_LOGGING_FORMAT": "json", "MEMCASTLE_LOGGING_LEVEL": "debug"})
    with served.http() as http:
        assert http.get("/api/status").json()["daemon"]["logging"] == {"level": "debug", "format": "json"}
        http.post("/api/shutdown", json={})
    assert served.wait_exit() == 0
    records = [json.loads(line) for line in served.log().splitlines() if line.strip()]
    assert records and {"time", "level", "logger", "message"} <= set(records[0])
    assert any(r["message"] == "MemCastle stopped" for r in records)
    assert {r["level"] for r in records} <= {"debug", "info", "warning", "error", "critical"}


def test_verbose_flags_reach_a_background_daemon(xdg_home: Any, tmp_path: Path, cli_runner: Any) -> None:
    palace = tmp_path / "verbose-palace"
    env = xdg_home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none"})
    started = cli_runner(["--palace", str(palace), "-vv", "daemon", "start", "--port", "0"], env=env)
    try:
        assert started.returncode == 0, started.stderr
        status = json.loads(cli_runner(["--palace", str(palace), "status"], env=env).stdout)
        assert status["daemon"]["logging"]["level"] == "debug"
    finally:
        entry, _ = find_daemon(xdg_home.state_dir, palace)
        if entry is not None:
            os.kill(entry.pid, signal.SIGKILL)


def test_completion_scripts_complete_for_real(xdg_home: Any, cli_runner: Any) -> None:
    env = xdg_home.env()
    for shell in ("bash", "zsh", "fish"):
        done = cli_runner(["completions", shell], env=env)
        assert done.returncode == 0 and "_MEMCASTLE_COMPLETE" in done.stdout, done.stderr
    # What the bash script asks the program when a user types `memcastle dae<TAB>`.
    asked = subprocess.run(
        [*ENTRY],
        env={**env, "_MEMCASTLE_COMPLETE": "bash_complete", "COMP_WORDS": "memcastle dae", "COMP_CWORD": "1"},
        capture_output=True,
        text=True,
        timeout=CEILING,
    )
    assert "plain,daemon" in asked.stdout.splitlines(), asked.stdout + asked.stderr
    unknown = cli_runner(["completions", "powershell"], env=env)
    assert unknown.returncode == 2 and "powershell" in unknown.stderr
