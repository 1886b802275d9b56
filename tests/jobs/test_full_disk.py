"""A disk that fills for real: the palace on a small tmpfs, filled by a running mine.

What a user met: the mine paused with `507 storage_full` (right), resumed by itself as soon as a few megabytes were
freed and filled the disk again, and then cancel answered 507 too. Now the paused job stays paused until the disk has
`jobs.resume_free_bytes` free or a person resumes it, and cancel, pause and forget work on the full disk: they spend
the palace's reserve (ADR 0051). Mounting a tmpfs needs root; elsewhere the test is skipped (CI runs as root).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from addresses import LOCAL
from clocks import DistinctClock
from disks import small_tmpfs
from fastapi.testclient import TestClient
from waiting import wait_until

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.jobs.queue import JobQueue
from memcastle.jobs.worker import RECOVERY_BUDGET, PoolShape, WorkerPool
from memcastle.model import Job, JobStatus, NewJob
from memcastle.store.sqlite import SQLiteStore

DISK_BYTES = 16 << 20
RESERVE = 4 << 20  # the default (storage.reserve_bytes)
FILLER = 3 << 20  # freed later: far less than the margin


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", DISK_BYTES) as mount:
        yield mount


def _notes(root: Path, count: int) -> Path:
    folder = root / "big-notes"
    folder.mkdir()
    for i in range(count):
        words = " ".join(f"ledger{i}x{j} wall" for j in range(400))
        (folder / f"note-{i:04d}.md").write_text(f"# Note {i}\n\n{words}\n")
    return folder


def _until_refused(http: TestClient) -> None:
    """Write notes until the disk refuses one: what room the palace's log still had is used up."""
    for i in range(5000):
        answer = http.post("/api/notes", json={"content": f"filling note {i} " * 40, "wing": "filling"})
        if answer.status_code == 507:
            assert answer.json()["code"] == "storage_full"
            return
        assert answer.status_code == 201, answer.text
    raise AssertionError("the disk never filled")


def _job(http: TestClient, job_id: str) -> dict[str, Any]:
    return dict(http.get(f"/api/jobs/{job_id}").json())


def _paused_for_storage(http: TestClient, job_id: str) -> dict[str, Any] | None:
    job = _job(http, job_id)
    assert job["status"] not in ("failed", "completed"), job
    return job if job["status"] == "paused" and "storage failed" in (job["error"] or "") else None


def test_a_full_disk_pauses_the_mine_which_stays_paused_and_can_be_cancelled_and_forgotten(
    small_disk: Path, tmp_path: Path
) -> None:
    home = Path(os.environ["HOME"])
    folder = _notes(home, 900)  # about 6 MB of words: with their index, more than the disk holds
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * FILLER)
    settings = load_settings(
        flags={"palace": str(small_disk / "palace"), "embeddings.provider": "none", "audit.enabled": False,
               "jobs.resume_free_bytes": 16 << 20, "storage.reserve_bytes": RESERVE},
        env={}, config_file=None,
    )  # fmt: skip
    palace = build(settings, now=DistinctClock())
    palace.start()
    try:
        assert (small_disk / "palace" / "reserve").stat().st_size == RESERVE
        with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as http:
            mine = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "big"})
            job_id = mine.json()["job"]["id"]
            wait_until(lambda: _paused_for_storage(http, job_id), what="the mine to pause on the full disk")

            # A few megabytes freed: far below jobs.resume_free_bytes, so the mine stays paused.
            filler.unlink()
            time.sleep(3.0)  # the storage watch looks every second and first retries after two
            assert _paused_for_storage(http, job_id), "a paused mine resumed on a nearly full disk"

            # Resumed by hand, it fills the disk again; then cancel and forget still answer.
            assert http.post(f"/api/jobs/{job_id}/resume", json={}).status_code == 200
            wait_until(lambda: _paused_for_storage(http, job_id), what="the mine to pause on the full disk again")
            _until_refused(http)
            cancelled = http.post(f"/api/jobs/{job_id}/cancel", json={})
            assert cancelled.status_code == 200, cancelled.text
            assert cancelled.json()["job"]["status"] == "cancelled"

            drawer = http.get("/api/drawers", params={"wing": "big", "limit": 1}).json()["drawers"][0]["id"]
            forgot = http.post("/api/forget", json={"scope": "drawer", "drawer_id": drawer, "dry_run": False})
            assert forgot.status_code == 200, forgot.text

            assert http.get(f"/api/drawers/{drawer}").status_code == 404
            words = http.post("/api/search", json={"query": "ledger0x1", "ranking": "lexical", "wing": "big"}).json()
            assert drawer not in {h["drawer"]["id"] for h in words["hits"]}
            status = http.get("/api/status").json()
            assert all("jobs.resume_free_bytes" in w for w in status["warnings"] if "paused because" in w), status

            # The index merge the full disk left owed is made once there is room (the disk grows here).
            store: Any = palace.store
            subprocess.run(["mount", "-o", f"remount,size={DISK_BYTES * 3}", str(small_disk)], check=True)
            assert store.forgetting.merge_index() is True
            owed = store._reader().execute("SELECT count(*) FROM index_merge_owed").fetchone()[0]
            assert owed == 0
    finally:
        palace.stop()


def test_a_retried_job_gets_a_fresh_recovery_budget(tmp_path: Path) -> None:
    """After a manual retry the next crash failed the job at once ("recovery budget (3) spent"): a retry is a
    person's decision to run it again, with the whole budget."""
    store = SQLiteStore(tmp_path / "palace")
    try:
        pool = WorkerPool(store.jobs, {}, PoolShape(1, 60.0))
        queue = JobQueue(store.jobs, None)
        job, _ = store.jobs.create_job(NewJob(kind="mine", params={}))

        def crash() -> Job:
            assert store.jobs.claim_next_job("gone:1:a", 60.0, ["mine"]) is not None
            (recovered,) = pool.recover()  # a daemon starting after the one that ran it died
            return recovered

        assert [crash().status for _ in range(RECOVERY_BUDGET)] == [JobStatus.QUEUED] * RECOVERY_BUDGET
        spent = crash()
        assert spent.status is JobStatus.FAILED and "recovery budget" in (spent.error or "")
        retried = queue.retry(job.id)
        assert (retried.status, retried.recovery_attempts) == (JobStatus.QUEUED, 0)
        assert crash().status is JobStatus.QUEUED, "a crash after a retry is recovered, not failed at once"
    finally:
        store.close()
