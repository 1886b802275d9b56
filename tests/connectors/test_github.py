"""The github connector against a loopback server answering in GitHub's documented REST shapes — paginated lists
with `Link: rel="next"`, a repository's issues (pull requests among them), comments, reviews, review comments and
files; a 404 repository, a 401 token and a spent rate limit — mined through a real palace. Never the network."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from github_api import GitHubHandler
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.model.requests import MineRequest


def user(login: str) -> dict[str, Any]:
    return {"login": login, "id": hash(login) % 10_000, "type": "User"}


def issue(repo: str, number: int, title: str, updated: str, *, pull: bool = False, labels: tuple[str, ...] = (),
          body: str = "") -> dict[str, Any]:  # fmt: skip
    item: dict[str, Any] = {
        "number": number,
        "title": title,
        "state": "open",
        "user": user("octocat"),
        "labels": [{"id": i, "name": name, "color": "ededed"} for i, name in enumerate(labels)],
        "body": body or f"Body of {title}.",
        "created_at": "2026-01-05T10:00:00Z",
        "updated_at": updated,
        "closed_at": None,
        "html_url": f"https://github.com/{repo}/{'pull' if pull else 'issues'}/{number}",
        "comments": 1,
    }
    if pull:
        item["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}"}
    return item


class GitHub:
    """The state the loopback server answers from; tests change it between mines."""

    def __init__(self) -> None:
        self.repos = {
            "octo-org/atlas": {"full_name": "octo-org/atlas", "topics": ["memory", "search"]},
            "octo-org/atlas-docs": {"full_name": "octo-org/atlas-docs", "topics": ["docs"]},
            "octo-org/infra": {"full_name": "octo-org/infra", "topics": ["ops"]},
        }
        self.issues: dict[str, list[dict[str, Any]]] = {
            "octo-org/atlas": [
                issue("octo-org/atlas", 1, "Search misses CJK words", "2026-02-01T09:00:00Z", labels=("bug",)),
                issue(
                    "octo-org/atlas",
                    2,
                    "Add a trigram index",
                    "2026-02-02T09:00:00Z",
                    pull=True,
                    labels=("enhancement",),
                ),  # fmt: skip
                issue("octo-org/atlas", 3, "Docs typo", "2026-02-03T09:00:00Z", labels=("docs",)),
            ],
            "octo-org/atlas-docs": [issue("octo-org/atlas-docs", 7, "Write the tutorial", "2026-02-04T09:00:00Z")],
            "octo-org/infra": [issue("octo-org/infra", 9, "Rotate the keys", "2026-02-05T09:00:00Z")],
        }
        self.rate_limited = False
        self.requests: list[tuple[str, str | None]] = []


def handler_for(state: GitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(GitHubHandler):
        page_size = 2

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            path = parts.path
            state.requests.append((self.path, self.headers.get("Authorization")))
            if self.headers.get("Authorization") == "Bearer revoked-token":
                self.answer(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
                return
            if state.rate_limited:
                self.answer(403, {"message": "API rate limit exceeded"},
                            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1770000000"})  # fmt: skip
                return
            segments = path.strip("/").split("/")
            if segments[:1] == ["users"] and segments[2:] == ["repos"]:
                owned = [r for name, r in sorted(state.repos.items()) if name.startswith(segments[1] + "/")]
                self.page(owned, query, size=1)
            elif segments[:1] == ["repos"] and len(segments) == 3:
                repo = state.repos.get("/".join(segments[1:3]))
                if repo is None:
                    self.answer(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
                else:
                    self.answer(200, repo)
            elif segments[:1] == ["repos"] and segments[3:] == ["issues"]:
                since = query.get("since", [""])[0]
                items = [i for i in state.issues["/".join(segments[1:3])] if i["updated_at"] >= since]
                self.page(sorted(items, key=lambda i: i["updated_at"]), query)
            elif segments[3:4] == ["issues"] and segments[5:] == ["comments"]:
                self.page([{"user": user("hubot"), "body": f"A comment on #{segments[4]}.",
                            "created_at": "2026-01-06T10:00:00Z"}], query)  # fmt: skip
            elif segments[3:4] == ["pulls"] and segments[5:] == ["reviews"]:
                self.page([{"user": user("reviewer"), "state": "CHANGES_REQUESTED", "body": "Index the bigrams too.",
                            "submitted_at": "2026-01-07T10:00:00Z"}], query)  # fmt: skip
            elif segments[3:4] == ["pulls"] and segments[5:] == ["comments"]:
                self.page([{"user": user("reviewer"), "path": "src/index.py", "line": 42, "body": "Off by one.",
                            "created_at": "2026-01-07T11:00:00Z"}], query)  # fmt: skip
            elif segments[3:4] == ["pulls"] and segments[5:] == ["files"]:
                self.page([{"filename": "src/index.py", "status": "modified"}], query)
            else:
                self.answer(404, {"message": "Not Found"})

    return Handler


@pytest.fixture
def github() -> Iterator[tuple[GitHub, str]]:
    state = GitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def palace(tmp_path: Path, github: tuple[GitHub, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Palace]:
    monkeypatch.setenv("GH_TOKEN", "test-token-123")
    flags = {
        "palace": str(tmp_path / "palace"),
        "embeddings.provider": "none",
        "extraction.provider": "none",
        "mining.github_api_url": github[1],
        "mining.github_wiki_url": f"file://{tmp_path / 'wikis'}",
    }
    built = build(load_settings(flags=flags, env={}, config_file=None))
    built.start()
    yield built
    built.stop()


def mine(palace: Palace, **options: str) -> dict[str, Any]:
    job = palace.services.mining.submit_mine(MineRequest("github", "", options)).job
    done = wait_until(lambda: (j := palace.services.jobs.get_job(job.id)).is_finished and j, what="the github mine")
    assert done.status.value == "completed", done.error
    return dict(done.result or {})


def drawers(palace: Palace) -> dict[str, str]:
    page = palace.services.drawers.list_drawers("github", None, 200, None)
    return {d.source.origin.document: d.content for d in page.items if d.source.origin}


def test_issues_and_pull_requests_are_mined_with_their_conversation(palace: Palace, github: tuple[GitHub, str]) -> None:
    state, _ = github
    first = mine(palace, include="octo-org/atlas*,octo-org/missing", exclude="octo-org/atlas-docs")
    assert first["created"] == 3  # atlas's three, through two pages; atlas-docs excluded; infra not included
    assert [s["document"] for s in first["skipped_documents"]] == ["octo-org/missing"]
    assert "404" in first["skipped_documents"][0]["reason"]
    found = drawers(palace)
    pull = found["octo-org/atlas#2"]
    assert pull.startswith("# Add a trigram index") and "pull request #2 in octo-org/atlas" in pull
    assert "@hubot commented" in pull and "@reviewer reviewed (changes requested)" in pull
    assert "Index the bigrams too." in pull and "@reviewer on src/index.py:42" in pull
    assert "labels: enhancement" in pull
    assert all(auth == "Bearer test-token-123" for _, auth in state.requests)  # GH_TOKEN, on every call

    drawer = next(d for d in palace.services.drawers.list_drawers("github", None, 200, None).items
                  if d.source.origin and d.source.origin.document == "octo-org/atlas#1")  # fmt: skip
    assert drawer.source.uri == "https://github.com/octo-org/atlas/issues/1"
    assert drawer.source.origin.metadata["labels"] == ["bug"] and drawer.source.origin.metadata["kind"] == "issue"
    assert drawer.room == "octo-org-atlas" and "github" in drawer.tags

    # Incremental: only what was updated since the cursor is asked for, and an edit supersedes.
    state.issues["octo-org/atlas"][0] = issue("octo-org/atlas", 1, "Search misses CJK words (fixed)",
                                              "2026-03-01T09:00:00Z", labels=("bug",))  # fmt: skip
    state.requests.clear()
    again = mine(palace, include="octo-org/atlas*,octo-org/missing", exclude="octo-org/atlas-docs")
    assert again["superseded"] == 1 and again["created"] == 0
    listed = [path for path, _ in state.requests if "/issues?" in path]
    assert listed and all("since=2026-02-03T09%3A00%3A00Z" in p or "since=2026-02-03T09:00:00Z" in p for p in listed)


def test_labels_and_topics_and_paths_narrow_what_is_mined(palace: Palace) -> None:
    assert mine(palace, include="octo-org/*", labels="docs")["created"] == 1
    assert mine(palace, include="octo-org/*", topics="ops")["created"] == 1  # infra, its one issue
    only_pulls = mine(palace, include="octo-org/atlas", paths="src/*.py")
    assert only_pulls["created"] == 1 and only_pulls["skipped"] >= 2  # the issues touch no file


def test_a_refused_token_and_a_spent_rate_limit_stop_the_mine_with_the_reason(
    palace: Palace, github: tuple[GitHub, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, _ = github
    state.rate_limited = True
    result = mine(palace, include="octo-org/atlas")
    assert result["created"] == 0 and "rate limit is spent" in result["skipped_documents"][0]["reason"]
    assert "2026-02-02" in result["skipped_documents"][0]["reason"]  # when it resets
    state.rate_limited = False
    monkeypatch.setenv("GH_TOKEN", "revoked-token")
    refused = mine(palace, include="octo-org/atlas")
    assert "refused the token (401)" in refused["skipped_documents"][0]["reason"]


def test_include_is_required_and_checked(palace: Palace) -> None:
    from memcastle.errors import InvalidRequest

    for options, field in (({}, "options.include"), ({"include": "*/atlas"}, "options.include"),
                           ({"include": "octo-org/atlas", "since": "someday"}, "options.since")):  # fmt: skip
        with pytest.raises(InvalidRequest) as refused:
            palace.services.mining.submit_mine(MineRequest("github", "", options))
        assert refused.value.field == field


def push_wiki(root: Path, repo: str, pages: dict[str, str], when: str) -> None:
    """Commit `pages` to the wiki repository `<root>/<repo>.wiki.git` (created bare on first use), dated `when`."""
    bare, work = root / f"{repo}.wiki.git", root / "work" / repo
    who = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.org"}  # fmt: skip
    env = {**os.environ, **who, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}

    def git(*args: str, cwd: Path | None = None) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    if not bare.exists():
        bare.parent.mkdir(parents=True, exist_ok=True)
        git("init", "--bare", "--quiet", "--initial-branch=master", str(bare))
        git("clone", "--quiet", str(bare), str(work))
    for name, text in pages.items():
        (work / name).write_text(text, encoding="utf-8")
    git("add", "--all", cwd=work)
    git("commit", "--quiet", "-m", "Update wiki", cwd=work)
    git("push", "--quiet", "origin", "HEAD:master", cwd=work)


def test_wiki_pages_are_cloned_and_mined_page_by_page(palace: Palace, tmp_path: Path) -> None:
    wikis = tmp_path / "wikis"
    push_wiki(wikis, "octo-org/atlas", {"Home.md": "# Atlas\n\nStart at the [[Deploy Guide]].",
                                        "Deploy-Guide.md": "Deploys go out on Thursdays through the blue pipeline.",
                                        "_Sidebar.md": "navigation"}, "2026-03-01T10:00:00+00:00")  # fmt: skip
    guide = "Deploys go out on Thursdays through the blue pipeline.\n\nRoll back with `atlas rollback`."
    push_wiki(wikis, "octo-org/atlas", {"Deploy-Guide.md": guide}, "2026-03-05T10:00:00+00:00")
    only = mine(palace, include="octo-org/atlas,octo-org/infra", wiki="only")
    assert only["created"] == 2, only
    (skip,) = only["skipped_documents"]
    assert skip["document"] == "octo-org/infra/wiki" and "has no wiki" in skip["reason"]
    found = drawers(palace)
    assert set(found) == {"octo-org/atlas/wiki/Home.md", "octo-org/atlas/wiki/Deploy-Guide.md"}
    assert "atlas rollback" in found["octo-org/atlas/wiki/Deploy-Guide.md"]
    page = next(d for d in palace.services.drawers.list_drawers("github", None, 10, None).items
                if d.source.origin and d.source.origin.document.endswith("Deploy-Guide.md"))  # fmt: skip
    assert page.source.origin is not None
    assert page.source.origin.metadata["page"] == "Deploy Guide" and page.source.origin.metadata["kind"] == "wiki"
    assert page.source.origin.occurred_at and page.source.origin.occurred_at.startswith("2026-03-05")
    assert page.source.uri == f"file://{wikis}/octo-org/atlas/wiki/Deploy-Guide"
    assert "wiki" in page.tags
    push_wiki(wikis, "octo-org/atlas", {"Home.md": "# Atlas\n\nStart at the [[Deploy Guide]]; see [[FAQ]]."},
              "2026-03-09T10:00:00+00:00")  # fmt: skip
    again = mine(palace, include="octo-org/atlas,octo-org/infra", wiki="only")
    assert (again["created"], again["superseded"]) == (0, 1), again  # Home changed; the guide is as it was
    both = mine(palace, include="octo-org/atlas", wiki="true")
    assert both["created"] == 5, both  # a source of its own (include and wiki name it): three issues, two pages
