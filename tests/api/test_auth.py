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
