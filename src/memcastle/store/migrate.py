"""Versioned schema migrations: numbered SQL files per backend, applied in order at start-up."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(backend: str) -> list[Migration]:
    """The migrations shipped for `backend`, oldest first."""
    folder = resources.files("memcastle.store").joinpath("migrations", backend)
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations for {backend} are not numbered 1..n: {versions}")
    return found
