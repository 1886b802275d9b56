"""Fact lifecycle (SPEC §6): inferred links, explicit operations, states computed at read time from immutable links,
`as_of`, history, and explicit decisions standing over inference."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from addresses import LOCAL
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.knowledge.extraction import HeuristicProvider
from memcastle.knowledge.facts import infer_links, link_id, make_link, state_of
from memcastle.knowledge.sweep import ExtractionLimits, ExtractionSweep
from memcastle.model import FACT_STATES, Assertion, FactLink

from .support import Palaces, extracted, facts_named, mine, triple, write_notes


def at(day: int, hour: int = 0) -> str:
    return f"2024-01-{day:02d}T{hour:02d}:00:00.000000Z"


def fact(
    id: str,
    *,
    object: str = "lisbon",
    predicate: str = "located_in",
    subject: str = "ana",
    valid_from: str = at(1),
    valid_to: str | None = None,
    drawer: str | None = None,
    explicit: bool = False,
) -> Assertion:
    return Assertion(
        id=id,
        subject=subject,
        predicate=predicate,
        object=object,
        confidence=0.6,
        valid_from=valid_from,
        valid_to=valid_to,
        drawer_id=drawer or f"drawer-{id}",
        extractor="heuristic",
        job_id=None,
        origin=None,
        explicit=explicit,
        created_at=valid_from,
    )


def link(from_id: str, to_id: str, kind: str, when: str, origin: str = "inferred") -> FactLink:
    return make_link(from_id, to_id, kind, origin, "a reason", when)


def state(target: Assertion, links: list[FactLink], *others: Assertion, when: str = at(20)) -> str:
    return state_of(target, links, {f.id: f for f in (target, *others)}, when)


# --- states, as pure functions of facts and links ---------------------------------------------------


def test_a_fact_is_historical_before_it_starts_and_after_a_close_without_a_decision() -> None:
    assert state(fact("a", valid_from=at(10)), [], when=at(5)) == "historical"
    assert state(fact("a", valid_from=at(1), valid_to=at(10)), [], when=at(15)) == "historical"
    assert state(fact("a", valid_from=at(1), valid_to=at(10)), [], when=at(5)) == "current"


def test_invalidates_and_supersedes_links_decide_the_state_once_recorded() -> None:
    old, new = fact("old", valid_to=at(10)), fact("new", valid_from=at(10), object="porto")
    superseded = [link("new", "old", "supersedes", at(10), "explicit")]
    invalidated = [link("old", "old", "invalidates", at(10), "explicit")]

    assert state(old, superseded, new) == "superseded"
    assert state(old, invalidated) == "invalidated"
    assert state(old, superseded, new, when=at(9)) == "current"
    assert state(old, invalidated, when=at(9)) == "current"
    assert state(new, superseded, old) == "current"


def test_an_inferred_supersession_leaves_the_old_fact_open_but_superseded() -> None:
    old, new = fact("old"), fact("new", valid_from=at(5), object="porto")
    assert state(old, [link("new", "old", "supersedes", at(5))], new) == "superseded"


def test_a_contradiction_is_conflicting_only_while_the_rival_is_open_and_undecided() -> None:
    lisbon, porto = fact("lisbon"), fact("porto", object="porto", valid_from=at(3))
    contradiction = link("porto", "lisbon", "contradicts", at(3))

    assert state(lisbon, [contradiction], porto) == state(porto, [contradiction], lisbon) == "conflicting"
    assert state(lisbon, [contradiction], porto, when=at(2)) == "current"  # recorded later
    closed = [contradiction, link("porto", "porto", "invalidates", at(8), "explicit")]
    assert state(lisbon, closed, dataclasses.replace(porto, valid_to=at(8))) == "current"
    assert state(lisbon, closed, dataclasses.replace(porto, valid_to=at(8)), when=at(7)) == "conflicting"
    assert state(lisbon, [contradiction], dataclasses.replace(porto, valid_from=at(25))) == "current"


_times = st.sampled_from([at(d) for d in (1, 3, 5, 7, 9, 11)])
_kinds = st.sampled_from(["confirms", "contradicts", "supersedes", "refines", "invalidates"])


@st.composite
def _facts_and_links(draw: st.DrawFn) -> tuple[list[Assertion], list[FactLink]]:
    facts = []
    for index in range(draw(st.integers(1, 4))):
        start = draw(_times)
        end = draw(st.one_of(st.none(), _times.filter(lambda t, start=start: t > start)))
        facts.append(fact(f"f{index}", object=f"o{index}", valid_from=start, valid_to=end))
    links = []
    for _ in range(draw(st.integers(0, 6))):
        a, b = draw(st.sampled_from(facts)), draw(st.sampled_from(facts))
        links.append(link(a.id, b.id, draw(_kinds), draw(_times), draw(st.sampled_from(["inferred", "explicit"]))))
    return facts, links


@settings(max_examples=150, deadline=None)
@given(_facts_and_links(), _times, st.lists(st.tuples(_kinds, st.integers(0, 3)), max_size=4))
def test_decisions_recorded_after_the_instant_never_change_the_state_at_it(
    world: tuple[list[Assertion], list[FactLink]], instant: str, later: list[tuple[str, int]]
) -> None:
    facts, links = world
    everything = {f.id: f for f in facts}
    after = [
        link(facts[i % len(facts)].id, facts[(i + 1) % len(facts)].id, kind, "2024-02-01T00:00:00.000000Z", "explicit")
        for kind, i in later
    ]
    for target in facts:
        before = state_of(target, links, everything, instant)
        assert before in FACT_STATES
        assert state_of(target, [*links, *after], everything, instant) == before


# --- inference, as a pure function ------------------------------------------------------------------


def test_the_same_claim_from_other_evidence_with_overlapping_validity_confirms() -> None:
    old = fact("old", object="atlas", predicate="works_on")
    same_drawer = fact("x", object="atlas", predicate="works_on", drawer="drawer-old")
    later = fact("new", object="atlas", predicate="works_on", valid_from=at(5))
    disjoint = dataclasses.replace(later, id="late", valid_from=at(12))
    closed_old = dataclasses.replace(old, valid_to=at(10))

    (confirms,) = infer_links(later, [old], predecessor_drawer=None, explicit_pairs=set(), at=at(5))
    assert (confirms.from_id, confirms.to_id, confirms.kind, confirms.origin) == ("new", "old", "confirms", "inferred")
    assert confirms.evidence_drawer == "drawer-new"
    assert infer_links(same_drawer, [old], predecessor_drawer=None, explicit_pairs=set(), at=at(5)) == []
    assert infer_links(disjoint, [closed_old], predecessor_drawer=None, explicit_pairs=set(), at=at(12)) == []


def test_only_a_single_valued_predicate_contradicts_and_only_an_open_fact() -> None:
    lisbon, porto = fact("lisbon"), fact("porto", object="porto", valid_from=at(5))
    atlas = fact("atlas", predicate="works_on", object="atlas")
    orion = fact("orion", predicate="works_on", object="orion", valid_from=at(5))

    (contradicts,) = infer_links(porto, [lisbon], predecessor_drawer=None, explicit_pairs=set(), at=at(5))
    assert (contradicts.from_id, contradicts.to_id, contradicts.kind) == ("porto", "lisbon", "contradicts")
    assert infer_links(orion, [atlas], predecessor_drawer=None, explicit_pairs=set(), at=at(5)) == []
    closed = dataclasses.replace(lisbon, valid_to=at(8))
    assert infer_links(porto, [closed], predecessor_drawer=None, explicit_pairs=set(), at=at(5)) == []


def test_a_fact_from_a_superseding_drawer_supersedes_the_predecessor_facts_of_its_subject_and_predicate() -> None:
    lisbon = fact("lisbon", drawer="d1")
    works = fact("works", predicate="works_on", object="atlas", drawer="d1")
    bens = fact("bens", subject="ben", drawer="d1")
    elsewhere = fact("elsewhere", object="lisbon", drawer="d0")
    same_place = fact("again", drawer="d2", valid_from=at(5))

    links = infer_links(
        same_place, [lisbon, works, bens, elsewhere], predecessor_drawer="d1", explicit_pairs=set(), at=at(5)
    )

    assert {(lk.to_id, lk.kind) for lk in links} == {("lisbon", "supersedes"), ("elsewhere", "confirms")}


def test_inference_skips_a_pair_with_an_explicit_decision() -> None:
    lisbon, porto = fact("lisbon"), fact("porto", object="porto", valid_from=at(5))
    assert (
        infer_links(porto, [lisbon], predecessor_drawer=None, explicit_pairs={frozenset(("lisbon", "porto"))}, at=at(5))
        == []
    )
    assert (
        infer_links(
            porto,
            [lisbon],
            predecessor_drawer="drawer-lisbon",
            explicit_pairs={frozenset(("lisbon", "porto"))},
            at=at(5),
        )
        == []
    )


def test_link_ids_are_deterministic() -> None:
    assert link_id("a", "b", "confirms", "explicit") == link_id("a", "b", "confirms", "explicit")
    assert (
        make_link("a", "b", "confirms", "explicit", "one reason", at(1)).id
        == make_link("a", "b", "confirms", "explicit", "another", at(9)).id
    )
    assert (
        len(
            {
                link_id("a", "b", "confirms", "explicit"),
                link_id("a", "b", "confirms", "inferred"),
                link_id("a", "b", "refines", "explicit"),
                link_id("a", "c", "confirms", "explicit"),
            }
        )
        == 4
    )


# --- inferred links through extraction ----------------------------------------------------------------


def note(client: TestClient, palace: Palace, content: str, room: str = "notes") -> dict[str, Any]:
    """Save a note and wait for its sweep, so each note's facts are inferred against those of the notes before."""
    answer = client.post("/api/notes", json={"content": content, "wing": "w", "room": room})
    assert answer.status_code == 201, answer.text
    extracted(palace)
    return answer.json()["drawer"]  # type: ignore[no-any-return]


