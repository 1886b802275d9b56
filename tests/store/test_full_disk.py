"""A palace on a disk that fills up: a clear 507, paused jobs that resume once there is room, a refused start.

The palace lives on a small tmpfs mounted for the test (root is needed to mount; `.ci/run` runs as root). Outside CI
a machine where mounting is not allowed skips it with the reason; under `CI=true` that fails instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_use import count_drawers, jobs, notes_folder, serve_once
from disks import small_tmpfs
from waiting import CEILING, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", 64 << 20) as disk:
        yield disk


def fill(disk: Path) -> Path:
    """Write until the disk has no room left (into a file made beforehand: on a full tmpfs even an empty new file
    may not fit)."""
    filler = disk / "filler"
    chunk = b"\0" * (64 * 1024)
    try:
        out = filler.open("ab", buffering=0)  # unbuffered: closing it has nothing left to write on a full disk
    except OSError:
        return filler  # not even an empty file fits: the disk is full already (a palace and its log filled it)
    try:
        while True:
            out.write(chunk)
    except OSError:
        pass
    finally:
        try:
            out.close()
        except OSError:
            pass
    return filler


NOTES = 4000


def test_a_full_disk_is_said_plainly_and_work_resumes_when_room_returns(
    small_disk: Path, xdg_home: Any, daemon_process: Any
) -> None:
    palace = small_disk / "palace"
    (small_disk / "filler").touch()
    # Resumed by itself once the disk has 4 MiB free (the default asks for 1 GiB, more than this tmpfs holds).
    served = daemon_process(palace, extra_env={"MEMCASTLE_JOBS_RESUME_FREE_BYTES": str(4 << 20)})
    try:
        # Enough notes that the mine is still filing when the disk fills (it files ~500 a second).
        folder = notes_folder(served.home.root, NOTES)
        with served.http(timeout=CEILING) as http:
            kept = http.post("/api/notes", json={"content": "written before the disk filled", "wing": "full"})
            assert kept.status_code == 201
            job_id = http.post("/api/mine", json={"connector": "notes", "locator": str(folder)}).json()["job"]["id"]
            wait_until(lambda: jobs(http)[job_id]["progress"]["current"] > 0, what="the mine to start filing")
            filler = fill(small_disk)

            # What room is left inside the files themselves (the write-ahead log's old frames) takes a few more.
            acknowledged = []
            for i in range(2000):
                refused = http.post("/api/notes", json={"content": f"note {i} " + "x" * 4000, "wing": "full"})
                if refused.status_code != 201:
                    break
                acknowledged.append(refused.json()["drawer"]["id"])
            assert refused.status_code == 507, refused.text
            body = refused.json()
            assert body["code"] == "storage_full" and "the palace's disk is full" in body["error"]
            assert str(palace) in body["error"] and "bytes free" in body["error"]
            assert http.get("/api/health").json() == {"ok": True}

            def paused() -> bool:
                job = jobs(http)[job_id]
                assert job["status"] != "failed", job
                return job["status"] == "paused" and "disk is full" in (job["error"] or "")

            wait_until(paused, what="the mine to pause")
            warnings = http.get("/api/status").json()["warnings"]
            assert any("disk has only" in w for w in warnings) and any("paused because" in w for w in warnings)

            filler.unlink()  # room again
            wait_until(lambda: jobs(http)[job_id]["status"] == "completed", what="the mine to resume and finish")
            assert count_drawers(http, "storage-notes") == NOTES
            for drawer_id in [kept.json()["drawer"]["id"], *acknowledged]:
                assert http.get(f"/api/drawers/{drawer_id}").status_code == 200
    finally:
        served.kill()

    filler = fill(small_disk)
    try:
        done = serve_once(palace, xdg_home)
        assert "the palace's disk is full" in done.stderr and str(palace) in done.stderr
    finally:
        filler.unlink(missing_ok=True)
    restarted = daemon_process(palace)  # and with room again, it starts with everything in place
    try:
        with restarted.http(timeout=CEILING) as http:
            assert count_drawers(http, "storage-notes") == NOTES
    finally:
        restarted.kill()
