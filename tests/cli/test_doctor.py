"""`memcastle doctor` on real homes broken in the ways support requests are about; it reports and changes nothing."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path
from typing import Any

from memcastle.integrations import endpoint_of, render
from memcastle.runtime.daemons import registry_file


def doctor(cli_runner: Any, env: dict[str, str], *args: str) -> tuple[int, dict[str, dict[str, str]]]:
    done = cli_runner([*args, "doctor"], env=env)
    assert "Traceback" not in done.stderr, done.stderr
    data = json.loads(done.stdout)
    assert data["exit_code"] == done.returncode
    return done.returncode, {f["check"]: f for f in data["findings"]}


def test_a_fresh_machine_is_well_and_nothing_is_created(cli_runner: Any, xdg_home: Any, tmp_path: Path) -> None:
    palace = tmp_path / "not-yet"
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    env = xdg_home.env({"MEMCASTLE_SERVER_PORT": str(port), "MEMCASTLE_EMBEDDINGS_PROVIDER": "none"})
    code, found = doctor(cli_runner, env, "--palace", str(palace))
    assert code == 0, found
    assert found["palace"]["level"] == "info" and "does not exist" in found["palace"]["detail"]
    assert found["daemon"]["detail"] == "not running" and found["daemon"]["fix"] == "memcastle daemon start"
    assert found["port"]["level"] == "ok"
    assert "MemCastle" in found["versions"]["detail"] and "FTS5" in found["versions"]["detail"]
    assert not palace.exists()


def test_findings_name_what_to_do_and_the_exit_code_is_the_worst(
    cli_runner: Any, xdg_home: Any, tmp_path: Path
) -> None:
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / "tokens.json").write_text("{}")
    (palace / "tokens.json").chmod(0o644)
    with sqlite3.connect(palace / "palace.sqlite3") as db:  # a palace written by a newer release
        db.execute("CREATE TABLE schema_migration (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)")
        db.execute("INSERT INTO schema_migration VALUES (999, 'future', 'x')")
    stale = registry_file(xdg_home.state_dir, palace)
    stale.parent.mkdir(parents=True)
    entry = {"pid": 2**22 + 7, "address": "http://127.0.0.1:9", "version": "0", "palace": str(palace), "started_at": ""}
    stale.write_text(json.dumps(entry))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = xdg_home.env(
            {"MEMCASTLE_SERVER_PORT": str(taken.getsockname()[1]), "MEMCASTLE_EMBEDDINGS_PROVIDER": "none"}
        )
        code, found = doctor(cli_runner, env, "--palace", str(palace))
    assert code == 2
    assert found["permissions"]["level"] == "warning" and "chmod 600" in found["permissions"]["fix"]
    assert found["schema"]["level"] == "error" and "999" in found["schema"]["detail"]
    assert found["registry"]["level"] == "warning" and "stale" in found["registry"]["detail"]
    assert found["port"]["level"] == "error" and "server.port" in found["port"]["fix"]
    assert stale.exists()  # reported, not cleaned: doctor changes nothing


def test_a_broken_configuration_is_named_by_file_line_and_key(cli_runner: Any, xdg_home: Any) -> None:
    xdg_home.config_file.parent.mkdir(parents=True, exist_ok=True)
    xdg_home.config_file.write_text('[server]\nport = "eighty"\n')
    code, found = doctor(cli_runner, xdg_home.env())
    assert code == 2
    assert str(xdg_home.config_file) in found["config"]["detail"] or "server.port" in found["config"]["detail"]

    xdg_home.config_file.write_text('[[miners]]\nname = "x"\nconnector = "nowhere"\nlocator = "/tmp"\n')
    code, found = doctor(cli_runner, xdg_home.env())
    assert code == 2 and "unknown connector" in found["configuration"]["detail"]


def test_a_running_daemon_is_seen(daemon: Any) -> None:
    served = daemon()
    done = served.cli("doctor")
    found = {f["check"]: f for f in json.loads(done.stdout)["findings"]}
    assert found["daemon"]["level"] == "ok" and str(served.pid) in found["daemon"]["detail"]
    assert found["schema"]["detail"].endswith("(current)")


def test_an_integration_written_for_another_installation_is_a_warning(
    cli_runner: Any, xdg_home: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    extension = home / ".pi" / "agent" / "extensions" / "memcastle.ts"
    extension.parent.mkdir(parents=True)
    extension.write_text(render("pi", "extension", palace="/an/old/palace"))
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    env = xdg_home.env({"HOME": str(home), "MEMCASTLE_SERVER_PORT": str(port), "MEMCASTLE_EMBEDDINGS_PROVIDER": "none"})
    code, found = doctor(cli_runner, env, "--palace", str(tmp_path / "palace"))
    assert found["integrations"]["level"] == "warning" and code == 1, found
    assert found["integrations"]["fix"] == "memcastle integration install pi"
    # Written for this palace, but for the default port: its tools would look for the daemon where it is not.
    extension.write_text(render("pi", "extension", palace=str(tmp_path / "palace")))
    code, found = doctor(cli_runner, env, "--palace", str(tmp_path / "palace"))
    assert found["integrations"]["level"] == "warning", found
    here = endpoint_of("127.0.0.1", port, auth=False, palace=str(tmp_path / "palace"))
    extension.write_text(render("pi", "extension", palace=str(tmp_path / "palace"), endpoint=here))
    code, found = doctor(cli_runner, env, "--palace", str(tmp_path / "palace"))
    assert found["integrations"] == {**found["integrations"], "level": "ok", "detail": "installed for pi (extension)"}
