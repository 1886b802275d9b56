"""The read audit: every answer that returns memory is recorded with who, when, the operation, the query (redacted)
and the ids — never the text; listed by token, agent, drawer and time; kept for its retention; erased with a
forgotten drawer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from addresses import LOCAL
from clocks import ManualClock
from fastapi.testclient import TestClient
from live_daemon import make_home
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation
from served import Served, serve_palace
from waiting import CEILING

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.runtime.tokens import TokenStore

SECRET_QUERY = "deploy key ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TEXT = "The lighthouse keeper logs every storm in the blue ledger."


def _palace(tmp_path: Path, clock: ManualClock | None = None, **flags: Any) -> Palace:
    settings = load_settings(flags={"palace": str(tmp_path / "palace"), "embeddings.provider": "none", **flags}, env={})
    palace = build(settings, now=clock) if clock is not None else build(settings)
    palace.start()
    return palace


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[TestClient, Palace, dict[str, str]]]:
    tokens = TokenStore(tmp_path / "palace")
    made = {"laptop": tokens.create("laptop"), "scoped": tokens.create("scoped", read=["other"])}
    palace = _palace(tmp_path, **{"auth.enabled": True})
    with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client, palace, {name: f"Bearer {token}" for name, token in made.items()}
    palace.stop()


def reads(client: TestClient, auth: str, **params: Any) -> list[dict[str, Any]]:
    answer = client.get("/api/audit/reads", params=params, headers={"Authorization": auth})
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["reads"]
    return found


def test_every_read_is_recorded_with_who_and_the_ids_never_the_text(
    secured: tuple[TestClient, Palace, dict[str, str]],
) -> None:
    client, _, auth = secured
    headers = {"Authorization": auth["laptop"]}
    drawer = client.post("/api/notes", json={"content": TEXT, "wing": "log"}, headers=headers).json()["drawer"]
    fact = client.post(
        "/api/facts",
        json={"subject": "Keeper", "predicate": "located_in", "object": "Lighthouse", "evidence_drawer": drawer["id"]},
        headers=headers,
    ).json()
    assert reads(client, auth["laptop"]) == [], "writes are not reads"
    client.post("/api/search", json={"query": "storm ledger", "ranking": "lexical"}, headers=headers)
    client.post("/api/search", json={"query": SECRET_QUERY, "ranking": "lexical"}, headers=headers)
    client.post("/api/recall", json={"query": "blue ledger"}, headers=headers)
    client.get(f"/api/drawers/{drawer['id']}", headers={**headers, "X-MemCastle-Client": "cli"})
    client.get(f"/api/drawers/{drawer['id']}/history", headers=headers)
    client.get(f"/api/facts/{fact['id']}", headers=headers)
    client.get("/api/facts", params={"subject": "Keeper"}, headers=headers)
    client.get("/api/wake-up", params={"agent": "nobody"}, headers=headers)
    client.get("/api/drawers/no-such-drawer", headers=headers)  # an error returns no memory: not recorded

    found = reads(client, auth["laptop"])
    assert [r["operation"] for r in found] == [
        "wake_up", "facts", "fact", "history", "drawer", "recall", "search", "search",
    ]  # fmt: skip
    by = {r["operation"] + str(i): r for i, r in enumerate(reversed(found))}
    assert by["search0"]["query"] == "storm ledger" and by["search0"]["drawer_ids"] == [drawer["id"]]
    assert "ghp_" not in by["search1"]["query"] and "[redacted:github-token]" in by["search1"]["query"]
    assert by["drawer3"]["interface"] == "cli" and by["search0"]["interface"] == "http"
    assert all(r["token"] == "laptop" for r in found)
    assert by["fact5"]["fact_ids"] == [fact["id"]] and by["fact5"]["drawer_ids"] == [drawer["id"]]
    listing = json.dumps(found)
    assert "lighthouse keeper" not in listing.lower() and "storm in the blue" not in listing, "never the text"
    # Who saw this drawer; what this token saw; since an instant.
    saw = reads(client, auth["laptop"], drawer=drawer["id"])
    assert {r["operation"] for r in saw} == {"search", "recall", "drawer", "history", "fact", "facts"}
    assert reads(client, auth["laptop"], token="nobody") == []
    assert len(reads(client, auth["laptop"], since=found[2]["at"])) == 3
    # The audit covers the whole palace: a token limited to some wings may not read it.
    refused = client.get("/api/audit/reads", headers={"Authorization": auth["scoped"]})
    assert refused.status_code == 403


def test_forgetting_a_drawer_erases_its_id_from_the_audit(
    secured: tuple[TestClient, Palace, dict[str, str]],
) -> None:
    client, _, auth = secured
    headers = {"Authorization": auth["laptop"], "Content-Type": "application/json"}
    gone = client.post("/api/notes", json={"content": TEXT, "wing": "log"}, headers=headers).json()["drawer"]
    kept = client.post("/api/notes", json={"content": "The ledger is blue.", "wing": "log"}, headers=headers)
    client.post("/api/search", json={"query": "ledger", "ranking": "lexical"}, headers=headers)
    before = reads(client, auth["laptop"], drawer=gone["id"])
    assert len(before) == 1 and set(before[0]["drawer_ids"]) == {gone["id"], kept.json()["drawer"]["id"]}
    client.request("DELETE", f"/api/drawers/{gone['id']}", params={"dry_run": "false"}, headers=headers, content="{}")
    assert reads(client, auth["laptop"], drawer=gone["id"]) == []
    (after,) = reads(client, auth["laptop"])
    assert after["drawer_ids"] == [kept.json()["drawer"]["id"]], "the read stays, without the forgotten id"


def test_records_are_kept_for_the_retention_and_off_means_none(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    palace = _palace(tmp_path, clock, **{"audit.retention": "2d", "audit.max_records": 1000})
    try:
        client = TestClient(http_app(palace), base_url=LOCAL)
        client.post("/api/notes", json={"content": TEXT})
        client.post("/api/search", json={"query": "ledger", "ranking": "lexical"})
        clock.advance(days=3)
        client.post("/api/search", json={"query": "storm", "ranking": "lexical"})
        palace.services.audit.flush()
        assert palace.services.audit.prune() == 1
        assert [r["query"] for r in client.get("/api/audit/reads").json()["reads"]] == ["storm"]
        for _ in range(1005):
            palace.services.audit.record("search", query="x")  # an internal read is not recorded
        palace.services.audit.flush()
        assert len(client.get("/api/audit/reads", params={"limit": 200}).json()["reads"]) == 1
    finally:
        palace.stop()
    quiet = _palace(tmp_path / "quiet", **{"audit.enabled": False})
    try:
        client = TestClient(http_app(quiet), base_url=LOCAL)
        client.post("/api/notes", json={"content": TEXT})
        client.post("/api/search", json={"query": "ledger", "ranking": "lexical"})
        assert client.get("/api/audit/reads").json()["reads"] == []
    finally:
        quiet.stop()


def test_the_oldest_records_go_past_the_most_kept(tmp_path: Path) -> None:
    palace = _palace(tmp_path, **{"audit.max_records": 1000})
    try:
        client = TestClient(http_app(palace), base_url=LOCAL)
        client.post("/api/notes", json={"content": TEXT})
        assert client.post("/api/search", json={"query": "ledger 0", "ranking": "lexical"}).status_code == 200
        from memcastle.services.reader import Reader, reading_as

        with reading_as(Reader(interface="http")):  # the other 1,009 recorded as a search through REST records them
            for i in range(1, 1010):
                palace.services.audit.record("search", query=f"ledger {i}")
        palace.services.audit.flush()
        palace.services.audit.prune()
        newest = client.get("/api/audit/reads", params={"limit": 1}).json()["reads"][0]
        assert newest["query"] == "ledger 1009"
        assert palace.store.audit.reads(_query(limit=200, since=None))[-1].query != "ledger 0"
        assert len(palace.store.audit.reads(_query(limit=5000))) == 1000
    finally:
        palace.stop()


def _query(**fields: Any) -> Any:
    from memcastle.model.audit import ReadQuery

    return ReadQuery(**fields)


@pytest.fixture
def audited(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    palace = tmp_path / "palace"
    token = TokenStore(palace).create("agent-box")
    daemon = serve_palace(palace, make_home(tmp_path / "xdg2"), extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    yield daemon, token
    daemon.kill()


def test_an_mcp_agent_is_recorded_by_its_name_and_session_and_listed_by_the_cli_and_the_page(
    audited: tuple[Served, str], cli_runner: Any
) -> None:
    daemon, token = audited
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=daemon.address, headers=headers, trust_env=False) as http:
        drawer = http.post("/api/notes", json={"content": TEXT, "wing": "log"}).json()["drawer"]

    async def scenario() -> None:
        async with httpx2.AsyncClient(headers=headers, trust_env=False, timeout=CEILING) as http:
            transport = streamable_http_client(daemon.address + "/mcp", http_client=http)
            info = Implementation(name="harbour-agent", version="1")
            async with Client(transport, client_info=info, mode="legacy") as client:
                await client.call_tool("memcastle_search", {"query": "storm ledger"})
                await client.call_tool("memcastle_get_drawer", {"drawer_id": drawer["id"]})

    anyio.run(scenario)
    listed = cli_runner(
        ["--palace", str(daemon.palace), "--json", "audit", "reads", "--agent", "harbour-agent"],
        env=daemon.env | {"MEMCASTLE_AUTH_TOKEN": token},
    )
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)["reads"]
    assert [r["operation"] for r in found] == ["drawer", "search"]
    assert all(r["interface"] == "mcp" and r["token"] == "agent-box" and r["session"] for r in found)
    assert found[1]["drawer_ids"] == [drawer["id"]] and found[1]["query"] == "storm ledger"
    with httpx.Client(base_url=daemon.address, headers=headers, trust_env=False) as http:
        page = http.get("/audit", params={"drawer": drawer["id"]}).text
        assert "harbour-agent" in page and drawer["id"][:8] in page and TEXT not in page
        assert f"/audit?drawer={drawer['id']}" in http.get(f"/drawer/{drawer['id']}").text


def test_the_daemons_warm_up_search_is_no_read(secured: tuple[TestClient, Palace, dict[str, str]]) -> None:
    """The search a daemon runs before its first client's (`SearchService.warm`, ADR 0061) returns memory to no one:
    nothing is recorded, even when it finds a drawer."""
    client, palace, auth = secured
    client.post(
        "/api/notes", json={"content": "memory " + TEXT, "wing": "log"}, headers={"Authorization": auth["laptop"]}
    )
    palace.services.search.warm()
    palace.services.search.warm()
    assert reads(client, auth["laptop"]) == []
    client.post(
        "/api/search", json={"query": "memory", "ranking": "lexical"}, headers={"Authorization": auth["laptop"]}
    )
    assert [r["operation"] for r in reads(client, auth["laptop"])] == ["search"], "a client's search is recorded"
