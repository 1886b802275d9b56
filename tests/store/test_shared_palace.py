"""One PostgreSQL palace served by several daemons: start-up recovery leaves live daemons' jobs alone, leases are
kept fresh through long units, every queued job runs exactly once, and a daemon killed mid-mine is taken over once
its lease expires, ending with exactly the drawers of a clean run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from waiting import CEILING

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.jobs.context import JobContext
from memcastle.jobs.worker import PoolShape, WorkerPool, owner_is_dead
from memcastle.model import JobStatus, NewJob
from memcastle.model.requests import MineRequest
from memcastle.store import Store
from memcastle.store.postgres import PostgresStore

from .conftest import PostgresServer, as_url

LEASE = 3.0


@pytest.fixture
def conninfo(postgres_server: PostgresServer) -> Iterator[str]:
    info = postgres_server.create_database()
    yield info
    postgres_server.drop_database(info)


@pytest.fixture
def pg(conninfo: str) -> Iterator[PostgresStore]:
    store = PostgresStore(conninfo, max_connections=4)
    yield store
    store.close()


def dead_pid() -> int:
    """The pid of a process of this host that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def owner_of(pid: int) -> str:
    return f"{socket.gethostname()}:{pid}:0badc0de"


# --- lease renewal (both backends) ---------------------------------------------------------------


def test_a_lease_is_renewed_only_for_its_owner_while_the_job_runs(store: Store) -> None:
    job = store.jobs.create_job(NewJob(kind="k"))[0]
    claimed = store.jobs.claim_next_job("me", 1.0, ["k"])
    assert claimed is not None and claimed.lease_expires_at is not None
    assert store.jobs.renew_job_lease(job.id, "me", 60)
    renewed = store.jobs.get_job(job.id).lease_expires_at
    assert renewed is not None and renewed > claimed.lease_expires_at
    assert not store.jobs.renew_job_lease(job.id, "someone-else", 60)
    assert store.jobs.get_job(job.id).lease_expires_at == renewed
    store.jobs.transition_job(job.id, JobStatus.COMPLETED, owner="me", lease_owner=None, lease_expires_at=None)
    assert not store.jobs.renew_job_lease(job.id, "me", 60), "a finished job has no lease to renew"


# --- start-up recovery on a shared palace ---------------------------------------------------------


def test_owners_are_judged_dead_only_when_provably_gone() -> None:
    assert owner_is_dead(owner_of(dead_pid()))
    assert not owner_is_dead(owner_of(1)), "a live process of this host"
    assert not owner_is_dead("some-other-host:1:abcdef12"), "other hosts are left to their lease"
    assert owner_is_dead(owner_of(os.getpid())), "a pool of this process that is not running"


def test_recovery_on_a_shared_palace_leaves_live_and_foreign_jobs_to_their_owners(pg: PostgresStore) -> None:
    owners = {
        "dead": owner_of(dead_pid()),
        "live": owner_of(1),
        "foreign": "elsewhere:42:abcdef12",
        "foreign_expired": "elsewhere:43:abcdef12",
    }
    jobs = {}
    for name, owner in owners.items():  # one at a time, so each claim takes the job just queued
        jobs[name] = pg.jobs.create_job(NewJob(kind="mine", params={"n": name}))[0].id
        claimed = pg.jobs.claim_next_job(owner, 0.0 if name == "foreign_expired" else 60, ["mine"])
        assert claimed is not None and claimed.id == jobs[name]
    pool = WorkerPool(pg.jobs, {"mine": lambda ctx: {}}, PoolShape(1, 30, shared=True))

    recovered = pool.recover()

    assert [job.id for job in recovered] == [jobs["dead"]]
    assert recovered[0].status is JobStatus.QUEUED and recovered[0].recovery_attempts == 1
    for name in ("live", "foreign", "foreign_expired"):
        job = pg.jobs.get_job(jobs[name])
        assert job.status is JobStatus.RUNNING and job.lease_owner == owners[name], name
    # A job whose lease expired on another host is the claim's to take over, on the database clock.
    taken = [pg.jobs.claim_next_job("survivor", 30, ["mine"]) for _ in range(2)]
    assert {job.id for job in taken if job} == {jobs["dead"], jobs["foreign_expired"]}


