"""The embedded SQLite palace on real files: drawers, supersession, migrations, lexical retrieval and filters."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.errors import Conflict, InvalidRequest, MemCastleError, MigrationError, NotFound
from memcastle.model import NewDrawer, Origin, Provenance, Scope, Source, TimeWindow, fingerprint, normalize_text
from memcastle.search.engine import SearchEngine
from memcastle.search.lexical import match_expression, query_terms
from memcastle.services import SearchRequest, build_query
from memcastle.store.migrate import load_migrations
from memcastle.store.sqlite import DB_FILE, SQLiteStore

PAST = "2020-01-01T00:00:00.000000Z"
DECOYS_FROM = "2022-01-01T00:00:00.000000Z"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "palace")
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    """One palace for property tests, where each example writes its own rows."""
    opened = SQLiteStore(tmp_path_factory.mktemp("shared") / "palace")
    for text in ("the quick brown fox", "near the river bank", "AND OR NOT keywords", "x-ray and star*"):
        opened.add_drawer(NewDrawer(wing="w", room="r", content=text))
    yield opened
    opened.close()


def note(content: str, *, wing: str = "w", room: str = "r", name: str | None = None,
         tags: tuple[str, ...] = (), valid_from: str | None = None, source: Source | None = None) -> NewDrawer:
    return NewDrawer(wing=wing, room=room, content=content, name=name, tags=tags, valid_from=valid_from,
                     source=source or Source(kind="note"), provenance=Provenance(requested_by="cli"))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def search(store: SQLiteStore, query: str, **options: object) -> list[str]:
    """Drawer contents of a lexical search through the real engine and request validation."""
    result = SearchEngine(store).search(build_query(SearchRequest(query=query, ranking="lexical", **options)))
    return [hit.drawer.content for hit in result.hits]


# --- drawers --------------------------------------------------------------------------------------


def test_drawer_is_stored_verbatim_with_hash_and_fingerprint(store: SQLiteStore) -> None:
    content = "  Line one\r\n\tLine TWO — ünïcode 🏰  \n\n\n trailing   "
    drawer = store.add_drawer(note(content, tags=("a", "b")))
    again = store.get_drawer(drawer.id)
    assert again.content == content
    assert again.content_hash == sha256(content)
    assert again.fingerprint == sha256(normalize_text(content))
    assert again.tags == ("a", "b")
    assert again.provenance.requested_by == "cli"
    assert again.valid_to is None and again.is_current
    assert again.valid_from == again.created_at


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(min_size=1, max_size=300))
def test_any_text_round_trips_exactly(shared_store: SQLiteStore, content: str) -> None:
    drawer = shared_store.add_drawer(note(content))
    stored = shared_store.get_drawer(drawer.id)
    assert stored.content == content
    assert stored.content_hash == sha256(content)
    assert stored.fingerprint == fingerprint(content)


def test_fingerprint_ignores_case_and_punctuation_but_hash_does_not() -> None:
    assert fingerprint("Hello, World!") == fingerprint("hello world")
    assert sha256("Hello, World!") != sha256("hello world")


def test_origin_snapshot_is_stored_with_the_drawer(store: SQLiteStore) -> None:
    origin = Origin(connector="notes", source_id="s1", document="a.md", chunk=0, revision="r1",
                    metadata={"status": "draft", "nested": {"n": 1}}, occurred_at="2024-05-01T00:00:00.000000Z")
    drawer = store.add_drawer(note("with origin", source=Source(kind="note", uri="file:///a.md", origin=origin)))
    stored = store.get_drawer(drawer.id)
    assert stored.source.origin == origin
    assert stored.source.uri == "file:///a.md"


def test_unknown_drawer_is_not_found(store: SQLiteStore) -> None:
    with pytest.raises(NotFound):
        store.get_drawer("00000000-0000-0000-0000-000000000000")


def test_replayed_write_with_the_same_id_lands_on_the_same_record(store: SQLiteStore) -> None:
    first = store.add_drawer(NewDrawer(wing="w", room="r", content="same", id="fixed-id"))
    again = store.add_drawer(NewDrawer(wing="w", room="r", content="same", id="fixed-id"))
    assert again.id == first.id and store.count_drawers() == 1
    with pytest.raises(Conflict):
        store.add_drawer(NewDrawer(wing="w", room="r", content="different", id="fixed-id"))


# --- supersession and invalidation ----------------------------------------------------------------


def test_supersession_closes_the_old_and_opens_the_new_at_the_same_instant(store: SQLiteStore) -> None:
    old = store.add_drawer(note("version one", name="plan"))
    new = store.supersede_drawer(old.id, note("version two", name="plan"))
    closed = store.get_drawer(old.id)
    assert closed.valid_to is not None and closed.valid_to == new.valid_from
    assert closed.superseded_by == new.id
    assert new.supersedes == old.id
    assert new.valid_to is None
    assert closed.content == "version one", "closing never rewrites content"
    assert store.count_drawers(current_only=True) == 1 and store.count_drawers() == 2


def test_failed_supersession_leaves_the_old_drawer_current(store: SQLiteStore) -> None:
    """Close and open are one transaction: when the open fails, the close is rolled back."""
    old = store.add_drawer(note("keep me"))
    taken = store.add_drawer(note("occupies the id"))
    with pytest.raises(Conflict):
        store.supersede_drawer(old.id, NewDrawer(wing="w", room="r", content="other text", id=taken.id))
    still = store.get_drawer(old.id)
    assert still.valid_to is None and still.superseded_by is None


def test_supersession_that_clashes_on_name_is_rolled_back(store: SQLiteStore) -> None:
    old = store.add_drawer(note("first", name="a"))
    store.add_drawer(note("second", name="b"))
    with pytest.raises(Conflict):
        store.supersede_drawer(old.id, note("renamed", name="b"))
    assert store.get_drawer(old.id).is_current
    assert store.count_drawers() == 2


def test_history_is_oldest_first_from_any_version(store: SQLiteStore) -> None:
    v1 = store.add_drawer(note("v1"))
    v2 = store.supersede_drawer(v1.id, note("v2"))
    v3 = store.supersede_drawer(v2.id, note("v3"))
    for member in (v1, v2, v3):
        assert [d.id for d in store.drawer_history(member.id)] == [v1.id, v2.id, v3.id]
    history = store.drawer_history(v2.id)
    assert [d.valid_from for d in history] == sorted(d.valid_from for d in history)
    assert history[0].valid_to == history[1].valid_from and history[1].valid_to == history[2].valid_from


def test_history_of_a_drawer_never_superseded_is_itself(store: SQLiteStore) -> None:
    alone = store.add_drawer(note("alone"))
    assert [d.id for d in store.drawer_history(alone.id)] == [alone.id]


def test_invalidation_closes_without_a_replacement(store: SQLiteStore) -> None:
    drawer = store.add_drawer(note("wrong"))
    closed = store.invalidate_drawer(drawer.id)
    assert closed.valid_to is not None and closed.superseded_by is None
    assert store.count_drawers(current_only=True) == 0
    assert [d.id for d in store.drawer_history(drawer.id)] == [drawer.id]


def test_a_closed_drawer_cannot_be_superseded_again(store: SQLiteStore) -> None:
    old = store.add_drawer(note("one"))
    new = store.supersede_drawer(old.id, note("two"))
    with pytest.raises(Conflict) as clash:
        store.supersede_drawer(old.id, note("three"))
    assert clash.value.existing_id == new.id, "the conflict points at the current version"
    assert store.count_drawers() == 2
    assert store.get_drawer(new.id).is_current


def test_an_invalidated_drawer_cannot_be_superseded_or_invalidated_again(store: SQLiteStore) -> None:
    drawer = store.add_drawer(note("gone"))
    store.invalidate_drawer(drawer.id)
    with pytest.raises(Conflict):
        store.supersede_drawer(drawer.id, note("back"))
    with pytest.raises(Conflict):
        store.invalidate_drawer(drawer.id)
    assert store.count_drawers() == 1


def test_superseding_an_unknown_drawer_is_not_found(store: SQLiteStore) -> None:
    with pytest.raises(NotFound):
        store.supersede_drawer("nope", note("x"))


# --- names ----------------------------------------------------------------------------------------


def test_a_current_name_is_unique_in_its_room(store: SQLiteStore) -> None:
    first = store.add_drawer(note("a", name="readme"))
    with pytest.raises(Conflict) as clash:
        store.add_drawer(note("b", name="readme"))
    assert clash.value.existing_id == first.id
    assert store.count_drawers() == 1


def test_the_same_name_is_allowed_in_another_room_or_wing(store: SQLiteStore) -> None:
    store.add_drawer(note("a", name="readme"))
    store.add_drawer(note("b", name="readme", room="other"))
    store.add_drawer(note("c", name="readme", wing="other"))
    assert store.count_drawers() == 3


def test_a_name_passes_to_the_replacement_and_is_free_after_invalidation(store: SQLiteStore) -> None:
    old = store.add_drawer(note("a", name="readme"))
    new = store.supersede_drawer(old.id, note("b", name="readme"))
    assert new.name == "readme" and store.get_drawer(old.id).name == "readme"
    with pytest.raises(Conflict):
        store.add_drawer(note("c", name="readme"))
    store.invalidate_drawer(new.id)
    reused = store.add_drawer(note("d", name="readme"))
    assert reused.is_current


# --- listings -------------------------------------------------------------------------------------


def test_listing_pages_through_current_drawers_in_order(store: SQLiteStore) -> None:
    ids = [store.add_drawer(note(f"n{i}")).id for i in range(7)]
    store.invalidate_drawer(ids[3])
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = store.list_drawers("w", "r", 3, after)
        seen.extend(d.id for d in page.items)
        pages += 1
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == [i for i in ids if i != ids[3]]
    assert pages == 2


def test_wings_and_rooms_count_current_drawers(store: SQLiteStore) -> None:
    a = store.add_drawer(note("x", wing="alpha", room="one"))
    store.add_drawer(note("y", wing="alpha", room="two"))
    store.add_drawer(note("z", wing="beta", room="one"))
    store.invalidate_drawer(a.id)
    assert [(w.name, w.drawers) for w in store.list_wings()] == [("alpha", 1), ("beta", 1)]
    assert [(r.name, r.drawers) for r in store.list_rooms("alpha")] == [("one", 0), ("two", 1)]
    with pytest.raises(NotFound):
        store.list_rooms("gamma")


# --- migrations -----------------------------------------------------------------------------------


def migration_rows(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as conn:
        return [tuple(r) for r in conn.execute("SELECT version, name, applied_at FROM schema_migration "
                                               "ORDER BY version")]


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_migrations_are_recorded_and_reopening_is_a_no_op(tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    first = SQLiteStore(palace)
    drawer = first.add_drawer(note("survives"))
    known = load_migrations("sqlite")
    assert first.schema_version() == len(known)
    first.close()
    recorded = migration_rows(palace / DB_FILE)
    assert [(v, n) for v, n, _ in recorded] == [(m.version, m.name) for m in known]

    second = SQLiteStore(palace)
    try:
        assert migration_rows(palace / DB_FILE) == recorded, "re-opening must not apply or re-record anything"
        assert second.get_drawer(drawer.id).content == "survives"
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


# --- lexical retrieval ----------------------------------------------------------------------------

HOSTILE = ['"', '""', "*", "AND", "OR", "NOT", "NEAR(", "NEAR(a b, 3)", "-x", "fox -quick", '"unbalanced',
           "quick\" OR \"fox", "a:b", "content:fox", "(", ")", "^fox", "fox*", "{fox}", "+", "'", "\\", "--",
           "fox AND", "AND fox", "NEAR", "quick + brown", "\x00", "🏰", "   ;DROP TABLE drawer;--", "%", "_", "ü"]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_query_strings_never_error(shared_store: SQLiteStore, query: str) -> None:
    try:
        hits = search(shared_store, query)
    except InvalidRequest as refused:
        assert refused.field == "query", "only an empty query may be refused"
        return
    assert isinstance(hits, list)


def test_operators_in_user_text_are_searched_as_words(shared_store: SQLiteStore) -> None:
    assert search(shared_store, "AND OR NOT") == ["AND OR NOT keywords"]
    assert search(shared_store, "NEAR(river") == ["near the river bank"]
    assert search(shared_store, '"quick') == ["the quick brown fox"]
    assert search(shared_store, "star*") == ["x-ray and star*"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(alphabet=st.characters(categories=("P", "S", "Zs", "L", "N", "Cc")), min_size=1, max_size=40))
@example(query='"*"')
@example(query="NEAR(\"a\" \"b\")")
def test_random_punctuation_never_errors(shared_store: SQLiteStore, query: str) -> None:
    try:
        search(shared_store, query)
    except InvalidRequest as refused:
        assert refused.field == "query" and not query.strip()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=40))
def test_quoted_terms_are_always_a_valid_match_expression(shared_store: SQLiteStore, query: str) -> None:
    expression = match_expression(query_terms(query), require_all=False)
    if expression is not None:
        shared_store.lexical_candidates(expression, Scope(), None, False, 5)


def test_all_terms_are_required_first_then_any_term(store: SQLiteStore) -> None:
    store.add_drawer(note("apples and pears"))
    store.add_drawer(note("apples only"))
    assert search(store, "apples pears") == ["apples and pears"]
    assert sorted(search(store, "pears plums")) == ["apples and pears"]
    assert sorted(search(store, "apples")) == ["apples and pears", "apples only"]


def test_lexical_matching_is_stemmed_and_case_folded(store: SQLiteStore) -> None:
    store.add_drawer(note("The Castles were Running"))
    assert search(store, "castle run") == ["The Castles were Running"]


# --- filters apply before the limit ---------------------------------------------------------------


def test_scope_filters_apply_before_the_limit(store: SQLiteStore) -> None:
    for i in range(30):
        store.add_drawer(note(f"lantern lantern lantern {i}", wing="loud"))
    store.add_drawer(note("a lantern among many other words here", wing="quiet", room="attic", tags=("x", "y")))
    store.add_drawer(note("a lantern with one tag only", wing="quiet", room="attic", tags=("x",)))
    origin = Origin(connector="notes", source_id="s", document="d.md", chunk=0, revision="r")
    store.add_drawer(note("a mined lantern", wing="quiet", room="cellar",
                          source=Source(kind="file", origin=origin)))

    assert search(store, "lantern", limit=1, wing="quiet", room="attic", tags=["x", "y"]) == [
        "a lantern among many other words here"]
    assert sorted(search(store, "lantern", limit=5, wing="quiet", tags=["x"])) == [
        "a lantern among many other words here", "a lantern with one tag only"]
    assert search(store, "lantern", limit=1, source_kind="file") == ["a mined lantern"]
    assert search(store, "lantern", limit=1, connector="notes") == ["a mined lantern"]
    assert len(search(store, "lantern", limit=3)) == 3


@pytest.fixture
def superseded(store: SQLiteStore) -> tuple[SQLiteStore, str, str]:
    """Strongly matching decoys, valid [2022, now), then v1 valid [2020, t) and its weakly matching successor v2.

    Each temporal form must leave the decoys out before the limit, or they would take the only slot."""
    for i in range(25):
        decoy = store.add_drawer(note(f"beacon beacon beacon beacon decoy {i}", valid_from=DECOYS_FROM))
        store.invalidate_drawer(decoy.id)
    v1 = store.add_drawer(note("old beacon beacon text", valid_from=PAST))
    v2 = store.supersede_drawer(v1.id, note("new beacon among a great many other words of text"))
    return store, v1.id, v2.id


OLD = "old beacon beacon text"
NEW = "new beacon among a great many other words of text"


def test_current_search_skips_closed_versions_before_the_limit(superseded: tuple[SQLiteStore, str, str]) -> None:
    store, _, _ = superseded
    assert search(store, "beacon", limit=1) == [NEW]


def test_as_of_returns_what_was_current_then(superseded: tuple[SQLiteStore, str, str]) -> None:
    store, _, v2 = superseded
    assert search(store, "beacon", limit=1, as_of="2021-06-01T00:00:00Z") == [OLD]
    assert search(store, "beacon", limit=1, as_of=store.get_drawer(v2).valid_from) == [NEW]
    assert search(store, "beacon", limit=5, as_of="2019-01-01T00:00:00Z") == []


def test_window_returns_versions_overlapping_it(superseded: tuple[SQLiteStore, str, str]) -> None:
    store, _, _ = superseded
    assert search(store, "beacon", limit=1, from_="2020-06-01", until="2021-06-01") == [OLD]
    everything = search(store, "beacon", limit=50, from_="2019-06-01", until="2999-01-01")
    assert len(everything) == 27 and OLD in everything and NEW in everything


def test_include_historical_returns_closed_versions(superseded: tuple[SQLiteStore, str, str]) -> None:
    store, _, _ = superseded
    found = search(store, "beacon", limit=50, include_historical=True)
    assert len(found) == 27
    assert OLD in found and NEW in found
    assert NEW not in search(store, "beacon", limit=3, include_historical=True), "the strongest matches first"


def test_store_temporal_rule_is_half_open(store: SQLiteStore) -> None:
    drawer = store.add_drawer(note("edge case", valid_from=PAST))
    closed = store.invalidate_drawer(drawer.id)
    assert closed.valid_to is not None
    expression = match_expression(["edge"], require_all=True)
    assert expression is not None

    def found(window: TimeWindow) -> bool:
        return bool(store.lexical_candidates(expression, Scope(), window, False, 5))

    assert found(TimeWindow(start=PAST, end=PAST, is_instant=True)), "valid_from is inclusive"
    assert not found(TimeWindow(start=closed.valid_to, end=closed.valid_to, is_instant=True)), "valid_to is not"
    assert not found(TimeWindow(start="2010-01-01T00:00:00.000000Z", end=PAST)), "a window ending at valid_from"
    assert found(TimeWindow(start="2010-01-01T00:00:00.000000Z", end="2020-01-01T00:00:00.000001Z"))
