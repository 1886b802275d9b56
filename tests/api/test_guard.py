"""Browser-origin defence on every route, generated from the route table: a route added later is covered too."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Route

from memcastle.api.guard import HostPolicy
from memcastle.api.routes import router
from memcastle.app import Palace
from memcastle.daemon import http_app

REBOUND = "evil.example.com"
FOREIGN = "https://evil.example.com"


def routes(palace: Palace) -> list[tuple[str, str]]:
    """Every (method, concrete path) the daemon serves: its FastAPI routes and the raw MCP endpoint."""
    found = []
    # The REST router's own table, and every route the app adds beside it (/mcp, the OpenAPI schema and its pages).
    table = [*router.routes, *(r for r in http_app(palace).router.routes if isinstance(r, Route))]
    for route in table:
        assert isinstance(route, APIRoute | Route)
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        found.extend((method, path) for method in sorted(route.methods or {"GET", "POST", "DELETE"}))
    assert len(found) > 40, "the route table was read"
    return [(method, path) for method, path in found if method != "HEAD"]


@pytest.fixture
def every_route(palace: Palace) -> list[tuple[str, str]]:
    return routes(palace)


def test_a_rebinding_host_is_refused_on_every_route(client: TestClient, every_route: list[tuple[str, str]]) -> None:
    for method, path in every_route:
        answer = client.request(method, path, headers={"Host": REBOUND}, json={})
        assert answer.status_code == 403, (method, path, answer.status_code)
        assert answer.json()["code"] == "forbidden_host", (method, path)


def test_a_foreign_origin_is_refused_on_every_route(client: TestClient, every_route: list[tuple[str, str]]) -> None:
    for method, path in every_route:
        # A "simple" cross-site request: text/plain, which a page may send without asking first.
        answer = client.request(method, path, headers={"Origin": FOREIGN, "Content-Type": "text/plain"}, content="x")
        assert answer.status_code == 403, (method, path, answer.status_code)
        assert answer.json()["code"] == "forbidden_origin", (method, path)


def test_a_state_changing_api_request_without_json_is_refused(
    client: TestClient, every_route: list[tuple[str, str]]
) -> None:
    changing = [(m, p) for m, p in every_route if m not in ("GET", "HEAD", "OPTIONS") and p.startswith("/api/")]
    assert changing
    for method, path in changing:
        for headers, content in (
            ({"Content-Type": "text/plain"}, "{}"),
            ({}, None),
            ({"Content-Type": "application/x-www-form-urlencoded"}, "a=b"),
        ):
            if method == "DELETE" and content is None:
                continue  # below: a DELETE without a body needs no type
            answer = client.request(method, path, headers=headers, content=content)
            assert answer.status_code == 415, (method, path, headers, answer.status_code)
            assert answer.json()["code"] == "unsupported_media_type"


def test_a_delete_without_a_body_needs_no_content_type(client: TestClient, every_route: list[tuple[str, str]]) -> None:
    """Routes declared without a body answer a schema-generated client that sends none (it used to get a 415); a
    browser never sends a DELETE across origins without a preflight, which gets no CORS answer."""
    deletes = [p for m, p in every_route if m == "DELETE" and p.startswith("/api/")]
    assert deletes
    for path in deletes:
        answer = client.request("DELETE", path)
        assert answer.status_code != 415, (path, answer.json())
        assert answer.json()["code"] != "unsupported_media_type"


def test_loopback_names_and_the_own_origin_are_answered(client: TestClient) -> None:
    for host in ("127.0.0.1:8420", "localhost", "[::1]:9000", "127.5.6.7"):
        assert client.get("/api/health", headers={"Host": host}).status_code == 200, host
    answer = client.post(
        "/api/notes",
        json={"content": "from the daemon's own page"},
        headers={"Origin": "http://127.0.0.1:8420", "Host": "127.0.0.1:8420"},
    )
    assert answer.status_code == 201
    assert "access-control-allow-origin" not in {k.lower() for k in answer.headers}
    default_port = client.post("/api/notes", json={"content": "port 80"}, headers={"Origin": "http://127.0.0.1"})
    assert default_port.status_code == 201


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:9999",  # another program's page on this machine
        "http://127.0.0.1:8421",
        "http://localhost:8420",  # another name is another origin
        "https://127.0.0.1:8420",  # another scheme
        "http://[::1]:8420",
    ],
)
def test_another_loopback_origin_is_refused_however_close(client: TestClient, origin: str) -> None:
    """Cookies and SameSite do not tell ports apart; the Origin does, and it must be the daemon's own exactly."""
    for method, path, body in (("POST", "/api/notes", {"content": "x"}), ("GET", "/api/status", None)):
        answer = client.request(method, path, json=body, headers={"Origin": origin, "Host": "127.0.0.1:8420"})
        assert answer.status_code == 403 and answer.json()["code"] == "forbidden_origin", (origin, method)


@pytest.mark.parametrize(
    ("entry", "host", "allowed"),
    [
        ("memory.lan", "memory.lan:8420", True),
        ("memory.lan:*", "memory.lan", True),
        ("memory.lan:8420", "memory.lan:8420", True),
        ("memory.lan:8420", "memory.lan:9000", False),
        ("memory.lan", "evil.memory.lan", False),
        ("memory.lan", "localhost.evil.example.com", False),
    ],
)
def test_configured_hosts(entry: str, host: str, allowed: bool) -> None:
    policy = HostPolicy([entry])
    assert policy.allows(host) is allowed
    assert policy.allows_origin(f"http://{host}") is allowed


@pytest.mark.parametrize(
    "origin",
    ["null", "file://", "http://127.0.0.1.evil.example.com", "chrome-extension://x", "http://127.0.0.1:8420/path"],
)
def test_odd_origins_are_refused(origin: str) -> None:
    assert not HostPolicy([]).allows_origin(origin)


def test_a_cross_site_shutdown_leaves_the_daemon_serving(module_daemon: Any) -> None:
    address = module_daemon.address
    attempts: list[dict[str, Any]] = [
        {"headers": {"Origin": FOREIGN, "Content-Type": "text/plain"}},
        {"headers": {"Content-Type": "text/plain"}, "content": ""},
        {"headers": {"Host": REBOUND, "Content-Type": "application/json"}, "content": "{}"},
    ]
    for attempt in attempts:
        answer = httpx.post(address + "/api/shutdown", trust_env=False, timeout=60, **attempt)
        assert answer.status_code in (403, 415), (attempt, answer.status_code)
    assert httpx.get(address + "/api/health", trust_env=False, timeout=60).json() == {"ok": True}
    assert httpx.get(address + "/api/status", trust_env=False, timeout=60).json()["ok"], "still serving, after all"
