"""The shared mining pipeline through a real palace: revisions, supersession, snapshots, bad input."""

from __future__ import annotations

import os
import sqlite3
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.errors import UnknownOption
from memcastle.model import Job
from memcastle.model.requests import MineRequest
from memcastle.services import SearchRequest


@pytest.fixture
def mined_palace(tmp_path: Path) -> Iterator[Palace]:
    settings = load_settings(flags={"palace": str(tmp_path / "palace"), "mining.chunk_chars": 400}, env={})
    palace = build(settings, now=DistinctClock())
    palace.start()
    yield palace
    palace.stop()


def wait(palace: Palace, job: Job, timeout: float = 30) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = palace.services.jobs.get_job(job.id)
        if job.is_finished:
            return job
        time.sleep(0.02)
    raise AssertionError(f"job {job.id} did not finish: {job}")


def mine(palace: Palace, connector: str, locator: Path | str, **kwargs: Any) -> dict[str, Any]:
    job = palace.services.mining.submit_mine(
        MineRequest(connector, str(locator), kwargs.pop("options", {}), **kwargs)
    ).job
    done = wait(palace, job)
    assert done.status.value == "completed", done.error
    assert done.result is not None
    return dict(done.result)


def current_drawers(palace: Palace, wing: str) -> list[Any]:
    page = palace.services.drawers.list_drawers(wing, None, 200, None)
    return list(page.items)


def paragraphs(count: int, word: str) -> str:
    return "\n\n".join(f"{word} paragraph {i} " + "lorem ipsum dolor " * 12 for i in range(count))


