"""Clients written for the original MemCastle (Rust): each call in its documented shape, answered as the native
call that names the same service operation answers — the same hits, drawers, jobs — and every row of
docs/http-api.md's compatibility table exercised here."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from addresses import LOCAL
from fastapi.testclient import TestClient
from live_daemon import make_home
from served import serve_palace
from waiting import wait_until

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.runtime.tokens import TokenStore

DOC = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"
SECTION = "## Compatibility with MemCastle (Rust)"
# Every answered row of the table, by its first cell, and the test that makes its call here.
EXERCISED = {
    "POST /api/search": "test_a_search_in_the_original_body_finds_what_the_native_one_finds",
    "POST /api/recall": "test_a_search_in_the_original_body_finds_what_the_native_one_finds",
    "GET /api/wake-up?agent_identity=…": "test_agent_identity_names_the_agent_wherever_agent_does",
    "GET /api/diary?agent_identity=…": "test_agent_identity_names_the_agent_wherever_agent_does",
    "POST /api/diary": "test_agent_identity_names_the_agent_wherever_agent_does",
    "memcastle wake-up, diary read, diary write, checkpoint --agent-identity NAME": (
        "tests/cli/test_cli.py: test_agent_identity_is_another_name_of_agent"
    ),
    "PUT /api/drawers/{id}/embedding": "test_the_originals_field_names_are_the_same_fields",
    "POST /api/drawers/{id}/mentions": "test_the_originals_field_names_are_the_same_fields",
    "GET /api/entities/{id}/mentions": "test_an_entitys_mentions_and_candidates_on_their_own_paths",
    "GET /api/entities/{id}/candidates": "test_an_entitys_mentions_and_candidates_on_their_own_paths",
    "POST /api/jobs": "test_a_job_submitted_by_type_is_the_job_its_own_route_queues",
    "POST /api/jobs/{id}/force-cancel": "test_a_job_submitted_by_type_is_the_job_its_own_route_queues",
    "?shape=flat": "test_a_flat_hit_is_the_nested_hit_with_its_drawer_beside_it",
    "GET /api/wings/{wing}/rooms/{room}/drawers": "test_a_rooms_drawers_by_path_are_the_drawers_by_id",
    "POST /api/wings/{wing}/rooms/{room}/drawers": "test_a_rooms_drawers_by_path_are_the_drawers_by_id",
    "GET /api/wings/{wing}/rooms/{room}/drawers/{drawer}": "test_a_rooms_drawers_by_path_are_the_drawers_by_id",
    "DELETE /api/wings/{wing}/rooms/{room}/drawers/{drawer}": "test_a_rooms_drawers_by_path_are_the_drawers_by_id",
    "POST /api/auth/token": "test_the_one_token_is_the_token_named_default",
    "DELETE /api/auth/token": "test_the_one_token_is_the_token_named_default",
    "GET /api/triggers": "test_triggers_miners_and_the_schema_by_the_originals_names",
    "GET /api/triggers/{name}": "test_triggers_miners_and_the_schema_by_the_originals_names",
    "memcastle trigger list": "test_triggers_miners_and_the_schema_by_the_originals_names",
    "PUT /api/miners/{name}": "test_triggers_miners_and_the_schema_by_the_originals_names",
    "memcastle miner set": "test_triggers_miners_and_the_schema_by_the_originals_names",
    "memcastle migrate --status": "test_triggers_miners_and_the_schema_by_the_originals_names",
    "POST /api/miners/reload": "test_triggers_miners_and_the_schema_by_the_originals_names",
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    roots = tmp_path / "roots"
    (roots / "notes").mkdir(parents=True)
    (roots / "notes" / "tide.md").write_text("# Tides\n\nThe harbour master posts the tide table at dawn.\n")
    settings = load_settings(
        flags={"palace": str(tmp_path / "palace"), "embeddings.provider": "none", "mining.roots": [str(roots)]},
        env={},
        config_file=None,
    )
    palace = build(settings)
    palace.start()
    try:
        with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as http:
            for text in ("the harbour master keeps the tide table", "the lighthouse needs oil every week"):
                assert http.post("/api/notes", json={"content": text, "wing": "port", "tags": ["log"]}).status_code
            yield http
    finally:
        palace.stop()


def ids(answer: dict[str, Any]) -> list[str]:
    return [hit["drawer"]["id"] if "drawer" in hit else hit["id"] for hit in answer["hits"]]


def test_every_answered_row_of_the_table_is_exercised_here() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text
    table = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    answered = [m.group(1) for m in re.finditer(r"^\| `([^`]+)`[^|]*\| answered", table, re.MULTILINE)]
    assert sorted(answered) == sorted(EXERCISED), "a row of the table and a test here name the same calls"


def test_a_search_in_the_original_body_finds_what_the_native_one_finds(client: TestClient) -> None:
    for route in ("/api/search", "/api/recall"):
        native = client.post(route, json={"query": "tide", "wing": "port", "tags": ["log"], "include_historical": True})
        original = client.post(
            route, json={"text": "tide", "filter": {"wing": "port", "tags": ["log"], "temporal": "all"}}
        )
        assert native.status_code == original.status_code == 200, original.text
        assert ids(original.json()) == ids(native.json()) and ids(native.json())
    between = {"between": {"from": "2000-01-01", "until": "2001-01-01"}}
    assert client.post("/api/search", json={"text": "tide", "filter": {"temporal": between}}).json()["hits"] == []
    now = client.post("/api/search", json={"text": "tide", "filter": {"temporal": {"as_of": "2999-01-01"}}})
    assert ids(now.json()) == ids(client.post("/api/search", json={"query": "tide", "as_of": "2999-01-01"}).json())
    bad = client.post("/api/search", json={"text": "tide", "filter": {"temporal": "someday"}})
    assert bad.status_code == 400 and bad.json()["field"] == "filter.temporal"
    twice = client.post("/api/search", json={"text": "tide", "query": "tide"})
    assert twice.status_code == 400 and twice.json()["field"] == "text"


def test_agent_identity_names_the_agent_wherever_agent_does(client: TestClient) -> None:
    written = client.post("/api/diary", json={"agent_identity": "pi", "content": "closed the tide ticket"})
    assert written.status_code == 201 and written.json()["drawer"]["source"]["agent"] == "pi"
    native = client.get("/api/diary", params={"agent": "pi"}).json()
    assert client.get("/api/diary", params={"agent_identity": "pi"}).json() == native and native["entries"]
    woke = client.get("/api/wake-up", params={"agent_identity": "pi"}).json()
    assert woke == client.get("/api/wake-up", params={"agent": "pi"}).json()
    clash = client.get("/api/diary", params={"agent": "pi", "agent_identity": "codex"})
    assert clash.status_code == 400 and clash.json()["field"] == "agent_identity"
    assert client.get("/api/diary").json()["field"] == "agent"


def test_the_originals_field_names_are_the_same_fields(client: TestClient) -> None:
    drawer = client.post("/api/notes", json={"content": "Ana Lopez maintains the tide gauge"}).json()["drawer"]["id"]
    native = client.put(f"/api/drawers/{drawer}/embedding", json={"vector": [0.1, 0.2]})
    original = client.put(f"/api/drawers/{drawer}/embedding", json={"embedding": [0.1, 0.2]})
    assert (original.status_code, original.json()["code"]) == (native.status_code, native.json()["code"])
    linked = client.post(f"/api/drawers/{drawer}/mentions", json={"name": "Ana Lopez", "kind": "person"})
    assert linked.status_code == 201 and linked.json()["name"] == "Ana Lopez"
    again = client.post(f"/api/drawers/{drawer}/mentions", json={"entity": "Ana Lopez", "kind": "person"})
    assert again.json()["id"] == linked.json()["id"]


def test_an_entitys_mentions_and_candidates_on_their_own_paths(client: TestClient) -> None:
    drawer = client.post("/api/notes", json={"content": "Dorothy fixed the crane"}).json()["drawer"]["id"]
    entity = client.post(f"/api/drawers/{drawer}/mentions", json={"name": "Dorothy", "kind": "person"}).json()
    page = client.get(f"/api/entities/{entity['id']}").json()
    mentions = client.get(f"/api/entities/{entity['id']}/mentions")
    candidates = client.get(f"/api/entities/{entity['id']}/candidates")
    assert mentions.json() == {"mentions": page["mentions"]} and page["mentions"][0]["drawer"] == drawer
    assert candidates.json() == {"candidates": page["hints"]}
    assert client.get("/api/entities/no-such-entity/mentions").status_code == 404


def test_a_job_submitted_by_type_is_the_job_its_own_route_queues(client: TestClient, tmp_path: Path) -> None:
    folder = str(tmp_path / "roots" / "notes")
    mined = client.post("/api/jobs", json={"type": "mine", "path": folder, "wing": "docs"})
    assert mined.status_code == 202, mined.text
    job = mined.json()["job"]
    assert (job["kind"], job["params"]["connector"], job["params"]["locator"]) == ("mine", "directory", folder)
    wait_until(lambda: client.get(f"/api/jobs/{job['id']}").json()["status"] == "completed", what="the mine")
    native = client.post("/api/search", json={"query": "harbour", "wing": "docs"}).json()
    assert ["posts the tide table" in h["drawer"]["content"] for h in native["hits"]] == [True]
    audit = client.post("/api/jobs", json={"type": "repair"})  # a dry run by default: the audit
    assert (
        audit.status_code == 202
        and audit.json()["job"]["kind"] == client.post("/api/audit", json={}).json()["job"]["kind"]
    )
    assert client.post("/api/jobs", json={"type": "embed"}).json()["field"] == "type", "embeddings are off here"
    refused = client.post("/api/jobs", json={"type": "audit", "wing": "docs"})
    assert refused.status_code == 400 and refused.json()["field"] == "wing"
    assert client.post("/api/jobs", json={"type": "mine"}).json()["field"] == "path"
    queued = client.post("/api/jobs", json={"type": "repair", "dry_run": False}).json()["job"]
    cancelled = client.post(f"/api/jobs/{queued['id']}/force-cancel", json={})
    assert cancelled.status_code in (200, 409), cancelled.text  # 409: it had already ended
    if cancelled.status_code == 200:  # cancelled at once, or asked to stop at its next unit of work
        assert cancelled.json()["job"]["id"] == queued["id"]


def test_a_flat_hit_is_the_nested_hit_with_its_drawer_beside_it(client: TestClient) -> None:
    nested = client.post("/api/search", json={"query": "tide"}).json()
    flat = client.post("/api/search?shape=flat", json={"query": "tide"}).json()
    assert len(flat["hits"]) == len(nested["hits"]) == 1
    [hit], [inner] = flat["hits"], nested["hits"]
    assert hit["content"] == inner["drawer"]["content"] and hit["score"] == inner["score"]
    assert {k: v for k, v in hit.items() if k not in inner["drawer"]} == {
        k: v for k, v in inner.items() if k != "drawer"
    }
    assert client.get("/api/search", params={"q": "tide", "shape": "flat"}).json()["hits"][0]["content"]
    assert client.get("/api/search", params={"q": "tide", "shape": "round"}).json()["field"] == "shape"


def test_a_rooms_drawers_by_path_are_the_drawers_by_id(client: TestClient) -> None:
    room = "/api/wings/port/rooms/logbook/drawers"
    written = client.post(room, json={"content": "berth 4 is closed for repairs", "name": "berths/4"})
    assert written.status_code == 201 and written.json()["created"], written.text
    drawer = written.json()["drawer"]
    assert (drawer["wing"], drawer["room"], drawer["name"]) == ("port", "logbook", "berths/4")
    again = client.post(room, json={"content": "berth 4 is closed for repairs"})
    assert again.status_code == 201, "a named drawer is no copy of an unnamed one"
    copy = client.post(room, json={"content": "berth 4 is closed for repairs"})
    assert copy.status_code == 200 and copy.json()["created"] is False
    listed = client.get(room).json()
    assert listed == client.get("/api/drawers", params={"wing": "port", "room": "logbook"}).json()
    by_name = client.get(f"{room}/berths/4")
    assert by_name.status_code == 200 and by_name.json() == client.get(f"/api/drawers/{drawer['id']}").json()
    assert client.get(f"{room}/{drawer['id']}").json()["id"] == drawer["id"]
    assert client.get("/api/wings/port/rooms/notes/drawers/berths/4").status_code == 404, "not in that room"
    gone = client.delete(f"{room}/berths/4")
    assert gone.status_code == 200 and gone.json()["counts"]["drawers"] == 1
    assert client.get(f"/api/drawers/{drawer['id']}").status_code == 404


def test_the_one_token_is_the_token_named_default(tmp_path: Path) -> None:
    palace_dir = tmp_path / "palace"
    owner = TokenStore(palace_dir).create("owner")
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "none", "auth.enabled": True}, env={}, config_file=None
    )
    palace = build(settings)
    palace.start()
    try:
        with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as http:
            signed = {"Authorization": f"Bearer {owner}"}
            first = http.post("/api/auth/token", headers=signed, json={})  # JSON, as every state change here
            assert first.status_code == 201 and first.json()["name"] == "default", first.text
            second = http.post("/api/auth/token", headers=signed, json={}).json()["token"]
            replaced = {"Authorization": f"Bearer {first.json()['token']}"}
            assert http.get("/api/status", headers=replaced).status_code == 401
            assert http.get("/api/status", headers={"Authorization": f"Bearer {second}"}).status_code == 200
            names = [t["name"] for t in http.get("/api/auth/tokens", headers=signed).json()["tokens"]]
            assert sorted(names) == ["default", "owner"]
            assert http.request("DELETE", "/api/auth/token", headers=signed, json={}).json() == {"revoked": "default"}
            assert http.get("/api/status", headers={"Authorization": f"Bearer {second}"}).status_code == 401
    finally:
        palace.stop()


def test_triggers_miners_and_the_schema_by_the_originals_names(tmp_path: Path) -> None:
    folder = tmp_path / "roots" / "notes"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nanchors aweigh\n")
    served = serve_palace(
        tmp_path / "palace",
        make_home(tmp_path / "xdg"),
        extra_env={"MEMCASTLE_MINING_ROOTS": f'["{tmp_path / "roots"}"]'},
    )
    try:
        set_by_cli = served.cli("miner", "set", "harbour", "notes", str(folder), "--every", "5m")
        assert set_by_cli.returncode == 0, set_by_cli.stderr
        with served.http() as http:
            body = {"name": "quay", "connector": "notes", "locator": str(folder), "watch": True}
            put = http.put("/api/miners/quay", json=body)
            assert put.status_code == 200 and put.json()["miner"]["watch"] is True, put.text
            assert http.put("/api/miners/other", json=body).json()["field"] == "name"
            replaced = http.put("/api/miners/quay", json={**body, "watch": False, "every": "1h"}).json()
            assert replaced["miner"]["watch"] is False and replaced["miner"]["every"] == 3600
            listed = http.get("/api/triggers").json()["triggers"]
            assert {t["name"]: t["triggers"] for t in listed} == {"harbour": ["schedule"], "quay": ["schedule"]}
            one = http.get("/api/triggers/harbour").json()
            assert one["miner"] == http.get("/api/miners/harbour").json()["miner"]
            config = served.built.settings.config_file
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(f'[[miners]]\nname = "tides"\nconnector = "notes"\nlocator = "{folder}"\nevery = "10m"\n')
            reloaded = http.post("/api/miners/reload", json={})
            assert reloaded.status_code == 200, reloaded.text
            assert "tides" in [m["name"] for m in reloaded.json()["miners"]]
            config.write_text('[[miners]]\nname = "broken"\nconnector = "notes"\nlocator = 3\n')
            refused = http.post("/api/miners/reload", json={})
            assert refused.status_code == 400 and refused.json()["field"] == "miners[0].locator", refused.text
            assert "tides" in [m["name"] for m in http.get("/api/miners").json()["miners"]], "kept as they were"
            # The path names the reload itself, not a miner called "reload": its Allow says so.
            assert http.request("OPTIONS", "/api/miners/reload", json={}).headers["allow"] == "POST"
            assert http.request("OPTIONS", "/api/miners/quay", json={}).headers["allow"] == "GET, PUT, DELETE"
            config.write_text("")
        assert served.cli("miner", "reload").returncode == 0
        by_cli = json.loads(served.cli("trigger", "list").stdout)
        assert [t["name"] for t in by_cli["triggers"]] == [t["name"] for t in listed]
        assert json.loads(served.cli("trigger", "get", "quay").stdout)["triggers"] == ["schedule"]
        status = served.cli("migrate", "--status")
        assert status.returncode == 0 and json.loads(status.stdout)["pending_migrations"] == []
        assert served.cli("migrate", "--check").returncode == 0
    finally:
        served.kill()
