"""Interactive work never waits behind the background sweeps: a sweep gives its worker up between batches to waiting
work of higher priority, and a request joins a paused sweep instead of starting another."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.model import JobStatus, NewDrawer
from memcastle.model.requests import MineRequest


@pytest.fixture
def busy(xdg_home: Any, palace_dir: Path) -> Iterator[Palace]:
    """Two workers, the builtin model and the heuristic extractor, and 400 long drawers for them to chew on."""
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "builtin", "jobs.workers": 2, "jobs.drain_seconds": 3},
        env={},
        config_file=None,
    )
    palace = build(settings, now=DistinctClock())
    words = " ".join(f"Team{i} works on Project{i % 13} and uses Tool{i % 7}." for i in range(40))
    for i in range(400):
        palace.store.drawers.add_drawer(NewDrawer(wing="bulk", room="r", content=f"note {i}: {words}"))
    palace.start()
    try:
        yield palace
    finally:
        palace.stop()


def running_kinds(palace: Palace) -> set[str]:
    return {j.kind for j in palace.services.jobs.list_jobs("running", None, 50)}


def test_a_requested_mine_runs_while_both_sweeps_still_have_work(busy: Palace, tmp_path: Path) -> None:
    wait_until(lambda: {"embed", "extract"} <= running_kinds(busy), what="both sweeps to hold the two workers")
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "main.py").write_text("print('hello')\n", encoding="utf-8")
    job = busy.services.mining.submit_mine(MineRequest("directory", str(folder), {}, wing="p")).job
    done = wait_until(lambda: (j := busy.services.jobs.get_job(job.id)).is_finished and j, what="the mine")
    assert done.status is JobStatus.COMPLETED
    # It did not wait for a sweep to finish: the embed sweep still has drawers to go when the mine is done.
    assert busy.services.status.embedding_status().pending > 0
    # The sweep that gave its worker up is queued or running again, and resumes from its checkpoint.
    sweeps = [j for j in busy.services.jobs.list_jobs(None, "embed", 10) if not j.is_finished]
    assert sweeps and all(j.status in (JobStatus.QUEUED, JobStatus.RUNNING) for j in sweeps)


def test_a_write_joins_the_paused_sweep_instead_of_starting_another(busy: Palace) -> None:
    embed = wait_until(
        lambda: next(iter(busy.services.jobs.list_jobs("running", "embed", 1)), None), what="the embed sweep"
    )
    busy.services.jobs.control_job(embed.id, "pause")
    wait_until(lambda: busy.services.jobs.get_job(embed.id).status is JobStatus.PAUSED, what="the pause")
    busy.services.drawers.save_note("one more note for the sweep", wing="w")
    open_sweeps = [j for j in busy.services.jobs.list_jobs(None, "embed", 10) if not j.is_finished]
    assert [j.id for j in open_sweeps] == [embed.id]


def test_a_queued_job_says_what_it_waits_for(busy: Palace, tmp_path: Path) -> None:
    wait_until(lambda: {"embed", "extract"} <= running_kinds(busy), what="both sweeps to hold the two workers")
    verify = busy.services.jobs.submit_verify(batch=50, pace_ms=0, priority="background")
    reason = busy.services.jobs.why_waiting(busy.services.jobs.get_job(verify.id))
    if busy.services.jobs.get_job(verify.id).status is JobStatus.QUEUED:
        assert reason is not None and "busy" in reason and "embed" in reason
    running = next(iter(busy.services.jobs.list_jobs("running", "embed", 1)), None)
    assert running is None or busy.services.jobs.why_waiting(running) is None
