"""The store contract, run against every backend (SQLite and PostgreSQL, see conftest.py): drawers, supersession,
names, listings, lexical retrieval and its filters, embeddings, mining records and jobs.

Every test here must pass on both backends unchanged; backend-only behaviour lives in test_sqlite.py and
test_postgres.py.
"""

from __future__ import annotations

import hashlib
import itertools
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from store_reads import drawers_missing_embeddings

from memcastle.clock import utc_now
from memcastle.errors import Conflict, IllegalTransition, InvalidRequest, NotFound
from memcastle.model import (
    ANY_TIME,
    CURRENT,
    AsOf,
    Between,
    DocumentChanges,
    DocumentRecord,
    Job,
    JobStatus,
    LexicalQuery,
    NewDrawer,
    NewJob,
    Origin,
    Progress,
    Provenance,
    Scope,
    Source,
    SourceRecord,
    When,
    fingerprint,
    normalize_text,
)
from memcastle.search.engine import SearchEngine
from memcastle.search.lexical import query_terms
from memcastle.services import SearchRequest, build_query
from memcastle.store import Store
from memcastle.store.migrate import load_migrations

from .conftest import BackendPalace

PAST = "2020-01-01T00:00:00.000000Z"
DECOYS_FROM = "2022-01-01T00:00:00.000000Z"


@pytest.fixture(scope="module")
def seeded_store(shared_store: Store) -> Store:
    """One palace per backend for property tests, where each example writes its own rows."""
    for text in ("the quick brown fox", "near the river bank", "AND OR NOT keywords", "x-ray and star*"):
        shared_store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=text))
    return shared_store


def note(
    content: str,
    *,
    wing: str = "w",
    room: str = "r",
    name: str | None = None,
    tags: tuple[str, ...] = (),
    valid_from: str | None = None,
    source: Source | None = None,
) -> NewDrawer:
    return NewDrawer(
        wing=wing,
        room=room,
        content=content,
        name=name,
        tags=tags,
        valid_from=valid_from,
        source=source or Source(kind="note"),
        provenance=Provenance(requested_by="cli"),
    )


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def search(store: Store, query: str, **options: object) -> list[str]:
    """Drawer contents of a lexical search through the real engine and request validation."""
    result = SearchEngine(store).search(build_query(SearchRequest(query=query, ranking="lexical", **options)))
    return [hit.drawer.content for hit in result.hits]


def test_the_store_reports_its_backend(palace_backend: BackendPalace) -> None:
    store = palace_backend.open()
    assert store.backend == palace_backend.backend
    assert store.location


def test_opening_a_palace_applies_every_migration_once(palace_backend: BackendPalace) -> None:
    first = palace_backend.open()
    drawer = first.drawers.add_drawer(note("survives"))
    known = load_migrations(palace_backend.backend)
    assert first.schema_version() == len(known)  # type: ignore[attr-defined]
    first.close()
    second = palace_backend.open()
    assert second.schema_version() == len(known)  # type: ignore[attr-defined]
    assert second.drawers.get_drawer(drawer.id).content == "survives"


# --- drawers --------------------------------------------------------------------------------------


def test_drawer_is_stored_verbatim_with_hash_and_fingerprint(store: Store) -> None:
    content = "  Line one\r\n\tLine TWO — ünïcode 🏰  \n\n\n trailing   "
    drawer = store.drawers.add_drawer(note(content, tags=("a", "b")))
    again = store.drawers.get_drawer(drawer.id)
    assert again.content == content
    assert again.content_hash == sha256(content)
    assert again.fingerprint == sha256(normalize_text(content))
    assert again.tags == ("a", "b")
    assert again.provenance.requested_by == "cli"
    assert again.valid_to is None and again.is_current
    assert again.valid_from == again.created_at


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(min_size=1, max_size=300))
def test_any_text_round_trips_exactly(seeded_store: Store, content: str) -> None:
    # A room of its own: arbitrary text (Unicode look-alikes of the seeded words too) must not reach other tests.
    drawer = seeded_store.drawers.add_drawer(note(content, room="round-trip"))
    stored = seeded_store.drawers.get_drawer(drawer.id)
    assert stored.content == content
    assert stored.content_hash == sha256(content)
    assert stored.fingerprint == fingerprint(content)


def test_fingerprint_ignores_case_and_punctuation_but_hash_does_not() -> None:
    assert fingerprint("Hello, World!") == fingerprint("hello world")
    assert sha256("Hello, World!") != sha256("hello world")


def test_origin_snapshot_is_stored_with_the_drawer(store: Store) -> None:
    origin = Origin(
        connector="notes",
        source_id="s1",
        document="a.md",
        chunk=0,
        revision="r1",
        metadata={"status": "draft", "nested": {"n": 1}},
        occurred_at="2024-05-01T00:00:00.000000Z",
    )
    drawer = store.drawers.add_drawer(
        note("with origin", source=Source(kind="note", uri="file:///a.md", origin=origin))
    )
    stored = store.drawers.get_drawer(drawer.id)
    assert stored.source.origin == origin
    assert stored.source.uri == "file:///a.md"


def test_unknown_drawer_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.drawers.get_drawer("00000000-0000-0000-0000-000000000000")


def test_replayed_write_with_the_same_id_lands_on_the_same_record(store: Store) -> None:
    first = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="same", id="fixed-id"))
    again = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="same", id="fixed-id"))
    assert again.id == first.id and store.drawers.count_drawers() == 1
    with pytest.raises(Conflict):
        store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="different", id="fixed-id"))


# --- supersession and invalidation ----------------------------------------------------------------


def test_supersession_closes_the_old_and_opens_the_new_at_the_same_instant(store: Store) -> None:
    old = store.drawers.add_drawer(note("version one", name="plan"))
    new = store.drawers.supersede_drawer(old.id, note("version two", name="plan"))
    closed = store.drawers.get_drawer(old.id)
    assert closed.valid_to is not None and closed.valid_to == new.valid_from
    assert closed.superseded_by == new.id
    assert new.supersedes == old.id
    assert new.valid_to is None
    assert closed.content == "version one", "closing never rewrites content"
    assert store.drawers.count_drawers(current_only=True) == 1 and store.drawers.count_drawers() == 2


def test_failed_supersession_leaves_the_old_drawer_current(store: Store) -> None:
    """Close and open are one transaction: when the open fails, the close is rolled back."""
    old = store.drawers.add_drawer(note("keep me"))
    taken = store.drawers.add_drawer(note("occupies the id"))
    with pytest.raises(Conflict):
        store.drawers.supersede_drawer(old.id, NewDrawer(wing="w", room="r", content="other text", id=taken.id))
    still = store.drawers.get_drawer(old.id)
    assert still.valid_to is None and still.superseded_by is None


def test_supersession_that_clashes_on_name_is_rolled_back(store: Store) -> None:
    old = store.drawers.add_drawer(note("first", name="a"))
    store.drawers.add_drawer(note("second", name="b"))
    with pytest.raises(Conflict):
        store.drawers.supersede_drawer(old.id, note("renamed", name="b"))
    assert store.drawers.get_drawer(old.id).is_current
    assert store.drawers.count_drawers() == 2


