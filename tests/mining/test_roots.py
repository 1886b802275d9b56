"""What may be mined: inside `mining.roots` only, never a secret store unless a root names it (checked on request)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from repositories import one_commit_repository, run_git
from waiting import wait_until

from memcastle.connectors.builtin import builtin_connectors
from memcastle.connectors.registry import load_registry
from memcastle.errors import AccessDenied, NotFound
from memcastle.jobs.context import JobContext
from memcastle.mining.pipeline import MineLimits, MinePipeline
from memcastle.mining.roots import MiningRoots
from memcastle.model.requests import MineRequest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake = tmp_path / "home"
    (fake / ".ssh").mkdir(parents=True)
    (fake / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    (fake / ".aws" / "notes").mkdir(parents=True)
    (fake / "code" / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(fake))
    return fake


def test_the_home_directory_is_the_default_root(home: Path) -> None:
    MiningRoots().check(str(home / "code" / "project"))
    MiningRoots().check("~/code/project")


@pytest.mark.parametrize("locator", ["~/.ssh", "~/.ssh/id_ed25519", "~/.aws/notes", "/etc", "/proc/self"])
def test_secret_stores_and_system_folders_are_refused_naming_the_setting(home: Path, locator: str) -> None:
    with pytest.raises(AccessDenied) as refused:
        MiningRoots(["~", "/"]).check(locator)
    assert "mining.roots" in refused.value.help


def test_a_symlink_into_a_secret_store_is_refused(home: Path) -> None:
    (home / "code" / "keys").symlink_to(home / ".ssh")
    with pytest.raises(AccessDenied):
        MiningRoots().check(str(home / "code" / "keys"))


def test_a_root_that_names_a_store_lets_it_be_mined(home: Path) -> None:
    MiningRoots(["~", "~/.aws/notes"]).check("~/.aws/notes")
    with pytest.raises(AccessDenied):
        MiningRoots(["~", "~/.aws/notes"]).check("~/.ssh")


def test_outside_every_root_is_refused_and_a_missing_path_is_not_found(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(AccessDenied) as refused:
        MiningRoots().check(str(elsewhere))
    assert "outside the folders mining may read" in refused.value.message
    with pytest.raises(NotFound):
        MiningRoots().check(str(home / "code" / "nothing-here"))
    MiningRoots([str(elsewhere)]).check(str(elsewhere))


def test_a_refused_mine_is_an_answer_to_the_request_not_a_job(client: TestClient) -> None:
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    before = client.get("/api/jobs").json()["jobs"]
    answer = client.post("/api/mine", json={"connector": "directory", "locator": str(home / ".ssh")})
    assert answer.status_code == 403 and "mining.roots" in answer.json()["help"]
    missing = client.post("/api/mine", json={"connector": "notes", "locator": str(home / "no-such-folder")})
    assert missing.status_code == 404
    assert client.get("/api/jobs").json()["jobs"] == before


def test_a_folder_that_is_not_a_git_repository_is_refused_when_asked_for(client: TestClient) -> None:
    plain = Path(os.environ["HOME"]) / "not-a-repo"
    plain.mkdir(exist_ok=True)
    answer = client.post("/api/mine", json={"connector": "git", "locator": str(plain)})
    assert answer.status_code == 400
    assert answer.json()["field"] == "locator" and "not a git repository" in answer.json()["error"]


def test_the_home_folder_of_an_unknown_user_is_a_400_not_a_crash() -> None:
    from memcastle.errors import InvalidRequest
    from memcastle.mining.roots import MiningRoots

    with pytest.raises(InvalidRequest) as refused:
        MiningRoots().check("~nosuchuser\u0090/notes")
    assert refused.value.field == "locator" and "unknown user" in refused.value.message


# --- the holes an attack found: the check is on what is read, never on the locator's syntax ---------------------


def test_a_scheme_in_the_locator_does_not_skip_the_check(client: TestClient) -> None:
    """`<home>/.ssh/x://..` resolves to `~/.ssh`: it used to pass as "not a local path" and mine the keys."""
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "config").write_text("Host prod\n  IdentityFile ~/.ssh/prod\n")
    for connector in ("directory", "notes", "git", "chatgpt", "claude", "codex"):
        answer = client.post("/api/mine", json={"connector": connector, "locator": f"{home}/.ssh/x://.."})
        assert answer.status_code == 403, (connector, answer.json())
        assert ".ssh" in answer.json()["error"]
    miner = {"name": "keys", "connector": "directory", "locator": f"{home}/.ssh/x://.."}
    assert client.post("/api/miners", json=miner).status_code == 403
    assert client.get("/api/jobs").json()["jobs"] == []


@pytest.mark.parametrize(
    "locator", ["", "   ", ".", "notes", "./notes", "x://..", "file:///etc", "https://example.com"]
)
def test_empty_and_relative_locators_are_refused_naming_the_locator(client: TestClient, locator: str) -> None:
    """An empty locator used to mine the daemon's working folder."""
    for connector in ("directory", "notes", "git", "chatgpt"):
        answer = client.post("/api/mine", json={"connector": connector, "locator": locator})
        assert answer.status_code == 400, (connector, locator, answer.json())
        assert answer.json()["field"] == "locator"
    assert client.get("/api/jobs").json()["jobs"] == []


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A folder outside the suite's home, so outside the default `mining.roots`."""
    with tempfile.TemporaryDirectory(prefix="memcastle-outside-") as folder:
        yield Path(folder).resolve()


