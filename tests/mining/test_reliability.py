"""Mining through a real daemon process: crash mid-mine, and a connector from another distribution."""

from __future__ import annotations

import sqlite3
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

FILES = 2500


def _tree(root: Path, count: int) -> Path:
    root.mkdir()
    for index in range(count):
        folder = root / f"pkg{index // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{index:04d}.py").write_text(
            f'"""Module {index}."""\n\n' + "\n\n".join(f"def f{index}_{n}():\n    return {n}" for n in range(30))
        )
    return root


def _drawers(palace: Path) -> set[tuple[str, str, int]]:
    """The palace's drawers as (content hash, document, chunk): what a clean run must equal."""
    with sqlite3.connect(palace / "palace.sqlite3") as db:
        rows = db.execute("SELECT content_hash, origin FROM drawer WHERE valid_to IS NULL").fetchall()
        total = db.execute("SELECT COUNT(*) FROM drawer").fetchone()[0]
    import json

    found = {(h, json.loads(o)["document"], json.loads(o)["chunk"]) for h, o in rows}
    assert total == len(rows) == len(found), "a duplicate or closed drawer appeared"
    return found


def _wait_job(http: httpx.Client, job_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = http.get(f"/api/jobs/{job_id}").json()
        if done(job):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not reach the expected state")


@pytest.mark.slow
def test_kill_9_during_a_mine_resumes_and_ends_with_exactly_the_clean_drawers(
    tmp_path: Path, daemon_process: Callable[..., Any]
) -> None:
    tree = _tree(tmp_path / "tree", FILES)
    crashed_palace = tmp_path / "crashed"
    first = daemon_process(palace=crashed_palace)
    with first.http() as http:
        job = http.post("/api/mine", json={"connector": "directory", "locator": str(tree)}).json()["job"]
        running = _wait_job(
            http,
            job["id"],
            lambda j: j["progress"]["current"] >= 300 or j["status"] != "running" and j["status"] != "queued",
        )
    assert running["status"] == "running", "the mine finished before it could be interrupted"
    first.kill()

    second = daemon_process(palace=crashed_palace)
    with second.http() as http:
        resumed = _wait_job(http, job["id"], lambda j: j["status"] in ("completed", "failed"))
    assert resumed["status"] == "completed", resumed["error"]
    assert resumed["recovery_attempts"] == 1
    assert resumed["result"]["documents"] == FILES
    second.close()

    clean_palace = tmp_path / "clean"
    third = daemon_process(palace=clean_palace)
    with third.http() as http:
        job = http.post("/api/mine", json={"connector": "directory", "locator": str(tree)}).json()["job"]
        clean = _wait_job(http, job["id"], lambda j: j["status"] in ("completed", "failed"))
    assert clean["status"] == "completed"
    third.close()
    assert _drawers(crashed_palace) == _drawers(clean_palace)
    assert len(_drawers(clean_palace)) >= FILES


def test_a_connector_from_another_distribution_mines_with_no_change_to_memcastle(
    tmp_path: Path, daemon_process: Callable[..., Any]
) -> None:
    site = tmp_path / "site"
    package = site / "shouting_connector"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        textwrap.dedent("""
        from pathlib import Path
        from memcastle.connectors.contract import (
            Candidate, CanonicalDocument, OptionSpec, RawDocument, SourceSpec, identify_source)

        class ShoutingConnector:
            name = "shout"
            source_kind = "other"
            default_room = "loud"
            options = {"suffix": OptionSpec("string", "only files with this suffix")}

            def identify(self, source: SourceSpec) -> str:
                return identify_source(self.name, str(source.path.resolve()), dict(source.options))

            def default_wing(self, source: SourceSpec) -> str:
                return "shouts"

            def discover(self, source, cursor):
                suffix = source.options.get("suffix", ".txt")
                return [Candidate(p.name) for p in sorted(source.path.iterdir()) if p.name.endswith(suffix)]

            def read(self, source, candidate):
                text = (source.path / candidate.external_id).read_text()
                return RawDocument(external_id=candidate.external_id, body=text.upper(),
                                   metadata={"volume": 11, "nested": {"loud": True}})

            def normalize(self, raw):
                return CanonicalDocument(kind="other", segments=(raw.body,), name=raw.external_id)
    """)
    )
    dist = site / "shouting_connector-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shouting-connector\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[memcastle.connectors]\nshout = shouting_connector:ShoutingConnector\n")
    source = tmp_path / "words"
    source.mkdir()
    (source / "a.txt").write_text("quiet words")
    (source / "b.md").write_text("not for this connector")

    running = daemon_process(extra_env={"PYTHONPATH": str(site)})
    with running.http() as http:
        names = [c["name"] for c in http.get("/api/connectors").json()["connectors"]]
        assert "shout" in names
        refused = http.post(
            "/api/mine", json={"connector": "shout", "locator": str(source), "options": {"volume": "11"}}
        )
        assert refused.status_code == 400
        assert refused.json()["field"] == "options.volume" and "suffix" in refused.json()["error"]
        job = http.post("/api/mine", json={"connector": "shout", "locator": str(source)}).json()["job"]
        done = _wait_job(http, job["id"], lambda j: j["status"] in ("completed", "failed"))
        assert done["status"] == "completed" and done["result"]["created"] == 1
        drawers = http.get("/api/drawers", params={"wing": "shouts"}).json()["drawers"]
    assert [d["content"] for d in drawers] == ["QUIET WORDS"]
    assert drawers[0]["room"] == "loud"
    assert drawers[0]["source"]["origin"]["metadata"] == {"volume": 11, "nested": {"loud": True}}
