"""Conflict presentation (SPEC §5): both contradicting facts stay open; one is marked `preferred` for presentation
only — explicit first, then quality = confidence + freshness + ½·source adjustment, then later valid_from, then id —
with a `basis` that says which rule decided and the preference that applied."""

from __future__ import annotations

import dataclasses
import itertools
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.config.layers import parse_layer
from memcastle.knowledge.facts import (
    FRESHNESS_MAX,
    choose_preferred,
    freshness,
    make_link,
    present,
    quality,
)
from memcastle.model import Assertion, Entity, Origin
from memcastle.model.requests import FactCorrection, FactSpec
from memcastle.preferences import Policy, load_policy

from .support import Palaces, client_of, extracted, mine, triple, write_notes

PREFERENCES = """\
[preferences]
default = "normal"

[preferences.sources.notes]
level = "normal"

[[preferences.sources.notes.criteria]]
path = "status"
equals = "final"
level = "high"

[[preferences.sources.notes.criteria]]
path = "status"
equals = "draft"
level = "low"
"""
POLICY: Policy = load_policy([parse_layer("palace", tomllib.loads(PREFERENCES)["preferences"])])
NOW = "2024-06-30T00:00:00.000000Z"
DAY = {0: "2024-06-30", 10: "2024-06-20", 30: "2024-05-31", 90: "2024-04-01"}


def stamp(days_ago: int) -> str:
    return f"{DAY[days_ago]}T00:00:00.000000Z"


def claim(
    id: str,
    *,
    confidence: float = 0.6,
    days_ago: int = 10,
    status: str | None = None,
    explicit: bool = False,
    object: str | None = None,
    valid_from: str | None = None,
) -> Assertion:
    """A located_in fact from a mined note whose front matter has `status` (no status: a `normal` source)."""
    occurred = stamp(days_ago)
    origin = Origin(
        connector="notes",
        source_id="notes:x",
        document=f"{id}.md",
        chunk=0,
        revision="r1",
        metadata={"status": status} if status else {},
        occurred_at=occurred,
    )
    return Assertion(
        id=id,
        subject="ana",
        predicate="located_in",
        object=object or f"place-{id}",
        confidence=confidence,
        valid_from=valid_from or occurred,
        valid_to=None,
        drawer_id=f"d-{id}",
        extractor="heuristic",
        job_id=None,
        origin=origin.to_json(),
        explicit=explicit,
        created_at=occurred,
    )


def preferred(*group: Assertion) -> tuple[str, str]:
    chosen, basis = choose_preferred(list(group), POLICY, NOW)
    return chosen.id, basis


# --- freshness and quality ------------------------------------------------------------------------


def test_freshness_is_bounded_and_halves_at_thirty_days() -> None:
    assert freshness(claim("a", days_ago=0), NOW) == FRESHNESS_MAX == 0.12
    assert freshness(claim("a", days_ago=30), NOW) == pytest.approx(0.06)
    assert freshness(claim("a", days_ago=90), NOW) == pytest.approx(0.03)
    # Evidence from the future is not fresher than evidence from now.
    assert freshness(claim("a", days_ago=0), stamp(10)) == FRESHNESS_MAX


def test_freshness_counts_from_the_evidence_occurred_at_before_valid_from() -> None:
    fact = claim("a", days_ago=30, valid_from=stamp(0))
    assert freshness(fact, NOW) == pytest.approx(0.06)
    without_origin = dataclasses.replace(fact, origin=None)
    assert freshness(without_origin, NOW) == FRESHNESS_MAX


def test_quality_adds_half_the_source_adjustment() -> None:
    base = claim("a", confidence=0.5, days_ago=30)
    assert quality(base, POLICY, NOW) == pytest.approx(0.56)
    assert quality(claim("a", confidence=0.5, days_ago=30, status="final"), POLICY, NOW) == pytest.approx(0.60)
    assert quality(claim("a", confidence=0.5, days_ago=30, status="draft"), POLICY, NOW) == pytest.approx(0.52)
    assert quality(dataclasses.replace(base, origin=None, valid_from=stamp(30)), POLICY, NOW) == pytest.approx(0.56)


# --- every tie-break level --------------------------------------------------------------------------


def test_an_explicit_fact_comes_first_whatever_its_quality() -> None:
    weak = claim("weak", confidence=0.3, days_ago=90, status="draft", explicit=True)
    strong = claim("strong", confidence=0.95, days_ago=0, status="final")
    assert preferred(strong, weak) == ("weak", "explicit assertion comes first")


