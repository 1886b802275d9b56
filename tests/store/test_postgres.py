"""PostgreSQL-only behaviour: migrations under concurrent start-up, lease takeover between daemons, selection by
`store.url`, and the translation of FTS5 match expressions. The shared contract is in test_contract*.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcastle.app import build, open_store
from memcastle.config import load_settings
from memcastle.errors import ConfigError, Conflict, InvalidRequest, MigrationError
from memcastle.model import ANY_TIME, Between, JobStatus, LexicalQuery, NewDrawer, NewJob, Progress, Scope
from memcastle.store.migrate import load_migrations
from memcastle.store.postgres import PostgresStore, redact
from memcastle.store.postgres.fulltext import search_text

from .conftest import PostgresServer, as_url
from .rankings import same_ranking


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
        palace.store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="the lighthouse keeper's log"))
        result = palace.services.search.search(SearchRequest(query="lighthouses", ranking="lexical"))
        assert [hit.drawer.content for hit in result.hits] == ["the lighthouse keeper's log"]
        assert palace.services.status.status().backend == "postgres"
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
        job, _ = killed.jobs.create_job(NewJob(kind="mine"))
        held = killed.jobs.claim_next_job("daemon-a", 0.0, ["mine"])  # a lease that is already over: daemon A died
        assert held is not None and held.id == job.id
        taken = survivor.jobs.claim_next_job("daemon-b", 30, ["mine"])
        assert taken is not None and taken.id == job.id
        assert taken.status is JobStatus.RUNNING and taken.lease_owner == "daemon-b"
        assert taken.attempt == 2 and taken.recovery_attempts == 1
        # The old owner is fenced off: its checkpoint and its finish are refused.
        with pytest.raises(Conflict):
            killed.jobs.save_job_checkpoint(job.id, "daemon-a", {"at": 1}, Progress(current=1), 30)
        with pytest.raises(Conflict):
            killed.jobs.transition_job(job.id, JobStatus.COMPLETED, owner="daemon-a")
        assert survivor.jobs.save_job_checkpoint(job.id, "daemon-b", {"at": 2}, Progress(current=2), 30).checkpoint == {
            "at": 2
        }
    finally:
        killed.close()
        survivor.close()


def test_a_live_lease_is_not_taken_over(store_pg: PostgresStore) -> None:
    job, _ = store_pg.jobs.create_job(NewJob(kind="mine"))
    assert store_pg.jobs.claim_next_job("daemon-a", 60, ["mine"]) is not None
    assert store_pg.jobs.claim_next_job("daemon-b", 60, ["mine"]) is None
    assert store_pg.jobs.get_job(job.id).lease_owner == "daemon-a"


def test_takeovers_spend_the_recovery_budget_then_fail_the_job(store_pg: PostgresStore) -> None:
    job, _ = store_pg.jobs.create_job(NewJob(kind="mine"))
    for daemon in range(4):
        claimed = store_pg.jobs.claim_next_job(f"daemon-{daemon}", 0.0, ["mine"])
        assert claimed is not None and claimed.recovery_attempts == daemon
    assert store_pg.jobs.claim_next_job("daemon-last", 0.0, ["mine"]) is None
    failed = store_pg.jobs.get_job(job.id)
    assert failed.status is JobStatus.FAILED and failed.lease_owner is None
    assert failed.error is not None and "recovery budget" in failed.error


# --- values PostgreSQL cannot hold as such --------------------------------------------------------


def test_nul_in_content_round_trips_and_elsewhere_is_a_bad_request(store_pg: PostgresStore) -> None:
    drawer = store_pg.drawers.add_drawer(NewDrawer(wing="w", room="r", content="before\x00after"))
    assert store_pg.drawers.get_drawer(drawer.id).content == "before\x00after"
    with pytest.raises(InvalidRequest):
        store_pg.drawers.add_drawer(NewDrawer(wing="w\x00", room="r", content="x"))


def test_each_vector_dimension_gets_an_hnsw_index(postgres_server: PostgresServer) -> None:
    conninfo = postgres_server.create_database()
    store = open_pg(conninfo)
    try:
        drawer = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="x"))
        store.embeddings.put_embeddings("m", [(drawer.id, np.eye(2, 5, dtype=np.float32))])
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


# --- the lexical leg: statistics kept in memory, MaxScore for any-term queries ----------------------------


def exhaustive_lexical(store: PostgresStore, query: LexicalQuery, scope: Scope, limit: int) -> list[tuple[str, float]]:
    """The reference: statistics counted afresh, every matching drawer scored."""
    from memcastle.clock import utc_now
    from memcastle.store.postgres.corpus import Statistics
    from memcastle.store.postgres.fulltext import bm25_sql
    from memcastle.store.sql.filters import filter_sql

    words = [search_text(t) for t in query.terms]
    where, params = filter_sql(scope, utc_now())
    with store._read() as tx:
        corpus = tx.one(  # a row's length: its own words and its neighbours' (ADR 0056)
            "SELECT count(*) AS n, avg(d.token_count + coalesce(c.token_count, 0))::float8 AS avgdl "
            "FROM drawer d LEFT JOIN drawer_context c ON c.seq = d.seq"
        )
        assert corpus is not None
        frequencies = []
        for w in words:
            row = tx.one(
                "SELECT count(*) AS n FROM drawer WHERE search @@ phraseto_tsquery('memcastle_english', ?)", (w,)
            )
            assert row is not None
            frequencies.append(int(row["n"]))
        idf = Statistics(int(corpus["n"]), float(corpus["avgdl"]), tuple(frequencies)).idf()
        sql = bm25_sql(len(words), len(words), query.require_all, where)
        rows = tx.all(sql, (words, idf, *words, *params, float(corpus["avgdl"]), limit))
    return [(r["id"], float(r["score"])) for r in rows]


def test_any_term_queries_rank_as_scoring_every_match_would(store_pg: PostgresStore) -> None:
    """MaxScore scores the rarest terms' drawers first and stops once nothing left out could enter the limit: the
    same drawers and scores as scoring every match, for narrow and broad scopes, closed drawers and ties."""
    words = ["drawbridge", "moat", "tower", "keep", "banner", "gate"]
    for i in range(240):
        text = " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 5))
        wing = "rare" if i % 40 == 0 else "common"
        drawer = store_pg.drawers.add_drawer(NewDrawer(wing=wing, room=f"r{i % 3}", content=f"{text} castle"))
        if i % 7 == 0:
            store_pg.drawers.invalidate_drawer(drawer.id)
    for content in ("moat moat moat castle", "moat moat moat castle", "a lone zeppelin"):
        store_pg.drawers.add_drawer(NewDrawer(wing="common", room="r0", content=content))
    cases = [
        (("moat", "banner", "castle"), Scope()),
        (("zeppelin", "castle"), Scope()),
        (("gate", "keep", "drawbridge"), Scope(room="r2", when=ANY_TIME)),
        (("tower", "zeppelin", "moat"), Scope(wing="rare")),
        (("moat", "tower"), Scope()),
    ]
    for terms, scope in cases:
        for require_all in (False, True):
            query = LexicalQuery(terms, require_all=require_all)
            for limit in (1, 5, 40, 300):
                got = [(c.drawer_id, c.signal) for c in store_pg.search.lexical_candidates(query, scope, limit)]
                want = exhaustive_lexical(store_pg, query, scope, limit)
                assert same_ranking(got, want), (terms, require_all, limit, got, want)


def test_the_statistics_read_only_new_drawers_and_recount_in_full_later(store_pg: PostgresStore) -> None:
    from memcastle.store.postgres.corpus import RECOUNT_SECONDS, CorpusStatistics

    clock = [1000.0]  # the lengths of drawers' own words (`own_length`): their contexts change as notes arrive
    stats = CorpusStatistics(clock=lambda: clock[0])
    due: list[bool] = []
    for i in range(5):
        store_pg.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"harbour lights {i}"))
    with store_pg._read() as tx:
        first = stats.read(
            tx, ["harbour", "zeppelin", "harbour lights"], recount=lambda: due.append(True), own_length=True
        )
    assert (first.drawers, first.frequencies) == (5, (5, 0, 5))
    assert first.average_length == pytest.approx(3.0)
    store_pg.drawers.add_drawer(NewDrawer(wing="w", room="r", content="a zeppelin over the harbour"))
    statements: list[str] = []
    with store_pg._read() as tx:
        original = tx.all

        def recording(sql: str, params: Any = ()) -> Any:
            statements.append(sql)
            return original(sql, params)

        tx.all = recording  # type: ignore[method-assign]
        second = stats.read(
            tx, ["harbour", "zeppelin", "harbour lights"], recount=lambda: due.append(True), own_length=True
        )
    assert (second.drawers, second.frequencies) == (6, (6, 1, 5))
    assert second.average_length == pytest.approx((15 + 5) / 6)
    assert any("seq > " in sql and "ts_stat" in sql for sql in statements), "only the new drawer is read"
    assert not any("ts_stat" in sql and "seq > " not in sql for sql in statements)
    # A drawer committed below the highest seq already read (two writers, out of order) is found by the recount.
    with store_pg._write() as tx:
        tx.run("UPDATE drawer SET token_count = token_count + 10 WHERE seq = (SELECT min(seq) FROM drawer)")
    with store_pg._read() as tx:
        assert stats.read(
            tx, ["harbour"], recount=lambda: due.append(True), own_length=True
        ).average_length == pytest.approx(20 / 6)
        assert not due
        clock[0] += RECOUNT_SECONDS
        stats.read(tx, ["harbour"], recount=lambda: due.append(True), own_length=True)
    assert due == [True], "due once, started in the background"
    stats.recount_with(store_pg._read)
    with store_pg._read() as tx:
        assert stats.read(tx, ["harbour"], own_length=True).average_length == pytest.approx(30 / 6)


# --- the semantic leg through pgvector's HNSW index --------------------------------------------------------


def unit_rows(count: int, seed: int, dimension: int = 16) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, dimension))
    rows = centres[rng.integers(0, 12, count)] + 0.5 * rng.standard_normal((count, dimension))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_the_pgvector_leg_answers_as_the_exact_scan_with_every_filter(store_pg: PostgresStore) -> None:
    from memcastle.search.semantic import SEMANTIC_FLOOR, SemanticIndex
    from memcastle.search.stored import StoredVectorIndex

    vectors = unit_rows(900, seed=3)
    ids = []
    for i in range(300):
        wing, room = ("a" if i % 3 else "b"), f"r{i % 4}"
        valid_from = "2021-06-01T00:00:00.000000Z" if i % 5 == 0 else None
        ids.append(
            store_pg.drawers.add_drawer(NewDrawer(wing=wing, room=room, content=f"d{i}", valid_from=valid_from)).id
        )
    # Every drawer has three passages; a tenth of them only one so far (still waiting for the others).
    waiting = set(ids[::10])
    store_pg.embeddings.put_embeddings(
        "m",
        [(d, vectors[3 * i : 3 * i + (1 if d in waiting else 3)]) for i, d in enumerate(ids)],
        totals=dict.fromkeys(ids, 3),
    )
    for drawer_id in ids[1:60:4]:
        store_pg.drawers.invalidate_drawer(drawer_id)
    exact = SemanticIndex(store_pg, "m", ann_min_rows=10**9)
    stored = StoredVectorIndex(store_pg.embeddings, "m")
    window = Between("2021-01-01T00:00:00.000000Z", "2022-01-01T00:00:00.000000Z")
    cases = [Scope(), Scope(wing="b"), Scope(wing="a", room="r2", when=ANY_TIME), Scope(when=window)]
    agree = total = 0
    for query in unit_rows(12, seed=8):
        for scope in cases:
            got = stored.candidates(query, 10, scope)
            want = exact.candidates(query, 10, scope)
            assert got, "every case has eligible drawers"
            assert store_pg.search.eligible_ids([c.drawer_id for c in got], scope) == {c.drawer_id for c in got}, (
                "filters apply inside the walk"
            )
            scores = {c.drawer_id: c.signal for c in want}
            assert all(abs(c.signal - scores[c.drawer_id]) < 1e-5 for c in got if c.drawer_id in scores)
            assert all(c.signal >= SEMANTIC_FLOOR for c in got)
            agree += len({c.drawer_id for c in got} & set(scores))
            total += len(want)
    assert agree / total >= 0.95
    assert stored.waiting_among(ids[:30]) == waiting & set(ids[:30])
    described = {"search": "pgvector", "vectors": 840, "in_graph": 840, "graph_from": 0, "loading": False}
    assert stored.describe() == described
    opposite = -vectors[0]
    assert all(c.signal >= SEMANTIC_FLOOR for c in stored.candidates(opposite, 50, Scope(when=ANY_TIME)))


def test_the_nearest_passages_are_walked_through_the_hnsw_index(store_pg: PostgresStore) -> None:
    from memcastle.clock import utc_now
    from memcastle.store.postgres.vectors import nearest_sql
    from memcastle.store.sql.filters import filter_sql

    ids = [store_pg.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"d{i}")).id for i in range(50)]
    store_pg.embeddings.put_embeddings("m", [(d, unit_rows(1, seed=i)) for i, d in enumerate(ids)])
    where, params = filter_sql(Scope(wing="w"), utc_now())
    query = unit_rows(1, seed=99)[0]
    with store_pg._write() as tx:
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):  # 50 rows: price the rest out
            tx.run(f"SET LOCAL {setting} = off")
        plan = "\n".join(
            str(next(iter(r.values())))
            for r in tx.all("EXPLAIN " + nearest_sql(16, where), (query, "m", *params, query, 10))
        )
    assert "embedding_hnsw_16" in plan, plan


@pytest.mark.parametrize("iterative", [True, False], ids=["pgvector-0.8", "older-pgvector"])
def test_a_scope_the_graph_walk_gives_up_on_is_scored_exactly(
    store_pg: PostgresStore, monkeypatch: pytest.MonkeyPatch, iterative: bool
) -> None:
    """A narrow scope in a large palace: the filtered walk stops after `max_scan_tuples` rows with too few found (or,
    before pgvector 0.8, after `ef_search` neighbours, filtered afterwards); the exact form then scores the scope's
    rows, so nothing in scope is missed."""
    assert store_pg._iterative_scan, "the bundled pgvector walks through filters (0.8+): its version is read"
    import memcastle.store.postgres.vectors as pg_module

    ids = [
        store_pg.drawers.add_drawer(NewDrawer(wing="rare" if i % 100 == 0 else "common", room="r", content=f"d{i}")).id
        for i in range(800)
    ]
    store_pg.embeddings.put_embeddings("m", [(d, unit_rows(1, seed=i)) for i, d in enumerate(ids)])
    query = unit_rows(1, seed=1000)[0]
    # 800 rows: the planner would sort them all rather than walk the graph; price that out, as a large palace does.
    from psycopg.conninfo import conninfo_to_dict

    name = conninfo_to_dict(store_pg.conninfo)["dbname"]
    with store_pg._write() as tx:
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            tx.conn.execute(f'ALTER DATABASE "{name}" SET {setting} = off')
    large = open_pg(store_pg.conninfo)
    large._iterative_scan = iterative
    try:
        monkeypatch.setattr(pg_module, "_HNSW_MAX_SCAN", 10)
        found = large.embeddings.nearest_passages("m", query, 8, Scope(wing="rare"))
        assert {d for d, _ in found} == set(ids[::100]), "all eight drawers of the wing, though the walk stopped early"
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        monkeypatch.setattr(pg_module, "_HNSW_MAX_SCAN", 20_000)
        assert large.embeddings.nearest_passages("m", query, 8, Scope(wing="rare")) == found
    finally:
        large.close()


def test_the_palace_audit_finds_and_repairs_on_postgres(postgres_server: PostgresServer) -> None:
    conninfo = postgres_server.create_database()
    store = open_pg(conninfo)
    try:
        drawer = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="the lighthouse keeper's log"))
        names = store.integrity.check_names()
        assert "fts_missing" in names and "fts_extra" not in names  # the index is a column here
        assert all(store.integrity.find(name).count == 0 for name in names)
        # Damage as a restore or a hand edit would: foreign keys off for the session, a lost search vector.
        postgres_server.execute(
            conninfo,
            "SET session_replication_role = replica; "
            "INSERT INTO drawer_tag(drawer_seq, tag) VALUES (987654, 'ghost'); "
            f"UPDATE drawer SET search = ''::tsvector, superseded_by = 'gone' WHERE id = '{drawer.id}'",
        )
        found = {name: store.integrity.find(name) for name in names}
        assert {n: f.count for n, f in found.items() if f.count} == {
            "orphan_tags": 1,
            "dangling_supersession": 1,
            "fts_missing": 1,
        }
        assert found["fts_missing"].examples == (drawer.id,)
        for name in names:
            while store.integrity.fix(name, 10):
                pass
        assert all(store.integrity.find(name).count == 0 for name in names)
        hits = store.search.lexical_candidates(LexicalQuery(terms=("lighthouse",)), Scope(), 5)
        assert [h.drawer_id for h in hits] == [drawer.id]
    finally:
        store.close()
        postgres_server.drop_database(conninfo)
