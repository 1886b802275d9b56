"""Forgetting through a real palace: a planted phrase, mined, embedded, superseded and extracted, is nowhere in the
palace's files once forgotten (the database, its log, the vector graph), and the REST surface says what it does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from knowledge.support import Palaces, client_of, extracted, mine, wait_until, write_notes

from memcastle.app import Palace
from memcastle.model import ANY_TIME, LexicalQuery, Scope
from memcastle.store.sqlite import SQLiteStore

PHRASE = "zqv7kx9 wombatquill"
# The words as the full-text index stores them, less a first character a neighbouring term may share (FTS5 writes a
# term as the prefix it shares with the one before it, then the rest).
TOKENS = (b"qv7kx9", b"ombatquill")
NAMES = (b"Zorblaxia", b"zorblaxia", b"Quintarro", b"quintarro")


def palace_bytes(palace: Palace) -> dict[str, bytes]:
    """Every file of the palace directory, as bytes."""
    root = palace.settings.palace
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def holding(files: dict[str, bytes], needles: tuple[bytes, ...]) -> dict[str, list[bytes]]:
    return {name: found for name, data in files.items() if (found := [n for n in needles if n in data])}


def embedded(palace: Palace) -> None:
    wait_until(
        lambda: palace.services.status.embedding_status().pending == 0,
        timeout=120,
        what="every drawer embedded",
    )


def test_a_forgotten_phrase_is_nowhere_in_the_palace_files(palaces: Palaces, tmp_path: Path) -> None:
    palace = palaces.open(flags={"embeddings.provider": "builtin", "search.ann_min_rows": 8})
    notes = {f"filler-{i}.md": ({}, f"An ordinary note number {i} about gardening and tomatoes.") for i in range(30)}
    notes["plan.md"] = (
        {"title": "plan"},
        f"Zorblaxia Quintarro works on Gardening. The passphrase is {PHRASE}.\n\n" + "Filler line.\n" * 40,
    )
    write_notes(tmp_path / "notes", notes)
    mine(palace, "notes", tmp_path / "notes", wing="garden")
    client = client_of(palace)
    note = client.post(
        "/api/notes",
        json={"content": f"Remember {PHRASE} for Zorblaxia Quintarro", "wing": "garden"},
        headers={"Idempotency-Key": "plant-1"},
    ).json()["drawer"]
    replaced = client.post(
        f"/api/drawers/{note['id']}/supersede", json={"content": f"Zorblaxia Quintarro said {PHRASE} twice"}
    )
    assert replaced.status_code == 201
    embedded(palace)
    extracted(palace, timeout=60)
    hits = client.post("/api/search", json={"query": PHRASE, "ranking": "hybrid"}).json()["hits"]
    assert hits and PHRASE in hits[0]["drawer"]["content"]
    assert client.get("/api/entities", params={"name": "Zorblaxia Quintarro"}).json()["entities"]
    index = palace.maintainer._index if palace.maintainer else None  # the semantic leg's graph, saved to its file
    assert index is not None
    wait_until(lambda: not index.maintain() and index._ann is not None, timeout=60, what="the graph built")
    index.save()
    store = palace.store
    assert isinstance(store, SQLiteStore)
    store._empty_log()  # the text now sits in the database file itself, not only in its log
    planted = [r for r in store.copy.export_rows("drawer") if PHRASE in r["content"]]
    seqs, seqs_ids = {r["seq"] for r in planted}, {r["id"] for r in planted}
    vectors = [row["vector"] for row in store.copy.export_rows("embedding") if row["drawer_seq"] in seqs]
    assert vectors
    # In the store as float32; in the graph as usearch's int8 copies (each component × 127, truncated).
    vector_bytes = tuple(np.trunc(v * 127).astype(np.int8).tobytes() for v in vectors) + tuple(
        v.tobytes() for v in vectors
    )
    before = palace_bytes(palace)
    assert PHRASE.encode() in before["palace.sqlite3"]
    assert any(v in data for v in vector_bytes for name, data in before.items() if name.endswith(".usearch"))

    found = client.post("/api/forget", json={"scope": "search", "search": {"query": PHRASE}}).json()
    assert found["dry_run"] is True, "a search scope is a dry run unless confirmed"
    assert found["counts"]["versions"] == 3, "the mined chunk and both versions of the note"
    gone = client.post("/api/forget", json={"scope": "search", "search": {"query": PHRASE}, "dry_run": False}).json()
    assert gone["counts"]["versions"] == 3 and gone["counts"]["passages"] >= 3 and gone["counts"]["facts"] >= 1
    assert gone["counts"]["entities"] >= 1 and gone["counts"]["mentions"] >= 1
    # The chunk it was mined in and the note drawer of the same author: forget the plan document whole too.
    plan = next(s for s in client.get("/api/sources").json()["sources"] if s["connector"] == "notes")
    client.post(
        "/api/forget", json={"scope": "document", "source_id": plan["id"], "document": "plan.md", "dry_run": False}
    )

    after = palace_bytes(palace)
    assert not holding(after, (PHRASE.encode(), *TOKENS, *NAMES)), "the phrase and the names are gone"
    assert not holding(after, vector_bytes), "no vector of the forgotten drawers is left, in the graph or the store"
    # The index finds nothing (asked of the store: a search through the API would be a new read, and the read audit
    # records what a client asks after the forget as it records any read).
    assert store.search.lexical_candidates(LexicalQuery(tuple(PHRASE.split())), Scope(when=ANY_TIME), 10) == []
    # The search that found the phrase before is still in the read audit, without its words or the forgotten ids.
    (read,) = client.get("/api/audit/reads").json()["reads"]
    assert read["operation"] == "search" and read["query"] is None and not set(read["drawer_ids"]) & seqs_ids
    assert client.get("/api/entities", params={"name": "Zorblaxia Quintarro"}).json()["entities"] == []
    retried = client.post(
        "/api/notes", json={"content": "another text", "wing": "garden"}, headers={"Idempotency-Key": "plant-1"}
    )
    assert retried.json()["replayed"] is False, "the idempotency record of the forgotten note went with it"
    tombstones = client.get("/api/tombstones").json()["tombstones"]
    assert [t["scope"]["kind"] for t in tombstones] == ["document", "search"]
    assert "zqv7kx9" not in str(tombstones)
    palaces.stop(palace)
    assert not holding(palace_bytes(palace), (PHRASE.encode(), *TOKENS, *NAMES, *vector_bytes))
