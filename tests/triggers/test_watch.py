"""The watch trigger on a real palace and real filesystem events: a file written into a watched folder is found by
search without any command; a burst of writes is at most two runs; editor, VCS and ignored files never count; the
folder may be deleted and recreated; miners added through the API watch too, and a disabled one stops."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import DistinctClock
from waiting import wait_until
from watchfiles import Change

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.model.requests import MinerDefinition
from memcastle.services import SearchRequest
from memcastle.triggers.watch import MineableFilter


def open_palace(tmp_path: Path, miners: str = "") -> Palace:
    config = tmp_path / "config.toml"
    config.write_text(miners, encoding="utf-8")
    settings = load_settings(
        flags={"palace": str(tmp_path / "palace"), "embeddings.provider": "none", "mining.roots": [str(tmp_path)]},
        env={},
        config_file=config,
    )
    palace = build(settings, now=DistinctClock())
    palace.start()
    return palace


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    folder.mkdir()
    return folder


@pytest.fixture
def watched(tmp_path: Path, vault: Path) -> Iterator[Palace]:
    palace = open_palace(
        tmp_path,
        f'[[miners]]\nname = "vault"\nconnector = "notes"\nlocator = "{vault}"\nwing = "vault"\n'
        'watch = true\ndebounce = "300ms"\n',
    )
    wait_until(lambda: palace.triggers and palace.triggers.describe().get("vault") == "watching", what="the watch")
    wait_until(lambda: settled(palace), what="the first run of a watching miner that never ran")
    yield palace
    palace.stop()


def found(palace: Palace, words: str) -> list[str]:
    hits = palace.services.search.search(SearchRequest(query=words, wing="vault", ranking="lexical")).hits
    return [hit.drawer.content for hit in hits]


def runs(palace: Palace) -> list[str]:
    return [j.status.value for j in palace.services.jobs.list_jobs(None, "mine", 200)]


def settled(palace: Palace) -> bool:
    return bool(runs(palace)) and all(s in ("completed", "failed") for s in runs(palace))


def test_a_file_written_into_a_watched_folder_is_searchable_without_any_command(watched: Palace, vault: Path) -> None:
    started = time.monotonic()
    (vault / "moat.md").write_text("# Moat\n\nThe moat freezes in January; skate on it.\n")
    wait_until(lambda: found(watched, "moat freezes"), timeout=10, what="the note to be mined")
    took = time.monotonic() - started
    assert took < 60, took
    miner = watched.services.miners.list_miners()[0]
    assert miner.last_run is not None and miner.last_run.trigger == "watch" and miner.triggers == ["watch"]


def test_fifty_rapid_writes_cause_at_most_two_runs(watched: Palace, vault: Path) -> None:
    before = len(runs(watched))
    for i in range(50):
        (vault / f"note-{i % 10}.md").write_text(f"# Note {i % 10}\n\nRevision {i} of the granary ledger.\n")
    wait_until(lambda: settled(watched) and len(found(watched, "granary ledger")) == 10, what="the writes mined")
    assert 1 <= len(runs(watched)) - before <= 2, runs(watched)


def test_a_burst_longer_than_the_debounce_is_one_run_once_the_folder_is_quiet(watched: Palace, vault: Path) -> None:
    """30 saves 0.1 s apart (3 s, ten times the 300 ms debounce) used to give 4 runs and 4 versions of the note."""
    before = len(runs(watched))
    for i in range(30):
        (vault / "ledger.md").write_text(f"# Ledger\n\nThe silo count, revision {i}.\n")
        time.sleep(0.1)  # the saves themselves are the subject: an editor saving as someone types
    wait_until(lambda: found(watched, "revision 29"), what="the last save mined")
    wait_until(lambda: settled(watched), what="the runs to finish")
    assert len(runs(watched)) - before == 1, runs(watched)
    history = watched.services.drawers.drawer_history(
        watched.services.search.search(SearchRequest(query="silo count", wing="vault", ranking="lexical"))
        .hits[0]
        .drawer.id
    )
    assert len(history) == 1, [d.content for d in history]


def test_editor_vcs_and_ignored_files_never_count(vault: Path) -> None:
    (vault / ".gitignore").write_text("drafts/\n*.tmp\n")
    keep = MineableFilter(vault)
    assert keep(Change.added, str(vault / "gate.md"))
    assert keep(Change.modified, str(vault / "towers" / "east.md"))
    for ignored in (
        ".gate.md.swp",  # vim
        "gate.md~",  # backups
        ".#gate.md",  # emacs locks
        ".git/index",
        ".obsidian/workspace.json",
        "node_modules/x/readme.md",
        "drafts/plan.md",
        "scratch.tmp",
        "__pycache__/x.pyc",
    ):
        assert not keep(Change.modified, str(vault / ignored)), ignored


def test_a_watched_folder_deleted_and_recreated_is_watched_again(watched: Palace, vault: Path) -> None:
    (vault / "first.md").write_text("# First\n\nThe drawbridge opens at dawn.\n")
    wait_until(lambda: found(watched, "drawbridge dawn"), what="the first note")
    shutil.rmtree(vault)
    wait_until(lambda: watched.triggers.describe()["vault"].startswith("waiting for"), what="the watch to wait")
    vault.mkdir()
    (vault / "second.md").write_text("# Second\n\nThe portcullis closes at dusk.\n")
    wait_until(lambda: found(watched, "portcullis dusk"), what="the recreated folder to be mined")
    (vault / "third.md").write_text("# Third\n\nThe well runs dry in August.\n")
    wait_until(lambda: found(watched, "well dry august"), what="a later write in the recreated folder")


def test_a_miner_added_through_the_api_watches_and_a_disabled_one_stops(tmp_path: Path, vault: Path) -> None:
    palace = open_palace(tmp_path)
    try:
        added = palace.services.miners.define(
            MinerDefinition(
                name="api-vault", connector="notes", locator=str(vault), wing="vault", watch=True, debounce="300ms"
            )  # fmt: skip
        )
        assert added.spec.origin == "api" and added.enabled
        wait_until(lambda: palace.triggers.describe().get("api-vault") == "watching", what="the new watch")
        wait_until(lambda: settled(palace), what="the first run a watching miner that never ran makes")
        (vault / "tower.md").write_text("# Tower\n\nThe tower bell rings at noon.\n")
        wait_until(lambda: found(palace, "bell noon"), what="the note to be mined")
        palace.services.miners.set_enabled("api-vault", False)
        assert "api-vault" not in palace.triggers.describe(), "a disabled miner is not watched"
    finally:
        palace.stop()
    again = open_palace(tmp_path)  # kept in the palace: back after a restart, still disabled
    try:
        (listed,) = again.services.miners.list_miners()
        assert listed.name == "api-vault" and not listed.enabled and listed.last_run and listed.last_run.result
        again.services.miners.set_enabled("api-vault", True)
        wait_until(lambda: again.triggers.describe().get("api-vault") == "watching", what="the watch to resume")
    finally:
        again.stop()


def test_a_configured_miner_outside_the_roots_is_not_watched(tmp_path: Path) -> None:
    """The roots bound what a watch looks at too: a watch lists every folder under what it watches."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    palace = open_palace(
        tmp_path, f'[[miners]]\nname = "away"\nconnector = "notes"\nlocator = "{outside}"\nwatch = true\n'
    )
    try:
        assert palace.triggers is not None
        state = palace.triggers.describe()["away"]
        assert state.startswith("not watched:") and "outside the folders mining may read" in state
        assert palace.services.jobs.list_jobs(None, "mine", 10) == []  # no first run either
    finally:
        palace.stop()
        shutil.rmtree(outside)
