"""The Facts surface as clients see it: REST routes in-process, and the CLI (`extract`, `fact …`, `entity …`,
`drawer duplicates`) as a real console process against a real daemon."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from fastapi.testclient import TestClient

from memcastle.app import Palace

from .support import Palaces, client_of, extracted


def test_the_facts_routes_are_in_the_openapi_schema(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {
        ("/api/extract", "post"),
        ("/api/facts", "get"),
        ("/api/facts", "post"),
        ("/api/facts/{fact_id}", "get"),
        ("/api/facts/{fact_id}/history", "get"),
        ("/api/facts/{fact_id}/supersede", "post"),
        ("/api/facts/{fact_id}/invalidate", "post"),
        ("/api/facts/{fact_id}/link", "post"),
        ("/api/entities", "get"),
        ("/api/entities/{entity_id}", "get"),
        ("/api/drawers/{drawer_id}/duplicates", "get"),
    } <= {(p, m) for p, ops in paths.items() for m in ops}


WRITES = [
    ("/api/facts", {"subject": "Ana Lopez", "predicate": "uses", "object": "Vim"}),
    ("/api/extract", {}),
    ("/api/facts/any/invalidate", {"reason": "x"}),
    ("/api/facts/any/link", {"to": "other", "kind": "confirms", "reason": "x"}),
    ("/api/facts/any/supersede", {"object": "Emacs"}),
]


def test_a_read_only_client_may_read_facts_but_not_record_them_or_start_a_sweep(client: TestClient) -> None:
    read_only = {"X-MemCastle-Mode": "read_only"}
    for path, body in WRITES:
        assert client.post(path, json=body, headers=read_only).status_code == 403, path
    assert client.get("/api/facts", headers=read_only).status_code == 200
    assert client.get("/api/facts").json()["facts"] == []


def test_a_disabled_client_may_not_read_facts_or_entities(client: TestClient) -> None:
    for path in ("/api/facts", "/api/entities", "/api/facts/any", "/api/facts/any/history", "/api/entities/any"):
        assert client.get(path, headers={"X-MemCastle-Mode": "disabled"}).status_code == 403, path


def test_with_extraction_off_no_sweep_is_queued_and_extract_says_why(palaces: Palaces) -> None:
    palace = palaces.open(flags={"extraction.provider": "none"})
    http = client_of(palace)
    http.post("/api/notes", json={"content": "Ana Lopez works on Atlas.", "wing": "w"})

    answer = http.post("/api/extract", json={})

    assert answer.json() == {"job": None, "message": "extraction is disabled (extraction.provider = none)"}
    assert palace.services.jobs.list_jobs(None, "extract", 10) == []
    assert http.get("/api/status").json()["extraction"] == {"provider": "none", "model": None, "pending": 0, "facts": 0}


def test_status_counts_facts_and_pending_drawers(client: TestClient, palace: Palace) -> None:
    client.post("/api/notes", json={"content": "Ana Lopez works on Atlas. Atlas uses Postgres.", "wing": "w"})
    extracted(palace)
    assert client.get("/api/status").json()["extraction"] == {
        "provider": "heuristic",
        "model": None,
        "pending": 0,
        "facts": 2,
    }


# --- the CLI against a real daemon ---------------------------------------------------------------------


def cli_json(daemon: Any, *args: str, code: int = 0) -> Any:
    done: subprocess.CompletedProcess[str] = daemon.cli(*args)
    assert done.returncode == code, f"{args}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout) if code == 0 else done


def test_the_cli_extracts_records_and_explains_facts(module_daemon: Any) -> None:
    served = module_daemon
    note = cli_json(served, "note", "Ana Lopez lives in Lisbon.", "--wing", "w")["drawer"]
    job = cli_json(served, "extract", "--wait")["job"]
    assert job["kind"] == "extract" and job["status"] == "completed"

    (lisbon,) = cli_json(served, "fact", "list", "--predicate", "located_in")["facts"]
    assert (lisbon["object_name"], lisbon["lifecycle"]["state"], lisbon["provenance"]["drawer"]) == (
        "Lisbon",
        "current",
        note["id"],
    )

    porto = cli_json(
        served,
        "fact",
        "add",
        "Ana Lopez",
        "located_in",
        "Porto",
        "--confidence",
        "0.5",
        "--valid-from",
        "2024-01-01",
        "--object-kind",
        "place",
    )
    assert porto["explicit"] is True and porto["valid_from"] == "2024-01-01T00:00:00.000000Z"

    linked = cli_json(
        served,
        "fact",
        "link",
        porto["id"],
        lisbon["id"],
        "--kind",
        "contradicts",
        "--reason",
        "she cannot live in both",
    )
    assert linked["from"]["lifecycle"]["preferred"] is True  # explicit comes first
    assert linked["to"]["lifecycle"]["basis"] == "explicit assertion comes first"

    moved = cli_json(served, "fact", "supersede", porto["id"], "--object", "Faro", "--reason", "she moved")
    assert moved["superseded"]["lifecycle"]["state"] == "superseded"
    faro = moved["fact"]
    assert faro["object_name"] == "Faro" and faro["confidence"] == 0.5

    closed = cli_json(served, "fact", "invalidate", faro["id"], "--reason", "a typo")
    assert closed["lifecycle"]["state"] == "invalidated"

    history = cli_json(served, "fact", "history", lisbon["id"])["facts"]
    assert [(f["object_name"], f["lifecycle"]["state"]) for f in history] == [
        ("Porto", "superseded"),
        ("Lisbon", "current"),
        ("Faro", "invalidated"),
    ]

    refused = cli_json(
        served, "fact", "link", lisbon["id"], faro["id"], "--kind", "supersedes", "--reason", "r", code=1
    )
    assert "kind: Input should be 'confirms', 'contradicts' or 'refines'" in refused.stderr + refused.stdout

    shown = cli_json(served, "entity", "show", lisbon["subject_id"])
    assert shown["name"] == "Ana Lopez" and shown["mentions"] == [{"drawer": note["id"], "spelling": "Ana Lopez"}]


def test_the_cli_shows_the_duplicates_of_a_drawer(module_daemon: Any) -> None:
    served = module_daemon  # its own wing: the daemon is shared with the other CLI test
    first = cli_json(served, "note", "Deploy the API on Friday!", "--wing", "dedup")["drawer"]
    again = cli_json(served, "note", "Deploy the API on Friday!", "--wing", "dedup")
    copy = cli_json(served, "note", "deploy the api on friday", "--wing", "dedup")["drawer"]

    assert again["created"] is False and again["drawer"]["id"] == first["id"]
    (duplicate,) = cli_json(served, "drawer", "duplicates", copy["id"])["duplicates"]
    assert (duplicate["drawer"]["id"], duplicate["verdict"]) == (first["id"], "normalized")