def test_recovery_of_a_job_another_daemon_just_claimed_leaves_it_alone(pg: PostgresStore) -> None:
    job = pg.jobs.create_job(NewJob(kind="mine"))[0]
    dead = owner_of(dead_pid())
    assert pg.jobs.claim_next_job(dead, 0.0, ["mine"]) is not None
    pool = WorkerPool(pg.jobs, {"mine": lambda ctx: {}}, PoolShape(1, 30, shared=True))
    seen = pg.jobs.running_jobs()
    # Between recover() reading the running jobs and requeuing them, another daemon takes the expired job over.
    assert pg.jobs.claim_next_job("other-daemon", 30, ["mine"]) is not None
    original = pg.jobs.running_jobs
    pg.jobs.running_jobs = lambda: seen  # type: ignore[method-assign]
    try:
        assert pool.recover() == []
    finally:
        pg.jobs.running_jobs = original  # type: ignore[method-assign]
    assert pg.jobs.get_job(job.id).lease_owner == "other-daemon"


def test_a_live_daemon_keeps_its_lease_through_a_unit_longer_than_the_lease(pg: PostgresStore) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(ctx: JobContext) -> Mapping[str, Any]:
        started.set()
        release.wait(10)  # one long unit, no checkpoint: only the heartbeat keeps the lease
        return {"ok": True}

    job = pg.jobs.create_job(NewJob(kind="slow"))[0]
    pool = WorkerPool(pg.jobs, {"slow": slow}, PoolShape(1, 1.0, shared=True))
    pool.start()
    try:
        assert started.wait(10)
        deadline = time.monotonic() + 3.5  # three and a half leases
        while time.monotonic() < deadline:
            assert pg.jobs.claim_next_job("another-daemon", 1.0, ["slow"]) is None, "a live lease was taken over"
            time.sleep(0.1)
        release.set()
        deadline = time.monotonic() + CEILING
        while not pg.jobs.get_job(job.id).is_finished and time.monotonic() < deadline:
            time.sleep(0.05)
        done = pg.jobs.get_job(job.id)
        assert done.status is JobStatus.COMPLETED and done.attempt == 1 and done.recovery_attempts == 0
    finally:
        release.set()
        pool.drain(5)


def test_sqlite_recovery_still_requeues_every_running_job(tmp_path: Path) -> None:
    settings = load_settings(
        flags={"palace": str(tmp_path / "palace"), "embeddings.provider": "none"}, env={}, config_file=None
    )
    palace = build(settings)
    try:
        job = palace.store.jobs.create_job(NewJob(kind="verify"))[0]
        assert palace.store.jobs.claim_next_job(owner_of(1), 60, ["verify"]) is not None  # "alive", yet recovered
        (recovered,) = palace.pool.recover()
        assert recovered.id == job.id and recovered.status is JobStatus.QUEUED
    finally:
        palace.store.close()


# --- two real daemons on one palace ---------------------------------------------------------------


def shared_env(url: str, **extra: str) -> dict[str, str]:
    return {"MEMCASTLE_STORE_URL": url, "MEMCASTLE_JOBS_LEASE_SECONDS": str(LEASE), **extra}


def pid_of(owner: str | None) -> int | None:
    if not owner:
        return None
    return int(owner.split(":")[1])


def wait_job(
    http: httpx.Client,
    job_id: str,
    done: Callable[[dict[str, Any]], bool],
    *,
    timeout: float = 120,
    what: str = "the job",
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = http.get(f"/api/jobs/{job_id}").json()
        if done(job):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {job}")
        time.sleep(0.05)


def notes(root: Path, folders: int, files: int) -> list[Path]:
    made = []
    for f in range(folders):
        folder = root / f"folder{f:02d}"
        folder.mkdir(parents=True)
        for n in range(files):
            (folder / f"note{n:03d}.md").write_text(f"folder {f} note {n}: the {n}th entry about topic {f * n}\n")
        made.append(folder)
    return made


def python_tree(root: Path, count: int) -> Path:
    root.mkdir()
    for index in range(count):
        folder = root / f"pkg{index // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{index:04d}.py").write_text(
            f'"""Module {index}."""\n\n' + "\n\n".join(f"def f{index}_{n}():\n    return {n}" for n in range(30))
        )
    return root


def drawer_set(server: PostgresServer, conninfo: str) -> set[tuple[str, str, int]]:
    """The palace's drawers as (content hash, document, chunk): what a clean run must equal."""
    rows = server.execute(
        conninfo, "SELECT content_hash, origin->>'document', (origin->>'chunk')::int FROM drawer WHERE valid_to IS NULL"
    )
    total = server.execute(conninfo, "SELECT COUNT(*) FROM drawer")[0][0]
    found = {(str(h), str(d), int(c)) for h, d, c in rows}
    assert total == len(rows) == len(found), "a duplicate or closed drawer appeared"
    return found


