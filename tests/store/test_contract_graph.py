"""The store contract for the knowledge graph and drawer similarity, run against every backend (see conftest.py)."""

from __future__ import annotations

import pytest
from store_reads import add_drawer_links, all_entities, drawers_to_extract

from memcastle.errors import Conflict, NotFound
from memcastle.model import (
    Assertion,
    DrawerLink,
    Entity,
    EntityHint,
    FactLink,
    GraphWrite,
    Mention,
    NearKeys,
    NewDrawer,
    content_hash,
    fingerprint,
    key_variants,
)
from memcastle.store import Store

T0 = "2024-01-01T00:00:00.000000Z"
T1 = "2024-02-01T00:00:00.000000Z"
T2 = "2024-03-01T00:00:00.000000Z"


def entity(entity_id: str, name: str, kind: str = "person", at: str = T0) -> Entity:
    return Entity(id=entity_id, name=name, kind=kind, key=name.lower(), aliases=(), created_at=at)


def fact(
    fact_id: str,
    subject: str,
    predicate: str,
    obj: str,
    *,
    drawer: str | None = None,
    at: str = T0,
    explicit: bool = False,
) -> Assertion:
    return Assertion(
        id=fact_id,
        subject=subject,
        predicate=predicate,
        object=obj,
        confidence=0.75,
        valid_from=at,
        valid_to=None,
        drawer_id=drawer,
        extractor="test",
        job_id="job-1",
        origin={"connector": "notes", "metadata": {"b": 1, "a": 2}} if drawer else None,
        explicit=explicit,
        created_at=at,
    )


@pytest.fixture
def graph(store: Store) -> tuple[Store, list[str]]:
    """Three drawers, two people and a place, mentions and two facts."""
    drawers = [store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"drawer {i}")).id for i in range(3)]
    store.graph.apply_graph(
        GraphWrite(
            extractor="test",
            read_drawers=(drawers[0], drawers[1]),
            entities=(entity("e-alice", "Alice"), entity("e-bob", "Bob", at=T1), entity("e-paris", "Paris", "place")),
            aliases=(("e-alice", "Ally"), ("e-alice", "Ally"), ("e-alice", "A. Smith")),
            hints=(EntityHint("e-alice", "e-bob", "similar_name", "both short"),),
            mentions=(
                Mention(drawers[0], "e-alice", "Alice"),
                Mention(drawers[0], "e-paris", "Paris"),
                Mention(drawers[1], "e-alice", "Ally"),
                Mention(drawers[1], "e-bob", "Bob"),
            ),
            assertions=(
                fact("f-1", "e-alice", "located_in", "e-paris", drawer=drawers[0]),
                fact("f-2", "e-bob", "knows", "e-alice", drawer=drawers[1], at=T1),
            ),
            links=(FactLink("l-1", "f-2", "f-1", "refines", "inferred", "same subject", T1, drawers[1]),),
        )
    )
    return store, drawers


def test_a_graph_write_is_stored_and_replaying_it_changes_nothing(graph: tuple[Store, list[str]]) -> None:
    store, drawers = graph
    alice = store.entities.get_entity("e-alice")
    assert alice.aliases == ("Ally", "A. Smith") and alice.key == "alice" and alice.created_at == T0
    assert [e.id for e in all_entities(store)] == ["e-alice", "e-paris", "e-bob"]
    assert [e.id for e in store.entities.entities_with_alias("ally")] == ["e-alice"]
    assert [e.id for e in store.entities.entities_with_alias("a smith")] == ["e-alice"]
    assert store.facts.count_facts() == 2
    first = store.facts.get_assertion("f-1")
    assert first == fact("f-1", "e-alice", "located_in", "e-paris", drawer=drawers[0])
    assert list(first.origin or {}) == ["connector", "metadata"]
    store.graph.apply_graph(
        GraphWrite(
            extractor="test",
            read_drawers=(drawers[0],),
            entities=(entity("e-alice", "Renamed"),),
            mentions=(Mention(drawers[0], "e-alice", "Alice"),),
            assertions=(fact("f-1", "e-alice", "other", "e-paris"),),
        )
    )
    assert store.entities.get_entity("e-alice").name == "Alice", "an existing entity is not overwritten"
    assert store.facts.get_assertion("f-1").predicate == "located_in", "a replayed fact lands on the same record"
    assert store.facts.count_facts() == 2
    assert [(m.drawer_id, m.spelling) for m in store.entities.entity_mentions("e-alice", 10)] == sorted(
        [(drawers[0], "Alice"), (drawers[1], "Ally")]
    )


