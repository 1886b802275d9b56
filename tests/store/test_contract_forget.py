"""The store contract for forgetting, run against every backend (see conftest.py): a scope's drawers and everything
derived from them go in one transaction, a dry run changes nothing, and a tombstone without content stays."""

from __future__ import annotations

import numpy as np
import pytest
from store_reads import add_drawer_links, all_entities, drawers_to_extract

from memcastle.errors import NotFound
from memcastle.model import (
    ANY_TIME,
    AsOf,
    DocumentChanges,
    DocumentRecord,
    DocumentScope,
    DrawerScope,
    FactLink,
    GraphWrite,
    LexicalQuery,
    Mention,
    NearKeys,
    NewDrawer,
    Origin,
    RoomScope,
    Scope,
    SearchScope,
    Source,
    SourceRecord,
    SourceScope,
    WingScope,
)
from memcastle.store import Store

from .test_contract_graph import T0, entity, fact

SOURCE = SourceRecord(id="src-1", connector="notes", locator="/notes", options={}, cursor=None, updated_at=T0)


def mined(document: str, content: str, chunk: int = 0, *, wing: str = "w", room: str = "r") -> NewDrawer:
    origin = Origin(connector="notes", source_id=SOURCE.id, document=document, chunk=chunk, revision="r1")
    return NewDrawer(wing=wing, room=room, content=content, source=Source(kind="note", origin=origin))


def file_document(store: Store, document: str, contents: list[str], *, revision: str = "r1") -> list[str]:
    """Mine a document's chunks the way the pipeline does (a later revision supersedes the chunks that changed)."""
    store.mining.upsert_source(SOURCE)
    before = store.mining.get_document(SOURCE.id, document)
    created, superseded, ids = [], [], []
    for index, content in enumerate(contents):
        new = mined(document, content, index)
        new = NewDrawer(**{**new.__dict__, "id": f"{document}-{revision}-{index}"})
        ids.append(new.id or "")
        previous = before.drawer_ids[index] if before and index < len(before.drawer_ids) else None
        (superseded.append((previous, new)) if previous else created.append(new))
    store.mining.apply_document(
        DocumentChanges(
            source=SOURCE,
            record=DocumentRecord(SOURCE.id, document, revision, tuple(f"h{i}" for i in ids), tuple(ids), T0),
            created=tuple(created),
            superseded=tuple(superseded),
        )
    )
    return ids


def tables(store: Store) -> dict[str, int]:
    """How many rows each derived table holds, through the palace copy's neutral rows."""
    return {
        name: sum(1 for _ in store.copy.export_rows(name))
        for name in (
            "drawer",
            "drawer_tag",
            "drawer_band",
            "drawer_signature",
            "near_pending",
            "embedding",
            "embedded",
            "entity",
            "entity_alias",
            "entity_key_variant",
            "entity_hint",
            "mention",
            "assertion",
            "fact_link",
            "extraction_read",
            "drawer_link",
            "room",
            "wing",
        )
    }


@pytest.fixture
def planted(store: Store) -> tuple[Store, dict[str, str]]:
    """A drawer with a version history, everything derived from it, and a neighbour that stays."""
    old = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="Alice moved to Paris", tags=("private",)))
    new = store.drawers.supersede_drawer(
        old.id, NewDrawer(wing="w", room="r", content="Alice moved to Lyon", tags=("x",))
    )
    other = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="Bob lives in Paris"))
    vectors = np.eye(4, dtype=np.float32)
    store.embeddings.put_embeddings("m", [(old.id, vectors[:2]), (new.id, vectors[2:3]), (other.id, vectors[3:])])
    store.near.add_keys([NearKeys(new.id, (1, 2, 3), b"sig"), NearKeys(other.id, (1, 9), b"sig2")])
    from memcastle.model import DrawerLink

    add_drawer_links(store, [DrawerLink(new.id, other.id, "near", 0.9, T0)])
    store.graph.apply_graph(
        GraphWrite(
            extractor="test",
            read_drawers=(old.id, new.id, other.id),
            entities=(entity("e-alice", "Alice"), entity("e-lyon", "Lyon", "place"), entity("e-bob", "Bob")),
            aliases=(("e-bob", "Bobby"),),
            mentions=(
                Mention(old.id, "e-alice", "Alice"),
                Mention(new.id, "e-alice", "Alice"),
                Mention(new.id, "e-lyon", "Lyon"),
                Mention(new.id, "e-bob", "Bobby"),
                Mention(other.id, "e-bob", "Bob"),
            ),
            assertions=(
                fact("f-lyon", "e-alice", "located_in", "e-lyon", drawer=new.id),
                fact("f-bob", "e-bob", "located_in", "e-lyon", drawer=other.id),
            ),
            links=(FactLink("l-1", "f-bob", "f-lyon", "contradicts", "inferred", "one place", T0, new.id),),
        )
    )
    return store, {"old": old.id, "new": new.id, "other": other.id}


