"""Webhook triggers through the daemon's real HTTP app: real HMAC-SHA256 signatures and tokens, bad ones, replays
of a delivery id, a flood, a disabled miner, an unknown hook — and nothing runs before a delivery is verified."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from addresses import LOCAL
from fastapi.testclient import TestClient

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.daemon import http_app

SECRET = "s3cret-webhook-key-for-tests-only"
CONFIG = """
[[miners]]
name = "notes-hook"
connector = "notes"
locator = "{folder}"
webhook = "hmac"
secret_env = "NOTES_HOOK_SECRET"

[[miners]]
name = "token-hook"
connector = "notes"
locator = "{folder}"
webhook = "token"
secret_env = "TOKEN_HOOK_SECRET"
"""


@pytest.fixture
def palace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Palace]:
    folder = tmp_path / "hooked-notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe drawbridge log.\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.format(folder=folder), encoding="utf-8")
    monkeypatch.setenv("NOTES_HOOK_SECRET", SECRET)
    monkeypatch.setenv("TOKEN_HOOK_SECRET", SECRET)
    flags = {"palace": str(tmp_path / "palace"), "embeddings.provider": "none", "mining.roots": [str(tmp_path)]}
    built = build(load_settings(flags=flags, env={}, config_file=config))
    built.start()
    yield built
    built.stop()


def signed(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(http: TestClient, name: str, body: bytes, **headers: str) -> Any:
    base = {"Content-Type": "application/json"}
    return http.post(
        f"/hooks/{name}", content=body, headers={**base, **{k.replace("_", "-"): v for k, v in headers.items()}}
    )


def mine_jobs(palace: Palace) -> int:
    return len(palace.services.jobs.list_jobs(None, "mine", 200))


def test_a_webhook_is_created_disabled_and_verified_before_anything(palace: Palace) -> None:
    body = json.dumps({"ref": "refs/heads/main"}).encode()
    with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as http:
        bad = deliver(
            http, "notes-hook", body, X_Hub_Signature_256=signed(body, "wrong-secret"), X_GitHub_Delivery="d1"
        )
        assert bad.status_code == 401 and "signature" in bad.json()["error"]
        assert deliver(http, "notes-hook", body).status_code == 401  # unsigned
        # Verified, but the miner was created disabled: a person enables it.
        disabled = deliver(http, "notes-hook", body, X_Hub_Signature_256=signed(body), X_GitHub_Delivery="d1")
        assert disabled.status_code == 409 and "disabled" in disabled.json()["error"]
        assert mine_jobs(palace) == 0

        palace.services.miners.set_enabled("notes-hook", True)
        first = deliver(http, "notes-hook", body, X_Hub_Signature_256=signed(body), X_GitHub_Delivery="d1")
        assert first.status_code == 202 and first.json()["duplicate"] is False and first.json()["job"]["kind"] == "mine"
        replay = deliver(http, "notes-hook", body, X_Hub_Signature_256=signed(body), X_GitHub_Delivery="d1")
        assert replay.status_code == 200 and replay.json()["duplicate"] is True and replay.json()["job"] is None
        tampered = deliver(http, "notes-hook", body + b" ", X_Hub_Signature_256=signed(body), X_GitHub_Delivery="d2")
        assert tampered.status_code == 401
        assert mine_jobs(palace) == 1
        assert deliver(http, "no-such-hook", body, X_Hub_Signature_256=signed(body)).status_code == 404


def test_a_token_webhook_and_a_flood(palace: Palace) -> None:
    palace.services.miners.set_enabled("token-hook", True)
    with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as http:
        assert deliver(http, "token-hook", b"{}", Authorization="Bearer nope").status_code == 401
        answers = [
            deliver(http, "token-hook", b"{}", Authorization=f"Bearer {SECRET}", X_Delivery_Id=f"flood-{i}")
            for i in range(35)
        ]
        statuses = [a.status_code for a in answers]
        assert statuses[:30] == [202] * 30 and set(statuses[30:]) == {429}
        assert int(answers[-1].headers["Retry-After"]) >= 1
        # Each accepted delivery asked for a run (or joined a queued one); the refused five asked for nothing.
        assert 1 <= mine_jobs(palace) <= 30
