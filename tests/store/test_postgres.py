"""PostgreSQL-only behaviour: migrations under concurrent start-up, lease takeover between daemons, selection by
`store.url`, and the translation of FTS5 match expressions. The shared contract is in test_contract*.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memcastle.app import build, open_store
from memcastle.config import load_settings
from memcastle.errors import ConfigError, Conflict, InvalidRequest, MigrationError
from memcastle.model import JobStatus, NewDrawer, NewJob, Progress
from memcastle.store.migrate import load_migrations
from memcastle.store.postgres import PostgresStore, redact
from memcastle.store.postgres.fulltext import search_text

from .conftest import PostgresServer, as_url


@pytest.fixture
def empty_database(postgres_server: PostgresServer) -> str:
    """A database with no palace in it yet."""
    conninfo = postgres_server.create_database(migrated=False)
    return conninfo


@pytest.fixture
def store_pg(postgres_server: PostgresServer) -> Iterator[PostgresStore]:
    conninfo = postgres_server.create_database()
    store = open_pg(conninfo)
    yield store
    store.close()
    postgres_server.drop_database(conninfo)


def open_pg(conninfo: str) -> PostgresStore:
    return PostgresStore(conninfo, max_connections=3)


def migration_rows(server: PostgresServer, conninfo: str) -> list[tuple[int, str]]:
    return [
        (int(v), str(n))
        for v, n in server.execute(conninfo, "SELECT version, name FROM schema_migration ORDER BY version")
    ]


def tables(server: PostgresServer, conninfo: str) -> set[str]:
    return {
        str(r[0])
        for r in server.execute(conninfo, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    }


# --- migrations -----------------------------------------------------------------------------------


def test_daemons_starting_together_migrate_once(postgres_server: PostgresServer, empty_database: str) -> None:
    opened, errors = [], []

    def start() -> None:
        try:
            opened.append(open_pg(empty_database))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert not errors, errors
        known = load_migrations("postgres")
        assert migration_rows(postgres_server, empty_database) == [(m.version, m.name) for m in known]
        assert all(store.schema_version() == len(known) for store in opened)
    finally:
        for store in opened:
            store.close()


def test_palace_newer_than_this_build_stops_start_up_unchanged(
    postgres_server: PostgresServer, empty_database: str
) -> None:
    open_pg(empty_database).close()
    postgres_server.execute(
        empty_database, "INSERT INTO schema_migration(version, name, applied_at) VALUES (99, 'future', 'x')"
    )
    before = migration_rows(postgres_server, empty_database)
    with pytest.raises(MigrationError) as error:
        open_pg(empty_database)
    assert "99" in str(error.value)
    assert migration_rows(postgres_server, empty_database) == before


def test_failing_migration_is_rolled_back_and_leaves_the_previous_version(
    postgres_server: PostgresServer, empty_database: str
) -> None:
    """A table that clashes with the last statements of migration 0001 makes it fail part-way."""
    postgres_server.execute(empty_database, "CREATE TABLE job (legacy TEXT); INSERT INTO job VALUES ('keep me')")
    with pytest.raises(MigrationError) as error:
        open_pg(empty_database)
    assert "0001" in str(error.value)
    assert "wing" not in tables(postgres_server, empty_database), "the statements before the failure were rolled back"
    assert migration_rows(postgres_server, empty_database) == []
    assert postgres_server.execute(empty_database, "SELECT legacy FROM job") == [("keep me",)]


def test_an_unreachable_server_is_a_migration_error_without_the_password(tmp_path: Path) -> None:
    socket_dir = tmp_path / "nothing-listens-here"
    socket_dir.mkdir()
    with pytest.raises(MigrationError) as error:
        PostgresStore(f"postgresql://someone:s3cret@/palace?host={socket_dir}", connect_timeout=2)
    assert "s3cret" not in str(error.value) and "someone@" in str(error.value)


# --- selection ------------------------------------------------------------------------------------


def test_store_url_selects_postgres_and_the_palace_directory_still_exists(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    conninfo = postgres_server.create_database()
    palace_dir = tmp_path / "palace"
    settings = load_settings(
        flags={"palace": str(palace_dir)}, env={"MEMCASTLE_STORE_URL": as_url(conninfo)}, config_file=None
    )
    store = open_store(settings)
    try:
        assert store.backend == "postgres"
        assert palace_dir.is_dir(), "preferences.toml and tokens.json still live in the palace directory"
        assert not (palace_dir / "palace.sqlite3").exists()
    finally:
        store.close()


def test_a_store_url_that_is_not_postgres_is_a_config_error(tmp_path: Path) -> None:
    settings = load_settings(
        flags={"palace": str(tmp_path / "p"), "store.url": "mysql://x/y"}, env={}, config_file=None
    )
    with pytest.raises(ConfigError) as error:
        open_store(settings)
    assert "store.url" in str(error.value)


def test_a_palace_built_on_postgres_files_and_finds_drawers(postgres_server: PostgresServer, tmp_path: Path) -> None:
    from memcastle.services import SearchRequest

    conninfo = postgres_server.create_database()
    settings = load_settings(
        flags={
            "palace": str(tmp_path / "palace"),
            "store.url": as_url(conninfo),
            "embeddings.provider": "none",
            "jobs.drain_seconds": 3.0,
        },
        env={},
        config_file=None,
    )
    palace = build(settings)
    palace.start()
    try:
        palace.store.add_drawer(NewDrawer(wing="w", room="r", content="the lighthouse keeper's log"))
        result = palace.services.search.search(SearchRequest(query="lighthouses", ranking="lexical"))
        assert [hit.drawer.content for hit in result.hits] == ["the lighthouse keeper's log"]
        assert palace.services.status.status()["store"]["backend"] == "postgres"
    finally:
        palace.stop()


def test_the_location_never_shows_the_password() -> None:
    shown = redact("postgresql://mc:hunter2@db.internal:6543/palace?sslmode=require")
    assert shown == "postgresql://mc@db.internal:6543/palace"
    assert "hunter2" not in redact("host=/run/pg user=mc password=hunter2 dbname=p")


# --- leases between daemons -----------------------------------------------------------------------


def test_a_second_daemon_takes_over_a_job_whose_lease_expired(postgres_server: PostgresServer) -> None:
    conninfo = postgres_server.create_database()
    killed, survivor = open_pg(conninfo), open_pg(conninfo)
    try:
        job, _ = killed.create_job(NewJob(kind="mine"))
        held = killed.claim_next_job("daemon-a", 0.0, ["mine"])  # a lease that is already over: daemon A died
        assert held is not None and held.id == job.id
        taken = survivor.claim_next_job("daemon-b", 30, ["mine"])
        assert taken is not None and taken.id == job.id
        assert taken.status is JobStatus.RUNNING and taken.lease_owner == "daemon-b"
        assert taken.attempt == 2 and taken.recovery_attempts == 1
        # The old owner is fenced off: its checkpoint and its finish are refused.
        with pytest.raises(Conflict):
            killed.save_job_checkpoint(job.id, "daemon-a", {"at": 1}, Progress(current=1), 30)
        with pytest.raises(Conflict):
            killed.transition_job(job.id, JobStatus.COMPLETED, owner="daemon-a")
        assert survivor.save_job_checkpoint(job.id, "daemon-b", {"at": 2}, Progress(current=2), 30).checkpoint == {
            "at": 2
        }
    finally:
        killed.close()
        survivor.close()


def test_a_live_lease_is_not_taken_over(store_pg: PostgresStore) -> None:
    job, _ = store_pg.create_job(NewJob(kind="mine"))
    assert store_pg.claim_next_job("daemon-a", 60, ["mine"]) is not None
    assert store_pg.claim_next_job("daemon-b", 60, ["mine"]) is None
    assert store_pg.get_job(job.id).lease_owner == "daemon-a"


def test_takeovers_spend_the_recovery_budget_then_fail_the_job(store_pg: PostgresStore) -> None:
    job, _ = store_pg.create_job(NewJob(kind="mine"))
    for daemon in range(4):
        claimed = store_pg.claim_next_job(f"daemon-{daemon}", 0.0, ["mine"])
        assert claimed is not None and claimed.recovery_attempts == daemon
    assert store_pg.claim_next_job("daemon-last", 0.0, ["mine"]) is None
    failed = store_pg.get_job(job.id)
    assert failed.status is JobStatus.FAILED and failed.lease_owner is None
    assert failed.error is not None and "recovery budget" in failed.error


# --- values PostgreSQL cannot hold as such --------------------------------------------------------


def test_nul_in_content_round_trips_and_elsewhere_is_a_bad_request(store_pg: PostgresStore) -> None:
    drawer = store_pg.add_drawer(NewDrawer(wing="w", room="r", content="before\x00after"))
    assert store_pg.get_drawer(drawer.id).content == "before\x00after"
    with pytest.raises(InvalidRequest):
        store_pg.add_drawer(NewDrawer(wing="w\x00", room="r", content="x"))


def test_each_vector_dimension_gets_an_hnsw_index(postgres_server: PostgresServer) -> None:
    conninfo = postgres_server.create_database()
    store = open_pg(conninfo)
    try:
        drawer = store.add_drawer(NewDrawer(wing="w", room="r", content="x"))
        store.put_embeddings("m", [(drawer.id, np.eye(2, 5, dtype=np.float32))])
        indexes = {
            r[0]
            for r in postgres_server.execute(conninfo, "SELECT indexdef FROM pg_indexes WHERE tablename = 'embedding'")
        }
        assert any("hnsw" in i and "vector(5)" in i for i in indexes), indexes
    finally:
        store.close()


# --- the full-text dialect ----------------------------------------------------------------------


def test_search_text_folds_like_the_fts5_tokenizer() -> None:
    assert search_text("The Castles, were RUNNING!") == "the castles were running"
    assert search_text("Crème-Brûlée_x 3.14") == "creme brulee x 3 14"
    assert search_text("Straße") == "strasse"
    assert search_text('\x00"*()') == ""
