"""When the palace's storage fails, every answer says so, nothing acknowledged is lost, and no worker dies.

Writes are made to fail for real in a running daemon: its file-size limit (`RLIMIT_FSIZE`, set on the process from
outside) is lowered below the size of the palace's files, so SQLite's next write past it fails — a short write that
SQLite reports as a full disk, or `EFBIG`, which it reports as an I/O error. Raising the limit again is space coming
back. The damaged- and missing-file cases damage the files of a stopped palace and start a daemon on them.
"""

from __future__ import annotations

import resource
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from daemon_use import count_drawers, jobs, notes_folder, serve_once
from waiting import CEILING, wait_until

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.errors import MemCastleError, PalaceDamaged, http_status
from memcastle.model import NewDrawer, Source
from memcastle.store.sqlite import DB_FILE, SQLiteStore

FAILURE_CODES = {"storage_full", "storage_error"}


def limit_file_size(pid: int, most: int | None) -> None:
    """Set the daemon's file-size limit (None: none), leaving its hard limit where it was."""
    _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY if most is None else most, hard))


NOTES = 1500


def test_failing_writes_are_named_nothing_acknowledged_is_lost_and_jobs_resume(daemon_process: Any) -> None:
    served = daemon_process()
    # Enough notes that the mine is still filing when the writes start failing (it files ~500 a second).
    folder = notes_folder(served.home.root, NOTES)
    acknowledged = []
    with served.http(timeout=CEILING) as http:
        for i in range(20):
            answer = http.post("/api/notes", json={"content": f"kept note {i}", "wing": "storage"})
            assert answer.status_code == 201
            acknowledged.append(answer.json()["drawer"]["id"])
        job_id = http.post("/api/mine", json={"connector": "notes", "locator": str(folder)}).json()["job"]["id"]
        wait_until(lambda: jobs(http)[job_id]["progress"]["current"] > 0, what="the mine to start filing")

        limit_file_size(served.proc.pid, 32 * 1024)  # below every palace file: no write past it succeeds
        try:
            refused = [http.post("/api/notes", json={"content": f"refused {i}", "wing": "storage"}) for i in range(5)]
            for answer in refused:
                assert answer.status_code in (503, 507), answer.text
                body = answer.json()
                assert body["code"] in FAILURE_CODES and str(served.palace) in body["error"], body
                assert "this is a bug" not in body["error"]
            assert http.get("/api/health").json() == {"ok": True}

            def stopped_by_storage() -> bool:
                job = jobs(http)[job_id]
                assert job["status"] != "failed", job  # a storage failure pauses; it is not the job's fault
                return job["status"] == "paused" and "storage failed" in (job["error"] or "")

            wait_until(stopped_by_storage, what="the mine to pause on the failing writes")
            status = http.get("/api/status").json()
            assert any("paused because the palace's storage failed" in w for w in status["warnings"]), status
        finally:
            limit_file_size(served.proc.pid, None)  # the space comes back

        wait_until(lambda: jobs(http)[job_id]["status"] == "completed", what="the mine to resume and finish")
        done = jobs(http)[job_id]
        assert done["error"] is None
        for drawer_id in acknowledged:
            assert http.get(f"/api/drawers/{drawer_id}").status_code == 200
        # Every note of the folder exactly once: no duplicate from the unit tried again, none missing.
        assert done["result"]["documents"] >= NOTES and count_drawers(http, "storage-notes") == NOTES
        # The workers are all alive: more work still runs.
        again = http.post("/api/notes", json={"content": "written after the failure", "wing": "storage"})
        assert again.status_code == 201
    assert served.proc.poll() is None


def _stopped(tmp_path: Path) -> Path:
    palace = tmp_path / "palace"
    store = SQLiteStore(palace)
    store.close()
    return palace


def refusal(palace: Path) -> str:
    """What a start on this palace says — its error and hint, as `memcastle serve` prints them — met by `build` in
    this process (`serve_once` shows the process exits 1 with them and no traceback)."""
    settings = load_settings(flags={"palace": str(palace), "embeddings.provider": "none"}, env={}, config_file=None)
    with pytest.raises(MemCastleError) as refused:
        build(settings)
    return f"{refused.value.message}\n{refused.value.help or ''}"