def test_two_daemons_share_the_queue_and_every_job_runs_exactly_once(
    tmp_path: Path, daemon_process: Callable[..., Any], postgres_server: PostgresServer, conninfo: str
) -> None:
    folders, files = 12, 30
    sources = notes(tmp_path / "notes", folders, files)
    env = shared_env(as_url(conninfo))
    first = daemon_process(palace=tmp_path / "palace-a", extra_env=env)
    second = daemon_process(palace=tmp_path / "palace-b", extra_env=env)
    daemons = {first.pid: first, second.pid: second}
    seen_running: set[int | None] = set()
    with first.http() as a, second.http() as b:
        job_ids = []
        for index, folder in enumerate(sources):
            via = a if index % 2 == 0 else b  # each daemon is asked for half of the mines
            job_ids.append(
                via.post("/api/mine", json={"connector": "notes", "locator": str(folder)}).json()["job"]["id"]
            )
        deadline = time.monotonic() + 180
        while True:
            running = a.get("/api/jobs", params={"status": "running", "limit": 200}).json()["jobs"]
            seen_running.update(pid_of(j["lease_owner"]) for j in running)
            jobs = [a.get(f"/api/jobs/{job_id}").json() for job_id in job_ids]
            if all(j["status"] in ("completed", "failed", "cancelled") for j in jobs):
                break
            assert time.monotonic() < deadline, f"the mines did not finish: {[j['status'] for j in jobs]}"
            time.sleep(0.05)
        # The follow-up sweeps (extraction) are shared too; let them finish before counting.
        # A sweep that finishes may queue the next one just after a look: the jobs counted are those of the one
        # look that found nothing queued or running.
        deadline = time.monotonic() + 120
        while True:
            all_jobs = a.get("/api/jobs", params={"limit": 200}).json()["jobs"]
            if not any(j["status"] in ("queued", "running") for j in all_jobs):
                break
            assert time.monotonic() < deadline, "the follow-up sweeps did not finish"
            time.sleep(0.1)
        status = b.get("/api/status").json()

    assert set(daemons) <= seen_running, "both daemons should have run some of the jobs"
    for job in jobs:
        assert job["status"] == "completed", job["error"]
        # Claimed once, never taken over, and it did the whole folder's work itself.
        assert (job["attempt"], job["recovery_attempts"]) == (1, 0)
        assert (job["result"]["documents"], job["result"]["created"], job["result"]["unchanged"]) == (files, files, 0)
    for job in all_jobs:
        assert job["status"] == "completed" and job["recovery_attempts"] == 0, json.dumps(job)
        # A background sweep gives its worker up to a mine queued meanwhile and is claimed again from its checkpoint
        # (`JobContext.raise_if_stopping`, "yield"): each claim counts an attempt. Anything else runs once.
        assert job["attempt"] == 1 or job["priority"] < 50, json.dumps(job)
    assert status["drawers_total"] == status["drawers"] == folders * files
    per_job = dict(postgres_server.execute(conninfo, "SELECT provenance->>'job_id', COUNT(*) FROM drawer GROUP BY 1"))
    assert per_job == {job_id: files for job_id in job_ids}
    assert len(drawer_set(postgres_server, conninfo)) == folders * files
    # Every mine was claimed once, and no job was ever taken over; a last sweep queued after the listing (a loaded
    # machine finishes the follow-ups late) may have been requeued by the shutdown, and a sweep that gave way to a
    # mine was claimed again to resume.
    rows, most, taken = postgres_server.execute(
        conninfo, "SELECT COUNT(*), MAX(attempt) FILTER (WHERE priority >= 50), MAX(recovery_attempts) FROM job"
    )[0]
    assert rows >= len(all_jobs) and most == 1 and taken == 0, "no job row was claimed twice"


GATED_CONNECTOR = '''
import json
import os
import time
from pathlib import Path

from memcastle.connectors.directory import DirectoryConnector


class GatedDirectory(DirectoryConnector):
    """The directory connector, except that reading the document GATE_AT waits while the file GATE_FILE exists."""

    name = "gated"

    def read(self, source, candidate):
        if candidate.external_id == os.environ.get("GATE_AT"):
            gate = Path(os.environ["GATE_FILE"])
            if gate.exists():
                gate.with_suffix(".reached").touch()
            while gate.exists():
                time.sleep(0.05)
        return super().read(source, candidate)
'''


