"""Drawer dedup (SPEC §4): exact, normalized and near copies within a room among current drawers are linked, never
merged; an unnamed manual exact copy is not stored again; mined evidence is always stored and linked."""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.knowledge import dedup
from memcastle.knowledge.dedup import similarity
from memcastle.model import NearKeys, normalize_text

from .support import Palaces, client_of, linked, mine, write_notes

IMPORTER = (
    "The Atlas importer retries failed uploads three times with exponential backoff before it gives up "
    "and alerts the on-call engineer."
)


def note(client: TestClient, content: str, **fields: Any) -> tuple[int, dict[str, Any]]:
    answer = client.post("/api/notes", json={"content": content, "wing": "w", **fields})
    return answer.status_code, answer.json()


def duplicates(client: TestClient, drawer_id: str) -> list[tuple[str, str, float]]:
    answer = client.get(f"/api/drawers/{drawer_id}/duplicates")
    assert answer.status_code == 200
    return [(d["drawer"]["id"], d["verdict"], d["similarity"]) for d in answer.json()["duplicates"]]


def room(client: TestClient, name: str = "notes", wing: str = "w") -> list[dict[str, Any]]:
    answer = client.get("/api/drawers", params={"wing": wing, "room": name})
    return answer.json()["drawers"]  # type: ignore[no-any-return]


# --- manual writes ----------------------------------------------------------------------------------


def test_an_exact_copy_of_an_unnamed_note_returns_the_existing_drawer(client: TestClient) -> None:
    status, first = note(client, "Deploy the API on Friday.")
    again_status, again = note(client, "Deploy the API on Friday.")

    assert (status, first["created"]) == (201, True)
    assert (again_status, again["created"]) == (200, False)
    assert again["drawer"] == first["drawer"]
    assert [d["id"] for d in room(client)] == [first["drawer"]["id"]]


def test_an_exact_copy_of_a_checkpoint_is_not_stored_again(client: TestClient) -> None:
    body = {"items": [{"content": "Decided: freeze the schema.", "wing": "w"}]}
    first = client.post("/api/checkpoint", json=body).json()["drawers"]
    again = client.post("/api/checkpoint", json=body).json()["drawers"]
    assert [d["id"] for d in again] == [d["id"] for d in first]
    assert len(room(client, "checkpoints")) == 1


def test_a_named_write_is_stored_even_when_its_content_exists_and_is_linked_exact(client: TestClient) -> None:
    _, first = note(client, "Deploy the API on Friday.")
    status, named = note(client, "Deploy the API on Friday.", name="deploy-plan")

    assert (status, named["created"]) == (201, True) and named["drawer"]["id"] != first["drawer"]["id"]
    assert duplicates(client, named["drawer"]["id"]) == [(first["drawer"]["id"], "exact", 1.0)]
    assert duplicates(client, first["drawer"]["id"]) == [(named["drawer"]["id"], "exact", 1.0)]


def test_a_normalized_copy_is_stored_and_linked(client: TestClient) -> None:
    _, first = note(client, "Deploy the API on Friday!")
    status, copy = note(client, "deploy -- the api, on   FRIDAY")

    assert (status, copy["created"]) == (201, True)
    assert duplicates(client, copy["drawer"]["id"]) == [(first["drawer"]["id"], "normalized", 1.0)]


def test_a_near_copy_is_stored_and_linked_with_its_similarity(client: TestClient) -> None:
    near = IMPORTER.replace("alerts", "alert")
    _, first = note(client, IMPORTER)
    status, copy = note(client, near)

    assert (status, copy["created"]) == (201, True)
    assert similarity(IMPORTER, near) >= 0.9
    assert duplicates(client, copy["drawer"]["id"]) == [
        (first["drawer"]["id"], "near", round(similarity(IMPORTER, near), 4))
    ]


def test_a_text_below_the_near_threshold_is_not_linked(client: TestClient) -> None:
    different = IMPORTER.replace("three", "five")
    assert similarity(IMPORTER, different) < 0.9
    note(client, IMPORTER)
    _, copy = note(client, different)
    assert duplicates(client, copy["drawer"]["id"]) == []


