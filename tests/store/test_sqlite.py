"""SQLite-only behaviour: the palace file, WAL, and migrations seen at the file level.

Everything a store must do on every backend is in test_contract.py (run against SQLite and PostgreSQL).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.errors import MemCastleError, MigrationError
from memcastle.model import NewDrawer
from memcastle.store.migrate import load_migrations
from memcastle.store.sqlite import DB_FILE, SQLiteStore

from .rankings import same_ranking


def note(content: str) -> NewDrawer:
    return NewDrawer(wing="w", room="r", content=content)


def test_the_palace_is_one_file_in_wal_mode(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "palace")
    try:
        store.drawers.add_drawer(note("in the file"))
        assert store.location == str(tmp_path / "palace" / DB_FILE)
        with sqlite3.connect(tmp_path / "palace" / DB_FILE) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("SELECT content FROM drawer").fetchall() == [("in the file",)]
    finally:
        store.close()


# --- migrations -----------------------------------------------------------------------------------


def migration_rows(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as conn:
        return [
            tuple(r) for r in conn.execute("SELECT version, name, applied_at FROM schema_migration ORDER BY version")
        ]


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_migrations_are_recorded_and_reopening_is_a_no_op(tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    first = SQLiteStore(palace)
    drawer = first.drawers.add_drawer(note("survives"))
    known = load_migrations("sqlite")
    assert first.schema_version() == len(known)
    first.close()
    recorded = migration_rows(palace / DB_FILE)
    assert [(v, n) for v, n, _ in recorded] == [(m.version, m.name) for m in known]

    second = SQLiteStore(palace)
    try:
        assert migration_rows(palace / DB_FILE) == recorded, "re-opening must not apply or re-record anything"
        assert second.drawers.get_drawer(drawer.id).content == "survives"
    finally:
        second.close()


def test_palace_newer_than_this_build_stops_start_up_unchanged(tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    SQLiteStore(palace).close()
    with sqlite3.connect(palace / DB_FILE) as conn:
        conn.execute("INSERT INTO schema_migration(version, name, applied_at) VALUES (99, 'future', 'x')")
    before = migration_rows(palace / DB_FILE)
    with pytest.raises(MigrationError) as error:
        SQLiteStore(palace)
    assert "99" in str(error.value)
    assert migration_rows(palace / DB_FILE) == before


def test_failing_migration_is_rolled_back_and_leaves_the_previous_version(tmp_path: Path) -> None:
    """A table that clashes with the last statements of migration 0001 makes it fail part-way."""
    palace = tmp_path / "palace"
    palace.mkdir()
    with sqlite3.connect(palace / DB_FILE) as conn:
        conn.execute("CREATE TABLE job (legacy TEXT)")
        conn.execute("INSERT INTO job VALUES ('keep me')")
    with pytest.raises(MigrationError) as error:
        SQLiteStore(palace)
    assert "0001" in str(error.value)
    assert "wing" not in tables(palace / DB_FILE), "the statements before the failure were rolled back"
    assert migration_rows(palace / DB_FILE) == []
    with sqlite3.connect(palace / DB_FILE) as conn:
        assert conn.execute("SELECT legacy FROM job").fetchall() == [("keep me",)]


def test_failing_migration_stops_building_the_palace(tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    SQLiteStore(palace).close()
    with sqlite3.connect(palace / DB_FILE) as conn:
        conn.execute("INSERT INTO schema_migration(version, name, applied_at) VALUES (99, 'future', 'x')")
    with pytest.raises(MigrationError):
        build(load_settings(flags={"palace": str(palace)}, env={}))


def test_a_palace_file_that_is_not_sqlite_is_refused_with_a_migration_error(tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / DB_FILE).write_bytes(b"this is not a database, it is a text file " * 50)
    with pytest.raises(MemCastleError) as error:
        SQLiteStore(palace)
    assert isinstance(error.value, MigrationError)
    assert str(palace / DB_FILE) in str(error.value)


def test_the_fts5_dialect_quotes_every_term_so_no_operator_is_read() -> None:
    from memcastle.model import LexicalQuery
    from memcastle.store.sqlite.fulltext import fts5_match

    assert fts5_match(LexicalQuery(('say "hi"', "AND", "x*"), require_all=False)) == '"say ""hi""" OR "AND" OR "x*"'
    assert fts5_match(LexicalQuery(("quick", "fox"))) == '"quick" AND "fox"'
    assert fts5_match(LexicalQuery(())) is None


def test_a_postgresql_url_without_the_postgres_extra_says_which_extra_to_install() -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as on an install without memcastle[postgres]\n"
        "from memcastle.app import postgres_store\n"
        "from memcastle.errors import ConfigError\n"
        "try:\n"
        "    postgres_store('store.url')\n"
        "except ConfigError as exc:\n"
        "    print(exc.message, '|', exc.help)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "needs the postgres extra" in done.stdout and "memcastle[postgres]" in done.stdout