def test_history_is_oldest_first_from_any_version(store: Store) -> None:
    v1 = store.drawers.add_drawer(note("v1"))
    v2 = store.drawers.supersede_drawer(v1.id, note("v2"))
    v3 = store.drawers.supersede_drawer(v2.id, note("v3"))
    for member in (v1, v2, v3):
        assert [d.id for d in store.drawers.drawer_history(member.id)] == [v1.id, v2.id, v3.id]
    history = store.drawers.drawer_history(v2.id)
    assert [d.valid_from for d in history] == sorted(d.valid_from for d in history)
    assert history[0].valid_to == history[1].valid_from and history[1].valid_to == history[2].valid_from


def test_history_of_a_drawer_never_superseded_is_itself(store: Store) -> None:
    alone = store.drawers.add_drawer(note("alone"))
    assert [d.id for d in store.drawers.drawer_history(alone.id)] == [alone.id]


def test_invalidation_closes_without_a_replacement(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("wrong"))
    closed = store.drawers.invalidate_drawer(drawer.id)
    assert closed.valid_to is not None and closed.superseded_by is None
    assert store.drawers.count_drawers(current_only=True) == 0
    assert [d.id for d in store.drawers.drawer_history(drawer.id)] == [drawer.id]


def test_a_closed_drawer_cannot_be_superseded_again(store: Store) -> None:
    old = store.drawers.add_drawer(note("one"))
    new = store.drawers.supersede_drawer(old.id, note("two"))
    with pytest.raises(Conflict) as clash:
        store.drawers.supersede_drawer(old.id, note("three"))
    assert clash.value.existing_id == new.id, "the conflict points at the current version"
    assert store.drawers.count_drawers() == 2
    assert store.drawers.get_drawer(new.id).is_current


def test_an_invalidated_drawer_cannot_be_superseded_or_invalidated_again(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("gone"))
    store.drawers.invalidate_drawer(drawer.id)
    with pytest.raises(Conflict):
        store.drawers.supersede_drawer(drawer.id, note("back"))
    with pytest.raises(Conflict):
        store.drawers.invalidate_drawer(drawer.id)
    assert store.drawers.count_drawers() == 1


def test_superseding_an_unknown_drawer_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.drawers.supersede_drawer("nope", note("x"))


# --- names ----------------------------------------------------------------------------------------


def test_a_current_name_is_unique_in_its_room(store: Store) -> None:
    first = store.drawers.add_drawer(note("a", name="readme"))
    with pytest.raises(Conflict) as clash:
        store.drawers.add_drawer(note("b", name="readme"))
    assert clash.value.existing_id == first.id
    assert store.drawers.count_drawers() == 1


def test_the_same_name_is_allowed_in_another_room_or_wing(store: Store) -> None:
    store.drawers.add_drawer(note("a", name="readme"))
    store.drawers.add_drawer(note("b", name="readme", room="other"))
    store.drawers.add_drawer(note("c", name="readme", wing="other"))
    assert store.drawers.count_drawers() == 3


def test_a_name_passes_to_the_replacement_and_is_free_after_invalidation(store: Store) -> None:
    old = store.drawers.add_drawer(note("a", name="readme"))
    new = store.drawers.supersede_drawer(old.id, note("b", name="readme"))
    assert new.name == "readme" and store.drawers.get_drawer(old.id).name == "readme"
    with pytest.raises(Conflict):
        store.drawers.add_drawer(note("c", name="readme"))
    store.drawers.invalidate_drawer(new.id)
    reused = store.drawers.add_drawer(note("d", name="readme"))
    assert reused.is_current


# --- listings -------------------------------------------------------------------------------------


def test_listing_pages_through_current_drawers_in_order(store: Store) -> None:
    ids = [store.drawers.add_drawer(note(f"n{i}")).id for i in range(7)]
    store.drawers.invalidate_drawer(ids[3])
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = store.drawers.list_drawers("w", "r", 3, after)
        seen.extend(d.id for d in page.items)
        pages += 1
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == [i for i in ids if i != ids[3]]
    assert pages == 2


def test_wings_and_rooms_count_current_drawers(store: Store) -> None:
    a = store.drawers.add_drawer(note("x", wing="alpha", room="one"))
    store.drawers.add_drawer(note("y", wing="alpha", room="two"))
    store.drawers.add_drawer(note("z", wing="beta", room="one"))
    store.drawers.invalidate_drawer(a.id)
    assert [(w.name, w.drawers) for w in store.drawers.list_wings()] == [("alpha", 1), ("beta", 1)]
    assert [(r.name, r.drawers) for r in store.drawers.list_rooms("alpha")] == [("one", 0), ("two", 1)]
    with pytest.raises(NotFound):
        store.drawers.list_rooms("gamma")


# --- lexical retrieval ----------------------------------------------------------------------------

HOSTILE = [
    '"',
    '""',
    "*",
    "AND",
    "OR",
    "NOT",
    "NEAR(",
    "NEAR(a b, 3)",
    "-x",
    "fox -quick",
    '"unbalanced',
    'quick" OR "fox',
    "a:b",
    "content:fox",
    "(",
    ")",
    "^fox",
    "fox*",
    "{fox}",
    "+",
    "'",
    "\\",
    "--",
    "fox AND",
    "AND fox",
    "NEAR",
    "quick + brown",
    "\x00",
    "🏰",
    "   ;DROP TABLE drawer;--",
    "%",
    "_",
    "ü",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_query_strings_never_error(seeded_store: Store, query: str) -> None:
    try:
        hits = search(seeded_store, query)
    except InvalidRequest as refused:
        assert refused.field == "query", "only an empty query may be refused"
        return
    assert isinstance(hits, list)


def test_operators_in_user_text_are_searched_as_words(seeded_store: Store) -> None:
    # The drawer holding every word first; a drawer holding only "and" fills the leg below it (no operator applied).
    assert search(seeded_store, "AND OR NOT", room="r") == ["AND OR NOT keywords", "x-ray and star*"]
    assert search(seeded_store, "NEAR(river", room="r") == ["near the river bank"]
    assert search(seeded_store, '"quick', room="r") == ["the quick brown fox"]
    assert search(seeded_store, "star*", room="r") == ["x-ray and star*"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(alphabet=st.characters(categories=("P", "S", "Zs", "L", "N", "Cc")), min_size=1, max_size=40))
@example(query='"*"')
@example(query='NEAR("a" "b")')
def test_random_punctuation_never_errors(seeded_store: Store, query: str) -> None:
    try:
        search(seeded_store, query)
    except InvalidRequest as refused:
        assert refused.field == "query" and not query.strip()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=40))
def test_quoted_terms_are_always_a_valid_match_expression(seeded_store: Store, query: str) -> None:
    # Whatever the text, the terms reach the engine as values: no query may error in either dialect.
    seeded_store.search.lexical_candidates(LexicalQuery(tuple(query_terms(query)), require_all=False), Scope(), 5)


def test_all_terms_are_required_first_then_any_term_below(store: Store) -> None:
    store.drawers.add_drawer(note("apples and pears"))
    store.drawers.add_drawer(note("apples only"))
    assert search(store, "apples pears") == ["apples and pears", "apples only"]
    assert sorted(search(store, "pears plums")) == ["apples and pears"]
    assert sorted(search(store, "apples")) == ["apples and pears", "apples only"]


def test_lexical_matching_is_stemmed_and_case_folded(store: Store) -> None:
    store.drawers.add_drawer(note("The Castles were Running"))
    assert search(store, "castle run") == ["The Castles were Running"]