def test_copies_in_another_room_or_of_a_closed_drawer_are_not_duplicates(client: TestClient) -> None:
    _, first = note(client, IMPORTER)
    status, elsewhere = note(client, IMPORTER, room="ops")
    assert (status, elsewhere["created"]) == (201, True)
    assert duplicates(client, elsewhere["drawer"]["id"]) == []

    client.post(f"/api/drawers/{first['drawer']['id']}/supersede", json={"content": "The importer was removed."})
    status, again = note(client, IMPORTER)
    assert (status, again["created"]) == (201, True) and again["drawer"]["id"] != first["drawer"]["id"]
    assert duplicates(client, again["drawer"]["id"]) == []


def test_a_near_copy_needs_twelve_characters(palaces: Palaces) -> None:
    palace = palaces.open(flags={"dedup.near_threshold": 0.5})
    http = client_of(palace)
    short = similarity("big red foxes", "big red fox")
    assert 0.5 <= short < 1.0

    note(http, "big red foxes", room="short")
    _, eleven = note(http, "big red fox", room="short")
    note(http, "a big red fox", room="long")
    _, thirteen = note(http, "a big red foxes", room="long")

    assert duplicates(http, eleven["drawer"]["id"]) == []
    assert [verdict for _, verdict, _ in duplicates(http, thirteen["drawer"]["id"])] == ["near"]


def test_duplicates_of_an_unknown_drawer_is_a_404(client: TestClient) -> None:
    assert client.get("/api/drawers/no-such-drawer/duplicates").status_code == 404


def test_an_identical_diary_entry_of_another_agent_is_its_own_entry(client: TestClient) -> None:
    first = client.post("/api/diary", json={"agent": "claude", "content": "Done for today.", "wing": "w"})
    second = client.post("/api/diary", json={"agent": "codex", "content": "Done for today.", "wing": "w"})
    assert first.json()["drawer"]["source"]["agent"] == "claude"
    assert second.json()["drawer"]["source"]["agent"] == "codex"
    assert [
        e["content"] for e in client.get("/api/diary", params={"agent": "codex", "wing": "w"}).json()["entries"]
    ] == ["Done for today."]


def test_different_texts_in_another_script_are_not_normalized_copies(client: TestClient) -> None:
    note(client, "Развёртывание в пятницу.")
    _, other = note(client, "Совещание перенесли на вторник!")
    assert duplicates(client, other["drawer"]["id"]) == []


# --- mined evidence ---------------------------------------------------------------------------------


def test_mined_duplicates_are_stored_and_linked_not_merged(palaces: Palaces, tmp_path: Path) -> None:
    palace = palaces.open()
    text = "Ana Lopez decided to move the Atlas importer to Postgres."
    first_folder = write_notes(tmp_path / "laptop", {"atlas.md": ({"status": "final"}, text)})
    second_folder = write_notes(tmp_path / "backup", {"atlas.md": ({"status": "final"}, text)})

    first = mine(palace, "notes", first_folder, wing="w")
    assert linked(palace).result == {"checked": 1, "linked": 0, "links": 0}
    second = mine(palace, "notes", second_folder, wing="w")

    # The mine files and queues; the sweep that follows it links, and says how many.
    assert (first["created"], first["copies_pending"]) == (1, 1)
    assert (second["created"], second["copies_pending"]) == (1, 1)
    assert linked(palace).result == {"checked": 1, "linked": 1, "links": 1}
    http = client_of(palace)
    drawers = room(http)
    assert len(drawers) == 2 and drawers[0]["content"] == drawers[1]["content"]
    assert drawers[0]["source"]["origin"]["source_id"] != drawers[1]["source"]["origin"]["source_id"]
    assert duplicates(http, drawers[1]["id"]) == [(drawers[0]["id"], "exact", 1.0)]
    assert duplicates(http, drawers[0]["id"]) == [(drawers[1]["id"], "exact", 1.0)]


def test_mined_evidence_repeating_a_note_is_still_stored(palaces: Palaces, tmp_path: Path) -> None:
    palace = palaces.open()
    http = client_of(palace)
    _, manual = note(http, IMPORTER)
    folder = write_notes(tmp_path / "notes", {"importer.md": ({}, IMPORTER)})

    result = mine(palace, "notes", folder, wing="w")

    assert result["created"] == 1 and linked(palace).result == {"checked": 1, "linked": 1, "links": 1}
    mined = next(d for d in room(http) if d["id"] != manual["drawer"]["id"])
    assert [other for other, _, _ in duplicates(http, mined["id"])] == [manual["drawer"]["id"]]


