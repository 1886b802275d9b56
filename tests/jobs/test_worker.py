"""Durable jobs on a real palace: priorities, the bounded pool, pause/resume/cancel/retry, crash recovery, drain."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from waiting import CEILING

from memcastle import integrity
from memcastle.app import Palace, build
from memcastle.config import Settings
from memcastle.errors import IllegalTransition
from memcastle.jobs.context import JobContext
from memcastle.jobs.queue import JobQueue
from memcastle.jobs.worker import RECOVERY_BUDGET, PoolShape, WorkerPool
from memcastle.model import Job, JobStatus, NewDrawer, NewJob, Priority
from memcastle.store.sqlite import DB_FILE, SQLiteStore

Poll = Callable[..., Any]


def add_notes(store: Any, count: int, wing: str = "w") -> list[str]:
    return [
        store.drawers.add_drawer(NewDrawer(wing=wing, room="r", content=f"note number {i}")).id for i in range(count)
    ]


def tamper(palace: Path, drawer_id: str) -> None:
    """Change stored content behind the store's back, as disk corruption would."""
    with sqlite3.connect(palace / DB_FILE, timeout=30) as conn:
        conn.execute("UPDATE drawer SET content = content || ' (tampered)' WHERE id = ?", (drawer_id,))


def seq_of(palace: Path, drawer_id: str) -> int:
    with sqlite3.connect(palace / DB_FILE, timeout=30) as conn:
        return int(conn.execute("SELECT seq FROM drawer WHERE id = ?", (drawer_id,)).fetchone()[0])


def finished(store: Any, job_id: str) -> Callable[[], Job | None]:
    def check() -> Job | None:
        job = store.jobs.get_job(job_id)
        return job if job.is_finished else None

    return check


def in_status(store: Any, job_id: str, status: JobStatus) -> Callable[[], Job | None]:
    def check() -> Job | None:
        job = store.jobs.get_job(job_id)
        return job if job.status is status else None

    return check


def no_worker_threads() -> bool:
    return not any(t.name.startswith("memcastle-worker-") for t in threading.enumerate())


# --- a pool with handlers the test controls -------------------------------------------------------


class Harness:
    """A real store and a `WorkerPool` over plain handler functions."""

    def __init__(self, palace: Path) -> None:
        self.store = SQLiteStore(palace)
        self.pool: WorkerPool | None = None
        self.queue = JobQueue(self.store.jobs, None)
        self.release = threading.Event()

    def start(self, handlers: Mapping[str, Callable[[JobContext], Mapping[str, Any]]], workers: int) -> WorkerPool:
        self.pool = WorkerPool(self.store.jobs, handlers, PoolShape(workers, 30))
        self.queue = JobQueue(self.store.jobs, self.pool.signals)
        self.pool.start()
        return self.pool

    def submit(self, kind: str, priority: int = Priority.NORMAL, **params: Any) -> Job:
        job, _ = self.queue.submit(NewJob(kind=kind, params=params, priority=priority))
        return job

    def close(self) -> None:
        self.release.set()
        if self.pool is not None:
            self.pool.drain(60)
            # Every thread of the pool, its storage watch and lease renewal too, ends before the store closes (as
            # `Palace.stop` does): closing a SQLite connection another thread is reading crashes the process.
            assert self.pool.join(60), "a pool thread outlived the drain"
        deadline = time.monotonic() + 60
        while not no_worker_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.store.close()


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    made = Harness(tmp_path / "palace")
    yield made
    made.close()


def test_higher_priority_jobs_run_first(harness: Harness, poll: Poll) -> None:
    order: list[str] = []

    def record(ctx: JobContext) -> dict[str, Any]:
        order.append(ctx.params["name"])
        return {}

    submitted = [
        ("bg", Priority.BACKGROUND),
        ("normal-1", Priority.NORMAL),
        ("crit", Priority.CRITICAL),
        ("low", Priority.LOW),
        ("normal-2", Priority.NORMAL),
        ("high", Priority.HIGH),
    ]
    jobs = [harness.submit("record", priority, name=name) for name, priority in submitted]
    harness.start({"record": record}, workers=1)
    for job in jobs:
        poll(finished(harness.store, job.id), what=f"job {job.id}")
    assert order == ["crit", "high", "normal-1", "normal-2", "low", "bg"]