# --- filters apply before the limit ---------------------------------------------------------------


def test_scope_filters_apply_before_the_limit(store: Store) -> None:
    for i in range(30):
        store.drawers.add_drawer(note(f"lantern lantern lantern {i}", wing="loud"))
    store.drawers.add_drawer(note("a lantern among many other words here", wing="quiet", room="attic", tags=("x", "y")))
    store.drawers.add_drawer(note("a lantern with one tag only", wing="quiet", room="attic", tags=("x",)))
    origin = Origin(connector="notes", source_id="s", document="d.md", chunk=0, revision="r")
    store.drawers.add_drawer(
        note("a mined lantern", wing="quiet", room="cellar", source=Source(kind="file", origin=origin))
    )

    assert search(store, "lantern", limit=1, wing="quiet", room="attic", tags=["x", "y"]) == [
        "a lantern among many other words here"
    ]
    assert sorted(search(store, "lantern", limit=5, wing="quiet", tags=["x"])) == [
        "a lantern among many other words here",
        "a lantern with one tag only",
    ]
    assert search(store, "lantern", limit=1, source_kind="file") == ["a mined lantern"]
    assert search(store, "lantern", limit=1, connector="notes") == ["a mined lantern"]
    assert len(search(store, "lantern", limit=3)) == 3


@pytest.fixture
def superseded(store: Store) -> tuple[Store, str, str]:
    """Strongly matching decoys, valid [2022, now), then v1 valid [2020, t) and its weakly matching successor v2.

    Each temporal form must leave the decoys out before the limit, or they would take the only slot."""
    for i in range(25):
        decoy = store.drawers.add_drawer(note(f"beacon beacon beacon beacon decoy {i}", valid_from=DECOYS_FROM))
        store.drawers.invalidate_drawer(decoy.id)
    v1 = store.drawers.add_drawer(note("old beacon beacon text", valid_from=PAST))
    v2 = store.drawers.supersede_drawer(v1.id, note("new beacon among a great many other words of text"))
    return store, v1.id, v2.id


OLD = "old beacon beacon text"
NEW = "new beacon among a great many other words of text"


def test_current_search_skips_closed_versions_before_the_limit(superseded: tuple[Store, str, str]) -> None:
    store, _, _ = superseded
    assert search(store, "beacon", limit=1) == [NEW]


def test_as_of_returns_what_was_current_then(superseded: tuple[Store, str, str]) -> None:
    store, _, v2 = superseded
    assert search(store, "beacon", limit=1, as_of="2021-06-01T00:00:00Z") == [OLD]
    assert search(store, "beacon", limit=1, as_of=store.drawers.get_drawer(v2).valid_from) == [NEW]
    assert search(store, "beacon", limit=5, as_of="2019-01-01T00:00:00Z") == []


def test_window_returns_versions_overlapping_it(superseded: tuple[Store, str, str]) -> None:
    store, _, _ = superseded
    assert search(store, "beacon", limit=1, from_="2020-06-01", until="2021-06-01") == [OLD]
    everything = search(store, "beacon", limit=50, from_="2019-06-01", until="2999-01-01")
    assert len(everything) == 27 and OLD in everything and NEW in everything


def test_include_historical_returns_closed_versions(superseded: tuple[Store, str, str]) -> None:
    store, _, _ = superseded
    found = search(store, "beacon", limit=50, include_historical=True)
    assert len(found) == 27
    assert OLD in found and NEW in found
    assert NEW not in search(store, "beacon", limit=3, include_historical=True), "the strongest matches first"


def test_store_temporal_rule_is_half_open(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("edge case", valid_from=PAST))
    closed = store.drawers.invalidate_drawer(drawer.id)
    assert closed.valid_to is not None
    expression = LexicalQuery(tuple(["edge"]), require_all=True)

    def found(when: When) -> bool:
        return bool(store.search.lexical_candidates(expression, Scope(when=when), 5))

    assert found(AsOf(PAST)), "valid_from is inclusive"
    assert not found(AsOf(closed.valid_to)), "valid_to is not"
    assert not found(Between(start="2010-01-01T00:00:00.000000Z", end=PAST)), "a window ending at valid_from"
    assert found(Between(start="2010-01-01T00:00:00.000000Z", end="2020-01-01T00:00:00.000001Z"))
    assert not found(CURRENT), "closed now"
    assert found(ANY_TIME)


# --- more drawers ---------------------------------------------------------------------------------


def test_get_drawers_returns_every_known_id_once(store: Store) -> None:
    ids = [store.drawers.add_drawer(note(f"d{i}")).id for i in range(620)]
    found = store.drawers.get_drawers([*ids, ids[0], "missing"])
    assert set(found) == set(ids)
    assert found[ids[5]].content == "d5"
    assert store.drawers.get_drawers([]) == {}


def test_find_current_copy_skips_named_and_closed_drawers(store: Store) -> None:
    store.drawers.add_drawer(note("same text", name="named"))
    assert store.drawers.find_current_copy("w", "r", sha256("same text")) is None
    plain = store.drawers.add_drawer(note("same text"))
    assert store.drawers.find_current_copy("w", "r", sha256("same text")) == plain
    assert store.drawers.find_current_copy("w", "other", sha256("same text")) is None
    store.drawers.invalidate_drawer(plain.id)
    assert store.drawers.find_current_copy("w", "r", sha256("same text")) is None


def test_find_current_copy_may_ask_for_one_agents_copy(store: Store) -> None:
    mine = store.drawers.add_drawer(note("diary line", source=Source(kind="note", agent="claude")))
    theirs = store.drawers.add_drawer(note("diary line", source=Source(kind="note", agent="codex")))
    assert store.drawers.find_current_copy("w", "r", sha256("diary line"), agent="codex") == theirs
    assert store.drawers.find_current_copy("w", "r", sha256("diary line"), agent="claude") == mine
    assert store.drawers.find_current_copy("w", "r", sha256("diary line"), agent="gemini") is None
    assert store.drawers.find_current_copy("w", "r", sha256("diary line")) == mine


def test_latest_drawers_are_current_newest_first_within_scope(store: Store) -> None:
    first = store.drawers.add_drawer(note("one", tags=("t",)))
    second = store.drawers.add_drawer(note("two", room="elsewhere", tags=("t",)))
    third = store.drawers.add_drawer(note("three", tags=("t",)))
    store.drawers.invalidate_drawer(third.id)
    assert [d.id for d in store.drawers.latest_drawers(Scope(), 10)] == [second.id, first.id]
    assert [d.id for d in store.drawers.latest_drawers(Scope(room="r"), 10)] == [first.id]
    assert [d.id for d in store.drawers.latest_drawers(Scope(tags=("t",)), 1)] == [second.id]


def test_eligibility_applies_scope_and_time(store: Store) -> None:
    old = store.drawers.add_drawer(note("old", valid_from=PAST))
    new = store.drawers.supersede_drawer(old.id, note("new"))
    other = store.drawers.add_drawer(note("elsewhere", wing="x", tags=("a",)))
    everything = [old.id, new.id, other.id, "unknown"]
    assert store.search.eligible_ids(everything, Scope()) == {new.id, other.id}
    assert store.search.eligible_ids(everything, Scope(wing="w", when=ANY_TIME)) == {old.id, new.id}
    assert store.search.eligible_ids(everything, Scope(tags=("a",))) == {other.id}
    assert store.search.eligible_ids(everything, Scope(when=AsOf("2021-01-01T00:00:00.000000Z"))) == {old.id}
    assert store.search.eligible_ids([], Scope()) == set()
    assert store.search.all_eligible_ids(Scope()) == {new.id, other.id}
    assert store.search.all_eligible_ids(Scope(wing="w", when=ANY_TIME)) == {old.id, new.id}