def test_read_markers_say_what_is_left_to_extract(graph: tuple[Store, list[str]]) -> None:
    store, drawers = graph
    assert [d.id for d in drawers_to_extract(store, "test", 10)] == [drawers[2]]
    assert store.graph.count_to_extract("test") == 1
    assert store.graph.count_to_extract("other-extractor") == 3
    store.drawers.invalidate_drawer(drawers[2])
    assert store.graph.count_to_extract("test") == 0 and drawers_to_extract(store, "test", 10) == []


def test_the_resolver_lookups_are_by_name_key_and_key_variant(store: Store) -> None:
    store.graph.apply_graph(
        GraphWrite(
            extractor="test",
            read_drawers=(),
            entities=(entity("e-dorothy", "Dorothy"), entity("e-dot", "Dot"), entity("e-paris", "Paris", "place")),
        )
    )
    assert [e.id for e in store.entities.entities_named("Dorothy", "nobody")] == ["e-dorothy"]
    assert [e.id for e in store.entities.entities_named("DOROTHY", "dorothy")] == ["e-dorothy"], "by key"
    assert store.entities.entities_named("Dorothea", "dorothea") == []
    # One edit away (a substitution, an insertion, a deletion) shares a variant; keys under six characters have none.
    for spelling in ("dorothi", "dorothya", "dorthy"):
        assert [e.id for e in store.entities.entities_sharing_variants(sorted(key_variants(spelling)))] == ["e-dorothy"]
    assert store.entities.entities_sharing_variants(sorted(key_variants("margaret"))) == []
    assert key_variants("dot") == set()


def test_facts_to_link_are_the_newest_of_a_claim_and_of_its_rivals(store: Store) -> None:
    drawers = [store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"drawer {i}")).id for i in range(12)]
    stamps = [f"2026-01-{day:02d}T00:00:00.000000Z" for day in range(1, 13)]
    store.graph.apply_graph(
        GraphWrite(
            extractor="test",
            read_drawers=(),
            entities=(
                entity("e-alice", "Alice"),
                entity("e-paris", "Paris", "place"),
                entity("e-rome", "Rome", "place"),
            ),
            assertions=(
                *(
                    fact(f"same-{i}", "e-alice", "located_in", "e-paris", drawer=drawers[i], at=stamps[i])
                    for i in range(10)
                ),
                fact("rival", "e-alice", "located_in", "e-rome", drawer=drawers[10], at=stamps[10]),
            ),
        )
    )
    claim = fact("new", "e-alice", "located_in", "e-paris", drawer=drawers[11], at=stamps[11])
    found = store.facts.facts_to_link(claim, predecessor_drawer=drawers[0], rivals=True, limit=3)
    assert {f.id for f in found} == {"same-9", "same-8", "same-7", "same-0", "rival"}
    assert {f.id for f in store.facts.facts_to_link(claim, predecessor_drawer=None, rivals=False, limit=2)} == {
        "same-9",
        "same-8",
    }