def test_pool_runs_at_most_its_worker_count_at_once(harness: Harness, poll: Poll) -> None:
    lock = threading.Lock()
    active = 0
    peak = 0
    running_seen: list[int] = []

    def busy(ctx: JobContext) -> dict[str, Any]:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        running_seen.append(harness.store.jobs.count_jobs()["running"])
        # Jobs meet in pairs: each waits until a second one runs beside it, whatever the machine's load.
        pairs.wait(timeout=CEILING)
        with lock:
            active -= 1
        return {"done": True}

    pairs = threading.Barrier(2)
    jobs = [harness.submit("busy") for _ in range(4)]
    harness.start({"busy": busy}, workers=2)
    for job in jobs:
        assert poll(finished(harness.store, job.id), what="busy jobs").status is JobStatus.COMPLETED
    assert peak == 2, "two workers run two jobs side by side, never more"
    assert max(running_seen) <= 2


def test_job_of_a_kind_without_handler_is_left_queued(harness: Harness, poll: Poll) -> None:
    job = harness.submit("unknown-kind")
    harness.start({"other": lambda ctx: {}}, workers=1)
    # A job queued after it is claimed and finished: the worker has looked at the queue and passed the first by.
    later = harness.submit("other")
    poll(finished(harness.store, later.id), what="the job with a handler")
    assert harness.store.jobs.get_job(job.id).status is JobStatus.QUEUED


def test_failed_job_records_the_error_and_retry_runs_it_again(harness: Harness, poll: Poll) -> None:
    def flaky(ctx: JobContext) -> dict[str, Any]:
        if ctx.job.attempt == 1:
            raise RuntimeError("disk on fire")
        return {"attempt": ctx.job.attempt}

    harness.start({"flaky": flaky}, workers=1)
    job = harness.submit("flaky")
    failed = poll(finished(harness.store, job.id), what="the first attempt")
    assert failed.status is JobStatus.FAILED
    assert failed.error == "RuntimeError: disk on fire"
    assert failed.finished_at is not None and failed.lease_owner is None

    retried = harness.queue.retry(job.id)
    assert retried.status is JobStatus.QUEUED and retried.error is None and retried.finished_at is None
    done = poll(finished(harness.store, job.id), what="the retry")
    assert done.status is JobStatus.COMPLETED
    assert done.result == {"attempt": 2} and done.attempt == 2


def test_an_illegal_transition_on_its_own_job_fails_the_job_instead_of_reading_as_a_lost_lease(
    harness: Harness, poll: Poll
) -> None:
    def retries_itself(ctx: JobContext) -> dict[str, Any]:
        harness.queue.retry(ctx.job.id)  # running -> queued by retry is not in the table
        return {}

    harness.start({"self-retry": retries_itself}, workers=1)
    job = harness.submit("self-retry")
    failed = poll(finished(harness.store, job.id), what="the job to be marked")
    assert failed.status is JobStatus.FAILED
    assert failed.error is not None and failed.error.startswith("IllegalTransition: ")
    assert failed.lease_owner is None


def test_a_lost_lease_leaves_the_job_to_its_new_owner(harness: Harness, poll: Poll) -> None:
    taken = threading.Event()

    def loses_its_lease(ctx: JobContext) -> dict[str, Any]:
        # Another worker takes the job over: its lease now names someone else.
        harness.store.jobs.transition_job(ctx.job.id, JobStatus.QUEUED, lease_owner=None, lease_expires_at=None)
        claimed = harness.store.jobs.claim_next_job("another-daemon", 30, ["takeover"])
        assert claimed is not None and claimed.id == ctx.job.id
        taken.set()
        ctx.checkpoint({"step": 1}, 1)  # refused: LeaseLost
        return {"unreachable": True}

    harness.start({"takeover": loses_its_lease}, workers=1)
    job = harness.submit("takeover")
    poll(taken.is_set, what="the takeover")
    harness.pool.drain(60) if harness.pool else None
    after = harness.store.jobs.get_job(job.id)
    assert after.status is JobStatus.RUNNING and after.lease_owner == "another-daemon" and after.result is None