def test_long_contents_reads_the_text_of_the_long_drawers_only(store: Store) -> None:
    short = store.drawers.add_drawer(note("short"))
    long = store.drawers.add_drawer(note("é" * 40))  # characters, not bytes: 40 characters, 80 bytes in UTF-8
    longer = store.drawers.add_drawer(note("a" * 100))
    everything = [short.id, long.id, longer.id, "unknown"]
    assert store.search.long_contents(everything, 39) == {long.id: "é" * 40, longer.id: "a" * 100}
    assert store.search.long_contents(everything, 40) == {longer.id: "a" * 100}
    assert store.search.long_contents([], 0) == {}


def test_provenance_source_and_tags_round_trip(store: Store) -> None:
    drawer = store.drawers.add_drawer(
        NewDrawer(
            wing="w",
            room="r",
            content="x",
            tags=("b", "a", "b"),
            source=Source(kind="transcript", uri="https://example.invalid/x", agent="claude"),
            provenance=Provenance(requested_by="job", job_id="job-1"),
        )
    )
    again = store.drawers.get_drawer(drawer.id)
    assert again == drawer
    assert again.tags == ("b", "a", "b"), "tags are kept as given"
    assert again.source.agent == "claude" and again.provenance.job_id == "job-1"
    assert store.drawers.latest_drawers(Scope(agent="claude"), 5) == [drawer]


def test_metadata_snapshot_keeps_its_key_order(store: Store) -> None:
    metadata = {"zeta": 1, "alpha": {"y": [3, 2, 1], "b": None}, "mid": "ü 🏰"}
    origin = Origin(connector="notes", source_id="s", document="d", chunk=0, revision="r", metadata=metadata)
    drawer = store.drawers.add_drawer(note("ordered", source=Source(kind="note", origin=origin)))
    stored = store.drawers.get_drawer(drawer.id).source.origin
    assert stored is not None
    assert list(stored.metadata) == ["zeta", "alpha", "mid"]
    assert list(stored.metadata["alpha"]) == ["y", "b"]


def test_valid_from_is_normalized_to_the_stored_form(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("dated", valid_from="2021-03-04T05:06:07+02:00"))
    assert drawer.valid_from == "2021-03-04T03:06:07.000000Z"
    with pytest.raises(InvalidRequest):
        store.drawers.add_drawer(note("bad date", valid_from="yesterday"))


def test_lexical_signal_is_higher_for_better_matches(store: Store) -> None:
    strong = store.drawers.add_drawer(note("harbour harbour harbour lights"))
    weak = store.drawers.add_drawer(note("a harbour among a great many other words in a long sentence of text"))
    store.drawers.add_drawer(note("nothing to see"))
    expression = LexicalQuery(tuple(["harbour"]), require_all=True)
    found = store.search.lexical_candidates(expression, Scope(), 10)
    assert [c.drawer_id for c in found] == [strong.id, weak.id]
    assert found[0].signal > found[1].signal > 0
    assert store.search.lexical_candidates(expression, Scope(), 1) == found[:1]


def test_rare_terms_outweigh_common_ones_when_any_term_may_match(store: Store) -> None:
    for i in range(10):
        store.drawers.add_drawer(note(f"common word number {i}"))
    rare = store.drawers.add_drawer(note("the zeppelin"))
    common = store.drawers.add_drawer(note("the common"))
    expression = LexicalQuery(tuple(["zeppelin", "common"]), require_all=False)
    found = [c.drawer_id for c in store.search.lexical_candidates(expression, Scope(), 20)]
    assert found.index(rare.id) < found.index(common.id)
    assert len(found) == 12


def test_a_bounded_any_term_query_matches_on_its_rarest_terms_only(store: Store) -> None:
    for i in range(6):
        store.drawers.add_drawer(note(f"lantern story number {i}"))
    for i in range(3):
        store.drawers.add_drawer(note(f"a harbour tale number {i}"))
    both = store.drawers.add_drawer(note("the harbour lantern"))
    rare = store.drawers.add_drawer(note("the zeppelin over the harbour"))
    for i in range(20):
        store.drawers.add_drawer(note(f"filler text {i} about nothing"))
    terms = ("lantern", "zeppelin", "harbour")  # in 7, 1 and 5 drawers

    def found(max_rows: int | None) -> list[str]:
        query = LexicalQuery(terms, require_all=False, max_rows=max_rows)
        return [c.drawer_id for c in store.search.lexical_candidates(query, Scope(), 20)]

    exact = found(None)
    assert len(exact) == 11, "unbounded: every drawer holding any term"
    assert found(10**6) == exact, "a budget every term fits in changes nothing"
    harbour = {d for d in exact if "harbour" in store.drawers.get_drawer(d).content}
    bounded = found(6)  # zeppelin and harbour fit (1 + 5 drawers); lantern (7) is left out
    assert set(bounded) == harbour and both.id in harbour
    assert bounded[0] == rare.id, "scored by the terms matched: the drawer holding both comes first"
    assert found(1) == [rare.id], "the rarest term is always matched"
    assert found(0) == [rare.id]


def test_a_bounded_query_none_of_whose_terms_can_rank_matches_nothing(store: Store) -> None:
    for i in range(8):
        store.drawers.add_drawer(note(f"system data record {i}"))  # "system" and "data" in 9 of 11: BM25 floors them
    store.drawers.add_drawer(note("the system keeps its data and a zeppelin"))
    store.drawers.add_drawer(note("an unrelated line"))
    store.drawers.add_drawer(note("another unrelated line"))

    def found(require_all: bool, max_rows: int | None, *terms: str) -> list[str]:
        query = LexicalQuery(terms, require_all=require_all, max_rows=max_rows)
        return [c.drawer_id for c in store.search.lexical_candidates(query, Scope(), 20)]

    for require_all in (True, False):
        assert len(found(require_all, None, "system", "data")) == 9, "exact: every drawer holding them"
        assert len(found(require_all, 9, "system", "data")) == 9, "the rarest within the bound: matched as before"
        assert found(require_all, 8, "system", "data") == [], "every term common, the rarest past the bound"
        assert found(require_all, 8, "system") == []
    # A term that can rank keeps the query: the common ones are matched beside it as before.
    assert len(found(True, 8, "system", "data", "zeppelin")) == 1
    assert len(found(False, 8, "data", "zeppelin")) >= 1
    assert len(found(True, 8, "unrelated")) == 2


def test_diacritics_and_case_are_folded_on_both_sides(store: Store) -> None:
    store.drawers.add_drawer(note("Crème Brûlée at the CAFÉ"))
    assert search(store, "creme brulee cafe") == ["Crème Brûlée at the CAFÉ"]
    assert search(store, "CRÈME") == ["Crème Brûlée at the CAFÉ"]


def test_words_joined_by_punctuation_are_found_separately(store: Store) -> None:
    store.drawers.add_drawer(note("see src/memcastle/app.py and alex@example.com or v1.2.3"))
    hit = ["see src/memcastle/app.py and alex@example.com or v1.2.3"]
    assert search(store, "app py") == hit
    assert search(store, "memcastle") == hit
    assert search(store, "example") == hit
    assert search(store, "v1") == hit


