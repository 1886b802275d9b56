"""The daemon as a real subprocess: registry, stale entries, shutdown, signals, and kill -9 in the middle of a job."""

from __future__ import annotations

import json
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from waiting import CEILING

from memcastle import __version__
from memcastle.model import JobStatus, NewDrawer
from memcastle.runtime.daemons import find_daemon, registry_file
from memcastle.store.sqlite import DB_FILE, SQLiteStore

Poll = Callable[..., Any]
NOTES = 300


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    return int(finished.stdout)


def write_stale_entry(state_dir: Path, palace: Path) -> Path:
    path = registry_file(state_dir, palace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "pid": dead_pid(),
                "address": "http://127.0.0.1:9",
                "version": "0.0.0",
                "palace": str(palace),
                "started_at": "2024-01-01T00:00:00.000000Z",
            }
        )
    )
    return path


def fill_palace(palace: Path, count: int) -> list[str]:
    """Notes written straight through the store before any daemon serves the palace."""
    store = SQLiteStore(palace)
    try:
        return [store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"note {i}")).id for i in range(count)]
    finally:
        store.close()


def job_row(palace: Path, job_id: str) -> dict[str, Any]:
    """A job as stored, read without a daemon (and without running migrations)."""
    with sqlite3.connect(palace / DB_FILE, timeout=30) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM job WHERE id = ?", (job_id,)).fetchone())
    for key in ("progress", "checkpoint", "result"):
        row[key] = json.loads(row[key]) if row[key] else None
    return row


def seq_of(palace: Path, drawer_id: str) -> int:
    with sqlite3.connect(palace / DB_FILE, timeout=30) as conn:
        return int(conn.execute("SELECT seq FROM drawer WHERE id = ?", (drawer_id,)).fetchone()[0])


def tamper(palace: Path, drawer_id: str) -> None:
    with sqlite3.connect(palace / DB_FILE, timeout=30) as conn:
        conn.execute("UPDATE drawer SET content = content || ' (tampered)' WHERE id = ?", (drawer_id,))


def start_slow_verify(http: httpx.Client, poll: Poll, *, until: int) -> dict[str, Any]:
    job = http.post("/api/verify", json={"batch": 5, "pace_ms": 30}).json()["job"]

    def progressed() -> dict[str, Any] | None:
        current = http.get(f"/api/jobs/{job['id']}").json()
        return current if current["progress"]["current"] >= until else None

    return poll(progressed, timeout=20, interval=0.005, what="verify progress")  # type: ignore[no-any-return]


# --- registry -------------------------------------------------------------------------------------


def test_registry_file_records_pid_address_and_version(daemon_process: Callable[..., Any]) -> None:
    served = daemon_process()
    entry = json.loads(served.registry_path.read_text())
    assert entry["pid"] == served.pid
    assert entry["version"] == __version__
    assert entry["palace"] == str(served.palace.resolve())
    assert entry["address"].startswith("http://127.0.0.1:") and not entry["address"].endswith(":8420")
    assert served.registry_path.parent == served.home.state_dir / "run"
    answer = httpx.get(entry["address"] + "/api/status", trust_env=False).json()
    assert answer["palace"] == str(served.palace)
    assert answer["version"] == __version__