def test_a_fact_whose_evidence_was_forgotten_is_never_shown_first() -> None:
    """`forget` keeps a fact without evidence when a confirming fact's evidence stays: it says nothing of its own."""
    from dataclasses import replace

    kept = replace(claim("kept", confidence=0.95, days_ago=0, status="final"), drawer_id=None, origin=None)
    evidenced = claim("evidenced", confidence=0.4, days_ago=90)
    assert preferred(kept, evidenced) == (
        "evidenced",
        "a fact with evidence comes before one whose evidence was forgotten",
    )


def test_higher_confidence_wins_between_equal_sources_of_equal_age() -> None:
    chosen, basis = preferred(claim("a", confidence=0.7), claim("b", confidence=0.9))
    assert chosen == "b"
    assert basis.startswith("higher quality 0.990 vs 0.790") and "confidence 0.90 vs 0.70" in basis


def test_fresher_evidence_wins_between_equal_confidences_and_sources() -> None:
    chosen, basis = preferred(claim("old", days_ago=90), claim("new", days_ago=0))
    assert chosen == "new"
    assert "freshness 0.120 vs 0.030" in basis


def test_only_the_source_preference_decides_when_all_else_is_equal() -> None:
    chosen, basis = preferred(claim("plain"), claim("trusted", status="final"))
    assert chosen == "trusted"
    assert "half the source adjustment +0.04 (high) vs +0.00 (normal)" in basis
    chosen, basis = preferred(claim("distrusted", status="draft"), claim("plain"))
    assert chosen == "plain" and "+0.00 (normal) vs -0.04 (low)" in basis


def test_a_more_confident_low_preference_fact_correctly_wins() -> None:
    low = claim("low", confidence=0.9, status="draft")
    high = claim("high", confidence=0.8, status="final")
    chosen, basis = preferred(high, low)
    assert chosen == "low"
    assert "confidence 0.90 vs 0.80" in basis and "-0.04 (low) vs +0.04 (high)" in basis


def test_the_preference_moves_quality_by_at_most_four_hundredths() -> None:
    # 0.05 more confidence loses to the whole spread between a low and a high source (0.08 of quality).
    assert (
        preferred(claim("low", confidence=0.85, status="draft"), claim("high", confidence=0.8, status="final"))[0]
        == "high"
    )


def test_later_valid_from_breaks_equal_quality() -> None:
    # 0.50 + freshness 0.06 (30 days) = 0.44 + freshness 0.12 (today): equal quality.
    older = claim("older", confidence=0.5, days_ago=30)
    newer = claim("newer", confidence=0.44, days_ago=0)
    assert quality(older, POLICY, NOW) == pytest.approx(quality(newer, POLICY, NOW))
    assert preferred(older, newer) == ("newer", f"equal quality; later valid_from ({stamp(0)})")


def test_the_smaller_id_breaks_the_last_tie() -> None:
    assert preferred(claim("b-fact"), claim("a-fact")) == ("a-fact", "equal quality and valid_from; smaller id")


# --- presentation -------------------------------------------------------------------------------------


def _entities() -> dict[str, Entity]:
    return {
        key: Entity(id=key, name=key.title(), kind="other", key=key, aliases=(), created_at=NOW)
        for key in ("ana", "place-lisbon", "place-porto", "place-atlas")
    }


def test_present_marks_one_of_the_contradicting_pair_preferred_and_leaves_both_open() -> None:
    lisbon = claim("lisbon", status="final", object="place-lisbon")
    porto = claim("porto", object="place-porto")
    alone = dataclasses.replace(claim("alone", object="place-atlas"), subject="place-atlas", predicate="works_on")
    links = [make_link("porto", "lisbon", "contradicts", "inferred", "located_in holds one value at a time", NOW)]
    facts = [lisbon, porto, alone]

    presented = present(facts, links, {f.id: f for f in facts}, _entities(), POLICY, NOW)
    shown = {entry.id: entry.to_json() for entry in presented}

    for id_, is_preferred, level in (("lisbon", True, "high"), ("porto", False, "normal")):
        lifecycle = shown[id_]["lifecycle"]
        assert shown[id_]["valid_to"] is None and lifecycle["state"] == "conflicting"
        assert lifecycle["preferred"] is is_preferred and lifecycle["preferred_id"] == "lisbon"
        assert lifecycle["basis"].startswith("higher quality")
        preference = lifecycle["preference"]
        assert (preference["level"], preference["adjustment"]) == (level, 0.08 if level == "high" else 0.0)
    assert shown["alone"]["lifecycle"] == {
        "state": "current",
        "links": [],
        "preference": {"level": "normal", "adjustment": 0.0, "connector": "notes", "criterion": None},
    }, "a fact outside any conflict carries its evidence's preference too, and nothing about a conflict"
    assert (shown["lisbon"]["subject_name"], shown["lisbon"]["object_name"]) == ("Ana", "Place-Lisbon")


