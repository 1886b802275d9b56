"""The neighbours' words in the lexical leg (ADR 0056): what a drawer's full-text context holds, when it is written,
that a forget takes a drawer's words out of its neighbours' contexts, and that a palace stored before gets them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from waiting import wait_until

from memcastle.model import DrawerScope, LexicalQuery, NewDrawer, Scope
from memcastle.store.sql.neighbours import CONTEXT_CHARS, context_text
from memcastle.store.sqlite import DB_FILE, SQLiteStore


def contexts(folder: Path) -> dict[int, str]:
    with sqlite3.connect(folder / DB_FILE) as conn:
        return dict(conn.execute("SELECT seq, context FROM drawer_indexed ORDER BY seq").fetchall())


def found(store: SQLiteStore, word: str, weight: float) -> list[str]:
    query = LexicalQuery((word,), context_weight=weight)
    return [c.drawer_id for c in store.search.lexical_candidates(query, Scope(), 10)]


def test_a_note_is_found_by_the_words_of_the_notes_written_beside_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "palace")
    try:
        notes = [
            store.drawers.add_drawer(NewDrawer(wing="w", room="chat", content=text)).id
            for text in ("Where did you go in June?", "We hiked the Dolomites.", "Lovely, the weather held?")
        ]
        other = store.drawers.add_drawer(NewDrawer(wing="w", room="elsewhere", content="June in the Alps")).id
        assert contexts(tmp_path / "palace") == {
            1: "We hiked the Dolomites.",
            2: "Where did you go in June?\nLovely, the weather held?",
            3: "We hiked the Dolomites.",
            4: "",  # alone in its room
        }
        assert found(store, "dolomites", 0.0) == [notes[1]], "by its own words alone"
        first, *beside = found(store, "dolomites", 0.5)
        assert first == notes[1] and set(beside) == {notes[0], notes[2]}, "its own words first"
        assert set(found(store, "june", 0.5)) == {notes[0], notes[1], other}
    finally:
        store.close()


def test_a_chunk_has_the_end_of_the_one_before_and_the_start_of_the_one_after() -> None:
    before, after = "word " * 400 + "tail", "head " + "word " * 400
    text = context_text(before, after)
    first, second = text.split("\n")
    assert first.endswith("tail") and second.startswith("head")
    assert len(first) <= CONTEXT_CHARS and len(second) <= CONTEXT_CHARS
    assert not first.startswith("ord") and not second.endswith("wor"), "cut at a word boundary"


def test_a_forgotten_note_leaves_no_word_in_its_neighbours(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "palace")
    try:
        first, secret, last = (
            store.drawers.add_drawer(NewDrawer(wing="w", room="chat", content=text)).id
            for text in ("the weather today", "the vault code is swordfish", "see you tomorrow")
        )
        assert set(found(store, "swordfish", 0.5)) == {first, secret, last}
        store.forgetting.forget(DrawerScope(drawer_id=secret), dry_run=False, requested_by="test")
        assert found(store, "swordfish", 0.5) == []
        assert "swordfish" not in " ".join(contexts(tmp_path / "palace").values())
        assert contexts(tmp_path / "palace") == {1: "see you tomorrow", 3: "the weather today"}, "now each other's"
    finally:
        store.close()


def test_a_palace_stored_before_gets_its_neighbours_words_in_the_background(tmp_path: Path) -> None:
    folder = tmp_path / "palace"
    store = SQLiteStore(folder)
    try:
        for i in range(1_200):  # more than one batch of the pass
            store.drawers.add_drawer(NewDrawer(wing="w", room=f"r{i % 2}", content=f"note {i} word{i}"))
    finally:
        store.close()
    expected = contexts(folder)
    with sqlite3.connect(folder / DB_FILE) as conn:  # as migration 21 leaves a palace stored before it
        conn.execute("DELETE FROM drawer_context")
        conn.execute("INSERT INTO drawer_fts(drawer_fts) VALUES ('rebuild')")
        conn.execute("INSERT INTO drawer_context_owed(after_seq) VALUES (0)")
    store = SQLiteStore(folder)
    try:
        assert found(store, "word7", 0.0) != []  # searchable by its own words all along
        wait_until(lambda: contexts(folder) == expected, what="the pass over the palace")
        with sqlite3.connect(folder / DB_FILE) as conn:
            assert conn.execute("SELECT count(*) FROM drawer_context_owed").fetchone() == (0,)
            assert conn.execute("INSERT INTO drawer_fts(drawer_fts) VALUES ('integrity-check')").rowcount is not None
        assert len(found(store, "word7", 0.5)) == 3, "the note and the two beside it in its room"
    finally:
        store.close()
