"""Emergency checkpoints written while no daemon answers: one JSON file each in a folder beside the palace's
registry file (`<key>.spool/`), filed by the daemon when it next starts. A file is complete or absent (written to a
temporary name, then renamed), so a process killed mid-write leaves nothing half-read."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memcastle.runtime.daemons import registry_file


def spool_dir(states: Path, palace: Path) -> Path:
    return registry_file(states, palace).with_suffix(".spool")


def spool(states: Path, palace: Path, payload: dict[str, Any]) -> Path:
    """Keep `payload` (an emergency checkpoint's body) until a daemon of `palace` files it; its path."""
    folder = spool_dir(states, palace)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{time.time_ns()}-{os.getpid()}.json"
    temporary = path.with_suffix(".tmp")
    with temporary.open("w", encoding="utf-8") as sink:
        json.dump(payload, sink)
        sink.flush()
        os.fsync(sink.fileno())
    temporary.replace(path)
    return path


def spooled(states: Path, palace: Path) -> Iterator[tuple[Path, Any]]:
    """Each spooled payload, oldest first, with its file (to delete once filed); an unreadable file is yielded
    with None."""
    folder = spool_dir(states, palace)
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.json")):
        try:
            yield path, json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            yield path, None


def set_aside(path: Path) -> Path:
    """A spooled file the daemon could not file: renamed `.rejected`, kept for a person to look at."""
    target = path.with_suffix(".rejected")
    path.replace(target)
    return target