def test_mining_the_same_source_twice_creates_nothing_the_second_time(mined_palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.md").write_text(paragraphs(5, "alpha"))
    (project / "b.py").write_text("print('hello')\n")
    first = mine(mined_palace, "directory", project)
    second = mine(mined_palace, "directory", project)
    assert first["created"] > 2 and first["documents"] == 2
    assert second["created"] == 0 and second["superseded"] == 0 and second["unchanged"] == 2


def test_editing_one_file_supersedes_only_its_changed_chunks(mined_palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    doc = project / "long.md"
    doc.write_text(paragraphs(6, "alpha"))
    (project / "other.md").write_text("unrelated text that stays")
    mine(mined_palace, "directory", project)
    before = {
        d.source.origin.chunk: d
        for d in current_drawers(mined_palace, "proj")
        if d.name != "other.md" and d.source.origin.document == "long.md"
    }
    parts = doc.read_text().split("\n\n")
    parts[-1] = parts[-1] + " EDITED"
    doc.write_text("\n\n".join(parts))
    os.utime(doc, (1_700_000_000, 1_700_000_000))
    result = mine(mined_palace, "directory", project)
    assert result["unchanged"] == 1  # other.md
    after = {
        d.source.origin.chunk: d for d in current_drawers(mined_palace, "proj") if d.source.origin.document == "long.md"
    }
    # mtime is part of the metadata snapshot, so every chunk gets a new snapshot; text changed only at the end.
    assert after.keys() == before.keys()
    assert after[max(after)].content.endswith("EDITED")
    for chunk, old in before.items():
        assert after[chunk].supersedes == old.id
        history = mined_palace.services.drawers.drawer_history(after[chunk].id)
        assert [h.id for h in history] == [old.id, after[chunk].id]


def test_unchanged_chunks_are_kept_when_only_text_at_the_end_changes(mined_palace: Palace, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "n.md"
    note.write_text(paragraphs(6, "beta"))
    os.utime(note, (1_700_000_000, 1_700_000_000))
    mine(mined_palace, "notes", notes, wing="n")
    before = {d.source.origin.chunk: d.id for d in current_drawers(mined_palace, "n")}
    note.write_text(note.read_text() + "\n\nA new closing paragraph.")
    os.utime(note, (1_700_000_000, 1_700_000_000))  # metadata unchanged: the notes snapshot has no mtime
    result = mine(mined_palace, "notes", notes, wing="n")
    after = {d.source.origin.chunk: d.id for d in current_drawers(mined_palace, "n")}
    kept = [c for c in before if before[c] == after.get(c)]
    assert len(kept) == len(before) - 1
    assert result["superseded"] + result["created"] >= 1


def test_a_metadata_only_change_supersedes_with_a_new_snapshot_and_the_old_one_stays_frozen(
    mined_palace: Palace, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "plan.md"
    note.write_text("---\nstatus: draft\nreview:\n  owner: ana\n---\nThe migration plan uses blue-green deploys.\n")
    mine(mined_palace, "notes", notes, wing="w")
    [old] = current_drawers(mined_palace, "w")
    assert old.source.origin.metadata["status"] == "draft"
    assert old.source.origin.metadata["review"] == {"owner": "ana"}
    between = old.created_at
    note.write_text("---\nstatus: final\nreview:\n  owner: ana\n---\nThe migration plan uses blue-green deploys.\n")
    result = mine(mined_palace, "notes", notes, wing="w")
    assert result["superseded"] == 1
    [new] = current_drawers(mined_palace, "w")
    assert new.supersedes == old.id and new.source.origin.metadata["status"] == "final"
    reread = mined_palace.services.drawers.get_drawer(old.id)
    assert reread.source.origin.metadata["status"] == "draft" and reread.valid_to is not None

    as_of = mined_palace.services.search.search(SearchRequest(query="blue-green", wing="w", as_of=between))
    assert [h.drawer.id for h in as_of.hits] == [old.id]
    historical = mined_palace.services.search.search(
        SearchRequest(query="blue-green", wing="w", include_historical=True)
    )
    assert {h.drawer.id for h in historical.hits} == {old.id, new.id}
    current = mined_palace.services.search.search(SearchRequest(query="blue-green", wing="w"))
    assert [h.drawer.id for h in current.hits] == [new.id]


def test_chunks_past_a_shrunken_end_are_invalidated(mined_palace: Palace, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "n.md"
    note.write_text(paragraphs(8, "gamma"))
    first = mine(mined_palace, "notes", notes, wing="g")
    note.write_text(paragraphs(1, "gamma"))
    result = mine(mined_palace, "notes", notes, wing="g")
    assert result["invalidated"] == first["created"] - 1
    assert len(current_drawers(mined_palace, "g")) == 1


def test_bad_input_is_skipped_with_a_reason_and_the_rest_is_mined(mined_palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "good.txt").write_text("good text survives")
    (project / "binary.bin").write_bytes(b"\x00\x01\x02binary")
    (project / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (project / "empty.txt").write_text("")
    (project / "huge.txt").write_text("x" * (3 * 1024 * 1024))
    locked = project / "locked.txt"
    locked.write_text("secret")
    locked.chmod(0)
    (project / "node_modules").mkdir()
    (project / "node_modules" / "dep.js").write_text("ignored")
    (project / ".hidden").mkdir()
    (project / ".hidden" / "x.txt").write_text("ignored")
    (project / "link.txt").symlink_to(project / "good.txt")
    result = mine(mined_palace, "directory", project)
    reasons = {item["document"]: item["reason"] for item in result["skipped_documents"]}
    assert reasons["binary.bin"] == "binary file"
    assert "UTF-8" in reasons["latin1.txt"]
    assert reasons["empty.txt"] == "empty file"
    assert "max_file_bytes" in reasons["huge.txt"]
    if os.geteuid() != 0:  # root reads anything
        assert reasons["locked.txt"] == "permission denied"
    names = {d.name for d in current_drawers(mined_palace, "proj")}
    assert "good.txt" in names
    assert not names & {"node_modules/dep.js", ".hidden/x.txt", "link.txt", "binary.bin"}


def test_an_undeclared_option_is_refused_with_the_accepted_ones(mined_palace: Palace, tmp_path: Path) -> None:
    with pytest.raises(UnknownOption) as caught:
        mined_palace.services.mining.submit_mine(MineRequest("git", str(tmp_path), {"colour": "blue"}))
    assert caught.value.accepted == ("branch", "since")
    assert "branch" in caught.value.message and caught.value.field == "options.colour"


def test_project_local_config_sets_the_default_wing_and_room(mined_palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "checkout-dir"
    (project / ".config").mkdir(parents=True)
    (project / ".config" / "memcastle.toml").write_text('[memcastle]\nwing = "castle"\nroom = "code"\n')
    (project / "main.py").write_text("def main():\n    return 42\n")
    mine(mined_palace, "directory", project)
    [drawer] = current_drawers(mined_palace, "castle")
    assert drawer.room == "code" and drawer.name == "main.py"


def test_directory_metadata_snapshot_has_path_size_mtime_and_git(mined_palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "répertoire"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    (project / ".git" / "config").write_text('[remote "origin"]\n\turl = https://user:tok@example.com/r.git\n')
    (project / "sub").mkdir()
    (project / "sub" / "naïve.txt").write_text("unicode path")
    mine(mined_palace, "directory", project, wing="d")
    [drawer] = current_drawers(mined_palace, "d")
    metadata = drawer.source.origin.metadata
    assert metadata["relative_path"] == "sub/naïve.txt" and metadata["extension"] == "txt"
    assert metadata["size"] == len("unicode path") and metadata["mtime"].endswith("Z")
    assert metadata["git"] == {"branch": "feature/x", "remote": "https://example.com/r.git"}


def test_chatgpt_truncated_zip_is_skipped_with_a_reason(mined_palace: Palace, tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", "[]" + " " * 5000)
    archive.write_bytes(archive.read_bytes()[:100])
    if "chatgpt" not in {c["name"] for c in mined_palace.services.mining.list_connectors()}:
        pytest.skip("chatgpt connector not registered")
    result = mine(mined_palace, "chatgpt", archive)
    assert result["skipped"] == 1 and result["skipped_documents"][0]["reason"]


def test_a_files_chunks_are_each_others_neighbours_and_a_one_chunk_file_has_none(
    mined_palace: Palace, tmp_path: Path
) -> None:
    """A chunk's full-text context is the end of the chunk before it and the start of the one after (ADR 0056);
    the files beside it in the folder are not its neighbours."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "long.md").write_text(paragraphs(3, "harbour"))  # three chunks at 400 characters
    (folder / "short.md").write_text("A lone note about the lighthouse.")
    mine(mined_palace, "directory", folder, wing="docs")
    with sqlite3.connect(mined_palace.settings.palace / "palace.sqlite3") as conn:
        rows = conn.execute(
            "SELECT d.content, v.context FROM drawer_indexed v JOIN drawer d ON d.seq = v.seq ORDER BY d.seq"
        ).fetchall()

    def context_of(start: str) -> str:
        (found,) = [context for content, context in rows if content.startswith(start)]
        return str(found)

    first, middle, last = (context_of(f"harbour paragraph {i}") for i in range(3))
    assert first.startswith("harbour paragraph 1") and "paragraph 0" not in first
    assert "paragraph 0" in middle and "harbour paragraph 2" in middle
    assert "paragraph 1" in last and "paragraph 2" not in last
    assert context_of("A lone note") == "", "a one-chunk file has no neighbours"