def test_entities_are_found_by_name_alias_and_kind(graph: tuple[Store, list[str]]) -> None:
    store, _ = graph
    assert [e.id for e in store.entities.list_entities("ali", None, 10)] == ["e-alice"]
    assert [e.id for e in store.entities.list_entities("ALLY", None, 10)] == ["e-alice"], "ASCII case is ignored"
    assert [e.id for e in store.entities.list_entities(None, "place", 10)] == ["e-paris"]
    assert [e.id for e in store.entities.list_entities(None, None, 2)] == ["e-alice", "e-bob"]
    assert store.entities.list_entities("nobody", None, 10) == []
    assert set(store.entities.get_entities(["e-bob", "e-paris", "missing"])) == {"e-bob", "e-paris"}
    with pytest.raises(NotFound):
        store.entities.get_entity("missing")


def test_mentions_connect_drawers_and_entities(graph: tuple[Store, list[str]]) -> None:
    store, drawers = graph
    assert store.entities.entities_of_drawers([drawers[0], drawers[2]]) == {drawers[0]: {"e-alice", "e-paris"}}
    assert store.entities.drawers_mentioning(["e-alice", "e-bob"], 10) == {
        drawers[0]: {"e-alice"},
        drawers[1]: {"e-alice", "e-bob"},
    }
    assert len(store.entities.drawers_mentioning(["e-alice"], 1)) == 1, "the limit is per entity"
    # Counted per entity, in distinct drawers, up to the bound asked.
    assert store.entities.mention_counts(["e-alice", "e-bob", "e-nobody"], 10) == {
        "e-alice": 2,
        "e-bob": 1,
        "e-nobody": 0,
    }
    assert store.entities.mention_counts(["e-alice"], 1) == {"e-alice": 1}
    assert store.entities.entity_hints("e-bob") == [EntityHint("e-alice", "e-bob", "similar_name", "both short")]


def test_facts_are_found_by_edge_drawer_and_entity(graph: tuple[Store, list[str]]) -> None:
    store, drawers = graph
    assert [a.id for a in store.facts.find_assertions(subject="e-alice")] == ["f-1"]
    assert [a.id for a in store.facts.find_assertions(predicate="knows", object="e-alice")] == ["f-2"]
    assert [a.id for a in store.facts.find_assertions(drawer_ids=drawers)] == ["f-1", "f-2"]
    assert store.facts.find_assertions(drawer_ids=[]) == []
    assert [a.id for a in store.facts.find_assertions(limit=1)] == ["f-1"]
    assert {a.id for a in store.facts.assertions_touching(["e-alice"])} == {"f-1", "f-2"}
    assert {a.id for a in store.facts.assertions_touching(["e-paris"])} == {"f-1"}
    assert set(store.facts.get_assertions(["f-2", "nope"])) == {"f-2"}
    with pytest.raises(NotFound):
        store.facts.get_assertion("nope")


def test_a_decision_closes_opens_and_links_in_one_transaction(graph: tuple[Store, list[str]]) -> None:
    store, _ = graph
    replacement = fact("f-3", "e-alice", "located_in", "e-bob", at=T2, explicit=True)
    link = FactLink("l-2", "f-3", "f-1", "supersedes", "explicit", "moved", T2)
    store.facts.record_decision(new=replacement, close=("f-1", T2), links=[link])
    assert store.facts.get_assertion("f-1").valid_to == T2
    assert store.facts.get_assertion("f-3").explicit is True
    assert [link.id for link in store.facts.links_of(["f-1"])] == ["l-1", "l-2"]
    with pytest.raises(Conflict) as twice:
        store.facts.record_decision(new=fact("f-4", "e-bob", "x", "e-paris"), close=("f-1", T2))
    assert twice.value.existing_id == "f-1"
    with pytest.raises(NotFound):
        store.facts.get_assertion("f-4"), "the refused decision wrote nothing"
    with pytest.raises(NotFound):
        store.facts.record_decision(close=("missing", T2))
    assert store.facts.links_of([]) == []


