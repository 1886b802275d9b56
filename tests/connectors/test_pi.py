"""The pi connector over session files written in Pi's documented format (version 3 header, message entries with
text, thinking and toolCall blocks, tool results, the user's bash executions, model changes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agent_logs import CONVERSATION, entry, write_session

from memcastle.connectors.contract import Candidate, Connector, SourceSpec
from memcastle.connectors.pi import PiConnector, session_folder_name

CWD = "/home/ada/atlas-app"
SESSION_ID = "0199a3c1-7d2e-7000-8000-4b1f2c3d4e5f"
OLD_ID = "0199a3c1-0000-7000-8000-000000000002"


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    write_session(root, CWD, SESSION_ID, CONVERSATION, "2026-03-02T09:00:00.000Z")
    old = write_session(root, "/home/ada/notes", OLD_ID,
                        [entry("message", 1, message={"role": "user", "content": "old question"})],
                        "2025-01-05T10:00:00.000Z")  # fmt: skip
    os.utime(old, (1_736_071_200, 1_736_071_200))  # last written on 2025-01-05, as an old session file is
    (root / "auth.json").write_text('{"token": "never read"}')  # Pi's credentials live above; never listed
    return root


def test_the_connector_declares_since_session_and_dir() -> None:
    connector = PiConnector()
    assert isinstance(connector, Connector)
    assert (connector.name, connector.source_kind) == ("pi", "transcript")
    assert set(connector.options) == {"since", "session", "dir"}


def test_a_session_is_read_as_its_conversation_with_markers(sessions: Path) -> None:
    connector = PiConnector()
    source = SourceSpec(str(sessions))
    found = sorted(c.external_id for c in connector.discover(source, None))
    assert found == [
        f"{session_folder_name(CWD)}/2026-03-02T09-00-00-000Z_{SESSION_ID}.jsonl",
        f"{session_folder_name('/home/ada/notes')}/2025-01-05T10-00-00-000Z_{OLD_ID}.jsonl",
    ]
    raw = connector.read(source, Candidate(found[0]))
    body = raw.body
    assert "Why does the deploy fail?" in body and "Let me read the deploy script." in body
    assert "[tool: read — scripts/deploy.sh]" in body and "[tool: bash — git status]" in body
    assert "Staging uses port 8443." in body and "And the staging host?" in body
    for left_out in ("private reasoning", "secret tool output", "extension chatter", "clean"):
        assert left_out not in body
    assert raw.metadata["session_id"] == SESSION_ID and raw.metadata["cwd"] == CWD
    assert raw.metadata["version"] == 3 and raw.metadata["model"] == "anthropic/claude-sonnet-4-5"
    assert raw.occurred_at == "2026-03-02T09:00:00.000000Z"  # the session's start, from its header
    document = connector.normalize(raw)
    assert document.room == "atlas-app" and document.kind == "transcript"


def test_dir_and_since_narrow_the_listing(sessions: Path) -> None:
    connector = PiConnector()
    one = SourceSpec(str(sessions), {"dir": CWD})
    assert [c.external_id.split("/")[0] for c in connector.discover(one, None)] == [session_folder_name(CWD)]
    assert not connector.lists_everything(one) and connector.lists_everything(SourceSpec(str(sessions)))
    recent = SourceSpec(str(sessions), {"since": "2026-01-01"})
    assert len(connector.discover(recent, None)) == 1


def test_the_folder_name_is_pis() -> None:
    assert session_folder_name("/home/ada/atlas-app") == "--home-ada-atlas-app--"
