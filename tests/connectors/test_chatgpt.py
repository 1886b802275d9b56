"""The chatgpt connector, driven through discover → read → normalize over a ChatGPT data export."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from memcastle.connectors.chatgpt import ChatGPTConnector
from memcastle.connectors.contract import (
    Candidate,
    Connector,
    RawDocument,
    SkipDocument,
    SourceSpec,
    identify_source,
    revision_of,
)
from memcastle.errors import InvalidRequest

FIXTURE = Path(__file__).parent.parent / "fixtures" / "chatgpt" / "conversations.json"
PYTEST = "67a1f0c2-8e34-800a-9b1d-3f6c2a7e5d10"
CREPES = "6812b7e4-1c9a-8003-a2f0-5b7d9e1c4a22"
BROKEN = "6820aa00-3b1c-8000-9d2e-000000000bad"


@pytest.fixture
def export(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.json"
    shutil.copy(FIXTURE, path)
    return path


def read_all(locator: Path, **options: str) -> dict[str, RawDocument]:
    connector = ChatGPTConnector()
    source = SourceSpec(str(locator), options)
    documents = {}
    for candidate in connector.discover(source, None):
        try:
            documents[candidate.external_id] = connector.read(source, candidate)
        except SkipDocument:
            continue
    return documents


def zip_export(folder: Path, members: dict[str, bytes]) -> Path:
    path = folder / "7f3c2a1b9e8d-2025-06-02-09-41-17.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_connector_satisfies_the_protocol_and_declares_only_since(export: Path) -> None:
    connector = ChatGPTConnector()
    assert isinstance(connector, Connector)
    assert connector.name == "chatgpt" and connector.source_kind == "transcript"
    assert set(connector.options) == {"since"} and not connector.options["since"].identity
    assert connector.identify(SourceSpec(str(export), {"since": "2025-01-01"})) == identify_source(
        "chatgpt", str(export.resolve()), {}
    )
    assert connector.default_wing(SourceSpec(str(export))) == "chatgpt"


def test_discover_yields_one_candidate_per_conversation_sorted_by_id(export: Path) -> None:
    candidates = ChatGPTConnector().discover(SourceSpec(str(export)), None)
    assert [c.external_id for c in candidates] == [PYTEST, CREPES, BROKEN]
    assert all(c.cursor_after is None for c in candidates)


def test_metadata_snapshots_the_conversation(export: Path) -> None:
    raw = read_all(export)[PYTEST]
    assert raw.metadata == {
        "conversation_id": PYTEST,
        "title": "Flaky pytest fixture",
        "model": "gpt-4o",
        "create_time": "2025-02-03T16:26:40.123456Z",
    }
    assert raw.occurred_at == "2025-02-03T16:26:40.123456Z"
    assert raw.uri == f"chatgpt://conversation/{PYTEST}"
    assert raw.title == "Flaky pytest fixture"


def test_the_current_node_branch_is_followed_and_abandoned_branches_are_absent(export: Path) -> None:
    body = read_all(export)[PYTEST].body
    assert "ABANDONED_BRANCH_SENTINEL" not in body
    assert 'Assistant: Because the fixture is declared with `scope="module"`' in body


def test_images_attachments_and_tool_calls_become_short_markers(export: Path) -> None:
    document = ChatGPTConnector().normalize(read_all(export)[PYTEST])
    assert document.segments == (
        "User: Why does my pytest fixture leak state between tests?",
        'Assistant: Because the fixture is declared with `scope="module"`: every test in the module shares one '
        "instance, so a test that mutates it changes what the next test sees. Use the default function scope, "
        "or return a fresh copy.",
        "User: [image]\n\nHere is the traceback I get now — and could you count the lines of log.txt?"
        "\n\n[attachment: log.txt]",
        "[tool: python — lines = open('/mnt/data/log.txt').read().splitlines() len(lines)]",
        "Assistant: The log has 1,289 lines. The traceback shows `KeyError: 'user'` raised in teardown, which "
        "confirms the shared module-scoped fixture.",
    )
    assert "TOOL_OUTPUT_SENTINEL" not in "\n\n".join(document.segments)
    assert document.kind == "transcript" and document.room == "sessions"
    assert document.name == "Flaky pytest fixture" and document.uri == f"chatgpt://conversation/{PYTEST}"


def test_system_hidden_context_and_reasoning_are_dropped(export: Path) -> None:
    raw = read_all(export)[CREPES]
    assert ChatGPTConnector().normalize(raw).segments == (
        "User: Donne-moi une recette de crêpes pour 4 personnes 🥞",
        "Assistant: Pour 4 personnes : 250 g de farine, 4 œufs, 50 cl de lait, 1 pincée de sel et 50 g de beurre "
        "fondu. Laisse reposer la pâte 1 h, puis fais cuire à feu moyen.",
    )
    assert "REASONING_SENTINEL" not in raw.body and "Réflexion" not in raw.body and "Lyon" not in raw.body
    assert raw.title == "Recette de crêpes 🥞" and raw.metadata["model"] == "o3"


def test_a_malformed_conversation_is_skipped_by_read(export: Path) -> None:
    connector = ChatGPTConnector()
    source = SourceSpec(str(export))
    broken = next(c for c in connector.discover(source, None) if c.external_id == BROKEN)
    with pytest.raises(SkipDocument, match="no message mapping"):
        connector.read(source, broken)


def test_a_conversation_without_an_id_is_listed_and_then_refused(export: Path) -> None:
    conversations = json.loads(export.read_text(encoding="utf-8"))
    del conversations[1]["id"], conversations[1]["conversation_id"]
    export.write_text(json.dumps(conversations), encoding="utf-8")
    connector = ChatGPTConnector()
    source = SourceSpec(str(export))
    nameless = next(c for c in connector.discover(source, None) if c.external_id == "invalid-1")
    with pytest.raises(SkipDocument, match="has no id"):
        connector.read(source, nameless)


def test_read_without_a_discovery_hint_finds_the_conversation_in_the_export(export: Path) -> None:
    connector = ChatGPTConnector()
    raw = connector.read(SourceSpec(str(export)), Candidate(CREPES))
    assert raw.metadata["conversation_id"] == CREPES
    with pytest.raises(SkipDocument, match="not in the export"):
        connector.read(SourceSpec(str(export)), Candidate("00000000-0000-0000-0000-000000000000"))


def test_the_export_zip_and_its_folder_read_like_conversations_json(export: Path, tmp_path: Path) -> None:
    expected = {key: revision_of(raw) for key, raw in read_all(export).items()}
    folder = tmp_path / "download"
    folder.mkdir()
    archive = zip_export(
        folder,
        {
            "conversations.json": export.read_bytes(),
            "user.json": b"{}",
            "chat.html": b"<html></html>",
            "__MACOSX/._conversations.json": b"\x00\x05\x16\x07",
        },
    )
    assert {key: revision_of(raw) for key, raw in read_all(archive).items()} == expected
    assert {key: revision_of(raw) for key, raw in read_all(folder).items()} == expected
    assert {key: revision_of(raw) for key, raw in read_all(export.parent).items()} == expected


def test_split_exports_are_read_together(export: Path, tmp_path: Path) -> None:
    conversations = json.loads(export.read_text(encoding="utf-8"))
    archive = zip_export(
        tmp_path,
        {
            "export/conversations-000.json": json.dumps(conversations[:1]).encode(),
            "export/conversations-001.json": json.dumps(conversations[1:]).encode(),
        },
    )
    assert sorted(read_all(archive)) == [PYTEST, CREPES]


def test_a_truncated_zip_cannot_be_discovered(export: Path, tmp_path: Path) -> None:
    archive = zip_export(tmp_path, {"conversations.json": export.read_bytes()})
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    with pytest.raises(SkipDocument, match="cannot read export archive"):
        ChatGPTConnector().discover(SourceSpec(str(archive)), None)


def test_an_unparsable_export_cannot_be_discovered(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text('[{"title": "cut off", "mapping": {', encoding="utf-8")
    with pytest.raises(SkipDocument, match="invalid JSON"):
        ChatGPTConnector().discover(SourceSpec(str(path)), None)
    path.write_text('{"not": "a list"}', encoding="utf-8")
    with pytest.raises(SkipDocument, match="expected a list"):
        ChatGPTConnector().discover(SourceSpec(str(path)), None)


def test_an_empty_locator_is_refused() -> None:
    with pytest.raises(InvalidRequest):
        ChatGPTConnector().discover(SourceSpec(""), None)


def test_since_leaves_out_conversations_last_updated_before_it(export: Path) -> None:
    candidates = ChatGPTConnector().discover(SourceSpec(str(export), {"since": "2025-03-01"}), None)
    assert [c.external_id for c in candidates] == [CREPES, BROKEN]


def test_revision_is_stable_across_reads_and_changes_with_a_new_message(export: Path) -> None:
    first, second = read_all(export)[CREPES], read_all(export)[CREPES]
    assert revision_of(first) == revision_of(second)
    conversations: list[dict[str, Any]] = json.loads(export.read_text(encoding="utf-8"))
    crepes = next(c for c in conversations if c["id"] == CREPES)
    leaf = crepes["current_node"]
    crepes["mapping"][leaf]["children"] = ["b0c1d2e3-f405-4617-8829-3a4b5c6d7e8f"]
    crepes["mapping"]["b0c1d2e3-f405-4617-8829-3a4b5c6d7e8f"] = {
        "id": "b0c1d2e3-f405-4617-8829-3a4b5c6d7e8f",
        "parent": leaf,
        "children": [],
        "message": {
            "id": "b0c1d2e3-f405-4617-8829-3a4b5c6d7e8f",
            "author": {"role": "user"},
            "create_time": 1746058000.0,
            "content": {"content_type": "text", "parts": ["Et sans gluten ?"]},
            "metadata": {},
            "recipient": "all",
        },
    }
    crepes["current_node"] = "b0c1d2e3-f405-4617-8829-3a4b5c6d7e8f"
    export.write_text(json.dumps(conversations, ensure_ascii=False), encoding="utf-8")
    grown = read_all(export)[CREPES]
    assert revision_of(grown) != revision_of(first)
    assert grown.body == first.body + "\n\nUser: Et sans gluten ?"


def test_non_ascii_export_paths_work(export: Path, tmp_path: Path) -> None:
    folder = tmp_path / "Téléchargements" / "エクスポート"
    folder.mkdir(parents=True)
    shutil.copy(export, folder / "conversations.json")
    assert sorted(read_all(folder)) == [PYTEST, CREPES]