def test_a_dry_run_counts_exactly_what_the_forget_removes_and_changes_nothing(
    planted: tuple[Store, dict[str, str]],
) -> None:
    store, ids = planted
    before = tables(store)
    preview = store.forgetting.forget(DrawerScope(drawer_id=ids["old"]), dry_run=True, requested_by="cli")
    assert tables(store) == before and preview.tombstone is None and store.forgetting.tombstones(10) == []
    assert {d.id for d in preview.drawers} == {ids["old"], ids["new"]}, "the whole version history"
    done = store.forgetting.forget(DrawerScope(drawer_id=ids["old"]), dry_run=False, requested_by="cli")
    assert done.counts == preview.counts
    assert dict(done.counts) == {
        **dict.fromkeys(done.counts, 0),
        "drawers": 1,
        "versions": 2,
        "passages": 3,
        "facts": 1,
        "fact_links": 1,
        "mentions": 4,
        "entities": 1,
        "drawer_links": 1,
    }
    after = tables(store)
    assert after["drawer"] == 1 and after["embedding"] == 1 and after["embedded"] == 1
    assert after["drawer_tag"] == 0 and after["drawer_band"] == 2 and after["drawer_signature"] == 1
    assert after["near_pending"] == 1, "the neighbour is still queued for linking; the forgotten drawer is not"
    assert after["mention"] == 1 and after["assertion"] == 1 and after["fact_link"] == 0
    assert after["extraction_read"] == 1 and after["drawer_link"] == 0
    assert {e.id for e in all_entities(store)} == {"e-bob", "e-lyon"}, "Alice was only in forgotten drawers"
    assert store.entities.get_entity("e-bob").aliases == (), "an alias only forgotten text used is forgotten"
    assert store.entities.entities_with_alias("bobby") == []
    assert store.facts.get_assertion("f-bob").object == "e-lyon" and store.entities.get_entity("e-lyon") is not None
    for drawer_id in (ids["old"], ids["new"]):
        with pytest.raises(NotFound):
            store.drawers.get_drawer(drawer_id)
    (tombstone,) = store.forgetting.tombstones(10)
    assert tombstone.scope == {"kind": "drawer", "drawer_id": ids["old"]} and tombstone.requested_by == "cli"
    assert dict(tombstone.counts) == dict(done.counts)


