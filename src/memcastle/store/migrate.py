"""Versioned schema migrations: numbered SQL files per backend, applied in order at start-up."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from memcastle.errors import MigrationError

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

# Which migrations a palace has applied; the same table on every backend.
MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migration "
    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)


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
        raise MigrationError(f"migrations for {backend} are not numbered 1..n: {versions}")
    return found


def pending(applied: set[int], backend: str, location: str) -> list[Migration]:
    """The migrations `location` still needs, oldest first; refused when it is newer than this code knows."""
    migrations = load_migrations(backend)
    newest = max((m.version for m in migrations), default=0)
    if applied and max(applied) > newest:
        raise MigrationError(
            f"{location} has schema version {max(applied)}, newer than this MemCastle knows ({newest})",
            help="upgrade MemCastle to serve this palace",
        )
    return [m for m in migrations if m.version not in applied]


def failed(migration: Migration, location: str, detail: str) -> MigrationError:
    """The error a failed migration stops start-up with."""
    return MigrationError(
        f"migration {migration.version:04d}_{migration.name} failed on {location}: {detail}",
        help="the palace was left at its previous version; nothing was served",
    )
