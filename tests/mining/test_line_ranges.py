"""Mined chunks record their lines in the document: files, notes after their front matter, commit messages; a chunk
that moves in its file is filed anew with its new lines; a redacted secret keeps the lines after it in place."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import DistinctClock
from test_pipeline import current_drawers, mine

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.connectors.secrets import Redactor


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[Palace]:
    settings = load_settings(flags={"palace": str(tmp_path / "palace"), "mining.chunk_chars": 400}, env={})
    opened = build(settings, now=DistinctClock())
    opened.start()
    yield opened
    opened.stop()


def source_lines(text: str, first: int, last: int) -> str:
    return "\n".join(text.split("\n")[first - 1 : last])


def code(count: int) -> str:
    blocks = [f"def function_{i}(value):\n    total = value * {i}\n    return total + {i}\n" for i in range(count)]
    return "\n".join(blocks)


def test_every_chunk_of_a_file_names_the_lines_it_holds(palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    text = code(40)
    (project / "module.py").write_text(text)
    mine(palace, "directory", project, wing="p")
    drawers = sorted(current_drawers(palace, "p"), key=lambda d: d.source.origin.chunk)
    assert len(drawers) > 5
    previous_last = 0
    for drawer in drawers:
        first, last = drawer.source.origin.lines
        assert first > previous_last, "chunks come in order and do not overlap"
        assert drawer.content.rstrip("\n") == source_lines(text, first, last).rstrip("\n")
        previous_last = last
    assert drawers[0].source.origin.lines[0] == 1
    assert drawers[-1].source.origin.lines[1] == len(text.rstrip("\n").split("\n"))


def test_a_note_counts_its_lines_from_the_top_of_the_file_past_its_front_matter(palace: Palace, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    body = "# Heading\n\nThe portcullis is lowered at dusk.\nIt is raised at dawn.\n"
    (notes / "gate.md").write_text("---\ntitle: Gate\ntags: [castle]\n---\n" + body)
    mine(palace, "notes", notes, wing="n")
    (drawer,) = current_drawers(palace, "n")
    assert drawer.source.origin.lines == (5, 8)
    file_lines = (notes / "gate.md").read_text().split("\n")
    assert file_lines[4] == "# Heading" and file_lines[7] == "It is raised at dawn."


def test_a_chunk_that_moves_in_its_file_is_filed_anew_with_its_new_lines(palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    module = project / "module.py"
    text = code(30)
    module.write_text(text)
    os.utime(module, (1_700_000_000, 1_700_000_000))
    mine(palace, "directory", project, wing="p")
    before = {d.content: d for d in current_drawers(palace, "p")}
    # Two lines inserted at the top: the later chunks keep their text but sit two lines lower.
    module.write_text("import math\nimport os\n" + text)
    os.utime(module, (1_700_000_000, 1_700_000_000))
    mine(palace, "directory", project, wing="p")
    after = current_drawers(palace, "p")
    moved = [d for d in after if d.content in before]
    assert moved, "some chunk kept its text"
    for drawer in moved:
        old = before[drawer.content]
        assert drawer.id != old.id, "its place in the file changed, so it is filed anew"
        assert drawer.source.origin.lines == (old.source.origin.lines[0] + 2, old.source.origin.lines[1] + 2)
        assert drawer.content.rstrip("\n") == source_lines(module.read_text(), *drawer.source.origin.lines)


def test_a_redacted_block_keeps_the_line_numbers_after_it() -> None:
    # A file holding a private key is never mined; a key pasted in a commit message or a transcript is redacted.
    key = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(["MIIEowIBAAKCAQEAx3k9" * 3] * 6)
        + "\n-----END RSA PRIVATE KEY-----"
    )
    text = "line one\n" + key + "\nthe line after the key\nand the last line\n"
    redacted = Redactor().text(text).text
    assert "MIIEowIBAAKCAQEA" not in redacted and "[redacted:private-key]" in redacted
    assert redacted.split("\n").index("the line after the key") == text.split("\n").index("the line after the key")


def test_a_commit_records_the_lines_of_its_message_and_file_list(palace: Palace, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}  # fmt: skip
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True, env=env)
    message = "Lower the drawbridge\n\nIt sticks in winter; grease it first."
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", message], check=True, env=env)
    mine(palace, "git", repo, wing="g")
    (job,) = palace.services.jobs.list_jobs("completed", "mine", 1)
    assert job.progress.message.endswith(" Lower the drawbridge"), "a commit's progress names it, not its bare hash"
    (drawer,) = current_drawers(palace, "g")
    first, last = drawer.source.origin.lines
    assert first == 1 and last == len(drawer.content.rstrip("\n").split("\n"))
