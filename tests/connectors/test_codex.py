"""The codex connector, driven through discover → read → normalize over Codex CLI rollouts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memcastle.connectors.codex import CodexConnector
from memcastle.connectors.contract import (
    Candidate,
    Connector,
    RawDocument,
    SkipDocument,
    SourceSpec,
    identify_source,
    revision_of,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "codex" / "sessions"
ROLLOUT = "2025/09/22/rollout-2025-09-22T14-03-11-0199713c-5b2e-7d31-9a4f-2f6c1e8b7a10.jsonl"
LEGACY = "2025/08/18/rollout-2025-08-18T01-16-13-c3c4b301-27c8-4c70-b6e4-46b99fdf0236.jsonl"


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES, root)
    return root


def read(root: Path, external_id: str = ROLLOUT) -> RawDocument:
    return CodexConnector().read(SourceSpec(str(root)), Candidate(external_id))


def test_connector_satisfies_the_protocol_and_declares_since_and_session() -> None:
    connector = CodexConnector()
    assert isinstance(connector, Connector)
    assert connector.name == "codex" and connector.source_kind == "transcript"
    assert set(connector.options) == {"since", "session"} and not connector.options["since"].identity
    assert not connector.options["session"].identity


def test_identity_is_the_absolute_folder_and_empty_means_codex_sessions(sessions: Path) -> None:
    connector = CodexConnector()
    assert connector.identify(SourceSpec(str(sessions), {"since": "2025-01-01"})) == identify_source(
        "codex", str(sessions.resolve()), {}
    )
    assert connector.identify(SourceSpec("")) == identify_source(
        "codex", str((Path.home() / ".codex" / "sessions").resolve()), {}
    )
    assert connector.default_wing(SourceSpec(str(sessions))) == "codex"


def test_discover_lists_rollouts_by_date_path(sessions: Path) -> None:
    (sessions / "2025" / "09" / "22" / "notes.txt").write_text("not a rollout")
    candidates = CodexConnector().discover(SourceSpec(str(sessions)), None)
    assert [c.external_id for c in candidates] == [LEGACY, ROLLOUT]
    assert all(c.cursor_after is None for c in candidates)


def test_metadata_comes_from_session_meta_and_turn_context(sessions: Path) -> None:
    raw = read(sessions)
    assert raw.metadata == {
        "session_id": "0199713c-5b2e-7d31-9a4f-2f6c1e8b7a10",
        "cwd": "/Users/mara/src/ledger",
        "cli_version": "0.39.0",
        "model": "gpt-5-codex",
        "originator": "codex_cli_rs",
        "first_timestamp": "2025-09-22T14:03:11.482000Z",
        "git_branch": "main",
        "git_commit": "9f1c2e4b7a3d5e6f8091a2b3c4d5e6f708192a3b",
    }
    assert raw.occurred_at == "2025-09-22T14:03:11.482000Z"
    assert raw.uri == str(sessions / ROLLOUT)
    assert raw.warnings == ()


def test_messages_are_kept_and_calls_become_one_line_markers(sessions: Path) -> None:
    document = CodexConnector().normalize(read(sessions))
    assert document.segments == (
        "User: Add a --since flag to `ledger report` that filters entries by date (e.g. 2025-01-01 → today).",
        '[tool: shell — rg -n "def report" src]',
        "Assistant: I'll add the flag in `cli.py` and filter in `report.py`.",
        "[tool: apply_patch — src/ledger/cli.py, tests/test_since.py]",
        "Assistant: Done. `ledger report --since 2025-01-01` now skips older entries; "
        "the new test is in `tests/test_since.py`.",
    )
    assert document.kind == "transcript" and document.room == "ledger"
    assert document.title == document.name and document.name.startswith("Add a --since flag")


def test_reasoning_tool_output_injected_context_and_events_are_dropped(sessions: Path) -> None:
    body = read(sessions).body
    for absent in (
        "REASONING_SENTINEL",
        "TOOL_OUTPUT_SENTINEL",
        "environment_context",
        "user_instructions",
        "make test",
        "token_count",
    ):
        assert absent not in body
    # event_msg repeats each message; the transcript holds it once.
    assert body.count("I'll add the flag in `cli.py`") == 1


def test_rollouts_without_the_envelope_are_read(sessions: Path) -> None:
    raw = read(sessions, LEGACY)
    assert raw.metadata["session_id"] == "c3c4b301-27c8-4c70-b6e4-46b99fdf0236"
    assert raw.metadata["cwd"] == "/home/mara/dotfiles"  # recovered from <environment_context>
    assert raw.metadata["cli_version"] is None and raw.metadata["model"] is None
    assert raw.occurred_at == "2025-08-18T01:16:13.522000Z"
    assert CodexConnector().normalize(raw).segments == (
        "User: Why is my zsh prompt slow to start?",
        "[tool: shell — zsh -i -c 'zmodload zsh/zprof; source ~/.zshrc; zprof' | head -20]",
        "Assistant: Most of the 0.8 s goes to `nvm` being loaded eagerly in `~/.zshrc`. "
        "Load it lazily (e.g. with `zsh-nvm`'s `NVM_LAZY_LOAD=true`).",
    )
    assert "REASONING_SENTINEL" not in raw.body and "TOOL_OUTPUT_SENTINEL" not in raw.body


def test_corrupt_lines_become_warnings_and_the_rest_is_read(sessions: Path) -> None:
    path = sessions / ROLLOUT
    lines = path.read_text(encoding="utf-8").splitlines()
    lines.insert(3, '{"timestamp":"2025-09-22T14:03:20.000Z","type":"response_item","payload":{"type":"mess')
    lines.insert(5, '{"timestamp":"2025-09-22T14:03:20.000Z","type":"response_item","payload":"oops"}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw = read(sessions)
    assert raw.warnings[0].startswith("line 4: invalid JSON (")
    assert raw.warnings[1] == "line 6: response_item line without a payload object"
    assert raw.body.startswith("User: Add a --since flag")
    assert raw.body.endswith("the new test is in `tests/test_since.py`.")


def test_revision_is_stable_across_reads_and_changes_when_a_line_is_appended(sessions: Path) -> None:
    first, second = read(sessions), read(sessions)
    assert revision_of(first) == revision_of(second)
    line = {
        "timestamp": "2025-09-22T14:05:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Also document the flag in the README."}],
        },
    }
    with (sessions / ROLLOUT).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    appended = read(sessions)
    assert revision_of(appended) != revision_of(first)
    assert appended.body == first.body + "\n\nUser: Also document the flag in the README."
    assert appended.metadata == first.metadata


def test_since_leaves_out_sessions_whose_last_activity_is_older(sessions: Path) -> None:
    connector = CodexConnector()
    recent = connector.discover(SourceSpec(str(sessions), {"since": "2025-09-01"}), None)
    assert [c.external_id for c in recent] == [ROLLOUT]
    # The last line, not the start of the session, is what counts.
    late = connector.discover(SourceSpec(str(sessions), {"since": "2025-09-22T14:03:50Z"}), None)
    assert [c.external_id for c in late] == [ROLLOUT]
    assert connector.discover(SourceSpec(str(sessions), {"since": "2025-09-23"}), None) == []


def test_non_ascii_paths_and_text_are_read(tmp_path: Path) -> None:
    day = tmp_path / "sessões" / "2025" / "10" / "03"
    day.mkdir(parents=True)
    lines = [
        {
            "timestamp": "2025-10-03T10:00:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": "0199a9b1-0000-7000-8000-00000000c0de",
                "timestamp": "2025-10-03T10:00:00.000Z",
                "cwd": "/home/zoë/プロジェクト",
                "originator": "codex_cli_rs",
                "cli_version": "0.44.0",
            },
        },
        {
            "timestamp": "2025-10-03T10:00:02.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Объясни ошибку"}],
            },
        },
    ]
    (day / "rollout-2025-10-03T10-00-00-0199a9b1-0000-7000-8000-00000000c0de.jsonl").write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
    )
    connector = CodexConnector()
    source = SourceSpec(str(tmp_path / "sessões"))
    [candidate] = connector.discover(source, None)
    document = connector.normalize(connector.read(source, candidate))
    assert document.segments == ("User: Объясни ошибку",)
    assert document.room == "プロジェクト"


def test_a_rollout_without_conversation_is_skipped(sessions: Path) -> None:
    path = sessions / "2025" / "09" / "22" / "rollout-2025-09-22T15-00-00-0199718a-0000-7000-8000-000000000000.jsonl"
    path.write_text(
        json.dumps(
            {
                "timestamp": "2025-09-22T15:00:00.000Z",
                "type": "session_meta",
                "payload": {"id": "0199718a-0000-7000-8000-000000000000", "cwd": "/tmp"},
            }
        )
        + "\n"
    )
    with pytest.raises(SkipDocument, match="no user or assistant messages"):
        read(sessions, path.relative_to(sessions).as_posix())