def by_triple(palace: Palace) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {triple(f): f for f in facts_named(palace)}


def kinds_of(entry: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((lk["kind"], lk["origin"]) for lk in entry["lifecycle"]["links"])


def test_the_same_claim_in_two_drawers_confirms_and_both_stay_current(client: TestClient, palace: Palace) -> None:
    note(client, palace, "Ana Lopez works on Atlas.", room="standup")
    note(client, palace, "Ana Lopez works on Atlas.", room="planning")
    extracted(palace)

    first, second = facts_named(palace)
    assert [f["lifecycle"]["state"] for f in (first, second)] == ["current", "current"]
    (confirmation,) = second["lifecycle"]["links"]
    assert (confirmation["from"], confirmation["to"], confirmation["kind"], confirmation["origin"]) == (
        second["id"],
        first["id"],
        "confirms",
        "inferred",
    )


def test_a_second_place_contradicts_and_both_facts_stay_open_as_conflicting(client: TestClient, palace: Palace) -> None:
    note(client, palace, "Ana Lopez lives in Lisbon.")
    note(client, palace, "Ana Lopez lives in Porto.")
    extracted(palace)

    facts = by_triple(palace)
    for place in ("Lisbon", "Porto"):
        entry = facts["Ana Lopez", "located_in", place]
        assert entry["valid_to"] is None and entry["lifecycle"]["state"] == "conflicting"
        assert kinds_of(entry) == [("contradicts", "inferred")]
    assert len(facts_named(palace, state="conflicting")) == 2


def test_a_second_project_is_no_contradiction(client: TestClient, palace: Palace) -> None:
    note(client, palace, "Ana Lopez works on Atlas.")
    note(client, palace, "Ana Lopez works on Orion.")
    extracted(palace)
    assert [(f["lifecycle"]["state"], f["lifecycle"]["links"]) for f in facts_named(palace)] == [
        ("current", []),
        ("current", []),
    ]


def test_superseding_a_note_supersedes_its_facts_of_the_same_subject_and_predicate(
    client: TestClient, palace: Palace
) -> None:
    old = note(client, palace, "Ana Lopez lives in Lisbon. Ana Lopez works on Atlas.")
    extracted(palace)
    new = client.post(f"/api/drawers/{old['id']}/supersede", json={"content": "Ana Lopez lives in Porto."}).json()
    extracted(palace)

    facts = by_triple(palace)
    lisbon, porto = facts["Ana Lopez", "located_in", "Lisbon"], facts["Ana Lopez", "located_in", "Porto"]
    works = facts["Ana Lopez", "works_on", "Atlas"]
    assert lisbon["lifecycle"]["state"] == "superseded" and lisbon["valid_to"] is None  # never rewritten
    assert porto["lifecycle"]["state"] == "current" and works["lifecycle"]["state"] == "current"
    (supersession,) = porto["lifecycle"]["links"]
    assert (
        supersession["from"],
        supersession["to"],
        supersession["kind"],
        supersession["origin"],
        supersession["evidence_drawer"],
    ) == (porto["id"], lisbon["id"], "supersedes", "inferred", new["id"])


def test_a_claim_repeated_after_the_fact_was_closed_does_not_confirm_it(client: TestClient, palace: Palace) -> None:
    note(client, palace, "Ana Lopez works on Atlas.", room="standup")
    extracted(palace)
    (old,) = facts_named(palace)
    client.post(f"/api/facts/{old['id']}/invalidate", json={"reason": "she left the team"})
    note(client, palace, "Ana Lopez works on Atlas.", room="planning")
    extracted(palace)

    states = sorted((f["lifecycle"]["state"], len(f["lifecycle"]["links"])) for f in facts_named(palace))
    assert states == [("current", 0), ("invalidated", 1)]


# --- explicit operations over REST ------------------------------------------------------------------


def add(client: TestClient, **body: Any) -> dict[str, Any]:
    answer = client.post("/api/facts", json={"predicate": "located_in", **body})
    assert answer.status_code == 201, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_an_explicit_fact_resolves_its_entities_and_is_current(client: TestClient) -> None:
    first = add(
        client,
        subject="Ana Lopez",
        object="Lisbon",
        confidence=0.9,
        valid_from="2024-01-01",
        subject_kind="person",
        object_kind="place",
    )
    second = add(client, subject="ana lopez", predicate="works_on", object="Atlas")

    assert first["explicit"] is True and first["confidence"] == 0.9
    assert first["valid_from"] == "2024-01-01T00:00:00.000000Z" and first["valid_to"] is None
    assert first["provenance"] == {"drawer": None, "extractor": "explicit", "job_id": None, "origin": None}
    stated = {"level": "normal", "adjustment": 0.0, "connector": None, "criterion": None}  # no evidence: the default
    assert first["lifecycle"] == {"state": "current", "links": [], "preference": stated}
    assert (first["subject_name"], first["object_name"]) == ("Ana Lopez", "Lisbon")
    assert second["subject"] == first["subject"] and second["confidence"] == 1.0
    kinds = {e["name"]: e["kind"] for e in client.get("/api/entities").json()["entities"]}
    assert kinds == {"Ana Lopez": "person", "Lisbon": "place", "Atlas": "other"}


INVALID_FACTS = [
    ({"predicate": "likes"}, "predicate"),
    ({"confidence": 1.5}, "confidence"),
    ({"subject": "   "}, "subject"),
    ({"object": "ANA LOPEZ"}, "object"),
    ({"subject_kind": "alien"}, "subject_kind"),
    ({"valid_from": "last spring"}, "valid_from"),
    ({"predicate": None}, "predicate"),
]


def test_an_invalid_explicit_fact_is_refused_naming_the_field(client: TestClient) -> None:
    for body, field in INVALID_FACTS:
        answer = client.post(
            "/api/facts", json={"subject": "Ana Lopez", "predicate": "located_in", "object": "Lisbon", **body}
        )
        assert (answer.status_code, answer.json()["field"]) == (400, field), body
    assert client.get("/api/facts").json()["facts"] == []
    assert client.get("/api/entities").json()["entities"] == []


def test_supersede_closes_the_fact_and_opens_its_replacement_in_one_step(client: TestClient) -> None:
    old = add(client, subject="Ana Lopez", object="Lisbon", confidence=0.8)

    answer = client.post(f"/api/facts/{old['id']}/supersede", json={"object": "Porto", "reason": "she moved"})

    assert answer.status_code == 201
    new, closed = answer.json()["fact"], answer.json()["superseded"]
    assert (new["subject"], new["predicate"], new["object_name"], new["confidence"]) == (
        old["subject"],
        "located_in",
        "Porto",
        0.8,
    )
    assert closed["valid_to"] == new["valid_from"] and new["valid_to"] is None
    assert (closed["lifecycle"]["state"], new["lifecycle"]["state"]) == ("superseded", "current")
    (decision,) = new["lifecycle"]["links"]
    assert (decision["from"], decision["to"], decision["kind"], decision["origin"], decision["reason"]) == (
        new["id"],
        old["id"],
        "supersedes",
        "explicit",
        "she moved",
    )
    again = client.post(f"/api/facts/{old['id']}/supersede", json={"object": "Faro"})
    assert again.status_code == 409
    assert [f["object_name"] for f in client.get("/api/facts").json()["facts"]] == ["Lisbon", "Porto"]


def test_invalidate_closes_the_fact_with_its_reason(client: TestClient) -> None:
    fact_ = add(client, subject="Ana Lopez", object="Lisbon")

    blank = client.post(f"/api/facts/{fact_['id']}/invalidate", json={"reason": "  "})
    answer = client.post(f"/api/facts/{fact_['id']}/invalidate", json={"reason": "a typo"})

    assert blank.status_code == 400 and blank.json()["field"] == "reason"
    assert answer.status_code == 200
    closed = answer.json()
    assert closed["lifecycle"]["state"] == "invalidated" and closed["valid_to"] is not None
    (decision,) = closed["lifecycle"]["links"]
    assert (decision["kind"], decision["origin"], decision["reason"]) == ("invalidates", "explicit", "a typo")
    assert client.post(f"/api/facts/{fact_['id']}/invalidate", json={"reason": "again"}).status_code == 409
    assert client.post("/api/facts/no-such-fact/invalidate", json={"reason": "x"}).status_code == 404


def test_posting_the_same_link_twice_records_one_link(client: TestClient) -> None:
    # works_on holds many values: the only link between them is the one posted (located_in would add an inferred one)
    lisbon = add(client, subject="Ana Lopez", object="Lisbon", predicate="works_on")
    porto = add(client, subject="Ana Lopez", object="Porto", predicate="works_on")
    body = {"to": porto["id"], "kind": "contradicts", "reason": "she cannot live in both"}

    first = client.post(f"/api/facts/{lisbon['id']}/link", json=body)
    second = client.post(f"/api/facts/{lisbon['id']}/link", json=body)

    assert first.status_code == second.status_code == 201
    assert first.json()["link"]["id"] == second.json()["link"]["id"]
    links = client.get(f"/api/facts/{lisbon['id']}").json()["lifecycle"]["links"]
    assert [lk["id"] for lk in links] == [first.json()["link"]["id"]]
    # An explicit contradiction makes both conflicting, whatever the predicate.
    assert first.json()["from"]["lifecycle"]["state"] == first.json()["to"]["lifecycle"]["state"] == "conflicting"


def test_a_retried_link_answers_the_link_that_was_recorded(client: TestClient) -> None:
    lisbon = add(client, subject="Ana Lopez", object="Lisbon", predicate="works_on")
    porto = add(client, subject="Ana Lopez", object="Porto", predicate="works_on")
    body = {"to": porto["id"], "kind": "refines", "reason": "more precise"}
    client.post(f"/api/facts/{lisbon['id']}/link", json=body)
    retried = client.post(f"/api/facts/{lisbon['id']}/link", json=body).json()["link"]
    (stored,) = client.get(f"/api/facts/{lisbon['id']}").json()["lifecycle"]["links"]
    assert retried == stored


BAD_LINKS = [
    ({"kind": "supersedes"}, 400, "kind"),
    ({"kind": "invalidates"}, 400, "kind"),
    ({"reason": " "}, 400, "reason"),
    ({"to": "SELF"}, 400, "to"),
    ({"to": "no-such-fact"}, 404, None),
]


def test_a_link_needs_an_explicit_kind_a_reason_and_another_existing_fact(client: TestClient) -> None:
    lisbon = add(client, subject="Ana Lopez", object="Lisbon", predicate="works_on")
    porto = add(client, subject="Ana Lopez", object="Porto", predicate="works_on")
    for body, status, field in BAD_LINKS:
        sent = {"to": porto["id"], "kind": "confirms", "reason": "why", **body}
        if sent["to"] == "SELF":
            sent["to"] = lisbon["id"]
        answer = client.post(f"/api/facts/{lisbon['id']}/link", json=sent)
        assert answer.status_code == status, body
        assert field is None or answer.json()["field"] == field
    assert client.get(f"/api/facts/{lisbon['id']}").json()["lifecycle"]["links"] == []


def test_a_checkpoint_item_with_a_fact_records_it_explicitly_with_its_drawer_as_evidence(client: TestClient) -> None:
    answer = client.post(
        "/api/checkpoint",
        json={
            "items": [
                {
                    "content": "Decided: Ana moves the Atlas team to Porto.",
                    "wing": "w",
                    "fact": {
                        "subject": "Atlas",
                        "predicate": "located_in",
                        "object": "Porto",
                        "confidence": 0.9,
                        "subject_kind": "project",
                        "object_kind": "place",
                    },
                },
                {"content": "Nothing to record here.", "wing": "w"},
            ]
        },
    )

    assert answer.status_code == 201
    drawer = answer.json()["drawers"][0]
    (recorded,) = client.get("/api/facts", params={"subject": "Atlas"}).json()["facts"]
    assert triple(recorded) == ("Atlas", "located_in", "Porto") and recorded["explicit"] is True
    assert recorded["confidence"] == 0.9
    assert recorded["provenance"]["drawer"] == drawer["id"] and recorded["provenance"]["extractor"] == "explicit"
    assert "checkpoint" in drawer["tags"]


def test_the_drawer_stating_a_fact_mentions_both_its_ends_without_extraction(palace_dir: Path) -> None:
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "none", "extraction.provider": "none"},
        env={},
        config_file=None,
    )
    with TestClient(http_app(build(settings)), base_url=LOCAL) as client:
        item = {"content": "Atlas moves to Porto.", "wing": "w"}
        fact = {"subject": "Atlas", "predicate": "located_in", "object": "Porto"}
        drawer = client.post("/api/checkpoint", json={"items": [{**item, "fact": fact}]}).json()["drawers"][0]
        (recorded,) = client.get("/api/facts", params={"subject": "Atlas"}).json()["facts"]
        for end in ("subject", "object"):  # an entity's page lists the drawer that states its fact
            page = client.get(f"/api/entities/{recorded[end + '_id']}").json()
            assert page["mentions"] == [{"drawer": drawer["id"], "spelling": recorded[end]}], page


