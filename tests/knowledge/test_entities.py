"""Entity resolution (SPEC §4) on a real SQLite store, then through extraction and the HTTP surface: exact name,
normalized key, recorded alias, a single one-edit candidate for long names; otherwise a new entity with hints.
Entities are never merged or deleted, and each mention keeps the spelling seen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_reads import all_entities

from memcastle.clock import utc_now
from memcastle.knowledge.entities import (
    EntityResolver,
    Resolution,
    entity_id_for,
    within_one_edit,
)
from memcastle.model import Entity, GraphWrite, normalize_text
from memcastle.store.sqlite import SQLiteStore

from .support import Palaces, client_of, command_flags, extracted


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "palace")
    yield opened
    opened.close()


def seed(store: SQLiteStore, *entities: tuple[str, str], aliases: tuple[tuple[str, str], ...] = ()) -> list[Entity]:
    """Write entities as they are (no resolution), oldest first, plus (entity name, alias) pairs."""
    made = [
        Entity(
            id=entity_id_for(kind, normalize_text(name)),
            name=name,
            kind=kind,
            key=normalize_text(name),
            aliases=(),
            created_at=utc_now(),
        )
        for name, kind in entities
    ]
    by_name = {e.name: e.id for e in made}
    store.graph.apply_graph(
        GraphWrite(
            extractor="seed",
            read_drawers=(),
            entities=tuple(made),
            aliases=tuple((by_name[name], alias) for name, alias in aliases),
        )
    )
    return made


def resolve(store: SQLiteStore, name: str, kind: str = "other") -> Resolution:
    return EntityResolver(store.entities).resolve(name, kind)


# --- how a name resolves --------------------------------------------------------------------------


def test_the_exact_name_resolves_to_the_entity(store: SQLiteStore) -> None:
    (atlas,) = seed(store, ("Atlas", "project"))
    found = resolve(store, "Atlas", "project")
    assert (found.entity.id, found.created, found.how, found.hints) == (atlas.id, False, "name", [])


@pytest.mark.parametrize("spelling", ["ANA LOPEZ", "ana-lopez", "Ana Lopez.", "ana_lopez"])
def test_the_normalized_key_resolves_other_case_and_punctuation(store: SQLiteStore, spelling: str) -> None:
    (ana,) = seed(store, ("Ana Lopez", "person"))
    found = resolve(store, spelling, "person")
    assert (found.entity.id, found.created, found.how) == (ana.id, False, "key")


def test_runs_of_whitespace_in_a_name_are_one_space(store: SQLiteStore) -> None:
    (ana,) = seed(store, ("Ana Lopez", "person"))
    found = resolve(store, "  Ana \n  Lopez ", "person")
    assert (found.entity.id, found.how) == (ana.id, "name")


def test_a_recorded_alias_resolves_to_its_entity(store: SQLiteStore) -> None:
    (ana,) = seed(store, ("Ana Lopez", "person"), aliases=(("Ana Lopez", "Ana L."),))
    found = resolve(store, "ANA L", "person")
    assert (found.entity.id, found.created, found.how) == (ana.id, False, "alias")
    assert store.entities.get_entity(ana.id).aliases == ("Ana L.",)


def test_the_exact_name_wins_over_an_older_entity_with_the_same_key(store: SQLiteStore) -> None:
    shouting, plain = seed(store, ("ATLAS", "project"), ("Atlas", "tool"))
    assert resolve(store, "Atlas").entity.id == plain.id
    assert resolve(store, "atlas").entity.id == shouting.id  # by key: the oldest of the matches


@pytest.mark.parametrize("spelling", ["Kubernetis", "Kubernetess", "Kubernete", "Kubrnetes"])
def test_a_single_one_edit_candidate_resolves_a_name_of_six_or_more_characters(
    store: SQLiteStore, spelling: str
) -> None:
    (k8s,) = seed(store, ("Kubernetes", "tool"))
    found = resolve(store, spelling, "tool")
    assert (found.entity.id, found.created, found.how, found.hints) == (k8s.id, False, "one edit", [])


@pytest.mark.parametrize(("known", "other"), [("port-5432", "port-5433"), ("Python 3.11", "Python 3.12"),
                                             ("RFC 9110", "RFC 911"), ("release 2024", "release 2025")])  # fmt: skip
def test_names_one_number_apart_are_different_things(store: SQLiteStore, known: str, other: str) -> None:
    (first,) = seed(store, (known, "concept"))
    found = resolve(store, other, "concept")
    assert found.created and found.entity.id != first.id and found.hints == []


def test_six_characters_is_long_enough_for_one_edit(store: SQLiteStore) -> None:
    (rustic,) = seed(store, ("Rustic", "project"))
    assert resolve(store, "Rustik", "project").entity.id == rustic.id


def test_two_one_edit_candidates_make_a_new_entity_with_possibly_same_hints(store: SQLiteStore) -> None:
    dorothe, dorothya = seed(store, ("Dorothe", "person"), ("Dorothya", "person"))
    assert not within_one_edit("dorothe", "dorothya")  # the two candidates are not one edit from each other

    resolver = EntityResolver(store.entities)
    found = resolver.resolve("Dorothy", "person")

    assert found.created and found.how == "new" and found.entity.name == "Dorothy"
    assert {(h.entity_id, h.other_id, h.kind) for h in found.hints} == {
        (found.entity.id, dorothe.id, "possibly_same"),
        (found.entity.id, dorothya.id, "possibly_same"),
    }
    store.graph.apply_graph(
        GraphWrite(extractor="test", read_drawers=(), entities=tuple(resolver.created), hints=tuple(found.hints))
    )
    # Hints are recorded for a person to decide; nothing was merged or removed.
    assert {e.name for e in all_entities(store)} == {"Dorothe", "Dorothya", "Dorothy"}
    assert {h.entity_id for h in store.entities.entity_hints(dorothe.id)} == {found.entity.id}


@pytest.mark.parametrize(("known", "seen"), [("Atlas", "Atlaz"), ("Ana", "Anna"), ("Orion", "Orian"), ("Vim", "Vin")])
def test_names_shorter_than_six_characters_never_match_by_one_edit(store: SQLiteStore, known: str, seen: str) -> None:
    (existing,) = seed(store, (known, "project"))
    found = resolve(store, seen, "project")
    assert found.created and found.entity.id != existing.id


def test_a_short_entity_is_not_matched_by_a_longer_name_one_edit_away(store: SQLiteStore) -> None:
    (atlas,) = seed(store, ("Atlas", "project"))
    found = resolve(store, "Atlass", "project")
    assert found.created and found.entity.id != atlas.id


@pytest.mark.parametrize(("first", "second"), [("王伟", "李娜"), ("Ольга", "Борис"), ("José", "Josà")])
def test_different_names_outside_ascii_are_different_entities(store: SQLiteStore, first: str, second: str) -> None:
    resolver = EntityResolver(store.entities)
    one = resolver.resolve(first, "person")
    other = resolver.resolve(second, "person")
    assert other.created and other.entity.id != one.entity.id


# --- kinds ----------------------------------------------------------------------------------------


def test_a_different_kind_makes_a_new_entity_with_a_same_name_hint(store: SQLiteStore) -> None:
    (project,) = seed(store, ("Atlas", "project"))
    found = resolve(store, "Atlas", "place")
    assert found.created and found.entity.kind == "place" and found.entity.id != project.id
    assert [(h.other_id, h.kind) for h in found.hints] == [(project.id, "possibly_same")]


def test_other_matches_any_kind_in_both_directions(store: SQLiteStore) -> None:
    project, unknown = seed(store, ("Atlas", "project"), ("Mercury", "other"))
    assert resolve(store, "Atlas", "other").entity.id == project.id
    assert resolve(store, "Mercury", "tool").entity.id == unknown.id
    assert resolve(store, "MERCURY", "person").entity == unknown  # the entity keeps its name and kind


def test_one_edit_needs_a_compatible_kind_too(store: SQLiteStore) -> None:
    (k8s,) = seed(store, ("Kubernetes", "tool"))
    found = resolve(store, "Kubernetis", "person")
    assert found.created and found.entity.id != k8s.id


def test_a_batch_resolves_against_entities_it_created_itself(store: SQLiteStore) -> None:
    resolver = EntityResolver(store.entities)
    first = resolver.resolve("Ana Lopez", "person")
    again = resolver.resolve("ana lopez", "person")
    assert first.created and not again.created and again.entity.id == first.entity.id
    assert resolver.created == [first.entity]


# --- properties -----------------------------------------------------------------------------------

_names = st.text(alphabet="abcdefghij", min_size=1, max_size=10)


@settings(max_examples=200, deadline=None)
@given(_names, _names)
def test_within_one_edit_is_symmetric_and_agrees_with_levenshtein(a: str, b: str) -> None:
    def distance(x: str, y: str) -> int:
        row = list(range(len(y) + 1))
        for i, cx in enumerate(x, 1):
            prev, row[0] = row[0], i
            for j, cy in enumerate(y, 1):
                prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (cx != cy))
        return row[-1]

    assert within_one_edit(a, b) == within_one_edit(b, a) == (distance(a, b) == 1)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "Ana Lopez",
                    "ana lopez",
                    "ANA-LOPEZ",
                    "Atlas",
                    "ATLAS",
                    "Kubernetes",
                    "Kubernetis",
                    "Orion",
                    "Orian",
                    "Dorothe",
                    "Dorothya",
                    "Dorothy",
                    "Vim",
                ]
            ),
            st.sampled_from(["person", "project", "tool", "other"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_a_batch_never_creates_two_entities_of_one_kind_and_key(
    store: SQLiteStore, names: list[tuple[str, str]]
) -> None:
    resolver = EntityResolver(store.entities)  # the store stays empty: every entity comes from this batch
    for name, kind in names:
        found = resolver.resolve(name, kind)
        assert found.entity.kind == kind or "other" in (found.entity.kind, kind)
        if found.created:
            assert (found.entity.name, found.entity.kind, found.entity.key) == (name, kind, normalize_text(name))
    made = [(e.kind, e.key) for e in resolver.created]
    assert len(made) == len(set(made))


def test_a_spelling_resolved_by_one_edit_keeps_resolving_to_that_entity(store: SQLiteStore) -> None:
    (dorothe,) = seed(store, ("Dorothe", "person"))
    resolver = EntityResolver(store.entities)
    assert resolver.resolve("Dorothy", "person").entity.id == dorothe.id
    resolver.resolve("Dorothya", "person")  # a new entity: two edits from Dorothe

    assert resolver.resolve("Dorothy", "person").entity.id == dorothe.id


# --- through extraction and HTTP --------------------------------------------------------------------


def test_extraction_never_merges_entities_and_each_mention_keeps_its_spelling(palaces: Palaces) -> None:
    palace = palaces.open(flags=command_flags())
    drawers = {}
    for spelling, kind in [
        ("Kubernetes", "tool"),
        ("Kubernetis", "tool"),
        ("KUBERNETES", "tool"),
        ("Dorothe", "person"),
        ("Dorothya", "person"),
        ("Dorothy", "person"),
    ]:
        drawer = palace.services.drawers.save_note(f"ENTITY {spelling}|{kind}", wing="w").drawer
        drawers[spelling] = drawer.id
    extracted(palace)
    http = client_of(palace)

    (k8s,) = http.get("/api/entities", params={"kind": "tool"}).json()["entities"]
    shown = http.get(f"/api/entities/{k8s['id']}").json()
    assert shown["name"] == "Kubernetes" and shown["hints"] == []
    assert sorted((m["drawer"], m["spelling"]) for m in shown["mentions"]) == sorted(
        (drawers[s], s) for s in ("Kubernetes", "Kubernetis", "KUBERNETES")
    )
    by_prefix = http.get(f"/api/entities/{k8s['id'][:8]}").json()
    assert by_prefix == shown, "an id prefix reads the entity's mentions and hints, not the prefix's"

    people = {e["name"]: e["id"] for e in http.get("/api/entities", params={"kind": "person"}).json()["entities"]}
    assert set(people) == {"Dorothe", "Dorothya", "Dorothy"}
    hints = http.get(f"/api/entities/{people['Dorothy']}").json()["hints"]
    assert {(h["entity"], h["other"], h["kind"]) for h in hints} == {
        (people["Dorothy"], people["Dorothe"], "possibly_same"),
        (people["Dorothy"], people["Dorothya"], "possibly_same"),
    }
    # The hint is visible from the other side too, and a later sweep merges or deletes nothing.
    assert [h["entity"] for h in http.get(f"/api/entities/{people['Dorothe']}").json()["hints"]] == [people["Dorothy"]]
    palace.services.drawers.save_note("ENTITY Dorothy|person\nENTITY Kubernetis|tool", wing="w")
    extracted(palace)
    assert len(http.get("/api/entities").json()["entities"]) == 4


def test_entity_listing_filters_by_name_and_refuses_an_unknown_kind(palaces: Palaces) -> None:
    palace = palaces.open()
    palace.services.drawers.save_note("Ana Lopez works on Atlas. Ben Hart lives in Lisbon.", wing="w")
    extracted(palace)
    http = client_of(palace)

    assert [e["name"] for e in http.get("/api/entities", params={"name": "lopez"}).json()["entities"]] == ["Ana Lopez"]
    assert [e["name"] for e in http.get("/api/entities", params={"kind": "place"}).json()["entities"]] == ["Lisbon"]
    refused = http.get("/api/entities", params={"kind": "planet"})
    assert refused.status_code == 400 and refused.json()["field"] == "kind"
    assert http.get("/api/entities/no-such-entity").status_code == 404