@pytest.mark.parametrize("damage", ["deleted", "emptied"])
def test_a_palace_in_use_whose_file_is_gone_refuses_to_start(tmp_path: Path, xdg_home: Any, damage: str) -> None:
    """A missing or empty database used to become a new, empty palace: every drawer gone from view, writes taken."""
    palace = _stopped(tmp_path)
    database = palace / DB_FILE
    if damage == "deleted":
        database.unlink()
        said = serve_once(palace, xdg_home).stderr  # the process exits 1, saying so, with no traceback
    else:
        database.write_bytes(b"")
        said = refusal(palace)  # the same refusal, met by the start in this process
    assert str(database) in said and ("missing" in said or "empty" in said)
    assert "import" in said  # what to do
    assert not database.exists() or database.stat().st_size == 0, "nothing new was created in its place"


def test_a_new_palace_folder_still_starts_empty(tmp_path: Path) -> None:
    palace = tmp_path / "brand-new"
    SQLiteStore(palace).close()
    assert (palace / DB_FILE).stat().st_size > 0 and (palace / "palace.json").is_file()


def test_a_palace_made_before_the_marker_is_recognised_by_its_other_files(tmp_path: Path, xdg_home: Any) -> None:
    palace = _stopped(tmp_path)
    (palace / "palace.json").unlink()
    (palace / "vectors").mkdir()
    (palace / "vectors" / "all-MiniLM-L6-v2.usearch").write_bytes(b"graph")
    (palace / DB_FILE).unlink()
    assert "vectors" in refusal(palace)


def test_page_damage_is_reported_as_a_damaged_palace_with_what_to_do(tmp_path: Path, xdg_home: Any) -> None:
    palace = _stopped(tmp_path)
    database = palace / DB_FILE
    data = bytearray(database.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    # Every page after the first (the header and the schema's root stay whole): b-tree pages become noise.
    for at in range(page, len(data)):
        data[at] = (at * 131 + 7) % 256
    database.write_bytes(bytes(data))
    done = serve_once(palace, xdg_home)
    assert "the palace file is damaged" in done.stderr and str(database) in done.stderr, done.stderr
    assert "integrity_check" in done.stderr and "export" in done.stderr


def test_a_damaged_header_is_not_a_palace_database(tmp_path: Path, xdg_home: Any) -> None:
    palace = _stopped(tmp_path)
    database = palace / DB_FILE
    data = bytearray(database.read_bytes())
    data[:16] = b"not sqlite at al"
    database.write_bytes(bytes(data))
    assert "is not a MemCastle palace database" in refusal(palace)


def test_damage_met_while_serving_is_named_where_it_is_met(tmp_path: Path) -> None:
    """A drawer page that breaks under a palace already open: the read that meets it says the file is damaged."""
    palace = tmp_path / "palace"
    store = SQLiteStore(palace)
    drawer = store.drawers.add_drawer(
        NewDrawer(wing="w", room="r", content="the drawer on a page that breaks " * 40, source=Source(kind="manual"))
    )
    store.close()
    with sqlite3.connect(palace / DB_FILE) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [row[0] for row in conn.execute("SELECT pageno FROM dbstat WHERE name = 'drawer'")]
    data = bytearray((palace / DB_FILE).read_bytes())
    for page in pages:
        data[(page - 1) * size : page * size] = bytes((i * 37 + 11) % 256 for i in range(size))
    (palace / DB_FILE).write_bytes(bytes(data))
    store = SQLiteStore(palace)  # the schema and the migrations' pages are whole: it opens
    try:
        with pytest.raises(PalaceDamaged) as damaged:
            store.drawers.get_drawer(drawer.id)
        assert str(palace / DB_FILE) in damaged.value.message and "export" in damaged.value.help
        assert http_status(damaged.value) == 503
    finally:
        store.close()