def test_drawers_sharing_a_band_key_are_found_and_queued_until_settled(store: Store) -> None:
    first = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="the first text of two"))
    second = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="the second text of two"))
    third = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="a third text"))
    store.near.add_keys(
        [
            NearKeys(first.id, (11, -22, 2**62), b"one"),
            NearKeys(second.id, (33, 2**62), b"two"),
            NearKeys(third.id, (11, -22, 2**62, 33), b"three"),
        ]
    )
    store.near.add_keys([NearKeys(second.id, (33,), b"two")])  # idempotent
    seq = {s.id: s.seq for s in store.near.pending(10)}

    def sharing(subject: str, at_least: int) -> list[tuple[str, int]]:
        found = store.near.sharing_bands([seq[subject]], at_least)
        assert all(s == seq[subject] for s, _, _ in found)
        return sorted((c.id, shared) for _, c, shared in found)

    # Only drawers filed before the subject, sharing at least so many of its band keys, counted.
    assert sharing(third.id, 1) == sorted([(first.id, 3), (second.id, 2)])
    assert sharing(third.id, 3) == [(first.id, 3)]
    assert sharing(second.id, 1) == [(first.id, 1)] and sharing(second.id, 2) == []
    assert sharing(first.id, 1) == [] and store.near.sharing_bands([], 1) == []
    queued = [s for s in store.near.pending(10) if s.id != third.id]
    store.near.settle([seq[third.id]], [])
    assert [(s.id, s.bands, s.signature) for s in queued] == [
        (first.id, (-22, 11, 2**62), b"one"),
        (second.id, (33, 2**62), b"two"),
    ]
    assert store.near.signatures([s.seq for s in queued]) == {queued[0].seq: b"one", queued[1].seq: b"two"}
    assert store.near.contents([queued[1].seq]) == {queued[1].seq: "the second text of two"}
    # Settling takes drawers off the queue with their links, in one transaction.
    store.near.settle([queued[0].seq], [DrawerLink(second.id, first.id, "near", 0.91, T0)])
    assert [s.id for s in store.near.pending(10)] == [second.id] and store.near.count_pending() == 1
    assert [s.id for s in store.near.pending(10, [first.id])] == []
    assert store.near.drawer_links(first.id) == [DrawerLink(second.id, first.id, "near", 0.91, T0)]
    # A closed drawer is no candidate.
    store.drawers.invalidate_drawer(first.id)
    assert [c.id for _, c, _ in store.near.sharing_bands([seq[third.id]], 2)] == [second.id]


def test_similar_drawers_are_linked_and_found_in_their_room(store: Store) -> None:
    original = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="Hello, World!"))
    exact = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="Hello, World!"))
    loose = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="hello world"))
    store.drawers.add_drawer(NewDrawer(wing="w", room="elsewhere", content="Hello, World!"))
    closed = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="Hello, World!"))
    store.drawers.invalidate_drawer(closed.id)
    store.near.add_keys([NearKeys(exact.id)])
    [subject] = store.near.pending(10)
    assert (subject.id, subject.content_hash, subject.fingerprint, subject.current) == (
        exact.id,
        content_hash("Hello, World!"),
        fingerprint("Hello, World!"),
        True,
    )
    # Current drawers of the subject's room with its hash or its fingerprint (the caller tells which is which).
    found = store.near.copies([subject])
    assert [(c.id, c.content_hash == subject.content_hash) for c in found] == [
        (original.id, True),
        (exact.id, True),
        (loose.id, False),
    ]
    add_drawer_links(
        store,
        [
            DrawerLink(exact.id, original.id, "exact", 1.0, T0),
            DrawerLink(loose.id, original.id, "normalized", 0.98, T1),
        ],
    )
    add_drawer_links(store, [DrawerLink(exact.id, original.id, "exact", 1.0, T2)])
    assert store.near.drawer_links(original.id) == [
        DrawerLink(exact.id, original.id, "exact", 1.0, T0),
        DrawerLink(loose.id, original.id, "normalized", 0.98, T1),
    ]
    assert store.near.drawer_links(loose.id) == [DrawerLink(loose.id, original.id, "normalized", 0.98, T1)]
