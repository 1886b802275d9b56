"""Graph expansion in search (SPEC §3, `expand: true`): after the direct hits, never interleaved, drawers that mention
the direct hits' specific entities (1.0 each, plus 0.5 for each entity one current fact away they mention), in the
same scope and time, up to `limit` more, each with `via`; an entity mentioned all over the palace expands nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from memcastle.app import Palace
from memcastle.search.expansion import generic_limit

from .support import extracted, facts_named, triple


def note(client: TestClient, content: str, wing: str = "w", room: str = "notes") -> str:
    answer = client.post("/api/notes", json={"content": content, "wing": wing, "room": room})
    assert answer.status_code == 201, answer.text
    return answer.json()["drawer"]["id"]  # type: ignore[no-any-return]


def search(client: TestClient, query: str, **body: Any) -> list[dict[str, Any]]:
    answer = client.post("/api/search", json={"query": query, "wing": "w", **body})
    assert answer.status_code == 200, answer.text
    return answer.json()["hits"]  # type: ignore[no-any-return]


@pytest.fixture
def graph(client: TestClient, palace: Palace) -> dict[str, str]:
    """A small palace: the direct hit mentions Ana Lopez and Atlas; Atlas uses Postgres (a current fact)."""
    ids = {
        "hit": note(client, "Zebra review: Ana Lopez works on Atlas."),
        "both": note(client, "Ana Lopez demoed Atlas to the board."),
        "bridge": note(client, "Atlas uses Postgres."),
        "ana": note(client, "Ana Lopez wrote the quarterly report."),
        "postgres": note(client, "Postgres tuning notes from Kim Park."),
        "unrelated": note(client, "Ben Hart works on Orion."),
        "other_wing": note(client, "Ana Lopez and Atlas, filed elsewhere.", wing="elsewhere"),
    }
    extracted(palace)
    return ids


def test_expanded_drawers_come_after_the_direct_hit_best_first_with_via(
    client: TestClient, graph: dict[str, str]
) -> None:
    hits = search(client, "zebra", expand=True)

    assert hits[0]["drawer"]["id"] == graph["hit"] and "via" not in hits[0] and "graph" not in hits[0]["signals"]
    # (coverage, the share of the query's words a drawer holds, is on every hit; none of these holds "zebra")
    assert all(h["signals"].pop("coverage") == 0.0 for h in hits[1:])
    related = [(h["drawer"]["id"], h["score"], h["signals"], h["via"]) for h in hits[1:]]
    assert related == [
        # relevance: the graph score normalized within the expanded hits, as a direct hit has its own
        (graph["both"], 2.0, {"graph": 2.0, "relevance": 1.0}, ["Ana Lopez", "Atlas"]),
        (graph["bridge"], 1.5, {"graph": 1.5, "relevance": 0.5}, ["Atlas", "Postgres"]),  # Postgres: a fact away
        (graph["ana"], 1.0, {"graph": 1.0, "relevance": 0.0}, ["Ana Lopez"]),
    ]
    # The Postgres tuning notes share no entity with the direct hit: one fact away adds to a related drawer's score,
    # it does not bring one in (an expanded hit shares a specific entity with a direct hit).
    assert graph["postgres"] not in {h["drawer"]["id"] for h in hits}


def test_without_expand_only_direct_hits_come_back(client: TestClient, graph: dict[str, str]) -> None:
    assert [h["drawer"]["id"] for h in search(client, "zebra")] == [graph["hit"]]


def test_expansion_adds_at_most_limit_drawers(client: TestClient, graph: dict[str, str]) -> None:
    hits = search(client, "zebra", expand=True, limit=2)
    assert [h["drawer"]["id"] for h in hits] == [graph["hit"], graph["both"], graph["bridge"]]


def test_expanded_drawers_never_interleave_with_direct_hits(client: TestClient, graph: dict[str, str]) -> None:
    # Two direct hits with low relevance scores; graph scores of 2.0 still come after them.
    hits = search(client, "Atlas", expand=True, limit=2)
    kinds = ["graph" in h["signals"] for h in hits]
    assert kinds[:2] == [False, False] and all(kinds[2:]) and len(hits) > 2
    direct = {h["drawer"]["id"] for h in hits[:2]}
    assert not direct & {h["drawer"]["id"] for h in hits[2:]}


def test_expansion_keeps_to_the_search_scope(client: TestClient, palace: Palace, graph: dict[str, str]) -> None:
    on_call = note(client, "Ana Lopez is on call this week.", room="ops")
    extracted(palace)

    in_wing = {h["drawer"]["id"] for h in search(client, "zebra", expand=True)}
    in_room = {h["drawer"]["id"] for h in search(client, "zebra", expand=True, room="notes")}

    assert graph["other_wing"] not in in_wing and graph["unrelated"] not in in_wing
    assert on_call in in_wing and on_call not in in_room
    assert graph["ana"] in in_room


def test_expansion_keeps_to_the_search_time(client: TestClient, palace: Palace) -> None:
    hit = note(client, "Zebra review: Ana Lopez works on Atlas.")
    earlier = note(client, "Ana Lopez wrote the quarterly report.")
    extracted(palace)
    instant = palace.now()
    later = note(client, "Ana Lopez demoed Atlas to the board.")
    client.post(f"/api/drawers/{earlier}/supersede", json={"content": "Ana Lopez rewrote the quarterly report."})
    extracted(palace)

    then = [h["drawer"]["id"] for h in search(client, "zebra", expand=True, as_of=instant)]
    now = [h["drawer"]["id"] for h in search(client, "zebra", expand=True)]

    assert then == [hit, earlier]
    assert now[0] == hit and later in now and earlier not in now and len(now) == 3


def test_a_fact_that_is_no_longer_current_bridges_nothing(
    client: TestClient, palace: Palace, graph: dict[str, str]
) -> None:
    (uses,) = [f for f in facts_named(palace) if triple(f) == ("Atlas", "uses", "Postgres")]
    client.post(f"/api/facts/{uses['id']}/invalidate", json={"reason": "Atlas moved to SQLite"})

    related = {h["drawer"]["id"]: h["via"] for h in search(client, "zebra", expand=True)[1:]}

    assert graph["postgres"] not in related
    assert related[graph["bridge"]] == ["Atlas"]  # still shares Atlas with the direct hit


def test_an_explicit_fact_bridges_like_an_extracted_one(
    client: TestClient, palace: Palace, graph: dict[str, str]
) -> None:
    orion = note(client, "Orion release checklist.")
    launch = note(client, "Ana Lopez planned the Orion launch.")
    extracted(palace)  # the new notes' mentions are filed by the background sweep
    before = {h["drawer"]["id"]: h for h in search(client, "zebra", expand=True, limit=20)[1:]}
    client.post("/api/facts", json={"subject": "Ana Lopez", "predicate": "works_on", "object": "Orion"})

    related = {h["drawer"]["id"]: h for h in search(client, "zebra", expand=True, limit=20)[1:]}

    # Orion is now one stated fact away from Ana Lopez: it adds to a drawer that shares Ana Lopez with the hit...
    assert before[launch]["score"] == 1.0
    assert related[launch]["via"] == ["Ana Lopez", "Orion"] and related[launch]["score"] == 1.5
    # ...and brings in none that shares nothing with it.
    assert orion not in related and graph["unrelated"] not in related


def test_an_entity_mentioned_all_over_the_palace_expands_nothing(client: TestClient, palace: Palace) -> None:
    """A name in more drawers than `generic_limit` (a file every commit touches, a project's own name) links
    everything to everything: it neither brings a drawer in nor adds to one's score."""
    hit = note(client, "Zebra review: Ana Lopez works on Kestrel.")
    ana = note(client, "Ana Lopez wrote the Kestrel quarterly report.")
    everywhere = [note(client, f"Kestrel build log {n}: step {n * 7} passed.") for n in range(30)]
    extracted(palace)

    related = {h["drawer"]["id"]: h for h in search(client, "zebra", expand=True, limit=50)[1:]}

    assert set(related) == {ana}, "only the drawer sharing a specific entity comes"
    assert related[ana]["via"] == ["Ana Lopez"] and related[ana]["score"] == 1.0
    assert not set(everywhere) & set(related)
    assert hit not in related
    assert generic_limit(32) < 30, "Kestrel is generic in this palace"