def test_facts_with_other_evidence_stay_without_the_forgotten_one(store: Store) -> None:
    a, b, c = (store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"evidence {i}")).id for i in range(3))
    store.graph.apply_graph(
        GraphWrite(
            extractor="test",
            read_drawers=(a, b, c),
            entities=(entity("e-alice", "Alice"), entity("e-paris", "Paris", "place")),
            assertions=(
                fact("f-a", "e-alice", "located_in", "e-paris", drawer=a),
                fact("f-b", "e-alice", "located_in", "e-paris", drawer=b),
                fact("f-x", "e-alice", "located_in", "e-paris", drawer=c, explicit=True),
            ),
            links=(FactLink("l-ab", "f-b", "f-a", "confirms", "inferred", "same claim", T0, b),),
        )
    )
    report = store.forgetting.forget(DrawerScope(drawer_id=a), dry_run=False, requested_by="http")
    assert (report.counts["facts"], report.counts["facts_kept"]) == (0, 1)
    kept = store.facts.get_assertion("f-a")
    assert kept.drawer_id is None and kept.origin is None, "the forgotten evidence left its provenance"
    assert [lk.id for lk in store.facts.links_of(["f-a"])] == ["l-ab"]
    # Its last confirmation goes: a fact kept without evidence of its own goes with it.
    report = store.forgetting.forget(DrawerScope(drawer_id=b), dry_run=False, requested_by="http")
    assert report.counts["facts"] == 2
    for gone in ("f-a", "f-b"):
        with pytest.raises(NotFound):
            store.facts.get_assertion(gone)
    # A person's statement stays without its evidence drawer.
    report = store.forgetting.forget(DrawerScope(drawer_id=c), dry_run=False, requested_by="http")
    assert report.counts["facts_kept"] == 1 and store.facts.get_assertion("f-x").drawer_id is None
    assert {e.id for e in all_entities(store)} == {"e-alice", "e-paris"}, "the explicit fact still names them"


def test_a_document_goes_with_every_revision_and_its_record_keeps_no_hash(store: Store) -> None:
    first = file_document(store, "a.md", ["one", "two"])
    second = file_document(store, "a.md", ["one changed", "two changed"], revision="r2")
    kept = file_document(store, "b.md", ["stays"])
    report = store.forgetting.forget(
        DocumentScope(source_id=SOURCE.id, document="a.md"), dry_run=False, requested_by="cli"
    )
    assert report.counts["versions"] == 4 and report.counts["drawers"] == 2 and report.counts["documents"] == 1
    assert set(report.drawer_ids) == {*first, *second}
    record = store.mining.get_document(SOURCE.id, "a.md")
    assert record is not None and record.revision == "r2", "an unchanged document is not mined back"
    assert record.chunk_hashes == ("", "") and record.drawer_ids == ("", "")
    assert store.drawers.get_drawer(kept[0]).content == "stays"
    with pytest.raises(NotFound):
        store.forgetting.forget(DocumentScope(source_id=SOURCE.id, document="zz.md"), dry_run=True, requested_by="x")
    # The next revision of the document lands as new drawers: the forgotten ones are not there to supersede.
    third = file_document(store, "a.md", ["one again", "two again"], revision="r3")
    assert [store.drawers.get_drawer(i).supersedes for i in third] == [None, None]


def test_a_source_a_room_and_a_wing_go_whole(store: Store) -> None:
    file_document(store, "a.md", ["one", "two"])
    manual = store.drawers.add_drawer(NewDrawer(wing="w", room="notes", content="a note"))
    other = store.drawers.add_drawer(NewDrawer(wing="v", room="r", content="elsewhere"))
    with pytest.raises(NotFound):
        store.forgetting.forget(SourceScope(source_id="nope"), dry_run=True, requested_by="cli")
    report = store.forgetting.forget(SourceScope(source_id=SOURCE.id), dry_run=False, requested_by="cli")
    assert report.counts["versions"] == 2 and store.drawers.get_drawer(manual.id)
    report = store.forgetting.forget(RoomScope(wing="w", room="notes"), dry_run=False, requested_by="cli")
    assert report.counts["versions"] == 1 and report.counts["rooms"] == 1
    assert [r.name for r in store.drawers.list_rooms("w")] == ["r"]
    with pytest.raises(NotFound):
        store.forgetting.forget(RoomScope(wing="w", room="notes"), dry_run=True, requested_by="cli")
    report = store.forgetting.forget(WingScope(wing="w"), dry_run=False, requested_by="cli")
    assert report.counts["wings"] == 1 and report.counts["rooms"] == 1 and report.counts["versions"] == 0
    assert [w.name for w in store.drawers.list_wings()] == ["v"] and store.drawers.get_drawer(other.id)
    assert [t.scope["kind"] for t in store.forgetting.tombstones(10)] == ["wing", "room", "source"], "newest first"


