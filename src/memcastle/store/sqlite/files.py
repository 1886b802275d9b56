"""The files of an embedded palace, and the one rule about them that SQLite cannot keep: a palace that was in use
never silently becomes a new, empty one.

SQLite creates a database wherever it is asked to open one, so a palace whose `palace.sqlite3` was deleted, or
truncated to nothing (a failed copy, a sync tool, a full disk), would start again empty: every drawer gone from view,
no warning, writes accepted. `palace.json`, written when the database is first made, marks the folder as a palace in
use; with it (or any other sign of use — saved vectors, a write-ahead log), a missing or empty database stops the
start with what to do instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from memcastle.errors import PalaceDamaged

MARKER = "palace.json"
# What a palace that has been used leaves beside its database, besides the marker (palaces made before it existed).
# Not `tokens.json` nor `preferences.toml`: both are written before a palace's first start.
SIGNS_OF_USE = ("palace.sqlite3-wal", "vectors")

RESTORE_HELP = (
    "restore palace.sqlite3 from a backup, or start a new palace in this folder from an export "
    "(move the folder away, start the daemon, then `memcastle import ARCHIVE`); if the palace really is to start "
    "again empty, delete palace.json"
)


def signs_of_use(palace: Path) -> list[str]:
    """The files that say this folder held a palace in use."""
    found = []
    for name in (MARKER, *SIGNS_OF_USE):
        path = palace / name
        if path.is_dir() and any(path.iterdir()) or path.is_file() and path.stat().st_size > 0:
            found.append(name)
    return found


def refuse_a_lost_database(palace: Path, database: Path) -> None:
    """Refuse to open (and so create) the database of a palace in use whose database is missing or empty."""
    if database.is_file() and database.stat().st_size > 0:
        return
    signs = signs_of_use(palace)
    if not signs:
        return  # a new palace
    state = "empty (0 bytes)" if database.exists() else "missing"
    raise PalaceDamaged(
        f"the palace file {database} is {state}, but {palace} holds a palace that was in use ({', '.join(signs)}); "
        "refusing to start a new, empty palace in its place",
        help=RESTORE_HELP,
    )


def mark_in_use(palace: Path, now: str) -> None:
    """Write the marker once the database exists (for a palace made before the marker, on its next start)."""
    marker = palace / MARKER
    if marker.exists():
        return
    marker.write_text(json.dumps({"palace": "memcastle", "backend": "sqlite", "marked_at": now}) + "\n")
