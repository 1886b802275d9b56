"""The settings the original has and users set: each changes what the palace does, measured on a real palace —
`web.enabled`, `dedup.enabled`, `dedup.entity_fuzzy`, `extraction.max_entities` / `max_relations`,
`mining.max_documents`, `jobs.background_share`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from addresses import LOCAL
from fastapi.testclient import TestClient
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.jobs.context import JobContext
from memcastle.jobs.queue import JobQueue
from memcastle.jobs.worker import PoolShape, WorkerPool
from memcastle.model import NewJob
from memcastle.model.requests import MineRequest
from memcastle.store.sqlite import SQLiteStore


@pytest.fixture
def palace_with(tmp_path: Path) -> Iterator[Any]:
    built: list[Palace] = []

    def make(**flags: Any) -> Palace:
        settings = load_settings(
            flags={
                "palace": str(tmp_path / f"palace-{len(built)}"),
                "embeddings.provider": "none",
                "mining.roots": [str(tmp_path)],
                **flags,
            },
            env={},
            config_file=None,
        )
        palace = build(settings)
        palace.start()
        built.append(palace)
        return palace

    yield make
    for palace in built:
        palace.stop()


def client(palace: Palace) -> TestClient:
    return TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False)


def test_web_enabled_false_serves_no_page_but_the_api(palace_with: Any) -> None:
    with client(palace_with()) as on:
        assert on.get("/", headers={"Accept": "text/html"}).status_code == 200
    with client(palace_with(**{"web.enabled": False})) as off:
        assert off.get("/", headers={"Accept": "text/html"}).status_code == 404
        assert off.get("/static/htmx.min.js").status_code == 404
        assert off.get("/api/health").status_code == 200


NEAR = "The drawbridge chain was oiled on Monday by the night watch, as every week since spring."


def test_dedup_enabled_false_links_no_near_copies(palace_with: Any) -> None:
    for flags, linked in (({}, 1), ({"dedup.enabled": False}, 0)):
        palace = palace_with(**flags)
        palace.services.drawers.save_note(NEAR, wing="d")
        second = palace.services.drawers.save_note(NEAR.upper(), wing="d").drawer  # a normalized copy
        assert len(palace.services.drawers.duplicates(second.id)) == linked, flags


def test_entity_fuzzy_false_keeps_a_name_one_edit_away_apart(palace_with: Any) -> None:
    for flags, entities in (({}, 1), ({"dedup.entity_fuzzy": False}, 2)):
        with client(palace_with(**flags)) as http:
            for name in ("Atlantis Project", "Atlantis Projekt"):
                made = http.post("/api/facts", json={"subject": name, "predicate": "uses", "object": "Vim"})
                assert made.status_code == 201, made.text
            found = http.get("/api/entities", params={"name": "Atlantis"}).json()["entities"]
            assert len(found) == entities, (flags, found)


def test_extraction_caps_bound_what_one_drawer_adds(palace_with: Any) -> None:
    crowd = "Alice Archer, Bruno Baker, Chloe Carter, Dmitri Dawson and Elena Evans met Frank Fischer in Geneva."
    for flags, most in (({}, None), ({"extraction.max_entities": 2}, 2)):
        palace = palace_with(**flags)
        palace.services.drawers.save_note(crowd, wing="x")
        job = wait_until(
            lambda p=palace: next((j for j in p.services.jobs.list_jobs("completed", "extract", 5)), None),
            what="the extract sweep",
        )
        result = job.result or {}
        if most is None:
            assert result["entities"] > 2 and result["dropped_over_cap"] == 0
        else:
            assert result["entities"] == most and result["dropped_over_cap"] > 0


def test_mining_max_documents_stops_a_mine_and_the_next_goes_on(palace_with: Any, tmp_path: Path) -> None:
    folder = tmp_path / "five-notes"
    folder.mkdir()
    for i in range(5):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nThe ledger's line {i}.\n", encoding="utf-8")
    palace = palace_with(**{"mining.max_documents": 3})

    def mine() -> dict[str, Any]:
        job = palace.services.mining.submit_mine(MineRequest("notes", str(folder), wing="m")).job
        done = wait_until(lambda: (j := palace.services.jobs.get_job(job.id)).is_finished and j, what="the mine")
        assert done.status.value == "completed", done.error
        return dict(done.result or {})

    first = mine()
    assert first["created"] == 3 and "mining.max_documents" in first["stopped"]
    second = mine()
    assert second["created"] == 2 and second["unchanged"] == 3 and "stopped" not in second
    (folder / "n0.md").unlink()
    third = mine()
    assert third["removed_documents"] == 1  # a mine that went through the listing notices removals again


def test_background_share_keeps_a_worker_for_what_was_asked(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "pool")
    release = threading.Event()
    running: dict[str, int] = {"now": 0, "most": 0}
    lock = threading.Lock()

    def sweep(ctx: JobContext) -> Mapping[str, Any]:
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        release.wait(60)
        with lock:
            running["now"] -= 1
        return {}

    def asked(ctx: JobContext) -> Mapping[str, Any]:
        return {"ran_at": time.monotonic()}

    handlers = {"embed": sweep, "extract": sweep, "mine": asked}
    pool = WorkerPool(store.jobs, handlers, PoolShape(2, 30, background=("embed", "extract"), background_workers=1))
    queue = JobQueue(store.jobs, pool.signals)
    pool.start()
    try:
        queue.submit(NewJob(kind="embed"))
        queue.submit(NewJob(kind="extract"))
        wait_until(lambda: running["now"] == 1, what="one sweep running")
        mine, _ = queue.submit(NewJob(kind="mine"))
        done = wait_until(lambda: (j := store.jobs.get_job(mine.id)).is_finished and j, what="the asked-for job")
        assert done.status.value == "completed"
        assert running["most"] == 1  # the second sweep waited, the mine did not
        extract = next(j for j in store.jobs.list_jobs(None, "extract", 5))
        assert extract.status.value == "queued"
        release.set()
        wait_until(lambda: all(j.is_finished for j in store.jobs.list_jobs(None, None, 10)), what="the sweeps")
    finally:
        release.set()
        pool.drain(30)
        store.close()
