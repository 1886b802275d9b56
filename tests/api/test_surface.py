"""The rest of the original's surface over HTTP: searches as links (GET with query-string filters), wings and rooms
created and shown with totals, a drawer invalidated without a replacement."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient


def save(client: TestClient, content: str, **fields: Any) -> dict[str, Any]:
    answer = client.post("/api/notes", json={"content": content, **fields})
    assert answer.status_code in (200, 201), answer.text
    return dict(answer.json()["drawer"])


def test_search_and_recall_by_get_take_the_body_fields_as_parameters(client: TestClient) -> None:
    kept = save(client, "the lighthouse keeper's log", wing="sea", tags=["log", "night"])
    save(client, "the lighthouse paint schedule", wing="sea", tags=["paint"])
    save(client, "a lighthouse in another wing", wing="land")

    posted = client.post("/api/search", json={"query": "lighthouse", "wing": "sea", "tags": ["log"], "limit": 5})
    got = client.get("/api/search", params={"q": "lighthouse", "wing": "sea", "tag": "log", "limit": "5"})
    assert got.status_code == 200, got.text
    assert [h["drawer"]["id"] for h in got.json()["hits"]] == [h["drawer"]["id"] for h in posted.json()["hits"]]
    assert [h["drawer"]["id"] for h in got.json()["hits"]] == [kept["id"]]

    both = client.get("/api/search", params=[("q", "lighthouse"), ("tags", "log,night"), ("full", "false")])
    assert [h["id"] for h in both.json()["hits"]] == [kept["id"]]  # compact hits, both tags required
    recall = client.get("/api/recall", params={"q": "lighthouse", "wing": "land"})
    assert recall.status_code == 200 and len(recall.json()["hits"]) == 1

    for params, field in (
        ({"q": "lighthouse", "limit": "many"}, "limit"),
        ({"q": "lighthouse", "ranking": "psychic"}, "ranking"),
        ({"q": "lighthouse", "sort": "date"}, "sort"),
        ({"wing": "sea"}, "query"),
        ([("q", "a"), ("q", "b")], "query"),
    ):
        refused = client.get("/api/search", params=params)
        assert refused.status_code == 400 and refused.json()["field"] == field, (params, refused.text)


def test_a_wrong_drawer_is_invalidated_without_a_replacement(client: TestClient) -> None:
    wrong = save(client, "the vault code is 1234", wing="facts")
    refused = client.post(f"/api/drawers/{wrong['id']}/invalidate", json={"reason": "  "})
    assert refused.status_code == 400 and refused.json()["field"] == "reason"
    assert client.post(f"/api/drawers/{wrong['id']}/invalidate", json={}).json()["field"] == "reason"

    closed = client.post(f"/api/drawers/{wrong['id']}/invalidate", json={"reason": "the code was changed"})
    assert closed.status_code == 200, closed.text
    drawer = closed.json()
    assert drawer["valid_to"] is not None and drawer["superseded_by"] is None
    assert "the code was changed" in str(drawer)
    assert client.post("/api/search", json={"query": "vault code", "wing": "facts"}).json()["hits"] == []
    back = client.post("/api/search", json={"query": "vault code", "wing": "facts", "include_historical": True}).json()[
        "hits"
    ]
    assert [h["drawer"]["id"] for h in back] == [wrong["id"]]  # history keeps it
    again = client.post(f"/api/drawers/{wrong['id']}/invalidate", json={"reason": "twice"})
    assert again.status_code == 409


def test_wings_and_rooms_are_made_and_shown_with_totals(client: TestClient) -> None:
    made = client.post("/api/wings", json={"name": "projects"})
    assert made.status_code == 201 and made.json()["created"] is True
    assert made.json()["drawers"] == 0 and made.json()["rooms"] == 0
    assert client.post("/api/wings", json={"name": "projects"}).status_code == 200  # already there
    room = client.post("/api/wings/projects/rooms", json={"name": "atlas"})
    assert room.status_code == 201 and room.json()["room"] == "atlas"

    first = save(client, "atlas kickoff notes", wing="projects", room="atlas")
    client.post(f"/api/drawers/{first['id']}/supersede", json={"content": "atlas kickoff notes, corrected"})
    save(client, "atlas budget", wing="projects", room="atlas")
    wing = client.get("/api/wings/projects").json()
    assert (wing["drawers"], wing["versions"], wing["rooms"]) == (2, 3, 1)
    assert wing["last_filed_at"] is not None
    shown = client.get("/api/wings/projects/rooms/atlas").json()
    assert (shown["room"], shown["drawers"], shown["versions"]) == ("atlas", 2, 3)
    assert any(w["name"] == "projects" for w in client.get("/api/wings").json()["wings"])

    assert client.get("/api/wings/nowhere").status_code == 404
    assert client.get("/api/wings/projects/rooms/nowhere").status_code == 404
    assert client.post("/api/wings", json={"name": ""}).json()["field"] == "name"
    assert client.post("/api/wings", json={"name": "x", "colour": "red"}).json()["field"] == "colour"


def test_the_graph_around_an_entity_or_a_drawer_is_bounded_nodes_and_edges(client: TestClient) -> None:
    evidence = save(client, "Atlas moved to Madrid.", wing="graph")
    other = save(client, "Atlas is in Lisbon.", wing="graph")
    for obj, drawer in (("Madrid", evidence), ("Lisbon", other)):
        made = client.post(
            "/api/facts",
            json={"subject": "Atlas", "predicate": "located_in", "object": obj, "evidence_drawer": drawer["id"]},
        )
        assert made.status_code == 201, made.text
    client.post("/api/facts", json={"subject": "Madrid", "predicate": "located_in", "object": "Spain"})
    atlas = next(e for e in client.get("/api/entities", params={"name": "Atlas"}).json()["entities"])

    near = client.get("/api/graph", params={"entity": atlas["id"]}).json()
    kinds = {n["label"]: n["kind"] for n in near["nodes"]}
    assert kinds["Atlas"] == "entity" and kinds["Madrid"] == "entity" and "Spain" not in kinds
    facts = [n for n in near["nodes"] if n["kind"] == "fact"]
    assert len(facts) == 2 and {f["state"] for f in facts} == {"conflicting"}
    assert any(e["kind"] == "contradicts" for e in near["edges"])  # the two claims linked, fact to fact
    ids = {n["id"] for n in near["nodes"]}
    assert all(e["from"] in ids and e["to"] in ids for e in near["edges"])
    assert near["truncated"] is False
    by_name = client.get("/api/graph", params={"entity": "atlas"}).json()  # its name, as a person types it
    assert {n["id"] for n in by_name["nodes"]} == ids

    wider = client.get("/api/graph", params={"entity": atlas["id"], "depth": 2}).json()
    assert "Spain" in {n["label"] for n in wider["nodes"]}
    cut = client.get("/api/graph", params={"entity": atlas["id"], "depth": 2, "limit": 1}).json()
    assert cut["truncated"] is True and len([n for n in cut["nodes"] if n["kind"] == "fact"]) == 1

    around = client.get("/api/graph", params={"drawer": evidence["id"]}).json()
    assert {"kind": "drawer"}.items() <= next(n for n in around["nodes"] if n["id"] == evidence["id"]).items()

    assert client.get("/api/graph").json()["field"] == "entity"
    assert client.get("/api/graph", params={"entity": atlas["id"], "depth": 3}).json()["field"] == "depth"


def test_aliases_mentions_candidates_and_relationships(client: TestClient) -> None:
    note = save(client, "Notes from the planning call.", wing="ent")
    made = client.post(f"/api/drawers/{note['id']}/mentions", json={"entity": "Atlantis Project", "kind": "project"})
    assert made.status_code == 201, made.text
    atlantis = made.json()
    assert atlantis["kind"] == "project" and [m["drawer"] for m in atlantis["mentions"]] == [note["id"]]

    aliased = client.post(f"/api/entities/{atlantis['id']}/aliases", json={"alias": "Project A"})
    assert aliased.status_code == 200 and "Project A" in aliased.json()["aliases"]
    # The alias now resolves: a fact about "Project A" is about Atlantis.
    client.post("/api/facts", json={"subject": "Project A", "predicate": "uses", "object": "Postgres"})
    relations = client.get(f"/api/entities/{atlantis['id']}/relationships").json()["facts"]
    assert [f["subject"] for f in relations] == ["Atlantis Project"]

    other = client.post(f"/api/drawers/{note['id']}/mentions", json={"entity": "Vim"}).json()
    taken = client.post(f"/api/entities/{other['id']}/aliases", json={"alias": "Atlantis Project"})
    assert taken.status_code == 409 and atlantis["id"] in taken.text

    # The same name as a person and as a place: two entities, and a pair for a person to look at.
    person = client.post(f"/api/drawers/{note['id']}/mentions", json={"entity": "Mercury", "kind": "person"}).json()
    place = client.post(f"/api/drawers/{note['id']}/mentions", json={"entity": "Mercury", "kind": "place"}).json()
    assert person["id"] != place["id"]
    candidates = client.get("/api/entities/candidates").json()["candidates"]
    assert any({c["entity"], c["other"]} == {person["id"], place["id"]} for c in candidates), candidates

    missing = client.post("/api/drawers/no-such-drawer/mentions", json={"entity": "Vim"})
    assert missing.status_code == 404
    assert client.post(f"/api/drawers/{note['id']}/mentions", json={}).json()["field"] == "entity"
