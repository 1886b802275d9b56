"""Caller-supplied vectors: `query_embedding` on a search, `PUT /api/drawers/{id}/embedding` — validated, marked
`supplied`, searched at once, kept while the model is the same and replaced when it changes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from addresses import LOCAL
from fastapi.testclient import TestClient
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.daemon import http_app

EMBEDDER = str(Path(__file__).with_name("embedder.py"))


def open_palace(path: Path, model: str = "bow") -> Palace:
    flags = {
        "palace": str(path),
        "embeddings.provider": "command",
        "embeddings.model": model,
        "embeddings.command": [sys.executable, EMBEDDER],
        "extraction.provider": "none",
    }
    palace = build(load_settings(flags=flags, env={}, config_file=None))
    palace.start()
    return palace


def embedded(palace: Palace) -> None:
    wait_until(lambda: palace.services.status.embedding_status().pending == 0, timeout=60, what="embeddings")


def one_hot(slot: int, dimension: int = 64) -> list[float]:
    return [1.0 if i == slot else 0.0 for i in range(dimension)]


def test_a_supplied_vector_is_checked_marked_searched_and_kept_until_the_model_changes(tmp_path: Path) -> None:
    palace = open_palace(tmp_path / "palace")
    try:
        with TestClient(http_app(palace), base_url=LOCAL) as http:
            ids = [
                http.post("/api/notes", json={"content": text, "wing": "v"}).json()["drawer"]["id"]
                for text in ("the drawbridge chain", "the moat's water level", "a ledger of the west wall")
            ]
            embedded(palace)
            target = ids[1]
            state = http.get(f"/api/drawers/{target}/embedding").json()
            assert (state["embedded"], state["supplied"], state["dimension"], state["model"]) == (
                True,
                False,
                64,
                "command:bow",
            )

            for vector, field in ((one_hot(3, 8), "vector"), ([0.0] * 64, "vector"), ([], "vector")):
                refused = http.put(f"/api/drawers/{target}/embedding", json={"vector": vector})
                assert refused.status_code == 400 and refused.json()["field"] == field, refused.text
            odd = one_hot(63)
            supplied = http.put(f"/api/drawers/{target}/embedding", json={"vector": odd})
            assert supplied.status_code == 200 and supplied.json()["supplied"] is True, supplied.text

            found = http.post(
                "/api/search", json={"query": "anything at all", "ranking": "semantic", "query_embedding": odd}
            ).json()["hits"]
            assert found and found[0]["drawer"]["id"] == target and found[0]["signals"]["semantic"] > 0.99
            wrong = http.post("/api/search", json={"query": "x", "ranking": "semantic", "query_embedding": [1.0, 0.0]})
            assert wrong.status_code == 400 and wrong.json()["field"] == "query_embedding"

            http.post("/api/embed", json={})  # the sweep again, same model: nothing to redo
            embedded(palace)
            assert http.get(f"/api/drawers/{target}/embedding").json()["supplied"] is True
    finally:
        palace.stop()

    changed = open_palace(tmp_path / "palace", model="bow-v2")  # another model: every drawer is embedded again
    try:
        embedded(changed)
        with TestClient(http_app(changed), base_url=LOCAL) as http:
            state: dict[str, Any] = http.get(f"/api/drawers/{target}/embedding").json()
            assert (state["model"], state["embedded"], state["supplied"]) == ("command:bow-v2", True, False)
    finally:
        changed.stop()
