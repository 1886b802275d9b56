"""Miners managed from the interfaces: REST and the CLI list (trigger, state, last run and result, next run), add,
run, enable, disable and remove; API miners persist in the palace; on a name clash the config file wins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_watch import open_palace

from memcastle.errors import Conflict
from memcastle.model.requests import MinerDefinition


def test_the_config_file_wins_a_name_clash(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    palace = open_palace(tmp_path)
    try:
        palace.services.miners.define(MinerDefinition(name="notes", connector="notes", locator=str(notes), every="1h"))
    finally:
        palace.stop()
    config = f'[[miners]]\nname = "notes"\nconnector = "notes"\nlocator = "{notes}"\nwing = "from-config"\n'
    palace = open_palace(tmp_path, config)
    try:
        listed = palace.services.miners.list_miners()
        assert [(m.name, m.spec.origin, m.shadowed) for m in listed] == [
            ("notes", "config", False),
            ("notes", "api", True),
        ]
        assert listed[0].spec.wing == "from-config" and listed[0].next_run is None, "the config's, unscheduled"
        try:
            palace.services.miners.define(MinerDefinition(name="notes", connector="notes", locator=str(notes)))
        except Conflict as refused:
            assert "config file" in refused.message
        else:
            raise AssertionError("a config miner's name was taken")
    finally:
        palace.stop()


def test_rest_and_cli_manage_miners(daemon: Any, tmp_path: Path) -> None:
    served = daemon()
    vault = served.home.root / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nThe armoury holds forty spears.\n")
    added = served.cli("--json", "miner", "add", "vault", "notes", str(vault), "--wing", "managed", "--every", "1h")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["miner"]["every"] == 3600
    with served.http() as http:
        bad = http.post("/api/miners", json={"name": "x", "connector": "notes", "locator": str(vault), "every": "2s"})
        assert bad.status_code == 400 and bad.json()["field"] == "every"
        outside = http.post("/api/miners", json={"name": "y", "connector": "notes", "locator": "/etc"})
        assert outside.status_code == 403 and "mining.roots" in outside.json()["error"] + outside.json()["help"]
    # A schedule that never ran is due at once: its run comes without any command.
    ran = served.cli("--json", "miner", "list")
    listed = json.loads(ran.stdout)["miners"]
    assert [m["name"] for m in listed] == ["vault"] and listed[0]["triggers"] == ["schedule"]
    from waiting import wait_until

    def last_result() -> Any:
        miner = json.loads(served.cli("--json", "miner", "list").stdout)["miners"][0]
        run = miner["last_run"]
        return run if run and run["status"] == "completed" else None

    run = wait_until(last_result, what="the scheduled run")
    assert run["trigger"] == "schedule" and run["result"]["created"] == 1
    assert served.cli("--json", "miner", "disable", "vault").returncode == 0
    miner = json.loads(served.cli("--json", "miner", "list").stdout)["miners"][0]
    assert miner["state"] == "disabled" and miner["next_run"] is None
    by_hand = served.cli("--json", "miner", "run", "vault", "--wait")
    assert by_hand.returncode == 0, by_hand.stderr
    assert served.cli("--json", "miner", "enable", "vault").returncode == 0
    shown = served.cli("--json", "miner", "show", "vault")
    assert shown.returncode == 0 and json.loads(shown.stdout)["miner"]["name"] == "vault"
    missing = served.cli("miner", "show", "nope")
    assert missing.returncode == 1 and "no miner named 'nope'" in missing.stderr
    from memcastle.cli.commands.mining import _last_run, _triggers

    miner = json.loads(served.cli("--json", "miner", "list").stdout)["miners"][0]
    assert _triggers(miner) == "every 1h" and "completed (request) · 0 new" in _last_run(miner["last_run"])
    assert served.cli("--json", "miner", "remove", "vault").returncode == 0
    assert json.loads(served.cli("--json", "miner", "list").stdout)["miners"] == []
