"""The original's command-line surface: `note` with words, a file, an editor or standard input; `mine .`; a drawer
invalidated; wings and rooms made and shown."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any


def as_json(done: Any) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_note_takes_words_a_file_an_editor_or_standard_input(module_daemon: Any, tmp_path: Path) -> None:
    words = as_json(module_daemon.cli("note", "the", "drawbridge", "needs", "oil", "--wing", "cli-note"))
    assert words["drawer"]["content"] == "the drawbridge needs oil"

    page = tmp_path / "page.md"
    page.write_text("# Gate\n\nThe portcullis chain was replaced.\n", encoding="utf-8")
    filed = as_json(module_daemon.cli("note", "--file", str(page), "--wing", "cli-note"))
    assert filed["drawer"]["content"] == page.read_text(encoding="utf-8")

    piped = as_json(module_daemon.cli("note", "--wing", "cli-note", input="a note from a pipe\n"))
    assert piped["drawer"]["content"] == "a note from a pipe\n"

    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "written in the editor\\n" >> "$1"\n', encoding="utf-8")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    edited = as_json(
        module_daemon.cli(
            "note", "started", "--edit", "--wing", "cli-note", extra_env={"EDITOR": str(editor)}, input=""
        )
    )
    assert edited["drawer"]["content"] == "started\nwritten in the editor\n"

    empty = module_daemon.cli("note", "--wing", "cli-note", input="   \n")
    assert empty.returncode == 1 and "nothing to save" in empty.stderr
    both = module_daemon.cli("note", "words", "--file", str(page))
    assert both.returncode == 1 and "not several" in both.stderr


def test_mine_dot_mines_the_folder_with_the_directory_connector(module_daemon: Any, tmp_path: Path) -> None:
    project = tmp_path / "castle-project"
    project.mkdir()
    (project / "README.md").write_text("The castle project keeps its moat notes here.\n", encoding="utf-8")
    done = module_daemon.cli("mine", ".", "--wait", "--wing", "cli-mine-dot", cwd=project)
    result = as_json(done)["job"]
    assert result["params"]["connector"] == "directory" and result["params"]["locator"] == str(project.resolve())
    assert result["result"]["created"] == 1

    # A project file naming its source: `mine .` uses that connector (in a folder of its own: a folder one
    # files-reading connector mined is refused to another, tests/mcp/test_one_folder_one_source.py).
    notes = tmp_path / "castle-notes"
    (notes / ".config").mkdir(parents=True)
    (notes / "moat.md").write_text("# Moat\n\nThe moat was drained in May.\n", encoding="utf-8")
    (notes / ".config" / "memcastle.toml").write_text('[memcastle]\nsource = "notes"\n', encoding="utf-8")
    again = as_json(module_daemon.cli("mine", ".", "--wait", "--wing", "cli-mine-notes", cwd=notes))["job"]
    assert again["params"]["connector"] == "notes"
    same = module_daemon.cli("mine", ".", "--wait", "--wing", "cli-mine-dot", cwd=project)
    assert same.returncode == 0, "a folder goes on being mined by the connector that mined it"


def test_invalidate_and_places_from_the_command_line(module_daemon: Any) -> None:
    drawer = as_json(module_daemon.cli("note", "the moat is drained", "--wing", "cli-places", "--room", "moat"))
    closed = as_json(module_daemon.cli("drawer", "invalidate", drawer["drawer"]["id"], "--reason", "refilled in May"))
    assert closed["valid_to"] is not None
    missing = module_daemon.cli("drawer", "invalidate", drawer["drawer"]["id"])
    assert missing.returncode == 2 and "--reason" in missing.stderr

    made = as_json(module_daemon.cli("wing", "create", "cli-empty-wing"))
    assert made["created"] is True and made["drawers"] == 0
    room = as_json(module_daemon.cli("room", "create", "cli-empty-wing", "plans"))
    assert room["room"] == "plans"
    shown = as_json(module_daemon.cli("wing", "show", "cli-places"))
    assert (shown["drawers"], shown["versions"], shown["rooms"]) == (0, 1, 1)
    assert as_json(module_daemon.cli("room", "show", "cli-places", "moat"))["versions"] == 1
    unknown = module_daemon.cli("wing", "show", "no-such-wing")
    assert unknown.returncode == 1 and "no wing" in unknown.stderr
