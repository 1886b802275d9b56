"""Helpers for tests that drive a real daemon through its work: a folder to mine, its jobs, its drawers, a start it
must refuse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from waiting import CEILING

# `python -c` is the console entry without needing the installed script on PATH.
ENTRY = [sys.executable, "-c", "from memcastle.cli.main import run; run()"]


def notes_folder(root: Path, count: int) -> Path:
    folder = root / "storage-notes"
    folder.mkdir()
    for i in range(count):
        (folder / f"note-{i:04d}.md").write_text(f"# Note {i}\n\nThe west wall ledger, line {i}. " * 20 + "\n")
    return folder


def jobs(http: httpx.Client) -> dict[str, dict[str, Any]]:
    return {job["id"]: job for job in http.get("/api/jobs", params={"limit": 200}).json()["jobs"]}


def count_drawers(http: httpx.Client, wing: str) -> int:
    total, after = 0, None
    while True:
        params: dict[str, Any] = {"wing": wing, "limit": 200, **({"after": after} if after else {})}
        page = http.get("/api/drawers", params=params).json()
        total += len(page["drawers"])
        after = page.get("next_after")
        if not after:
            return total


def serve_once(palace: Path, home: Any) -> subprocess.CompletedProcess[str]:
    """`memcastle serve` on a palace it must refuse: it exits by itself, with a message and no traceback."""
    from live_daemon import count_start

    count_start()
    done = subprocess.run(
        [*ENTRY, "--palace", str(palace), "serve", "--port", "0"],
        env=home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none"}),
        capture_output=True,
        text=True,
        timeout=CEILING,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done
