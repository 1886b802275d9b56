"""Moving up: `memcastle migrate --to postgresql://…` copies an embedded palace into PostgreSQL, and the copy answers
every search and fact question as the original does."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcastle.app import Palace, build
from memcastle.clock import utc_now
from memcastle.config import load_settings
from memcastle.errors import Conflict
from memcastle.model import ANY_TIME, JobStatus, LexicalQuery, NewDrawer, NewJob, Scope
from memcastle.model.requests import FactCorrection, FactSpec, MineRequest
from memcastle.services import SearchRequest
from memcastle.store import PALACE_TABLES, Store
from memcastle.store.copy import copy_palace
from memcastle.store.postgres import PostgresStore
from memcastle.store.sqlite import SQLiteStore

from .conftest import PostgresServer, as_url

EMBEDDER = Path(__file__).resolve().parents[1] / "search" / "embedder.py"
# Tables a palace copy leaves behind on purpose: the schema's own bookkeeping, the jobs, idempotency keys (a day of
# retries), SQLite's FTS5 internals.
# request_key: a day of retries; read_audit: this palace's readers, like its jobs; webhook_delivery: a week of
# delivery ids seen, against replays to this daemon
NOT_COPIED = {
    "schema_migration",
    "job",
    "sqlite_sequence",
    "request_key",
    "read_audit",
    "read_audit_item",
    "webhook_delivery",
    "index_merge_owed",  # SQLite's own full-text upkeep: PostgreSQL's index lives in the row
    "drawer_context_owed",  # the pass over a palace stored before: an import asks for its own
}


def open_palace(palace_dir: Path, url: str = "") -> Palace:
    settings = load_settings(
        flags={
            "palace": str(palace_dir),
            "store.url": url,
            "jobs.drain_seconds": 3.0,
            "embeddings.provider": "command",
            "embeddings.model": "bag-of-words",
            "embeddings.command": [sys.executable, str(EMBEDDER)],
        },
        env={},
        config_file=None,
    )
    palace = build(settings)
    palace.start()
    return palace


def settle(palace: Palace, timeout: float = 60) -> None:
    """Until no job is queued or running and nothing waits for embeddings or extraction."""
    services = palace.services
    deadline = time.monotonic() + timeout
    while True:
        counts = services.store.jobs.count_jobs()
        if (
            counts["queued"] == counts["running"] == 0
            and services.status.embedding_status().pending == 0
            and services.status.extraction_status().pending == 0
        ):
            return
        assert time.monotonic() < deadline, f"the palace did not settle: {counts}"
        time.sleep(0.05)


def hits(palace: Palace, request: SearchRequest) -> list[tuple[str, float]]:
    result = palace.services.search.search(request)
    return [(hit.drawer.id, hit.score) for hit in result.hits]


def all_rows(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every copied table's rows, vectors as lists so that rows compare with ==."""
    out = {}
    for table in PALACE_TABLES:
        rows = []
        for row in store.copy.export_rows(table):
            item = dict(row)
            if "vector" in item:
                item["vector"] = np.asarray(item["vector"], dtype=np.float32).tolist()
            for key, value in item.items():
                if isinstance(value, bool):
                    item[key] = int(value)  # booleans are 0/1 in SQLite
                elif isinstance(value, memoryview):
                    item[key] = bytes(value)
            rows.append(item)
        out[table] = rows
    return out


# --- the tables -----------------------------------------------------------------------------------


