"""Words of scripts written without spaces — Chinese, Japanese, Korean, Thai — found inside a sentence by the lexical
leg, on both backends (`memcastle.model.scripts`): each such character is indexed as a word, a query's run of them is
asked as its overlapping pairs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from postgres_support import PostgresServer

from memcastle.model import DrawerScope, LexicalQuery, NewDrawer, Scope
from memcastle.model.scripts import POSTGRES_PATTERN, has_unspaced, index_text, split_word
from memcastle.search.lexical import query_terms
from memcastle.store import Store
from memcastle.store.sqlite import DB_FILE, SQLiteStore

TEXTS = {
    "zh": "昨天我们在东京都的办公室讨论了数据库迁移的计划。",
    "ja": "来週の会議では、新しい検索エンジンについて話し合います。",
    "ko": "우리는 다음 주에 검색 엔진 마이그레이션을 시작합니다.",
    "th": "ทีมของเราจะย้ายฐานข้อมูลในสัปดาห์หน้า",
    "mixed": "The Atlas 项目 moved to Lisbon; 数据库 is PostgreSQL.",
    "en": "An English note about the database migration plan.",
}


def found(store: Store, query: str, *, every: bool = True) -> set[str]:
    terms = tuple(query_terms(query))
    hits = store.search.lexical_candidates(LexicalQuery(terms, require_all=every), Scope(), 20)
    names = {d.id: d.name for d in store.drawers.get_drawers([h.drawer_id for h in hits]).values()}
    return {names[h.drawer_id] for h in hits}


def fill(store: Store) -> dict[str, str]:
    return {
        name: store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=text, name=name)).id
        for name, text in TEXTS.items()
    }


def test_a_word_inside_a_sentence_is_found_in_every_script(store: Store) -> None:
    fill(store)
    assert found(store, "数据库") == {"zh", "mixed"}, "Chinese: three characters inside a sentence"
    assert found(store, "东京") == {"zh"}, "two characters"
    assert found(store, "迁移") == {"zh"}
    assert found(store, "検索エンジン") == {"ja"}, "Japanese: kanji then katakana"
    assert found(store, "会議") == {"ja"}
    assert found(store, "검색") == {"ko"}, "Korean"
    assert found(store, "마이그레이션") == {"ko"}, "a Korean word with a particle attached in the text"
    assert found(store, "ฐานข้อมูล") == {"th"}, "Thai"
    assert found(store, "项目 Lisbon") == {"mixed"}, "a query mixing scripts"
    assert found(store, "database") == {"en"}, "other words as before"
    assert found(store, "京东") == set(), "the characters must stand in that order"
    assert found(store, "数据库 PostgreSQL") == {"mixed"}
    assert found(store, "数据库 PostgreSQL", every=False) >= {"zh", "mixed"}


def test_a_forgotten_drawer_leaves_no_word_behind_and_the_rest_stay_found(store: Store) -> None:
    ids = fill(store)
    store.forgetting.forget(DrawerScope(drawer_id=ids["zh"]), dry_run=False, requested_by="cli")
    assert found(store, "数据库") == {"mixed"}
    assert found(store, "检索 会議") == set()
    assert found(store, "会議") == {"ja"}


def test_query_words_become_pairs_and_the_index_spaces_each_character() -> None:
    assert split_word("我住在东京") == ["我住", "住在", "在东", "东京"]
    assert split_word("东") == ["东"]
    assert split_word("iphone手机2") == ["iphone", "手机", "2"]
    assert query_terms("Atlas 项目") == ["atlas", "项目"]
    assert index_text("Atlas 项目!") == "Atlas  项  目 !"
    assert index_text("no such characters") == "no such characters"
    assert has_unspaced("東京") and has_unspaced("café 東") and not has_unspaced("café") and not has_unspaced("plain")


def test_a_palace_indexed_before_is_indexed_again_at_open(tmp_path: Path) -> None:
    """Drawers stored under schema 15 were indexed whole: opening the palace (migration 16) finds those holding such
    text and indexes them a character at a time."""
    folder = tmp_path / "palace"
    store = SQLiteStore(folder)
    try:
        ids = fill(store)
    finally:
        store.close()
    # Put the palace back as schema 15 left it: every drawer indexed whole, no scan asked for.
    conn = sqlite3.connect(folder / DB_FILE)
    conn.execute("DELETE FROM schema_migration WHERE version = 16")
    conn.execute("DROP TABLE drawer_fts_rescan")
    conn.execute("INSERT INTO drawer_fts(drawer_fts) VALUES ('delete-all')")
    conn.execute("INSERT INTO drawer_fts(rowid, content, context) SELECT seq, content, context FROM drawer_indexed")
    conn.commit()
    assert conn.execute("SELECT rowid FROM drawer_fts WHERE drawer_fts MATCH '\"东 京\"'").fetchall() == []
    conn.close()
    store = SQLiteStore(folder)
    try:
        assert found(store, "东京") == {"zh"}
        assert found(store, "database") == {"en"}
        store.forgetting.forget(DrawerScope(drawer_id=ids["ja"]), dry_run=False, requested_by="cli")
        assert found(store, "会議") == set()
    finally:
        store.close()
    conn = sqlite3.connect(folder / DB_FILE)
    assert conn.execute("SELECT count(*) FROM drawer_fts_rescan").fetchone()[0] == 0, "the scan ran once"
    # The index agrees with itself: FTS5's own check of its structure passes.
    conn.execute("INSERT INTO drawer_fts(drawer_fts) VALUES ('integrity-check')")
    conn.close()


@pytest.mark.parametrize("text", list(TEXTS.values()))
def test_index_text_keeps_every_character(text: str) -> None:
    assert "".join(index_text(text).split()) == "".join(text.split())


def test_a_postgres_palace_indexed_before_is_indexed_again_by_the_migration(postgres_server: PostgresServer) -> None:
    from memcastle.store.postgres import PostgresStore
    from memcastle.store.postgres.fulltext import CONFIG

    conninfo = postgres_server.create_database()
    try:
        store = PostgresStore(conninfo, max_connections=2)
        try:
            fill(store)
        finally:
            store.close()
        # As schema 15 left it: the text indexed whole (no character spaced), migration 16 not applied.
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(
                f"UPDATE drawer SET search = to_tsvector('{CONFIG}', lower(content)) WHERE content ~ %s",
                (POSTGRES_PATTERN,),
            )
            conn.execute("DELETE FROM schema_migration WHERE version = 16")
            phrase = f"search @@ phraseto_tsquery('{CONFIG}', '东 京')"
            assert conn.execute(f"SELECT count(*) FROM drawer WHERE {phrase}").fetchone() == (0,)
        store = PostgresStore(conninfo, max_connections=2)
        try:
            assert found(store, "东京") == {"zh"}
            assert found(store, "검색") == {"ko"}
            assert found(store, "database") == {"en"}
        finally:
            store.close()
    finally:
        postgres_server.drop_database(conninfo)


def test_a_search_shows_where_the_word_stands_in_code_points(client: TestClient) -> None:
    text = "会议记录：我们在东京都的办公室讨论了数据库。Next: Lisbon."
    assert client.post("/api/notes", json={"content": text, "wing": "w"}).status_code == 201
    answer = client.post("/api/search", json={"query": "东京 数据库", "ranking": "lexical"})
    assert answer.status_code == 200, answer.text
    (hit,) = answer.json()["hits"]
    shown = hit["snippet"]["text"]
    words = [shown[first:last] for first, last in hit["snippet"]["matches"]]
    assert words == ["东京", "数据库"], "consecutive pairs of one run shown as one match"
    assert hit["signals"]["coverage"] == 1.0
