"""GET /api/events on a real daemon: job progress and state, drawer writes (ids, never text) and forgets as they
happen; a reconnect with Last-Event-ID resumes; the same auth, mode and origin rules as every route; a daemon with
an open stream still stops at once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import ServerSentEvent, connect_sse
from waiting import CEILING


class Follower:
    """Reads an event stream on a thread; `until(predicate)` waits for an event that satisfies it."""

    def __init__(self, address: str, **params: str) -> None:
        self.events: list[ServerSentEvent] = []
        self._seen = threading.Condition()
        self._client = httpx.Client(base_url=address, timeout=httpx.Timeout(CEILING, read=None), trust_env=False)
        self._params = {k: v for k, v in params.items() if k != "last_event_id"}
        self._headers = {"Last-Event-ID": params["last_event_id"]} if "last_event_id" in params else {}
        self.status: int | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self._ready.wait(CEILING), "the stream opened"

    def _read(self) -> None:
        try:
            with connect_sse(self._client, "GET", "/api/events", params=self._params, headers=self._headers) as src:
                self.status = src.response.status_code
                self._ready.set()
                for event in src.iter_sse():
                    with self._seen:
                        self.events.append(event)
                        self._seen.notify_all()
        except httpx.HTTPError:
            self._ready.set()

    def until(self, predicate: Any, what: str) -> ServerSentEvent:
        deadline = time.monotonic() + CEILING
        with self._seen:
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no event {what} within {CEILING}s: {[e.event for e in self.events]}")
                self._seen.wait(left)

    def close(self) -> None:
        self._client.close()


def data(event: ServerSentEvent) -> dict[str, Any]:
    return json.loads(event.data)  # type: ignore[no-any-return]


@pytest.fixture
def follower(module_daemon: Any) -> Iterator[Any]:
    opened: list[Follower] = []

    def follow(**params: str) -> Follower:
        opened.append(Follower(module_daemon.address, **params))
        return opened[-1]

    yield follow
    for one in opened:
        one.close()


def test_a_note_and_a_mine_are_seen_as_they_happen_without_any_text(
    module_daemon: Any, follower: Any, tmp_path: Path
) -> None:
    stream = follower()
    assert stream.status == 200
    with module_daemon.http() as http:
        note = http.post("/api/notes", json={"content": "The portcullis code is 4471", "wing": "ev-notes"}).json()
        drawer_id = note["drawer"]["id"]
        filed = stream.until(lambda e: e.event == "drawers" and drawer_id in e.data, "for the note")
        assert data(filed)["drawers"] == [{"id": drawer_id, "wing": "ev-notes", "room": "notes", "kind": "note"}]
        assert "4471" not in filed.data, "events name drawers, never their text"
        folder = tmp_path / "castle"
        folder.mkdir()
        for i in range(3):
            (folder / f"room{i}.md").write_text(f"# Room {i}\n\nThe east tower holds barrel {i}.\n")
        job_id = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "ev-mine"}).json()[
            "job"
        ]["id"]
    done = stream.until(lambda e: e.event == "job" and data(e)["id"] == job_id and data(e)["status"] == "completed", "")
    states = [data(e)["status"] for e in stream.events if e.event == "job" and data(e)["id"] == job_id]
    assert states[0] in ("queued", "running") and states[-1] == "completed" and "running" in states
    assert data(done)["result"]["created"] == 3
    mined = [data(e) for e in stream.events if e.event == "drawers" and data(e).get("job_id") == job_id]
    assert sum(len(m["drawers"]) for m in mined) == 3 and all(m["drawers"][0]["wing"] == "ev-mine" for m in mined)
    ids = [e.id for e in stream.events]
    assert len(ids) == len(set(ids))


def test_a_reconnect_resumes_after_the_last_event_and_a_forget_is_told(module_daemon: Any, follower: Any) -> None:
    first = follower(kinds="drawers,forget")
    with module_daemon.http() as http:
        one = http.post("/api/notes", json={"content": "first of three", "wing": "ev-resume"}).json()["drawer"]["id"]
        seen = first.until(lambda e: one in e.data, "for the first note")
        first.close()
        two = http.post("/api/notes", json={"content": "second of three", "wing": "ev-resume"}).json()["drawer"]["id"]
        three = http.post("/api/notes", json={"content": "third of three", "wing": "ev-resume"}).json()["drawer"]["id"]
        again = follower(kinds="drawers,forget", last_event_id=seen.id)
        again.until(lambda e: three in e.data, "for the third note")
        filed = [data(e)["drawers"][0]["id"] for e in again.events if e.event == "drawers"]
        assert filed[:2] == [two, three], "what was missed, in order, and nothing seen before"
        gone = http.request("DELETE", f"/api/drawers/{two}", json={}).json()
        told = again.until(lambda e: e.event == "forget", "for the forget")
        assert data(told)["tombstone"]["id"] == gone["tombstone"]["id"]
    late = follower(kinds="drawers", last_event_id=seen.id)
    late.until(lambda e: three in e.data, "for the third note again")
    assert not any(two in e.data for e in late.events), "a forgotten drawer's events are not replayed"


def test_a_bad_kind_is_a_400_and_a_foreign_page_is_refused(module_daemon: Any) -> None:
    with module_daemon.http() as http:
        bad = http.get("/api/events", params={"kinds": "job,gossip"})
        assert bad.status_code == 400 and bad.json()["field"] == "kinds" and "gossip" in bad.json()["error"]
        foreign = http.get("/api/events", headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["code"] == "forbidden_origin"
        off = http.get("/api/events", headers={"X-MemCastle-Mode": "disabled"})
        assert off.status_code == 403


def test_the_stream_needs_the_token_when_auth_is_on_and_a_daemon_with_a_stream_open_stops(
    daemon_process: Any, tmp_path: Path
) -> None:
    from memcastle.runtime.tokens import TokenStore

    palace = tmp_path / "secured"
    token = TokenStore(palace).create("events")
    served = daemon_process(palace, extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    with httpx.Client(base_url=served.address, timeout=CEILING, trust_env=False) as http:
        assert http.get("/api/events").status_code == 401
    client = httpx.Client(
        base_url=served.address,
        timeout=httpx.Timeout(CEILING, read=None),
        headers={"Authorization": f"Bearer {token}"},
        trust_env=False,
    )
    opened = threading.Event()

    def hold() -> None:
        try:
            with connect_sse(client, "GET", "/api/events") as source:
                opened.set()
                for _ in source.iter_sse():
                    pass
        except httpx.HTTPError:
            pass

    reader = threading.Thread(target=hold, daemon=True)
    reader.start()
    assert opened.wait(CEILING)
    started = time.monotonic()
    served.proc.terminate()
    assert served.wait_exit() == 0
    assert time.monotonic() - started < 10, "an open event stream does not hold the shutdown"
    reader.join(CEILING)
    client.close()
