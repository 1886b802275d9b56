"""Randomized kill -9 against a reference: a palace that loses its daemon again and again, at random moments, while
two mines run and a client keeps writing notes, ends exactly where an undisturbed palace does.

The reference is the same corpus mined by a daemon left alone. The kills come at random moments (the seed is
printed, and `MEMCASTLE_KILL_SEED` replays a run). The writer retries a note whose answer it never got with the same
idempotency key, as a careful client does. At the end the interrupted palace must hold exactly the reference's
mined drawers — no duplicate, none missing, none closed — and every note once.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from waiting import CEILING, wait_until

pytestmark = pytest.mark.slow

KILLS = 6
NOTES = 150


# Enough that the mines still run when the kills come (1,200 files and 400 notes were mined in about a second once the
# copies were linked after the mine).
CODE_FILES = 4800
NOTE_FILES = 1600


def corpus(root: Path) -> tuple[Path, Path]:
    code, notes = root / "code", root / "notes"
    for index in range(CODE_FILES):
        folder = code / f"pkg{index // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def f{index}_{n}(x):\n    return x * {n} + {index}" for n in range(40))
        (folder / f"module_{index:04d}.py").write_text(f'"""Module {index}."""\n\n{body}\n')
    notes.mkdir()
    for index in range(NOTE_FILES):
        (notes / f"note-{index:04d}.md").write_text(f"# Note {index}\n\n" + f"The granary count, entry {index}. " * 90)
    return code, notes


def mined(palace: Path) -> set[tuple[str, str, int]]:
    """(content hash, document, chunk) of every mined drawer; fails on a duplicate or a closed one."""
    with sqlite3.connect(palace / "palace.sqlite3") as db:
        rows = db.execute("SELECT content_hash, origin, valid_to FROM drawer WHERE origin IS NOT NULL").fetchall()
    found = {(digest, json.loads(origin)["document"], json.loads(origin)["chunk"]) for digest, origin, _ in rows}
    assert len(found) == len(rows), "a mined drawer was filed twice"
    assert all(valid_to is None for _, _, valid_to in rows), "a mined drawer was closed"
    return found


def notes_written(palace: Path) -> list[str]:
    with sqlite3.connect(palace / "palace.sqlite3") as db:
        rows = db.execute(
            "SELECT d.content FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            "WHERE w.name = 'under-fire'"
        ).fetchall()
    return sorted(content for (content,) in rows)


def start_mines(http: httpx.Client, code: Path, notes: Path) -> list[str]:
    return [
        http.post("/api/mine", json={"connector": source, "locator": str(path)}).json()["job"]["id"]
        for source, path in (("directory", code), ("notes", notes))
    ]


def mine_at_work(address: str, job_ids: list[str]) -> bool:
    """Whether one of the mines runs now, or every one has ended (nothing left to interrupt)."""
    try:
        with httpx.Client(base_url=address, timeout=10, trust_env=False) as http:
            states = [http.get(f"/api/jobs/{job_id}").json()["status"] for job_id in job_ids]
    except (httpx.HTTPError, ValueError, KeyError):
        return False  # the daemon is still coming up
    return "running" in states or all(state in ("completed", "failed", "cancelled") for state in states)


def finish(http: httpx.Client, job_ids: list[str]) -> None:
    """Wait for the mines; one that a crash budget failed is retried, as its user would."""

    def done() -> bool:
        for job_id in job_ids:
            job = http.get(f"/api/jobs/{job_id}").json()
            if job["status"] == "failed":
                assert "recovery budget" in (job["error"] or ""), job["error"]
                http.post(f"/api/jobs/{job_id}/retry", json={})
                return False
            if job["status"] != "completed":
                return False
        return True

    wait_until(done, what="the mines to complete")


def test_random_kills_end_exactly_where_an_undisturbed_run_does(
    daemon_process: Callable[..., Any], tmp_path: Path
) -> None:
    seed = int(os.environ.get("MEMCASTLE_KILL_SEED") or random.SystemRandom().randrange(1 << 30))
    print(f"MEMCASTLE_KILL_SEED={seed}")
    rng = random.Random(seed)
    code, notes = corpus(tmp_path / "corpus")

    reference = tmp_path / "reference"
    quiet = daemon_process(palace=reference)
    with quiet.http(timeout=CEILING) as http:
        finish(http, start_mines(http, code, notes))
    quiet.close()
    quiet.proc.wait(timeout=CEILING)

    palace = tmp_path / "under-fire"
    current = daemon_process(palace=palace)
    with current.http(timeout=CEILING) as http:
        jobs = start_mines(http, code, notes)
    address: list[str] = [current.address]
    stop = threading.Event()
    written: list[str] = []

    def write_notes() -> None:
        """Each note until it is acknowledged, under one idempotency key, whatever happens to the daemon."""
        for index in range(NOTES):
            content = f"under fire, note {index}"
            key = f"note-{seed}-{index}"
            while not stop.is_set():
                try:
                    answer = httpx.post(
                        address[0] + "/api/notes",
                        json={"content": content, "wing": "under-fire"},
                        headers={"Idempotency-Key": key},
                        timeout=10,
                        trust_env=False,
                    )
                except httpx.HTTPError:
                    time.sleep(0.05)  # the daemon is down: the same key again once it is back
                    continue
                if answer.status_code in (200, 201):
                    written.append(content)
                    break
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.08))

    writer = threading.Thread(target=write_notes)
    writer.start()
    try:
        for _ in range(KILLS):
            # A kill is meant to meet a mine at work: wait (on a loaded machine a restart takes a while) until one
            # runs, unless every mine has ended; then strike at a random moment of its work.
            wait_until(lambda: mine_at_work(address[0], jobs), timeout=60, what="a mine at work, or every one ended")
            time.sleep(rng.uniform(0.05, 1.5))
            current.kill()
            current = daemon_process(palace=palace)
            address[0] = current.address
        writer.join(timeout=CEILING * 2)
        assert not writer.is_alive(), "the writer never got every note acknowledged"
    finally:
        stop.set()
        writer.join(timeout=CEILING)
    with current.http(timeout=CEILING) as http:
        finish(http, jobs)
        interrupted = [http.get(f"/api/jobs/{job_id}").json()["recovery_attempts"] for job_id in jobs]
    assert any(interrupted), "no kill met a running mine: the run proved nothing"
    current.close()
    current.proc.wait(timeout=CEILING)

    assert mined(palace) == mined(reference)
    assert len(written) == NOTES
    assert notes_written(palace) == sorted(written), "a note was lost or written twice"
