"""Bearer-token authentication: off by default on loopback; with auth.enabled only /api/health is public."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from addresses import LOCAL
from fastapi.testclient import TestClient

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.runtime.tokens import TokenStore, digest_of


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    palace_dir = tmp_path / "palace"
    token = TokenStore(palace_dir).create("laptop")
    settings = load_settings(
        flags={"palace": str(palace_dir), "auth.enabled": True, "embeddings.provider": "none"}, env={}
    )
    palace = build(settings)
    palace.start()
    with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client, token
    palace.stop()


def test_tokens_are_stored_only_as_digests(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token = store.create("ci")
    text = (tmp_path / "tokens.json").read_text()
    assert token not in text and digest_of(token) in text
    assert store.verify(token) is not None and store.verify(token + "x") is None
    assert (tmp_path / "tokens.json").stat().st_mode & 0o077 == 0


def test_health_is_public_and_everything_else_needs_the_token(secured: tuple[TestClient, str]) -> None:
    client, token = secured
    assert client.get("/api/health").status_code == 200
    for method, path in (("GET", "/api/status"), ("POST", "/api/search"), ("GET", "/api/drawers"), ("POST", "/mcp")):
        answer = client.request(method, path, json={"query": "x"})
        assert answer.status_code == 401, path
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert answer.json()["code"] == "unauthorized"
    good = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/status", headers=good).status_code == 200
    assert client.post("/api/notes", json={"content": "secret plan"}, headers=good).status_code == 201


def test_a_wrong_token_is_refused(secured: tuple[TestClient, str]) -> None:
    client, token = secured
    for header in (f"Bearer {token[:-1]}x", "Bearer ", f"Basic {token}", token):
        assert client.get("/api/status", headers={"Authorization": header}).status_code == 401


def test_a_token_created_while_the_daemon_runs_takes_effect(secured: tuple[TestClient, str], tmp_path: Path) -> None:
    client, _ = secured
    newer = TokenStore(tmp_path / "palace").create("second")
    assert client.get("/api/status", headers={"Authorization": f"Bearer {newer}"}).status_code == 200


def test_the_daemon_refuses_to_start_with_auth_and_no_token(
    tmp_path: Path, cli_runner: Callable[..., Any], xdg_home: Any
) -> None:
    result = cli_runner(
        ["--palace", str(tmp_path / "p"), "serve", "--port", "0"],
        env=xdg_home.env({"MEMCASTLE_AUTH_ENABLED": "true", "MEMCASTLE_EMBEDDINGS_PROVIDER": "none"}),
    )
    assert result.returncode == 1
    assert "auth token create" in result.stderr


def test_the_daemon_refuses_a_remote_bind_without_auth(
    tmp_path: Path, cli_runner: Callable[..., Any], xdg_home: Any
) -> None:
    result = cli_runner(
        ["--palace", str(tmp_path / "p"), "serve", "--host", "0.0.0.0", "--port", "0"],
        env=xdg_home.env({"MEMCASTLE_EMBEDDINGS_PROVIDER": "none"}),
    )
    assert result.returncode == 1
    assert "auth.allow_remote" in result.stderr


def test_the_cli_sends_its_token_and_creates_tokens(
    tmp_path: Path, daemon: Callable[..., Any], cli_runner: Callable[..., Any], xdg_home: Any
) -> None:
    palace_dir = tmp_path / "secured"
    created = cli_runner(
        ["--palace", str(palace_dir), "--json", "auth", "token", "create", "cli"], env=xdg_home.env({})
    )
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)["token"]
    running = daemon(palace=palace_dir, extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    refused = running.cli("status")
    assert refused.returncode == 1 and "token" in refused.stderr
    allowed = running.cli("status", extra_env={"MEMCASTLE_AUTH_TOKEN": token})
    assert allowed.returncode == 0, allowed.stderr


# --- listing, revoking, and a configured secret ------------------------------------------------------------------

JSON = {"content-type": "application/json"}


def test_a_revoked_token_is_refused_at_once(secured: tuple[TestClient, str], tmp_path: Path) -> None:
    client, token = secured
    other = TokenStore(tmp_path / "palace").create("phone")
    good = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/status", headers={"Authorization": f"Bearer {other}"}).status_code == 200
    listed = client.get("/api/auth/tokens", headers=good).json()
    assert [t["name"] for t in listed["tokens"]] == ["laptop", "phone"] and listed["configured_secret"] is False
    assert all(set(t) == {"name", "created_at", "mode", "read", "write", "tools", "routes"} for t in listed["tokens"])
    assert all(t["mode"] == "full" and t["read"] is None and t["write"] is None for t in listed["tokens"])
    revoked = client.request("DELETE", "/api/auth/tokens/phone", headers={**good, **JSON}, content="{}")
    assert revoked.status_code == 200 and revoked.json() == {"revoked": "phone"}
    assert client.get("/api/status", headers={"Authorization": f"Bearer {other}"}).status_code == 401
    missing = client.request("DELETE", "/api/auth/tokens/phone", headers={**good, **JSON}, content="{}")
    assert missing.status_code == 404 and "laptop" in missing.json()["help"]


def test_tokens_are_created_over_rest_only_by_a_full_client(secured: tuple[TestClient, str]) -> None:
    client, token = secured
    good = {"Authorization": f"Bearer {token}"}
    limited = client.post("/api/auth/tokens", json={"name": "ci"}, headers={**good, "X-MemCastle-Mode": "read_only"})
    assert limited.status_code == 403
    created = client.post("/api/auth/tokens", json={"name": "ci"}, headers=good)
    assert created.status_code == 201 and created.json()["token"].startswith("mc_")
    assert client.get("/api/status", headers={"Authorization": f"Bearer {created.json()['token']}"}).status_code == 200
    assert client.post("/api/auth/tokens", json={"name": "ci"}, headers=good).status_code == 400
    assert client.post("/api/auth/tokens", json={"name": ""}, headers=good).json()["field"] == "name"


def test_without_auth_there_is_no_token_management_over_http(client: TestClient) -> None:
    answer = client.get("/api/auth/tokens")
    assert answer.status_code == 403 and "auth.enabled" in answer.json()["error"]


def test_a_configured_secret_is_accepted_beside_the_palace_tokens(tmp_path: Path) -> None:
    secret = "s" * 8 + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1Jd5Fg0Sa"
    settings = load_settings(
        flags={"palace": str(tmp_path / "headless"), "auth.enabled": True, "embeddings.provider": "none"},
        env={"MEMCASTLE_AUTH_TOKEN": secret},
    )
    palace = build(settings)
    palace.start()
    try:
        with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as client:
            assert client.get("/api/status", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
            assert client.get("/api/status", headers={"Authorization": f"Bearer {secret[:-1]}"}).status_code == 401
            listed = client.get("/api/auth/tokens", headers={"Authorization": f"Bearer {secret}"}).json()
            assert listed == {"tokens": [], "configured_secret": True}
    finally:
        palace.stop()
    assert not (tmp_path / "headless" / "tokens.json").exists()


def test_a_short_configured_secret_stops_the_daemon_naming_the_key(
    tmp_path: Path, cli_runner: Callable[..., Any], xdg_home: Any
) -> None:
    result = cli_runner(
        ["--palace", str(tmp_path / "p"), "serve", "--port", "0"],
        env=xdg_home.env(
            {
                "MEMCASTLE_AUTH_ENABLED": "true",
                "MEMCASTLE_AUTH_TOKEN": "too-short",
                "MEMCASTLE_EMBEDDINGS_PROVIDER": "none",
            }
        ),
    )
    assert result.returncode == 1
    assert "auth.token" in result.stderr and "32" in result.stderr


def test_the_cli_lists_and_revokes_tokens(tmp_path: Path, cli_runner: Callable[..., Any], xdg_home: Any) -> None:
    palace_dir = str(tmp_path / "cli-tokens")
    for name in ("one", "two"):
        assert (
            cli_runner(["--palace", palace_dir, "auth", "token", "create", name], env=xdg_home.env({})).returncode == 0
        )
    listed = cli_runner(["--palace", palace_dir, "--json", "auth", "token", "list"], env=xdg_home.env({}))
    assert [t["name"] for t in json.loads(listed.stdout)["tokens"]] == ["one", "two"]
    revoked = cli_runner(["--palace", palace_dir, "auth", "token", "revoke", "one"], env=xdg_home.env({}))
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    again = cli_runner(["--palace", palace_dir, "auth", "token", "revoke", "one"], env=xdg_home.env({}))
    assert again.returncode == 1 and "no token named 'one'" in again.stderr
    listed = cli_runner(["--palace", palace_dir, "--json", "auth", "token", "list"], env=xdg_home.env({}))
    assert [t["name"] for t in json.loads(listed.stdout)["tokens"]] == ["two"]