def test_the_copies_sweep_links_exactly_the_planted_copies(palaces: Palaces, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(4000)]
    texts = [" ".join(rng.choice(words, size=60)) for _ in range(24)]
    shifted = texts[2].split()
    shifted[30] = "changed"  # one word of sixty: similarity above 0.9
    halved = texts[3].split()[:30] + [f"other{i}" for i in range(30)]  # half replaced: not a copy
    planted = {
        "c-exact.md": texts[0],
        "c-normalized.md": texts[1].upper().replace(" ", ",  "),
        "c-near.md": " ".join(shifted),
        "c-far.md": " ".join(halved),
    }
    notes = {f"n{i:02d}.md": ({}, text) for i, text in enumerate(texts)}
    folder = write_notes(tmp_path / "notes", {**notes, **{name: ({}, text) for name, text in planted.items()}})
    palace = palaces.open()

    result = mine(palace, "notes", folder, wing="w")

    assert result["created"] == 28 and result["copies_pending"] == 28
    assert linked(palace).result == {"checked": 28, "linked": 3, "links": 3}
    http = client_of(palace)
    ids = {Path(d["source"]["origin"]["document"]).name: d["id"] for d in room(http)}
    named = {v: k for k, v in ids.items()}
    found = {
        (frozenset((name, named[other])), verdict)
        for name, drawer_id in ids.items()
        for other, verdict, _ in duplicates(http, drawer_id)
    }
    assert {pair for pair, _ in found} == {
        frozenset(("n00.md", "c-exact.md")),
        frozenset(("n01.md", "c-normalized.md")),
        frozenset(("n02.md", "c-near.md")),
    }
    assert {verdict for _, verdict in found} == {"exact", "normalized", "near"}


def test_a_queue_a_stop_left_is_linked_at_the_next_start(palaces: Palaces, tmp_path: Path) -> None:
    folder = write_notes(tmp_path / "a", {"one.md": ({}, IMPORTER)})
    again = write_notes(tmp_path / "b", {"one.md": ({}, IMPORTER)})
    palace = palaces.open()
    mine(palace, "notes", folder, wing="w")
    mine(palace, "notes", again, wing="w")
    linked(palace)
    http = client_of(palace)
    [first, second] = [d["id"] for d in room(http)]
    # What a daemon stopped mid-sweep leaves: a drawer queued, its links not written.
    with palace.store.near._write() as tx:  # undo the sweep's work, on the real file
        tx.run("DELETE FROM drawer_link")
    palace.store.near.add_keys([NearKeys(second)])
    assert palace.store.near.count_pending() == 1

    palace = palaces.reopen(palace)

    assert linked(palace).result == {"checked": 1, "linked": 1, "links": 1}
    assert duplicates(client_of(palace), second) == [(first, "exact", 1.0)]


# --- similarity ---------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_similarity_is_symmetric_and_in_the_unit_interval(a: str, b: str) -> None:
    assert similarity(a, b) == similarity(b, a)
    assert 0.0 <= similarity(a, b) <= 1.0
    assert similarity(a, a) == 1.0


def reference_signature(normal: str) -> list[int]:
    """MinHash as defined: for each (a, b), the least (a·h + b) mod (2³¹ − 1) over the text's distinct 5-gram hashes
    (plain `%` and `np.unique`, the formula stored signatures were made with)."""
    data = np.frombuffer(normal.encode("utf-8"), dtype=np.uint8).astype(np.uint64)
    prime = np.uint64((1 << 31) - 1)
    if len(data) < 5:
        hashes = np.array([zlib.crc32(data.tobytes()) % int(prime)], dtype=np.uint64)
    else:
        windows = data[: len(data) - 4]
        for offset in range(1, 5):
            windows = windows | (data[offset : len(data) - 4 + offset] << np.uint64(8 * offset))
        hashes = (np.unique(windows) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(33)
    return [int(v) for v in ((dedup._A[:, None] * hashes[None, :] + dedup._B[:, None]) % prime).min(axis=1)]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_signatures_are_the_minhash_formula_so_stored_ones_stay_comparable(text: str) -> None:
    normal = normalize_text(text)
    assert [int(v) for v in dedup.normal_signature(normal)] == reference_signature(normal)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_an_ascii_text_is_normalized_as_the_general_rule_does(text: str) -> None:
    """The byte-table path for ASCII gives what the Unicode rule gives: case-folded, `[\\W_]+` runs one space."""
    assert normalize_text(text) == re.sub(r"[\W_]+", " ", text.casefold()).strip()