def test_stale_registry_file_is_detected_and_removed_by_find_daemon(xdg_home: Any, tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    path = write_stale_entry(xdg_home.state_dir, palace)
    entry, why = find_daemon(xdg_home.state_dir, palace)
    assert entry is None
    assert why is not None and "stale" in why
    assert not path.exists()
    assert find_daemon(xdg_home.state_dir, palace)[1] == f"no daemon registered for palace {palace}"


def test_unreadable_registry_file_is_removed(xdg_home: Any, tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    path = registry_file(xdg_home.state_dir, palace)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    entry, why = find_daemon(xdg_home.state_dir, palace)
    assert entry is None and why is not None and "unreadable" in why
    assert not path.exists()


def test_status_with_a_stale_registry_exits_3_and_removes_it(
    xdg_home: Any, tmp_path: Path, cli_runner: Callable[..., Any]
) -> None:
    palace = tmp_path / "palace"
    path = write_stale_entry(xdg_home.state_dir, palace)
    done = cli_runner(["--palace", str(palace), "status"], env=xdg_home.env(), cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "stale" in done.stderr and "not running" in done.stderr
    assert not path.exists()


def test_a_second_daemon_for_the_same_palace_is_refused(
    daemon_process: Callable[..., Any], cli_runner: Callable[..., Any]
) -> None:
    served = daemon_process()
    again = cli_runner(["--palace", str(served.palace), "serve", "--port", "0"], env=served.env, timeout=CEILING)
    assert again.returncode == 1
    assert str(served.pid) in again.stderr and "already served" in again.stderr
    assert json.loads(served.registry_path.read_text())["pid"] == served.pid, "the live entry is kept"
    assert httpx.get(served.address + "/api/health", trust_env=False).status_code == 200


def test_a_palace_that_fails_to_migrate_stops_the_daemon(daemon_process: Callable[..., Any], tmp_path: Path) -> None:
    palace = tmp_path / "future"
    fill_palace(palace, 1)
    with sqlite3.connect(palace / DB_FILE) as conn:
        conn.execute("INSERT INTO schema_migration(version, name, applied_at) VALUES (999, 'future', 'x')")
    refused = daemon_process(palace, wait=False)
    assert refused.wait_exit(30) == 1
    assert "999" in refused.log() and "newer" in refused.log()
    assert not refused.registry_path.exists()


# --- stopping -------------------------------------------------------------------------------------


def test_shutdown_endpoint_exits_the_process_and_removes_the_registry(daemon_process: Callable[..., Any]) -> None:
    served = daemon_process()
    answer = httpx.post(served.address + "/api/shutdown", json={}, trust_env=False)
    assert answer.status_code == 202 and answer.json()["ok"] is True
    assert served.wait_exit(20) == 0
    assert not served.registry_path.exists()
    assert "MemCastle stopped" in served.log()


def test_sigint_drains_the_running_job_and_exits(
    daemon_process: Callable[..., Any], tmp_path: Path, poll: Poll
) -> None:
    fill_palace(tmp_path / "palace", 200)
    served = daemon_process(tmp_path / "palace")
    with served.http() as http:
        job = start_slow_verify(http, poll, until=5)
    served.proc.send_signal(signal.SIGINT)
    served.wait_exit(20)
    assert not served.registry_path.exists()
    stopped = job_row(served.palace, job["id"])
    assert stopped["status"] == "queued", "a drained job goes back to the queue"
    assert stopped["lease_owner"] is None and stopped["recovery_attempts"] == 0
    assert stopped["checkpoint"]["checked"] >= 5


def test_sigterm_drains_the_running_job_and_removes_the_registry(
    daemon_process: Callable[..., Any], tmp_path: Path, poll: Poll
) -> None:
    fill_palace(tmp_path / "palace", 200)
    served = daemon_process(tmp_path / "palace")
    with served.http() as http:
        job = start_slow_verify(http, poll, until=5)
    served.proc.send_signal(signal.SIGTERM)
    served.wait_exit(20)
    assert "MemCastle stopped" in served.log()
    assert not served.registry_path.exists()
    stopped = job_row(served.palace, job["id"])
    assert stopped["status"] == "queued"
    assert stopped["lease_owner"] is None and stopped["recovery_attempts"] == 0
    assert stopped["checkpoint"]["checked"] >= 5


# --- kill -9 in the middle of a job ---------------------------------------------------------------


def test_kill_9_during_a_job_then_restart_resumes_it_from_its_checkpoint(
    daemon_process: Callable[..., Any], tmp_path: Path, poll: Poll
) -> None:
    palace = tmp_path / "palace"
    ids = fill_palace(palace, NOTES)
    first = daemon_process(palace)
    with first.http() as http:
        job = start_slow_verify(http, poll, until=25)
    first.kill()
    assert first.registry_path.exists(), "a killed daemon cannot clean up after itself"

    crashed = job_row(palace, job["id"])
    assert crashed["status"] == "running" and crashed["lease_owner"] is not None
    at_kill = crashed["checkpoint"]
    assert 25 <= at_kill["checked"] < NOTES

    # Corrupt one drawer the first run already checked and one it had not reached: only a run that resumes from
    # the checkpoint reports exactly the second.
    behind, ahead = ids[0], ids[-1]
    assert seq_of(palace, behind) <= seq_of(palace, at_kill["after"]) < seq_of(palace, ahead)
    tamper(palace, behind)
    tamper(palace, ahead)

    second = daemon_process(palace)
    assert second.pid != first.pid
    seen: list[int] = []
    with second.http() as http:

        def finished() -> dict[str, Any] | None:
            current = http.get(f"/api/jobs/{job['id']}").json()
            seen.append(current["progress"]["current"])
            return current if current["status"] in ("completed", "failed", "cancelled") else None

        done = poll(finished, timeout=30, interval=0.005, what="the resumed job")
    assert done["status"] == JobStatus.COMPLETED.value
    assert done["recovery_attempts"] == 1
    assert done["attempt"] == 2
    assert done["result"]["checked"] == NOTES, "each drawer counted once across the crash"
    assert done["result"]["mismatches"] == [ahead], "the resumed run started after the checkpoint"
    assert min(seen) >= at_kill["checked"], "progress never went back to the start"


# --- latency --------------------------------------------------------------------------------------


def test_keep_alive_requests_are_answered_without_a_nagle_stall(daemon: Callable[..., Any]) -> None:
    served = daemon()  # the listener's socket options are the subject, not the process
    with served.http() as http:
        for _ in range(3):
            http.get("/api/health")
        timings = []
        for _ in range(15):
            started = time.perf_counter()
            assert http.get("/api/health").status_code == 200
            timings.append(time.perf_counter() - started)
    assert statistics.median(timings) < 0.03, f"median {statistics.median(timings) * 1000:.1f} ms"


# --- a clean stop under load ----------------------------------------------------------------------


def test_shutdown_mid_sweep_drains_requeues_and_exits_0(
    daemon_process: Callable[..., Any], tmp_path: Path, poll: Poll
) -> None:
    """The builtin model embedding and the heuristic extractor reading, on both workers, when `memcastle shutdown`
    comes: the daemon drains, requeues, waits for the unit of work in flight, then closes the store and exits 0."""
    palace = tmp_path / "palace"
    store = SQLiteStore(palace)
    try:
        # Enough for the extract sweep (~200 drawers/s) to outlast the embed sweep's first small batch.
        for i in range(2500):
            words = " ".join(f"Team{i % 7} works on Project{i % 11} and uses Tool{i % 5}." for _ in range(12))
            store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"note {i}: {words}"))
    finally:
        store.close()
    served = daemon_process(
        palace,
        extra_env={
            "MEMCASTLE_EMBEDDINGS_PROVIDER": "builtin",
            "MEMCASTLE_EMBEDDINGS_BATCH_SIZE": "4",
            # One vector a note: with its twelve sentences each, no note would be complete (the progress counted)
            # before the extract sweep ends.
            "MEMCASTLE_EMBEDDINGS_SENTENCE_CHARS": "0",
            "MEMCASTLE_JOBS_DRAIN_SECONDS": "1",
        },
    )
    with served.http() as http:

        def both_sweeps_running() -> bool:
            running = {j["kind"]: j for j in http.get("/api/jobs", params={"status": "running"}).json()["jobs"]}
            embed = running.get("embed")
            return bool(embed and embed["progress"]["current"] > 0 and "extract" in running)

        poll(both_sweeps_running, timeout=CEILING, interval=0.05, what="the embed and extract sweeps to be running")
    stopped = served.cli("shutdown")
    assert stopped.returncode == 0, stopped.stderr
    assert served.wait_exit() == 0
    log = served.log()
    for symptom in ("Traceback", "ProgrammingError", "Cannot operate on a closed database", "terminate called"):
        assert symptom not in log, log[-4000:]
    assert "MemCastle stopped" in log
    with sqlite3.connect(palace / DB_FILE, timeout=30) as conn:
        statuses = dict(conn.execute("SELECT kind, status FROM job WHERE kind IN ('embed', 'extract')").fetchall())
    assert statuses.get("embed") in ("queued", "completed"), statuses
    assert "running" not in statuses.values(), statuses


SERVE_WITHOUT_MCP = (
    "import sys\n"
    "from memcastle.app import build\n"
    "from memcastle.config import load_settings\n"
    "from memcastle.daemon import http_app\n"
    "settings = load_settings(flags={'palace': sys.argv[1], 'embeddings.provider': 'none'}, env={})\n"
    "palace = build(settings)\n"
    "http_app(palace)\n"
    "palace.stop()\n"
    "print(' '.join(m for m in ('mcp.server', 'mcp_types') if m in sys.modules))\n"
)


SERVE_LAZILY = (
    "import sys, httpx\n"
    "from memcastle.app import build\n"
    "from memcastle.config import load_settings\n"
    "from memcastle.daemon import ServedPalace\n"
    "settings = load_settings(flags={'palace': sys.argv[1], 'embeddings.provider': 'none'}, env={})\n"
    "palace = build(settings)\n"
    "palace.start()\n"
    "served = ServedPalace(palace).start()\n"
    "url = served.address\n"
    "with httpx.Client(base_url=url, trust_env=False, timeout=60) as http:\n"
    "    health = http.get('/api/health')\n"
    "    print(health.status_code, health.json(), 'fastapi' in sys.modules)\n"
    "    foreign = http.get('/api/health', headers={'Host': 'evil.example.com'})\n"
    "    print(foreign.status_code, foreign.json()['code'])\n"
    "    status = http.get('/api/status')\n"
    "    print(status.status_code, status.json()['drawers'], 'fastapi' in sys.modules)\n"
    "served.stop()\n"
    "palace.stop()\n"
)


def test_the_daemon_answers_its_health_check_before_building_its_application(tmp_path: Path) -> None:
    """FastAPI and the routes are built on the first request that needs them: a launcher's health check does not
    wait for them; a request from a foreign Host waits and is refused by the application as ever."""
    done = subprocess.run(
        [sys.executable, "-c", SERVE_LAZILY, str(tmp_path / "palace")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["200 {'ok': True} False", "403 forbidden_host", "200 0 True"]


def test_the_daemon_is_built_without_loading_the_mcp_sdk(tmp_path: Path) -> None:
    """The MCP SDK (half a second of imports) loads at the first /mcp request, not at start-up: the HTTP app and
    every route module are built without it."""
    done = subprocess.run(
        [sys.executable, "-c", SERVE_WITHOUT_MCP, str(tmp_path / "palace")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"loaded at start-up: {done.stdout.strip()}"