def test_a_git_file_pointing_outside_the_roots_is_not_followed(client: TestClient, elsewhere: Path) -> None:
    """A work tree inside the roots whose `.git` file names a git folder outside them: its commits were mined."""
    home = Path(os.environ["HOME"])
    outside = one_commit_repository(elsewhere / "repo", "outside-commit-marker")
    tree = home / "worktree-probe"
    tree.mkdir(exist_ok=True)
    (tree / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    answer = client.post("/api/mine", json={"connector": "git", "locator": str(tree)})
    assert answer.status_code == 403 and str(outside) in answer.json()["error"]

    # The directory connector reads the branch and remote from it: it does not follow it either.
    (tree / "readme.txt").write_text("a readme\n")
    job = client.post("/api/mine", json={"connector": "directory", "locator": str(tree), "wing": "wt"}).json()["job"]
    done = _finished(client, job["id"])
    assert done["status"] == "completed" and done["result"]["created"] == 1
    drawers = client.get("/api/drawers", params={"wing": "wt"}).json()["drawers"]
    assert "git" not in drawers[0]["source"]["origin"]["metadata"]


def test_a_repository_borrowing_objects_from_outside_the_roots_is_refused(client: TestClient, elsewhere: Path) -> None:
    home = Path(os.environ["HOME"])
    outside = one_commit_repository(elsewhere / "shared", "borrowed-commit-marker")
    borrower = home / "borrower-probe"
    run_git(home, "clone", "-q", "--shared", str(outside), str(borrower))
    assert (borrower / ".git" / "objects" / "info" / "alternates").is_file()
    answer = client.post("/api/mine", json={"connector": "git", "locator": str(borrower)})
    assert answer.status_code == 403 and "outside the folders mining may read" in answer.json()["error"]


def test_a_folder_swapped_for_a_link_outside_after_the_request_is_refused_when_the_job_runs(
    palace: Any, elsewhere: Path
) -> None:
    """The check runs again as the job starts: what was inside when asked for may be a link elsewhere by then."""
    home = Path(os.environ["HOME"])
    outside = elsewhere / "notes"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\nswapped-folder-marker\n")
    folder = home / "swap-probe"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nordinary\n")
    palace.pool.drain(5.0)  # no worker takes the job: it is run below, once the folder is swapped
    job = palace.services.mining.submit_mine(MineRequest("notes", str(folder), {}, wing="swap")).job
    (folder / "a.md").unlink()
    folder.rmdir()
    folder.symlink_to(outside)

    claimed = palace.store.jobs.claim_next_job("probe", 60.0, ["mine"])
    assert claimed is not None and claimed.id == job.id
    roots = MiningRoots()
    pipeline = MinePipeline(
        palace.store,
        load_registry(builtin_connectors(max_file_bytes=1 << 20), access=roots),
        MineLimits(6000),
        roots=roots,
    )
    with pytest.raises(AccessDenied) as refused:
        pipeline.run(JobContext(palace.store.jobs, claimed, "probe", 60.0, lambda: False))
    assert str(outside) in refused.value.message
    assert not palace.services.drawers.list_drawers("swap", None, 10, None).items


def _finished(client: TestClient, job_id: str) -> dict[str, Any]:
    return dict(
        wait_until(
            lambda: (job := client.get(f"/api/jobs/{job_id}").json())["status"] in ("completed", "failed") and job,
            what=f"job {job_id}",
        )
    )


# --- a hard link has no path that says where its data lives (ADR 0050) ----------------------------------------------


def _linked_folder(name: str) -> tuple[Path, Path]:
    """A folder inside the roots holding an ordinary note and a hard link to a key under ~/.ssh."""
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    key = home / ".ssh" / f"{name}-key"
    key.write_text("hardlinked-secret-marker deploy passphrase\n")
    folder = home / name
    folder.mkdir()
    (folder / "plain.md").write_text("# Plain\nan ordinary note\n")
    os.link(key, folder / "key.md")
    return folder, key


@pytest.mark.parametrize("connector", ["directory", "notes"])
def test_a_hard_link_to_a_file_under_ssh_is_skipped_with_a_reason(client: TestClient, connector: str) -> None:
    folder, _ = _linked_folder(f"hardlink-{connector}")
    job = client.post("/api/mine", json={"connector": connector, "locator": str(folder), "wing": "hl"}).json()["job"]
    done = _finished(client, job["id"])
    assert done["status"] == "completed" and done["result"]["created"] == 1, done["result"]
    reasons = json.dumps(done["result"])
    assert "hard link (2 names)" in reasons and "mining.hard_links" in reasons
    found = client.post("/api/search", json={"query": "hardlinked-secret-marker", "ranking": "lexical"}).json()
    assert found["hits"] == []


def test_a_hard_link_in_a_session_log_folder_is_skipped(tmp_path: Path) -> None:
    from memcastle.connectors.contract import SkipDocument
    from memcastle.connectors.transcript import read_jsonl

    original = tmp_path / "a.jsonl"
    original.write_text('{"type": "user"}\n')
    os.link(original, tmp_path / "b.jsonl")
    with pytest.raises(SkipDocument, match="hard link"):
        read_jsonl(tmp_path / "b.jsonl")
    assert read_jsonl(tmp_path / "b.jsonl", hard_links=True).records == [(1, {"type": "user"})]


def test_the_setting_lets_hard_links_be_mined(tmp_path: Path) -> None:
    from clocks import DistinctClock

    from memcastle.app import build
    from memcastle.config import load_settings

    folder, _ = _linked_folder("hardlink-allowed")
    settings = load_settings(
        flags={"palace": str(tmp_path / "p"), "embeddings.provider": "none", "mining.hard_links": True},
        env={},
        config_file=None,
    )
    palace = build(settings, now=DistinctClock())
    palace.start()
    try:
        job = palace.services.mining.submit_mine(MineRequest("notes", str(folder), {}, wing="hl")).job
        done = wait_until(
            lambda: (j := palace.services.jobs.get_job(job.id)).status.value in ("completed", "failed") and j,
            what="the mine",
        )
        assert done.result["created"] == 2, done.result
    finally:
        palace.stop()