# --- embeddings -----------------------------------------------------------------------------------


def unit_rows(count: int, dimension: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((count, dimension)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_embeddings_are_stored_exactly_and_loaded_incrementally(store: Store) -> None:
    a = store.drawers.add_drawer(note("a"))
    b = store.drawers.add_drawer(note("b"))
    assert store.embeddings.count_missing_embeddings("m") == 2
    assert [d.id for d in drawers_missing_embeddings(store, "m", 10)] == [a.id, b.id]
    first = unit_rows(2, 16, seed=1)
    store.embeddings.put_embeddings("m", [(a.id, first)])
    chunk = store.embeddings.load_embeddings("m", 0, 16, limit=100)
    ids, matrix, last = chunk.ids, chunk.matrix, chunk.last_id
    assert ids == [a.id, a.id] and chunk.passages == [0, 1]
    assert matrix.dtype == np.float32 and matrix.shape == (2, 16)
    assert np.array_equal(matrix, first), "vectors come back bit for bit"
    assert store.embeddings.count_missing_embeddings("m") == 1
    second = unit_rows(1, 16, seed=2)
    store.embeddings.put_embeddings("m", [(b.id, second)])
    more = store.embeddings.load_embeddings("m", last, 16, limit=100)
    assert more.ids == [b.id] and more.last_id > last and np.array_equal(more.matrix, second)
    none = store.embeddings.load_embeddings("m", more.last_id, 16, limit=100)
    assert none.ids == [] and none.matrix.shape == (0, 16) and none.last_id == more.last_id
    assert store.embeddings.count_missing_embeddings("m") == 0
    assert drawers_missing_embeddings(store, "m", 10) == []


def test_vectors_are_read_back_by_row_in_the_order_asked(store: Store) -> None:
    """The semantic leg's graph keeps only coarse copies: it reads a found row's exact vector back by its row id."""
    a, b = store.drawers.add_drawer(note("a")), store.drawers.add_drawer(note("b"))
    vectors = unit_rows(3, 8, seed=4)
    store.embeddings.put_embeddings("m", [(a.id, vectors[:2]), (b.id, vectors[2:])])
    rows = store.embeddings.load_embeddings("m", 0, 8, limit=10).row_ids
    back = store.embeddings.vectors_of_rows([rows[2], rows[0], rows[1]], 8)
    assert back.dtype == np.float32 and np.array_equal(back, vectors[[2, 0, 1]]), "bit for bit, in the order asked"
    store.embeddings.put_embeddings("m", [(a.id, vectors[2:])])  # a embedded again: its old rows are gone
    gone = store.embeddings.vectors_of_rows([rows[0], rows[2]], 8)
    assert not gone[0].any() and np.array_equal(gone[1], vectors[2]), "a row no longer stored reads as zeros"
    assert store.embeddings.vectors_of_rows([], 8).shape == (0, 8)


def test_the_embed_walk_can_take_what_people_write_first(store: Store) -> None:
    """Notes, transcripts and commits, and files of prose (Markdown, text, …), before code and data files: the embed
    sweep gives them their first vectors first (what a user searches by meaning first)."""

    def filed(document: str) -> str:
        origin = Origin(connector="directory", source_id="s", document=document, chunk=0, revision="r", metadata={})
        source = Source(kind="file", uri=f"file:///p/{document}", origin=origin)
        return store.drawers.add_drawer(note(f"text of {document}", source=source)).id

    readme, code, notes, data = filed("README.MD"), filed("x.py"), filed("docs/n.txt"), filed("d.json")
    written = store.drawers.add_drawer(note("a note")).id
    walk = store.embeddings.next_to_embed("m", 10, before=10**9, current=True, stage="head", subset="prose")
    assert [d.id for _, d in walk] == [written, notes, readme], "newest first, code and data left for later"
    everything = store.embeddings.next_to_embed("m", 10, before=10**9, current=True, stage="head")
    assert {d.id for _, d in everything} == {readme, code, notes, data, written}


def test_the_embed_walk_can_leave_the_files_that_test_code_for_last(store: Store) -> None:
    """Test files by their path: in a `test`/`tests` folder, named `test_*`, `*_test.*`, `*.test.*` or `*.spec.*`;
    `_` is no wildcard (`testing.py`, `latest.py` are code)."""

    def filed(document: str) -> str:
        origin = Origin(connector="directory", source_id="s", document=document, chunk=0, revision="r", metadata={})
        source = Source(kind="file", uri=f"file:///p/{document}", origin=origin)
        return store.drawers.add_drawer(note(f"text of {document}", source=source)).id

    tests = {filed(p) for p in ("test/a.py", "Lib/Tests/b.py", "test_c.py", "pkg/test_d.py", "e_test.go", "f.spec.ts")}
    others = {filed(p) for p in ("testing.py", "pkg/latest.py", "contest/g.py", "x_tests.py")}
    others.add(store.drawers.add_drawer(note("a note about test/a.py")).id)
    walk = store.embeddings.next_to_embed
    assert {d.id for _, d in walk("m", 20, before=10**9, current=True, subset="tests")} == tests
    assert {d.id for _, d in walk("m", 20, before=10**9, current=True, subset="untested")} == others


def test_a_drawers_first_passage_can_come_before_its_others(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("three passages"))
    other = store.drawers.add_drawer(note("one passage"))
    vectors = unit_rows(3, 8, seed=3)
    walk = [d.id for _, d in store.embeddings.next_to_embed("m", 10, after=0, stage="head")]
    assert walk == [drawer.id, other.id]
    store.embeddings.put_embeddings(
        "m", [(drawer.id, vectors[:1]), (other.id, vectors[:1])], totals={drawer.id: 3, other.id: 1}
    )
    assert store.embeddings.count_missing_embeddings("m") == 1, "the one-passage drawer is complete; the other is not"
    assert store.embeddings.next_to_embed("m", 10, after=0, stage="head") == []
    assert [d.id for _, d in store.embeddings.next_to_embed("m", 10, after=0, stage="rest")] == [drawer.id]
    assert [d.id for _, d in store.embeddings.next_to_embed("m", 10, after=0)] == [drawer.id]
    heads = store.embeddings.load_embeddings("m", 0, 8, limit=100)
    assert (heads.ids, heads.totals, heads.passages) == ([drawer.id, other.id], [3, 1], [0, 0])
    store.embeddings.put_embeddings("m", [(drawer.id, vectors[1:])], first_passage=1, totals={drawer.id: 3})
    assert (
        store.embeddings.count_missing_embeddings("m") == 0
        and store.embeddings.next_to_embed("m", 10, after=0, stage="rest") == []
    )
    rest = store.embeddings.load_embeddings("m", heads.last_id, 8, limit=100)
    assert rest.ids == [drawer.id, drawer.id] and rest.totals == [3, 3] and rest.passages == [1, 2]
    assert np.array_equal(rest.matrix, vectors[1:])
    # Starting at the first passage again replaces the drawer's vectors instead of adding a fourth.
    store.embeddings.put_embeddings("m", [(drawer.id, vectors)])
    assert store.embeddings.load_embeddings("m", 0, 8, limit=100).ids.count(drawer.id) == 3


def test_a_drawer_without_passages_counts_as_embedded(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("nothing to embed"))
    store.embeddings.put_embeddings(
        "m", [(drawer.id, np.zeros((0, 0), dtype=np.float32)), ("unknown-drawer", unit_rows(1, 4))]
    )
    assert store.embeddings.count_missing_embeddings("m") == 0
    assert store.embeddings.load_embeddings("m", 0, 4, limit=100).ids == []


def test_re_embedding_replaces_a_drawers_vectors(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("again"))
    store.embeddings.put_embeddings("m", [(drawer.id, unit_rows(3, 8, seed=1))])
    last = store.embeddings.load_embeddings("m", 0, 8, limit=100).last_id
    replacement = unit_rows(1, 8, seed=9)
    store.embeddings.put_embeddings("m", [(drawer.id, replacement)])
    again = store.embeddings.load_embeddings("m", last, 8, limit=100)
    assert again.ids == [drawer.id] and again.passages == [0] and np.array_equal(again.matrix, replacement)


def test_vectors_load_in_chunks_of_the_limit_in_row_order(store: Store) -> None:
    drawers = [store.drawers.add_drawer(note(f"chunk {i}")) for i in range(5)]
    store.embeddings.put_embeddings("m", [(d.id, unit_rows(2, 4, seed=i)) for i, d in enumerate(drawers)])
    seen: list[str] = []
    last = 0
    while True:
        chunk = store.embeddings.load_embeddings("m", last, 4, limit=3)
        assert len(chunk.ids) <= 3
        seen.extend(chunk.ids)
        if not chunk.ids:
            break
        assert chunk.last_id > last
        last = chunk.last_id
    assert seen == [d.id for d in drawers for _ in range(2)]


def test_missing_embeddings_put_current_drawers_first(store: Store) -> None:
    closed = store.drawers.add_drawer(note("closed"))
    store.drawers.invalidate_drawer(closed.id)
    current = store.drawers.add_drawer(note("current"))
    assert [d.id for d in drawers_missing_embeddings(store, "m", 10)] == [current.id, closed.id]


def test_other_models_are_dropped_after_a_model_change(store: Store) -> None:
    drawer = store.drawers.add_drawer(note("x"))
    store.embeddings.put_embeddings("old", [(drawer.id, unit_rows(2, 8))])
    store.embeddings.put_embeddings("new", [(drawer.id, unit_rows(1, 12))])
    assert store.embeddings.drop_other_embeddings("new") == 2
    assert store.embeddings.load_embeddings("old", 0, 8, limit=100).ids == []
    assert store.embeddings.count_missing_embeddings("old") == 1
    assert store.embeddings.load_embeddings("new", 0, 12, limit=100).ids == [drawer.id]


# --- mining records -------------------------------------------------------------------------------


def source_record(cursor: str | None = None) -> SourceRecord:
    return SourceRecord(
        id="src-1", connector="notes", locator="/notes", options={"since": "2024"}, cursor=cursor, updated_at=utc_now()
    )


def test_a_source_keeps_its_cursor_when_upserted_again(store: Store) -> None:
    assert store.mining.get_source("src-1") is None
    created = store.mining.upsert_source(source_record())
    assert created.cursor is None and dict(created.options) == {"since": "2024"}
    store.mining.apply_document(
        DocumentChanges(
            source=SourceRecord(**{**created.__dict__, "cursor": "c1"}),
            record=DocumentRecord("src-1", "a.md", "rev1", ("h1",), (), utc_now()),
        )
    )
    again = store.mining.upsert_source(
        SourceRecord(id="src-1", connector="notes", locator="/elsewhere", options={}, cursor=None, updated_at=utc_now())
    )
    assert again.cursor == "c1" and again.locator == "/elsewhere" and dict(again.options) == {}


def test_a_document_is_applied_in_one_transaction(store: Store) -> None:
    source = store.mining.upsert_source(source_record())
    keep = store.drawers.add_drawer(note("chunk 0"))
    change = store.drawers.add_drawer(note("chunk 1"))
    drop = store.drawers.add_drawer(note("chunk 2"))
    advanced = SourceRecord(**{**source.__dict__, "cursor": "after-doc"})
    store.mining.apply_document(
        DocumentChanges(
            source=advanced,
            record=DocumentRecord("src-1", "doc.md", "rev2", ("h0", "h1b"), (keep.id, "new-1"), utc_now()),
            created=(NewDrawer(wing="w", room="r", content="brand new", id="new-2"),),
            superseded=((change.id, NewDrawer(wing="w", room="r", content="chunk 1 changed", id="new-1")),),
            invalidated=(drop.id,),
            at="2030-01-01T00:00:00.000000Z",
        )
    )
    assert store.drawers.get_drawer(change.id).superseded_by == "new-1"
    assert store.drawers.get_drawer("new-1").valid_from == "2030-01-01T00:00:00.000000Z"
    assert store.drawers.get_drawer(drop.id).valid_to == "2030-01-01T00:00:00.000000Z"
    assert store.drawers.get_drawer("new-2").is_current
    document = store.mining.get_document("src-1", "doc.md")
    assert document is not None and document.revision == "rev2"
    assert document.chunk_hashes == ("h0", "h1b") and document.drawer_ids == (keep.id, "new-1")
    found = store.mining.get_source("src-1")
    assert found is not None and found.cursor == "after-doc"
    assert store.mining.get_document("src-1", "other.md") is None


def test_a_failing_document_leaves_no_trace(store: Store) -> None:
    source = store.mining.upsert_source(source_record(cursor="before"))
    closed = store.drawers.add_drawer(note("already closed"))
    store.drawers.invalidate_drawer(closed.id)
    victim = store.drawers.add_drawer(note("would be invalidated"))
    with pytest.raises(Conflict):
        store.mining.apply_document(
            DocumentChanges(
                source=SourceRecord(**{**source.__dict__, "cursor": "after"}),
                record=DocumentRecord("src-1", "doc.md", "rev", (), (), utc_now()),
                created=(NewDrawer(wing="w", room="r", content="new", id="fresh"),),
                invalidated=(victim.id, closed.id),
            )
        )
    assert store.drawers.get_drawer(victim.id).is_current
    with pytest.raises(NotFound):
        store.drawers.get_drawer("fresh")
    assert store.mining.get_document("src-1", "doc.md") is None
    found = store.mining.get_source("src-1")
    assert found is not None and found.cursor == "before"


# --- jobs: the transition table (SPEC §1) ---------------------------------------------------------

Q, R, P, C, F, X = (
    JobStatus.QUEUED,
    JobStatus.RUNNING,
    JobStatus.PAUSED,
    JobStatus.COMPLETED,
    JobStatus.FAILED,
    JobStatus.CANCELLED,
)

# Written out from SPEC §1, independently of `memcastle.model.JOB_TRANSITIONS`.
SPEC_TABLE = {
    (Q, R),  # claim
    (R, P),  # pause
    (P, Q),  # resume
    (R, C),
    (R, F),  # finish
    (Q, X),
    (P, X),
    (R, X),  # cancel
    (R, Q),  # crash recovery / shutdown, within budget
    (F, Q),  # retry
}
ALL_PAIRS = list(itertools.product(JobStatus, repeat=2))

# A legal path from a fresh (queued) job to each status.
PATH_TO = {
    Q: [],
    R: [R],
    P: [R, P],
    C: [R, C],
    F: [R, F],
    X: [X],
}


def job_in(store: Store, status: JobStatus) -> Job:
    job, _ = store.jobs.create_job(NewJob(kind="probe"))
    for step in PATH_TO[status]:
        job = store.jobs.transition_job(job.id, step)
    assert job.status is status
    return job


@pytest.mark.parametrize(("current", "target"), ALL_PAIRS, ids=[f"{a.value}->{b.value}" for a, b in ALL_PAIRS])
def test_store_enforces_the_transition_table(shared_store: Store, current: JobStatus, target: JobStatus) -> None:
    store = shared_store
    job = job_in(store, current)
    if (current, target) in SPEC_TABLE:
        moved = store.jobs.transition_job(job.id, target)
        assert moved.status is target
        assert store.jobs.get_job(job.id).status is target
    else:
        with pytest.raises(IllegalTransition) as refused:
            store.jobs.transition_job(job.id, target, error="should not be written")
        assert refused.value.current == current.value
        assert refused.value.target == target.value
        assert current.value in refused.value.message and target.value in refused.value.message
        after = store.jobs.get_job(job.id)
        assert after.status is current, "a refused transition must not change the job"
        assert after.error is None, "a refused transition must not write its fields"


def test_illegal_transition_is_a_conflict_naming_the_job(shared_store: Store) -> None:
    job = job_in(shared_store, C)
    with pytest.raises(Conflict) as refused:
        shared_store.jobs.transition_job(job.id, R)
    assert isinstance(refused.value, IllegalTransition)
    assert refused.value.existing_id == job.id
    assert job.id in refused.value.message


def test_jobs_page_on_from_a_cursor_without_skipping_jobs_created_in_the_same_instant(
    palace_backend: BackendPalace,
) -> None:
    clock = ["2026-01-01T00:00:00.000000Z"]
    store = palace_backend.open(now=lambda: clock[0])
    created = []
    for n in range(7):
        clock[0] = "2026-01-01T00:00:00.000000Z" if n < 3 else "2026-01-02T00:00:00.000000Z"
        created.append(store.jobs.create_job(NewJob(kind="probe", params={"n": n}))[0].id)
    seen: list[str] = []
    page = store.jobs.list_jobs(None, "probe", 2)
    while page:
        seen += [job.id for job in page]
        page = store.jobs.list_jobs(None, "probe", 2, before=page[-1].id)
    assert sorted(seen) == sorted(created) and len(seen) == 7, "every job once, across the pages"
    newest_first = [job.id for job in store.jobs.list_jobs(None, "probe", 7)]
    assert seen == newest_first
    assert set(newest_first[:4]) == set(created[3:]), "the later instant's four first"


def test_transition_fenced_by_owner_is_refused_for_another_owner(store: Store) -> None:
    job, _ = store.jobs.create_job(NewJob(kind="fenced"))
    claimed = store.jobs.claim_next_job("worker-a", 30, ["fenced"])
    assert claimed is not None and claimed.id == job.id
    with pytest.raises(Conflict):
        store.jobs.transition_job(job.id, C, owner="worker-b", finished_at=utc_now())
    assert store.jobs.get_job(job.id).status is R
    assert store.jobs.transition_job(job.id, C, owner="worker-a").status is C


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(targets=st.lists(st.sampled_from(list(JobStatus)), min_size=1, max_size=12))
def test_any_sequence_of_requests_follows_the_table(shared_store: Store, targets: list[JobStatus]) -> None:
    """Drive one job through random requests: the store moves exactly when the table says so."""
    store = shared_store
    job, _ = store.jobs.create_job(NewJob(kind="walk"))
    status = Q
    for target in targets:
        if (status, target) in SPEC_TABLE:
            assert store.jobs.transition_job(job.id, target).status is target
            status = target
        else:
            with pytest.raises(IllegalTransition):
                store.jobs.transition_job(job.id, target)
        assert store.jobs.get_job(job.id).status is status


# --- jobs: claims, leases, checkpoints ------------------------------------------------------------


def test_claims_go_by_priority_then_age_and_only_to_handled_kinds(store: Store) -> None:
    low, _ = store.jobs.create_job(NewJob(kind="a", priority=0))
    first, _ = store.jobs.create_job(NewJob(kind="a", priority=50))
    second, _ = store.jobs.create_job(NewJob(kind="a", priority=50))
    other, _ = store.jobs.create_job(NewJob(kind="b", priority=100))
    assert store.jobs.claim_next_job("w", 30, []) is None
    order = [store.jobs.claim_next_job("w", 30, ["a"]) for _ in range(4)]
    assert [j.id if j else None for j in order] == [first.id, second.id, low.id, None]
    assert store.jobs.get_job(other.id).status is Q


def test_a_claim_leases_the_job_and_counts_the_attempt(store: Store) -> None:
    job, _ = store.jobs.create_job(NewJob(kind="k", params={"path": "/x", "n": 1}, requested_by="cli"))
    store.jobs.request_job_stop(job.id, pause=True)
    before = utc_now()
    claimed = store.jobs.claim_next_job("worker-1", 60, ["k"])
    assert claimed is not None
    assert claimed.status is R and claimed.lease_owner == "worker-1" and claimed.attempt == 1
    assert claimed.lease_expires_at is not None and claimed.lease_expires_at > before
    assert claimed.started_at is not None and claimed.started_at >= claimed.created_at
    assert claimed.pause_requested is False, "a fresh claim clears a stale pause request"
    assert dict(claimed.params) == {"path": "/x", "n": 1} and claimed.requested_by == "cli"
    assert store.jobs.running_jobs() == [claimed]


def test_a_checkpoint_is_saved_only_by_the_lease_owner(store: Store) -> None:
    job, _ = store.jobs.create_job(NewJob(kind="k"))
    claimed = store.jobs.claim_next_job("owner", 1, ["k"])
    assert claimed is not None
    saved = store.jobs.save_job_checkpoint(
        job.id, "owner", {"done": ["a", "b"], "z": 1, "a": 2}, Progress(current=2, total=5, message="half"), 120
    )
    assert dict(saved.checkpoint) == {"done": ["a", "b"], "z": 1, "a": 2}
    assert list(saved.checkpoint) == ["done", "z", "a"]
    assert saved.progress == Progress(current=2, total=5, message="half")
    assert saved.lease_expires_at is not None and claimed.lease_expires_at is not None
    assert saved.lease_expires_at > claimed.lease_expires_at, "a checkpoint renews the lease"
    with pytest.raises(Conflict) as refused:
        store.jobs.save_job_checkpoint(job.id, "intruder", {}, Progress(), 60)
    assert refused.value.existing_id == job.id
    store.jobs.transition_job(job.id, Q, lease_owner=None, lease_expires_at=None)
    with pytest.raises(Conflict):
        store.jobs.save_job_checkpoint(job.id, "owner", {}, Progress(), 60)
    assert dict(store.jobs.get_job(job.id).checkpoint) == {"done": ["a", "b"], "z": 1, "a": 2}


def test_finishing_records_result_and_clears_the_lease(store: Store) -> None:
    job, _ = store.jobs.create_job(NewJob(kind="k"))
    store.jobs.claim_next_job("w", 30, ["k"])
    done = store.jobs.transition_job(
        job.id,
        C,
        owner="w",
        lease_owner=None,
        lease_expires_at=None,
        finished_at=utc_now(),
        result={"created": 3, "errors": []},
    )
    assert done.is_finished and done.lease_owner is None and done.lease_expires_at is None
    assert dict(done.result or {}) == {"created": 3, "errors": []}
    failed, _ = store.jobs.create_job(NewJob(kind="k"))
    store.jobs.claim_next_job("w", 30, ["k"])
    broken = store.jobs.transition_job(failed.id, F, owner="w", error="ValueError: boom", finished_at=utc_now())
    assert broken.error == "ValueError: boom" and broken.result is None
    retried = store.jobs.transition_job(failed.id, Q, recovery_attempts=0, attempt=0)
    assert retried.status is Q and retried.attempt == 0
    with pytest.raises(ValueError):
        store.jobs.transition_job(failed.id, R, not_a_field=1)


def test_a_coalesced_request_joins_the_queued_job(store: Store) -> None:
    first, created = store.jobs.create_job(NewJob(kind="mine", coalesce_key="miner:docs"))
    again, joined = store.jobs.create_job(NewJob(kind="mine", coalesce_key="miner:docs"))
    assert created and not joined and again.id == first.id
    other, created_other = store.jobs.create_job(NewJob(kind="mine", coalesce_key="miner:other"))
    assert created_other and other.id != first.id
    store.jobs.claim_next_job("w", 30, ["mine"])
    waiting, created_waiting = store.jobs.create_job(NewJob(kind="mine", coalesce_key="miner:docs"))
    assert created_waiting and waiting.id != first.id, "a running job is not joined: one more may wait"


def test_stop_requests_are_flags_on_the_job(store: Store) -> None:
    job, _ = store.jobs.create_job(NewJob(kind="k"))
    paused = store.jobs.request_job_stop(job.id, pause=True)
    assert paused.pause_requested and not paused.cancel_requested
    cancelled = store.jobs.request_job_stop(job.id, cancel=True)
    assert cancelled.pause_requested and cancelled.cancel_requested
    with pytest.raises(NotFound):
        store.jobs.request_job_stop("no-such-job", cancel=True)
    with pytest.raises(NotFound):
        store.jobs.get_job("no-such-job")


def test_jobs_are_listed_newest_first_and_counted_by_status(store: Store) -> None:
    a, _ = store.jobs.create_job(NewJob(kind="mine"))
    b, _ = store.jobs.create_job(NewJob(kind="embed"))
    c, _ = store.jobs.create_job(NewJob(kind="mine"))
    store.jobs.transition_job(c.id, X)
    assert [j.id for j in store.jobs.list_jobs(None, None, 10)] == [c.id, b.id, a.id]
    assert [j.id for j in store.jobs.list_jobs("queued", None, 10)] == [b.id, a.id]
    assert [j.id for j in store.jobs.list_jobs(None, "mine", 1)] == [c.id]
    assert store.jobs.count_jobs() == {
        "queued": 2,
        "running": 0,
        "paused": 0,
        "completed": 0,
        "failed": 0,
        "cancelled": 1,
    }


def test_concurrent_claims_hand_each_job_to_exactly_one_worker(store: Store) -> None:
    ids = {store.jobs.create_job(NewJob(kind="race"))[0].id for _ in range(24)}
    claimed: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            while (job := store.jobs.claim_next_job(name, 30, ["race"])) is not None:
                with lock:
                    claimed.append(job.id)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert sorted(claimed) == sorted(ids)


def test_jobs_sharing_a_coalesce_key_run_one_at_a_time(store: Store) -> None:
    first, _ = store.jobs.create_job(NewJob(kind="sweep", coalesce_key="embed"))
    assert store.jobs.claim_next_job("w1", 30, ["sweep"]) is not None
    behind, created = store.jobs.create_job(NewJob(kind="sweep", coalesce_key="embed"))
    free, _ = store.jobs.create_job(NewJob(kind="sweep", priority=0))
    assert created
    claimed = store.jobs.claim_next_job("w2", 30, ["sweep"])
    assert claimed is not None and claimed.id == free.id, "the job behind a running one of its key waits"
    assert store.jobs.claim_next_job("w2", 30, ["sweep"]) is None
    store.jobs.transition_job(first.id, C, owner="w1", lease_owner=None, lease_expires_at=None)
    after = store.jobs.claim_next_job("w2", 30, ["sweep"])
    assert after is not None and after.id == behind.id


def test_drawer_places_name_wing_room_kind_and_connector(store: Store) -> None:
    origin = Origin(connector="git", source_id="s", document="c", chunk=0, revision="r")
    mined = store.drawers.add_drawer(
        note("commit", wing="proj", room="commits", source=Source(kind="commit", origin=origin))
    )
    manual = store.drawers.add_drawer(note("typed", wing="proj", room="notes"))
    assert store.search.drawer_places([mined.id, manual.id, "unknown"]) == {
        mined.id: ("proj", "commits", "commit", "git"),
        manual.id: ("proj", "notes", "note", None),
    }
    assert store.search.drawer_places([]) == {}


def test_term_statistics_are_the_full_text_indexs_own(store: Store) -> None:
    for text in ("The moat floods in spring", "Moats flooded twice", "A dry courtyard", "courtyard and moat"):
        store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=text))
    stats = store.search.term_statistics(["moat", "flooding", "courtyard", "absent", "É"])
    assert stats.drawers == 4 and stats.average_length == pytest.approx(14 / 4)
    # Found as the index finds them: by stem and case-folded ("Moats" is "moat", "flooded" is "flood").
    assert stats.frequencies == (3, 2, 2, 0, 0)