# --- invariants ---------------------------------------------------------------------------------------

_claims = st.builds(
    claim,
    id=st.sampled_from(["a", "b", "c", "d", "e"]),
    confidence=st.sampled_from([0.3, 0.44, 0.5, 0.6, 0.8, 0.9, 1.0]),
    days_ago=st.sampled_from(sorted(DAY)),
    status=st.sampled_from([None, "final", "draft"]),
    explicit=st.booleans(),
)
_groups = st.lists(_claims, min_size=2, max_size=5, unique_by=lambda f: f.id)


@settings(max_examples=150, deadline=None)
@given(_groups, st.randoms(use_true_random=False))
def test_the_preferred_fact_does_not_depend_on_the_order_of_the_group(group: list[Assertion], rng: Any) -> None:
    shuffled = list(group)
    rng.shuffle(shuffled)
    assert choose_preferred(group, POLICY, NOW)[0].id == choose_preferred(shuffled, POLICY, NOW)[0].id


@settings(max_examples=150, deadline=None)
@given(_groups)
def test_an_explicit_fact_is_preferred_whenever_the_group_has_one(group: list[Assertion]) -> None:
    chosen, _ = choose_preferred(group, POLICY, NOW)
    assert chosen.explicit or not any(f.explicit for f in group)


@settings(max_examples=150, deadline=None)
@given(_claims, _claims)
def test_no_preference_outweighs_more_than_eight_hundredths_of_confidence_and_freshness(
    first: Assertion, second: Assertion
) -> None:
    first = dataclasses.replace(first, id="first", explicit=False)
    second = dataclasses.replace(second, id="second", explicit=False)
    margin = (first.confidence + freshness(first, NOW)) - (second.confidence + freshness(second, NOW))
    if margin > 0.08 + 1e-9:
        assert choose_preferred([first, second], POLICY, NOW)[0].id == "first"


# --- end to end through the API ---------------------------------------------------------------------------


def test_a_contradiction_between_mined_notes_is_presented_with_the_preferred_source_and_its_basis(
    palaces: Palaces, tmp_path: Path
) -> None:
    palace = palaces.open(preferences=PREFERENCES)
    folder = write_notes(
        tmp_path / "notes",
        {
            "final.md": ({"date": "2024-05-01", "status": "final"}, "Ana Lopez lives in Lisbon."),
            "plain.md": ({"date": "2024-05-01"}, "Ana Lopez lives in Porto."),
        },
    )
    mine(palace, "notes", folder, wing="w")
    extracted(palace)
    http = client_of(palace)

    shown = {triple(f)[2]: f for f in http.get("/api/facts", params={"predicate": "located_in"}).json()["facts"]}

    lisbon, porto = shown["Lisbon"]["lifecycle"], shown["Porto"]["lifecycle"]
    assert lisbon["state"] == porto["state"] == "conflicting"
    assert shown["Lisbon"]["valid_to"] is None and shown["Porto"]["valid_to"] is None
    assert (lisbon["preferred"], porto["preferred"]) == (True, False)
    assert lisbon["preferred_id"] == porto["preferred_id"] == shown["Lisbon"]["id"]
    # Same evidence date and confidence: only the source preference decided, and the basis says so.
    assert "confidence 0.60 vs 0.60" in lisbon["basis"] and "(high) vs +0.00 (normal)" in lisbon["basis"]
    assert lisbon["preference"] == {
        "level": "high",
        "adjustment": 0.08,
        "connector": "notes",
        "criterion": {"path": "status", "equals": "final", "level": "high"},
    }, "what decided the level: the evidence's connector and the criterion that matched"

    # An explicit decision that Ana lives in Faro contradicting Lisbon: explicit comes first.
    faro = http.post(
        "/api/facts", json={"subject": "Ana Lopez", "predicate": "located_in", "object": "Faro", "confidence": 0.4}
    ).json()
    http.post(
        f"/api/facts/{faro['id']}/link",
        json={"to": shown["Lisbon"]["id"], "kind": "contradicts", "reason": "she moved to Faro"},
    )
    answer = http.get(f"/api/facts/{faro['id']}").json()["lifecycle"]
    assert (answer["state"], answer["preferred"], answer["basis"]) == (
        "conflicting",
        True,
        "explicit assertion comes first",
    )