def install_gated_connector(site: Path) -> Path:
    """A connector distribution (as a third party would ship one) whose mine can be held at one document."""
    (site / "gated_connector").mkdir(parents=True)
    (site / "gated_connector" / "__init__.py").write_text(GATED_CONNECTOR)
    dist = site / "gated_connector-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gated-connector\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[memcastle.connectors]\ngated = gated_connector:GatedDirectory\n")
    return site


@pytest.mark.slow
def test_kill_9_of_one_daemon_mid_mine_the_other_takes_over_after_the_lease_with_no_duplicates(
    tmp_path: Path, daemon_process: Callable[..., Any], postgres_server: PostgresServer, conninfo: str
) -> None:
    files = 300
    tree = python_tree(tmp_path / "tree", files)
    gate = tmp_path / "gate"
    gate.touch()
    # The first daemon's mine is held at a document in the middle for as long as the test needs, whatever the
    # machine's speed: inside one unit of work, where only the lease heartbeat shows that the daemon is alive.
    env = shared_env(
        as_url(conninfo),
        MEMCASTLE_EXTRACTION_PROVIDER="none",
        PYTHONPATH=str(install_gated_connector(tmp_path / "site")),
        GATE_FILE=str(gate),
        GATE_AT="pkg01/module_0150.py",
    )
    first = daemon_process(palace=tmp_path / "palace-a", extra_env=env)
    with first.http() as a:
        job_id = a.post("/api/mine", json={"connector": "gated", "locator": str(tree)}).json()["job"]["id"]
        deadline = time.monotonic() + 60
        while not gate.with_suffix(".reached").exists():
            assert time.monotonic() < deadline, (
                f"the mine did not reach the gate: {a.get(f'/api/jobs/{job_id}').json()}"
            )
            time.sleep(0.05)
        held = a.get(f"/api/jobs/{job_id}").json()
    assert held["status"] == "running" and pid_of(held["lease_owner"]) == first.pid

    # A second daemon starts while the first is mid-mine: its start-up recovery must leave the live job alone ...
    second = daemon_process(palace=tmp_path / "palace-b", extra_env=env)
    with second.http() as b:
        job = b.get(f"/api/jobs/{job_id}").json()
        assert job["status"] == "running" and pid_of(job["lease_owner"]) == first.pid, job
        assert job["recovery_attempts"] == 0
        # ... and so must its claims, for longer than a lease, while the first daemon is stuck in one document.
        time.sleep(LEASE + 1)
        job = b.get(f"/api/jobs/{job_id}").json()
        assert job["status"] == "running" and pid_of(job["lease_owner"]) == first.pid, job
        assert (job["attempt"], job["recovery_attempts"]) == (1, 0)

        first.kill()
        killed_at = time.monotonic()
        gate.unlink()
        taken = wait_job(
            b,
            job_id,
            lambda j: pid_of(j["lease_owner"]) == second.pid or j["status"] != "running",
            timeout=30,
            what="the takeover",
        )
        waited = time.monotonic() - killed_at
        assert pid_of(taken["lease_owner"]) == second.pid and taken["recovery_attempts"] == 1, taken
        # Not before the dead daemon's lease ran out (it was renewed at most a third of a lease before the kill).
        assert LEASE / 3 <= waited <= LEASE + 4, f"taken over {waited:.1f}s after the kill, for a {LEASE}s lease"
        done = wait_job(
            b, job_id, lambda j: j["status"] in ("completed", "failed", "cancelled"), what="the resumed mine"
        )
    assert done["status"] == "completed", done["error"]
    assert (done["attempt"], done["recovery_attempts"]) == (2, 1)
    assert done["result"]["documents"] == files
    survivor = drawer_set(postgres_server, conninfo)

    clean_info = postgres_server.create_database()
    try:
        clean = build(
            load_settings(
                flags={
                    "palace": str(tmp_path / "clean"),
                    "store.url": as_url(clean_info),
                    "embeddings.provider": "none",
                    "extraction.provider": "none",
                },
                env={},
                config_file=None,
            )
        )
        clean.start()
        try:
            run = clean.services.mining.submit_mine(MineRequest("directory", str(tree))).job
            deadline = time.monotonic() + 180
            while not clean.services.jobs.get_job(run.id).is_finished:
                assert time.monotonic() < deadline, "the clean mine did not finish"
                time.sleep(0.05)
            assert clean.services.jobs.get_job(run.id).status is JobStatus.COMPLETED
        finally:
            clean.stop()
        assert survivor == drawer_set(postgres_server, clean_info)
        assert len(survivor) == files
    finally:
        postgres_server.drop_database(clean_info)