def test_nearest_passage_of_each_drawer_is_its_best_scoring_one(store: Store) -> None:
    first = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="one two three")).id
    second = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="four five")).id
    rows = np.eye(3, dtype=np.float32)
    store.embeddings.put_embeddings("m", [(first, rows), (second, rows[[2, 0]])])
    query = np.array([0.1, 0.2, 0.97], dtype=np.float32)
    if store.backend == "postgres":
        assert store.embeddings.nearest_passage_of("m", query, [first, second]) == {first: 2, second: 0}  # type: ignore[attr-defined]
    else:
        from memcastle.search.semantic import SemanticIndex

        index = SemanticIndex(store, "m")  # type: ignore[arg-type]
        index.refresh()
        assert index.nearest_passages(query, [first, second, "absent"]) == {first: 2, second: 0}


def test_ids_with_a_prefix_come_from_the_id_index_in_order(store: Store) -> None:
    ids = ["abcdef01-aaaa", "abcdef01-bbbb", "abcdef02-cccc", "abcdef0"]
    for drawer_id in ids:
        store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"text {drawer_id}", id=drawer_id))
    assert store.ids_with_prefix("drawer", "abcdef01", 10) == ["abcdef01-aaaa", "abcdef01-bbbb"]
    assert store.ids_with_prefix("drawer", "abcdef0", 2) == ["abcdef0", "abcdef01-aaaa"]
    assert store.ids_with_prefix("drawer", "abcdef02-cccc", 10) == ["abcdef02-cccc"]
    assert store.ids_with_prefix("drawer", "abcdef03", 10) == []
    assert store.ids_with_prefix("job", "abcdef01", 10) == [], "each kind looks in its own table"
    job, _ = store.jobs.create_job(NewJob(kind="probe"))
    assert store.ids_with_prefix("job", job.id[:8], 10) == [job.id]
