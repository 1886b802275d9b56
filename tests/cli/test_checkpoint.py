"""`memcastle checkpoint` and its emergency path: a durable job the daemon answers for at once, or — no daemon —
a file the next daemon files; killed daemons and bad files lose nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from waiting import wait_until

from memcastle.runtime.spool import spool, spool_dir


def checkpoints(served: Any, wing: str) -> list[dict[str, Any]]:
    with served.http() as http:
        page = http.get("/api/drawers", params={"wing": wing, "room": "checkpoints", "limit": 200}).json()
    return list(page["drawers"])


def test_an_emergency_checkpoint_is_a_durable_job_checked_first(daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        refused = http.post("/api/checkpoint", json={"items": [{"content": "  "}], "emergency": True})
        assert refused.status_code == 400 and refused.json()["field"] == "items[0].content"
        assert [j for j in http.get("/api/jobs").json()["jobs"] if j["kind"] == "checkpoint"] == []

    done = served.cli("checkpoint", "chose", "the", "west", "gate", "--wing", "cp", "--agent", "ada", "--emergency")
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)["job"]
    assert job["kind"] == "checkpoint" and job["priority"] >= 50

    def filed() -> list[dict[str, Any]]:
        return [d for d in checkpoints(served, "cp") if d["content"] == "chose the west gate"]

    found = wait_until(filed, what="the emergency checkpoint")
    assert "checkpoint" in found[0]["tags"] and found[0]["source"]["agent"] == "ada"

    plain = served.cli("checkpoint", "--wing", "cp", input="state: draining\n")
    assert plain.returncode == 0 and json.loads(plain.stdout)["drawers"][0]["content"] == "state: draining\n"


def test_a_checkpoint_queued_before_a_kill_is_written_once(daemon: Any, tmp_path: Path) -> None:
    palace = tmp_path / "kill-palace"
    served = daemon(palace)
    done = served.cli("checkpoint", "before", "the", "crash", "--wing", "cp", "--emergency")
    assert done.returncode == 0, done.stderr
    served.kill()  # whether or not the job ran, it is committed
    again = daemon(palace)
    found = wait_until(lambda: checkpoints(again, "cp"), what="the checkpoint after a restart")
    assert [d["content"] for d in found] == ["before the crash"]


def test_with_no_daemon_the_checkpoint_waits_on_disk_for_the_next_one(
    daemon_process: Any, xdg_home: Any, tmp_path: Path, cli_runner: Any
) -> None:
    palace = tmp_path / "spool-palace"
    env = xdg_home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none"})
    done = cli_runner(["--palace", str(palace), "checkpoint", "last", "words", "--wing", "cp", "--emergency"], env=env)
    assert done.returncode == 0, done.stderr
    kept = Path(json.loads(done.stdout)["spooled"])
    assert kept.exists() and kept.parent == spool_dir(xdg_home.state_dir, palace)
    broken = spool(xdg_home.state_dir, palace, {"items": [{"content": ""}]})  # invalid: set aside, not lost

    served = daemon_process(palace)
    found = wait_until(lambda: checkpoints(served, "cp"), what="the spooled checkpoint")
    assert [d["content"] for d in found] == ["last words"]
    assert not kept.exists() and not broken.exists()
    assert broken.with_suffix(".rejected").exists()
    assert "set aside" in served.log()