def test_only_a_failed_job_can_be_retried(harness: Harness, poll: Poll) -> None:
    harness.start({"ok": lambda ctx: {}}, workers=1)
    job = harness.submit("ok")
    poll(finished(harness.store, job.id))
    with pytest.raises(IllegalTransition):
        harness.queue.retry(job.id)


def test_cancel_of_a_queued_job_means_it_never_runs(harness: Harness, poll: Poll) -> None:
    ran: list[str] = []
    started = threading.Event()

    def block(ctx: JobContext) -> dict[str, Any]:
        ran.append(ctx.job.id)
        started.set()
        harness.release.wait(10)
        return {}

    harness.start({"block": block}, workers=1)
    first = harness.submit("block")
    assert started.wait(5)
    second = harness.submit("block")
    cancelled = harness.queue.cancel(second.id)
    assert cancelled.status is JobStatus.CANCELLED and cancelled.finished_at is not None
    harness.release.set()
    poll(finished(harness.store, first.id))
    # One worker, oldest first: had the cancelled job been claimable, it would run before this one.
    third = harness.submit("block")
    poll(finished(harness.store, third.id))
    assert ran == [first.id, third.id]
    with pytest.raises(IllegalTransition):
        harness.queue.cancel(second.id)


def test_pause_of_a_job_that_is_not_running_is_refused(harness: Harness) -> None:
    job = harness.submit("nothing-runs-this")
    with pytest.raises(IllegalTransition):
        harness.queue.pause(job.id)
    with pytest.raises(IllegalTransition):
        harness.queue.resume(job.id)


def test_cooperative_job_stops_at_its_checkpoint_on_drain_and_is_requeued(harness: Harness, poll: Poll) -> None:
    def steps(ctx: JobContext) -> dict[str, Any]:
        done = int(ctx.state.get("done", 0))
        while done < 1000:
            time.sleep(0.01)
            done += 1
            ctx.checkpoint({"done": done}, current=done, total=1000)
        return {"done": done}

    pool = harness.start({"steps": steps}, workers=1)
    job = harness.submit("steps")
    poll(lambda: harness.store.jobs.get_job(job.id).progress.current >= 3, what="progress")
    assert pool.drain(5) == [], "a job that stops at its checkpoint requeues itself"
    stopped = harness.store.jobs.get_job(job.id)
    assert stopped.status is JobStatus.QUEUED
    assert stopped.lease_owner is None and stopped.finished_at is None
    assert stopped.checkpoint["done"] == stopped.progress.current >= 3


def test_drain_requeues_a_job_that_does_not_stop_in_time_and_fences_it(harness: Harness, poll: Poll) -> None:
    returned = threading.Event()

    def stubborn(ctx: JobContext) -> dict[str, Any]:
        try:
            harness.release.wait(10)  # never reaches a checkpoint while draining
            return {"finished": True}
        finally:
            returned.set()

    pool = harness.start({"stubborn": stubborn}, workers=1)
    job = harness.submit("stubborn")
    poll(in_status(harness.store, job.id, JobStatus.RUNNING))
    started = time.monotonic()
    assert pool.drain(0.3) == [job.id]
    assert time.monotonic() - started < 2, "drain waits a bounded time"
    requeued = harness.store.jobs.get_job(job.id)
    assert requeued.status is JobStatus.QUEUED and requeued.lease_owner is None

    harness.release.set()
    assert returned.wait(5)
    poll(no_worker_threads, what="the stuck worker to finish")
    after = harness.store.jobs.get_job(job.id)
    assert after.status is JobStatus.QUEUED and after.result is None, "the fenced worker cannot complete it"


def test_resume_of_a_running_job_is_refused(harness: Harness, poll: Poll) -> None:
    harness.start({"block": lambda ctx: {"ok": harness.release.wait(10)}}, workers=1)
    job = harness.submit("block")
    poll(in_status(harness.store, job.id, JobStatus.RUNNING))
    try:
        with pytest.raises(IllegalTransition):
            harness.queue.resume(job.id)
    finally:
        harness.release.set()
    assert poll(finished(harness.store, job.id)).status is JobStatus.COMPLETED


