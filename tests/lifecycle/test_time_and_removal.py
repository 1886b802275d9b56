"""Event time, record time and removal at source, through real mines: git history, a Claude Code session, notes
and edited files, asked through every temporal form and every ranking leg."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock
from knowledge.support import wait_for_job, wait_until, write_notes

from memcastle.app import Palace, build
from memcastle.clock import parse_instant, utc_now
from memcastle.config import load_settings
from memcastle.errors import InvalidRequest
from memcastle.model.requests import MineRequest
from memcastle.services import ForgetRequest, SearchRequest

EMBEDDER = str(Path(__file__).parents[1] / "search" / "embedder.py")
CLAUDE = Path(__file__).parents[1] / "fixtures" / "claude"
LEGS = ("lexical", "semantic", "hybrid")


@pytest.fixture
def palace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Palace]:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    flags = {
        "palace": str(tmp_path / "palace"),
        "embeddings.provider": "command",
        "embeddings.model": "bow",
        "embeddings.command": [sys.executable, EMBEDDER],
        "extraction.provider": "none",
        "mining.roots": [str(tmp_path), str(CLAUDE)],
    }
    built = build(load_settings(flags=flags, env={}), now=DistinctClock())
    built.start()
    yield built
    built.stop()


def mine(palace: Palace, connector: str, locator: Path, *, wing: str, **options: Any) -> dict[str, Any]:
    job = palace.services.mining.submit_mine(MineRequest(connector, str(locator), {}, wing=wing, **options)).job
    done = wait_for_job(palace, job.id, timeout=60)
    assert done.status.value == "completed", done.error
    return dict(done.result or {})


def embedded(palace: Palace) -> None:
    wait_until(lambda: palace.services.status.embedding_status().pending == 0, timeout=60, what="embeddings")


def found(palace: Palace, query: str, **when: Any) -> dict[str, set[str]]:
    """The documents each ranking leg finds for `query` at that time (one temporal form)."""
    out = {}
    for leg in LEGS:
        hits = palace.services.search.search(SearchRequest(query=query, ranking=leg, limit=20, **when)).hits
        out[leg] = {h.drawer.source.origin.document if h.drawer.source.origin else h.drawer.id for h in hits}
    return out


def every_leg(palace: Palace, query: str, document: str, **when: Any) -> bool:
    return all(document in documents for documents in found(palace, query, **when).values())


def no_leg(palace: Palace, query: str, document: str, **when: Any) -> bool:
    return all(document not in documents for documents in found(palace, query, **when).values())


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    done = subprocess.run(
        ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "init.defaultBranch=main",
         "-c", "commit.gpgsign=false", *args],
        cwd=repo, env=env, capture_output=True, check=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_time_filters_mean_when_things_happened(palace: Palace, tmp_path: Path) -> None:
    started = utc_now()
    repo = tmp_path / "castle"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "gate.txt").write_text("the portcullis winch was oiled\n")
    git(repo, "add", "gate.txt")
    git(repo, "commit", "-q", "-m", "Oil the portcullis winch", date="2020-03-01T10:00:00Z")
    commit = git(repo, "rev-parse", "HEAD")
    mine(palace, "git", repo, wing="castle")
    write_notes(tmp_path / "notes", {"moat.md": ({"date": "2023-03-01"}, "The moat eels were fed sardines.")})
    mine(palace, "notes", tmp_path / "notes", wing="notes")
    sessions = tmp_path / "claude"
    shutil.copytree(CLAUDE / "projects", sessions)
    mine(palace, "claude", sessions, wing="claude")
    embedded(palace)

    # A commit of 2020: found as of 2020 and in a window over it, not as of 2019, by every leg.
    assert every_leg(palace, "portcullis winch oiled", commit, as_of="2020-06-01")
    assert every_leg(palace, "portcullis winch oiled", commit, from_="2020-01-01", until="2021-01-01")
    assert no_leg(palace, "portcullis winch oiled", commit, as_of="2019-06-01")
    assert every_leg(palace, "portcullis winch oiled", commit)
    # A note dated 2023-03-01 by its front matter.
    assert every_leg(palace, "moat eels sardines", "moat.md", as_of="2023-03-02")
    assert no_leg(palace, "moat eels sardines", "moat.md", as_of="2023-02-28")
    # A Claude Code session of 2025-05-26 is found as of 2025-06-01.
    session = "-home-alex-notes/0205f437-f816-4704-b6f3-9cf7b060888c.jsonl"
    assert every_leg(palace, "markdown linter config file", session, as_of="2025-06-01")
    assert no_leg(palace, "markdown linter config file", session, as_of="2025-05-01")
    # The palace learnt all of it today: record time says so.
    drawer = next(d for d in palace.services.drawers.list_drawers("castle", None, 10, None).items)
    assert drawer.valid_from == "2020-03-01T10:00:00.000000Z" and drawer.created_at >= started
    assert no_leg(palace, "portcullis winch oiled", commit, known_at=started)
    assert every_leg(palace, "portcullis winch oiled", commit, known_at=utc_now())


def test_an_edited_file_closes_its_old_version_at_the_edit(palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    plan = project / "plan.txt"
    plan.write_text("the drawbridge opens at dawn\n")
    os.utime(plan, (1654041600, 1654041600))  # 2022-06-01
    mine(palace, "directory", project, wing="proj")
    before_edit = utc_now()
    plan.write_text("the drawbridge opens at dusk\n")
    os.utime(plan, (1661990400, 1661990400))  # 2022-09-01
    mine(palace, "directory", project, wing="proj")
    embedded(palace)
    old, new = palace.services.drawers.drawer_history(
        palace.services.drawers.list_drawers("proj", None, 10, None).items[0].id
    )
    assert (old.valid_from, old.valid_to, new.valid_from) == (
        "2022-06-01T00:00:00.000000Z",
        "2022-09-01T00:00:00.000000Z",
        "2022-09-01T00:00:00.000000Z",
    )
    assert old.closed_at is not None and old.closed_at > before_edit, "the close was learnt at the second mine"
    for leg in LEGS:
        summer = palace.services.search.search(SearchRequest(query="drawbridge opens", ranking=leg, as_of="2022-07-01"))
        autumn = palace.services.search.search(SearchRequest(query="drawbridge opens", ranking=leg, as_of="2022-10-01"))
        known = palace.services.search.search(
            SearchRequest(query="drawbridge opens", ranking=leg, known_at=before_edit)
        )
        assert [h.drawer.id for h in summer.hits] == [old.id], leg
        assert [h.drawer.id for h in autumn.hits] == [new.id], leg
        assert [h.drawer.id for h in known.hits] == [old.id], f"{leg}: the palace knew only the first version then"
    # A clock that goes backwards: the next revision opens when it was mined, never before the one it closes.
    plan.write_text("the drawbridge stays shut\n")
    os.utime(plan, (1577836800, 1577836800))  # 2020-01-01
    mine(palace, "directory", project, wing="proj")
    _, closed, latest = palace.services.drawers.drawer_history(new.id)
    assert closed.valid_to == latest.valid_from and latest.valid_from > new.valid_from
    assert latest.valid_from >= before_edit


def test_a_temporal_form_is_one_of_them(palace: Palace) -> None:
    with pytest.raises(InvalidRequest) as refused:
        palace.services.search.search(SearchRequest(query="x", known_at="2024-01-01", as_of="2024-01-01"))
    assert refused.value.field == "as_of,known_at"
    with pytest.raises(InvalidRequest) as bad:
        palace.services.search.search(SearchRequest(query="x", known_at="whenever"))
    assert bad.value.field == "known_at"


def test_a_file_deleted_at_the_source_closes_its_drawers_and_can_come_back(palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "keep.md").write_text("the armoury keeps its swords oiled")
    (project / "gone.md").write_text("the old granary stores barley")
    mine(palace, "directory", project, wing="proj")
    (project / "gone.md").unlink()
    kept = mine(palace, "directory", project, wing="proj", notice_removed=False)
    assert kept["removed"] == 0, "--keep-removed leaves it current"
    result = mine(palace, "directory", project, wing="proj")
    assert result["removed"] == 1 and result["removed_documents"] == 1 and result["unchanged"] == 1
    again = mine(palace, "directory", project, wing="proj")
    assert again["removed"] == 0, "noticed once"
    lexical = SearchRequest(query="granary barley", ranking="lexical")
    assert palace.services.search.search(lexical).hits == ()
    (closed,) = palace.services.search.search(
        SearchRequest(query="granary barley", ranking="lexical", include_historical=True)
    ).hits
    assert closed.drawer.closed_reason == "removed at source" and closed.drawer.valid_to is not None
    assert parse_instant(closed.drawer.valid_to) >= closed.drawer.valid_from
    assert [d.id for d in palace.services.drawers.drawer_history(closed.drawer.id)] == [closed.drawer.id]
    source_id = closed.drawer.source.origin.source_id if closed.drawer.source.origin else ""
    erased = palace.services.forgetting.forget(
        ForgetRequest(kind="document", source_id=source_id, document="gone.md"), dry_run=False
    )
    assert erased.counts["versions"] == 1, "what was removed at source can then be forgotten"
    # It comes back: mined as new, the closed version stays in history.
    (project / "gone.md").write_text("the old granary stores barley")
    back = mine(palace, "directory", project, wing="proj")
    assert back["created"] == 1
    assert len(palace.services.search.search(lexical).hits) == 1


def test_removal_is_refused_where_the_listing_is_not_complete(palace: Palace, tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest) as refused:
        transcripts = MineRequest("claude", str(CLAUDE / "projects"), {"since": "2025-01-01"}, notice_removed=True)
        palace.services.mining.submit_mine(transcripts)
    assert refused.value.field == "notice_removed"
    with pytest.raises(InvalidRequest):
        palace.services.mining.submit_mine(MineRequest("git", str(tmp_path), {}, notice_removed=True))


def test_a_record_time_window_is_what_the_palace_held_at_some_point_of_it(palace: Palace, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    plan = project / "plan.txt"
    plan.write_text("the keep stores grain\n")
    mine(palace, "directory", project, wing="proj")
    between = utc_now()
    plan.write_text("the keep stores arrows\n")
    mine(palace, "directory", project, wing="proj")
    after = utc_now()
    request = SearchRequest(query="keep stores", ranking="lexical", known_from=between, known_until=after)
    versions = {h.drawer.content.strip() for h in palace.services.search.search(request).hits}
    assert versions == {"the keep stores grain", "the keep stores arrows"}
    with pytest.raises(InvalidRequest) as half:
        palace.services.search.search(SearchRequest(query="keep", known_from=between))
    assert half.value.field == "known_until"
