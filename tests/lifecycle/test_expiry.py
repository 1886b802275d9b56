"""Expiry through the services, REST and the configuration (docs/lifecycle.md, "Expiry"): a note or checkpoint kept
for so long, `[[lifecycle]]` rules, evaluated when read with an injected clock; every refusal names its field or
key."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from addresses import LOCAL
from clocks import ManualClock
from fastapi.testclient import TestClient
from waiting import wait_until

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.errors import ConfigError


@contextmanager
def palace_at(tmp_path: Path, clock: ManualClock, config: str = "") -> Iterator[TestClient]:
    """A started palace on `clock` with this config file, through its real HTTP surface; stopped afterwards."""
    config_file = tmp_path / "config.toml"
    config_file.write_text(config)
    settings = load_settings(
        flags={"palace": str(tmp_path / "palace"), "embeddings.provider": "none"}, env={}, config_file=config_file
    )
    palace = build(settings, now=clock)
    palace.start()
    try:
        with TestClient(http_app(palace), base_url=LOCAL, raise_server_exceptions=False) as client:
            yield client
    finally:
        palace.stop()


def search(client: TestClient, query: str, **more: object) -> list[str]:
    answer = client.post("/api/search", json={"query": query, "ranking": "lexical", **more})
    assert answer.status_code == 200, answer.text
    return [hit["drawer"]["id"] for hit in answer.json()["hits"]]


def test_a_note_and_a_checkpoint_expire_when_their_time_is_up(tmp_path: Path) -> None:
    clock = ManualClock()
    with palace_at(tmp_path, clock) as client:
        note = client.post("/api/notes", json={"content": "the ferry leaves at nine", "expires_at": "2h"})
        assert note.status_code == 201, note.text
        drawer = note.json()["drawer"]
        assert drawer["expires_at"] is not None and drawer["valid_to"] is None
        kept = client.post("/api/checkpoint", json={"agent": "a", "items": [
            {"content": "ferry state: waiting for the nine o'clock", "expires_at": "1h"},
            {"content": "ferry decision: take the train if it is late"},
        ]})  # fmt: skip
        assert kept.status_code == 201, kept.text
        short, lasting = (d["id"] for d in kept.json()["drawers"])
        assert set(search(client, "ferry")) == {drawer["id"], short, lasting}

        clock.advance(minutes=90)
        assert set(search(client, "ferry")) == {drawer["id"], lasting}, "the hour-long checkpoint expired"
        wake = client.get("/api/wake-up", params={"agent": "a"}).json()
        assert [d["id"] for d in wake["checkpoints"]] == [lasting]

        clock.advance(hours=1)
        assert search(client, "ferry") == [lasting]
        every = search(client, "ferry", include_historical=True)
        assert set(every) == {drawer["id"], short, lasting}, "reachable at any time"
        read = client.get(f"/api/drawers/{drawer['id']}").json()
        assert read["closed_reason"] == "expired" and read["valid_to"] == read["expires_at"]
        again = client.post("/api/notes", json={"content": "the ferry leaves at nine"})
        assert again.status_code == 201 and again.json()["created"] is True, "an expired copy is no copy"


def test_an_expiry_must_be_a_time_to_come(tmp_path: Path) -> None:
    with palace_at(tmp_path, ManualClock()) as client:
        for value in ("2001-01-01T00:00:00Z", "soon", "-3h"):
            refused = client.post("/api/notes", json={"content": "x", "expires_at": value})
            assert refused.status_code == 400 and refused.json()["field"] == "expires_at", (value, refused.text)
        before = client.get("/api/status").json()["drawers"]
        bad = client.post("/api/checkpoint", json={"items": [{"content": "fine"}, {"content": "x", "expires_at": "x"}]})
        assert bad.status_code == 400 and bad.json()["field"] == "items[1].expires_at", bad.text
        assert client.get("/api/status").json()["drawers"] == before, "validated before anything is written"


def test_lifecycle_rules_expire_what_they_match(tmp_path: Path) -> None:
    clock = ManualClock()
    config = (
        '[[lifecycle]]\nwing = "scratch"\nexpire_after = "1d"\n\n[[lifecycle]]\ntag = "temp"\nexpire_after = "2h"\n'
    )
    with palace_at(tmp_path, clock, config) as client:
        scratch = client.post("/api/notes", json={"content": "scratch idea about gulls", "wing": "scratch"})
        temp = client.post("/api/notes", json={"content": "temporary gulls count", "tags": ["temp"]})
        kept = client.post("/api/notes", json={"content": "gulls nest on the pier"})
        ids = {name: answer.json()["drawer"]["id"] for name, answer in (("s", scratch), ("t", temp), ("k", kept))}
        clock.advance(hours=3)
        assert set(search(client, "gulls")) == {ids["s"], ids["k"]}
        clock.advance(days=1)
        assert search(client, "gulls") == [ids["k"]]
        assert client.get(f"/api/drawers/{ids['s']}").json()["closed_reason"] == "expired"


@pytest.mark.parametrize(
    ("config", "key", "line"),
    [
        ('[[lifecycle]]\nwing = "w"\n', "lifecycle[0].expire_after", None),
        ('[[lifecycle]]\nwing = "w"\nexpire_after = "soon"\n', "lifecycle[0].expire_after", 3),
        ('[[lifecycle]]\nexpire_after = "1d"\n', "lifecycle[0]", None),
        ('[[lifecycle]]\nwing = "w"\nexpire_after = "1d"\nforget = true\n', "lifecycle[0].forget", 4),
        ('lifecycle = "always"\n', "lifecycle", 1),
        ('[[lifecycle]]\npath = "status"\nexpire_after = "1d"\n', "lifecycle[0].equals", None),
        ('[[lifecycle]]\npath = "a..b"\nequals = 1\nexpire_after = "1d"\n', "lifecycle[0].path", 2),
    ],
)
def test_a_malformed_rule_names_its_file_line_and_key(tmp_path: Path, config: str, key: str, line: int | None) -> None:
    with pytest.raises(ConfigError) as refused, palace_at(tmp_path, ManualClock(), config):
        pass
    assert refused.value.key == key, refused.value
    assert refused.value.file and refused.value.file.endswith("config.toml")
    if line is not None:
        assert refused.value.line == line


def test_forget_after_erases_what_expired_long_enough_ago_for_good(tmp_path: Path) -> None:
    clock = ManualClock()
    config = '[[lifecycle]]\nwing = "scratch"\nexpire_after = "1d"\nforget_after = "7d"\n'
    with palace_at(tmp_path, clock, config) as client:
        old = client.post("/api/notes", json={"content": "scratch plan about the boathouse", "wing": "scratch"})
        first = old.json()["drawer"]["id"]
        newer = client.post(f"/api/drawers/{first}/supersede", json={"content": "scratch plan: the boathouse roof"})
        second = newer.json()["id"]
        kept = client.post("/api/notes", json={"content": "the boathouse key", "wing": "home"}).json()["drawer"]["id"]
        clock.advance(days=3)
        assert client.get(f"/api/drawers/{second}").json()["closed_reason"] == "expired", "expired, not erased yet"

        def erase() -> dict[str, object]:
            job = client.post("/api/lifecycle/erase", json={})
            assert job.status_code == 202, job.text
            job_id = job.json()["job"]["id"]
            wait_until(lambda: client.get(f"/api/jobs/{job_id}").json()["status"] == "completed", what="the erase")
            return client.get(f"/api/jobs/{job_id}").json()["result"]

        assert erase() == {"drawers": 0, "versions": 0}
        clock.advance(days=6)
        assert erase() == {"drawers": 1, "versions": 2}, "the drawer with its history"
        for gone in (first, second):
            assert client.get(f"/api/drawers/{gone}").status_code == 404
        assert client.get(f"/api/drawers/{kept}").status_code == 200
        (tombstone,) = client.get("/api/tombstones").json()["tombstones"]
        assert tombstone["requested_by"] == "lifecycle" and tombstone["scope"]["kind"] == "drawer"