# --- the lexical leg ranks inside the full-text index first -----------------------------------------


def exact_lexical(store: SQLiteStore, match: str, where: str, params: list[Any], limit: int) -> list[tuple[str, float]]:
    """The reference: BM25 over every matching row, joined and filtered, in one query (the neighbours' words at
    weight 0, as a `LexicalQuery` asks by default)."""
    with store._read() as tx:
        rows = tx.all(
            "SELECT d.id, bm25(drawer_fts, 1.0, 0.0) AS rank FROM drawer_fts JOIN drawer d ON d.seq = drawer_fts.rowid "
            "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            f"WHERE drawer_fts MATCH ?{where} ORDER BY rank, d.id LIMIT ?",
            (match, *params, limit),
        )
    return [(r["id"], -float(r["rank"])) for r in rows]


def test_an_any_term_query_leaves_out_terms_in_half_the_palace(tmp_path: Path) -> None:
    """Such a term adds at most 2.2e-6 to a score (FTS5 floors its IDF), so leaving it out changes no ranking beyond
    an exact tie, and FTS5 no longer scores every row that holds it."""
    from memcastle.model import LexicalQuery

    store = SQLiteStore(tmp_path / "palace")
    try:
        for i in range(30):
            store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"common words here {i}"))
        store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="a rare word and common"))
        search = store.search

        def reduced(query: LexicalQuery) -> tuple[LexicalQuery, bool]:
            return search._any_term_reduced(query, *search._term_rows(query))

        kept, bounded = reduced(LexicalQuery(("common", "rare", "here"), require_all=False))
        assert kept.terms == ("rare",) and not bounded
        everywhere = LexicalQuery(("common", "here"), require_all=False)
        assert reduced(everywhere) == (everywhere, False), "nothing left: the query stays whole"
        budget = LexicalQuery(("common", "rare", "here"), require_all=False, max_rows=1000)
        assert reduced(budget) == (LexicalQuery(("rare",), require_all=False), False)
        tight = LexicalQuery(("common", "rare", "here"), require_all=False, max_rows=10)
        assert reduced(tight) == (LexicalQuery(("rare",), require_all=False), True)
    finally:
        store.close()


@pytest.mark.parametrize("head", [(4, 64), (1, 2)], ids=["default", "tiny-first-round"])
def test_the_bounded_lexical_leg_ranks_exactly_as_one_full_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: tuple[int, int]
) -> None:
    """Top k inside FTS5, then scope, time and joins: identical hits and scores to BM25 over every match, for narrow
    and broad scopes, ties (identical texts), closed drawers, and limits past the first round."""
    import memcastle.store.sqlite.search as sqlite_search
    from memcastle.clock import utc_now
    from memcastle.model import ANY_TIME, LexicalQuery, Scope
    from memcastle.store.sql.filters import filter_sql
    from memcastle.store.sqlite.fulltext import fts5_match

    monkeypatch.setattr(sqlite_search, "LEXICAL_HEAD", head[0])
    monkeypatch.setattr(sqlite_search, "LEXICAL_MIN_HEAD", head[1])
    store = SQLiteStore(tmp_path / "palace")
    try:
        words = ["drawbridge", "moat", "tower", "keep", "banner", "gate"]
        for i in range(240):
            text = " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 5))
            wing = "rare" if i % 40 == 0 else "common"
            drawer = store.drawers.add_drawer(NewDrawer(wing=wing, room=f"r{i % 3}", content=f"{text} castle"))
            if i % 7 == 0:
                store.drawers.invalidate_drawer(drawer.id)
        store.drawers.add_drawer(NewDrawer(wing="common", room="r0", content="moat moat moat castle"))
        store.drawers.add_drawer(NewDrawer(wing="common", room="r1", content="moat moat moat castle"))  # an exact tie
        cases = [
            (("moat",), True, Scope()),
            (("moat", "tower"), True, Scope()),
            (("moat", "banner", "castle"), False, Scope()),
            (("castle",), True, Scope(wing="rare")),
            (("gate", "keep"), False, Scope(room="r2", when=ANY_TIME)),
            (("castle",), True, Scope(when=ANY_TIME)),
        ]
        for terms, require_all, scope in cases:
            query = LexicalQuery(terms, require_all=require_all)
            where, params = filter_sql(scope, utc_now())
            for limit in (1, 5, 40, 200):
                got = [(c.drawer_id, c.signal) for c in store.search.lexical_candidates(query, scope, limit)]
                want = exact_lexical(store, fts5_match(query, column="content") or "", where, params, limit)
                if require_all:
                    assert got == want, (terms, limit)
                else:
                    # An any-term query leaves out terms whose IDF FTS5 floors at 1e-6 ("castle", in every drawer):
                    # the same drawers with the same scores to 1e-5, ties aside.
                    assert same_ranking(got, want), (terms, limit)
    finally:
        store.close()
