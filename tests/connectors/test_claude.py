"""The claude connector, driven through discover → read → normalize over Claude Code session logs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memcastle.connectors.claude import ClaudeConnector
from memcastle.connectors.contract import (
    Candidate,
    Connector,
    RawDocument,
    SkipDocument,
    SourceSpec,
    identify_source,
    revision_of,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude" / "projects"
SESSION = "-home-alex-code-shop/4f35e220-c435-4cf7-b9b9-f40426042847.jsonl"
OLD_SESSION = "-home-alex-notes/0205f437-f816-4704-b6f3-9cf7b060888c.jsonl"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    shutil.copytree(FIXTURES, root)
    return root


def read(root: Path, external_id: str = SESSION, **options: str) -> RawDocument:
    return ClaudeConnector().read(SourceSpec(str(root), options), Candidate(external_id))


def test_connector_satisfies_the_protocol_and_declares_since_session_and_dir() -> None:
    connector = ClaudeConnector()
    assert isinstance(connector, Connector)
    assert connector.name == "claude" and connector.source_kind == "transcript"
    assert set(connector.options) == {"since", "session", "dir"}
    assert connector.options["dir"].identity, "one project's sessions are a source of their own"
    assert connector.options["since"].type == "date" and not connector.options["since"].identity
    assert not connector.options["session"].identity, "one session is a slice of the same source"


def test_identity_is_the_absolute_folder_and_ignores_since(projects: Path) -> None:
    connector = ClaudeConnector()
    plain = connector.identify(SourceSpec(str(projects)))
    assert plain == identify_source("claude", str(projects.resolve()), {})
    assert connector.identify(SourceSpec(str(projects), {"since": "2025-01-01"})) == plain
    assert connector.default_wing(SourceSpec(str(projects))) == "claude"


def test_empty_locator_means_the_claude_projects_folder() -> None:
    expected = identify_source("claude", str((Path.home() / ".claude" / "projects").resolve()), {})
    assert ClaudeConnector().identify(SourceSpec("")) == expected


def test_discover_lists_sessions_sorted_and_leaves_out_sub_agent_files(projects: Path) -> None:
    candidates = list(ClaudeConnector().discover(SourceSpec(str(projects)), None))
    assert [c.external_id for c in candidates] == [SESSION, OLD_SESSION]
    assert all(c.cursor_after is None for c in candidates)


def test_metadata_snapshots_the_session_context(projects: Path) -> None:
    raw = read(projects)
    assert raw.metadata == {
        "session_id": "4f35e220-c435-4cf7-b9b9-f40426042847",
        "project": "-home-alex-code-shop",
        "cwd": "/home/alex/code/shop",
        "git_branch": "fix/rounding",
        "version": "2.0.55",
        "model": "claude-sonnet-4-5-20250929",
        "first_timestamp": "2025-11-20T09:14:02.118000Z",
        "slug": "sparkling-wandering-kettle",
        "title": "Fix checkout rounding",
        "summary": "Checkout total rounding bug on CI",
    }
    assert raw.occurred_at == "2025-11-20T09:14:02.118000Z"
    assert raw.title == "Fix checkout rounding"
    assert raw.uri == str(projects / SESSION)
    assert raw.warnings == ()


def test_user_and_assistant_text_is_kept_verbatim(projects: Path) -> None:
    body = read(projects).body
    assert "User: /model sonnet" in body
    assert (
        "The checkout test fails on CI but passes locally — can you find out why? "
        "Le total affiché est 10,00 € au lieu de 9,99 €."
    ) in body
    assert "Assistant: I'll run the failing test first." in body
    assert "Great — please fix both and keep the public API.\n\n[image]" in body
    assert body.endswith("Assistant: Fixed both call sites and committed. All 14 tests pass now.")


def test_tool_calls_become_one_line_markers(projects: Path) -> None:
    markers = [line for line in read(projects).body.splitlines() if line.startswith("[tool: ")]
    assert markers[:4] == [
        "[tool: Bash — pytest tests/test_checkout.py -x -q]",
        "[tool: Read — /home/alex/code/shop/src/shop/checkout.py]",
        "[tool: Task — Find other float price sums]",
        "[tool: Edit — /home/alex/code/shop/src/shop/checkout.py]",
    ]
    commit = markers[4]
    assert commit.startswith("[tool: Bash — git add src/shop/checkout.py") and commit.endswith("…]")
    assert len(commit) <= 200


def test_thinking_tool_output_sidechains_and_harness_text_are_dropped(projects: Path) -> None:
    body = read(projects).body
    for absent in (
        "THINKING_SENTINEL",
        "TOOL_OUTPUT_SENTINEL",
        "SIDECHAIN_SENTINEL",
        "Caveat:",
        "local-command-stdout",
        "PostToolUse",
        "command-name",
        "trackedFileBackups",
    ):
        assert absent not in body


def test_normalize_gives_one_segment_per_turn_joining_to_the_body(projects: Path) -> None:
    connector = ClaudeConnector()
    raw = read(projects)
    document = connector.normalize(raw)
    assert "\n\n".join(document.segments) == raw.body
    assert [segment.split(" ", 1)[0] for segment in document.segments] == [
        "User:",
        "Assistant:",
        "[tool:",
        "Assistant:",
        "User:",
        "[tool:",
        "Assistant:",
    ]
    assert document.kind == "transcript" and document.tags == ()
    assert document.room == "shop"
    assert document.title == document.name == "Fix checkout rounding"
    assert document.uri == raw.uri


def test_session_without_title_is_named_by_its_first_prompt(projects: Path) -> None:
    raw = read(projects, OLD_SESSION)
    assert raw.title == "Please add a config file for the markdown linter"
    assert raw.metadata["git_branch"] is None and raw.metadata["version"] == "1.0.3"
    assert "[tool: Write — /home/alex/notes/.markdownlint.json]" in raw.body
    assert ClaudeConnector().normalize(raw).room == "notes"


def test_corrupt_lines_become_warnings_and_the_rest_is_read(projects: Path) -> None:
    path = projects / SESSION
    lines = path.read_text(encoding="utf-8").splitlines()
    lines.insert(6, '{"parentUuid":"5b0c1d7a","type":"user","message":{"role":')
    lines.insert(9, "[1, 2, 3]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw = read(projects)
    assert len(raw.warnings) == 2
    assert raw.warnings[0].startswith("line 7: invalid JSON (")
    assert raw.warnings[1] == "line 10: not a JSON object"
    assert "Assistant: Fixed both call sites and committed." in raw.body


def test_revision_is_stable_across_reads_and_changes_when_a_line_is_appended(projects: Path) -> None:
    first, second = read(projects), read(projects)
    assert first.revision is None and revision_of(first) == revision_of(second)
    entry = {
        "parentUuid": "046f7081-a2b3-44c5-86d7-f8091a2b3c4d",
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/alex/code/shop",
        "sessionId": "4f35e220-c435-4cf7-b9b9-f40426042847",
        "version": "2.0.55",
        "gitBranch": "fix/rounding",
        "type": "user",
        "message": {"role": "user", "content": "Thanks! Now update the changelog."},
        "uuid": "157a8192-b3c4-45d6-97e8-091a2b3c4d5e",
        "timestamp": "2025-11-20T09:18:00.000Z",
    }
    with (projects / SESSION).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    appended = read(projects)
    assert revision_of(appended) != revision_of(first)
    assert appended.body.startswith(first.body)
    assert appended.metadata == first.metadata


def test_since_leaves_out_sessions_whose_last_activity_is_older(projects: Path) -> None:
    connector = ClaudeConnector()
    recent = connector.discover(SourceSpec(str(projects), {"since": "2025-06-01"}), None)
    assert [c.external_id for c in recent] == [SESSION]
    assert connector.discover(SourceSpec(str(projects), {"since": "2025-11-21T00:00:00Z"}), None) == []


def test_dir_keeps_the_sessions_of_one_working_directory(projects: Path) -> None:
    connector = ClaudeConnector()
    shop = SourceSpec(str(projects), {"dir": "/home/alex/code/shop"})
    assert [c.external_id for c in connector.discover(shop, None)] == [SESSION]
    notes = SourceSpec(str(projects), {"dir": "/home/alex/notes/"})
    assert [c.external_id for c in connector.discover(notes, None)] == [OLD_SESSION]
    assert connector.discover(SourceSpec(str(projects), {"dir": "/home/alex"}), None) == []
    assert not connector.lists_everything(shop), "a removal cannot be told from a narrowed listing"
    assert connector.identify(shop) != connector.identify(SourceSpec(str(projects)))


def test_non_ascii_paths_and_text_are_read(tmp_path: Path) -> None:
    project = tmp_path / "données" / "-home-zoë-código"
    project.mkdir(parents=True)
    entries = [
        {
            "type": "user",
            "sessionId": "7e57a11d-0000-4000-8000-00000000c0de",
            "cwd": "/home/zoë/código",
            "timestamp": "2025-07-01T08:00:00.000Z",
            "uuid": "a",
            "parentUuid": None,
            "message": {"role": "user", "content": "Что делает этот скрипт? 日本語も"},
        },
        {
            "type": "assistant",
            "sessionId": "7e57a11d-0000-4000-8000-00000000c0de",
            "cwd": "/home/zoë/código",
            "timestamp": "2025-07-01T08:00:05.000Z",
            "uuid": "b",
            "parentUuid": "a",
            "message": {
                "role": "assistant",
                "model": "claude-opus-4-1-20250805",
                "content": [{"type": "text", "text": "Он переименовывает файлы — ファイル名を変更します。"}],
            },
        },
    ]
    (project / "sesión.jsonl").write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8"
    )
    connector = ClaudeConnector()
    source = SourceSpec(str(tmp_path / "données"))
    [candidate] = connector.discover(source, None)
    assert candidate.external_id == "-home-zoë-código/sesión.jsonl"
    raw = connector.read(source, candidate)
    assert "User: Что делает этот скрипт? 日本語も" in raw.body
    assert connector.normalize(raw).room == "código"


def test_shell_mode_input_is_kept_and_its_output_dropped_while_quoted_tags_stay_verbatim(tmp_path: Path) -> None:
    project = tmp_path / "-home-alex-x"
    project.mkdir()
    contents = [
        "<bash-input>git status</bash-input>",
        "<bash-stdout>On branch main\nnothing to commit</bash-stdout><bash-stderr></bash-stderr>",
        "Why does my log show <command-name>/clear</command-name> lines?",
    ]
    entries = [
        {
            "type": "user",
            "sessionId": "s",
            "cwd": "/home/alex/x",
            "timestamp": f"2025-07-01T08:00:0{i}.000Z",
            "message": {"role": "user", "content": content},
        }
        for i, content in enumerate(contents)
    ]
    (project / "s.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    raw = read(tmp_path, "-home-alex-x/s.jsonl")
    assert raw.body == ("User: !git status\n\nWhy does my log show <command-name>/clear</command-name> lines?")


def test_unreadable_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    project = tmp_path / "-home-alex-x"
    project.mkdir()
    (project / "bad.jsonl").write_bytes(b'{"type":"user","message":{"role":"user","content":"caf\xe9"}}\n')
    (project / "empty.jsonl").write_text('{"type":"summary","summary":"nothing yet","leafUuid":"x"}\n')
    connector = ClaudeConnector()
    source = SourceSpec(str(tmp_path))
    with pytest.raises(SkipDocument, match="UTF-8"):
        connector.read(source, Candidate("-home-alex-x/bad.jsonl"))
    with pytest.raises(SkipDocument, match="no user or assistant messages"):
        connector.read(source, Candidate("-home-alex-x/empty.jsonl"))
    with pytest.raises(SkipDocument, match="cannot read"):
        connector.read(source, Candidate("-home-alex-x/gone.jsonl"))


def test_a_missing_folder_cannot_be_discovered(tmp_path: Path) -> None:
    with pytest.raises(SkipDocument, match="not a folder"):
        ClaudeConnector().discover(SourceSpec(str(tmp_path / "nowhere")), None)