def test_a_checkpoint_with_an_invalid_fact_stores_nothing(client: TestClient) -> None:
    answer = client.post(
        "/api/checkpoint",
        json={
            "items": [
                {
                    "content": "First decision.",
                    "wing": "w",
                    "fact": {"subject": "Ana Lopez", "predicate": "works_on", "object": "Atlas"},
                },
                {
                    "content": "Second decision.",
                    "wing": "w",
                    "fact": {"subject": "Ana Lopez", "predicate": "likes", "object": "Atlas"},
                },
            ]
        },
    )
    assert answer.status_code == 400 and answer.json()["field"] == "items[1].fact.predicate"
    assert client.get("/api/drawers", params={"wing": "w"}).json()["drawers"] == []
    assert client.get("/api/facts").json()["facts"] == []


# --- states at read time and as_of --------------------------------------------------------------------


def test_as_of_ignores_an_invalidation_recorded_later(client: TestClient, palace: Palace) -> None:
    fact_ = add(client, subject="Ana Lopez", object="Lisbon", valid_from="2024-01-01")
    before = palace.now()
    client.post(f"/api/facts/{fact_['id']}/invalidate", json={"reason": "wrong"})

    assert client.get(f"/api/facts/{fact_['id']}", params={"as_of": before}).json()["lifecycle"]["state"] == "current"
    assert client.get(f"/api/facts/{fact_['id']}").json()["lifecycle"]["state"] == "invalidated"
    assert [
        f["id"] for f in client.get("/api/facts", params={"state": "current", "as_of": before}).json()["facts"]
    ] == [fact_["id"]]
    assert client.get("/api/facts", params={"state": "current"}).json()["facts"] == []
    assert (
        client.get(f"/api/facts/{fact_['id']}", params={"as_of": "2023-06-01"}).json()["lifecycle"]["state"]
        == "historical"
    )