def test_retry_of_a_running_job_is_refused(harness: Harness, poll: Poll) -> None:
    harness.start({"block": lambda ctx: {"ok": harness.release.wait(10)}}, workers=1)
    job = harness.submit("block")
    poll(in_status(harness.store, job.id, JobStatus.RUNNING))
    try:
        with pytest.raises(IllegalTransition):
            harness.queue.retry(job.id)
    finally:
        harness.release.set()
    assert poll(finished(harness.store, job.id)).status is JobStatus.COMPLETED


# --- the real `verify` job on a built palace ------------------------------------------------------


def submit_verify(palace: Palace, *, batch: int, pace_ms: int = 0, priority: str = "normal") -> Job:
    job = palace.services.jobs.submit_job(integrity.KIND, {"batch": batch, "pace_ms": pace_ms}, priority=priority).job
    return job


def test_verify_checks_every_current_drawer_and_reports_mismatches(
    palace: Palace, settings: Settings, poll: Poll
) -> None:
    ids = add_notes(palace.store, 23)
    palace.store.drawers.invalidate_drawer(ids[0])
    tamper(settings.palace, ids[5])
    job = submit_verify(palace, batch=4)
    done = poll(finished(palace.store, job.id))
    assert done.status is JobStatus.COMPLETED
    assert done.result == {"checked": 22, "mismatches": [ids[5]], "ok": False}
    assert done.progress.total == 22 and 4 <= done.progress.current <= 22, "progress is saved at checkpoints"


def test_pause_and_resume_continue_from_the_checkpoint(palace: Palace, settings: Settings, poll: Poll) -> None:
    ids = add_notes(palace.store, 80)
    job = submit_verify(palace, batch=2, pace_ms=20)
    poll(lambda: palace.store.jobs.get_job(job.id).progress.current >= 10, what="some progress")
    palace.services.jobs.control_job(job.id, "pause")
    paused = poll(in_status(palace.store, job.id, JobStatus.PAUSED), what="the pause")
    assert paused.finished_at is None and paused.lease_owner is None
    after = paused.checkpoint["after"]
    assert paused.checkpoint["checked"] == paused.progress.current >= 10
    # The worker marks a job paused only once its handler has returned: nothing runs it until it is resumed.
    poll(lambda: palace.pool.running_here() == [], what="the worker to let go of the job")
    assert palace.store.jobs.get_job(job.id).progress.current == paused.progress.current, "a paused job does no work"

    # Corrupt one drawer the paused run already checked and one it has not: a resumed run sees only the second.
    checked_already = ids[0]
    still_ahead = ids[-1]
    assert seq_of(settings.palace, checked_already) <= seq_of(settings.palace, after)
    tamper(settings.palace, checked_already)
    tamper(settings.palace, still_ahead)

    resumed = palace.services.jobs.control_job(job.id, "resume")
    assert resumed.status is JobStatus.QUEUED and not resumed.pause_requested
    done = poll(finished(palace.store, job.id), what="the resumed run")
    assert done.status is JobStatus.COMPLETED
    assert done.result is not None
    assert done.result["checked"] == 80, "each drawer is counted once across the pause"
    assert done.result["mismatches"] == [still_ahead], "the resumed run started after the checkpoint"
    assert done.attempt == 2


def test_cancel_of_a_running_job_stops_it_at_its_next_checkpoint(palace: Palace, poll: Poll) -> None:
    add_notes(palace.store, 40)
    job = submit_verify(palace, batch=2, pace_ms=20)
    poll(lambda: palace.store.jobs.get_job(job.id).progress.current > 0, what="a checkpoint")
    answer = palace.services.jobs.control_job(job.id, "cancel")
    assert answer.cancel_requested
    done = poll(finished(palace.store, job.id))
    assert done.status is JobStatus.CANCELLED
    assert done.result is None and done.progress.current < 40
    with pytest.raises(IllegalTransition):
        palace.services.jobs.control_job(job.id, "resume")


