"""The git connector against real throw-away repositories built with the git CLI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memcastle.connectors.contract import (
    Connector,
    RawDocument,
    SkipDocument,
    SourceSpec,
    revision_of,
)
from memcastle.connectors.git import GitConnector


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the tests' git nor the connector's may see the user's global or system config."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for variable in ("GIT_DIR", "GIT_WORK_TREE", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.delenv(variable, raising=False)


def git(repo: Path, *args: str, date: str | None = None) -> str:
    """Run git in `repo` as a fixed identity, optionally at a fixed author/committer date."""
    env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Ada Lovelace",
            "-c",
            "user.email=ada@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        env={**os.environ, **env},
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8").strip()


def commit_file(repo: Path, path: str, content: str, message: str, *, date: str | None = None) -> str:
    """Write `path`, commit it, and return the new commit's sha."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    git(repo, "add", "--", path)
    git(repo, "commit", "-q", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "castle"
    folder.mkdir()
    git(folder, "init", "-q")
    return folder


@pytest.fixture
def linear(repo: Path) -> tuple[Path, list[str]]:
    """Three commits on main, oldest first."""
    shas = [commit_file(repo, f"f{i}.txt", f"content {i}\n", f"Commit {i}") for i in range(3)]
    return repo, shas


def mine(connector: GitConnector, source: SourceSpec, cursor: str | None = None) -> list[RawDocument]:
    return [connector.read(source, candidate) for candidate in connector.discover(source, cursor)]


def test_connector_satisfies_the_protocol_and_declares_its_options() -> None:
    connector = GitConnector()
    assert isinstance(connector, Connector)
    assert (connector.name, connector.source_kind) == ("git", "commit")
    assert connector.options["branch"].identity and not connector.options["since"].identity
    assert connector.options["since"].type == "date"


def test_linear_history_is_discovered_oldest_first_with_sha_cursors(linear: tuple[Path, list[str]]) -> None:
    repo, shas = linear
    candidates = list(GitConnector().discover(SourceSpec(str(repo)), None))
    assert [c.external_id for c in candidates] == shas
    assert [c.cursor_after for c in candidates] == shas


def test_read_snapshots_commit_metadata(linear: tuple[Path, list[str]]) -> None:
    repo, shas = linear
    raw = mine(GitConnector(), SourceSpec(str(repo)))[-1]
    meta = raw.metadata
    assert meta["sha"] == shas[2] == raw.external_id
    assert meta["author"] == {"name": "Ada Lovelace", "email": "ada@example.com"}
    assert meta["committer"] == {"name": "Ada Lovelace", "email": "ada@example.com"}
    assert meta["branch"] == "main"
    assert meta["files"] == ["f2.txt"]
    assert meta["parents"] == [shas[1]]
    assert meta["merge"] is False
    assert meta["subject"] == "Commit 2"
    assert meta["committed_at"].endswith("Z") and raw.occurred_at == meta["committed_at"]
    assert "authored_at" in meta
    assert "remote" not in meta


def test_body_is_message_then_files_with_counts(repo: Path) -> None:
    commit_file(repo, "notes.md", "one\ntwo\n", "Add notes\n\nWhy: we keep notes.\nSecond line.")
    raw = mine(GitConnector(), SourceSpec(str(repo)))[0]
    assert raw.body == "Add notes\n\nWhy: we keep notes.\nSecond line.\n\nFiles:\nnotes.md (+2 -0)"


def test_normalize_splits_message_and_files_and_names_by_short_sha(linear: tuple[Path, list[str]]) -> None:
    repo, shas = linear
    connector = GitConnector()
    raw = mine(connector, SourceSpec(str(repo)))[0]
    doc = connector.normalize(raw)
    assert doc.kind == "commit" and doc.room == "commits" and doc.tags == ()
    assert doc.segments == ("Commit 0", "Files:\nf0.txt (+1 -0)")
    assert doc.title == "Commit 0"
    assert doc.name == f"{shas[0][:12]} Commit 0"
    assert doc.uri == f"git:{shas[0]}"


def test_long_subject_is_truncated_in_the_name_but_not_the_title(repo: Path) -> None:
    subject = "A very long subject " * 10
    commit_file(repo, "a.txt", "a\n", subject)
    connector = GitConnector()
    doc = connector.normalize(mine(connector, SourceSpec(str(repo)))[0])
    assert doc.title == subject.strip()
    assert doc.name is not None and len(doc.name) <= 12 + 1 + 60 and doc.name.endswith("…")


def test_normalize_segments_rejoin_to_the_body_even_with_tricky_messages(repo: Path) -> None:
    message = "Tricky\x1e\x1f separators\n\nFiles:\nnot really files\n\n%H %x00 {braces}"
    commit_file(repo, "a.txt", "a\n", message)
    connector = GitConnector()
    raw = mine(connector, SourceSpec(str(repo)))[0]
    assert raw.body.startswith(message + "\n\nFiles:\na.txt")
    assert "\n\n".join(connector.normalize(raw).segments) == raw.body


def test_empty_commit_has_no_files_block(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    git(repo, "commit", "-q", "--allow-empty", "-m", "Nothing changed")
    connector = GitConnector()
    raw = mine(connector, SourceSpec(str(repo)))[-1]
    assert raw.metadata["files"] == []
    assert connector.normalize(raw).segments == ("Nothing changed",)


def test_merge_commit_lists_files_against_first_parent(repo: Path) -> None:
    base = commit_file(repo, "base.txt", "base\n", "Base")
    git(repo, "checkout", "-q", "-b", "feature")
    commit_file(repo, "feature.txt", "feature\n", "Feature work")
    feature_tip = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    main_tip = commit_file(repo, "main.txt", "main\n", "Main work")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    docs = mine(GitConnector(), SourceSpec(str(repo)))
    assert docs[0].external_id == base and len(docs) == 4
    merge = docs[-1].metadata
    assert merge["merge"] is True
    assert merge["parents"] == [main_tip, feature_tip]
    assert merge["files"] == ["feature.txt"]
    assert merge["subject"] == "Merge feature"


def test_topological_order_puts_parents_before_children(repo: Path) -> None:
    commit_file(repo, "base.txt", "base\n", "Base", date="2020-01-01T00:00:00Z")
    git(repo, "checkout", "-q", "-b", "feature")
    # Committed "earlier" than its parent: clock skew must not reorder history.
    commit_file(repo, "feature.txt", "f\n", "Skewed", date="2019-01-01T00:00:00Z")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge", "feature", date="2020-02-01T00:00:00Z")
    docs = mine(GitConnector(), SourceSpec(str(repo)))
    position = {raw.external_id: index for index, raw in enumerate(docs)}
    for raw in docs:
        assert all(position[parent] < position[raw.external_id] for parent in raw.metadata["parents"])


def test_non_ascii_paths_and_messages_survive_intact(repo: Path) -> None:
    commit_file(repo, "dossier/résumé 日本.txt", "naïve\n", "Ajouté le résumé — 日本語 ✓")
    connector = GitConnector()
    raw = mine(connector, SourceSpec(str(repo)))[0]
    assert raw.metadata["files"] == ["dossier/résumé 日本.txt"]
    assert raw.metadata["subject"] == "Ajouté le résumé — 日本語 ✓"
    assert "dossier/résumé 日本.txt (+1 -0)" in raw.body
    assert raw.warnings == ()


def test_paths_with_tabs_and_quotes_are_not_quoted(repo: Path) -> None:
    commit_file(repo, 'odd\t"name".txt', "x\n", "Odd name")
    raw = mine(GitConnector(), SourceSpec(str(repo)))[0]
    assert raw.metadata["files"] == ['odd\t"name".txt']


def test_binary_files_are_listed_without_counts(repo: Path) -> None:
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    git(repo, "add", "blob.bin")
    git(repo, "commit", "-q", "-m", "Binary")
    raw = mine(GitConnector(), SourceSpec(str(repo)))[0]
    assert raw.body.endswith("Files:\nblob.bin")


def test_cursor_resumes_after_the_last_filed_commit(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    connector = GitConnector()
    source = SourceSpec(str(repo))
    cursor = list(connector.discover(source, None))[-1].cursor_after
    newer = [commit_file(repo, "f3.txt", "new\n", "Commit 3"), commit_file(repo, "f4.txt", "new\n", "Commit 4")]
    assert [c.external_id for c in connector.discover(source, cursor)] == newer
    assert list(connector.discover(source, newer[-1])) == []


def test_rewritten_history_falls_back_to_everything(linear: tuple[Path, list[str]]) -> None:
    repo, shas = linear
    git(repo, "commit", "-q", "--amend", "-m", "Commit 2, reworded")
    rewritten = git(repo, "rev-parse", "HEAD")
    found = [c.external_id for c in GitConnector().discover(SourceSpec(str(repo)), shas[2])]
    assert found == [shas[0], shas[1], rewritten]


def test_unknown_or_malformed_cursor_falls_back_to_everything(linear: tuple[Path, list[str]]) -> None:
    repo, shas = linear
    connector = GitConnector()
    for cursor in ("0" * 40, "not-a-sha", "--all"):
        assert [c.external_id for c in connector.discover(SourceSpec(str(repo)), cursor)] == shas


def test_since_keeps_only_commits_committed_at_or_after_it(repo: Path) -> None:
    commit_file(repo, "a.txt", "a\n", "Old", date="2021-03-01T10:00:00Z")
    kept = [
        commit_file(repo, "b.txt", "b\n", "Boundary", date="2022-01-01T00:00:00Z"),
        commit_file(repo, "c.txt", "c\n", "New", date="2023-05-05T05:05:05Z"),
    ]
    source = SourceSpec(str(repo), {"since": "2022-01-01"})
    connector = GitConnector()
    assert [c.external_id for c in connector.discover(source, None)] == kept
    assert connector.read(source, connector.discover(source, None)[0]).metadata["committed_at"] == (
        "2022-01-01T00:00:00.000000Z"
    )


def test_since_does_not_change_identity_but_branch_does(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    connector = GitConnector()
    plain = connector.identify(SourceSpec(str(repo)))
    assert connector.identify(SourceSpec(str(repo), {"since": "2024-01-01"})) == plain
    assert connector.identify(SourceSpec(str(repo), {"branch": "feature"})) != plain


def test_identity_is_the_repository_root_whatever_subfolder_is_named(repo: Path) -> None:
    commit_file(repo, "sub/dir/a.txt", "a\n", "Nested")
    connector = GitConnector()
    assert connector.identify(SourceSpec(str(repo / "sub" / "dir"))) == connector.identify(SourceSpec(str(repo)))


def test_default_wing_is_the_repository_folder_or_the_project_setting(repo: Path) -> None:
    commit_file(repo, "sub/a.txt", "a\n", "Nested")
    connector = GitConnector()
    assert connector.default_wing(SourceSpec(str(repo / "sub"))) == "castle"
    (repo / ".config").mkdir()
    (repo / ".config" / "memcastle.toml").write_text('[memcastle]\nwing = "keep"\n', encoding="utf-8")
    assert connector.default_wing(SourceSpec(str(repo))) == "keep"


def test_branch_option_mines_that_branch_and_records_it(repo: Path) -> None:
    base = commit_file(repo, "base.txt", "base\n", "Base")
    git(repo, "checkout", "-q", "-b", "topic")
    topic = commit_file(repo, "topic.txt", "t\n", "Topic work")
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "main.txt", "m\n", "Main only")
    connector = GitConnector()
    source = SourceSpec(str(repo), {"branch": "topic"})
    docs = mine(connector, source)
    assert [raw.external_id for raw in docs] == [base, topic]
    assert {raw.metadata["branch"] for raw in docs} == {"topic"}


def test_default_branch_is_the_one_head_points_at(repo: Path) -> None:
    commit_file(repo, "a.txt", "a\n", "On main")
    git(repo, "checkout", "-q", "-b", "work")
    commit_file(repo, "b.txt", "b\n", "On work")
    docs = mine(GitConnector(), SourceSpec(str(repo)))
    assert len(docs) == 2 and docs[-1].metadata["branch"] == "work"


def test_detached_head_mines_head_without_a_branch(linear: tuple[Path, list[str]]) -> None:
    repo, shas = linear
    git(repo, "checkout", "-q", "--detach", shas[1])
    docs = mine(GitConnector(), SourceSpec(str(repo)))
    assert [raw.external_id for raw in docs] == shas[:2]
    assert "branch" not in docs[-1].metadata


def test_unknown_branch_is_skipped_with_a_reason(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    for branch in ("nope", "--all"):
        with pytest.raises(SkipDocument, match="branch"):
            GitConnector().discover(SourceSpec(str(repo), {"branch": branch}), None)


def test_remote_origin_is_recorded_without_credentials(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    git(repo, "remote", "add", "origin", "https://someone:s3cret@example.com/castle.git")
    raw = mine(GitConnector(), SourceSpec(str(repo)))[0]
    assert raw.metadata["remote"] == "https://example.com/castle.git"


def test_scp_style_remote_is_kept_as_is(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    git(repo, "remote", "add", "origin", "git@example.com:team/castle.git")
    raw = mine(GitConnector(), SourceSpec(str(repo)))[0]
    assert raw.metadata["remote"] == "git@example.com:team/castle.git"


def test_a_folder_that_is_not_a_repository_is_skipped(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    connector = GitConnector()
    for locator in (plain, tmp_path / "missing"):
        with pytest.raises(SkipDocument, match="not a git repository"):
            connector.discover(SourceSpec(str(locator)), None)
    assert connector.identify(SourceSpec(str(plain)))  # identity never needs a repository


def test_empty_repository_yields_nothing(repo: Path) -> None:
    assert list(GitConnector().discover(SourceSpec(str(repo)), None)) == []


def test_unreadable_commit_is_skipped(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    connector = GitConnector()
    source = SourceSpec(str(repo))
    candidate = connector.discover(source, None)[0]
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    for bogus in ("f" * 40, tree, "HEAD", "--output=/tmp/x"):
        with pytest.raises(SkipDocument):
            connector.read(source, type(candidate)(external_id=bogus, cursor_after=bogus))


def test_revision_is_stable_across_reads_and_instances(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    source = SourceSpec(str(repo))
    first = [revision_of(raw) for raw in mine(GitConnector(), source)]
    again = [revision_of(raw) for raw in mine(GitConnector(), source)]
    assert first == again and len(set(first)) == 3


def test_read_without_a_discovery_hint_gives_the_same_document(linear: tuple[Path, list[str]]) -> None:
    repo, _ = linear
    connector = GitConnector()
    source = SourceSpec(str(repo))
    candidate = connector.discover(source, None)[1]
    bare = type(candidate)(external_id=candidate.external_id, cursor_after=candidate.cursor_after)
    assert connector.read(source, bare) == connector.read(source, candidate)


def test_bare_repository_is_mined(linear: tuple[Path, list[str]], tmp_path: Path) -> None:
    repo, shas = linear
    bare = tmp_path / "castle.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    docs = mine(GitConnector(), SourceSpec(str(bare)))
    assert [raw.external_id for raw in docs] == shas
    assert docs[0].metadata["remote"] == str(repo)