def test_as_of_before_a_supersession_shows_the_old_fact_current_and_the_new_one_not_yet(
    client: TestClient, palace: Palace
) -> None:
    old = add(client, subject="Ana Lopez", object="Lisbon", valid_from="2024-01-01")
    before = palace.now()
    new = client.post(f"/api/facts/{old['id']}/supersede", json={"object": "Porto"}).json()["fact"]

    states = {
        f["object_name"]: f["lifecycle"]["state"]
        for f in client.get("/api/facts", params={"as_of": before}).json()["facts"]
    }
    assert states == {"Lisbon": "current", "Porto": "historical"}
    assert client.get(f"/api/facts/{new['id']}").json()["lifecycle"]["state"] == "current"


def test_a_fact_that_starts_later_is_historical_until_then(client: TestClient) -> None:
    later = add(client, subject="Ana Lopez", object="Lisbon", valid_from="2999-01-01")
    assert later["lifecycle"]["state"] == "historical"
    assert (
        client.get(f"/api/facts/{later['id']}", params={"as_of": "2999-06-01"}).json()["lifecycle"]["state"]
        == "current"
    )


def test_a_fact_listing_refuses_an_unknown_filter_naming_it(client: TestClient) -> None:
    for params, field in (
        ({"state": "stale"}, "state"),
        ({"predicate": "likes"}, "predicate"),
        ({"as_of": "yesterday"}, "as_of"),
    ):
        answer = client.get("/api/facts", params=params)
        assert (answer.status_code, answer.json()["field"]) == (400, field)


