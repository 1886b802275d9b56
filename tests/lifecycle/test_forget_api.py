"""The forgetting routes: each scope's default, every refusal a 400 naming the field (or 404, 403, 409)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from knowledge.support import Palaces, client_of, wait_until, write_notes


def test_a_drawer_goes_at_once_a_source_only_when_confirmed(client: TestClient, tmp_path: Path) -> None:
    saved = client.post("/api/notes", json={"content": "the drawbridge password is swordfish"}).json()["drawer"]
    gone = client.request("DELETE", f"/api/drawers/{saved['id']}", json={})
    assert gone.status_code == 200 and gone.json()["dry_run"] is False
    assert client.get(f"/api/drawers/{saved['id']}").status_code == 404
    again = client.request("DELETE", f"/api/drawers/{saved['id']}", json={})
    assert again.status_code == 404 and again.json()["code"] == "not_found"
    write_notes(tmp_path / "notes", {"a.md": ({}, "a note to mine")})
    job = client.post("/api/mine", json={"connector": "notes", "locator": str(tmp_path / "notes")}).json()["job"]
    wait_until(lambda: client.get(f"/api/jobs/{job['id']}").json()["status"] == "completed", what="the mine")
    (source,) = client.get("/api/sources").json()["sources"]
    assert source["documents"] == 1 and source["drawers"] == 1
    preview = client.request("DELETE", f"/api/sources/{source['id']}", json={})
    assert preview.json()["dry_run"] is True and preview.json()["counts"]["versions"] == 1
    done = client.request("DELETE", f"/api/sources/{source['id']}", params={"dry_run": "false"}, json={})
    assert done.json()["dry_run"] is False
    assert client.get("/api/sources").json()["sources"][0]["drawers"] == 0


def test_every_refusal_names_what_is_wrong(client: TestClient) -> None:
    cases = [
        ({"scope": "drawer"}, "drawer_id"),
        ({"scope": "drawer", "drawer_id": "x", "wing": "w"}, "wing"),
        ({"scope": "document", "source_id": "s"}, "document"),
        ({"scope": "room", "wing": "w"}, "room"),
        ({"scope": "search", "search": {"query": "!!!"}}, "query"),
        ({"scope": "search", "search": {"query": "x", "as_of": "soon"}}, "as_of"),
        ({"scope": "everything"}, "scope"),
        ({"scope": "drawer", "drawer_id": "x", "dry_run": "yes"}, "dry_run"),
    ]
    for body, field in cases:
        answer = client.post("/api/forget", json=body)
        assert answer.status_code == 400, (body, answer.text)
        assert answer.json()["field"].split(".")[-1] == field, (body, answer.json())
    assert client.post("/api/forget", json={"scope": "wing", "wing": "nowhere"}).status_code == 404
    denied = client.post("/api/forget", json={"scope": "wing", "wing": "w"}, headers={"X-MemCastle-Mode": "read_only"})
    assert denied.status_code == 403
    form = client.post("/api/forget", data={"scope": "wing", "wing": "w"})
    assert form.status_code == 415, "no cross-site form can forget"


def test_a_wing_is_not_forgotten_or_renamed_while_a_mine_files_into_it(palaces: Palaces, tmp_path: Path) -> None:
    palace = palaces.open(start=False)  # the mine stays queued: no worker runs
    client = client_of(palace)
    client.post("/api/notes", json={"content": "already here", "wing": "busy"})
    write_notes(tmp_path / "notes", {"a.md": ({}, "on its way")})
    job = client.post("/api/mine", json={"connector": "notes", "locator": str(tmp_path / "notes"), "wing": "busy"})
    job_id = job.json()["job"]["id"]
    for attempt in (
        lambda: client.post("/api/forget", json={"scope": "wing", "wing": "busy", "dry_run": False}),
        lambda: client.request("DELETE", "/api/wings/busy", params={"force": "true"}, json={}),
        lambda: client.post("/api/wings/busy/rename", json={"name": "calm"}),
    ):
        answer = attempt()
        assert answer.status_code == 409 and job_id in answer.json()["error"], answer.text
    preview = client.post("/api/forget", json={"scope": "wing", "wing": "busy"})
    assert preview.status_code == 200 and preview.json()["dry_run"] is True, "a dry run changes nothing: allowed"
    client.post(f"/api/jobs/{job_id}/cancel", json={})
    renamed = client.post("/api/wings/busy/rename", json={"name": "calm"})
    assert renamed.status_code == 200 and renamed.json() == {"wing": "calm", "room": None, "warnings": []}
    assert client.post("/api/wings/calm/rename", json={"name": "calm"}).status_code == 409
    refused = client.request("DELETE", "/api/wings/calm", json={})
    assert refused.status_code == 409 and "force" in refused.json()["help"]
    deleted = client.request("DELETE", "/api/wings/calm", params={"force": "true"}, json={})
    assert deleted.status_code == 200 and deleted.json()["counts"]["wings"] == 1
    assert client.get("/api/wings").json()["wings"] == []


def test_a_search_forget_takes_every_time_form_and_every_version_without_one(client: TestClient) -> None:
    saved = client.post("/api/notes", json={"content": "the moat key is under the mat"}).json()["drawer"]
    edited = client.post(f"/api/drawers/{saved['id']}/supersede", json={"content": "the moat key is in the tower"})
    assert edited.status_code == 201, edited.text

    def reached(**time: object) -> int:
        body = {"scope": "search", "search": {"query": "moat key", **time}}
        answer = client.post("/api/forget", json=body)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["counts"]["versions"])

    assert reached() == 2, "without a time, the text's whole history"
    assert reached(include_historical=True) == 2
    assert reached(as_of="2999-01-01") == 1, "what holds then: the edit"
    assert reached(known_at="2001-01-01") == 0, "the palace knew nothing then"
    assert reached(known_from="2001-01-01", known_until="2999-01-01") == 2