def test_cancel_of_a_queued_verify_job(palace: Palace, poll: Poll) -> None:
    add_notes(palace.store, 30)
    blockers = [submit_verify(palace, batch=1, pace_ms=50, priority="high") for _ in range(2)]
    for blocker in blockers:
        poll(in_status(palace.store, blocker.id, JobStatus.RUNNING), what="both workers busy")
    waiting = submit_verify(palace, batch=1, priority="low")
    cancelled = palace.services.jobs.control_job(waiting.id, "cancel")
    assert cancelled.status is JobStatus.CANCELLED
    assert cancelled.started_at is None and cancelled.attempt == 0
    for blocker in blockers:
        palace.services.jobs.control_job(blocker.id, "cancel")
        poll(finished(palace.store, blocker.id))
    assert palace.store.jobs.get_job(waiting.id).started_at is None


# --- crash recovery -------------------------------------------------------------------------------


def crash_with_job_running(settings: Settings, job_id: str | None) -> str:
    """Build the palace, leave a job `running` under an owner that no longer exists, close without draining."""
    palace = build(settings)
    if job_id is None:
        job_id = palace.store.jobs.create_job(NewJob(kind=integrity.KIND, params={"batch": 3}))[0].id
    claimed = palace.store.jobs.claim_next_job("ghost-host:1:dead", 30, [integrity.KIND])
    assert claimed is not None and claimed.id == job_id
    palace.store.close()
    return job_id


def test_job_left_running_by_a_crash_is_requeued_and_completes(settings: Settings, poll: Poll) -> None:
    seed = build(settings)
    add_notes(seed.store, 10)
    seed.store.close()
    job_id = crash_with_job_running(settings, None)

    palace = build(settings)
    try:
        palace.start()
        done = poll(finished(palace.store, job_id), what="the recovered job")
        assert done.status is JobStatus.COMPLETED
        assert done.recovery_attempts == 1
        assert done.result == {"checked": 10, "mismatches": [], "ok": True}
    finally:
        palace.stop()


def test_recovery_budget_is_three_then_the_job_fails_with_a_reason(settings: Settings) -> None:
    assert RECOVERY_BUDGET == 3
    job_id: str | None = None
    for crash in range(1, RECOVERY_BUDGET + 1):
        job_id = crash_with_job_running(settings, job_id)
        palace = build(settings)
        try:
            (recovered,) = palace.pool.recover()
            assert recovered.id == job_id
            assert recovered.status is JobStatus.QUEUED
            assert recovered.recovery_attempts == crash
            assert recovered.lease_owner is None and recovered.lease_expires_at is None
        finally:
            palace.store.close()

    job_id = crash_with_job_running(settings, job_id)
    palace = build(settings)
    try:
        (failed,) = palace.pool.recover()
        assert failed.status is JobStatus.FAILED
        assert failed.finished_at is not None
        assert failed.error is not None and "recovery budget" in failed.error and "crash" in failed.error
        assert palace.pool.recover() == [], "a failed job is not recovered again"
    finally:
        palace.store.close()


def test_recovery_leaves_jobs_that_were_not_running_alone(settings: Settings) -> None:
    palace = build(settings)
    queued = palace.store.jobs.create_job(NewJob(kind="anything"))[0]
    palace.store.close()
    again = build(settings)
    try:
        assert again.pool.recover() == []
        assert again.store.jobs.get_job(queued.id).status is JobStatus.QUEUED
    finally:
        again.store.close()


def test_stopping_a_palace_requeues_its_running_verify_job(settings: Settings, poll: Poll) -> None:
    palace = build(settings)
    add_notes(palace.store, 60)
    palace.start()
    job = submit_verify(palace, batch=2, pace_ms=30)
    poll(lambda: palace.store.jobs.get_job(job.id).progress.current > 0, what="a checkpoint")
    palace.stop()

    reopened = SQLiteStore(settings.palace)
    try:
        stopped = reopened.jobs.get_job(job.id)
        assert stopped.status is JobStatus.QUEUED
        assert stopped.recovery_attempts == 0, "a clean shutdown is not a crash"
        assert stopped.checkpoint["checked"] > 0
    finally:
        reopened.close()