def test_a_fact_listing_filters_by_entity_names(client: TestClient) -> None:
    add(client, subject="Ana Lopez", object="Lisbon")
    add(client, subject="Ben Hart", predicate="works_on", object="Atlas")
    assert [f["subject_name"] for f in client.get("/api/facts", params={"subject": "ana lopez"}).json()["facts"]] == [
        "Ana Lopez"
    ]
    assert [f["object_name"] for f in client.get("/api/facts", params={"object": "Atlas"}).json()["facts"]] == ["Atlas"]
    assert client.get("/api/facts", params={"subject": "Nobody Known"}).json()["facts"] == []
    assert client.get("/api/facts/no-such-fact").status_code == 404


# --- history ------------------------------------------------------------------------------------------


def test_history_returns_everything_transitively_linked_ordered_by_valid_from(client: TestClient) -> None:
    first = add(client, subject="Ana Lopez", object="Lisbon", valid_from="2024-03-01")
    second = client.post(f"/api/facts/{first['id']}/supersede", json={"object": "Porto"}).json()["fact"]
    third = client.post(f"/api/facts/{second['id']}/supersede", json={"object": "Faro"}).json()["fact"]
    early = add(client, subject="Ana Lopez", object="Faro", valid_from="2020-01-01")
    client.post(f"/api/facts/{early['id']}/link", json={"to": third["id"], "kind": "confirms", "reason": "same"})
    add(client, subject="Ben Hart", object="Lisbon")  # unrelated

    for start in (first, third, early):
        history = client.get(f"/api/facts/{start['id']}/history").json()["facts"]
        assert [f["id"] for f in history] == [early["id"], first["id"], second["id"], third["id"]]
    states = [f["lifecycle"]["state"] for f in client.get(f"/api/facts/{first['id']}/history").json()["facts"]]
    assert states == ["current", "superseded", "superseded", "current"]
    assert client.get("/api/facts/no-such-fact/history").status_code == 404


