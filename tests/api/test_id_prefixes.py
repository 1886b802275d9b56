"""Ids a person and an agent can use: a unique prefix of at least 8 characters stands for an id in every REST path
that takes one; a prefix that starts several ids is a 409 listing them; shorter ones are refused saying 8 are needed."""

from __future__ import annotations

from fastapi.testclient import TestClient

from memcastle.app import Palace
from memcastle.model import NewDrawer


def test_a_unique_prefix_of_eight_characters_stands_for_a_drawer(client: TestClient, palace: Palace) -> None:
    drawer = client.post("/api/notes", json={"content": "the drawbridge opens at dawn", "wing": "ids"}).json()["drawer"]
    prefix = drawer["id"][:8]
    assert client.get(f"/api/drawers/{prefix}").json()["id"] == drawer["id"]
    assert [v["id"] for v in client.get(f"/api/drawers/{prefix}/history").json()["versions"]] == [drawer["id"]]
    assert client.get(f"/api/drawers/{prefix}/preference").json()["drawer_id"] == drawer["id"]
    replaced = client.post(f"/api/drawers/{prefix}/supersede", json={"content": "the drawbridge opens at six"})
    assert replaced.status_code == 201, replaced.text
    assert replaced.json()["supersedes"] == drawer["id"]
    short = client.get(f"/api/drawers/{drawer['id'][:7]}")
    assert short.status_code == 400, "seven characters stand for nothing, and the answer says how many do"
    assert "first 8 characters" in short.json()["error"] + short.json()["help"]
    assert client.get(f"/api/drawers/{prefix.upper()}").json()["id"] == drawer["id"], "ids are hex: any case"


def test_an_ambiguous_prefix_is_a_409_listing_the_candidates(client: TestClient, palace: Palace) -> None:
    for suffix in ("aaaa", "bbbb"):
        palace.store.drawers.add_drawer(
            NewDrawer(wing="ids", room="r", content=f"twin {suffix}", id=f"0badcafe-{suffix}")
        )
    answer = client.get("/api/drawers/0badcafe")
    assert answer.status_code == 409
    body = answer.json()
    assert body["code"] == "ambiguous_id" and body["candidates"] == ["0badcafe-aaaa", "0badcafe-bbbb"]
    assert "more characters" in body["help"]
    assert client.get("/api/drawers/0badcafe-b").json()["id"] == "0badcafe-bbbb"


def test_jobs_and_facts_take_prefixes_too(client: TestClient) -> None:
    fact = client.post("/api/facts", json={"subject": "moat", "predicate": "uses", "object": "water"}).json()
    assert client.get(f"/api/facts/{fact['id'][:8]}").json()["id"] == fact["id"]
    closed = client.post(f"/api/facts/{fact['id'][:8]}/invalidate", json={"reason": "drained"}).json()
    assert closed["id"] == fact["id"] and closed["lifecycle"]["state"] == "invalidated"
    job = client.post("/api/extract", json={}).json()["job"]
    assert client.get(f"/api/jobs/{job['id'][:8]}").json()["id"] == job["id"]


def test_the_terminal_shows_ids_as_long_as_the_shortest_prefix_accepted() -> None:
    from memcastle.cli.render import SHORT_ID, short_id
    from memcastle.services.ids import MIN_PREFIX

    assert SHORT_ID == MIN_PREFIX
    assert short_id("4cec6d1e-996c-4a15-9219-a7097f31db88") == "4cec6d1e"
