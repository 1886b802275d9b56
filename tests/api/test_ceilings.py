"""A client's mode is the narrowest of what it asks for, its token's mode and the daemon's configured mode — on REST,
MCP and the web page alike; and the small holes an attack found at the edge stay closed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from addresses import LOCAL
from clocks import DistinctClock
from fastapi.testclient import TestClient

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.runtime.tokens import TokenStore

NOTE = {"content": "a note the ceiling should refuse", "wing": "ceiling"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def served(palace: Path, **flags: Any) -> Iterator[TestClient]:
    settings = load_settings(flags={"palace": str(palace), "embeddings.provider": "none", **flags}, env={})
    built = build(settings, now=DistinctClock())
    built.start()
    try:
        with TestClient(http_app(built), base_url=LOCAL, raise_server_exceptions=False) as client:
            yield client
    finally:
        built.stop()


@pytest.fixture
def read_only_daemon(tmp_path: Path) -> Iterator[TestClient]:
    """A daemon whose configuration says `mode = "read_only"`: the ceiling of every client."""
    yield from served(tmp_path / "palace", mode="read_only")


def mcp_call(client: TestClient, tool: str, arguments: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """One tools/call on a fresh MCP session; the result's structured content."""
    opened = client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], **MCP_HEADERS, **headers}
    client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    answer = client.post("/mcp", json=call, headers=session)
    # The answer comes as JSON, or as a server-sent event whose data is that JSON.
    data = [line.removeprefix("data:") for line in answer.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[0] if data else answer.text)["result"])


@pytest.mark.parametrize("asked", [None, "full", "read_only"])
def test_the_configured_mode_is_the_ceiling_of_a_client_that_asks_for_more_or_nothing(
    read_only_daemon: TestClient, asked: str | None
) -> None:
    """A daemon configured read_only used to take writes from a client that sent no mode header."""
    headers = {"X-MemCastle-Mode": asked} if asked else {}
    refused = read_only_daemon.post("/api/notes", json=NOTE, headers=headers)
    assert refused.status_code == 403 and "read_only" in refused.json()["error"]
    assert read_only_daemon.post("/api/search", json={"query": "note"}, headers=headers).status_code == 200
    disabled = read_only_daemon.post("/api/search", json={"query": "note"}, headers={"X-MemCastle-Mode": "disabled"})
    assert disabled.status_code == 403, "a client may still narrow below the ceiling"


def test_the_configured_mode_holds_on_mcp_and_the_web_page(read_only_daemon: TestClient) -> None:
    result = mcp_call(read_only_daemon, "memcastle_note", {"content": "via mcp"}, {"X-MemCastle-Mode": "full"})
    assert result["isError"] is True and "read_only" in result["content"][0]["text"]
    widened = mcp_call(read_only_daemon, "memcastle_set_mode", {"mode": "full"}, {})
    assert widened["isError"] is True
    page = read_only_daemon.get("/jobs")
    assert page.status_code == 200
    assert read_only_daemon.post("/api/verify", json={}).status_code == 403


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """Auth on, with a full token and a read_only one."""
    palace = tmp_path / "palace"
    tokens = TokenStore(palace)
    full = tokens.create("person")
    agent = tokens.create("agent", mode="read_only")
    for client in served(palace, **{"auth.enabled": True}):
        yield client, {"full": full, "read_only": agent}


def test_a_token_carries_a_mode_that_no_header_widens(secured: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = secured
    agent = {"Authorization": f"Bearer {tokens['read_only']}", "X-MemCastle-Mode": "full"}
    person = {"Authorization": f"Bearer {tokens['full']}"}
    refused = client.post("/api/notes", json=NOTE, headers=agent)
    assert refused.status_code == 403 and "read_only" in refused.json()["error"]
    assert client.post("/api/search", json={"query": "x"}, headers=agent).status_code == 200
    assert client.post("/api/notes", json=NOTE, headers=person).status_code == 201
    result = mcp_call(client, "memcastle_note", {"content": "via mcp"}, agent)
    assert result["isError"] is True
    listed = client.get("/api/auth/tokens", headers=person).json()["tokens"]
    assert {t["name"]: t["mode"] for t in listed} == {"person": "full", "agent": "read_only"}
    made = client.post("/api/auth/tokens", json={"name": "bot", "mode": "disabled"}, headers=person)
    assert made.status_code == 201 and made.json()["mode"] == "disabled"
    bot = {"Authorization": f"Bearer {made.json()['token']}"}
    assert client.post("/api/search", json={"query": "x"}, headers=bot).status_code == 403
    assert client.post("/api/auth/tokens", json={"name": "x", "mode": "loud"}, headers=person).json()["field"] == "mode"


def test_the_cli_creates_and_lists_a_token_with_its_mode(daemon: Any, tmp_path: Path) -> None:
    running = daemon(tmp_path / "cli-palace")
    made = running.cli("--json", "auth", "token", "create", "reader", "--mode", "read_only")
    assert made.returncode == 0, made.stderr
    listed = running.cli("--json", "auth", "token", "list")
    assert '"mode": "read_only"' in listed.stdout
    wrong = running.cli("auth", "token", "create", "x", "--mode", "loud")
    assert wrong.returncode == 2 and "loud" in wrong.stderr


# --- the edge's small holes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/notes", {"content": "x", "tags": ["a\x00b"]}, "tags"),
        ("/api/notes", {"content": "x", "agent": "a\x00b"}, "agent"),
        ("/api/diary", {"content": "x", "agent": "a\x00b"}, "agent"),
        ("/api/checkpoint", {"items": [{"content": "x"}], "agent": "a\x00"}, "agent"),
        ("/api/checkpoint", {"items": [{"content": "x", "tags": ["a\x00"]}]}, "tags"),
    ],
)
def test_nul_in_tags_and_agent_is_refused_naming_the_field(
    client: TestClient, path: str, body: Any, field: str
) -> None:
    answer = client.post(path, json=body)
    assert answer.status_code == 400 and answer.json()["field"].endswith(field), answer.json()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
        (b'{"content": "caf\xe9"}', "not valid UTF-8 (byte 16)"),
    ],
)
def test_a_body_that_cannot_be_read_is_a_400_naming_the_body(client: TestClient, content: Any, why: str) -> None:
    for path in ("/api/notes", "/api/search"):
        answer = client.post(path, content=content, headers={"Content-Type": "application/json"})
        assert answer.status_code == 400
        body = answer.json()
        assert body["field"] == "body" and why in body["error"] and body["code"] == "invalid_request", body


def test_verify_needs_full_mode(client: TestClient) -> None:
    """Verify queues a job: a read_only client may not, as it may not control jobs."""
    assert client.post("/api/verify", json={}, headers={"X-MemCastle-Mode": "read_only"}).status_code == 403
    assert client.post("/api/verify", json={}).status_code == 202
