"""Migration 0009 on a palace mined before event time: each mined version opens at its origin's event time (never
later than it was mined, never before the version it replaced), a superseded one closes when its successor opens,
and record time (`created_at`, `closed_at`) keeps when the palace learnt it. Both backends."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from postgres_support import PostgresServer

from memcastle.store import Store
from memcastle.store.migrate import MIGRATIONS_TABLE, load_migrations
from memcastle.store.sqlite import DB_FILE, SQLiteStore

MINED_1 = "2026-01-10T00:00:00.000000Z"
MINED_2 = "2026-02-10T00:00:00.000000Z"
MINED_3 = "2026-03-10T00:00:00.000000Z"


def origin(occurred_at: str | None) -> str:
    return json.dumps({"connector": "git", "source_id": "s", "document": "d", "chunk": 0, "revision": "r",
                       "metadata": {}, "occurred_at": occurred_at})  # fmt: skip


# seq, id, valid_from (as mined: the mining time), valid_to, supersedes, superseded_by, created_at, origin
ROWS = [
    (1, "v1", MINED_1, MINED_2, None, "v2", MINED_1, origin("2020-01-01T00:00:00.000000Z")),
    (2, "v2", MINED_2, MINED_3, "v1", "v3", MINED_2, origin("2021-01-01T00:00:00.000000Z")),
    # the source's clock went backwards: this version opens when it was mined, as before
    (3, "v3", MINED_3, None, "v2", None, MINED_3, origin("2019-01-01T00:00:00.000000Z")),
    # an event time later than the mining: never valid before the palace could know it... nor after
    (4, "future", MINED_1, None, None, None, MINED_1, origin("2030-01-01T00:00:00.000000Z")),
    (5, "note", MINED_1, None, None, None, MINED_1, None),
]
INSERT = (
    "INSERT INTO drawer(seq, id, room_id, content, content_hash, fingerprint, source_kind, origin, provenance, "
    "valid_from, valid_to, supersedes, superseded_by, created_at, tags) VALUES "
    "(?, ?, 1, 'text', 'h', 'f', 'commit', ?, '{}', ?, ?, ?, ?, ?, '[]')"
)


def rows_for(values: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [(seq, i, o, vf, vt, sup, sby, c) for seq, i, vf, vt, sup, sby, c, o in values]


EXPECTED = {
    "v1": ("2020-01-01T00:00:00.000000Z", "2021-01-01T00:00:00.000000Z", MINED_2),
    "v2": ("2021-01-01T00:00:00.000000Z", MINED_3, MINED_3),
    "v3": (MINED_3, None, None),
    "future": (MINED_1, None, None),
    "note": (MINED_1, None, None),
}


def check(store: Store) -> None:
    for drawer_id, (valid_from, valid_to, closed_at) in EXPECTED.items():
        drawer = store.drawers.get_drawer(drawer_id)
        assert (drawer.valid_from, drawer.valid_to, drawer.closed_at) == (valid_from, valid_to, closed_at), drawer_id
    assert store.drawers.get_drawer("v2").created_at == MINED_2, "record time is kept"
    assert store.schema_version() == len(load_migrations(store.backend))


def test_sqlite_palaces_are_migrated_to_event_time(tmp_path: Path) -> None:
    folder = tmp_path / "palace"
    folder.mkdir()
    conn = sqlite3.connect(folder / DB_FILE)
    conn.execute(MIGRATIONS_TABLE)
    for migration in load_migrations("sqlite")[:8]:
        conn.executescript(migration.sql)
        conn.execute("INSERT INTO schema_migration VALUES (?, ?, ?)", (migration.version, migration.name, MINED_1))
    conn.execute("INSERT INTO wing(id, name, created_at) VALUES (1, 'w', ?)", (MINED_1,))
    conn.execute("INSERT INTO room(id, wing_id, name, created_at) VALUES (1, 1, 'r', ?)", (MINED_1,))
    conn.executemany(INSERT, rows_for(ROWS))
    conn.commit()
    conn.close()
    store = SQLiteStore(folder)
    try:
        check(store)
    finally:
        store.close()


def test_postgres_palaces_are_migrated_to_event_time(postgres_server: PostgresServer) -> None:
    import psycopg

    from memcastle.store.postgres import PostgresStore

    conninfo = postgres_server.create_database(migrated=False)
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(MIGRATIONS_TABLE)
            for migration in load_migrations("postgres")[:8]:
                conn.execute(migration.sql.encode("utf-8"))
                conn.execute(
                    "INSERT INTO schema_migration VALUES (%s, %s, %s)", (migration.version, migration.name, MINED_1)
                )
            conn.execute("INSERT INTO wing(name, created_at) VALUES ('w', %s)", (MINED_1,))
            conn.execute("INSERT INTO room(wing_id, name, created_at) VALUES (1, 'r', %s)", (MINED_1,))
            statement = (
                "INSERT INTO drawer(id, room_id, content, content_hash, fingerprint, source_kind, origin, provenance, "
                "valid_from, valid_to, supersedes, superseded_by, created_at, tags, token_count, search) VALUES "
                "(%s, 1, 'text', 'h', 'f', 'commit', %s, '{}', %s, %s, %s, %s, %s, '[]', 1, ''::tsvector)"
            )
            conn.cursor().executemany(statement, [row[1:] for row in rows_for(ROWS)])
        store = PostgresStore(conninfo, max_connections=2)
        try:
            check(store)
        finally:
            store.close()
    finally:
        postgres_server.drop_database(conninfo)