# --- explicit decisions stand over inference -----------------------------------------------------------


def test_a_batch_read_again_adds_no_inferred_link_where_an_explicit_decision_stands(palaces: Palaces) -> None:
    palace = palaces.open(flags={"extraction.provider": "none"})
    lisbon = palace.services.drawers.save_note("Ana Lopez lives in Lisbon.", wing="w").drawer
    porto = palace.services.drawers.save_note("Ana Lopez lives in Porto.", wing="w").drawer
    faro = palace.services.drawers.save_note("Ana Lopez lives in Faro.", wing="w").drawer
    sweep = ExtractionSweep(palace.store, HeuristicProvider(), palace.services.policy, ExtractionLimits(0.3))
    # Two sweeps read their batches before either wrote: neither saw the other's facts.
    batches = [sweep.read_batch([drawer], "heuristic", None)[0] for drawer in (lisbon, porto)]
    for batch in batches:
        assert batch.links == ()
        palace.store.graph.apply_graph(batch)
    facts = {f["object_name"]: f["id"] for f in facts_named(palace)}
    palace.services.facts.link(facts["Lisbon"], facts["Porto"], "confirms", "she splits her time between them")

    write, _ = sweep.read_batch([porto, faro], "heuristic", None)

    inferred = {(lk.from_id, lk.to_id, lk.kind) for lk in write.links}
    assert not any({a, b} == {facts["Lisbon"], facts["Porto"]} for a, b, _ in inferred)
    faro_id = next(a.id for a in write.assertions if a.drawer_id == faro.id)
    assert (faro_id, facts["Lisbon"], "contradicts") in inferred  # where no decision stands, inference runs


