"""The in-memory semantic index: loads only what is new, in chunks; a search scans a published snapshot while vectors
keep arriving; a drawer embedded again is found by its new vectors only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memcastle.model import NewDrawer, Scope
from memcastle.search import semantic
from memcastle.search.semantic import SemanticIndex
from memcastle.store.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "palace")
    yield opened
    opened.close()


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def add(store: SQLiteStore, text: str, wing: str = "w") -> str:
    return store.drawers.add_drawer(NewDrawer(wing=wing, room="r", content=text)).id


def test_a_drawer_embedded_again_is_scored_by_its_new_vectors_only(store: SQLiteStore) -> None:
    drawer = add(store, "first text")
    store.embeddings.put_embeddings("m", [(drawer, np.stack([unit(1, 0, 0), unit(0, 1, 0)]))])
    index = SemanticIndex(store, "m")
    found = index.candidates(unit(1, 0, 0), 5, Scope())
    assert [(c.drawer_id, round(c.signal, 3)) for c in found] == [(drawer, 1.0)]
    store.embeddings.put_embeddings("m", [(drawer, np.stack([unit(0, 0, 1)]))])  # from passage 0: replaces both rows
    assert index.candidates(unit(1, 0, 0), 5, Scope()) == [], "the replaced rows no longer score"
    assert [c.drawer_id for c in index.candidates(unit(0, 0, 1), 5, Scope())] == [drawer]
    assert index.has_vector(drawer)


def test_refresh_loads_in_chunks_and_only_what_is_new(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "LOAD_CHUNK", 3)
    drawers = [add(store, f"drawer {i}") for i in range(7)]
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((7, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.embeddings.put_embeddings("m", [(d, vectors[i : i + 1]) for i, d in enumerate(drawers)])
    calls: list[int] = []
    load = store.embeddings.load_embeddings

    def counting(model: str, after_id: int, dimension: int, *, limit: int):  # type: ignore[no-untyped-def]
        chunk = load(model, after_id, dimension, limit=limit)
        calls.append(len(chunk.ids))
        return chunk

    monkeypatch.setattr(store.embeddings, "load_embeddings", counting)
    index = SemanticIndex(store, "m")
    index.refresh()
    assert index.size == 7 and calls == [3, 3, 1]
    calls.clear()
    index.refresh()
    assert calls == [0], "nothing new: one probe past the last row"
    for i, drawer in enumerate(drawers):
        best = index.candidates(vectors[i], 1, Scope())
        assert best[0].drawer_id == drawer


def test_a_search_scans_its_snapshot_while_a_refresh_appends(store: SQLiteStore) -> None:
    """Searches and loads run side by side: a search never blocks on the lock a load holds, and never sees a row
    half written."""
    target = add(store, "the one to find", wing="a")
    store.embeddings.put_embeddings("m", [(target, unit(1, 1, 0, 0)[None, :])])
    index = SemanticIndex(store, "m")
    index.refresh()
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        rng = np.random.default_rng(7)
        try:
            while not stop.is_set():
                ids = [add(store, "noise", wing="b") for _ in range(20)]
                rows = rng.standard_normal((20, 4)).astype(np.float32)
                rows[:, :2] = -np.abs(rows[:, :2])  # never closer to the query than the target
                rows /= np.linalg.norm(rows, axis=1, keepdims=True)
                store.embeddings.put_embeddings("m", [(d, rows[i : i + 1]) for i, d in enumerate(ids)])
                index.refresh()
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(200):
            found = index.candidates(unit(1, 1, 0, 0), 3, Scope())
            assert found and found[0].drawer_id == target
            assert [c.drawer_id for c in index.candidates(unit(1, 1, 0, 0), 3, Scope(wing="a"))] == [target]
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert index.size > 1