def test_every_table_of_both_schemas_is_copied_or_left_behind_on_purpose(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """A new migration that adds a table must decide whether `memcastle migrate` copies it."""
    store = SQLiteStore(tmp_path / "palace")
    try:
        sqlite_tables = {
            r[0]
            for r in store._reader().execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'drawer_fts%'"
            )
        }
    finally:
        store.close()
    conninfo = postgres_server.create_database()
    try:
        pg_tables = {
            str(r[0])
            for r in postgres_server.execute(
                conninfo, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        }
    finally:
        postgres_server.drop_database(conninfo)
    assert sqlite_tables - NOT_COPIED == set(PALACE_TABLES)
    assert pg_tables - NOT_COPIED == set(PALACE_TABLES)


@pytest.fixture
def pg_conninfo(postgres_server: PostgresServer) -> Iterator[str]:
    conninfo = postgres_server.create_database()
    yield conninfo
    postgres_server.drop_database(conninfo)


def test_rows_survive_sqlite_to_postgres_to_sqlite_exactly(tmp_path: Path, pg_conninfo: str) -> None:
    """Exact content (NUL included), JSON text as written, booleans, vectors, ids and sequence numbers."""
    first = SQLiteStore(tmp_path / "first")
    odd = first.drawers.add_drawer(NewDrawer(wing="w", room="r", content="bytes \x00 in the middle", tags=("b", "a")))
    plain = first.drawers.add_drawer(NewDrawer(wing="w", room="r", content="a plain drawer"))
    first.drawers.invalidate_drawer(plain.id)
    tokyo = first.drawers.add_drawer(NewDrawer(wing="w", room="r", content="我们在东京都的办公室"))
    rng = np.random.default_rng(1)
    first.embeddings.put_embeddings(
        "m", [(odd.id, rng.standard_normal((2, 5)).astype(np.float32)), (plain.id, np.zeros((0, 5), dtype=np.float32))]
    )
    first.jobs.create_job(NewJob(kind="verify"))  # jobs stay behind
    middle = PostgresStore(pg_conninfo, max_connections=2)
    last = SQLiteStore(tmp_path / "last")
    try:
        there = copy_palace(first, middle)
        back = copy_palace(middle, last)
        assert there.tables == back.tables and there.tables["drawer"] == 3 and there.tables["embedding"] == 2
        assert all_rows(first) == all_rows(middle) == all_rows(last)
        assert middle.drawers.get_drawer(odd.id).content == "bytes \x00 in the middle"
        for store in (middle, last):  # the full-text index is the target's own: a trigger, or a tsvector
            assert [c.drawer_id for c in store.search.lexical_candidates(LexicalQuery(("middle",)), Scope(), 5)] == [
                odd.id
            ]
            assert [
                c.drawer_id for c in store.search.lexical_candidates(LexicalQuery(("plain",)), Scope(when=ANY_TIME), 5)
            ] == [plain.id]
            # A word of a script written without spaces, inside a sentence: the target indexes it spaced (ADR 0036).
            assert [c.drawer_id for c in store.search.lexical_candidates(LexicalQuery(("东京",)), Scope(), 5)] == [
                tokyo.id
            ]
        assert middle.jobs.list_jobs(None, None, 10) == [] and last.jobs.list_jobs(None, None, 10) == []
        # Sequences continue after the copied ids: new rows get new numbers on both backends.
        for store in (middle, last):
            fresh = store.drawers.add_drawer(NewDrawer(wing="w", room="r2", content="written after the copy"))
            store.embeddings.put_embeddings("m", [(fresh.id, rng.standard_normal((1, 5)).astype(np.float32))])
            assert store.embeddings.load_embeddings("m", 0, 5, limit=100).ids == [odd.id, odd.id, fresh.id]
    finally:
        first.close()
        middle.close()
        last.close()


def test_a_target_that_holds_anything_is_refused_and_left_as_it_was(tmp_path: Path, pg_conninfo: str) -> None:
    source = SQLiteStore(tmp_path / "source")
    target = PostgresStore(pg_conninfo, max_connections=2)
    try:
        source.drawers.add_drawer(NewDrawer(wing="w", room="r", content="to copy"))
        job, _ = target.jobs.create_job(NewJob(kind="verify"))
        with pytest.raises(Conflict) as refused:
            copy_palace(source, target)
        assert "already holds a palace" in str(refused.value)
        assert target.drawers.count_drawers() == 0 and [j.id for j in target.jobs.list_jobs(None, None, 5)] == [job.id]
    finally:
        source.close()
        target.close()


# --- memcastle migrate, end to end ------------------------------------------------------------------


def test_migrate_copies_a_palace_that_then_answers_every_search_and_fact_as_before(
    tmp_path: Path,
    postgres_server: PostgresServer,
    pg_conninfo: str,
    cli_runner: Any,
    xdg_home: Any,
    daemon: Any,
) -> None:
    source_dir = tmp_path / "embedded"
    folder = tmp_path / "mined"
    folder.mkdir()
    for index, text in enumerate(
        [
            "Deploy checklist: run the migration, then restart the workers.",
            "Incident review: the cache stampede after the release.",
            "Budget planning for the search team next quarter.",
            "Travel notes: the harbour ferry leaves at nine.",
        ]
    ):
        (folder / f"doc{index}.md").write_text(text + "\n", encoding="utf-8")

    palace = open_palace(source_dir)
    try:
        services = palace.services
        lighthouse = services.drawers.save_note(
            "The lighthouse keeper logs every storm at night.", wing="coast", room="log", tags=("sea",)
        ).drawer
        services.drawers.save_note("The lighthouse keeper logs every storm at night!", wing="coast", room="log")
        services.drawers.save_note("Alice works on Apollo with Bob.", wing="team")
        tides = services.drawers.save_note("Tide tables for the harbour in spring.", wing="coast", room="tides").drawer
        mine = services.mining.submit_mine(MineRequest("notes", str(folder), wing="work")).job
        settle(palace)
        before = utc_now()
        time.sleep(0.01)
        summer = services.drawers.supersede_drawer(tides.id, "Tide tables for the harbour in summer.")
        fact = services.facts.add(FactSpec(subject="Carol", predicate="works_on", object="Hermes"))
        services.facts.supersede(fact.id, FactCorrection(object="Athena", reason="moved teams"))
        other = services.facts.add(FactSpec(subject="Dave", predicate="uses", object="Postgres"))
        services.facts.link(other.id, fact.id, "refines", "same project")
        settle(palace)
        assert services.jobs.get_job(mine.id).status is JobStatus.COMPLETED
        requests = {
            "lexical": SearchRequest(query="lighthouse storm", ranking="lexical"),
            "semantic": SearchRequest(query="lighthouse storm keeper", ranking="semantic"),
            "hybrid": SearchRequest(query="harbour tide tables", ranking="hybrid"),
            "scoped": SearchRequest(query="the", ranking="hybrid", wing="work"),
            "as_of": SearchRequest(query="tide tables harbour", ranking="hybrid", as_of=before),
            "historical": SearchRequest(query="tide tables harbour", ranking="hybrid", include_historical=True),
        }
        expected = {name: hits(palace, request) for name, request in requests.items()}
        facts = services.facts.list_facts(limit=200)
        entities = services.facts.list_entities(None, None, limit=200)
        duplicates = services.drawers.duplicates(lighthouse.id)
        history = services.drawers.drawer_history(summer.id)
        drawer_ids = [row["id"] for row in palace.store.copy.export_rows("drawer")]
        drawers = palace.store.drawers.get_drawers(drawer_ids)
        status = services.status.status().to_json()
    finally:
        palace.stop()
    assert expected["as_of"][0][0] == tides.id and {d for d, _ in expected["historical"][:2]} == {tides.id, summer.id}
    assert all(expected.values()), {name: len(found) for name, found in expected.items()}
    assert len(facts) >= 3 and duplicates and status["embeddings"]["pending"] == 0

    url = as_url(pg_conninfo)
    copied = cli_runner(["--palace", str(source_dir), "migrate", "--to", url], env=xdg_home.env())
    assert copied.returncode == 0, copied.stderr
    report = json.loads(copied.stdout)
    assert report["tables"]["drawer"] == status["drawers_total"] == len(drawer_ids)
    assert report["tables"]["embedding"] > 0 and report["tables"]["assertion"] >= 3
    assert report["tables"]["drawer_link"] > 0 and report["tables"]["document"] == 4
    assert report["target"].startswith("postgresql://") and report["source"].endswith("palace.sqlite3")

    moved = open_palace(tmp_path / "scaled", url)
    try:
        services = moved.services
        assert services.status.status().backend == "postgres"
        # Nothing to redo: every drawer is embedded and read for facts, and no job was queued at start-up.
        assert services.status.embedding_status().pending == 0 and services.status.extraction_status().pending == 0
        assert sum(services.store.jobs.count_jobs().values()) == 0
        assert moved.store.drawers.get_drawers(drawer_ids) == drawers
        assert services.drawers.drawer_history(summer.id) == history
        for name, request in requests.items():
            got = hits(moved, request)
            assert [d for d, _ in got] == [d for d, _ in expected[name]], name
            assert np.allclose([s for _, s in got], [s for _, s in expected[name]], rtol=1e-6), name
        assert services.facts.list_facts(limit=200) == facts
        assert services.facts.list_entities(None, None, limit=200) == entities
        assert services.drawers.duplicates(lighthouse.id) == duplicates
        # The copy is a working palace: a new note is filed, embedded and found.
        saved = services.drawers.save_note("A brand new note about the lighthouse lamp.", wing="coast", room="log")
        new = saved.drawer
        assert saved.created
        settle(moved)
        assert new.id in [d for d, _ in hits(moved, SearchRequest(query="lighthouse lamp", ranking="semantic"))]
        # Mining the same folder again on the copy changes nothing: the documents and cursors came along.
        again = services.mining.submit_mine(MineRequest("notes", str(folder), wing="work")).job
        settle(moved)
        result = services.jobs.get_job(again.id).result or {}
        assert (result.get("documents"), result.get("unchanged"), result.get("created")) == (4, 4, 0)
    finally:
        moved.stop()

    # A second copy into the same database is refused, and so is a copy of a palace a daemon is serving.
    refused = cli_runner(["--palace", str(source_dir), "migrate", "--to", url], env=xdg_home.env())
    assert refused.returncode == 1 and "already holds a palace" in refused.stderr
    serving = daemon(palace=source_dir)
    busy = serving.cli("migrate", "--to", as_url(postgres_server.create_database()))
    assert busy.returncode == 1 and "served by pid" in busy.stderr


def test_migrate_refuses_a_directory_without_a_palace_and_a_url_that_is_not_postgres(
    tmp_path: Path, cli_runner: Any, xdg_home: Any
) -> None:
    empty = cli_runner(
        ["--palace", str(tmp_path / "nothing"), "migrate", "--to", "postgresql://x@/y"], env=xdg_home.env()
    )
    assert empty.returncode == 1 and "no embedded palace" in empty.stderr
    assert not (tmp_path / "nothing" / "palace.sqlite3").exists()
    wrong = cli_runner(["--palace", str(tmp_path / "nothing"), "migrate", "--to", "mysql://x/y"], env=xdg_home.env())
    assert wrong.returncode == 1 and "postgresql://" in wrong.stderr
