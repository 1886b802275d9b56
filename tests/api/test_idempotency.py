"""Idempotency keys on notes and checkpoints: a retry after a timeout is answered with the first write."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memcastle.app import Palace
from memcastle.clock import format_instant, to_datetime

FACT = {"subject": "checkout", "predicate": "uses", "object": "decimal rounding"}
ITEMS = [{"content": "decided: round half even at checkout", "fact": FACT}, {"content": "next: fix the CI cache"}]


def checkpoint(client: TestClient, key: str | None = None, items: Any = None, **extra: Any) -> Any:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post("/api/checkpoint", json={"items": items or ITEMS, "agent": "a1", **extra}, headers=headers)


def test_a_retried_checkpoint_returns_the_first_drawers_and_writes_nothing(client: TestClient, palace: Palace) -> None:
    first = checkpoint(client, "c-1")
    assert first.status_code == 201 and first.json()["replayed"] is False
    drawers_before = palace.store.drawers.count_drawers()
    facts_before = client.get("/api/facts").json()
    again = checkpoint(client, "c-1")
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["replayed"] is True
    assert [d["id"] for d in again.json()["drawers"]] == [d["id"] for d in first.json()["drawers"]]
    assert palace.store.drawers.count_drawers() == drawers_before
    assert client.get("/api/facts").json() == facts_before


def test_without_a_key_the_same_checkpoint_is_written_again_as_before(client: TestClient) -> None:
    first, second = checkpoint(client), checkpoint(client)
    assert first.status_code == second.status_code == 201 and second.json()["replayed"] is False


def test_a_key_reused_for_a_different_request_is_a_conflict(client: TestClient) -> None:
    assert checkpoint(client, "c-2").status_code == 201
    other = checkpoint(client, "c-2", items=[{"content": "something else"}])
    assert other.status_code == 409 and other.json()["code"] == "conflict"
    assert "different request" in other.json()["error"]
    note = client.post("/api/notes", json={"content": "x"}, headers={"Idempotency-Key": "c-2"})
    assert note.status_code == 409


def test_a_note_with_a_key_in_the_body_or_the_header(client: TestClient) -> None:
    first = client.post("/api/notes", json={"content": "keyed", "idempotency_key": "n-1"})
    assert first.status_code == 201 and first.json()["created"] is True
    again = client.post("/api/notes", json={"content": "keyed"}, headers={"Idempotency-Key": "n-1"})
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert again.json()["drawer"]["id"] == first.json()["drawer"]["id"]
    both = client.post(
        "/api/notes", json={"content": "keyed", "idempotency_key": "n-1"}, headers={"Idempotency-Key": "n-2"}
    )
    assert both.status_code == 400 and both.json()["field"] == "idempotency_key"


@pytest.mark.parametrize("key", ["", "has space", "x" * 201, "naïve"])
def test_a_malformed_key_is_a_400_naming_it(client: TestClient, key: str) -> None:
    answer = client.post("/api/notes", json={"content": "x", "idempotency_key": key})
    assert answer.status_code == 400 and answer.json()["field"] == "idempotency_key"


def test_a_failed_request_releases_its_key(client: TestClient) -> None:
    bad = checkpoint(client, "c-3", items=[{"content": "ok"}, {"content": ""}])
    assert bad.status_code == 400 and bad.json()["field"] == "items[1].content"
    assert checkpoint(client, "c-3").status_code == 201


def test_a_retry_while_the_first_request_still_writes_is_told_to_wait(client: TestClient, palace: Palace) -> None:
    now = palace.now()
    moment = to_datetime(now)
    earlier = format_instant(moment - timedelta(minutes=1))
    assert (
        palace.store.request_keys.claim_request_key(
            "c-4", "checkpoint", "d", now=now, stale_before=earlier, expire_before=earlier
        )
        is None
    )
    busy = checkpoint(client, "c-4")
    assert busy.status_code == 409 and "still being written" in busy.json()["error"]


def test_a_claim_abandoned_by_a_stopped_daemon_is_taken_over(client: TestClient, palace: Palace) -> None:
    long_ago = format_instant(to_datetime(palace.now()) - timedelta(hours=1))
    older = format_instant(to_datetime(long_ago) - timedelta(days=2))
    assert (
        palace.store.request_keys.claim_request_key(
            "c-5", "checkpoint", "d", now=long_ago, stale_before=older, expire_before=older
        )
        is None
    )
    assert checkpoint(client, "c-5").status_code == 201


def test_a_claim_left_by_a_killed_daemon_is_taken_over_at_once_by_the_next(settings: Any) -> None:
    """A daemon killed while a note was being written left its key pending; the retry after the restart used to be
    told "still being written" for ten minutes. One daemon serves a SQLite palace, so a claim from before it started
    is nobody's."""
    from clocks import DistinctClock
    from fastapi.testclient import TestClient as Client

    from memcastle.app import build
    from memcastle.daemon import http_app

    first = build(settings, now=DistinctClock())
    first.start()
    now = first.now()
    assert (
        first.store.request_keys.claim_request_key("n-1", "note", "d", now=now, stale_before=now, expire_before=now)
        is None
    )
    first.stop()  # as if killed: the claim stays pending
    second = build(settings, now=DistinctClock())
    second.start()
    try:
        with Client(http_app(second), base_url="http://127.0.0.1") as client:
            answer = client.post("/api/notes", json={"content": "kept once"}, headers={"Idempotency-Key": "n-1"})
            assert answer.status_code == 201, answer.json()
            again = client.post("/api/notes", json={"content": "kept once"}, headers={"Idempotency-Key": "n-1"})
            assert again.status_code == 200 and again.json()["replayed"] is True
    finally:
        second.stop()
