"""Looking at an SQLite palace without opening it as a store (no migration, no write): for `memcastle doctor`."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def fts5_problem() -> str | None:
    """Why this Python's SQLite cannot hold a palace's full-text index (FTS5 with the trigram tokenizer); None
    when it can."""
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
    except sqlite3.Error as exc:
        return str(exc)
    return None


def sqlite_version() -> str:
    return sqlite3.sqlite_version


def read_schema_version(database: Path) -> int:
    """The highest migration applied to the palace file, read-only; OSError when it cannot be read."""
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT MAX(version) FROM schema_migration").fetchone()[0] or 0)
    except sqlite3.Error as exc:
        raise OSError(str(exc)) from None