def test_an_explicit_decision_after_an_inferred_contradiction_resolves_the_conflict(
    client: TestClient, palace: Palace
) -> None:
    note(client, palace, "Ana Lopez lives in Portugal.")
    note(client, palace, "Ana Lopez lives in Lisbon.")
    extracted(palace)
    facts = by_triple(palace)
    country, city = facts["Ana Lopez", "located_in", "Portugal"], facts["Ana Lopez", "located_in", "Lisbon"]
    assert country["lifecycle"]["state"] == "conflicting"

    client.post(
        f"/api/facts/{city['id']}/link",
        json={"to": country["id"], "kind": "refines", "reason": "Lisbon is in Portugal"},
    )

    assert client.get(f"/api/facts/{city['id']}").json()["lifecycle"]["state"] == "current"
    assert client.get(f"/api/facts/{country['id']}").json()["lifecycle"]["state"] == "current"


def test_as_of_shows_an_inferred_contradiction_between_claims_both_open_then(palaces: Palaces, tmp_path: Path) -> None:
    palace = palaces.open()
    folder = write_notes(
        tmp_path / "notes",
        {
            "lisbon.md": ({"date": "2024-05-01"}, "Ana Lopez lives in Lisbon."),
            "porto.md": ({"date": "2024-05-02"}, "Ana Lopez lives in Porto."),
        },
    )
    mine(palace, "notes", folder, wing="w")
    extracted(palace)
    assert {f["lifecycle"]["state"] for f in facts_named(palace)} == {"conflicting"}

    assert {f["lifecycle"]["state"] for f in facts_named(palace, as_of="2024-06-01")} == {"conflicting"}
