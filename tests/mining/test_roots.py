"""What may be mined: inside `mining.roots` only, never a secret store unless a root names it (checked on request)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memcastle.errors import AccessDenied, NotFound
from memcastle.mining.roots import MiningRoots


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
