"""Helpers of the Facts tests: real palaces in temp dirs, the command provider script, waiting on real jobs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from addresses import LOCAL
from clocks import DistinctClock
from fastapi.testclient import TestClient
from store_reads import all_entities

from memcastle.app import Palace, build
from memcastle.config import Settings, load_settings
from memcastle.config.layers import PALACE_FILE
from memcastle.daemon import http_app
from memcastle.model import Job
from memcastle.model.requests import MineRequest
from memcastle.store import Store

EXTRACTOR = Path(__file__).with_name("extractor.py")
EXTRACT = "extract"


def command_flags(*args: str, model: str = "claims-v1", timeout: float = 10.0) -> dict[str, Any]:
    """Settings that make `extractor.py ARGS` the palace's extraction provider."""
    return {
        "extraction.provider": "command",
        "extraction.model": model,
        "extraction.command": [sys.executable, str(EXTRACTOR), *args],
        "extraction.timeout": timeout,
    }


def write_notes(folder: Path, notes: Mapping[str, tuple[Mapping[str, Any], str]]) -> Path:
    """Markdown notes `{file name: (front matter, body)}` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (front, body) in notes.items():
        header = f"---\n{yaml.safe_dump(dict(front), sort_keys=False)}---\n" if front else ""
        (folder / name).write_text(header + body + "\n", encoding="utf-8")
    return folder


def client_of(palace: Palace) -> TestClient:
    """The palace's real HTTP surface, in-process."""
    return TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False)


@dataclass
class Palaces:
    """Builds real palaces (SQLite in a temp dir, real worker pool) the way a daemon does, and stops them all."""

    root: Path
    running: list[Palace] = field(default_factory=list)

    def settings(self, name: str, flags: Mapping[str, Any] | None) -> Settings:
        return load_settings(
            flags={
                "palace": str(self.root / name),
                "embeddings.provider": "none",
                "jobs.drain_seconds": 3.0,
                **(flags or {}),
            },
            env={},
            config_file=None,
        )

    def open(
        self,
        name: str = "palace",
        *,
        flags: Mapping[str, Any] | None = None,
        preferences: str | None = None,
        start: bool = True,
    ) -> Palace:
        """Build a palace (with `preferences` as its palace-local preferences.toml); start it unless told not to."""
        if preferences is not None:
            (self.root / name).mkdir(parents=True, exist_ok=True)
            (self.root / name / PALACE_FILE).write_text(preferences, encoding="utf-8")
        palace = build(self.settings(name, flags), now=DistinctClock())
        self.running.append(palace)
        if start:
            palace.start()
        return palace

    def reopen(self, palace: Palace, *, flags: Mapping[str, Any] | None = None) -> Palace:
        """Stop the palace and build it again over the same directory, as a daemon restart does."""
        self.stop(palace)
        return self.open(palace.settings.palace.name, flags=flags)

    def stop(self, palace: Palace) -> None:
        if palace in self.running:
            self.running.remove(palace)
            palace.stop()

    def close(self) -> None:
        while self.running:
            self.running.pop().stop()


def wait_until(predicate: Callable[[], Any], *, timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


def wait_for_job(palace: Palace, job_id: str, timeout: float = 15.0) -> Job:
    return wait_until(
        lambda: (job := palace.services.jobs.get_job(job_id)).is_finished and job, timeout=timeout, what=f"job {job_id}"
    )


def _active(palace: Palace, kind: str | None = None) -> list[Job]:
    return [j for j in palace.services.jobs.list_jobs(None, kind, 200) if j.status.value in ("queued", "running")]


def extracted(palace: Palace, timeout: float = 15.0) -> Job:
    """Wait until every current drawer was read by the active extractor and no sweep is queued or running; return
    the latest extract job."""

    def done() -> Job | None:
        if palace.services.status.extraction_status().pending or _active(palace):
            return None
        jobs = palace.services.jobs.list_jobs(None, EXTRACT, 1)
        return jobs[0] if jobs else None

    return wait_until(done, timeout=timeout, what="the extraction sweep")


def linked(palace: Palace, timeout: float = 15.0) -> Job:
    """Wait until no drawer is queued for the copies sweep and no sweep is queued or running; return the latest
    `link` job."""

    def done() -> Job | None:
        if palace.store.near.count_pending() or _active(palace, "link"):
            return None
        jobs = palace.services.jobs.list_jobs(None, "link", 1)
        return jobs[0] if jobs else None

    return wait_until(done, timeout=timeout, what="the copies sweep")


def failed_extraction(palace: Palace, timeout: float = 15.0) -> Job:
    """Wait for an extract job to fail, and for nothing else to be running; return that job."""

    def done() -> Job | None:
        failed = [j for j in palace.services.jobs.list_jobs("failed", EXTRACT, 10)]
        return failed[0] if failed and not _active(palace) else None

    return wait_until(done, timeout=timeout, what="a failed extraction sweep")


def mine(palace: Palace, connector: str, locator: Path | str, *, wing: str) -> dict[str, Any]:
    """Run a real mine job to completion; return its result."""
    job = palace.services.mining.submit_mine(MineRequest(connector, str(locator), {}, wing=wing)).job
    done = wait_for_job(palace, job.id)
    assert done.status.value == "completed", done.error
    assert done.result is not None
    return dict(done.result)


@dataclass(frozen=True)
class GraphSnapshot:
    entities: frozenset[str]
    facts: frozenset[str]
    links: frozenset[str]
    mentions: frozenset[tuple[str, str, str]]


def graph_of(store: Store) -> GraphSnapshot:
    """Everything the knowledge graph holds, as ids, through the store's own reads."""
    entities = all_entities(store)
    facts = store.facts.find_assertions(limit=100_000)
    return GraphSnapshot(
        entities=frozenset(e.id for e in entities),
        facts=frozenset(f.id for f in facts),
        links=frozenset(link.id for link in store.facts.links_of([f.id for f in facts])),
        mentions=frozenset(
            (m.drawer_id, e.id, m.spelling) for e in entities for m in store.entities.entity_mentions(e.id, 100_000)
        ),
    )


def facts_named(palace: Palace, **filters: Any) -> list[dict[str, Any]]:
    """The facts the service lists (the same JSON as `GET /api/facts`), ordered by valid_from."""
    return [f.to_json() for f in palace.services.facts.list_facts(limit=200, **filters)]


def triple(fact: Mapping[str, Any]) -> tuple[str, str, str]:
    return fact["subject_name"], fact["predicate"], fact["object_name"]