def test_every_order_of_three_rivals_presents_the_same_preferred_fact() -> None:
    group = [claim("a", confidence=0.6), claim("b", confidence=0.6, status="final"), claim("c", confidence=0.62)]
    chosen = {choose_preferred(list(order), POLICY, NOW)[0].id for order in itertools.permutations(group)}
    assert chosen == {"b"}  # 0.6 + 0.04 beats 0.62 + 0


# --- stated facts in conflicts (ADR 048) ---------------------------------------------------------------------------


def test_two_stated_facts_on_a_single_valued_predicate_conflict_and_one_group_names_one_preferred(
    palaces: Palaces,
) -> None:
    palace = palaces.open(flags={"extraction.provider": "none"})
    facts = palace.services.facts
    berlin = facts.add(FactSpec(subject="Mara Quist", predicate="located_in", object="Berlin")).to_json()
    paris = facts.add(FactSpec(subject="Mara Quist", predicate="located_in", object="Paris")).to_json()
    listed = [f.to_json() for f in facts.list_facts(subject="Mara Quist")]
    assert {(f["subject"], f["object"]) for f in listed} == {("Mara Quist", "Berlin"), ("Mara Quist", "Paris")}
    assert all(f["subject_id"] != f["subject"] and f["subject_id"] == berlin["subject_id"] for f in listed)
    states = {f["object_name"]: f["lifecycle"] for f in listed}
    assert {name: life["state"] for name, life in states.items()} == {"Berlin": "conflicting", "Paris": "conflicting"}
    assert len({life["preferred_id"] for life in states.values()}) == 1, "both name the same preferred fact"
    assert sum(life["preferred"] for life in states.values()) == 1
    assert {berlin["id"], paris["id"]} >= {states["Berlin"]["preferred_id"]}
    # Lisbon and Porto conflict; a third value joins the same group: every member names one preferred fact.
    for city in ("Lisbon", "Porto", "Madrid"):
        facts.add(FactSpec(subject="Ines Okafor", predicate="located_in", object=city))
    group = [f.to_json() for f in facts.list_facts(subject="Ines Okafor")]
    assert {f["lifecycle"]["state"] for f in group} == {"conflicting"}
    assert len({f["lifecycle"]["preferred_id"] for f in group}) == 1
    assert sum(f["lifecycle"]["preferred"] for f in group) == 1
    # The same claim stated twice confirms, and a fact outside any conflict still carries its evidence's preference.
    facts.add(FactSpec(subject="Ada Lovelace", predicate="works_on", object="Engine"))
    again = facts.add(FactSpec(subject="Ada Lovelace", predicate="works_on", object="Engine")).to_json()
    assert [link["kind"] for link in again["lifecycle"]["links"]] == ["confirms"]
    assert again["lifecycle"]["state"] == "current"
    assert again["lifecycle"]["preference"] == {
        "level": "normal",
        "adjustment": 0.0,
        "connector": None,
        "criterion": None,
    }


def test_a_replacement_for_a_fact_inside_a_conflict_stays_in_the_conflict_group(palaces: Palaces) -> None:
    """Superseding Madrid with Valencia opens Valencia among Lisbon, Porto and Seville: compared with each of them as
    any stated fact is, one conflict group, one preferred fact that every member names (ADR 048, C11)."""
    palace = palaces.open(flags={"extraction.provider": "none"})
    facts = palace.services.facts
    stated = {
        city: facts.add(FactSpec(subject="Atlas", predicate="located_in", object=city)).fact.id
        for city in ("Lisbon", "Porto", "Madrid", "Seville")
    }
    replaced = facts.supersede(stated["Madrid"], FactCorrection(object="Valencia", reason="moved"))
    valencia = replaced.fact.fact.id
    listed = {f.object_name: f for f in facts.list_facts(subject="Atlas")}
    assert listed["Madrid"].state == "superseded"
    open_ones = {name: view for name, view in listed.items() if name != "Madrid"}
    assert {name: view.state for name, view in open_ones.items()} == dict.fromkeys(
        ("Lisbon", "Porto", "Seville", "Valencia"), "conflicting"
    )
    named = {view.conflict.preferred_id for view in open_ones.values() if view.conflict is not None}
    assert len(named) == 1 and all(view.conflict is not None for view in open_ones.values())
    # All four are stated: among explicit facts, quality then the later valid_from decides — the replacement.
    assert named == {valencia}
    assert {link.kind for link in listed["Valencia"].links} == {"supersedes", "contradicts"}
    # No link says the replacement contradicts what it replaced.
    assert not [
        link
        for link in listed["Valencia"].links
        if link.kind == "contradicts" and stated["Madrid"] in (link.from_id, link.to_id)
    ]
