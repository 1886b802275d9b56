"""The REST surface through the in-process ASGI client, and once through a real daemon under concurrent writes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from addresses import LOCAL
from fastapi.testclient import TestClient

from memcastle import __version__
from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app

ERROR_KEYS = {"error", "code", "help"}


def save(client: TestClient, content: str, **fields: Any) -> dict[str, Any]:
    answer = client.post("/api/notes", json={"content": content, **fields})
    assert answer.status_code in (200, 201), answer.text
    return answer.json()["drawer"]  # type: ignore[no-any-return]


def assert_error(answer: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert ERROR_KEYS <= set(body), body
    assert isinstance(body["error"], str) and body["error"]
    if code is not None:
        assert body["code"] == code
    return body  # type: ignore[no-any-return]


# --- status ---------------------------------------------------------------------------------------


def test_health_answers_ok(client: TestClient) -> None:
    answer = client.get("/api/health")
    assert answer.status_code == 200 and answer.json() == {"ok": True}


def test_status_reports_version_palace_store_and_counts(client: TestClient, settings: Any) -> None:
    save(client, "one")
    closed = save(client, "two")
    client.post(f"/api/drawers/{closed['id']}/supersede", json={"content": "two, revised"})
    status = client.get("/api/status").json()
    assert status["version"] == __version__
    assert status["palace"] == str(settings.palace)
    assert status["store"]["backend"] == "sqlite"
    assert status["drawers"] == 2 and status["drawers_total"] == 3
    assert set(status["jobs"]) >= {"queued", "running", "paused", "completed", "failed", "cancelled"}


def test_openapi_schema_is_served(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert schema["info"]["title"] == "MemCastle"
    for path in (
        "/api/health",
        "/api/status",
        "/api/notes",
        "/api/search",
        "/api/drawers/{drawer_id}",
        "/api/drawers/{drawer_id}/history",
        "/api/drawers/{drawer_id}/supersede",
        "/api/wings",
        "/api/jobs",
        "/api/shutdown",
    ):
        assert path in schema["paths"], path


# --- notes and drawers ----------------------------------------------------------------------------


def test_note_is_created_then_an_exact_unnamed_copy_returns_the_same_drawer(client: TestClient) -> None:
    first = client.post("/api/notes", json={"content": "Remember the milk", "wing": "home", "tags": ["todo"]})
    assert first.status_code == 201
    assert first.json()["created"] is True
    drawer = first.json()["drawer"]
    assert drawer["wing"] == "home" and drawer["room"] == "notes" and drawer["tags"] == ["todo"]
    assert drawer["source"]["kind"] == "note" and drawer["provenance"]["requested_by"] == "http"

    copy = client.post("/api/notes", json={"content": "Remember the milk", "wing": "home"})
    assert copy.status_code == 200
    assert copy.json() == {"drawer": drawer, "created": False, "replayed": False}

    elsewhere = client.post("/api/notes", json={"content": "Remember the milk", "wing": "work"})
    assert elsewhere.status_code == 201, "dedup is per room"


def test_note_defaults_to_the_default_wing_and_notes_room(client: TestClient) -> None:
    drawer = save(client, "placed by default")
    assert (drawer["wing"], drawer["room"]) == ("default", "notes")


def test_named_note_clashing_with_a_current_name_is_a_409(client: TestClient) -> None:
    first = save(client, "a", name="plan")
    body = assert_error(client.post("/api/notes", json={"content": "b", "name": "plan"}), 409, "conflict")
    assert body["existing_id"] == first["id"]


def test_empty_note_is_refused_naming_content(client: TestClient) -> None:
    body = assert_error(client.post("/api/notes", json={"content": "   "}), 400, "invalid_request")
    assert body["field"] == "content"


def test_get_history_and_supersede_a_drawer(client: TestClient) -> None:
    v1 = save(client, "the plan is A", wing="p")
    assert client.get(f"/api/drawers/{v1['id']}").json() == v1

    answer = client.post(
        f"/api/drawers/{v1['id']}/supersede", json={"content": "the plan is B", "reason": "the board chose B"}
    )
    assert answer.status_code == 201
    v2 = answer.json()
    assert v2["supersedes"] == v1["id"] and v2["wing"] == "p" and v2["valid_to"] is None
    assert v2["provenance"]["reason"] == "the board chose B"
    assert client.get(f"/api/drawers/{v2['id']}").json()["provenance"]["reason"] == "the board chose B"
    assert "reason" not in v1["provenance"]
    closed = client.get(f"/api/drawers/{v1['id']}").json()
    assert closed["superseded_by"] == v2["id"] and closed["valid_to"] == v2["valid_from"]

    versions = client.get(f"/api/drawers/{v2['id']}/history").json()["versions"]
    assert [v["content"] for v in versions] == ["the plan is A", "the plan is B"]

    again = client.post(f"/api/drawers/{v1['id']}/supersede", json={"content": "the plan is C"})
    body = assert_error(again, 409, "conflict")
    assert body["existing_id"] == v2["id"]


def test_a_dry_run_delete_leaves_the_drawer_and_a_real_one_removes_it_and_its_history(client: TestClient) -> None:
    drawer = save(client, "a note to forget", wing="p")
    preview = client.delete(f"/api/drawers/{drawer['id']}", params={"dry_run": "true"})
    assert preview.status_code == 200 and preview.json()["dry_run"] is True
    assert client.get(f"/api/drawers/{drawer['id']}").status_code == 200
    assert client.get(f"/api/drawers/{drawer['id']}/history").status_code == 200

    assert client.delete(f"/api/drawers/{drawer['id']}", params={"dry_run": "false"}).status_code == 200
    assert_error(client.get(f"/api/drawers/{drawer['id']}"), 404, "not_found")
    assert_error(client.get(f"/api/drawers/{drawer['id']}/history"), 404, "not_found")


def test_a_blank_supersede_reason_is_refused_naming_reason(client: TestClient) -> None:
    v1 = save(client, "the plan is A", wing="p")
    answer = client.post(f"/api/drawers/{v1['id']}/supersede", json={"content": "the plan is B", "reason": "  "})
    assert assert_error(answer, 400, "invalid_request")["field"] == "reason"


def test_listings_page_with_next_after(client: TestClient) -> None:
    ids = [save(client, f"paged {i}", wing="pages", room="r1")["id"] for i in range(5)]
    save(client, "other room", wing="pages", room="r2")
    seen: list[str] = []
    after = None
    while True:
        params: dict[str, Any] = {"wing": "pages", "room": "r1", "limit": 2}
        if after:
            params["after"] = after
        page = client.get("/api/drawers", params=params).json()
        assert len(page["drawers"]) <= 2
        seen.extend(d["id"] for d in page["drawers"])
        after = page["next_after"]
        if after is None:
            break
    assert seen == ids

    wings = client.get("/api/wings").json()["wings"]
    assert {"name": "pages", "drawers": 6} == {
        k: v for k, v in next(w for w in wings if w["name"] == "pages").items() if k in ("name", "drawers")
    }
    rooms = client.get("/api/wings/pages/rooms").json()["rooms"]
    assert [(r["name"], r["drawers"]) for r in rooms] == [("r1", 5), ("r2", 1)]


def test_search_hits_carry_drawer_score_and_lexical_signal(client: TestClient) -> None:
    save(client, "the lighthouse keeper logs the weather", wing="sea")
    save(client, "lighthouse lighthouse lighthouse", wing="sea")
    save(client, "nothing relevant here", wing="sea")
    result = client.post("/api/search", json={"query": "lighthouse", "wing": "sea"}).json()
    assert result["ranking"] == "lexical" and result["warnings"] == []
    assert len(result["hits"]) == 2
    for hit in result["hits"]:
        assert "lighthouse" in hit["drawer"]["content"]
        assert isinstance(hit["score"], float)
        assert isinstance(hit["signals"]["lexical"], float)
        assert 0.0 <= hit["signals"]["relevance"] <= 1.0
        assert "origin" in hit
    assert result["hits"][0]["score"] >= result["hits"][1]["score"]


# --- refusals name the option ---------------------------------------------------------------------


def test_malformed_json_body_is_a_400_naming_the_body(client: TestClient) -> None:
    answer = client.post("/api/search", content=b'{"query": "x",', headers={"content-type": "application/json"})
    body = assert_error(answer, 400, "invalid_request")
    assert body["field"] == "body"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": "x", "limit": "ten"}, "limit"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 201}, "limit"),
        ({"query": "x", "limit": 2.5}, "limit"),
        ({"query": "x", "tags": "solo"}, "tags"),
        ({"query": "x", "wing": ["a"]}, "wing"),
        ({"query": "x", "include_historical": "maybe"}, "include_historical"),
        ({"query": "x", "colour": "blue"}, "colour"),
        ({"query": "x", "ranking": "magic"}, "ranking"),
        ({"query": "x", "ranking": "semantic"}, "ranking"),
        ({"query": "x", "source_kind": "letter"}, "source_kind"),
        ({"query": "x", "as_of": "yesterday"}, "as_of"),
        ({"query": "x", "from": "2024-01-01"}, "until"),
        ({"query": "x", "from": "2024-02-01", "until": "2024-01-01"}, "until"),
        ({"query": "   "}, "query"),
    ],
)
def test_bad_search_request_is_a_400_naming_the_option(client: TestClient, payload: dict[str, Any], field: str) -> None:
    body = assert_error(client.post("/api/search", json=payload), 400, "invalid_request")
    assert body["field"] == field, body


@pytest.mark.parametrize("payload", [{"query": 5}, {}, {"query": None}])
def test_bad_or_missing_query_field_is_named_query(client: TestClient, payload: dict[str, Any]) -> None:
    body = assert_error(client.post("/api/search", json=payload), 400, "invalid_request")
    assert body["field"] == "query"


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({"as_of": "2024-01-01", "include_historical": True}, ("as_of", "include_historical")),
        ({"as_of": "2024-01-01", "from": "2024-01-01", "until": "2024-02-01"}, ("as_of", "from")),
        ({"from": "2024-01-01", "until": "2024-02-01", "include_historical": True}, ("from", "include_historical")),
    ],
)
def test_two_temporal_forms_are_refused_naming_both(
    client: TestClient, payload: dict[str, Any], named: tuple[str, str]
) -> None:
    body = assert_error(client.post("/api/search", json={"query": "x", **payload}), 400, "invalid_request")
    for option in named:
        assert option in body["field"], body


@pytest.mark.parametrize(
    ("payload", "field"), [({"limit": True}, "limit"), ({"include_historical": "yes"}, "include_historical")]
)
def test_wrong_json_types_are_not_coerced(client: TestClient, payload: dict[str, Any], field: str) -> None:
    body = assert_error(client.post("/api/search", json={"query": "x", **payload}), 400, "invalid_request")
    assert body["field"] == field


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/drawers?limit=0", "limit"),
        ("/api/drawers?limit=abc", "limit"),
        ("/api/drawers?limit=500", "limit"),
        ("/api/jobs?status=sleeping", "status"),
        ("/api/jobs?limit=-1", "limit"),
    ],
)
def test_bad_query_parameters_are_a_400_naming_them(client: TestClient, path: str, field: str) -> None:
    body = assert_error(client.get(path), 400, "invalid_request")
    assert body["field"] == field


def test_unknown_job_action_is_a_400_naming_the_action(client: TestClient) -> None:
    job = client.post("/api/verify", json={}).json()["job"]
    body = assert_error(client.post(f"/api/jobs/{job['id']}/explode", json={}), 400, "invalid_request")
    assert body["field"] == "action"


@pytest.mark.parametrize(
    "request_",
    [
        ("GET", "/api/drawers/00000000-0000-0000-0000-000000000000"),
        ("GET", "/api/drawers/nope/history"),
        ("POST", "/api/drawers/nope/supersede"),
        ("GET", "/api/drawers?after=nope"),
        ("GET", "/api/wings/nowhere/rooms"),
        ("GET", "/api/jobs/nope"),
        ("GET", "/api/jobs?before=nope"),
        ("POST", "/api/jobs/nope/cancel"),
        ("GET", "/api/no-such-route"),
    ],
)
def test_not_found_answers_share_one_shape(client: TestClient, request_: tuple[str, str]) -> None:
    method, path = request_
    body = ({} if path.startswith("/api/jobs/") else {"content": "x"}) if method == "POST" else None
    answer = client.request(method, path, json=body)
    assert_error(answer, 404, "not_found")


def test_job_endpoints_list_show_and_control(client: TestClient) -> None:
    job = client.post("/api/verify", json={"batch": 10}).json()["job"]
    assert job["kind"] == "verify" and job["priority"] == 25
    listed = client.get("/api/jobs", params={"kind": "verify"}).json()["jobs"]
    assert job["id"] in [j["id"] for j in listed]
    shown = client.get(f"/api/jobs/{job['id']}").json()
    assert shown["id"] == job["id"] and shown["params"] == {"batch": 10, "pace_ms": 0}
    older = client.post("/api/verify", json={"batch": 11}).json()["job"]  # joins or follows: either way a page on
    first = client.get("/api/jobs", params={"kind": "verify", "limit": 1}).json()["jobs"]
    rest = client.get("/api/jobs", params={"kind": "verify", "before": first[0]["id"][:8]}).json()["jobs"]
    assert {j["id"] for j in first + rest} == {job["id"], older["id"]} and first[0]["id"] not in {j["id"] for j in rest}


def test_refused_job_transition_is_a_409(client: TestClient) -> None:
    job = client.post("/api/verify", json={}).json()["job"]
    answer = client.post(f"/api/jobs/{job['id']}/retry", json={})
    # Whatever state the job reached (queued, running or completed), retry is only for failed jobs.
    assert_error(answer, 409, "illegal_transition")


# --- body limit -----------------------------------------------------------------------------------


@pytest.fixture
def small_body_client(tmp_path: Any) -> Iterator[TestClient]:
    settings = load_settings(
        flags={"palace": str(tmp_path / "small"), "server.max_body_bytes": 2048, "embeddings.provider": "none"}, env={}
    )
    palace = build(settings)
    palace.start()
    try:
        with TestClient(http_app(palace), base_url=LOCAL) as http:
            yield http
    finally:
        palace.stop()


def test_oversized_body_is_refused_with_413_and_nothing_is_stored(small_body_client: TestClient) -> None:
    answer = small_body_client.post("/api/notes", json={"content": "x" * 4000})
    assert_error(answer, 413, "too_large")
    assert small_body_client.get("/api/status").json()["drawers_total"] == 0
    assert small_body_client.post("/api/notes", json={"content": "x" * 1000}).status_code == 201


def test_oversized_chunked_body_is_refused_with_413(small_body_client: TestClient) -> None:
    payload = ('{"content": "' + "x" * 4000 + '"}').encode()
    chunks = iter([payload[i : i + 512] for i in range(0, len(payload), 512)])
    answer = small_body_client.post("/api/notes", content=chunks, headers={"content-type": "application/json"})
    assert answer.status_code == 413
    assert small_body_client.get("/api/status").json()["drawers_total"] == 0


# --- a real daemon under concurrent writes --------------------------------------------------------


def test_concurrent_writers_lose_nothing(daemon: Callable[..., Any]) -> None:
    served = daemon()
    errors: list[str] = []
    created: dict[str, list[str]] = {"a": [], "b": []}

    def writer(name: str) -> None:
        with served.http(timeout=30) as http:
            for i in range(200):
                answer = http.post("/api/notes", json={"content": f"{name} note {i}", "wing": "race"})
                if answer.status_code != 201:
                    errors.append(f"{answer.status_code} {answer.text}")
                else:
                    created[name].append(answer.json()["drawer"]["id"])

    threads = [threading.Thread(target=writer, args=(name,)) for name in created]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    ids = created["a"] + created["b"]
    assert len(ids) == len(set(ids)) == 400

    stored: list[str] = []
    with served.http() as http:
        after = None
        while True:
            params: dict[str, Any] = {"wing": "race", "limit": 200}
            if after:
                params["after"] = after
            page = http.get("/api/drawers", params=params).json()
            stored.extend(d["id"] for d in page["drawers"])
            after = page["next_after"]
            if after is None:
                break
        assert http.get("/api/status").json()["drawers"] == 400
    assert sorted(stored) == sorted(ids)


@pytest.mark.parametrize("mode", ["read_only", "disabled"])
def test_stopping_the_daemon_and_controlling_jobs_need_full(client: TestClient, mode: str) -> None:
    job = client.post("/api/verify", json={}).json()["job"]
    headers = {"X-MemCastle-Mode": mode}
    for path in (f"/api/jobs/{job['id']}/cancel", f"/api/jobs/{job['id']}/pause", "/api/shutdown"):
        answer = client.post(path, json={}, headers=headers)
        assert answer.status_code == 403, path
        assert "full" not in answer.json()["help"], "no refusal suggests widening"
    assert client.get("/api/health").json() == {"ok": True}


# A lone surrogate, exactly as JSON carries it: json.dumps would escape it as "\ud800".
LONE = '"x\\ud800y"'


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/notes", '{"content": ' + LONE + "}", "content"),
        ("/api/notes", '{"content": "ok", "tags": ["fine", ' + LONE + "]}", "tags[1]"),
        ("/api/diary", '{"agent": "a", "content": ' + LONE + "}", "content"),
        ("/api/checkpoint", '{"items": [{"content": ' + LONE + "}]}", "items[0].content"),
        ("/api/facts", '{"subject": ' + LONE + ', "predicate": "uses", "object": "B"}', "subject"),
        ("/api/search", '{"query": ' + LONE + "}", "query"),
        ("/api/mine", '{"connector": "notes", "locator": ' + LONE + "}", "locator"),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_the_field(client: TestClient, path: str, body: str, field: str) -> None:
    answer = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert assert_error(answer, 400, "invalid_request")["field"] == field


def test_a_nul_in_a_mine_locator_is_a_400_naming_locator(client: TestClient) -> None:
    answer = client.post("/api/mine", json={"connector": "directory", "locator": "/tmp/a\x00b"})
    assert assert_error(answer, 400, "invalid_request")["field"] == "locator"


def test_a_lone_surrogate_below_the_interfaces_is_a_400_not_a_500(palace: Any) -> None:
    from memcastle.errors import InvalidRequest
    from memcastle.model import NewDrawer

    with pytest.raises(InvalidRequest):
        palace.store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="x\ud800y"))
    assert palace.store.drawers.count_drawers() == 0


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/notes", {"content": "x" * 1_000_001}, "content"),
        ("/api/notes", {"content": "ok", "tags": [f"t{i}" for i in range(51)]}, "tags"),
        ("/api/notes", {"content": "ok", "tags": ["x" * 101]}, "tags[0]"),
        ("/api/checkpoint", {"items": [{"content": f"item {i}"} for i in range(101)]}, "items"),
        ("/api/search", {"query": "word " * 401}, "query"),
        ("/api/mine", {"connector": "notes", "locator": "/" + "a" * 4096}, "locator"),
    ],
)
def test_request_caps_are_400s_naming_the_field_and_store_nothing(
    client: TestClient, path: str, body: dict[str, Any], field: str
) -> None:
    before = client.get("/api/status").json()["drawers"]
    assert assert_error(client.post(path, json=body), 400, "invalid_request")["field"] == field
    assert client.get("/api/status").json()["drawers"] == before


def test_search_answers_compact_hits_on_request_and_keeps_to_a_budget(client: TestClient) -> None:
    for n in range(6):
        client.post("/api/notes", json={"content": f"the portcullis winch {n} needs oil " + "x" * 300, "wing": "comp"})
    whole = client.post("/api/search", json={"query": "portcullis winch", "wing": "comp"}).json()
    assert "content_hash" in whole["hits"][0]["drawer"], "the complete shape by default"
    compact = client.post("/api/search", json={"query": "portcullis winch", "wing": "comp", "full": False})
    assert compact.status_code == 200, compact.text
    hit = compact.json()["hits"][0]
    assert {"id", "origin", "snippet", "chars", "signals"} <= set(hit) and "drawer" not in hit
    assert [h["id"] for h in compact.json()["hits"]] == [h["drawer"]["id"] for h in whole["hits"]], (
        "a view, not a search"
    )
    capped = client.post("/api/search", json={"query": "portcullis winch", "wing": "comp", "max_chars": 2000})
    body = capped.json()
    assert len(capped.content) <= 2000 and body["omitted"] >= 1 and "max_chars" in body["note"]
    too_small = client.post("/api/search", json={"query": "x", "max_chars": 0})
    assert too_small.status_code == 400 and too_small.json()["field"] == "max_chars"


def test_the_web_page_names_the_window_from_and_until_as_every_interface_does(client: TestClient) -> None:
    client.post("/api/notes", json={"content": "the keep's well is forty feet deep", "wing": "web-words"})
    page = client.get("/", params={"query": "well deep", "time": "window", "from": "2000-01-01", "until": "2100-01-01",
                                   "source_kind": "note"})  # fmt: skip
    assert page.status_code == 200 and "forty feet" in page.text
    assert 'name="from"' in page.text and 'name="since"' not in page.text and 'name="source_kind"' in page.text
    bad = client.get("/", params={"q": "well", "time": "window", "from": "soon", "until": "2100-01-01"})
    assert "from" in bad.text and "forty feet" not in bad.text


def test_an_unknown_field_is_refused_by_name_with_the_accepted_ones(client: TestClient) -> None:
    answer = client.post("/api/search", json={"query": "x", "since": "2025-01-01"})
    body = answer.json()
    assert answer.status_code == 400 and body["field"] == "since"
    assert "unknown field" in body["error"] and "from" in body["error"] and "max_chars" in body["error"]
    nested = client.post("/api/checkpoint", json={"items": [{"content": "c", "destination": "x"}]})
    assert nested.json()["field"] == "items[0].destination" and "room" in nested.json()["error"]


def test_a_notice_is_a_status_warning_until_acknowledged(client: TestClient, palace_dir: Path) -> None:
    """What the daemon did on its own (a damaged vector cache rebuilt) is not only a log line."""
    from memcastle.store.notices import Notices

    assert client.get("/api/status").json()["warnings"] == []
    Notices(palace_dir).add("vector cache rebuilt", "/p/vectors/m.usearch", "the vector cache was damaged and rebuilt")
    warnings = client.get("/api/status").json()["warnings"]
    assert len(warnings) == 1 and "damaged and rebuilt" in warnings[0] and "--acknowledge" in warnings[0]
    assert client.get("/api/status").json()["warnings"] == warnings, "it stays until acknowledged"
    answer = client.post("/api/status/acknowledge", json={})
    assert answer.status_code == 200 and answer.json() == {"acknowledged": 1}
    assert client.get("/api/status").json()["warnings"] == []
    assert client.post("/api/status/acknowledge", json={}).json() == {"acknowledged": 0}


def test_a_bare_secret_typed_as_a_query_is_not_kept_in_the_read_audit(client: TestClient, palace: Any) -> None:
    """Shaped credentials were redacted in the audit's queries; a bare random key was kept verbatim."""
    bare, hexed, shaped = "Zx9kQ2mP7vL4nR8tW3yB6cD1fG5h", "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "ghp_" + "A1b2" * 9
    for query in (f"deploy key {bare}", f"token {hexed}", f"github {shaped}", "staging deploy 3b42fba"):
        assert client.post("/api/search", json={"query": query}).status_code == 200
    palace.services.audit.flush()
    kept = [r["query"] for r in client.get("/api/audit/reads", params={"limit": 50}).json()["reads"]]
    assert bare not in str(kept) and hexed not in str(kept) and shaped not in str(kept)
    assert {"deploy key [redacted:token]", "token [redacted:token]", "staging deploy 3b42fba"} <= set(kept), kept


def test_a_missing_thing_says_how_to_find_what_there_is(client: TestClient) -> None:
    """`no drawer zzzzzzzz` was the one error without a hint."""
    answer = client.get("/api/drawers/zzzzzzzz")
    assert answer.status_code == 404 and "first 8 characters" in answer.json()["help"]