def test_a_search_scope_takes_every_matching_version_and_its_tombstone_keeps_no_words(store: Store) -> None:
    old = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="the launch code is tangerine falcon"))
    new = store.drawers.supersede_drawer(old.id, NewDrawer(wing="w", room="r", content="tangerine falcon, moved"))
    elsewhere = store.drawers.add_drawer(NewDrawer(wing="v", room="r", content="tangerine falcon in another wing"))
    partial = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="only tangerine here"))
    words = "tangerine falcon"
    scope = SearchScope(
        query=LexicalQuery(("tangerine", "falcon")),
        query_text=words,
        filters=Scope(wing="w", when=ANY_TIME),
    )
    preview = store.forgetting.forget(scope, dry_run=True, requested_by="cli")
    assert {d.id for d in preview.drawers} == {old.id, new.id}, "every term required, the filters applied"
    now_only = SearchScope(
        query=LexicalQuery(("tangerine", "falcon")),
        query_text=words,
        filters=Scope(when=AsOf("2999-01-01T00:00:00Z")),
    )
    assert {d.id for d in store.forgetting.forget(now_only, dry_run=True, requested_by="cli").drawers} == {
        new.id,
        elsewhere.id,
    }
    store.forgetting.forget(scope, dry_run=False, requested_by="cli")
    assert store.drawers.get_drawer(partial.id) and store.drawers.get_drawer(elsewhere.id)
    (tombstone,) = store.forgetting.tombstones(1)
    assert "tangerine" not in str(tombstone.to_json()) and len(tombstone.scope["query_sha256"]) == 64
    assert tombstone.scope["filters"] == {"wing": "w"}


def test_writes_read_from_a_drawer_forgotten_meanwhile_are_left_out(store: Store) -> None:
    gone = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="Carol works on Atlas"))
    stays = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="Dave works on Atlas"))
    store.forgetting.forget(DrawerScope(drawer_id=gone.id), dry_run=False, requested_by="cli")
    store.graph.apply_graph(
        GraphWrite(
            extractor="test",
            read_drawers=(gone.id, stays.id),
            entities=(entity("e-carol", "Carol"), entity("e-dave", "Dave"), entity("e-atlas", "Atlas", "project")),
            aliases=(("e-carol", "Caz"),),
            mentions=(
                Mention(gone.id, "e-carol", "Carol"),
                Mention(gone.id, "e-atlas", "Atlas"),
                Mention(stays.id, "e-dave", "Dave"),
                Mention(stays.id, "e-atlas", "Atlas"),
            ),
            assertions=(
                fact("f-carol", "e-carol", "works_on", "e-atlas", drawer=gone.id),
                fact("f-dave", "e-dave", "works_on", "e-atlas", drawer=stays.id),
            ),
            links=(FactLink("l-cd", "f-dave", "f-carol", "confirms", "inferred", "same", T0, stays.id),),
        )
    )
    assert {e.id for e in all_entities(store)} == {"e-dave", "e-atlas"}
    assert [a.id for a in store.facts.find_assertions(limit=10)] == ["f-dave"] and store.facts.links_of(
        ["f-dave"]
    ) == []
    assert [d.id for d in drawers_to_extract(store, "test", 10)] == []
    store.near.add_keys([NearKeys(gone.id, (1,), b"s")])
    from memcastle.model import DrawerLink

    add_drawer_links(store, [DrawerLink(stays.id, gone.id, "near", 0.9, T0)])
    assert store.near.drawer_links(stays.id) == [] and store.near.count_pending() == 0


def test_wings_and_rooms_are_renamed_unless_the_name_is_taken(store: Store) -> None:
    from memcastle.errors import Conflict

    store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="x"))
    store.drawers.add_drawer(NewDrawer(wing="v", room="s", content="y"))
    store.drawers.rename_room("w", "r", "r2")
    store.drawers.rename_wing("w", "w2")
    assert store.drawers.list_drawers("w2", "r2", 10, None).items[0].content == "x"
    with pytest.raises(Conflict):
        store.drawers.rename_wing("w2", "v")
    store.drawers.add_drawer(NewDrawer(wing="w2", room="t", content="z"))
    with pytest.raises(Conflict):
        store.drawers.rename_room("w2", "t", "r2")
    with pytest.raises(NotFound):
        store.drawers.rename_wing("nope", "x")
